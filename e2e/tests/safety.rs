//! Promises that a review found broken (issue 12), against the real control
//! plane: a name never comes back with different values, and released
//! versions never linger.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState};
use randomsecret_e2e::*;
use serde_json::json;
use std::time::Duration;

/// A live version deleted by hand is reported (VersionLost, with how to
/// recover), never created again under the same name with new values; a
/// rotation recovers.
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

    secrets.delete(&name, &DeleteParams::background()).await?;
    wait_deleted(&secrets, &name).await?;
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

/// A superseded Secret with our labels but no owner reference at all (here:
/// orphaned by a `--cascade=orphan` delete of its RandomSecret) is never
/// deleted: labels alone do not prove this controller created it.
#[tokio::test]
async fn an_ownerless_secret_with_our_labels_is_not_deleted() -> Result<()> {
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

    // Re-created without history: the old one is superseded and unreferenced,
    // but has no owner to prove it ours, so it stays, untouched.
    api.create(&PostParams::default(), &random_secret("db", spec("2", 0))?)
        .await?;
    let rs = wait_for(&api, "db", "Ready and adopted", is_ready).await?;
    ensure!(rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(current.as_str()));
    let rs = wait_for(
        &api,
        "db",
        "the old version listed as released",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|r| r.status.as_ref()).is_some_and(|s| {
                s.versions
                    .iter()
                    .any(|v| v.name == old.name_any() && v.state == VersionState::Released)
            })
        },
    )
    .await?;
    ensure!(
        rs.status
            .is_some_and(|s| !s.released.contains(&old.name_any()))
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = secrets.get(&old.name_any()).await?;
    ensure!(
        after.uid() == old.uid() && after.data == old.data,
        "the ownerless Secret was changed"
    );
    ensure!(after.owner_references().is_empty());
    ns.delete().await
}
