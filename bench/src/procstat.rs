//! Memory, CPU, connections, fds and threads of a process, from /proc (Linux).

use anyhow::{Context, Result};
use randomsecret_e2e::process;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One reading of /proc/<pid>/status, in KiB.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident now (VmRSS).
    pub rss_kib: u64,
    /// Resident at its highest since the process started (VmHWM).
    pub peak_kib: u64,
    /// Of `rss_kib`: anonymous memory (heap, stacks), and pages of mapped
    /// files (the binary's code and the shared libraries, which the kernel can
    /// drop and read again).
    pub anon_kib: u64,
    pub file_kib: u64,
}

pub fn memory(pid: u32) -> Result<Memory> {
    let text = process::status(pid)?;
    Ok(Memory {
        rss_kib: field(&text, "VmRSS:"),
        peak_kib: field(&text, "VmHWM:"),
        anon_kib: field(&text, "RssAnon:"),
        file_kib: field(&text, "RssFile:"),
    })
}

/// The number after `name` in /proc/<pid>/status text (0 if absent).
fn field(status: &str, name: &str) -> u64 {
    process::field(status, name).unwrap_or(0)
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

/// CPU time used so far by `pid` and its children it has waited for
/// (user + system of each), in seconds.
fn cpu_seconds_with_children(pid: u32) -> Result<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    let rest = text.rsplit_once(')').context("/proc/pid/stat format")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let mut ticks = 0.0;
    for field in &f[11..15] {
        ticks += field.parse::<f64>()?; // utime, stime, cutime, cstime
    }
    Ok(ticks / clock_ticks())
}

/// CPU seconds the whole machine has been busy so far (every state but
/// idle and iowait, summed over the cores), from /proc/stat.
fn machine_busy_seconds() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let line = text.lines().next().context("/proc/stat is empty")?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest is in user).
    let busy: f64 =
        f.iter().take(8).sum::<f64>() - f.get(3).unwrap_or(&0.0) - f.get(4).unwrap_or(&0.0);
    Ok(busy / clock_ticks())
}

/// The processes of this run: the benchmark (and the children it waited
/// for), the control plane's (their command lines name `$E2E_DIR`, where
/// `e2e/bench.sh` keeps its state) and `extra` (a controller).
fn run_pids(extra: &[u32]) -> Vec<u32> {
    let mut pids = vec![std::process::id()];
    pids.extend_from_slice(extra);
    let Some(dir) = std::env::var_os("E2E_DIR").and_then(|d| d.into_string().ok()) else {
        return pids;
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !pids.contains(&pid) && String::from_utf8_lossy(&cmdline).contains(&dir) {
            pids.push(pid);
        }
    }
    pids
}

/// CPU over a window: that of each process of this run (the benchmark,
/// the control plane, a controller; all alive through the window), and the
/// rest of the machine's busy time (other processes, the kernel's threads).
/// On a machine shared with other work, the rest says how much of the CPU a
/// timing competed for.
pub struct CpuWindow {
    busy: f64,
    procs: Vec<(u32, String, f64)>,
}

/// What a [`CpuWindow`] measured, in CPU seconds.
#[derive(Clone, Debug, Default)]
pub struct CpuSplit {
    /// By process name (`/proc/PID/comm`), summed over processes of one name.
    pub by_process: std::collections::BTreeMap<String, f64>,
    /// Everything else the machine did.
    pub others: f64,
}

impl CpuSplit {
    /// The run's own: every process of it.
    pub fn run(&self) -> f64 {
        self.by_process.values().sum()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"run_s": self.run(), "by_process_s": self.by_process, "others_s": self.others})
    }

    /// "12.3 (kube-apiserver 6.1, etcd 2.0, ...)".
    pub fn text(&self) -> String {
        let parts: Vec<String> = self
            .by_process
            .iter()
            .filter(|(_, v)| **v >= 0.05)
            .map(|(k, v)| format!("{k} {v:.1}"))
            .collect();
        format!("{:.1} ({})", self.run(), parts.join(", "))
    }
}

impl CpuWindow {
    /// From now, with `extra` (a controller) counted as the run's.
    pub fn start(extra: &[u32]) -> Result<CpuWindow> {
        let procs = run_pids(extra)
            .into_iter()
            .filter_map(|p| {
                let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).ok()?;
                Some((
                    p,
                    comm.trim().to_string(),
                    cpu_seconds_with_children(p).ok()?,
                ))
            })
            .collect();
        Ok(CpuWindow {
            busy: machine_busy_seconds()?,
            procs,
        })
    }

    pub fn stop(self) -> Result<CpuSplit> {
        let busy = machine_busy_seconds()? - self.busy;
        let mut split = CpuSplit::default();
        for (p, comm, before) in self.procs {
            if let Ok(now) = cpu_seconds_with_children(p) {
                *split.by_process.entry(comm).or_default() += now - before;
            }
        }
        split.others = (busy - split.run()).max(0.0);
        Ok(split)
    }
}

/// Clock ticks per second (asked once).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// What a process holds open: its TCP connections to the apiserver (any
/// state but LISTEN, from its socket fds matched against
/// /proc/<pid>/net/tcp{,6}), all its TCP sockets, its fds and its threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handles {
    pub apiserver: usize,
    pub tcp: usize,
    pub fds: usize,
    pub threads: usize,
}

