//! Costly key generation (RSA keys, bcrypt) off the runtime's threads, in
//! one lane shared by the reconciler and annotation mode: threads of their
//! own, a bounded number at once (`--key-generation-concurrency`), at the
//! lowest CPU priority (`SCHED_IDLE`). A burst of RSA keys then takes the CPU the rest
//! leaves: lease renewals, the webhook, other reconciles (and, on a shared
//! node, the apiserver) come first. A reconcile waiting here gives its
//! runner slot back ([`runner::parked`]), so a thousand RSA RandomSecrets
//! queue in this lane, not in front of other objects' reconciles.

use super::runner::parked;

pub struct KeyGeneration {
    /// Only its blocking pool is used: `permits` threads at most, each
    /// lowered when it starts ([`lower_priority`]; tokio's own blocking
    /// pool is shared with other work, and a thread's priority cannot be
    /// raised back without privileges).
    lane: Option<tokio::runtime::Runtime>,
}

/// The threads' nice value where `SCHED_IDLE` is refused.
const NICE: libc::c_int = 19;

impl KeyGeneration {
    /// A lane of `flag` generations at once (`None`: the default, see
    /// [`permits`]).
    pub fn new(flag: Option<usize>) -> std::io::Result<Self> {
        let lane = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(permits(flag))
            .thread_name("randomsecret-keygen")
            .on_thread_start(lower_priority)
            .build()?;
        Ok(KeyGeneration { lane: Some(lane) })
    }

    /// Runs `work` in the lane once it has room, without holding the
    /// caller's runner slot meanwhile.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        let lane = self.lane.as_ref().expect("only dropped at the end");
        parked(lane.spawn_blocking(work)).await
    }
}

impl Drop for KeyGeneration {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which an async context
        // (where the last handle usually goes) must not.
        if let Some(lane) = self.lane.take() {
            lane.shutdown_background();
        }
    }
}

/// Puts the calling thread (Linux: a policy and a nice value are per
/// thread) under `SCHED_IDLE`: it runs on what the process's other threads
/// (and its cgroup's other processes) leave, and any of them waking takes
/// the CPU from it at once, where a nice value would still let it finish a
/// time slice. It still runs (with a tiny share) under full load. Where
/// that is refused, nice [`NICE`]; best effort beyond that.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: these change the calling thread's scheduling and touch no
    // memory but `param`, which lives across the call; gettid has no
    // preconditions.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, NICE);
        }
    }
}

/// Costly key generations at once: the flag, by default half the cores (at
/// least one), so the runtime keeps the others.
fn permits(flag: Option<usize>) -> usize {
    flag.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)))
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_flag_sets_the_permits_and_the_default_leaves_cores_to_the_runtime() {
        assert_eq!(permits(Some(3)), 3);
        assert_eq!(permits(Some(0)), 1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let default = permits(None);
        assert!(
            default >= 1 && (cores < 2 || default <= cores / 2),
            "{default} of {cores}"
        );
    }

    /// Eight jobs through a lane of two: never more than two at once, each
    /// on a thread under SCHED_IDLE.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_lane_bounds_the_jobs_at_once_at_the_lowest_priority() {
        let before = policy();
        let lane = Arc::new(KeyGeneration::new(Some(2)).unwrap());
        let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let jobs: Vec<_> = (0..8)
            .map(|i| {
                let (lane, now, peak) = (lane.clone(), now.clone(), peak.clone());
                tokio::spawn(async move {
                    lane.run(move || {
                        peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        now.fetch_sub(1, Ordering::SeqCst);
                        (i, policy())
                    })
                    .await
                    .unwrap()
                })
            })
            .collect();
        let mut done = Vec::new();
        for job in jobs {
            done.push(job.await.unwrap());
        }
        assert_eq!(
            done,
            (0..8).map(|i| (i, libc::SCHED_IDLE)).collect::<Vec<_>>()
        );
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert_eq!(policy(), before, "the caller's thread keeps its policy");
    }

    /// A panic in the lane is the caller's error, and the lane goes on.
    #[tokio::test]
    async fn a_panic_in_the_lane_is_an_error() {
        let lane = KeyGeneration::new(Some(1)).unwrap();
        assert!(lane.run(|| panic!("boom")).await.is_err());
        assert_eq!(lane.run(|| 3).await.unwrap(), 3);
    }

    /// The calling thread's scheduling policy.
    fn policy() -> libc::c_int {
        // SAFETY: sched_getscheduler(0) reads the calling thread's policy.
        unsafe { libc::sched_getscheduler(0) }
    }
}
