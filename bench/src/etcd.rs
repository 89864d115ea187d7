//! Puts etcd back in the same shape before each convergence run: its history
//! compacted to the current revision and its file defragmented, so that a run
//! does not pay for the revisions the run before it left behind (a set of
//! 10,000 created and deleted leaves some 75 MiB in etcd's file). Without this the
//! order of the runs decided part of the result: a second floor run right
//! after the first, with nothing else changed, took 10 % longer (49.0 s, then
//! 54.1 s), and the controller's run always comes after the floor's.
//!
//! Through etcd's JSON gateway on its client port (`ETCD_PORT`, which
//! e2e/bench.sh sets), with curl. `fresh` calls it, with the apiserver
//! stopped.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::process::Command;

/// etcd's client port, when the benchmark knows it.
pub fn port() -> Option<u16> {
    std::env::var("ETCD_PORT").ok()?.parse().ok()
}

fn post(port: u16, path: &str, body: &Value) -> Result<Value> {
    let out = Command::new("curl")
        .args(["-fsS", "--max-time", "120", "-X", "POST", "-d"])
        .arg(body.to_string())
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .context("running curl (etcd's JSON gateway)")?;
    ensure!(
        out.status.success(),
        "etcd {path}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    serde_json::from_slice(&out.stdout).with_context(|| format!("etcd {path}: not JSON"))
}

/// Compacts etcd's history to its current revision and defragments it.
/// Returns the database size before and after, in bytes.
pub fn reset(port: u16) -> Result<(u64, u64)> {
    let status = post(port, "/v3/maintenance/status", &json!({}))?;
    // The gateway writes 64-bit numbers as strings.
    let number = |v: &Value| -> Option<u64> {
        v.as_str()
            .and_then(|s| s.parse().ok())
            .or_else(|| v.as_u64())
    };
    let revision = number(&status["header"]["revision"]).context("etcd status: no revision")?;
    let before = number(&status["dbSize"]).unwrap_or(0);
    post(
        port,
        "/v3/kv/compaction",
        &json!({"revision": revision.to_string(), "physical": true}),
    )?;
    post(port, "/v3/maintenance/defragment", &json!({}))?;
    let after = post(port, "/v3/maintenance/status", &json!({}))?;
    Ok((before, number(&after["dbSize"]).unwrap_or(0)))
}
