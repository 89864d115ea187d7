//! The controller stopped during a rotation and rollout: the garbage collector
//! keeps applying retention while it is down, and it picks up where things are
//! when it comes back. This suite runs its own controller process, so
//! `e2e/run.sh` runs it (`--ignored`) after stopping the shared one.

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState};
use randomsecret_e2e::*;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HEALTH: &str = "127.0.0.1:18091";

/// A controller process of this test's own; killed when dropped, so a failing
/// test leaves no process behind.
struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a controller logging to target/e2e/controller-outage.log and waits until it is ready.
fn start_controller() -> Result<Controller> {
    let log_path = std::env::var("E2E_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/e2e"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path.join("controller-outage.log"))?;
    let child = Command::new(randomsecret_bin())
        .args([
            "controller",
            "--log-level=debug",
            "--metrics-bind-address=127.0.0.1:18090",
        ])
        .arg(format!("--health-probe-bind-address={HEALTH}"))
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()?;
    let mut controller = Controller(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = controller.0.try_wait()? {
            bail!("the controller exited ({status}): see target/e2e/controller-outage.log");
        }
        let ok = Command::new("curl")
            .args(["-fsS", &format!("http://{HEALTH}/readyz")])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Ok(controller);
        }
        if Instant::now() > deadline {
            bail!("the controller did not become ready");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

async fn patch_deployment(api: &Api<Deployment>, secret: &str, rev: &str) -> Result<()> {
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"rev": rev}}, "spec": {"containers": [
        {"name": "app", "envFrom": [{"secretRef": {"name": secret}}]}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
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

    let controller = start_controller()?;
    let v1n = current_secret(
        &secrets,
        &create_ready(&api, "db", json!({"length": 20, "rotation": "1"})).await?,
    )
    .await?
    .name_any();
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "revisionHistoryLimit": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                                       "envFrom": [{"secretRef": {"name": v1n}}]}]}}},
    }))?;
    deploys.create(&PostParams::default(), &deployment).await?;
    wait_for(&deploys, "web", "rolled out on v1", rollout_complete).await?;
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"rotation": "2"}})),
    )
    .await?;
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
    patch_deployment(&deploys, &v2n, "2").await?;
    // A further template change prunes v1's ReplicaSet (revisionHistoryLimit 1):
    // the garbage collector deletes v1 with no controller running.
    patch_deployment(&deploys, &v2n, "3").await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 is garbage-collected while the controller is down")?;
    ensure!(
        secrets.get_opt(&v2n).await?.is_some(),
        "v2 (current) must survive the outage"
    );
    // A rotation while it is down waits for it.
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"rotation": "3"}})),
    )
    .await?;

    // Back up: it creates v3 and hands v2 to the two ReplicaSets that use it.
    let mut controller = start_controller()?;
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
    let owners: Vec<String> = secrets
        .get(&v2n)
        .await?
        .owner_references()
        .iter()
        .map(|o| o.kind.clone())
        .collect();
    ensure!(
        owners == ["ReplicaSet", "ReplicaSet"],
        "v2 owners after the outage: {owners:?}"
    );
    patch_deployment(&deploys, &v3n, "4").await?;
    ensure!(
        secrets.get_opt(&v2n).await?.is_some(),
        "v2 is still referenced by a ReplicaSet in history"
    );

    checker.finish().await?;
    // SIGTERM: a graceful stop.
    Command::new("kill")
        .args(["-TERM", &controller.0.id().to_string()])
        .status()?;
    ensure!(
        controller.0.wait()?.success(),
        "the controller failed on SIGTERM"
    );
    ns.delete().await
}
