//! Overlap keys (`previous: true`): each new version holds the previous
//! version's value under `<key>.previous`, through two rotations, and never a
//! value older than the previous one (not even when the previous version's
//! Secret is gone).

use anyhow::{Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;

fn keys(s: &Secret) -> Vec<String> {
    s.data.iter().flatten().map(|(k, _)| k.clone()).collect()
}

async fn current(api: &Api<RandomSecret>, secrets: &Api<Secret>) -> Result<Secret> {
    current_secret(secrets, &api.get("sess").await?).await
}

#[tokio::test]
async fn overlap_keys_hold_the_previous_value_after_each_rotation() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "overlap").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = json!({"keys": {"session": {"length": 32, "previous": true}, "plain": {"length": 16}},
                      "rotation": "1"});
    // The name is computable offline, with the flag in it.
    let offline =
        randomsecret::version::Version::of(&serde_json::from_value(spec.clone())?, "sess")?;
    let v1 = first_version(&api, &secrets, "sess", spec).await?;
    ensure!(
        v1.name_any() == offline.secret_name,
        "offline name {} vs {}",
        offline.secret_name,
        v1.name_any()
    );
    ensure!(
        keys(&v1) == ["plain", "session"],
        "the first version has no previous value: {:?}",
        keys(&v1)
    );
    let s1 = value(&v1, "session")?;

    // First rotation: session.previous is v1's session; plain has no overlap.
    rotate(&api, "sess", "2").await?;
    let v2 = current(&api, &secrets).await?;
    ensure!(
        keys(&v2) == ["plain", "session", "session.previous"],
        "{:?}",
        keys(&v2)
    );
    let s2 = value(&v2, "session")?;
    ensure!(s2 != s1, "a new value");
    ensure!(
        value(&v2, "session.previous")? == s1,
        "v2 holds v1's session"
    );

    // Second rotation: the previous value is v2's, never v1's.
    rotate(&api, "sess", "3").await?;
    let v3 = current(&api, &secrets).await?;
    let s3 = value(&v3, "session")?;
    ensure!(
        value(&v3, "session.previous")? == s2,
        "v3 holds v2's session"
    );
    ensure!(s3 != s2 && s3 != s1);
    // Older versions are never rewritten (released ones are gone: history 0).
    for old in [&v1, &v2] {
        if let Some(s) = secrets.get_opt(&old.name_any()).await? {
            ensure!(s.data == old.data, "{} unchanged", old.name_any());
        }
    }

    // The previous version's Secret is gone when the next one is made: no
    // previous value at all (v2's would be older than the previous one).
    force_delete_secret(&secrets, &v3.name_any()).await?;
    wait_for(
        &api,
        "sess",
        "VersionLost",
        not_ready_because("VersionLost"),
    )
    .await?;
    rotate(&api, "sess", "4").await?;
    let v4 = current(&api, &secrets).await?;
    ensure!(
        keys(&v4) == ["plain", "session"],
        "no previous value once the previous version is gone: {:?}",
        keys(&v4)
    );
    let s4 = value(&v4, "session")?;
    for old in [&s1, &s2, &s3] {
        ensure!(&s4 != old);
    }

    // And the next rotation carries v4's value again.
    rotate(&api, "sess", "5").await?;
    let v5 = current(&api, &secrets).await?;
    ensure!(
        value(&v5, "session.previous")? == s4,
        "v5 holds v4's session"
    );
    let rs = api.get("sess").await?;
    ensure!(
        rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(v5.name_any().as_str()),
        "status names v5"
    );
    ns.delete().await
}
