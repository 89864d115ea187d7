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

/// The text of `/proc/PID/status`, read once for several fields.
pub fn status(pid: u32) -> Result<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("process {pid} is gone"))
}

/// The number after `field` (say `VmRSS:`) in a status text: KiB for the
/// memory fields, a count for `Threads:`.
pub fn field(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn status_kib(pid: u32, name: &str) -> Result<u64> {
    field(&status(pid)?, name).with_context(|| format!("no {name} in /proc/{pid}/status"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let text = super::status(me).unwrap();
        assert!(super::field(&text, "VmRSS:").unwrap() > 0);
        assert!(super::field(&text, "Threads:").unwrap() >= 1);
        assert_eq!(super::field(&text, "NoSuchField:"), None);
        assert!(super::peak_rss(me).unwrap() >= super::rss(me).unwrap());
    }
}
