//! The kinds phase (issue 29), after the core sizes (`--no-kinds` skips it):
//!
//! - convergence of `--kinds-count` RandomSecrets, each with a password, an
//!   ed25519 SSH key pair and a template, against a floor that computes the
//!   same values and does the controller's writes for them;
//! - `--rsa-count` RandomSecrets with an RSA-4096 private key created at
//!   once while a string rotation workload runs on a set of plain ones: the
//!   rotations' p99 against the same workload alone, the time until the RSA
//!   ones are Ready, and the controller's lease renewals meanwhile.
//!
//! Built on the core phases' floor and convergence (`phases`).

use crate::args::Args;
use crate::controller::{self, settle, wait_leader};
use crate::figures::{Renewals, RsaLoad};
use crate::phases;
use crate::phasetimes;
use crate::procstat::{self, CpuWindow};
use crate::report::Report;
use crate::workload::{self, LIMIT, RUN_LABEL, ReadyWatch};
use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use randomsecret::api::{RandomSecret, RandomSecretSpec};
use randomsecret::runtime::keygen::KeyGeneration;
use randomsecret::version::{Kind, Version};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// RSA keys the benchmark generates itself first, for scale.
const SAMPLE_KEYS: usize = 3;

/// The start of the RSA load whose rotations a diagnostic leaves out: the
/// 200 creates and their first reconciles, API work of the RSA objects
/// themselves rather than key generation.
const BURST: Duration = Duration::from_secs(10);

/// The phase B controller's lease, and its timing, passed as flags (the
/// controller's defaults: `src/cli.rs`, `src/runtime/leader.rs`). The leader
/// renews every retry period; it stops writing once the renew deadline has
/// passed since its last renewal began.
const LEASE_NAMESPACE: &str = "default";
const LEASE_NAME: &str = "bench-kinds";
const LEASE_DURATION_S: u64 = 15;
const RENEW_DEADLINE_S: u64 = 10;
const RENEW_PERIOD_S: u64 = 2;

/// A password, an ed25519 SSH key pair (`deploy`, `deploy.pub`) and a DSN
/// rendered from the password and a static user name.
pub fn kinds_spec() -> Value {
    json!({
        "keys": {
            "password": {"length": 32},
            "deploy": {"sshKeyPair": {}},
            "dsn": {"template": "postgres://{{ static.username }}:{{ keys.password | urlquote }}@db:5432/app"},
        },
        "static": {"username": "app"},
        "rotation": "1",
    })
}

/// One RSA-4096 private key (PKCS#8) and its public key.
pub fn rsa_spec() -> Value {
    json!({"keys": {"tls": {"privateKey": {"algorithm": "rsa", "size": 4096}}}, "rotation": "1"})
}

/// A set of plain RandomSecrets that exists when the phase runs (the largest
/// size's, kept for the scale phase).
pub struct PlainSet {
    pub prefix: String,
    pub run: String,
}

/// Both parts; a failure is a note in the report, not the run's end.
pub async fn phase(client: &Client, args: &Args, kept: Option<PlainSet>, report: &mut Report) {
    if let Err(e) = convergence(client, args, report).await {
        report.note(&format!(
            "kinds: convergence with a key pair and a template failed: {e:#}"
        ));
    }
    if let Err(e) = rsa(client, args, kept, report).await {
        report.note(&format!("kinds: RSA keys under rotations failed: {e:#}"));
    }
}

/// The controller's flags for the phase: `--key-generation-concurrency` when given.
fn keygen_flags(args: &Args) -> Vec<String> {
    args.key_generation_concurrency
        .map(|k| vec!["--key-generation-concurrency".into(), k.to_string()])
        .unwrap_or_default()
}

/// The floor and the controller each converge `--kinds-count` RandomSecrets
/// of [`kinds_spec`].
async fn convergence(client: &Client, args: &Args, report: &mut Report) -> Result<()> {
    let n = args.kinds_count;
    let spec = kinds_spec();
    eprintln!("bench: kinds: floor of {n} with a key pair and a template");
    let floor = phases::floor_of(client, args, "kfloor", n, &spec, false).await?;
    eprintln!("bench: kinds: floor {:?}; randomsecret", floor.took);
    let flags = keygen_flags(args);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (ours, ctl) = phases::converge_of(client, args, "kinds", n, &spec, || {
        controller::start(args, "bench-kinds", &flags)
    })
    .await?;
    ctl.terminate()?;
    report.kinds_convergence(n, &floor, &ours);
    workload::delete_namespaces(client, &phases::prefix("kinds", n), args.namespaces).await
}

