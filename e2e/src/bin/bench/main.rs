//! `make bench`: convergence against an apiserver floor, API requests per
//! version, memory, CPU, connections and threads at 10,000 objects, rotation
//! latency, startup (with the peak RSS of the initial lists), failover, a
//! peer controller, the webhook's latency, the push to OpenBao and, last,
//! memory as the set grows to 50,000, all against
//! the local control plane in one run. Prints a table and writes
//! `target/bench/results.json`.
//!
//! Run by `e2e/bench.sh` (which starts the control plane and builds the
//! release binary and the peer); see docs/src/benchmarks.md.

mod apimetrics;
mod charts;
mod etcd;
mod peer;
mod procstat;
mod push;
mod report;
mod webhook;
mod workload;

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use procstat::{Handles, Sampler, Steady};
use randomsecret::api::RandomSecret;
use randomsecret::version::Version;
use randomsecret_e2e::ControllerProcess;
use report::Report;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use workload::{RUN_LABEL, ReadyWatch, place, run_concurrently};

#[derive(Parser, Debug, Clone)]
#[command(about = "randomsecret benchmarks against the local control plane")]
pub struct Args {
    /// Numbers of RandomSecrets to converge (the largest also gets the memory, rotation and startup phases).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    sizes: Vec<usize>,
    /// Namespaces the objects are spread over.
    #[arg(long, default_value_t = 4)]
    namespaces: usize,
    /// Writes in flight, for the benchmark's client, the floor, the controller and the peer alike.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Rotations for the latency phase, sent at --rotation-rate per second.
    #[arg(long, default_value_t = 500)]
    rotations: usize,
    #[arg(long, default_value_t = 20.0)]
    rotation_rate: f64,
    /// Unrelated Secrets (of --bulk-kib KiB each) for the memory phase.
    #[arg(long, default_value_t = 10000)]
    bulk: usize,
    #[arg(long, default_value_t = 100)]
    bulk_kib: usize,
    /// Seconds over which steady RSS and idle CPU are sampled.
    #[arg(long, default_value_t = 20)]
    steady_seconds: u64,
    /// Skip the floor (when profiling the controller).
    #[arg(long)]
    no_floor: bool,
    /// Skip the peer controller.
    #[arg(long)]
    no_peer: bool,
    /// Diagnostic: at the largest size, run the floor a second time with
    /// the controller's two convergence watches open (RandomSecrets, and
    /// our Secrets metadata-only), to tell what the watches cost the
    /// apiserver from what the controller adds.
    #[arg(long)]
    floor_watches: bool,
    /// The scale phase (last): grow the largest size's set to this many
    /// RandomSecrets (each with its Secret; no more ReplicaSets) in 4 equal
    /// steps, with the steady RSS after each, then restart the controller with
    /// all of them. Default: 5 times the largest size (50,000 with the default sizes).
    #[arg(long)]
    big: Option<usize>,
    /// Skip the scale phase.
    #[arg(long, alias = "no-50k")]
    no_big: bool,
    /// Annotated Secrets created through the webhook in the webhook phase,
    /// at --webhook-rate per second.
    #[arg(long, default_value_t = 1000)]
    webhook_creates: usize,
    #[arg(long, default_value_t = 50.0)]
    webhook_rate: f64,
    /// Skip the webhook phase.
    #[arg(long)]
    no_webhook: bool,
    /// Skip the flood at the end of the webhook phase: --webhook-flood-clients
    /// clients sending AdmissionReviews of 8 MiB and 3 MiB straight to the port.
    #[arg(long)]
    no_webhook_flood: bool,
    #[arg(long, default_value_t = 24)]
    webhook_flood_clients: usize,
    /// Run only the webhook phase (and its flood): a quick look.
    #[arg(long)]
    only_webhook: bool,
    /// RandomSecrets pushed to OpenBao in the push phase, created and then
    /// rotated at --push-rate per second (needs BAO_DIR: e2e/build-openbao.sh).
    #[arg(long, default_value_t = 200)]
    pushes: usize,
    #[arg(long, default_value_t = 20.0)]
    push_rate: f64,
    /// Skip the push phase.
    #[arg(long)]
    no_push: bool,
    /// Where results.json goes.
    #[arg(long, default_value = "target/bench")]
    out: std::path::PathBuf,
    /// Where the SVG charts go (committed next to the table of docs/src/benchmarks.md).
    #[arg(long, default_value = "docs/src/bench")]
    charts: std::path::PathBuf,
    /// Only draw the charts (into --charts) from an existing results.json; runs nothing.
    #[arg(long, value_name = "RESULTS_JSON")]
    render_charts: Option<std::path::PathBuf>,
    /// First of the local ports for the controllers' metrics and health endpoints.
    #[arg(long, default_value_t = 19080)]
    port: u16,
    /// The apiserver's port (from the kubeconfig): connections to it are counted.
    #[arg(skip)]
    api_port: u16,
}

