//! The core phases, at each size: the floor, convergence, and at the largest
//! memory, rotation, startup and failover; and the scale phase, last. (The
//! webhook's, the push's and the peer's phases have modules of their own.)

use crate::apimetrics;
use crate::apitimes;
use crate::args::Args;
use crate::controller::{self, reconciles, settle, wait_leader};
use crate::figures::{Converged, Floor, Restart, Rotated, ScalePoint};
use crate::fresh;
use crate::phasetimes;
use crate::procstat::{self, CpuWindow, Sampler};
use crate::report::Report;
use crate::slowest;
use crate::workload::{self, LIMIT, RUN_LABEL, ReadyWatch, place, run_concurrently};
use anyhow::{Context, Result, ensure};
use kube::api::PostParams;
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret::version::Version;
use randomsecret_e2e::ControllerProcess;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The slowest rotations the report takes apart one by one.
const SLOWEST: usize = 5;

/// The names of set `what` at size `n` (namespaces `PREFIX-0`, ...).
pub fn prefix(what: &str, n: usize) -> String {
    format!("bench-{what}-{n}")
}

/// Creates RandomSecrets number `range` of set `pre` (labelled `run`) of
/// `spec`, with the benchmark's concurrency.
pub async fn create_randomsecrets(
    client: &Client,
    args: &Args,
    pre: &str,
    run: &str,
    spec: &serde_json::Value,
    range: std::ops::Range<usize>,
) -> Result<()> {
    run_concurrently(range.len(), args.concurrency, |j| {
        let (ns, name) = place(pre, args.namespaces, range.start + j);
        let run = run.to_string();
        async move {
            Api::<RandomSecret>::namespaced(client.clone(), &ns)
                .create(
                    &PostParams::default(),
                    &workload::random_secret_with(&name, &run, spec)?,
                )
                .await?;
            Ok(())
        }
    })
    .await
}

/// Creates a ReplicaSet (0 replicas) `app-<name>` reading the version of
/// each RandomSecret number `range` of set `pre`, all of spec "1" (the
/// name computed offline, as a GitOps pipeline does).
pub async fn create_replicasets(
    client: &Client,
    args: &Args,
    pre: &str,
    run: &str,
    range: std::ops::Range<usize>,
) -> Result<()> {
    let spec: randomsecret::api::RandomSecretSpec = serde_json::from_value(workload::spec("1"))?;
    let spec = &spec;
    run_concurrently(range.len(), args.concurrency, |j| {
        let (ns, name) = place(pre, args.namespaces, range.start + j);
        async move {
            let secret = Version::of(spec, &name)?.secret_name;
            Api::namespaced(client.clone(), &ns)
                .create(
                    &PostParams::default(),
                    &workload::replica_set(&format!("app-{name}"), run, &secret)?,
                )
                .await?;
            Ok(())
        }
    })
    .await
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
pub async fn floor(
    client: &Client,
    args: &Args,
    n: usize,
    rotations: bool,
    watches: bool,
) -> Result<Floor> {
    let what = if watches { "floorw" } else { "floor" };
    floor_of(
        client,
        args,
        what,
        n,
        &workload::spec("1"),
        rotations,
        watches,
    )
    .await
}

/// The floor of set `what` (namespaces `bench-<what>-<n>-*`) of `n`
/// RandomSecrets of `spec`, as [`floor`] describes it; the rotation floor
/// (`rotations`) is for the core set only.
pub async fn floor_of(
    client: &Client,
    args: &Args,
    what: &str,
    n: usize,
    spec: &serde_json::Value,
    rotations: bool,
    watches: bool,
) -> Result<Floor> {
    fresh::start(client, args, what).await?;
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
    let cpu = CpuWindow::start(&[])?;
    let start = Instant::now();
    run_concurrently(n, args.concurrency, |i| {
        workload::floor_object(client, &pre, args.namespaces, &run, spec, i)
    })
    .await?;
    let writes = start.elapsed();
    let (took, done) = ready.wait_since(start, LIMIT).await.context("the floor")?;
    let cpu = cpu.stop()?;
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
        cpu,
    })
}

/// A controller started by `start` converging a new set of `n`
/// RandomSecrets: the time until all are Ready, the requests, reconciles,
/// memory and handles; and the controller, to stop or to go on with.
pub async fn converge(
    client: &Client,
    args: &Args,
    n: usize,
    start: impl FnOnce() -> Result<ControllerProcess>,
) -> Result<(Converged, ControllerProcess)> {
    converge_of(client, args, "ours", n, &workload::spec("1"), start).await
}

