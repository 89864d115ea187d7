//! A process's memory, from `/proc/PID/status` (Linux): what the suites and
//! `make bench` read of the controllers they run.

use anyhow::{Context, Result};

/// The peak resident memory of process `pid` so far (VmHWM), in bytes.
pub fn peak_rss(pid: u32) -> Result<u64> {
    status_kib(pid, "VmHWM:").map(|k| k * 1024)
}

/// The resident memory of process `pid` now (VmRSS), in bytes.
pub fn rss(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS:").map(|k| k * 1024)
}

fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("process {pid} is gone"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("no {field} in /proc/{pid}/status"))
}