impl Handles {
    /// Field by field, the larger of the two.
    pub fn max(self, o: Handles) -> Handles {
        Handles {
            apiserver: self.apiserver.max(o.apiserver),
            tcp: self.tcp.max(o.tcp),
            fds: self.fds.max(o.fds),
            threads: self.threads.max(o.threads),
        }
    }

    pub fn json(self) -> serde_json::Value {
        serde_json::json!({"apiserver_connections": self.apiserver, "tcp_sockets": self.tcp,
                           "fds": self.fds, "threads": self.threads})
    }
}

/// A reading of the process's open connections, fds and threads;
/// `api_port` is the apiserver's (remote) port.
pub fn handles(pid: u32, api_port: u16) -> Result<Handles> {
    let mut sockets = std::collections::HashSet::new();
    let mut fds = 0;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .with_context(|| format!("reading /proc/{pid}/fd"))?
    {
        // An fd closed between the listing and the readlink is skipped.
        let Ok(entry) = entry else { continue };
        fds += 1;
        if let Ok(target) = std::fs::read_link(entry.path())
            && let Some(inode) = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
        {
            sockets.insert(inode.to_string());
        }
    }
    let (mut apiserver, mut tcp) = (0, 0);
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for (remote_port, state, inode) in text.lines().skip(1).filter_map(tcp_line) {
            if !sockets.contains(inode) {
                continue;
            }
            tcp += 1;
            if remote_port == api_port && state != LISTEN {
                apiserver += 1;
            }
        }
    }
    Ok(Handles {
        apiserver,
        tcp,
        fds,
        threads: field(&process::status(pid)?, "Threads:") as usize,
    })
}

/// TCP_LISTEN in /proc/net/tcp's `st` column.
const LISTEN: u8 = 0x0A;

/// (remote port, state, inode) of a /proc/net/tcp line:
/// `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...`.
fn tcp_line(line: &str) -> Option<(u16, u8, &str)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let port = u16::from_str_radix(f.get(2)?.rsplit_once(':')?.1, 16).ok()?;
    let state = u8::from_str_radix(f.get(3)?, 16).ok()?;
    Some((port, state, f.get(9).copied()?))
}

/// What a `Sampler` saw.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// RSS at each sample, in order.
    pub rss_kib: Vec<u64>,
    /// The largest of each handle count over the samples.
    pub max: Handles,
    /// The last reading.
    pub last: Handles,
}

impl Samples {
    pub fn median_rss_kib(&self) -> u64 {
        let mut s = self.rss_kib.clone();
        s.sort_unstable();
        s.get(s.len() / 2).copied().unwrap_or(0)
    }

    pub fn max_rss_kib(&self) -> u64 {
        self.rss_kib.iter().copied().max().unwrap_or(0)
    }
}

/// Reads the RSS of a process every `every` on a thread of its own until
/// stopped (or the process is gone), and its `Handles` too given the
/// apiserver's port.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Samples>,
}

impl Sampler {
    pub fn start(pid: u32, api_port: Option<u16>, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut s = Samples::default();
            loop {
                let Ok(m) = memory(pid) else { break };
                s.rss_kib.push(m.rss_kib);
                if let Some(port) = api_port {
                    let Ok(h) = handles(pid, port) else { break };
                    s.max = s.max.max(h);
                    s.last = h;
                }
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(every);
            }
            s
        });
        Sampler { stop, thread }
    }

    /// Takes one last sample and returns them all.
    pub fn stop(self) -> Samples {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The process over `window`: median RSS, CPU as a share of one core, and
/// the most connections, fds and threads it held.
#[derive(Clone, Copy, Debug, Default)]
pub struct Steady {
    pub rss_kib: u64,
    /// The split of RSS at the end of the window.
    pub last: Memory,
    pub cpu: f64,
    pub handles: Handles,
}

/// Samples the process for `window` (every 250 ms): its steady state.
pub fn steady(pid: u32, api_port: u16, window: Duration) -> Result<Steady> {
    let start = Instant::now();
    let cpu0 = cpu_seconds(pid)?;
    let sampler = Sampler::start(pid, Some(api_port), Duration::from_millis(250));
    std::thread::sleep(window);
    let samples = sampler.stop();
    let cpu = (cpu_seconds(pid)? - cpu0) / start.elapsed().as_secs_f64();
    anyhow::ensure!(!samples.rss_kib.is_empty(), "process {pid} is gone");
    Ok(Steady {
        rss_kib: samples.median_rss_kib(),
        last: memory(pid)?,
        cpu,
        handles: samples.max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_lines() {
        let l = "   3: 0100007F:9C4E 0100007F:4435 01 00000000:00000000 02:000A1234 00000000  1000        0 4242 2 0000000000000000 20 4 30 10 -1";
        assert_eq!(tcp_line(l), Some((0x4435, 1, "4242")));
        assert_eq!(tcp_line("  sl  local_address rem_address"), None);
    }

    #[test]
    fn reads_its_own_process() {
        let pid = std::process::id();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let _conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let h = handles(pid, port).unwrap();
        // The client end (remote = port); the accepted end is not accepted yet but
        // is not ours either; the listener is LISTEN.
        assert_eq!(h.apiserver, 1);
        assert!(h.tcp >= 2 && h.fds >= 2 && h.threads >= 1, "{h:?}");
        let s = Sampler::start(pid, Some(port), Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(50));
        let s = s.stop();
        assert!(
            !s.rss_kib.is_empty() && s.max_rss_kib() > 0 && s.max.apiserver == 1,
            "{s:?}"
        );
    }
}
