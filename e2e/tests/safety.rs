//! Promises that a review found broken (issue 12), against the real control
//! plane: a name never comes back with different values, and released
//! versions never linger.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;
use std::time::Duration;

/// A live version deleted by hand for good (its deletion protection
/// finalizer removed too) is reported (VersionLost, with how to recover),
/// never created again under the same name with new values; a rotation
/// recovers.
#[tokio::test]
async fn a_lost_live_version_is_reported_not_regenerated() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "safety-lost").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let first = first_version(
        &api,
        &secrets,
        "db",
        json!({"keys": {"password": {"length": 24}}}),
    )
    .await?;
    let name = first.name_any();

    force_delete_secret(&secrets, &name).await?;
    let rs = wait_for(
        &api,
        "db",
        "Stalled on the lost version",
        not_ready_because("VersionLost"),
    )
    .await?;
    let msg = &condition(&rs, "Ready").context("Ready")?.message;
    ensure!(
        msg.contains(&name) && msg.contains("spec.rotation"),
        "{msg}"
    );
    ensure!(condition(&rs, "Stalled").is_some_and(|c| c.status == "True"));
    wait_event(&client, &ns.name, "VersionLost", |e| {
        e.reason.as_deref() == Some("VersionLost") && e.type_.as_deref() == Some("Warning")
    })
    .await?;
    // And it stays gone: the name never comes back with new values.
    for _ in 0..10 {
        ensure!(
            secrets.get_opt(&name).await?.is_none(),
            "{name} was created again"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let next = rotate(&api, "db", "2").await?;
    ensure!(next != name, "a rotation gives a new name");
    ensure!(secrets.get_opt(&next).await?.is_some());
    ensure!(
        secrets.get_opt(&name).await?.is_none(),
        "{name} was created again"
    );
    ns.delete().await
}

/// A superseded version with no owner reference at all (here: orphaned by a
/// `--cascade=orphan` delete of its RandomSecret) is released: its proof of
/// creation makes it ours, so it is deleted and leaves `status.versions`
/// (issue 12, point 4). A look-alike with our labels and no proof, beside
/// it, is never touched.
#[tokio::test]
async fn an_ownerless_released_version_is_deleted_and_a_look_alike_kept() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "safety-ownerless").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = |rotation: &str, history: i32| json!({"keys": {"k": {"length": 16}}, "rotation": rotation, "history": history});
    let old = first_version(&api, &secrets, "db", spec("1", 1)).await?;
    patch_spec(&api, "db", spec("2", 1)).await?;
    let rs = wait_for(&api, "db", "Ready on rotation 2", is_ready).await?;
    let current = rs
        .status
        .and_then(|s| s.secret_name)
        .context("secretName")?;
    ensure!(
        secrets.get_opt(&old.name_any()).await?.is_some(),
        "kept within history 1"
    );
    // A look-alike: our labels (as of a version of rotation 3), no proof.
    let fake = plant(&secrets, &old, &version_name("db", spec("3", 0))?, false).await?;

    // Orphaned: the garbage collector removes the owner references.
    api.delete("db", &DeleteParams::orphan()).await?;
    wait_deleted(&api, "db").await?;
    wait_for(
        &secrets,
        &old.name_any(),
        "orphaned",
        |s: Option<&Secret>| s.is_some_and(|s| s.owner_references().is_empty()),
    )
    .await?;

    // Re-created without history: the old one is superseded, unreferenced
    // and proven ours, so it goes.
    api.create(&PostParams::default(), &random_secret("db", spec("2", 0))?)
        .await?;
    let rs = wait_for(&api, "db", "Ready and adopted", is_ready).await?;
    ensure!(rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(current.as_str()));
    wait_deleted(&secrets, &old.name_any()).await?;
    let rs = wait_for(
        &api,
        "db",
        "the old version released",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|r| r.status.as_ref())
                .is_some_and(|s| s.released.contains(&old.name_any()))
        },
    )
    .await?;
    let status = rs.status.context("status")?;
    ensure!(
        status.versions.iter().all(|v| v.name != old.name_any()),
        "a deleted version is still listed: {:?}",
        status.versions
    );
    ensure!(
        status.versions.iter().all(|v| v.name != fake.name_any()),
        "the look-alike is listed as a version"
    );
    unchanged(&secrets, &fake).await?;
    wait_event(&client, &ns.name, "UnprovenSecret", |e| {
        e.reason.as_deref() == Some("UnprovenSecret")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains(&fake.name_any()))
    })
    .await?;
    ns.delete().await
}

/// The next version's name is computable from git: a Secret planted there
/// with our labels (and values of the planter's choosing, even mutable) is
/// reported, never adopted or changed; once it is removed, the real
/// version is made.
#[tokio::test]
async fn a_secret_planted_at_a_future_name_is_not_adopted() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "safety-planted").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = |rotation: &str| json!({"keys": {"k": {"length": 16}}, "rotation": rotation});
    let first = first_version(&api, &secrets, "db", spec("1")).await?;
    let next = version_name("db", spec("2"))?;
    let planted = plant(&secrets, &first, &next, false).await?;

    patch_spec(&api, "db", spec("2")).await?;
    let rs = wait_for(
        &api,
        "db",
        "Stalled on the planted Secret",
        not_ready_because("SecretNameConflict"),
    )
    .await?;
    let msg = &condition(&rs, "Ready").context("Ready")?.message;
    ensure!(msg.contains(&next) && msg.contains("proof"), "{msg}");
    ensure!(
        rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(&*first.name_any()),
        "the last good version stays current"
    );
    unchanged(&secrets, &planted).await?;

    secrets.delete(&next, &DeleteParams::background()).await?;
    // By the planted one's UID: the controller makes the real version at
    // the same name as soon as it is free.
    wait_uid_deleted(&secrets, &next, &planted.uid().context("uid")?).await?;
    let rs = wait_for(&api, "db", "Ready once the name is free", is_ready).await?;
    ensure!(rs.status.and_then(|s| s.secret_name).as_deref() == Some(&*next));
    let made = secrets.get(&next).await?;
    ensure!(made.uid() != planted.uid() && made.data != planted.data);
    ns.delete().await
}