/// A controller started by `start` converging set `what` (namespaces
/// `bench-<what>-<n>-*`, run `<what>-<n>`) of `n` new RandomSecrets of
/// `spec`, as [`converge`] measures it. The controller starts after the
/// control plane's restart (`fresh`), as the floor's writes do: it does
/// not go through the restart itself.
pub async fn converge_of(
    client: &Client,
    args: &Args,
    what: &str,
    n: usize,
    spec: &serde_json::Value,
    start_controller: impl FnOnce() -> Result<ControllerProcess>,
) -> Result<(Converged, ControllerProcess)> {
    fresh::start(client, args, what).await?;
    let process = start_controller()?;
    let ctl = &process;
    let pre = prefix(what, n);
    workload::create_namespaces(client, &pre, args.namespaces).await?;
    let run = format!("{what}-{n}");
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
    let phases_before = phasetimes::scrape(ctl)?;
    let cpu = CpuWindow::start(&[ctl.child.id()])?;
    let start = Instant::now();
    create_randomsecrets(client, args, &pre, &run, spec, 0..n).await?;
    let (took, ready) = watch
        .wait_since(start, LIMIT)
        .await
        .context("randomsecret")?;
    let cpu = cpu.stop()?;
    let phase_times = phasetimes::delta(&phases_before, &phasetimes::scrape(ctl)?);
    settle(ctl).await?;
    let mut requests = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    // The benchmark's own requests.
    apimetrics::subtract(&mut requests, "POST", "randomsecrets", n as f64);
    let during = sampler.stop();
    let mem = procstat::memory(ctl.child.id())?;
    let converged = Converged {
        took,
        ready,
        requests,
        reconciles: reconciles(ctl)? - reconciles_before,
        rss_kib: mem.rss_kib,
        peak_kib: mem.peak_kib,
        handles: procstat::handles(ctl.child.id(), args.api_port)?,
        handles_max: during.max,
        cpu,
        phase_times,
    };
    Ok((converged, process))
}

/// RSS with the n/n/n set (RandomSecrets, Secrets, ReplicaSets), idle CPU,
/// and RSS again with the unrelated bulk Secrets.
pub async fn memory(
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

/// Which objects a timed phase changes, and the spec they change to (for
/// the expected names).
struct Changed {
    spec: serde_json::Value,
    /// The first object changed: the rotation phase starts at 0, the edit
    /// phase at 1, so no object is changed twice.
    offset: usize,
}

/// Changes sent before a timed window, to objects no timed change touches
/// (between them: every (n / count)-th object is timed). The first writes
/// after a pause wait for new connections: the controller's pool closes
/// connections idle for 90 s, and the memory phase leaves it idle longer,
/// while the floor's client has just been busy. Our first two or three of
/// 1,000 rotations were our slowest in two runs in a row (133, 89 and 46 ms
/// against the floor's first, 71 ms; 2026-12-06): a cost of the pause, not of
/// the rate the window measures. They are timed and reported apart.
const WARM_UP: usize = 5;

/// What [`time_rotations`] saw: the warm-up changes and the timed ones.
struct Timed {
    warm: Vec<workload::Done>,
    done: Vec<workload::Done>,
}

/// Rotations seen done: `rotations` changes at `rotation_rate` per
/// second, spread over set `pre` of `n` objects (labelled `run`), each sent by
/// `send(i)` and timed from then until a watch shows `status.secretName` at
/// the new version's name (computed offline) and Ready; first [`WARM_UP`]
/// changes of the same kind, when the set has room between the timed ones.
async fn time_rotations<F, Fut>(
    client: &Client,
    args: &Args,
    pre: &str,
    run: &str,
    n: usize,
    changed: Changed,
    send: F,
) -> Result<Timed>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let count = args.rotations.min(n);
    let pending: workload::Pending = Arc::new(Mutex::new(HashMap::new()));
    let latencies: workload::Latencies = Arc::default();
    let mut watch = workload::watch_rotations(
        Api::all(client.clone()),
        &format!("{RUN_LABEL}={run}"),
        pending.clone(),
        latencies.clone(),
    );
    watch.first_list().await?;
    let spec: randomsecret::api::RandomSecretSpec = serde_json::from_value(changed.spec)?;
    let changes = Changes {
        pre,
        namespaces: args.namespaces,
        spec: &spec,
        interval: Duration::from_secs_f64(1.0 / args.rotation_rate),
        pending: &pending,
        latencies: &latencies,
        send: &send,
    };
    let (warm_up, timed) = objects(n, count, changed.offset);
    let warm = changes.send_all(warm_up).await?;
    tokio::time::sleep(changes.interval).await;
    let done = changes.send_all(timed).await?;
    Ok(Timed { warm, done })
}