/// The requests the controller makes, as (verb, resource): everything else in
/// the apiserver's counters is other clients (the benchmark, the
/// controller-manager's garbage collector and Event series, ...).
pub const OURS: &[(&str, &str)] = &[
    ("POST", "secrets"),
    ("GET", "secrets"),
    ("PATCH", "secrets"),
    ("DELETE", "secrets"),
    ("APPLY", "randomsecrets/status"),
    ("POST", "events"),
];
/// Resources the controller watches (its only LISTs are at start).
const WATCHED: &[&str] = &[
    "secrets",
    "randomsecrets",
    "replicasets",
    "controllerrevisions",
    "pods",
    "deployments",
    "statefulsets",
    "daemonsets",
];
const LIMIT: Duration = Duration::from_secs(1800);

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = Args::parse();
    if let Some(file) = &args.render_charts {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let results: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", file.display()))?;
        for path in charts::render(&results, &args.charts)? {
            println!("{}", path.display());
        }
        return Ok(());
    }
    // Ascending: the largest set is the one kept for the scale phase, which comes last.
    args.sizes.sort_unstable();
    args.sizes.dedup();
    let config = kube::Config::infer()
        .await
        .context("reading the cluster from KUBECONFIG")?;
    args.api_port = config.cluster_url.port_u16().unwrap_or(443);
    let client = Client::try_from(config).context("connecting to the cluster in KUBECONFIG")?;
    let largest = *args.sizes.last().context("--sizes is empty")?;
    let big = match (args.no_big, args.big.unwrap_or(5 * largest)) {
        (true, _) => None,
        (false, b) if b > largest => Some(b),
        (false, b) => bail!("--big {b} is not above the largest size {largest}"),
    };
    let mut report = Report::new(&args, big);
    let peer = if args.no_peer {
        None
    } else {
        peer::Peer::from_env()?
    };
    match &peer {
        Some(p) => p.install_crds()?,
        None if !args.no_peer => report.note("peer: PEER_DIR is not set; the peer was not run"),
        None => {}
    }

    if args.only_webhook {
        eprintln!("bench: webhook only");
        if let Err(e) = webhook::phase(
            &client,
            &args,
            args.webhook_creates,
            args.webhook_rate,
            &mut report,
        )
        .await
        {
            report.note(&format!("webhook phase failed: {e:#}"));
        }
        return report.finish(&args.out, &args.charts);
    }
    for &n in &args.sizes {
        eprintln!("bench: N={n}: floor");
        let mut floor = if args.no_floor {
            None
        } else {
            Some(floor(&client, &args, n, n == largest, false).await?)
        };
        let rotation_floor = floor.as_mut().and_then(|f| f.rotated.take());
        let watched = if args.floor_watches && n == largest {
            eprintln!("bench: N={n}: floor with the controller's watches open");
            Some(crate::floor(&client, &args, n, false, true).await?.took)
        } else {
            None
        };
        eprintln!(
            "bench: N={n}: floor {:?}; randomsecret",
            floor.as_ref().map(|f| f.took)
        );
        let mut ctl = start_controller(&args, "bench", &[])?;
        let ours = converge(&client, &args, n, &ctl).await?;
        report.convergence(n, floor.as_ref(), &ours);
        if let Some(watched) = watched {
            report.floor_watched(n, watched, ours.took);
        }
        if n == largest {
            memory(&client, &args, n, &mut ctl, &mut report).await?;
            rotation(&client, &args, n, rotation_floor, &mut report).await?;
            let ctl2 = startup(&client, &args, n, ctl, &mut report).await?;
            failover(&client, &args, n, ctl2, &mut report).await?;
        } else {
            ctl.terminate()?;
        }
        if let Some(p) = &peer {
            eprintln!("bench: N={n}: peer {}", p.name());
            let result = p.converge(&client, &args, n).await;
            match result {
                Ok(r) => report.peer(n, p.name(), r),
                Err(e) => report.note(&format!("peer at N={n} failed: {e:#}")),
            }
        }
        if n == largest && big.is_some() {
            continue; // the scale phase grows this set; cluster.sh down removes it
        }
        workload::delete_namespaces(&client, &prefix("ours", n), args.namespaces).await?;
    }
    if !args.no_webhook {
        eprintln!("bench: webhook");
        if let Err(e) = webhook::phase(
            &client,
            &args,
            args.webhook_creates,
            args.webhook_rate,
            &mut report,
        )
        .await
        {
            report.note(&format!("webhook phase failed: {e:#}"));
        }
    }
    if !args.no_push {
        eprintln!("bench: push");
        let result = if std::env::var_os("BAO_DIR").is_none() {
            Err(anyhow::anyhow!("BAO_DIR is not set (e2e/build-openbao.sh)"))
        } else {
            push::phase(&client, &args, args.pushes, args.push_rate, &mut report).await
        };
        if let Err(e) = result {
            report.note(&format!("push phase failed: {e:#}"));
        }
    }
    if let Some(target) = big {
        scale(&client, &args, largest, target, &mut report).await?;
    }
    report.finish(&args.out, &args.charts)
}

