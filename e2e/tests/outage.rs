//! The controller stopped during a rotation and rollout: the garbage collector
//! keeps applying retention while it is down (with deletion protection, a
//! version it deletes is Terminating until the controller, back, lets it
//! go), and it picks up where things are when it comes back. This suite
//! runs its own controller process, so `e2e/run.sh` runs it (`--ignored`)
//! after stopping the shared one.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState};
use randomsecret_e2e::*;
use serde_json::json;

async fn roll_out(api: &Api<Deployment>, secret: &str, rev: &str) -> Result<()> {
    point_at(api, "web", secret, rev).await?;
    wait_for(
        api,
        "web",
        &format!("rolled out rev {rev}"),
        rollout_complete,
    )
    .await?;
    Ok(())
}

#[tokio::test]
#[ignore = "runs its own controller: e2e/run.sh runs it after stopping the shared one"]
async fn retention_holds_across_a_controller_outage() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "outage").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");

    let controller = ControllerProcess::start("outage", 18090, &[])?;
    let v1 = first_version(&api, &secrets, "db", json!({"length": 20, "rotation": "1"})).await?;
    let v1n = v1.name_any();
    let deployment = deployment("web", &v1n)?;
    deploys.create(&PostParams::default(), &deployment).await?;
    wait_for(&deploys, "web", "rolled out on v1", rollout_complete).await?;
    patch_spec(&api, "db", json!({"rotation": "2"})).await?;
    let rs = wait_for(
        &api,
        "db",
        "v1 retained by its ReplicaSet",
        |rs: Option<&RandomSecret>| {
            is_ready(rs)
                && rs
                    .and_then(|r| r.status.as_ref())
                    .is_some_and(|s| s.versions.iter().any(|v| v.state == VersionState::Retained))
        },
    )
    .await?;
    let v2n = rs
        .status
        .and_then(|s| s.secret_name)
        .context("secretName")?;

    // The controller dies in the middle of the rotation's rollout.
    drop(controller); // SIGKILL
    roll_out(&deploys, &v2n, "2").await?;
    // A further template change prunes v1's ReplicaSet (revisionHistoryLimit 1):
    // the garbage collector deletes v1 with no controller running. Deletion
    // protection's finalizer keeps it Terminating (readable, its values
    // unchanged) until the controller is back to let it go.
    roll_out(&deploys, &v2n, "3").await?;
    let terminating = wait_for(
        &secrets,
        &v1n,
        "deleted by the garbage collector",
        |s: Option<&Secret>| s.is_some_and(|s| s.metadata.deletion_timestamp.is_some()),
    )
    .await
    .context("v1 is garbage-collected while the controller is down")?;
    ensure!(
        in_use(&terminating) && terminating.data == v1.data,
        "v1, deleted while the controller is down, is held with its values: finalizers {:?}",
        terminating.metadata.finalizers
    );
    ensure!(
        secrets.get_opt(&v2n).await?.is_some(),
        "v2 (current) must survive the outage"
    );
    // A rotation while it is down waits for it.
    patch_spec(&api, "db", json!({"rotation": "3"})).await?;

    // Back up: it creates v3 and hands v2 to the two ReplicaSets that use it.
    let controller = ControllerProcess::start("outage", 18090, &[])?;
    wait_deleted(&secrets, &v1n).await.context(
        "v1, deleted by the garbage collector during the outage, goes once the controller is back",
    )?;
    let v2 = v2n.clone();
    let rs = wait_for(
        &api,
        "db",
        "v3 current, v2 retained by 2 ReplicaSets",
        move |rs: Option<&RandomSecret>| {
            is_ready(rs)
                && rs.and_then(|r| r.status.as_ref()).is_some_and(|s| {
                    s.secret_name.as_deref() != Some(v2.as_str())
                        && s.versions.iter().any(|v| {
                            v.name == v2
                                && v.state == VersionState::Retained
                                && v.referenced_by.len() == 2
                        })
                })
        },
    )
    .await?;
    let v3n = current_secret(&secrets, &rs).await?.name_any();
    // Superseded: its two ReplicaSets and the running pods of the newer one.
    let owners = owner_kinds(&secrets, &v2n).await?;
    ensure!(
        owners == ["ReplicaSet", "ReplicaSet", "Pod", "Pod"],
        "v2 owners after the outage: {owners:?}"
    );
    roll_out(&deploys, &v3n, "4").await?;
    ensure!(
        secrets.get_opt(&v2n).await?.is_some(),
        "v2 is still referenced by a ReplicaSet in history"
    );

    checker.finish().await?;
    controller.terminate()?;
    ns.delete().await
}
