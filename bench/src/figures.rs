//! What the phases measured, as they hand it to the report: plain data, so
//! that the report needs no phase and the phases need only the report.

use crate::apimetrics::Counts;
use crate::procstat::{Handles, Steady};
use std::time::Duration;

/// The floor at one size (`phases::floor`).
pub struct Floor {
    /// Until every object was seen Ready.
    pub took: Duration,
    /// Until the last write returned.
    pub writes: Duration,
    /// When each object was seen Ready, since the first create, in order.
    pub done: Vec<Duration>,
    /// The rotation floor's latencies (`rotations`).
    pub rotated: Option<Vec<Duration>>,
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
}

/// What a restart with `n` objects existing took and held.
pub struct Restart {
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
