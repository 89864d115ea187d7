//! A key's own time-based rotation (`keys.<k>.rotateEvery`, issue 28): a
//! new version each period of that key, in which that key alone has a new
//! value and every other generated value is carried over byte for byte.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;

#[tokio::test]
async fn a_keys_own_period_rotates_that_key_alone() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "key-periods").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = json!({"keys": {
        "session": {"length": 24, "rotateEvery": "1m"},
        "password": {"length": 24},
    }});
    // Offline, the name depends on time: the CLI says which field.
    let manifest = serde_json::to_string(&random_secret("db", spec.clone())?)?;
    let offline = run("randomsecret", &["name"], Some(&manifest));
    ensure!(
        offline.as_ref().is_err_and(|e| e
            .to_string()
            .contains("keys.session.rotateEvery makes the name depend on time")),
        "{offline:?}"
    );
    api.create(&PostParams::default(), &random_secret("db", spec)?)
        .await?;
    let first = wait_for(&api, "db", "Ready", is_ready).await?;
    // The next version is due one period after creation (issue 30).
    let created = first
        .metadata
        .creation_timestamp
        .clone()
        .context("creationTimestamp")?;
    let due = |rs: &RandomSecret| rs.status.as_ref().and_then(|s| s.next_rotation.clone());
    let due1 = due(&first).context("status.nextRotation")?;
    ensure!(
        due1.0.as_second() == created.0.as_second() + 60,
        "nextRotation {due1:?}: one period (1m) after creation {created:?}"
    );
    let wide = kubectl(&["get", "randomsecret", "-n", &ns.name, "db", "-o", "wide"])?;
    let shown = due1.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    ensure!(
        wide.contains("NEXT ROTATION") && wide.contains(&shown),
        "kubectl get -o wide shows it: {wide}"
    );
    let tree = run("randomsecret", &["status", "-n", &ns.name, "db"], None)?;
    ensure!(tree.contains("next rotation "), "{tree}");
    let v1 = first
        .status
        .and_then(|s| s.secret_name)
        .context("secretName")?;
    // Read now: with history 0 it is released once superseded.
    let a = secrets.get(&v1).await?;
    let v1_ = v1.clone();
    // The next period of `session` starts within a minute of creation.
    let rotated = wait_for(
        &api,
        "db",
        "rotated by session's period",
        move |rs: Option<&RandomSecret>| {
            is_ready(rs)
                && rs
                    .and_then(|r| r.status.as_ref()?.secret_name.clone())
                    .is_some_and(|n| n != v1_)
        },
    )
    .await?;
    // A new period, a new due time: one period later.
    let due2 = due(&rotated).context("status.nextRotation after the rotation")?;
    ensure!(
        due2.0.as_second() >= due1.0.as_second() + 60
            && (due2.0.as_second() - created.0.as_second()) % 60 == 0,
        "nextRotation moves on by whole periods: {due1:?} then {due2:?}"
    );
    let status = rotated.status.context("status")?;
    let v2 = status.secret_name.clone().context("secretName")?;
    let b = secrets.get(&v2).await?;
    let value = |s: &Secret, k: &str| s.data.as_ref().and_then(|d| d.get(k)).map(|v| v.0.clone());
    ensure!(
        value(&a, "password").is_some() && value(&a, "password") == value(&b, "password"),
        "password changed with session's period"
    );
    ensure!(
        value(&a, "session").is_some() && value(&a, "session") != value(&b, "session"),
        "session did not rotate"
    );
    let listed = status
        .versions
        .iter()
        .find(|v| v.name == v2)
        .context("the new version in status.versions")?;
    ensure!(
        listed.rotated_keys == ["session"],
        "rotatedKeys: {:?}",
        listed.rotated_keys
    );
    ns.delete().await
}
