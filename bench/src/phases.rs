//! The core phases, at each size: the floor, convergence, and at the largest
//! memory, rotation, startup and failover; and the scale phase, last. (The
//! webhook's, the push's and the peer's phases have modules of their own.)

use crate::apimetrics;
use crate::args::Args;
use crate::controller::{self, reconciles, settle, wait_leader};
use crate::figures::{Converged, Floor, Restart, ScalePoint};
use crate::fresh;
use crate::phasetimes;
use crate::procstat::{self, CpuWindow, Sampler};
use crate::report::Report;
use crate::rotations::{self, Changed, Stream};
use crate::slowest;
use crate::workload::{self, LIMIT, RUN_LABEL, ReadyWatch, place, run_concurrently};
use anyhow::{Context, Result, ensure};
use kube::api::PostParams;
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret::version::Version;
use randomsecret_e2e::ControllerProcess;
use std::sync::Arc;
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
/// With `watches`, the controller's convergence watches are open meanwhile
/// (a set of its own, `floorw`).
///
/// Timed as the controller's run is: from the first create until the
/// benchmark's own watch has seen every object Ready, so that both pay for
/// that watch and its delivery alike (`writes`: until the last write
/// returned, as the floor was timed before 2026-12-02).
pub async fn floor(client: &Client, args: &Args, n: usize, watches: bool) -> Result<Floor> {
    let what = if watches { "floorw" } else { "floor" };
    floor_of(client, args, what, n, &workload::spec("1"), watches).await
}