/// The objects a phase starting at `offset` changes: its warm-up and its
/// `count` timed ones, every (n / count)-th. The warm-up is halfway between
/// timed ones, so that the rotation phase (offset 0) and the edit phase
/// (offset 1) never change an object twice; none when the stride is
/// under 4 and there is no room.
fn objects(n: usize, count: usize, offset: usize) -> (Vec<usize>, Vec<usize>) {
    let stride = n / count;
    let warm = if stride >= 4 {
        (0..WARM_UP)
            .map(|k| (k * stride + offset + stride / 2) % n)
            .collect()
    } else {
        Vec::new()
    };
    (
        warm,
        (0..count).map(|k| (k * stride + offset) % n).collect(),
    )
}

/// Changes sent at a fixed rate and each seen done by the pending watch.
struct Changes<'a, F> {
    pre: &'a str,
    namespaces: usize,
    spec: &'a randomsecret::api::RandomSecretSpec,
    interval: Duration,
    pending: &'a workload::Pending,
    latencies: &'a workload::Latencies,
    send: &'a F,
}

impl<F, Fut> Changes<'_, F>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    /// Sends a change to each of `objects`, one every `interval`, and waits
    /// until each is seen done (2 minutes at most).
    async fn send_all(&self, objects: Vec<usize>) -> Result<Vec<workload::Done>> {
        let start = Instant::now();
        // Each change is its own task, so that a slow one does not hold back the rate.
        let mut sends = Vec::new();
        for (k, i) in objects.into_iter().enumerate() {
            tokio::time::sleep_until((start + self.interval * k as u32).into()).await;
            let (ns, name) = place(self.pre, self.namespaces, i);
            let expected = Version::of(self.spec, &name)?.secret_name;
            self.pending.lock().expect("pending lock").insert(
                (ns.clone(), name.clone()),
                (expected, workload::Sent::now()),
            );
            let sent = (self.send)(i);
            sends.push(tokio::spawn(async move {
                sent.await?;
                anyhow::Ok(((ns, name), std::time::SystemTime::now()))
            }));
        }
        let mut answered = HashMap::new();
        for s in sends {
            let (object, at) = s.await??;
            answered.insert(object, at);
        }
        let mut done = workload::seen_all(self.pending, self.latencies).await?;
        for d in &mut done {
            d.answered = answered.get(&d.object).copied();
        }
        Ok(done)
    }
}

/// The floor of a rotation: a tight client sets `spec.rotation` and does the
/// controller's writes for the new version itself, at once (the floor set,
/// before the controller starts).
async fn rotation_floor(client: &Client, args: &Args, n: usize) -> Result<Rotated> {
    eprintln!(
        "bench: N={n}: floor of {} rotations at {}/s",
        args.rotations.min(n),
        args.rotation_rate
    );
    let (pre, namespaces) = (prefix("floor", n), args.namespaces);
    let changed = Changed {
        spec: workload::spec("2"),
        offset: 0,
    };
    let api_before = apitimes::scrape(client).await?;
    let Timed { warm, done } =
        time_rotations(client, args, &pre, &format!("floor-{n}"), n, changed, |i| {
            let (client, pre) = (client.clone(), pre.clone());
            async move { workload::floor_rotation(&client, &pre, namespaces, i, "2").await }
        })
        .await?;
    Ok(Rotated {
        warm: workload::in_order_sent(&warm),
        times: workload::times(&done),
        timeline: workload::timeline(&done),
        apiserver: apitimes::delta(&api_before, &apitimes::scrape(client).await?),
    })
}