/// What the controller does by default (`Context::keygen`): half the cores, at least one.
fn permits(args: &Args) -> usize {
    args.key_generation_concurrency.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
        usize::from,
    )
}

/// The key kind of [`rsa_spec`]'s key.
fn rsa_kind() -> Result<Kind> {
    let spec: RandomSecretSpec = serde_json::from_value(rsa_spec())?;
    Ok(Version::of(&spec, "sample")?
        .spec
        .generated
        .get("tls")
        .context("the RSA spec has no key tls")?
        .kind
        .clone())
}

/// The mean time of one RSA-4096 key, generated here as the controller
/// generates it (one thread), before anything else runs.
async fn one_rsa_key() -> Result<Duration> {
    let kind = rsa_kind()?;
    tokio::task::spawn_blocking(move || -> Result<Duration> {
        let start = Instant::now();
        for _ in 0..SAMPLE_KEYS {
            randomsecret::generate::key_value(&kind)?;
        }
        Ok(start.elapsed() / SAMPLE_KEYS as u32)
    })
    .await?
}

/// Phase B: a controller with leader election and a set of plain
/// RandomSecrets; rotations alone, then the same rotations (for as long as
/// it takes) while `--rsa-count` RSA RandomSecrets are created at once.
async fn rsa(
    client: &Client,
    args: &Args,
    kept: Option<PlainSet>,
    report: &mut Report,
) -> Result<()> {
    eprintln!("bench: kinds: {SAMPLE_KEYS} RSA-4096 keys generated here, for scale");
    let one_key = one_rsa_key().await?;
    eprintln!("bench: kinds: one RSA-4096 key: {one_key:?}");
    let (period, deadline, duration) = (
        RENEW_PERIOD_S.to_string(),
        RENEW_DEADLINE_S.to_string(),
        LEASE_DURATION_S.to_string(),
    );
    let mut flags: Vec<String> = [
        "--leader-elect",
        "--leader-election-namespace",
        LEASE_NAMESPACE,
        "--leader-election-id",
        LEASE_NAME,
        "--lease-duration-seconds",
        &duration,
        "--renew-deadline-seconds",
        &deadline,
        "--retry-period-seconds",
        &period,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    flags.extend(keygen_flags(args));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let reconcile_concurrency = args.kinds_reconcile_concurrency.unwrap_or(args.concurrency);
    let mut ctl = controller::start(
        &Args {
            concurrency: reconcile_concurrency,
            ..args.clone()
        },
        "bench-rsa",
        &flags,
    )?;
    wait_leader(&ctl, Duration::from_secs(60)).await?;
    let own = kept.is_none();
    let plain = match kept {
        Some(set) => set,
        None => {
            let n = args.kinds_plain;
            eprintln!("bench: kinds: {n} plain RandomSecrets to rotate");
            let set = PlainSet {
                prefix: phases::prefix("kplain", n),
                run: format!("kplain-{n}"),
            };
            workload::create_namespaces(client, &set.prefix, args.namespaces).await?;
            let watch = ReadyWatch::start(
                Api::<RandomSecret>::all(client.clone()),
                &format!("{RUN_LABEL}={}", set.run),
                n,
                workload::randomsecret_ready,
            )
            .await?;
            phases::create_randomsecrets(
                client,
                args,
                &set.prefix,
                &set.run,
                &workload::spec("1"),
                0..n,
            )
            .await?;
            watch.wait(LIMIT).await?;
            set
        }
    };
    settle(&ctl).await?;
    let mut targets = Targets::list(client, &plain.run).await?;
    ensure!(
        !targets.all.is_empty(),
        "no RandomSecrets in run {}",
        plain.run
    );
    let lease = LeaseWatch::start(client).await?;
    let leader = LeaderSampler::start(ctl.metrics_port);
    let mut rotations = Rotations::start(client, &plain.run).await?;

    eprintln!(
        "bench: kinds: {} rotations at {}/s alone",
        args.rotations, args.rotation_rate
    );
    let t0 = Instant::now();
    let alone = rotations
        .run(client, args, &mut targets, "kb", args.rotations, None)
        .await?
        .sorted();
    let t1 = Instant::now();

    let m = args.rsa_count;
    eprintln!(
        "bench: kinds: {m} RSA-4096 RandomSecrets at once, rotations at {}/s until they are Ready",
        args.rotation_rate
    );
    let pre = phases::prefix("rsa", m);
    let run = format!("rsa-{m}");
    workload::create_namespaces(client, &pre, args.namespaces).await?;
    let rsa_ready = ReadyWatch::start(
        Api::<RandomSecret>::all(client.clone()),
        &format!("{RUN_LABEL}={run}"),
        m,
        workload::randomsecret_ready,
    )
    .await?;
    let pid = ctl.child.id();
    let phases_before = phasetimes::scrape(&ctl)?;
    let cpu_before = procstat::cpu_seconds(pid)?;
    let cpu = CpuWindow::start(&[pid])?;
    let (stop, until) = watch::channel(false);
    let t2 = Instant::now();
    let spec = rsa_spec();
    let load = async {
        let made = async {
            phases::create_randomsecrets(client, args, &pre, &run, &spec, 0..m).await?;
            rsa_ready.wait_since(t2, LIMIT).await.context("the RSA set")
        }
        .await;
        let _ = stop.send(true);
        made
    };
    let during = rotations.run(
        client,
        args,
        &mut targets,
        "kl",
        args.rotations,
        Some(until),
    );
    let (made, during) = tokio::join!(load, during);
    let (took, ready) = made?;
    let cpu_s = procstat::cpu_seconds(pid)? - cpu_before;
    let cpu = cpu.stop()?;
    let during = during?;
    let t3 = Instant::now();
    let phases_after = phasetimes::scrape(&ctl)?;
    let phase_times = phasetimes::delta(&phases_before, &phases_after);
    let (during, during_later) = (during.sorted(), during.sorted_from(BURST));
    eprintln!(
        "bench: kinds: {} rotations at {}/s alone again (as many as during)",
        during.len(),
        args.rotation_rate
    );
    let after = rotations
        .run(client, args, &mut targets, "ka", during.len(), None)
        .await?
        .sorted();
    let phase_times_after = phasetimes::delta(&phases_after, &phasetimes::scrape(&ctl)?);
    eprintln!(
        "bench: kinds: {} rotations at {}/s beside the load's floor ({m} RSA-4096 keys made here)",
        during.len(),
        args.rotation_rate
    );
    let (floor, floor_load) = tokio::join!(
        rotations.run(client, args, &mut targets, "kf", during.len(), None),
        load_floor(args, m)
    );
    let floor = floor?;
    let floor_load = floor_load.context("the load's floor")?;
    rotations.stop();
    let (leader_samples, not_leading, metrics_max_ms) = leader.stop();
    let renewals = lease.stop();
    let period = Duration::from_secs(RENEW_PERIOD_S);
    let deadline = Duration::from_secs(RENEW_DEADLINE_S);
    ensure!(
        ctl.child.try_wait()?.is_none(),
        "the controller exited during the RSA load"
    );
    report.rsa_load(&RsaLoad {
        count: m,
        plain: targets.all.len(),
        permits: permits(args),
        reconcile_concurrency,
        one_key,
        one_key_of: SAMPLE_KEYS,
        took,
        ready,
        cpu_s,
        cpu,
        alone,
        during,
        during_later,
        burst: BURST,
        after,
        floor: floor.sorted(),
        floor_later: floor.sorted_from(BURST),
        floor_load,
        renewals_alone: gaps(&renewals, t0, t1, period, deadline),
        renewals_during: gaps(&renewals, t2, t3, period, deadline),
        period,
        deadline,
        leader_samples,
        not_leading,
        metrics_max_ms,
    });
    report.phase_times(
        "rotations while the RSA keys were made",
        "rsa_load",
        &phase_times,
    );
    report.phase_times(
        "the rotations alone after",
        "rsa_load_after",
        &phase_times_after,
    );
    ctl.terminate()?;
    workload::delete_namespaces(client, &pre, args.namespaces).await?;
    if own {
        workload::delete_namespaces(client, &plain.prefix, args.namespaces).await?;
    }
    Ok(())
}

/// The load's floor: the CPU the RSA load puts on this machine, without
/// the controller: `m` RSA-4096 keys generated here in a lane like the
/// controller's (`KeyGeneration`: `SCHED_IDLE` threads, as many as the
/// controller's permits). Returns how long they took. Rotations that slow
/// as much beside this as beside the controller's RSA load were slowed by
/// the machine (its cores shared by the apiserver, etcd and a busy key
/// generator), not by the controller's handling. The load's creates are
/// left out: plain ones would be reconciled at once, a burst the RSA ones
/// (each waiting for its key) do not make.
async fn load_floor(args: &Args, m: usize) -> Result<Duration> {
    let lane = Arc::new(KeyGeneration::new(Some(permits(args)))?);
    let kind = rsa_kind()?;
    let start = Instant::now();
    let keys = futures::future::try_join_all((0..m).map(|_| {
        let (lane, kind) = (lane.clone(), kind.clone());
        async move {
            lane.run(move || randomsecret::generate::key_value(&kind).map(|_| ()))
                .await
        }
    }))
    .await?;
    let took = start.elapsed();
    keys.into_iter().collect::<Result<Vec<()>, _>>()?;
    Ok(took)
}

/// A plain RandomSecret to rotate, with its spec as it is now.
struct Target {
    ns: String,
    name: String,
    spec: RandomSecretSpec,
}

/// The set's RandomSecrets, taken in turn.
struct Targets {
    all: Vec<Target>,
    next: usize,
}

impl Targets {
    async fn list(client: &Client, run: &str) -> Result<Targets> {
        let lp = kube::api::ListParams::default().labels(&format!("{RUN_LABEL}={run}"));
        let mut all: Vec<Target> = Api::<RandomSecret>::all(client.clone())
            .list(&lp)
            .await?
            .items
            .into_iter()
            .map(|rs| Target {
                ns: rs.namespace().unwrap_or_default(),
                name: rs.name_any(),
                spec: rs.spec,
            })
            .collect();
        all.sort_by(|a, b| (&a.name, &a.ns).cmp(&(&b.name, &b.ns)));
        Ok(Targets { all, next: 0 })
    }

    /// The next one whose last rotation is done.
    fn take(&mut self, pending: &workload::Pending) -> Result<&mut Target> {
        let p = pending.lock().expect("pending lock");
        for _ in 0..self.all.len() {
            let i = self.next;
            self.next = (self.next + 1) % self.all.len();
            let t = &self.all[i];
            if !p.contains_key(&(t.ns.clone(), t.name.clone())) {
                drop(p);
                return Ok(&mut self.all[i]);
            }
        }
        bail!("every RandomSecret of the set has a rotation pending")
    }
}

/// Rotations timed: when each was sent (since the run began), and how long
/// it took.
struct Timed(Vec<(Duration, Duration)>);

impl Timed {
    /// The times of those sent from `from` on, sorted.
    fn sorted_from(&self, from: Duration) -> Vec<Duration> {
        let mut l: Vec<Duration> = self
            .0
            .iter()
            .filter(|(sent, _)| *sent >= from)
            .map(|(_, took)| *took)
            .collect();
        l.sort();
        l
    }

    fn sorted(&self) -> Vec<Duration> {
        self.sorted_from(Duration::ZERO)
    }
}

/// The rotation workload: one watch of the set for both runs.
struct Rotations {
    watch: workload::RotationWatch,
}

impl Rotations {
    async fn start(client: &Client, run: &str) -> Result<Self> {
        Ok(Rotations {
            watch: workload::watch_rotations(client, run).await?,
        })
    }

    /// Rotation latencies: `spec.rotation` changes to new tokens
    /// `<token>-<k>` at `--rotation-rate`, each to the next object of
    /// `targets` with none pending, timed from sending the patch until the
    /// watch shows the new version (its name computed offline) and Ready; at
    /// least `at_least` of them, and on until `until` turns true.
    async fn run(
        &mut self,
        client: &Client,
        args: &Args,
        targets: &mut Targets,
        token: &str,
        at_least: usize,
        until: Option<watch::Receiver<bool>>,
    ) -> Result<Timed> {
        self.watch.latencies.lock().expect("latency lock").clear();
        let interval = Duration::from_secs_f64(1.0 / args.rotation_rate);
        let start = Instant::now();
        let mut sends = Vec::new();
        let mut k = 0usize;
        loop {
            let done = until.as_ref().is_none_or(|u| *u.borrow());
            if k >= at_least && done {
                break;
            }
            ensure!(
                start.elapsed() < LIMIT,
                "the rotation workload ran out of time"
            );
            tokio::time::sleep_until((start + interval.mul_f64(k as f64)).into()).await;
            let t = targets.take(&self.watch.pending)?;
            let rotation = format!("{token}-{k}");
            t.spec.rotation = Some(rotation.clone());
            let expected = Version::of(&t.spec, &t.name)?.secret_name;
            workload::mark_sent(&self.watch.pending, &t.ns, &t.name, expected);
            let (client, ns, name) = (client.clone(), t.ns.clone(), t.name.clone());
            sends.push(tokio::spawn(async move {
                workload::rotate(&client, &ns, &name, &rotation).await
            }));
            k += 1;
        }
        for s in sends {
            s.await??;
        }
        let l = self.watch.seen_all().await?;
        Ok(Timed(
            l.into_iter()
                .map(|d| (d.sent.at.saturating_duration_since(start), d.took))
                .collect(),
        ))
    }

    fn stop(self) {
        drop(self.watch); // aborts it
    }
}

/// Every `spec.renewTime` of the lease seen (microseconds since the epoch),
/// with when the benchmark saw it.
type Seen = Arc<Mutex<Vec<(i64, Instant)>>>;

/// A watch of the phase's Lease.
struct LeaseWatch {
    seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl LeaseWatch {
    async fn start(client: &Client) -> Result<Self> {
        let api = Api::<Lease>::namespaced(client.clone(), LEASE_NAMESPACE);
        let config = watcher::Config::default().fields(&format!("metadata.name={LEASE_NAME}"));
        let seen: Seen = Arc::default();
        let (init_tx, init_rx) = tokio::sync::oneshot::channel();
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut init_tx = Some(init_tx);
                let mut stream = watcher::watcher(api, config).boxed();
                while let Some(ev) = stream.next().await {
                    match ev {
                        Ok(Event::Apply(l) | Event::InitApply(l)) => {
                            let Some(t) = l.spec.and_then(|s| s.renew_time) else {
                                continue;
                            };
                            let t = t.0.as_microsecond();
                            let mut seen = seen.lock().expect("lease lock");
                            if seen.last().is_none_or(|(last, _)| *last != t) {
                                seen.push((t, Instant::now()));
                            }
                        }
                        Ok(Event::InitDone) => {
                            if let Some(t) = init_tx.take() {
                                let _ = t.send(());
                            }
                        }
                        Ok(_) => {}
                        Err(e) => eprintln!("bench: lease watch error (retrying): {e}"),
                    }
                }
            })
        };
        init_rx
            .await
            .context("the lease watch ended before its first list")?;
        Ok(LeaseWatch { seen, task })
    }

    fn stop(self) -> Vec<(i64, Instant)> {
        self.task.abort();
        std::mem::take(&mut *self.seen.lock().expect("lease lock"))
    }
}

