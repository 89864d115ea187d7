//! High availability: two controller processes on one Lease. Only the leader
//! works; when it dies (SIGKILL) a standby takes over within the lease
//! duration, faster when it stops gracefully (SIGTERM releases the lease); and
//! failovers during bursts of creations and rotations never duplicate a
//! version nor change a version's values; `randomsecret check` fails while no
//! controller leads or one RandomSecret waits, and passes (`--wait`) once one
//! does. Runs its own controllers, so `e2e/run.sh` runs it (`--ignored`)
//! after stopping the shared one.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const LEASE_SECONDS: u64 = 6;

fn replica(n: u16) -> Result<ControllerProcess> {
    ControllerProcess::start(
        "ha",
        18100 + 2 * n,
        &[
            "--leader-elect",
            "--leader-election-namespace=randomsecret-system",
            // The chart's Lease for release "e2e" (e2e/run.sh): its Role names it.
            "--leader-election-id=e2e-randomsecret",
            &format!("--lease-duration-seconds={LEASE_SECONDS}"),
            "--renew-deadline-seconds=4",
            "--retry-period-seconds=1",
        ],
    )
}

/// Waits until exactly one of `replicas` leads, and returns its index.
async fn leader(replicas: &[&ControllerProcess]) -> Result<usize> {
    single_leader(replicas, Duration::from_secs(3 * LEASE_SECONDS + 10)).await
}

/// Creates a RandomSecret and returns how long it took to become Ready.
async fn time_to_ready(api: &Api<RandomSecret>, name: &str) -> Result<Duration> {
    let start = Instant::now();
    api.create(
        &PostParams::default(),
        &random_secret(name, json!({"length": 20}))?,
    )
    .await?;
    wait_for(api, name, "Ready", is_ready).await?;
    Ok(start.elapsed())
}

#[tokio::test]
#[ignore = "runs its own controllers: e2e/run.sh runs it after stopping the shared one"]
async fn only_the_leader_works_and_a_standby_takes_over() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ha").await?;
    let api: Api<RandomSecret> = ns.api();
    let a = replica(0)?;
    let b = replica(1)?;
    let first = leader(&[&a, &b]).await?;
    time_to_ready(&api, "one").await?;
    let (lead, standby) = if first == 0 { (a, b) } else { (b, a) };
    // The standby reconciled nothing (every reconcile it saw was a no-op as standby).
    ensure!(
        standby
            .metric("randomsecret_reconciles_total{result=\"ok\"}")?
            .unwrap_or(0.0)
            == 0.0,
        "the standby reconciled"
    );
    ensure!(
        standby
            .metric("randomsecret_versions_created_total")?
            .unwrap_or(0.0)
            == 0.0,
        "the standby created versions"
    );
    ensure!(
        lead.metric("randomsecret_versions_created_total")? >= Some(1.0),
        "the leader created nothing"
    );
    // Where its time went, timed by spans at the default log level (info):
    // the leader's phases of a new version (the Event is posted in the
    // background: soon after); the standby wrote nothing.
    for phase in ["queued", "create", "status", "event"] {
        let count = format!("randomsecret_phase_seconds_count{{phase=\"{phase}\"}}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while lead.metric(&count)?.is_none() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ensure!(
            lead.metric(&count)? >= Some(1.0),
            "the leader's /metrics has no {count}: {}",
            lead.metrics()?
        );
    }
    ensure!(
        standby
            .metric("randomsecret_phase_seconds_count{phase=\"create\"}")?
            .is_none(),
        "the standby timed a create"
    );

    // SIGKILL the leader: the standby takes over once the lease expires.
    drop(lead);
    let killed = time_to_ready(&api, "after-kill")
        .await
        .with_context(|| standby.log_tail(40))?;
    ensure!(standby.is_leader(), "the standby did not take over");
    ensure!(
        killed <= Duration::from_secs(LEASE_SECONDS + 8),
        "takeover after SIGKILL took {killed:?}"
    );

    // SIGTERM releases the lease: a new standby takes over sooner than the lease duration.
    let c = replica(2)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(!c.is_leader() && standby.is_leader());
    standby.terminate()?;
    let released = time_to_ready(&api, "after-term")
        .await
        .with_context(|| c.log_tail(40))?;
    ensure!(c.is_leader(), "the new replica did not take over");
    ensure!(
        released < Duration::from_secs(LEASE_SECONDS),
        "takeover after SIGTERM took {released:?}, not faster than the lease"
    );
    eprintln!("takeover: SIGKILL {killed:?}, SIGTERM {released:?} (lease {LEASE_SECONDS}s)");
    c.terminate()?;
    ns.delete().await
}