/// Rotation latency under a steady rate of spec.rotation changes, and the
/// controller's requests per rotation; then as many edits that rotate
/// nothing (a static value), whose new versions carry the values over with
/// one GET more.
pub async fn rotation(
    client: &Client,
    args: &Args,
    n: usize,
    floor: Option<Rotated>,
    ctl: &ControllerProcess,
    report: &mut Report,
) -> Result<()> {
    eprintln!(
        "bench: N={n}: {} rotations at {}/s",
        args.rotations.min(n),
        args.rotation_rate
    );
    let (pre, namespaces) = (prefix("ours", n), args.namespaces);
    let before = apimetrics::scrape(client).await?;
    let phases_before = phasetimes::scrape(ctl)?;
    let api_before = apitimes::scrape(client).await?;
    let changed = Changed {
        spec: workload::spec("2"),
        offset: 0,
    };
    let Timed { warm, done } =
        time_rotations(client, args, &pre, &format!("ours-{n}"), n, changed, |i| {
            let (client, pre) = (client.clone(), pre.clone());
            async move {
                let (ns, name) = place(&pre, namespaces, i);
                workload::rotate(&client, &ns, &name, "2").await?;
                Ok(())
            }
        })
        .await?;
    let api_times = apitimes::delta(&api_before, &apitimes::scrape(client).await?);
    let rotations = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    let phase_times = phasetimes::delta(&phases_before, &phasetimes::scrape(ctl)?);
    report.phase_times(
        &format!("{} rotations", args.rotations.min(n)),
        "rotation",
        &phase_times,
    );
    report.rotation(
        args.rotations.min(n),
        args.rotation_rate,
        &workload::times(&done),
        floor.as_ref().map(|f| f.times.as_slice()),
    );
    report.rotation_timeline(
        floor.as_ref().map(|f| f.timeline.as_slice()),
        &workload::timeline(&done),
    );
    report.api_times(
        args.rotations.min(n),
        floor.as_ref().map(|f| &f.apiserver),
        &api_times,
    );
    report.warm_up(
        floor.as_ref().map(|f| f.warm.as_slice()),
        &workload::in_order_sent(&warm),
    );
    report.slowest_rotations(&slowest::slowest(&done, &ctl.log, SLOWEST)?);
    eprintln!(
        "bench: N={n}: {} static edits at {}/s",
        args.rotations.min(n),
        args.rotation_rate
    );
    let before = apimetrics::scrape(client).await?;
    let mut edited = workload::spec("1");
    edited["static"]["username"] = "app2".into();
    let changed = Changed {
        spec: edited,
        offset: 1,
    };
    let edited = time_rotations(client, args, &pre, &format!("ours-{n}"), n, changed, |i| {
        let (client, pre) = (client.clone(), pre.clone());
        async move {
            let (ns, name) = place(&pre, namespaces, i);
            workload::edit_static(&client, &ns, &name, "app2").await?;
            Ok(())
        }
    })
    .await?;
    let edits = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    // Both phases made as many versions (the same warm-up each): the
    // requests are of all of them.
    ensure!(edited.warm.len() == warm.len() && edited.done.len() == done.len());
    report.requests_per_change(warm.len() + done.len(), &rotations, &edits);
    Ok(())
}

/// Starts a controller with `n` RandomSecrets existing (none running) and
/// waits until it is ready and has reconciled each once, sampling its
/// memory from the start; then its steady state.
async fn restart(
    client: &Client,
    args: &Args,
    log: &str,
    n: usize,
    extra: &[&str],
) -> Result<(ControllerProcess, Restart)> {
    let floor = crate::streams::bare(client).await?;
    let before = apimetrics::scrape(client).await?;
    let start = Instant::now();
    let conc = args.concurrency.to_string();
    let mut all = vec!["--log-level=info", "--concurrency", &conc];
    // Off unless `extra` says otherwise.
    if !extra.iter().any(|f| f.starts_with("--per-object-metrics")) {
        all.push(controller::WITHOUT_PER_OBJECT);
    }
    all.extend_from_slice(extra);
    let mut p = ControllerProcess::spawn(log, args.port, &all)?;
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
            floor,
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
pub async fn startup(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: ControllerProcess,
    report: &mut Report,
) -> Result<ControllerProcess> {
    eprintln!("bench: N={n}: restart with {n} existing RandomSecrets");
    ctl.terminate()?;
    let (p, r) = restart(client, args, "bench", n, &[]).await?;
    report.startup(n, &r);
    Ok(p)
}

/// What the per-object metrics cost (issue 30): a controller with `n`
/// existing started with them off, then one with them on, each settled and
/// its steady RSS sampled while `/metrics` is scraped every 2 s (as a
/// Prometheus would, more often than its default); the size and time of a
/// scrape. Returns the last controller (with them on, the default).
pub async fn object_metrics(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: ControllerProcess,
    report: &mut Report,
) -> Result<ControllerProcess> {
    ctl.terminate()?;
    let mut seen = Vec::new();
    let mut last = None;
    for on in [false, true] {
        eprintln!(
            "bench: N={n}: per-object metrics {}",
            if on { "on" } else { "off" }
        );
        let flag = format!("--per-object-metrics={on}");
        let (p, _) = restart(client, args, "bench-object-metrics", n, &[&flag]).await?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let scraper = {
            let (stop, port) = (stop.clone(), p.metrics_port);
            std::thread::spawn(move || -> Result<(usize, Duration, usize)> {
                let (mut bytes, mut slowest, mut count) = (0, Duration::ZERO, 0);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = Instant::now();
                    let out = std::process::Command::new("curl")
                        .args(["-fsS", &format!("http://127.0.0.1:{port}/metrics")])
                        .output()?;
                    ensure!(out.status.success(), "scraping /metrics failed");
                    slowest = slowest.max(t.elapsed());
                    bytes = out.stdout.len();
                    count += 1;
                    std::thread::sleep(Duration::from_secs(2));
                }
                Ok((bytes, slowest, count))
            })
        };
        let steady = procstat::steady(
            p.child.id(),
            args.api_port,
            Duration::from_secs(args.steady_seconds),
        )?;
        let peak_kib = procstat::memory(p.child.id())?.peak_kib;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (bytes, slowest, scrapes) = scraper
            .join()
            .map_err(|_| anyhow::anyhow!("the scraper panicked"))??;
        seen.push(crate::figures::ObjectMetricsRun {
            on,
            steady,
            peak_kib,
            scrape_bytes: bytes,
            slowest_scrape: slowest,
            scrapes,
        });
        // One controller at a time: the one with them off goes first.
        if on {
            last = Some(p);
        } else {
            p.terminate()?;
        }
    }
    report.object_metrics(n, &seen);
    last.context("the controller with per-object metrics")
}

