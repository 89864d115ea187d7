//! The shards phase (issue 31): `--shards` controllers, each with
//! `--shard-selector sharding.randomsecret.io/key=shard<i>`, converge
//! `--shards-count` RandomSecrets spread evenly over the shards (each with
//! its Secret and a ReplicaSet reading it); then each shard's steady RSS,
//! their total, and one replica's over the same objects (selecting every
//! shard; started after them, so that it converges nothing).

use crate::args::Args;
use crate::controller::{WITHOUT_PER_OBJECT, settle};
use crate::phases::{create_replicasets, prefix};
use crate::procstat::{self, Steady};
use crate::report::Report;
use crate::workload::{self, LIMIT, RUN_LABEL, ReadyWatch, place, run_concurrently};
use anyhow::{Result, ensure};
use kube::api::PostParams;
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret::shard::SHARD_KEY;
use randomsecret_e2e::ControllerProcess;
use std::time::{Duration, Instant};

/// What the phase measured.
pub struct Sharded {
    pub shards: usize,
    pub n: usize,
    /// From the first create until every RandomSecret is Ready.
    pub converged: Duration,
    /// Each shard's, in order.
    pub steady: Vec<Steady>,
    /// One unsharded replica's on the same objects.
    pub single: Steady,
}

pub async fn phase(client: &Client, args: &Args, report: &mut Report) -> Result<()> {
    let (k, n) = (args.shards, args.shards_count);
    ensure!(k >= 2, "--shards {k}: at least 2");
    let pre = prefix("shards", n);
    let run = format!("shards-{n}");
    workload::create_namespaces(client, &pre, args.namespaces).await?;
    let conc = args.concurrency.to_string();
    let mut procs = Vec::with_capacity(k);
    for i in 0..k {
        let selector = format!("--shard-selector={SHARD_KEY}=shard{i}");
        let mut p = ControllerProcess::spawn(
            &format!("bench-shard{i}"),
            args.port + 30 + 2 * i as u16,
            &[
                "--log-level=info",
                "--concurrency",
                &conc,
                WITHOUT_PER_OBJECT,
                &selector,
            ],
        )?;
        p.wait_ready(Duration::from_secs(300))?;
        procs.push(p);
    }
    eprintln!("bench: shards: {k} shards converge {n} RandomSecrets");
    let watch = ReadyWatch::start(
        Api::<RandomSecret>::all(client.clone()),
        &format!("{RUN_LABEL}={run}"),
        n,
        workload::randomsecret_ready,
    )
    .await?;
    let start = Instant::now();
    let spec = workload::spec("1");
    run_concurrently(n, args.concurrency, |i| {
        let (ns, name) = place(&pre, args.namespaces, i);
        let (run, spec) = (run.clone(), &spec);
        async move {
            let mut rs = workload::random_secret_with(&name, &run, spec)?;
            rs.metadata
                .labels
                .get_or_insert_default()
                .insert(SHARD_KEY.into(), format!("shard{}", i % k));
            Api::<RandomSecret>::namespaced(client.clone(), &ns)
                .create(&PostParams::default(), &rs)
                .await?;
            Ok(())
        }
    })
    .await?;
    let converged = watch.wait(LIMIT).await? - start;
    eprintln!("bench: shards: converged in {converged:?}; {n} ReplicaSets");
    create_replicasets(client, args, &pre, &run, 0..n).await?;
    for p in &procs {
        settle(p).await?;
    }
    let window = Duration::from_secs(args.steady_seconds);
    let steady = sample_all(&procs, args.api_port, window).await?;
    for p in procs {
        p.terminate()?;
    }
    // One replica over exactly the same objects (every shard's; not the
    // other phases' sets, which may still be there).
    eprintln!("bench: shards: one replica on the same {n}");
    let every = format!("--shard-selector={SHARD_KEY}");
    let mut single = ControllerProcess::spawn(
        "bench-shards-single",
        args.port + 30,
        &[
            "--log-level=info",
            "--concurrency",
            &conc,
            WITHOUT_PER_OBJECT,
            &every,
        ],
    )?;
    single.wait_ready(Duration::from_secs(300))?;
    settle(&single).await?;
    let one = sample_all(std::slice::from_ref(&single), args.api_port, window).await?;
    single.terminate()?;
    report.shards(&Sharded {
        shards: k,
        n,
        converged,
        steady,
        single: one.into_iter().next().expect("one sample"),
    });
    workload::delete_namespaces(client, &pre, args.namespaces).await
}

/// The steady state of every process, sampled over the same window.
async fn sample_all(
    procs: &[ControllerProcess],
    api_port: u16,
    window: Duration,
) -> Result<Vec<Steady>> {
    let tasks: Vec<_> = procs
        .iter()
        .map(|p| {
            let pid = p.child.id();
            tokio::task::spawn_blocking(move || procstat::steady(pid, api_port, window))
        })
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await??);
    }
    Ok(out)
}
