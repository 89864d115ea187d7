//! What the phases measured, as they hand it to the report: plain data, so
//! that the report needs no phase and the phases need only the report.

use crate::apimetrics::Counts;
use crate::apitimes::ApiTimes;
use crate::procstat::{CpuSplit, Handles, Steady};
use std::time::{Duration, SystemTime};

/// The floor at one size (`phases::floor`).
pub struct Floor {
    /// Until every object was seen Ready.
    pub took: Duration,
    /// Until the last write returned.
    pub writes: Duration,
    /// When each object was seen Ready, since the first create, in order.
    pub done: Vec<Duration>,
    /// The rotation floor (`rotations`).
    pub rotated: Option<Rotated>,
    /// CPU from the first create until every object was seen Ready.
    pub cpu: CpuSplit,
}

/// The floor's rotations: each one's latency, and what its writes took
/// as the apiserver timed them.
pub struct Rotated {
    /// The warm-up rotations' latencies, in the order sent (not in `times`).
    pub warm: Vec<Duration>,
    pub times: Vec<Duration>,
    /// Each rotation's send time and latency, in the order they were sent.
    pub timeline: Vec<(SystemTime, Duration)>,
    pub apiserver: ApiTimes,
}

/// The controller's convergence at one size.
pub struct Converged {
    pub took: Duration,
    /// When each RandomSecret became Ready, since the first create, in order.
    pub ready: Vec<Duration>,
    pub requests: Counts,
    pub reconciles: f64,
    pub rss_kib: u64,
    pub peak_kib: u64,
    /// Connections, fds and threads once settled.
    pub handles: Handles,
    /// The most of each while converging (sampled every 500 ms).
    pub handles_max: Handles,
    /// CPU from the first create until every object was seen Ready.
    pub cpu: CpuSplit,
    /// Where the controller's time went (its phase histograms) until then.
    pub phase_times: Vec<crate::phasetimes::PhaseTime>,
}

/// One interleaved pair at one size: each side's time until every object
/// was seen Ready and its CPU over that time, so that a pair's ratio can be
/// read against what the apiserver spent on each side.
pub struct Pair {
    /// None without a floor (`--no-floor`).
    pub floor: Option<(Duration, CpuSplit)>,
    pub ours: (Duration, CpuSplit),
    pub ours_first: bool,
}

/// A controller's steady state with per-object metrics on or off, scraped
/// every 2 s meanwhile.
pub struct ObjectMetricsRun {
    pub on: bool,
    pub steady: Steady,
    /// VmHWM at the end of the window.
    pub peak_kib: u64,
    /// The size of the last scrape, the slowest scrape, how many.
    pub scrape_bytes: usize,
    pub slowest_scrape: Duration,
    pub scrapes: usize,
}

/// What a restart with `n` objects existing took and held.
pub struct Restart {
    /// The same streams read bare before the controller started (`streams`).
    pub floor: Duration,
    pub ready: Duration,
    pub all: Duration,
    pub requests: Counts,
    /// VmHWM when `/readyz` first answered: the peak of the initial lists.
    pub peak_ready_kib: u64,
    /// The largest RSS sampled (every 100 ms) until then: a check on VmHWM.
    pub sampled_ready_kib: u64,
    pub handles_ready: Handles,
    /// VmHWM once every object was reconciled and the controller settled.
    pub peak_kib: u64,
    /// Then over the steady window.
    pub steady: Steady,
}

/// One point of the scale phase.
pub struct ScalePoint {
    pub n: usize,
    /// Creating the step's RandomSecrets until all were Ready (zero for the first point).
    pub took: Duration,
    pub steady: Steady,
}

/// What the push phase measured.
pub struct Pushed {
    pub count: usize,
    pub rate: f64,
    /// Create to VaultSynced, sorted.
    pub create: Vec<Duration>,
    /// Rotation to VaultSynced with the new version, sorted.
    pub rotate: Vec<Duration>,
    /// The controller's time per push (connection, login, compare, write): p50, p99 in ms.
    pub push_ms: (f64, f64),
    /// KV versions written, and compared-unchanged pushes, by the restarted controller.
    pub restart_written: f64,
    pub restart_unchanged: f64,
}

/// The peer's convergence at one size.
pub struct PeerResult {
    pub took: Duration,
    /// When each object became ready, since the first create, in order.
    pub ready: Vec<Duration>,
    pub rss_kib: u64,
    pub peak_kib: u64,
    pub requests: Counts,
}

/// The controller's lease renewals over a window of the kinds phase: the
/// gaps between successive `spec.renewTime`s.
pub struct Renewals {
    pub count: usize,
    /// The largest gap, counting the time from the last renewal to the
    /// window's end.
    pub max_gap: Duration,
    /// Gaps longer than two renew periods: a renewal missed.
    pub missed: usize,
    /// Gaps longer than the renew deadline: leadership given up.
    pub over_deadline: usize,
}

/// RSA keys under a string rotation workload (the kinds phase).
pub struct RsaLoad {
    /// RSA-4096 RandomSecrets created at once.
    pub count: usize,
    /// Plain RandomSecrets the rotations went to.
    pub plain: usize,
    /// The controller's key generation permits, and reconciles at once.
    pub permits: usize,
    pub reconcile_concurrency: usize,
    /// One RSA-4096 key generated by the benchmark itself before the phase
    /// (the mean of a few), for scale.
    pub one_key: Duration,
    pub one_key_of: usize,
    /// From the first create until all were Ready.
    pub took: Duration,
    pub ready: Vec<Duration>,
    /// The controller's CPU seconds over that time.
    pub cpu_s: f64,
    /// The run's processes and the rest of the machine over that time.
    pub cpu: CpuSplit,
    /// Rotation latencies, sorted: alone, while the RSA keys were made, and
    /// alone again after, as many as during (a baseline as long as the
    /// window it is compared with: a 10 s one misses what happens every few
    /// minutes, such as the apiserver's etcd compaction).
    pub alone: Vec<Duration>,
    pub during: Vec<Duration>,
    pub after: Vec<Duration>,
    /// Those during sent after the first `burst` of the load (a diagnostic).
    pub during_later: Vec<Duration>,
    pub burst: Duration,
    pub renewals_alone: Renewals,
    pub renewals_during: Renewals,
    /// The controller's renew period (`--retry-period-seconds`) and deadline.
    pub period: Duration,
    pub deadline: Duration,
    /// Scrapes of `randomsecret_leader` over both windows, those not 1, and
    /// the slowest answer of `/metrics` (milliseconds).
    pub leader_samples: usize,
    pub not_leading: usize,
    pub metrics_max_ms: f64,
}