/// The renewals seen between `from` and `to`: each gap ending in the window
/// (from the renewal before it), and the time from the last one to `to`.
fn gaps(
    seen: &[(i64, Instant)],
    from: Instant,
    to: Instant,
    period: Duration,
    deadline: Duration,
) -> Renewals {
    let mut out = Renewals {
        count: 0,
        max_gap: Duration::ZERO,
        missed: 0,
        over_deadline: 0,
    };
    let note = |out: &mut Renewals, gap: Duration| {
        out.max_gap = out.max_gap.max(gap);
        out.missed += usize::from(gap > 2 * period);
        out.over_deadline += usize::from(gap > deadline);
    };
    let mut last = None;
    for w in seen.windows(2) {
        let (a, (b, seen_at)) = (w[0].0, w[1]);
        if seen_at < from || seen_at > to {
            continue;
        }
        out.count += 1;
        note(&mut out, Duration::from_micros((b - a).max(0) as u64));
        last = Some(seen_at);
    }
    // Renewals that stopped: the silence until the window's end (counted
    // only when longer than every gap, so an on-time end counts nothing).
    let since = last.or_else(|| seen.iter().rev().find(|(_, at)| *at < from).map(|s| s.1));
    if let Some(at) = since {
        let silence = to.saturating_duration_since(at);
        if silence > out.max_gap {
            note(&mut out, silence);
        }
    }
    out
}

