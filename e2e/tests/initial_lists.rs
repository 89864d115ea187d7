//! How the controller reads what exists when it starts (`cache::lists`):
//! streamed from the apiserver's watch cache where the apiserver can
//! (WatchList), in pages of 100 where it cannot or when told
//! (`--initial-lists pages`). The apiserver's audit log shows which requests
//! the controller made. This suite runs its own controllers (and a second
//! control plane without WatchList), so `e2e/run.sh` runs it (`--ignored`)
//! after stopping the shared one.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::downstream::DownstreamCluster;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::time::Duration;

const PORT: u16 = 18300;

/// The controller's requests on Secrets in the audit log after line `from`,
/// as (verb, requestURI).
fn secret_requests(from: usize) -> Result<Vec<(String, String)>> {
    let text = audit_log()?;
    Ok(text
        .lines()
        .skip(from)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|ev| {
            // Any stage: a watch that still runs has only ResponseStarted.
            ev["objectRef"]["resource"] == "secrets"
                && ev["userAgent"]
                    .as_str()
                    .is_some_and(|ua| ua.contains("(controller)"))
        })
        .map(|ev| {
            (
                ev["verb"].as_str().unwrap_or_default().to_string(),
                ev["requestURI"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

fn audit_log() -> Result<String> {
    let dir = std::env::var("E2E_DIR").context("E2E_DIR (set by e2e/run.sh)")?;
    let log = std::path::Path::new(&dir).join("logs/audit.log");
    std::fs::read_to_string(&log).with_context(|| {
        format!(
            "{}: the control plane runs without the audit log (E2E_AUDIT=1 e2e/cluster.sh up)",
            log.display()
        )
    })
}

/// The controller's list of its own Secrets (`managed-by`): whether it was
/// a streamed watch (`sendInitialEvents`) or paginated LISTs.
fn our_secrets_list(requests: &[(String, String)]) -> (bool, bool) {
    let ours = |uri: &str| uri.contains("app.kubernetes.io%2Fmanaged-by%3Drandomsecret");
    let streamed = requests
        .iter()
        .any(|(verb, uri)| verb == "watch" && ours(uri) && uri.contains("sendInitialEvents=true"));
    let paged = requests
        .iter()
        .any(|(verb, uri)| verb == "list" && ours(uri) && uri.contains("limit=100"));
    (streamed, paged)
}

/// Waits until the controller's log says how it lists.
async fn logged(p: &ControllerProcess, how: &str) -> Result<String> {
    let line = format!("initial_lists={how}");
    for _ in 0..100 {
        let log = std::fs::read_to_string(&p.log)?;
        if log.contains(&line) {
            return Ok(log);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("{} never says {line}", p.log.display())
}

#[tokio::test]
#[ignore = "runs its own controllers: e2e/run.sh runs it after stopping the shared one"]
async fn the_initial_state_is_streamed_where_the_apiserver_can_and_paged_elsewhere() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "lists").await?;
    let (api, secrets): (Api<RandomSecret>, Api<Secret>) = (ns.api(), ns.api());

    // A version made, then a restart: this control plane streams
    // (Kubernetes 1.34, WatchList on by default).
    let first = ControllerProcess::start("lists-first", PORT, &[])?;
    let v1 = first_version(&api, &secrets, "db", json!({"length": 20})).await?;
    drop(first);
    let mark = audit_log()?.lines().count();
    let streamed = ControllerProcess::start("lists-streamed", PORT, &[])?;
    logged(&streamed, "Stream").await?;
    // A RandomSecret made after the start is reconciled (its Secret seen
    // through the streamed watch).
    first_version(&api, &secrets, "other", json!({"length": 12})).await?;
    let requests = secret_requests(mark)?;
    ensure!(
        our_secrets_list(&requests) == (true, false),
        "the streaming controller's Secret list was not one streamed watch: {requests:?}"
    );
    // What it streamed is what exists: the version it found is current, not
    // made again, and a rotation after the list reaches it through the same watch.
    let current = wait_for(&api, "db", "ready", is_ready).await?;
    ensure!(
        current
            .status
            .as_ref()
            .and_then(|s| s.secret_name.as_deref())
            == Some(v1.name_any().as_str()),
        "the restart changed the version: {:?}",
        current.status
    );
    let v2 = rotate(&api, "db", "2").await?;
    ensure!(v2 != v1.name_any(), "no new version after the rotation");
    drop(streamed);

    // Told to page: LISTs of 100, nothing streamed, the same state.
    let mark = audit_log()?.lines().count();
    let paged = ControllerProcess::start("lists-paged", PORT, &["--initial-lists=pages"])?;
    logged(&paged, "Pages").await?;
    let rs = wait_for(&api, "db", "ready", is_ready).await?;
    ensure!(
        rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(v2.as_str()),
        "the paged restart changed the version: {:?}",
        rs.status
    );
    let requests = secret_requests(mark)?;
    ensure!(
        our_secrets_list(&requests) == (false, true),
        "the paging controller's Secret list was not paginated: {requests:?}"
    );
    drop(paged);

    // An apiserver without WatchList: the controller asks, is refused, and pages.
    let down =
        DownstreamCluster::up_with(&[("APISERVER_EXTRA_ARGS", "--feature-gates=WatchList=false")])?;
    let dc = down.client().await?;
    // Where the controller keeps its proof key (e2e/run.sh sets it), and the test's.
    let own =
        std::env::var("RANDOMSECRET_PROOF_KEY_NAMESPACE").unwrap_or_else(|_| "default".into());
    for name in [own.as_str(), ns.name.as_str()] {
        if name != "default" {
            Api::<Namespace>::all(dc.clone())
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(json!({"metadata": {"name": name}}))?,
                )
                .await?;
        }
    }
    let mut old = ControllerProcess::spawn_as(
        "lists-no-watchlist",
        PORT + 2,
        &["--log-level=debug"],
        &down.kubeconfig,
    )?;
    old.wait_ready(Duration::from_secs(60))?;
    let log = logged(&old, "Pages").await?;
    ensure!(
        log.contains("does not stream lists"),
        "the controller does not say why it pages"
    );
    let name = ns.name.clone();
    let dapi: Api<RandomSecret> = Api::namespaced(dc.clone(), &name);
    let rs = create_ready(&dapi, "db", json!({"length": 20})).await?;
    let made = rs
        .status
        .and_then(|s| s.secret_name)
        .context("no secretName")?;
    Api::<Secret>::namespaced(dc, &name)
        .get(&made)
        .await
        .context("the version on the apiserver without WatchList")?;
    Ok(())
}
