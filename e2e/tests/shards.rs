//! Sharding (`--shard-selector`): two shards and the default shard run
//! together, each on a Lease of its own. Every version is made by the one
//! controller whose shard its RandomSecret is in (the apiserver's audit log:
//! the controller's User-Agent names its shard), carries its RandomSecret's
//! shard label, and a RandomSecret relabelled into another shard is handed
//! over with its versions: no new version, none lost, the old one released
//! by the shard it moved to once nothing references it. Runs its own
//! controllers, so `e2e/run.sh` runs it (`--ignored`) after stopping the
//! shared one. (A relabelling under load is the fault suite's
//! `shards_relabelled_mid_burst`.)

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret::shard::{SHARD_KEY, Shard};
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const CONTROLLER_NS: &str = "randomsecret-system";
const LEASE_ID: &str = "e2e-randomsecret";

/// The three shards: (name in logs, selector, the label value of its RandomSecrets).
const SHARDS: [(&str, &str, Option<&str>); 3] = [
    (
        "shard1",
        "sharding.randomsecret.io/key=shard1",
        Some("shard1"),
    ),
    (
        "shard2",
        "sharding.randomsecret.io/key=shard2",
        Some("shard2"),
    ),
    ("default", "!sharding.randomsecret.io/key", None),
];

/// Lets the chart's ServiceAccount hold the shards' Leases, as the chart's
/// Role does with `shards` set (its names are `Shard::lease`'s).
async fn lease_rbac(client: &kube::Client) -> Result<()> {
    let names: Vec<String> = SHARDS
        .iter()
        .map(|(_, sel, _)| {
            Ok(Shard::parse(sel)
                .map_err(anyhow::Error::msg)?
                .lease(LEASE_ID))
        })
        .collect::<Result<_>>()?;
    let pp = PatchParams::apply("e2e-shards").force();
    let role: Role = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "e2e-shards-leases", "namespace": CONTROLLER_NS},
        "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": names, "verbs": ["get", "update"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        ],
    }))?;
    Api::<Role>::namespaced(client.clone(), CONTROLLER_NS)
        .patch("e2e-shards-leases", &pp, &Patch::Apply(&role))
        .await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "e2e-shards-leases", "namespace": CONTROLLER_NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "e2e-shards-leases"},
        "subjects": [{"kind": "ServiceAccount", "name": "e2e-randomsecret", "namespace": CONTROLLER_NS}],
    }))?;
    Api::<RoleBinding>::namespaced(client.clone(), CONTROLLER_NS)
        .patch("e2e-shards-leases", &pp, &Patch::Apply(&binding))
        .await?;
    Ok(())
}

/// One controller per shard, each electing itself leader on its own Lease.
fn controllers() -> Result<Vec<ControllerProcess>> {
    SHARDS
        .iter()
        .enumerate()
        .map(|(i, (log, selector, _))| {
            ControllerProcess::start(
                &format!("shards-{log}"),
                18320 + 2 * i as u16,
                &[
                    "--leader-elect",
                    &format!("--leader-election-namespace={CONTROLLER_NS}"),
                    &format!("--leader-election-id={LEASE_ID}"),
                    "--lease-duration-seconds=6",
                    "--renew-deadline-seconds=4",
                    "--retry-period-seconds=1",
                    &format!("--shard-selector={selector}"),
                ],
            )
        })
        .collect()
}

fn labelled(name: &str, shard: Option<&str>, spec: Value) -> Result<RandomSecret> {
    let mut rs = random_secret(name, spec)?;
    if let Some(s) = shard {
        rs.metadata.labels = Some([(SHARD_KEY.to_string(), s.to_string())].into());
    }
    Ok(rs)
}

/// The shard label of every version Secret of RandomSecret `rs`.
async fn version_shards(
    secrets: &Api<Secret>,
    rs: &str,
) -> Result<BTreeMap<String, Option<String>>> {
    let lp = ListParams::default().labels(&format!("randomsecret.io/name={rs}"));
    Ok(secrets
        .list_metadata(&lp)
        .await?
        .items
        .into_iter()
        .map(|s| {
            let shard = s.labels().get(SHARD_KEY).cloned();
            (s.name_any(), shard)
        })
        .collect())
}