#[tokio::test]
#[ignore = "runs its own controllers: e2e/run.sh runs it after stopping the shared one"]
async fn failovers_during_bursts_never_duplicate_or_change_versions() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ha-burst").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let mut replicas = vec![replica(3)?, replica(4)?];
    // Every version's data as first seen: it must never change.
    let mut seen: BTreeMap<String, Option<BTreeMap<String, k8s_openapi::ByteString>>> =
        BTreeMap::new();
    for round in 0..3u16 {
        // A burst: new RandomSecrets and rotations of the earlier ones...
        for i in 0..8 {
            api.create(
                &PostParams::default(),
                &random_secret(
                    &format!("r{round}-{i}"),
                    json!({"length": 24, "history": 5}),
                )?,
            )
            .await?;
        }
        for old in 0..round {
            for i in 0..8 {
                let patch = json!({"spec": {"rotation": format!("{round}")}});
                api.patch(
                    &format!("r{old}-{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(patch),
                )
                .await?;
            }
        }
        // ...while the leader is killed (alternately SIGKILL and SIGTERM).
        let refs: Vec<&ControllerProcess> = replicas.iter().collect();
        let l = leader(&refs).await?;
        let old = replicas.remove(l);
        if round % 2 == 0 {
            drop(old)
        } else {
            old.terminate()?
        }
        replicas.push(replica(5 + round)?);
        for rs in api.list(&ListParams::default()).await?.items {
            wait_for(&api, &rs.name_any(), "Ready after failover", is_ready)
                .await
                .with_context(|| {
                    let tails: Vec<String> = replicas.iter().map(|r| r.log_tail(20)).collect();
                    tails.join("\n")
                })?;
        }
        for s in secrets
            .list(&ListParams::default().labels("app.kubernetes.io/managed-by=randomsecret"))
            .await?
            .items
        {
            record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
            let first = seen.entry(s.name_any()).or_insert_with(|| s.data.clone());
            ensure!(*first == s.data, "the values of {} changed", s.name_any());
        }
    }
    // Exactly one Secret per (RandomSecret, hash), and each RandomSecret's current one exists.
    let all = secrets
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=randomsecret"))
        .await?
        .items;
    let mut per: BTreeMap<(String, String), usize> = BTreeMap::new();
    for s in &all {
        let l = s.labels();
        *per.entry((
            l["randomsecret.io/name"].clone(),
            l["randomsecret.io/hash"].clone(),
        ))
        .or_default() += 1;
    }
    ensure!(per.values().all(|&n| n == 1), "duplicate versions: {per:?}");
    for rs in api.list(&ListParams::default()).await?.items {
        let current = rs
            .status
            .and_then(|s| s.secret_name)
            .context("secretName")?;
        ensure!(
            all.iter().any(|s| s.name_any() == current),
            "{current} is missing"
        );
    }
    ensure!(
        all.len() >= 8 * 3 + 8 * 2 + 8,
        "expected every version of the bursts, got {}",
        all.len()
    );
    for r in replicas {
        r.terminate()?;
    }
    ns.delete().await
}

/// `randomsecret check` as a CI pipeline runs it: its exit status and output.
fn check(extra: &[&str]) -> Result<(bool, String)> {
    let bin = randomsecret_bin();
    let mut args = vec![
        "check",
        "-n",
        "randomsecret-system",
        "--lease",
        "e2e-randomsecret",
    ];
    args.extend_from_slice(extra);
    let out = std::process::Command::new(&bin).args(&args).output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// `check` passes while a controller leads; with none (SIGTERM released the
/// Lease) it fails on the Lease, and on a RandomSecret left waiting past
/// `--max-lag`; `--wait` passes once a controller leads and has reconciled it.
#[tokio::test]
#[ignore = "runs its own controllers: e2e/run.sh runs it after stopping the shared one"]
async fn check_fails_without_a_controller_and_waits_for_one() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "check").await?;
    let api: Api<RandomSecret> = ns.api();
    let webhook_ns = ["--webhook-namespace", ns.name.as_str()];
    let a = replica(0)?;
    leader(&[&a]).await?;
    let (ok, out) = check(&[&["--wait", "30s"][..], &webhook_ns[..]].concat())?;
    ensure!(ok, "a leading controller passes: {out}");
    ensure!(
        out.contains("✓ CRDs: ")
            && out.contains("✓ Lease: randomsecret-system/e2e-randomsecret held by ")
            && out.contains("✓ Reconciling: "),
        "{out}"
    );
    // Gone: SIGTERM releases the Lease.
    a.terminate()?;
    api.create(
        &PostParams::default(),
        &random_secret("waiting", json!({"length": 12}))?,
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = Instant::now();
    let (ok, out) = check(&[&["--max-lag", "2s", "--wait", "4s"][..], &webhook_ns[..]].concat())?;
    ensure!(!ok, "no controller: check fails: {out}");
    ensure!(
        started.elapsed() >= Duration::from_secs(2),
        "--wait tried again before failing ({:?})",
        started.elapsed()
    );
    ensure!(
        out.contains("✗ Lease: randomsecret-system/e2e-randomsecret is held by no one"),
        "{out}"
    );
    ensure!(
        out.contains(&format!("✗ Reconciling: {}/waiting has waited ", ns.name))
            && out.contains("over --max-lag 2s")
            && out.contains("not ready: Lease, Reconciling"),
        "{out}"
    );
    // Back: --wait passes once it leads and has reconciled the waiting one.
    let b = replica(1)?;
    let (ok, out) = check(&[&["--max-lag", "2s", "--wait", "60s"][..], &webhook_ns[..]].concat())?;
    ensure!(
        ok,
        "a controller again: check passes: {out}\n{}",
        b.log_tail(40)
    );
    wait_for(&api, "waiting", "Ready", is_ready)
        .await
        .with_context(|| b.log_tail(40))?;
    b.terminate()?;
    ns.delete().await
}