/// The floor of set `what` (namespaces `bench-<what>-<n>-*`) of `n`
/// RandomSecrets of `spec`, as [`floor`] describes it.
pub async fn floor_of(
    client: &Client,
    args: &Args,
    what: &str,
    n: usize,
    spec: &serde_json::Value,
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
        workload::floor_object(client, &pre, args.namespaces, &run, spec, None, i)
    })
    .await?;
    let writes = start.elapsed();
    let (took, done) = ready.wait_since(start, LIMIT).await.context("the floor")?;
    let cpu = cpu.stop()?;
    for w in watching.into_iter().flatten() {
        w.abort();
    }
    // Gone before the controller starts, or it would take them over.
    workload::delete_namespaces(client, &pre, args.namespaces).await?;
    Ok(Floor {
        took,
        writes,
        done,
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

/// Rotation latency under a steady rate of spec.rotation changes, ours
/// and the floor's in alternating blocks of `--rotation-block`
/// ([`rotations::interleaved`]), and the controller's requests per
/// rotation; then as many edits that rotate nothing (a static value),
/// whose new versions carry the values over with one GET more.
///
/// With the floor, `ctl` gives way to a controller running as the default
/// shard, and the floor's set is made beside ours under a shard label of
/// its own ([`rotations::FLOOR_SHARD`]) and removed at the end. Returns the
/// controller to go on with.
pub async fn rotation(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: ControllerProcess,
    report: &mut Report,
) -> Result<ControllerProcess> {
    let floor_pre = prefix("floor", n);
    let ctl = if args.no_floor {
        ctl
    } else {
        eprintln!("bench: N={n}: the controller as the default shard, and the floor's set of {n}");
        ctl.terminate()?;
        let ctl = controller::start(args, "bench", &[&rotations::default_shard()])?;
        settle(&ctl).await?;
        floor_rotation_set(client, args, &floor_pre, n).await?;
        ctl
    };
    let ours = timed_rotations(client, args, n, &ctl, report).await?;
    static_edits(client, args, n, &ours, report).await?;
    if !args.no_floor {
        // Gone before an unsharded controller starts, or it would take them over.
        workload::delete_namespaces(client, &floor_pre, args.namespaces).await?;
    }
    Ok(ctl)
}

/// The timed rotations, ours and (with the floor) the floor's, in
/// alternating blocks, reported; returns ours, for the static edits to
/// compare their requests with.
async fn timed_rotations(
    client: &Client,
    args: &Args,
    n: usize,
    ctl: &ControllerProcess,
    report: &mut Report,
) -> Result<rotations::Side> {
    let count = args.rotations.min(n);
    let (floor_pre, ours_pre) = (prefix("floor", n), prefix("ours", n));
    eprintln!(
        "bench: N={n}: {count} rotations at {}/s{}",
        args.rotation_rate,
        if args.no_floor {
            String::new()
        } else {
            format!(
                ", in blocks of {} alternating with the floor's",
                args.rotation_block
            )
        }
    );
    let namespaces = args.namespaces;
    let rotated = || Changed {
        spec: workload::spec("2"),
        offset: 0,
    };
    let mut streams = Vec::with_capacity(2);
    if !args.no_floor {
        let pre = floor_pre.clone();
        let send = rotations::sender(client, move |client, i| {
            let pre = pre.clone();
            async move { workload::floor_rotation(&client, &pre, namespaces, i, "2").await }
        });
        let run = format!("floor-{n}");
        streams.push(Stream::open(client, args, &floor_pre, &run, n, rotated(), send).await?);
    }
    let pre = ours_pre.clone();
    let send = rotations::sender(client, move |client, i| {
        let (ns, name) = place(&pre, namespaces, i);
        async move {
            workload::rotate(&client, &ns, &name, "2").await?;
            Ok(())
        }
    });
    let run = format!("ours-{n}");
    streams.push(Stream::open(client, args, &ours_pre, &run, n, rotated(), send).await?);
    let phases_before = phasetimes::scrape(ctl)?;
    let mut sides =
        rotations::interleaved(client, &streams, args.rotation_block.into(), || settle(ctl))
            .await?;
    let phase_times = phasetimes::delta(&phases_before, &phasetimes::scrape(ctl)?);
    drop(streams);
    let ours = sides.pop().context("our side of the rotations")?;
    let floor = sides.pop();
    report.phase_times(&format!("{count} rotations"), "rotation", &phase_times);
    report.rotation(
        count,
        args.rotation_rate,
        &workload::times(&ours.done),
        floor.as_ref().map(|f| workload::times(&f.done)).as_deref(),
    );
    report.rotation_timeline(
        floor
            .as_ref()
            .map(|f| workload::timeline(&f.done))
            .as_deref(),
        &workload::timeline(&ours.done),
    );
    report.api_times(count, floor.as_ref().map(|f| &f.apiserver), &ours.apiserver);
    report.warm_up(
        floor
            .as_ref()
            .map(|f| workload::in_order_sent(&f.warm))
            .as_deref(),
        &workload::in_order_sent(&ours.warm),
    );
    report.slowest_rotations(&slowest::slowest(&ours.done, &ctl.log, SLOWEST)?);
    Ok(ours)
}

/// As many edits that rotate nothing (a static value) as there were
/// rotations, on other objects of our set: their new versions carry the
/// values over with one GET more; their requests per version against the
/// rotations' (`rotated`).
async fn static_edits(
    client: &Client,
    args: &Args,
    n: usize,
    rotated: &rotations::Side,
    report: &mut Report,
) -> Result<()> {
    eprintln!(
        "bench: N={n}: {} static edits at {}/s",
        args.rotations.min(n),
        args.rotation_rate
    );
    let (ours_pre, run, namespaces) = (prefix("ours", n), format!("ours-{n}"), args.namespaces);
    let mut edited = workload::spec("1");
    edited["static"]["username"] = "app2".into();
    let changed = Changed {
        spec: edited,
        offset: 1,
    };
    let pre = ours_pre.clone();
    let send = rotations::sender(client, move |client, i| {
        let (ns, name) = place(&pre, namespaces, i);
        async move { workload::edit_static(&client, &ns, &name, "app2").await }
    });
    let edits = Stream::open(client, args, &ours_pre, &run, n, changed, send).await?;
    let before = apimetrics::scrape(client).await?;
    let (warm, done) = edits.alone().await?;
    let edit_requests = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
    // Both phases made as many versions (the same warm-up each): the
    // requests are of all of them.
    ensure!(warm.len() == rotated.warm.len() && done.len() == rotated.done.len());
    report.requests_per_change(warm.len() + done.len(), &rotated.requests, &edit_requests);
    Ok(())
}

/// The floor's set for the rotations: `n` objects made as the floor makes
/// them, under the shard label [`rotations::FLOOR_SHARD`] that the running
/// controller leaves out. Not timed.
async fn floor_rotation_set(client: &Client, args: &Args, pre: &str, n: usize) -> Result<()> {
    workload::create_namespaces(client, pre, args.namespaces).await?;
    let (run, spec) = (format!("floor-{n}"), workload::spec("1"));
    run_concurrently(n, args.concurrency, |i| {
        workload::floor_object(
            client,
            pre,
            args.namespaces,
            &run,
            &spec,
            Some(rotations::FLOOR_SHARD),
            i,
        )
    })
    .await
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