/// Before each convergence run: etcd compacted and defragmented
/// (`etcd::reset`), so that every run starts from the same storage.
pub fn fresh_storage(what: &str) -> Result<()> {
    let Some(port) = etcd::port() else {
        eprintln!("bench: ETCD_PORT is not set: etcd is not compacted between runs");
        return Ok(());
    };
    let (before, after) = etcd::reset(port).context("compacting etcd between runs")?;
    eprintln!(
        "bench: {what}: etcd compacted and defragmented ({:.1} -> {:.1} MiB)",
        before as f64 / 1048576.0,
        after as f64 / 1048576.0
    );
    Ok(())
}

fn prefix(what: &str, n: usize) -> String {
    format!("bench-{what}-{n}")
}

/// Creates RandomSecrets number `range` of set `pre` (labelled `run`), with
/// the benchmark's concurrency.
async fn create_randomsecrets(
    client: &Client,
    args: &Args,
    pre: &str,
    run: &str,
    range: std::ops::Range<usize>,
) -> Result<()> {
    run_concurrently(range.len(), args.concurrency, |j| {
        let (ns, name) = place(pre, args.namespaces, range.start + j);
        let run = run.to_string();
        async move {
            Api::<RandomSecret>::namespaced(client.clone(), &ns)
                .create(
                    &PostParams::default(),
                    &workload::random_secret(&name, &run, "1")?,
                )
                .await?;
            Ok(())
        }
    })
    .await
}

