//! `make bench`: convergence against an apiserver floor, API requests per
//! version, memory, CPU, connections and threads at 10,000 objects, rotation
//! latency, startup (with the peak RSS of the initial lists), failover, a
//! peer controller, the kinds of keys (a key pair and a template against
//! their floor; RSA keys under a rotation workload), the webhook's latency,
//! the push to OpenBao and, last, memory as the set grows to 50,000, all
//! against the local control plane in one run. Prints a table and writes
//! `target/bench/results.json`.
//!
//! Run by `e2e/bench.sh` (which starts the control plane and builds the
//! release binary and the peer); see docs/src/benchmarks.md.
//!
//! This file is the run's order and nothing else. Below it: the phases
//! (`phases` for the core ones, `kinds` on top of their floor and
//! convergence, `webhook`, `push`, `peer`), which hand what
//! they measured (`figures`) to the `report`; under those, the measuring
//! and the objects (`apimetrics`, `phasetimes`, `procstat`, `etcd`, `fresh`,
//! `rotations`, `stats`, `workload`, `controller`, `charts`) and the command
//! line (`args`). `pool` reads earlier runs' results.json (`--pool`). No
//! module imports one above it.

mod apimetrics;
mod apitimes;
mod args;
mod cachechecks;
mod charts;
mod controller;
mod etcd;
mod figures;
mod fresh;
mod kinds;
mod peer;
mod phases;
mod phasetimes;
mod pool;
mod procstat;
mod push;
mod report;
mod rotations;
mod shards;
mod slowest;
mod stats;
mod streams;
mod webhook;
mod workload;

use anyhow::{Context, Result, bail};
use args::Args;
use clap::Parser;
use kube::Client;
use report::Report;

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = Args::parse();
    if !args.pool.is_empty() {
        return pool::run(&args.pool, args.pool_as_one);
    }
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
    args.resolve_rotations(largest)?;
    let mut report = Report::new(&args, big);
    report.controller();
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
        webhook(&client, &args, &mut report).await;
        return report.finish(&args.out, &args.charts);
    }
    if args.only_shards {
        eprintln!("bench: shards only");
        shards(&client, &args, &mut report).await;
        return report.finish(&args.out, &args.charts);
    }
    if args.only_kinds {
        eprintln!("bench: kinds only");
        kinds::phase(&client, &args, None, &mut report).await;
        return report.finish(&args.out, &args.charts);
    }
    for &n in &args.sizes {
        // Interleaved pairs: a ratio whose floor ran beside it. All but the
        // last are measured and removed; the last goes on below.
        let pairs = usize::from(if n == largest {
            args.largest_pairs
        } else {
            args.pairs
        });
        let mut interleaved = Vec::with_capacity(pairs);
        for p in 1..pairs {
            // Every other pair runs ours first, so that neither side always
            // runs on the apiserver the other has just worked (the last
            // pair, whose controller goes on below, runs the floor first).
            let ours_first = p % 2 == 0 && !args.no_floor;
            eprintln!(
                "bench: N={n}: pair {p} of {pairs}{}",
                if ours_first { " (ours first)" } else { "" }
            );
            let mut floor = None;
            if !ours_first && !args.no_floor {
                floor = Some(phases::floor(&client, &args, n, false).await?);
            }
            let (ours, ctl) =
                phases::converge(&client, &args, n, || controller::start(&args, "bench", &[]))
                    .await?;
            ctl.terminate()?;
            workload::delete_namespaces(&client, &phases::prefix("ours", n), args.namespaces)
                .await?;
            if ours_first {
                floor = Some(phases::floor(&client, &args, n, false).await?);
            }
            interleaved.push(figures::Pair {
                floor: floor.map(|f| (f.took, f.cpu)),
                ours: (ours.took, ours.cpu),
                ours_first,
            });
        }
        eprintln!("bench: N={n}: pair {pairs} of {pairs}: floor");
        let floor = if args.no_floor {
            None
        } else {
            Some(phases::floor(&client, &args, n, false).await?)
        };
        let watched = if args.floor_watches && n == largest {
            eprintln!("bench: N={n}: floor with the controller's watches open");
            Some(phases::floor(&client, &args, n, true).await?.took)
        } else {
            None
        };
        eprintln!(
            "bench: N={n}: floor {:?}; randomsecret",
            floor.as_ref().map(|f| f.took)
        );
        let (ours, mut ctl) =
            phases::converge(&client, &args, n, || controller::start(&args, "bench", &[])).await?;
        report.convergence(n, floor.as_ref(), &ours);
        interleaved.push(figures::Pair {
            floor: floor.as_ref().map(|f| (f.took, f.cpu.clone())),
            ours: (ours.took, ours.cpu.clone()),
            ours_first: false,
        });
        report.interleaved(n, &interleaved);
        report.phase_times(
            &format!("convergence of {n}"),
            &format!("convergence_{n}"),
            &ours.phase_times,
        );
        if let Some(watched) = watched {
            report.floor_watched(n, watched, ours.took);
        }
        if n == largest {
            phases::memory(&client, &args, n, &mut ctl, &mut report).await?;
            let ctl = phases::rotation(&client, &args, n, ctl, &mut report).await?;
            let ctl2 = phases::startup(&client, &args, n, ctl, &mut report).await?;
            let ctl3 = phases::object_metrics(&client, &args, n, ctl2, &mut report).await?;
            phases::failover(&client, &args, n, ctl3, &mut report).await?;
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
        workload::delete_namespaces(&client, &phases::prefix("ours", n), args.namespaces).await?;
    }
    if let Err(e) = later_phases(&client, &args, largest, big, &mut report).await {
        // The results so far are still written.
        report.note(&format!("the later phases stopped: {e:#}"));
    }
    match cachechecks::over_run(&client).await {
        Ok(run) => report.cache_checks(&run),
        Err(e) => report.note(&format!(
            "reading the watch cache's consistency checks: {e:#}"
        )),
    }
    report.finish(&args.out, &args.charts)
}