/// Scrapes the controller's `randomsecret_leader` gauge every 200 ms, on a
/// thread of its own: how many scrapes, how many not 1, the slowest answer.
struct LeaderSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(usize, usize, f64)>,
}

impl LeaderSampler {
    fn start(port: u16) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut samples, mut not_leading, mut slowest) = (0, 0, 0f64);
            let url = format!("http://127.0.0.1:{port}/metrics");
            while !flag.load(Ordering::Relaxed) {
                let start = Instant::now();
                let out = std::process::Command::new("curl")
                    .args(["-fsS", "--max-time", "10", &url])
                    .output();
                slowest = slowest.max(start.elapsed().as_secs_f64() * 1000.0);
                let leading = out.ok().filter(|o| o.status.success()).is_some_and(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .find_map(|l| l.strip_prefix("randomsecret_leader "))
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        == Some(1.0)
                });
                samples += 1;
                not_leading += usize::from(!leading);
                std::thread::sleep(Duration::from_millis(200));
            }
            (samples, not_leading, slowest)
        });
        LeaderSampler { stop, thread }
    }

    fn stop(self) -> (usize, usize, f64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or((0, 0, f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_are_valid_and_the_floor_can_compute_the_kinds_values() {
        let spec: RandomSecretSpec = serde_json::from_value(kinds_spec()).unwrap();
        let v = Version::of(&spec, "rs-00000").unwrap();
        let mut data = std::collections::BTreeMap::new();
        for (key, g) in &v.spec.generated {
            if !g.kind.is_derived() {
                let value = randomsecret::generate::key_value(&g.kind).unwrap();
                data.insert(key.clone(), k8s_openapi::ByteString(value));
            }
        }
        randomsecret::generate::derive::all(&v.spec, &mut data, &std::collections::BTreeMap::new())
            .unwrap();
        let keys: Vec<&str> = data.keys().map(String::as_str).collect();
        assert_eq!(keys, ["deploy", "deploy.pub", "dsn", "password"]);
        let dsn = String::from_utf8(data["dsn"].0.clone()).unwrap();
        assert!(dsn.starts_with("postgres://app:") && dsn.ends_with("@db:5432/app"));
        let rsa: RandomSecretSpec = serde_json::from_value(rsa_spec()).unwrap();
        let v = Version::of(&rsa, "rs-00000").unwrap();
        assert!(randomsecret::generate::costly(
            &v.spec.generated["tls"].kind
        ));
    }

    #[test]
    fn gaps_count_late_renewals_and_a_silence_at_the_end() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let us = |s: u64| (s * 1_000_000) as i64;
        let (p, d) = (Duration::from_secs(2), Duration::from_secs(10));
        let seen = vec![
            (us(0), at(0)),
            (us(2), at(2)),
            (us(4), at(4)),
            (us(9), at(9)),
        ];
        let r = gaps(&seen, at(1), at(10), p, d);
        assert_eq!((r.count, r.missed, r.over_deadline), (3, 1, 0));
        assert_eq!(r.max_gap, Duration::from_secs(5));
        // Nothing after 9 s: the silence to 25 s is past the deadline.
        let r = gaps(&seen, at(1), at(25), p, d);
        assert_eq!((r.missed, r.over_deadline), (2, 1));
        assert_eq!(r.max_gap, Duration::from_secs(16));
    }
}