fn start_controller(args: &Args, log: &str, extra: &[&str]) -> Result<ControllerProcess> {
    let conc = args.concurrency.to_string();
    let mut all = vec!["--log-level=info", "--concurrency", &conc];
    all.extend_from_slice(extra);
    let mut p = ControllerProcess::spawn(log, args.port, &all)?;
    p.wait_ready(Duration::from_secs(300))?;
    Ok(p)
}

/// The floor: a tight client doing the controller's writes itself.
/// With `rotations`, also the floor of the rotation phase on the same set.
/// With `watches`, the controller's convergence watches are open meanwhile
/// (a set of its own, `floorw`).
///
/// Timed as the controller's run is: from the first create until the
/// benchmark's own watch has seen every object Ready, so that both pay for
/// that watch and its delivery alike (`writes`: until the last write
/// returned, as the floor was timed before 2026-12-02).
async fn floor(
    client: &Client,
    args: &Args,
    n: usize,
    rotations: bool,
    watches: bool,
) -> Result<Floor> {
    let what = if watches { "floorw" } else { "floor" };
    fresh_storage(what)?;
    let pre = prefix(what, n);
    workload::create_namespaces(client, &pre, args.namespaces).await?;
    let run = format!("{what}-{n}");
    let watching = watches.then(|| workload::controller_watches(client));
    let ready = ReadyWatch::start(
        Api::<RandomSecret>::all(client.clone()),
        &format!("{RUN_LABEL}={run}"),
        n,
        workload::randomsecret_ready,
    )
    .await?;
    let start = Instant::now();
    run_concurrently(n, args.concurrency, |i| {
        workload::floor_object(client, &pre, args.namespaces, &run, i)
    })
    .await?;
    let writes = start.elapsed();
    let (took, done) = ready.wait_since(start, LIMIT).await.context("the floor")?;
    for w in watching.into_iter().flatten() {
        w.abort();
    }
    let rotated = if rotations {
        Some(rotation_floor(client, args, n).await?)
    } else {
        None
    };
    // Gone before the controller starts, or it would take them over.
    workload::delete_namespaces(client, &pre, args.namespaces).await?;
    Ok(Floor {
        took,
        writes,
        done,
        rotated,
    })
}

pub struct Floor {
    /// Until every object was seen Ready.
    pub took: Duration,
    /// Until the last write returned.
    pub writes: Duration,
    /// When each object was seen Ready, since the first create, in order.
    pub done: Vec<Duration>,
    /// The rotation floor's latencies (`rotations`).
    pub rotated: Option<Vec<Duration>>,
}

pub struct Converged {
    pub took: Duration,
    /// When each RandomSecret became Ready, since the first create, in order.
    pub ready: Vec<Duration>,
    pub requests: apimetrics::Counts,
    pub reconciles: f64,
    pub rss_kib: u64,
    pub peak_kib: u64,
    /// Connections, fds and threads once settled.
    pub handles: Handles,
    /// The most of each while converging (sampled every 500 ms).
    pub handles_max: Handles,
}

