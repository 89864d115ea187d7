//! The controllers the core phases run: started, settled, leading.

use crate::args::Args;
use anyhow::{Result, ensure};
use randomsecret_e2e::ControllerProcess;
use std::time::{Duration, Instant};

/// A controller of the benchmark's own on `args.port` (metrics; health on the
/// next port), with its concurrency, `extra` flags, and its log under `log`
/// (with each reconcile's phases: `slowest` reads them); ready.
pub fn start(args: &Args, log: &str, extra: &[&str]) -> Result<ControllerProcess> {
    let conc = args.concurrency.to_string();
    let mut all = vec![
        "--log-level=info,randomsecret::phase=debug",
        "--concurrency",
        &conc,
        WITHOUT_PER_OBJECT,
    ];
    all.extend_from_slice(extra);
    let mut p = ControllerProcess::spawn(log, args.port, &all)?;
    p.wait_ready(Duration::from_secs(300))?;
    Ok(p)
}

/// The benchmark reads `/metrics` up to every 20 ms to time things; with the
/// per-object series a scrape of 10,000 RandomSecrets is 7 MB and some
/// 50 ms of CPU, which would be the benchmark measuring itself. Its
/// controllers run without them, but in the phase that measures their cost
/// at a scrape every 2 s (`phases::object_metrics`).
pub const WITHOUT_PER_OBJECT: &str = "--per-object-metrics=false";

/// Reconciles so far (every result), from the controller's metrics.
pub fn reconciles(p: &ControllerProcess) -> Result<f64> {
    Ok(p.metrics()?
        .lines()
        .filter(|l| l.starts_with("randomsecret_reconciles_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Waits until the controller has nothing in flight and its reconcile count
/// stays put for two seconds.
pub async fn settle(p: &ControllerProcess) -> Result<()> {
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

/// Waits until `p` holds the lease.
pub async fn wait_leader(p: &ControllerProcess, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    while !p.is_leader() {
        ensure!(start.elapsed() < timeout, "no replica took the lease");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
