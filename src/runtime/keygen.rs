//! Costly key generation (RSA keys, bcrypt) off the runtime's threads: on
//! the blocking pool, a bounded number at once (`--key-generation-concurrency`),
//! one lane shared by the reconciler and annotation mode. A reconcile
//! waiting here gives its runner slot back ([`runner::parked`]), so a
//! thousand RSA RandomSecrets queue in this lane, not in front of other
//! objects' reconciles.

use super::runner::parked;
use tokio::sync::Semaphore;

pub struct KeyGeneration {
    permits: Semaphore,
}

impl KeyGeneration {
    /// A lane of `flag` generations at once (`None`: the default, see
    /// [`permits`]).
    pub fn new(flag: Option<usize>) -> Self {
        KeyGeneration {
            permits: Semaphore::new(permits(flag)),
        }
    }

    /// Runs `work` on the blocking pool once the lane has room, without
    /// holding the caller's runner slot meanwhile.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        parked(async {
            let _permit = self
                .permits
                .acquire()
                .await
                .expect("the semaphore is never closed");
            tokio::task::spawn_blocking(work).await
        })
        .await
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

    /// Eight jobs through a lane of two: never more than two at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_lane_bounds_the_jobs_at_once() {
        let lane = Arc::new(KeyGeneration::new(Some(2)));
        let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let jobs: Vec<_> = (0..8)
            .map(|i| {
                let (lane, now, peak) = (lane.clone(), now.clone(), peak.clone());
                tokio::spawn(async move {
                    lane.run(move || {
                        peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        now.fetch_sub(1, Ordering::SeqCst);
                        i
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
        assert_eq!(done, (0..8).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }
}
