//! Memory and CPU of a process, from /proc (Linux).

use anyhow::{Context, Result};
use std::time::{Duration, Instant};

/// One reading of /proc/<pid>/status, in KiB.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident now (VmRSS).
    pub rss_kib: u64,
    /// Resident at its highest since the process started (VmHWM).
    pub peak_kib: u64,
}

pub fn memory(pid: u32) -> Result<Memory> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    Ok(Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    })
}

/// CPU time used so far (user + system), in seconds.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = text.rsplit_once(')').context("/proc/pid/stat format")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>()? + f[12].parse::<f64>()?; // utime, stime
    Ok(ticks / clock_ticks())
}

fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The median RSS over `window` (sampled every 250 ms) and the CPU used in
/// it as a share of one core: the process's steady state.
pub fn steady(pid: u32, window: Duration) -> Result<(u64, f64)> {
    let start = Instant::now();
    let cpu0 = cpu_seconds(pid)?;
    let mut samples = Vec::new();
    while start.elapsed() < window {
        samples.push(memory(pid)?.rss_kib);
        std::thread::sleep(Duration::from_millis(250));
    }
    let cpu = (cpu_seconds(pid)? - cpu0) / start.elapsed().as_secs_f64();
    samples.sort_unstable();
    Ok((samples[samples.len() / 2], cpu))
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