/// The phases after convergence: kinds, webhook, push, shards, and the
/// scale phase growing the `largest` set to `big`. Each but the kinds
/// phase (whose floor and pair do so themselves) starts, as each
/// convergence run does, on a control plane restarted over a compacted
/// etcd (`fresh`), not on the heap and history the phases before it left:
/// on 2026-12-06 the scale phase's steps of 10,000 took 8 minutes each on
/// an apiserver grown to 6.5 GB, about a minute on 2026-12-02. A phase's
/// failure is a note in the report; a failed restart (which leaves no
/// control plane for the phases after it) or the scale phase's ends them
/// with an error, which the caller notes before it writes the results.
async fn later_phases(
    client: &Client,
    args: &Args,
    largest: usize,
    big: Option<usize>,
    report: &mut Report,
) -> Result<()> {
    if !args.no_kinds {
        eprintln!("bench: kinds");
        // The largest set is still there when the scale phase is to grow it.
        let kept = big.map(|_| kinds::PlainSet {
            prefix: phases::prefix("ours", largest),
            run: format!("ours-{largest}"),
        });
        kinds::phase(client, args, kept, report).await;
    }
    if !args.no_webhook {
        eprintln!("bench: webhook");
        fresh::start(client, args, "webhook").await?;
        webhook(client, args, report).await;
    }
    if !args.no_push {
        eprintln!("bench: push");
        fresh::start(client, args, "push").await?;
        let result = if std::env::var_os("BAO_DIR").is_none() {
            Err(anyhow::anyhow!("BAO_DIR is not set (e2e/build-openbao.sh)"))
        } else {
            push::phase(client, args, args.pushes, args.push_rate, report).await
        };
        if let Err(e) = result {
            report.note(&format!("push phase failed: {e:#}"));
        }
    }
    if !args.no_shards {
        eprintln!("bench: shards");
        fresh::start(client, args, "shards").await?;
        shards(client, args, report).await;
    }
    if let Some(target) = big {
        fresh::start(client, args, "scale").await?;
        phases::scale(client, args, largest, target, report).await?;
    }
    Ok(())
}

/// The shards phase; a failure is a note in the report, not the run's end.
async fn shards(client: &Client, args: &Args, report: &mut Report) {
    if let Err(e) = shards::phase(client, args, report).await {
        report.note(&format!("shards phase failed: {e:#}"));
    }
}

/// The webhook phase; a failure is a note in the report, not the run's end.
async fn webhook(client: &Client, args: &Args, report: &mut Report) {
    if let Err(e) = webhook::phase(
        client,
        args,
        args.webhook_creates,
        args.webhook_rate,
        report,
    )
    .await
    {
        report.note(&format!("webhook phase failed: {e:#}"));
    }
}