/// Waits until `check` passes on the versions of `rs`, or fails with the last look.
async fn wait_versions(
    secrets: &Api<Secret>,
    rs: &str,
    what: &str,
    check: impl Fn(&BTreeMap<String, Option<String>>) -> bool,
) -> Result<BTreeMap<String, Option<String>>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = version_shards(secrets, rs).await?;
        if check(&seen) {
            return Ok(seen);
        }
        if Instant::now() > deadline {
            bail!("{rs}: {what} within 60 s; its versions and their shard labels: {seen:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The writes (create, update, patch, delete) on Secrets of namespace `ns`
/// in the audit log, as (the Secret's name, the User-Agent).
fn secret_writes(ns: &str) -> Result<Vec<(String, String)>> {
    let dir = std::env::var("E2E_DIR").context("E2E_DIR (set by e2e/run.sh)")?;
    let log = std::path::Path::new(&dir).join("logs/audit.log");
    let text = std::fs::read_to_string(&log).with_context(|| {
        format!(
            "{}: the control plane runs without the audit log (E2E_AUDIT=1 e2e/cluster.sh up)",
            log.display()
        )
    })?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|ev| {
            ev["objectRef"]["resource"] == "secrets"
                && ev["objectRef"]["namespace"] == ns
                && ev["stage"] == "ResponseComplete"
                && matches!(
                    ev["verb"].as_str(),
                    Some("create" | "update" | "patch" | "delete")
                )
        })
        .map(|ev| {
            (
                ev["objectRef"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                ev["userAgent"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

#[tokio::test]
#[ignore = "runs its own controllers: e2e/run.sh runs it after stopping the shared one"]
async fn each_shard_reconciles_its_own_and_a_relabelled_one_moves_with_its_versions() -> Result<()>
{
    let client = client().await?;
    lease_rbac(&client).await?;
    let procs = controllers()?;
    // Each leads on its own Lease: three leaders at once.
    for p in &procs {
        single_leader(&[p], Duration::from_secs(30)).await?;
    }
    let ns = TestNamespace::new(&client, "shards").await?;
    let (api, secrets, deploys): (Api<RandomSecret>, Api<Secret>, Api<Deployment>) =
        (ns.api(), ns.api(), ns.api());
    let spec = json!({"keys": {"password": {"length": 20}}});
    for (i, (_, _, label)) in SHARDS.iter().enumerate() {
        let name = format!("db-{i}");
        api.create(
            &PostParams::default(),
            &labelled(&name, *label, spec.clone())?,
        )
        .await?;
    }
    for (i, (_, _, label)) in SHARDS.iter().enumerate() {
        let name = format!("db-{i}");
        let rs = wait_for(&api, &name, "Ready", is_ready).await?;
        current_secret(&secrets, &rs).await?;
        // Each version carries its RandomSecret's shard label (none for the default shard).
        let seen = version_shards(&secrets, &name).await?;
        ensure!(
            seen.len() == 1 && seen.values().all(|s| s.as_deref() == *label),
            "{name}: versions {seen:?}, expected one labelled {label:?}"
        );
    }
    // Exactly one controller made each: one version per shard.
    for (p, (log, _, _)) in procs.iter().zip(SHARDS) {
        let made = p
            .metric("randomsecret_versions_created_total")?
            .unwrap_or(0.0);
        ensure!(
            made == 1.0,
            "shard {log} created {made} versions, expected 1"
        );
    }

    // db-0 (shard 1) is read by a Deployment, then rotated: two versions, the
    // first kept for the ReplicaSet that references it.
    let first = current_secret(&secrets, &api.get("db-0").await?)
        .await?
        .name_any();
    deploys
        .create(&PostParams::default(), &deployment("app", &first)?)
        .await?;
    wait_for(&deploys, "app", "rolled out", rollout_complete).await?;
    rotate(&api, "db-0", "r1").await?;
    let rotated = wait_for(&api, "db-0", "Ready", is_ready).await?;
    let second = current_secret(&secrets, &rotated).await?.name_any();
    ensure!(second != first, "the rotation made no new version");
    wait_versions(&secrets, "db-0", "two versions in shard 1", |v| {
        v.len() == 2 && v.values().all(|s| s.as_deref() == Some("shard1"))
    })
    .await?;

    // Every write on a Secret so far was by the controller of its shard.
    let mut checked = BTreeMap::<usize, usize>::new();
    for (name, agent) in secret_writes(&ns.name)? {
        if !agent.contains("randomsecret/") {
            continue; // the test's own writes (none on Secrets), kube's
        }
        let i: usize = name
            .strip_prefix("db-")
            .and_then(|rest| rest.split('-').next()?.parse().ok())
            .with_context(|| format!("a Secret {name} the controllers should not write"))?;
        let selector = SHARDS[i].1;
        ensure!(
            agent.ends_with(&format!("(controller; shard {selector})")),
            "Secret {name} (of shard {selector}) was written by {agent:?}"
        );
        *checked.entry(i).or_default() += 1;
    }
    ensure!(
        checked.len() == SHARDS.len(),
        "the audit log shows writes of the controllers on the Secrets of {checked:?} (by shard), expected all three"
    );

    // db-0 moves to shard 2: its two versions follow, no version is made.
    let created_before = versions_made(&procs)?;
    api.patch(
        "db-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {SHARD_KEY: "shard2"}}})),
    )
    .await?;
    let moved = wait_versions(
        &secrets,
        "db-0",
        "both versions relabelled into shard 2",
        |v| v.len() == 2 && v.values().all(|s| s.as_deref() == Some("shard2")),
    )
    .await?;
    ensure!(
        moved.contains_key(&first) && moved.contains_key(&second),
        "db-0's versions changed on the move: {moved:?}"
    );
    // Shard 2 reconciles it now: a rotation there makes the third version.
    rotate(&api, "db-0", "r2").await?;
    let third = wait_for(&api, "db-0", "Ready", is_ready).await?;
    let third = current_secret(&secrets, &third).await?.name_any();
    let made_by_two = procs[1]
        .metric("randomsecret_versions_created_total")?
        .unwrap_or(0.0);
    ensure!(
        made_by_two == 2.0,
        "shard 2 made {made_by_two} versions, expected 2 (db-1's and db-0's third)"
    );
    let created_after = versions_made(&procs)?;
    ensure!(
        created_after == created_before + 1.0,
        "the move made versions: {created_before} before, {created_after} after one rotation"
    );
    // The Deployment goes: shard 2 releases the first version it can now
    // see (and the second, superseded and unreferenced), keeping the third.
    deploys.delete("app", &DeleteParams::foreground()).await?;
    wait_versions(&secrets, "db-0", "the released versions deleted", |v| {
        v.len() == 1 && v.contains_key(&third)
    })
    .await?;
    let released: Vec<(String, String)> = secret_writes(&ns.name)?
        .into_iter()
        .filter(|(n, a)| *n == first && a.contains("randomsecret/"))
        .collect();
    ensure!(
        released
            .last()
            .is_some_and(|(_, a)| a.contains(&format!("shard {}", SHARDS[1].1))),
        "the last write on {first} was not shard 2's: {released:?}"
    );
    ns.delete().await?;
    for p in procs {
        p.terminate()?;
    }
    Ok(())
}

/// The versions all the controllers made, by their metrics.
fn versions_made(procs: &[ControllerProcess]) -> Result<f64> {
    procs
        .iter()
        .map(|p| {
            Ok(p.metric("randomsecret_versions_created_total")?
                .unwrap_or(0.0))
        })
        .sum()
}

async fn rotate(api: &Api<RandomSecret>, name: &str, token: &str) -> Result<()> {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"rotation": token}})),
    )
    .await?;
    Ok(())
}