/// Reconciles so far (every result), from the controller's metrics.
fn reconciles(p: &ControllerProcess) -> Result<f64> {
    Ok(p.metrics()?
        .lines()
        .filter(|l| l.starts_with("randomsecret_reconciles_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Waits until the controller has nothing in flight and its reconcile count
/// stays put for two seconds.
async fn settle(p: &ControllerProcess) -> Result<()> {
    let mut last = (reconciles(p)?, Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = reconciles(p)?;
        let idle = p.metric("randomsecret_reconciles_in_flight ")? == Some(0.0);
        if now != last.0 || !idle {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(2) {
            return Ok(());
        }
    }
}

async fn converge(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: &ControllerProcess,
) -> Result<Converged> {
    fresh_storage("randomsecret")?;
    let pre = prefix("ours", n);
    workload::create_namespaces(client, &pre, args.namespaces).await?;
    let run = format!("ours-{n}");
    let selector = format!("{RUN_LABEL}={run}");
    let watch = ReadyWatch::start(
        Api::<RandomSecret>::all(client.clone()),
        &selector,
        n,
        workload::randomsecret_ready,
    )
    .await?;
    let before = apimetrics::scrape(client).await?;
    let reconciles_before = reconciles(ctl)?;
    let sampler = Sampler::start(
        ctl.child.id(),
        Some(args.api_port),
        Duration::from_millis(500),
    );
    let start = Instant::now();
    create_randomsecrets(client, args, &pre, &run, 0..n).await?;
    let (took, ready) = watch
        .wait_since(start, LIMIT)
        .await
        .context("randomsecret")?;
    settle(ctl).await?;
    let mut requests = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    // The benchmark's own requests.
    apimetrics::subtract(&mut requests, "POST", "randomsecrets", n as f64);
    let during = sampler.stop();
    let mem = procstat::memory(ctl.child.id())?;
    Ok(Converged {
        took,
        ready,
        requests,
        reconciles: reconciles(ctl)? - reconciles_before,
        rss_kib: mem.rss_kib,
        peak_kib: mem.peak_kib,
        handles: procstat::handles(ctl.child.id(), args.api_port)?,
        handles_max: during.max,
    })
}

/// RSS with the n/n/n set (RandomSecrets, Secrets, ReplicaSets), idle CPU,
/// and RSS again with the unrelated bulk Secrets.
async fn memory(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: &mut ControllerProcess,
    report: &mut Report,
) -> Result<()> {
    let pid = ctl.child.id();
    let pre = prefix("ours", n);
    eprintln!("bench: N={n}: {n} ReplicaSets referencing the versions");
    let before = apimetrics::scrape(client).await?;
    run_concurrently(n, args.concurrency, |i| {
        let (ns, name) = place(&pre, args.namespaces, i);
        async move {
            let api = Api::<RandomSecret>::namespaced(client.clone(), &ns);
            let secret = Version::of(&api.get(&name).await?.spec, &name)?.secret_name;
            Api::namespaced(client.clone(), &ns)
                .create(
                    &PostParams::default(),
                    &workload::replica_set(&format!("app-{name}"), "ours", &secret)?,
                )
                .await?;
            Ok(())
        }
    })
    .await?;
    settle(ctl).await?;
    let mut requests = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    apimetrics::subtract(&mut requests, "GET", "randomsecrets", n as f64);
    apimetrics::subtract(&mut requests, "POST", "replicasets", n as f64);
    report.replicasets(n, &requests);
    eprintln!("bench: N={n}: steady state ({}s)", args.steady_seconds);
    let window = Duration::from_secs(args.steady_seconds);
    let steady = procstat::steady(pid, args.api_port, window)?;
    let peak = procstat::memory(pid)?.peak_kib;
    eprintln!(
        "bench: N={n}: {} unrelated Secrets of {} KiB",
        args.bulk, args.bulk_kib
    );
    let bulk_ns = "bench-bulk";
    workload::create_namespaces(client, bulk_ns, 1).await?;
    let bulk_before = apimetrics::scrape(client).await?;
    run_concurrently(args.bulk, args.concurrency, |i| async move {
        Api::namespaced(client.clone(), "bench-bulk-0")
            .create(
                &PostParams::default(),
                &workload::bulk_secret(&format!("blob-{i:05}"), "bulk", args.bulk_kib * 1024)?,
            )
            .await?;
        Ok(())
    })
    .await?;
    settle(ctl).await?;
    let mut bulk_requests = apimetrics::delta(&bulk_before, &apimetrics::scrape(client).await?);
    apimetrics::subtract(&mut bulk_requests, "POST", "secrets", args.bulk as f64);
    let with_bulk = procstat::steady(pid, args.api_port, window)?;
    report.memory(
        n,
        steady,
        peak,
        with_bulk,
        procstat::memory(pid)?.peak_kib,
        &bulk_requests,
    );
    workload::delete_namespaces(client, bulk_ns, 1).await?;
    Ok(())
}

/// Rotation latency under a steady rate of spec.rotation changes.
/// Rotation latencies, sorted: `rotations` changes at `rotation_rate` per
/// second, spread over set `pre` of `n` objects (labelled `run`), each sent by
/// `send(i)` and timed from then until a watch shows `status.secretName` at
/// the new version's name (computed offline) and Ready.
async fn time_rotations<F, Fut>(
    client: &Client,
    args: &Args,
    pre: &str,
    run: &str,
    n: usize,
    send: F,
) -> Result<Vec<Duration>>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let count = args.rotations.min(n);
    let pending: workload::Pending = Arc::new(Mutex::new(HashMap::new()));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    workload::watch_rotations(
        Api::all(client.clone()),
        &format!("{RUN_LABEL}={run}"),
        pending.clone(),
        latencies.clone(),
    );
    tokio::time::sleep(Duration::from_secs(2)).await; // the watch's first list
    let spec: randomsecret::api::RandomSecretSpec = serde_json::from_value(workload::spec("2"))?;
    let start = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / args.rotation_rate);
    // Each change is its own task, so that a slow one does not hold back the rate.
    let mut sends = Vec::new();
    for k in 0..count {
        tokio::time::sleep_until((start + interval * k as u32).into()).await;
        // Spread over the set: every (n / count)-th object.
        let i = k * (n / count);
        let (ns, name) = place(pre, args.namespaces, i);
        let expected = Version::of(&spec, &name)?.secret_name;
        pending
            .lock()
            .expect("pending lock")
            .insert((ns, name), (expected, Instant::now()));
        sends.push(tokio::spawn(send(i)));
    }
    for s in sends {
        s.await??;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while !pending.lock().expect("pending lock").is_empty() {
        ensure!(
            Instant::now() < deadline,
            "rotations still pending after 2 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut l = latencies.lock().expect("latency lock").clone();
    l.sort();
    Ok(l)
}

/// The floor of a rotation: a tight client sets `spec.rotation` and does the
/// controller's writes for the new version itself, at once (the floor set,
/// before the controller starts).
async fn rotation_floor(client: &Client, args: &Args, n: usize) -> Result<Vec<Duration>> {
    eprintln!(
        "bench: N={n}: floor of {} rotations at {}/s",
        args.rotations.min(n),
        args.rotation_rate
    );
    let (pre, namespaces) = (prefix("floor", n), args.namespaces);
    time_rotations(client, args, &pre, &format!("floor-{n}"), n, |i| {
        let (client, pre) = (client.clone(), pre.clone());
        async move { workload::floor_rotation(&client, &pre, namespaces, i, "2").await }
    })
    .await
}

async fn rotation(
    client: &Client,
    args: &Args,
    n: usize,
    floor: Option<Vec<Duration>>,
    report: &mut Report,
) -> Result<()> {
    eprintln!(
        "bench: N={n}: {} rotations at {}/s",
        args.rotations.min(n),
        args.rotation_rate
    );
    let (pre, namespaces) = (prefix("ours", n), args.namespaces);
    let ours = time_rotations(client, args, &pre, &format!("ours-{n}"), n, |i| {
        let (client, pre) = (client.clone(), pre.clone());
        async move {
            let (ns, name) = place(&pre, namespaces, i);
            Api::<RandomSecret>::namespaced(client, &ns)
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"rotation": "2"}})),
                )
                .await?;
            Ok(())
        }
    })
    .await?;
    report.rotation(
        args.rotations.min(n),
        args.rotation_rate,
        &ours,
        floor.as_deref(),
    );
    Ok(())
}

/// What a restart with `n` objects existing took and held.
pub struct Restart {
    pub ready: Duration,
    pub all: Duration,
    pub requests: apimetrics::Counts,
    /// VmHWM when `/readyz` first answered: the peak of the initial lists.
    pub peak_ready_kib: u64,
    /// The largest RSS sampled (every 100 ms) until then: a check on VmHWM.
    pub sampled_ready_kib: u64,
    pub handles_ready: Handles,
    /// VmHWM once every object was reconciled and the controller settled.
    pub peak_kib: u64,
    /// Then over the steady window.
    pub steady: Steady,
}

/// Starts a controller with `n` RandomSecrets existing (none running) and
/// waits until it is ready and has reconciled each once, sampling its
/// memory from the start; then its steady state.
async fn restart(
    client: &Client,
    args: &Args,
    log: &str,
    n: usize,
) -> Result<(ControllerProcess, Restart)> {
    let before = apimetrics::scrape(client).await?;
    let start = Instant::now();
    let conc = args.concurrency.to_string();
    let mut p = ControllerProcess::spawn(
        log,
        args.port,
        &["--log-level=info", "--concurrency", &conc],
    )?;
    let pid = p.child.id();
    let sampler = Sampler::start(pid, None, Duration::from_millis(100));
    p.wait_ready(Duration::from_secs(300))?;
    let ready = start.elapsed();
    let peak_ready_kib = procstat::memory(pid)?.peak_kib;
    let sampled_ready_kib = sampler.stop().max_rss_kib();
    let handles_ready = procstat::handles(pid, args.api_port)?;
    loop {
        let ok = p
            .metric("randomsecret_reconciles_total{result=\"ok\"}")?
            .unwrap_or(0.0);
        if ok >= n as f64 {
            break;
        }
        ensure!(
            start.elapsed() < LIMIT,
            "startup: only {ok} of {n} reconciled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let all = start.elapsed();
    settle(&p).await?;
    let requests = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    let peak_kib = procstat::memory(pid)?.peak_kib;
    let steady = procstat::steady(pid, args.api_port, Duration::from_secs(args.steady_seconds))?;
    Ok((
        p,
        Restart {
            ready,
            all,
            requests,
            peak_ready_kib,
            sampled_ready_kib,
            handles_ready,
            peak_kib,
            steady,
        },
    ))
}

/// Restart with everything converged: time to ready, and to every object
/// reconciled once, the requests that took (no writes expected) and the
/// peak RSS of the initial lists.
async fn startup(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: ControllerProcess,
    report: &mut Report,
) -> Result<ControllerProcess> {
    eprintln!("bench: N={n}: restart with {n} existing RandomSecrets");
    ctl.terminate()?;
    let (p, r) = restart(client, args, "bench", n).await?;
    report.startup(n, &r);
    Ok(p)
}

/// One point of the scale phase.
pub struct ScalePoint {
    pub n: usize,
    /// Creating the step's RandomSecrets until all were Ready (zero for the first point).
    pub took: Duration,
    pub steady: Steady,
}

/// The scale phase, last: with the `base` set of the largest size left in
/// place (RandomSecrets, Secrets and ReplicaSets), a new controller; then
/// more RandomSecrets (no ReplicaSets) in 4 equal steps up to `target`,
/// with the steady RSS after each; then a restart with all of them.
async fn scale(
    client: &Client,
    args: &Args,
    base: usize,
    target: usize,
    report: &mut Report,
) -> Result<()> {
    const STEPS: usize = 4;
    let pre = prefix("ours", base);
    eprintln!("bench: scale: a controller with {base} existing");
    let (mut ctl, first) = restart(client, args, "bench-scale", base).await?;
    let mut points = vec![ScalePoint {
        n: base,
        took: Duration::ZERO,
        steady: first.steady,
    }];
    // Per step, from after its readiness watch's first list to the settled end.
    let mut requests = apimetrics::Counts::new();
    let mut from = base;
    for k in 1..=STEPS {
        let upto = base + (target - base) * k / STEPS;
        eprintln!("bench: scale: {from} -> {upto} RandomSecrets");
        let run = format!("scale-{upto}");
        let watch = ReadyWatch::start(
            Api::<RandomSecret>::all(client.clone()),
            &format!("{RUN_LABEL}={run}"),
            upto - from,
            workload::randomsecret_ready,
        )
        .await?;
        let before = apimetrics::scrape(client).await?;
        let start = Instant::now();
        create_randomsecrets(client, args, &pre, &run, from..upto).await?;
        let took = watch.wait(LIMIT).await? - start;
        settle(&ctl).await?;
        apimetrics::add(
            &mut requests,
            &apimetrics::delta(&before, &apimetrics::scrape(client).await?),
        );
        ensure!(
            ctl.child.try_wait()?.is_none(),
            "the controller exited at {upto} RandomSecrets"
        );
        // The intermediate points briefly; the last over the full window.
        let window = if k == STEPS {
            args.steady_seconds
        } else {
            args.steady_seconds.min(5)
        };
        let steady = procstat::steady(ctl.child.id(), args.api_port, Duration::from_secs(window))?;
        points.push(ScalePoint {
            n: upto,
            took,
            steady,
        });
        from = upto;
    }
    apimetrics::subtract(
        &mut requests,
        "POST",
        "randomsecrets",
        (target - base) as f64,
    );
    eprintln!("bench: scale: restart with {target} existing");
    ctl.terminate()?;
    let (p, last) = restart(client, args, "bench-scale", target).await?;
    p.terminate()?;
    report.scale(&first, &points, &requests, &last);
    Ok(())
}

/// Failover: SIGKILL, then SIGTERM, of the leader with a warm standby: time
/// until the standby leads, and until a RandomSecret created at the moment
/// of the kill is Ready.
async fn failover(
    client: &Client,
    args: &Args,
    n: usize,
    single: ControllerProcess,
    report: &mut Report,
) -> Result<()> {
    single.terminate()?;
    let elect = [
        "--leader-elect",
        "--leader-election-namespace",
        "default",
        "--leader-election-id",
        "bench",
    ];
    let leader = start_controller(args, "bench-a", &elect)?;
    wait_leader(&leader, Duration::from_secs(60)).await?;
    let mut port = args.port + 2;
    let mut leader = Some(leader);
    for (k, signal) in ["SIGKILL", "SIGTERM"].iter().enumerate() {
        let standby = {
            let a = Args {
                port,
                ..args.clone()
            };
            start_controller(&a, &format!("bench-{}", ["b", "c"][k]), &elect)?
        };
        port += 2;
        ensure!(
            !standby.is_leader(),
            "the standby leads before the failover"
        );
        let old = leader.take().expect("a leader");
        let ns = format!("{}-0", prefix("ours", n));
        let name = format!("failover-{k}");
        let watch = ReadyWatch::start(
            Api::<RandomSecret>::namespaced(client.clone(), &ns),
            &format!("{RUN_LABEL}=failover-{k}"),
            1,
            workload::randomsecret_ready,
        )
        .await?;
        let start = Instant::now();
        if *signal == "SIGKILL" {
            drop(old); // kills it
        } else {
            std::thread::spawn(move || old.terminate());
        }
        Api::<RandomSecret>::namespaced(client.clone(), &ns)
            .create(
                &PostParams::default(),
                &workload::random_secret(&name, &format!("failover-{k}"), "1")?,
            )
            .await?;
        wait_leader(&standby, Duration::from_secs(120)).await?;
        let leads = start.elapsed();
        let ready = watch.wait(Duration::from_secs(300)).await? - start;
        report.failover(signal, leads, ready);
        leader = Some(standby);
    }
    if let Some(l) = leader {
        l.terminate()?;
    }
    Ok(())
}

async fn wait_leader(p: &ControllerProcess, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    while !p.is_leader() {
        ensure!(start.elapsed() < timeout, "no replica took the lease");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