/// The scale phase, last: with the `base` set of the largest size left in
/// place (RandomSecrets, Secrets and ReplicaSets), a new controller; then
/// more RandomSecrets (no ReplicaSets) in 4 equal steps up to `target`,
/// with the steady RSS after each; then a restart with all of them.
pub async fn scale(
    client: &Client,
    args: &Args,
    base: usize,
    target: usize,
    report: &mut Report,
) -> Result<()> {
    const STEPS: usize = 4;
    let pre = prefix("ours", base);
    eprintln!("bench: scale: a controller with {base} existing");
    let (mut ctl, first) = restart(client, args, "bench-scale", base, &[]).await?;
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
        create_randomsecrets(client, args, &pre, &run, &workload::spec("1"), from..upto).await?;
        let took = watch.wait(LIMIT).await? - start;
        // Each with a ReplicaSet reading its version, as the base set has
        // (the memory phase's): N RandomSecrets, N Secrets, N ReplicaSets.
        create_replicasets(client, args, &pre, &run, from..upto).await?;
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
    for resource in ["randomsecrets", "replicasets"] {
        apimetrics::subtract(&mut requests, "POST", resource, (target - base) as f64);
    }
    eprintln!("bench: scale: restart with {target} existing");
    ctl.terminate()?;
    let (p, last) = restart(client, args, "bench-scale", target, &[]).await?;
    p.terminate()?;
    report.scale(&first, &points, &requests, &last);
    Ok(())
}

/// Failover: SIGKILL, then SIGTERM, of the leader with a warm standby: time
/// until the standby leads, and until a RandomSecret created at the moment
/// of the kill is Ready.
pub async fn failover(
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
    let leader = controller::start(args, "bench-a", &elect)?;
    wait_leader(&leader, Duration::from_secs(60)).await?;
    let mut port = args.port + 2;
    let mut leader = Some(leader);
    for (k, signal) in ["SIGKILL", "SIGTERM"].iter().enumerate() {
        let standby = {
            let a = Args {
                port,
                ..args.clone()
            };
            controller::start(&a, &format!("bench-{}", ["b", "c"][k]), &elect)?
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn no_object_is_changed_twice_by_the_rotation_and_edit_phases_and_their_warm_ups() {
        for (n, count) in [(10_000, 1_000), (2_000, 500), (1_000, 250), (100, 10)] {
            let (warm_r, rotations) = objects(n, count, 0);
            let (warm_e, edits) = objects(n, count, 1);
            assert_eq!((warm_r.len(), rotations.len()), (WARM_UP, count));
            let all: Vec<usize> = [warm_r, rotations, warm_e, edits].concat();
            let distinct: HashSet<_> = all.iter().collect();
            assert_eq!(distinct.len(), all.len(), "n={n} count={count}");
            assert!(all.iter().all(|&i| i < n));
        }
    }

    #[test]
    fn no_warm_up_without_room_between_the_timed_objects() {
        // 1,000 rotations of 2,000: every other object is timed.
        let (warm, timed) = objects(2_000, 1_000, 0);
        assert!(warm.is_empty());
        assert_eq!(timed.len(), 1_000);
    }
}
