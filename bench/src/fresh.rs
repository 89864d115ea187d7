//! Each convergence run (a floor, ours, the peer, the kinds' pair), and
//! each phase after them (the webhook, the push, the shards, the scale
//! phase), starts on a control plane in the same state: kwok, the
//! scheduler, the controller-manager and kube-apiserver stopped, etcd
//! compacted and defragmented (`etcd::reset`) while nothing writes, the
//! four started again, and the machine quiet before the run begins.
//!
//! Why the restart (2026-12-07, issue 33): with only etcd reset, the
//! floor alone took 69.8 to 83.5 s at 10,000 within one run, in no order
//! of time, and one pair's ratio was 1.25x. An apiserver that has served
//! the runs before carries their heap, its watch cache's history and its
//! clients' connections into the next; a started one does not, so both
//! sides of a pair meet the same apiserver. With the restart the floors
//! at 10,000 took 69.4 to 70.7 s in one run.
//!
//! kwok (the simulated node) is restarted too: one kept running did not
//! get over the apiserver's restart (its node lease's updates conflicted
//! every 10 s from then on). A new kwok takes the node over only when the
//! node's lease is free, and then lists the node's pods: with the old
//! one's lease left to run out (40 s) that LIST fell inside a timed run.
//! So the node leases are deleted once kwok has stopped.
//!
//! Needs `BENCH_CLUSTER_DIR` (the control plane's state, which e2e/bench.sh
//! sets) for the restart and `ETCD_PORT` for the reset; without them, or
//! with `--no-restarts`, only what is possible is done and said.

use crate::args::Args;
use crate::etcd;
use crate::procstat::CpuWindow;
use anyhow::{Context, Result};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One step of taking the control plane down.
#[derive(Debug, PartialEq)]
enum Down {
    Stop(&'static str),
    /// Delete the nodes' leases: needs the apiserver, and kwok stopped.
    FreeNodeLeases,
}

/// Clients first; the node leases freed once kwok, which renews them, has
/// stopped and while the apiserver still serves.
const DOWN: [Down; 5] = [
    Down::Stop("kwok"),
    Down::FreeNodeLeases,
    Down::Stop("kube-scheduler"),
    Down::Stop("kube-controller-manager"),
    Down::Stop("kube-apiserver"),
];

/// The machine counts as quiet when the run's processes used at most this
/// share of one core over a second.
const QUIET_CORES: f64 = 0.1;
/// ... twice in a row; but a run never waits longer than this for it.
const QUIET_LIMIT: Duration = Duration::from_secs(60);

/// Before a convergence run of `what`: the control plane restarted on a
/// compacted etcd (or only etcd compacted), then a quiet machine.
pub async fn start(client: &Client, args: &Args, what: &str) -> Result<()> {
    let dir = std::env::var_os("BENCH_CLUSTER_DIR").map(PathBuf::from);
    let Some(port) = etcd::port() else {
        eprintln!("bench: {what}: ETCD_PORT is not set: the control plane is not reset");
        return Ok(());
    };
    let restart = match (&dir, args.no_restarts) {
        (Some(d), false) => Some(d),
        (None, false) => {
            eprintln!("bench: {what}: BENCH_CLUSTER_DIR is not set: etcd is only compacted");
            None
        }
        (_, true) => None,
    };
    let t0 = Instant::now();
    if let Some(dir) = restart {
        for step in &DOWN {
            match step {
                Down::Stop(name) => cluster(dir, &["stop", name])?,
                Down::FreeNodeLeases => free_node_leases(client).await?,
            }
        }
    }
    let (before, after) = etcd::reset(port).context("compacting etcd between runs")?;
    if let Some(dir) = restart {
        cluster(dir, &["up"])?;
        crate::workload::apiserver_restarted();
        answering(client).await?;
    }
    let quiet = quiet().await?;
    eprintln!(
        "bench: {what}: {}etcd compacted and defragmented ({:.1} -> {:.1} MiB); quiet after {:.1} s{}",
        if restart.is_some() {
            "control plane restarted, "
        } else {
            ""
        },
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        t0.elapsed().as_secs_f64(),
        if quiet {
            ""
        } else {
            " (not quiet: gave up waiting)"
        },
    );
    Ok(())
}

/// `e2e/cluster.sh ARGS` on the benchmark's control plane (the ports,
/// BIN_DIR and the apiserver's flags are in the environment e2e/bench.sh
/// exported; never from an empty etcd).
fn cluster(dir: &Path, args: &[&str]) -> Result<()> {
    randomsecret_e2e::tools::cluster_sh(dir, args, &[("E2E_FRESH", "0")]).map(drop)
}

/// Deletes the nodes' leases (kwok's heartbeats), so that the kwok started
/// next takes its node over at once.
async fn free_node_leases(client: &Client) -> Result<()> {
    Api::<Lease>::namespaced(client.clone(), "kube-node-lease")
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .context("deleting the node leases")?;
    Ok(())
}

/// Until the benchmark's own client gets an answer: its pooled connections
/// to the apiserver that stopped are dropped on their first use.
async fn answering(client: &Client) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client.apiserver_version().await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(e).context("the restarted apiserver does not answer");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Waits until the run's processes (the control plane's start-up work: its
/// informers' lists, the bootstrap writes) have settled: whether it did.
async fn quiet() -> Result<bool> {
    let deadline = Instant::now() + QUIET_LIMIT;
    let mut calm = 0;
    while Instant::now() < deadline {
        let w = CpuWindow::start(&[])?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let used = w.stop()?.run();
        calm = if used <= QUIET_CORES { calm + 1 } else { 0 };
        if calm == 2 {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_component_but_etcd_stops_and_the_leases_are_freed_between_kwok_and_the_apiserver() {
        let stopped: Vec<&str> = DOWN
            .iter()
            .filter_map(|s| match s {
                Down::Stop(n) => Some(*n),
                Down::FreeNodeLeases => None,
            })
            .collect();
        assert_eq!(
            stopped,
            [
                "kwok",
                "kube-scheduler",
                "kube-controller-manager",
                "kube-apiserver"
            ]
        );
        let at = |step: &Down| DOWN.iter().position(|s| s == step).unwrap();
        assert!(at(&Down::Stop("kwok")) < at(&Down::FreeNodeLeases));
        assert!(at(&Down::FreeNodeLeases) < at(&Down::Stop("kube-apiserver")));
        // The node simulator's list is cluster.sh's, apart from etcd.
        let script =
            std::fs::read_to_string(randomsecret_e2e::tools::repo_root().join("e2e/cluster.sh"))
                .unwrap();
        let components = script
            .lines()
            .find_map(|l| l.strip_prefix("COMPONENTS=("))
            .unwrap();
        for name in components.trim_end_matches(')').split(' ') {
            assert!(
                name == "etcd" || stopped.contains(&name),
                "{name} is not restarted"
            );
        }
    }
}