/// A real version's proof copied, with its labels, onto a Secret with other
/// values at that version's name, after it was released: a revert to it
/// reads the Secret whole, sees the values do not match the proof, and
/// reports it instead of using it.
#[tokio::test]
async fn a_copied_proof_on_other_values_is_not_adopted() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "safety-copied").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = |rotation: &str| json!({"keys": {"k": {"length": 16}}, "rotation": rotation});
    let first = first_version(&api, &secrets, "db", spec("1")).await?;
    ensure!(
        first
            .annotations()
            .get("randomsecret.io/proof")
            .is_some_and(|p| p.starts_with("v1.")),
        "a version carries its proof"
    );
    rotate(&api, "db", "2").await?;
    wait_deleted(&secrets, &first.name_any()).await?;
    let copy = plant(&secrets, &first, &first.name_any(), true).await?;

    patch_spec(&api, "db", spec("1")).await?;
    let rs = wait_for(
        &api,
        "db",
        "Stalled on the copy",
        not_ready_because("SecretNameConflict"),
    )
    .await?;
    let msg = &condition(&rs, "Ready").context("Ready")?.message;
    ensure!(msg.contains("proof"), "{msg}");
    unchanged(&secrets, &copy).await?;

    // The proof key is the controller's own: immutable, 32 bytes, no labels
    // that would make it look like a version.
    let keys: Api<Secret> = Api::namespaced(client.clone(), "randomsecret-system");
    let key = keys.get("randomsecret-proof-key").await?;
    ensure!(key.immutable == Some(true));
    ensure!(
        key.data
            .as_ref()
            .and_then(|d| d.get("key"))
            .is_some_and(|k| k.0.len() == 32)
    );
    ensure!(!key.labels().contains_key("app.kubernetes.io/managed-by"));
    ns.delete().await
}

/// Tracking mode rewrites only names that are the RandomSecret's own: with
/// `spec.secretName` set to the name of another Secret a tracked workload
/// uses, that reference is left alone (a Warning says why), and so is a
/// version-shaped name that is not one of its versions.
#[tokio::test]
async fn tracking_rewrites_only_the_randomsecrets_own_names() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "safety-track").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let tls: Secret = serde_json::from_value(
        json!({"metadata": {"name": "tls-cert"}, "stringData": {"tls.key": "not-yours"}}),
    )?;
    secrets.create(&PostParams::default(), &tls).await?;
    let track = |name: &str, secret: &str| -> Result<Deployment> {
        let mut d = deployment(name, secret)?;
        d.metadata.annotations =
            Some([("randomsecret.io/track".to_string(), "db".to_string())].into());
        Ok(d)
    };
    // A version-shaped name of the base that is no version of it.
    let stranger = version_name("x", json!({"length": 9}))?.replace("x-", "tls-cert-");
    deploys
        .create(&PostParams::default(), &track("web", "tls-cert")?)
        .await?;
    deploys
        .create(&PostParams::default(), &track("api", &stranger)?)
        .await?;

    let rs = create_ready(&api, "db", json!({"length": 16, "secretName": "tls-cert"})).await?;
    let current = rs
        .status
        .and_then(|s| s.secret_name)
        .context("secretName")?;
    ensure!(current.starts_with("tls-cert-"));
    wait_event(&client, &ns.name, "TrackingSkipped", |e| {
        e.reason.as_deref() == Some("TrackingSkipped") && e.type_.as_deref() == Some("Warning")
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (d, secret) in [("web", "tls-cert"), ("api", stranger.as_str())] {
        let now = deploys.get(d).await?;
        let spec = serde_json::to_value(&now.spec.context("spec")?.template)?;
        let name = &spec["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"];
        ensure!(name == secret, "Deployment {d} was pointed at {name}");
    }
    ns.delete().await
}

/// The name the CLI gives RandomSecret `name` with `spec`.
fn version_name(name: &str, spec: serde_json::Value) -> Result<String> {
    let spec: randomsecret::api::RandomSecretSpec = serde_json::from_value(spec)?;
    Ok(randomsecret::version::Version::of(&spec, name)?.secret_name)
}

/// Creates Secret `name` with `like`'s labels (and, with `proof`, its
/// annotations, proof included) but values of its own.
async fn plant(secrets: &Api<Secret>, like: &Secret, name: &str, proof: bool) -> Result<Secret> {
    let mut labels = like.labels().clone();
    let hash = name.rsplit('-').next().context("hash")?;
    labels.insert("randomsecret.io/hash".into(), hash.into());
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels,
            "annotations": if proof { json!(like.annotations()) } else { json!({}) }},
        "immutable": proof,
        "stringData": {"k": "planted-by-someone-else"},
    }))?;
    Ok(secrets.create(&PostParams::default(), &secret).await?)
}

/// `s` is as it was: same object, values, owners (none) and resourceVersion,
/// a few seconds on.
async fn unchanged(secrets: &Api<Secret>, s: &Secret) -> Result<()> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let now = secrets.get(&s.name_any()).await?;
    ensure!(
        now.uid() == s.uid()
            && now.data == s.data
            && now.resource_version() == s.resource_version()
            && now.owner_references().is_empty(),
        "Secret {} was changed",
        s.name_any()
    );
    Ok(())
}
