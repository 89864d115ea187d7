//! Runs reconciles: keys in, at most `concurrency` reconciles at once, never
//! two of the same key at once, requeues and retries with backoff. A
//! reconcile waiting for something other than the apiserver (a key
//! generation permit) gives its slot back meanwhile ([`parked`]).
//!
//! Built on kube-runtime's `scheduler` (which delays and deduplicates; keys
//! due now go around it, [`super::queue`]), not on its `Controller`: that needs a reflector store of whole objects, and our
//! caches are our own (see `cache`).

use crate::cache::Key;
use futures::stream::{FuturesUnordered, StreamExt};
use kube::runtime::scheduler::ScheduleRequest;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;

/// What a reconcile asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing until something changes.
    AwaitChange,
    /// Look again after this long (a time-based rotation, a conflict recheck).
    RequeueAfter(Duration),
    /// A transient failure: again after a backoff that grows with each failure.
    Retry,
}

/// Retry delays: 500 ms doubling to 60 s, each with up to ±20 % jitter so that
/// many objects failing together (an apiserver outage) do not retry in step.
pub fn backoff(failures: u32, jitter: f64) -> Duration {
    const BASE_MS: f64 = 500.0;
    const MAX_MS: f64 = 60_000.0;
    let exp = BASE_MS * 2f64.powi(failures.saturating_sub(1).min(16) as i32);
    let ms = exp.min(MAX_MS) * (1.0 + 0.2 * jitter.clamp(-1.0, 1.0));
    Duration::from_millis(ms as u64)
}

/// Later than the scheduler's own bound (it clamps what is further out).
const FAR: Duration = Duration::from_secs(365 * 24 * 3600);

fn jitter() -> f64 {
    rand::random::<f64>() * 2.0 - 1.0
}

fn receiver_stream<T>(mut rx: mpsc::UnboundedReceiver<T>) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Sends keys to the runner (from the watches, on take-over, ...).
pub type Triggers = mpsc::UnboundedSender<Key>;

pub struct Runner {
    pub concurrency: usize,
    /// Share the slots between namespaces: a free slot goes to a ready key
    /// of the namespace with the fewest reconciles running, so one tenant
    /// whose work is slow (a push to a server that never answers) cannot
    /// keep another tenant's key waiting for more than one reconcile.
    pub fair: bool,
    /// The phase ([`phases`](super::phases)) that records how long a
    /// triggered key waited before its reconcile started: from the trigger,
    /// or from the end of its reconcile then running (the wait behind
    /// itself is that reconcile's time, not the queue's).
    pub queued: Option<&'static str>,
}

impl Runner {
    /// A runner that takes keys in the scheduler's order.
    pub fn new(concurrency: usize) -> Self {
        Runner {
            concurrency,
            fair: false,
            queued: None,
        }
    }

    /// A runner that shares its slots between namespaces (`fair`).
    pub fn fair(concurrency: usize) -> Self {
        Runner {
            concurrency,
            fair: true,
            queued: None,
        }
    }

    /// Records each triggered key's wait for its start as phase `phase`.
    pub fn timing_queue(self, phase: &'static str) -> Self {
        Runner {
            queued: Some(phase),
            ..self
        }
    }
}

/// Keys running, and how many per namespace (for `Runner::fair`).
#[derive(Default)]
struct Running {
    keys: HashSet<Key>,
    per_namespace: HashMap<String, usize>,
}

impl Running {
    fn start(&mut self, key: &Key) {
        self.keys.insert(key.clone());
        *self.per_namespace.entry(key.ns().to_string()).or_default() += 1;
    }

    fn end(&mut self, key: &Key) {
        self.keys.remove(key);
        if let Some(n) = self.per_namespace.get_mut(key.ns()) {
            *n -= 1;
            if *n == 0 {
                self.per_namespace.remove(key.ns());
            }
        }
    }

    /// Whether `key` may start now, at fairness `level`: not running
    /// already, and (when `fair`) its namespace runs at most `level` keys.
    fn may_start(&self, key: &Key, fair: bool, level: usize) -> bool {
        !self.keys.contains(key)
            && (!fair || self.per_namespace.get(key.ns()).copied().unwrap_or(0) <= level)
    }
}

tokio::task_local! {
    /// The runner slot of the reconcile being polled (see [`parked`]).
    static SLOT: Slot;
}

/// A reconcile's slot: its permit, or none while it is parked.
struct Slot {
    slots: Arc<Semaphore>,
    permit: std::cell::RefCell<Option<OwnedSemaphorePermit>>,
}

/// Awaits `work` without holding the calling reconcile's runner slot, then
/// takes a slot again. For waits on something other than the apiserver (a
/// key-generation permit, the blocking pool): a thousand reconciles queued
/// for RSA keys then wait there, not in front of other keys' reconciles.
/// Outside a runner (or already parked) it simply awaits `work`.
pub async fn parked<T>(work: impl Future<Output = T>) -> T {
    let slots = SLOT
        .try_with(|s| s.permit.borrow_mut().take().map(|_| s.slots.clone()))
        .ok()
        .flatten();
    let out = work.await;
    if let Some(slots) = slots {
        let permit = slots.acquire_owned().await.expect("slots are never closed");
        SLOT.with(|s| *s.permit.borrow_mut() = Some(permit));
    }
    out
}

impl Runner {
    /// Runs until `shutdown`, then lets in-flight reconciles finish.
    ///
    /// Nothing runs until `gate` resolves (every cache has listed): triggers
    /// before that are dropped, and `initial()` (every RandomSecret) is
    /// scheduled when it opens.
    pub async fn run<F, Fut>(
        self,
        mut triggers: mpsc::UnboundedReceiver<Key>,
        gate: impl Future<Output = ()>,
        initial: impl FnOnce() -> Vec<Key>,
        reconcile: F,
        shutdown: impl Future<Output = ()>,
    ) where
        F: Fn(Key) -> Fut,
        Fut: Future<Output = Next>,
    {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut gate = std::pin::pin!(gate);
        loop {
            // Biased: an open gate is seen before a waiting trigger is
            // dropped (a runner whose gate is open at once keeps them all).
            tokio::select! {
                biased;
                _ = &mut shutdown => return,
                _ = &mut gate => break,
                _ = triggers.recv() => {}
            }
        }
        let (requeue, requeued) = mpsc::unbounded_channel::<ScheduleRequest<Key>>();
        let now = |message| ScheduleRequest {
            message,
            run_at: Instant::now(),
        };
        for key in initial() {
            let _ = requeue.send(now(key));
        }
        // When each key waiting to start became eligible (`queued`); None
        // while the reconcile running when it was triggered goes on.
        let triggered: Mutex<HashMap<Key, Option<Instant>>> = Mutex::default();
        let running: Mutex<Running> = Mutex::default();
        let requests = futures::stream::select(
            receiver_stream(triggers).map(|key: Key| {
                if self.queued.is_some() {
                    let busy = running.lock().expect("running lock").keys.contains(&key);
                    let mut t = triggered.lock().expect("triggered lock");
                    t.entry(key.clone())
                        .or_insert_with(|| (!busy).then(Instant::now));
                }
                now(key)
            }),
            receiver_stream(requeued),
        );
        let mut queue = super::queue::Queue::new(requests);
        // Fair: a free slot is offered first to namespaces running nothing,
        // then to those running one, and so on.
        let levels = if self.fair {
            self.concurrency.max(1)
        } else {
            1
        };
        // A reconcile holds a slot while it runs, except while parked.
        let slots = Arc::new(Semaphore::new(self.concurrency.max(1)));
        let mut in_flight = FuturesUnordered::new();
        let mut failures: HashMap<Key, u32> = HashMap::new();
        loop {
            tokio::select! {
                biased;
                _ = &mut shutdown => break,
                Some((key, next)) = in_flight.next() => {
                    running.lock().expect("running lock").end(&key);
                    if let Some(waiting @ None) = triggered.lock().expect("triggered lock").get_mut(&key) {
                        *waiting = Some(Instant::now());
                    }
                    let delay = match next {
                        Next::AwaitChange => {
                            failures.remove(&key);
                            None
                        }
                        Next::RequeueAfter(d) => {
                            failures.remove(&key);
                            Some(d)
                        }
                        Next::Retry => {
                            let n = failures.entry(key.clone()).or_default();
                            *n += 1;
                            Some(backoff(*n, jitter()))
                        }
                    };
                    if let Some(d) = delay {
                        // A far-off time (a 100-year rotateEvery) is clamped by the scheduler.
                        let run_at = Instant::now().checked_add(d).unwrap_or_else(|| Instant::now() + FAR);
                        let _ = requeue.send(ScheduleRequest { message: key, run_at });
                    }
                }
                key = async {
                    let permit = match slots.clone().try_acquire_owned() {
                        Ok(permit) => permit,
                        // While every slot is busy the scheduler is still
                        // polled (with nothing taken), so triggers are
                        // deduplicated into its queue instead of piling up
                        // in the channel.
                        Err(_) => {
                            tokio::select! {
                                biased;
                                permit = slots.clone().acquire_owned() => permit.expect("slots are never closed"),
                                None = futures::future::poll_fn(|cx| queue.poll_hold(cx)) => return None,
                            }
                        }
                    };
                    // Keys already running stay queued until their reconcile ends.
                    let key = futures::future::poll_fn(|cx| {
                        for level in 0..levels {
                            let ready = queue.poll_take(cx, |k| {
                                running.lock().expect("running lock").may_start(k, self.fair, level)
                            });
                            if let Poll::Ready(key) = ready {
                                return Poll::Ready(key);
                            }
                        }
                        Poll::Pending
                    })
                    .await;
                    key.map(|key| (key, permit))
                } => {
                    let Some((key, permit)) = key else { break };
                    running.lock().expect("running lock").start(&key);
                    let mut waited = None;
                    if let Some(phase) = self.queued {
                        let mut t = triggered.lock().expect("triggered lock");
                        if let Some(Some(at)) = t.remove(&key) {
                            let w = at.elapsed();
                            super::phases::observe(phase, w);
                            waited = Some(w);
                        }
                        // A burst (every object at start) leaves no table
                        // of its size behind.
                        let len = t.len();
                        if t.capacity() > 64 && len * 4 < t.capacity() {
                            t.shrink_to(len * 2);
                        }
                    }
                    let slot = Slot {
                        slots: slots.clone(),
                        permit: Some(permit).into(),
                    };
                    let work = SLOT.scope(slot, reconcile(key.clone()));
                    // The runner that times its queue (RandomSecrets') itemizes too.
                    let itemize = self.queued.is_some();
                    let work = super::phases::itemized(key.clone(), itemize, waited, work);
                    in_flight.push(async move { (key, work.await) });
                }
            }
        }
        while in_flight.next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Keys sent before the runner first runs are kept when its gate is
    /// open from the start (a downstream cluster's runner, `push::clusters`).
    #[tokio::test(start_paused = true)]
    async fn an_open_gate_drops_no_trigger() {
        for _ in 0..32 {
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send(Key::new("n", "a")).unwrap();
            let runs = Arc::new(AtomicUsize::new(0));
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let task = {
                let runs = runs.clone();
                tokio::spawn(async move {
                    Runner::new(1)
                        .run(
                            rx,
                            async {},
                            Vec::new,
                            move |_| {
                                let runs = runs.clone();
                                async move {
                                    runs.fetch_add(1, Ordering::SeqCst);
                                    Next::AwaitChange
                                }
                            },
                            async move {
                                let _ = stop_rx.await;
                            },
                        )
                        .await
                })
            };
            tokio::time::sleep(Duration::from_millis(10)).await;
            stop_tx.send(()).unwrap();
            task.await.unwrap();
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        }
    }

    /// One namespace's slow reconciles (a push to a server that never
    /// answers) hold every slot; another namespace's key, triggered after,
    /// takes the first slot that frees, not a place behind the slow queue.
    #[tokio::test(start_paused = true)]
    async fn a_fair_runner_gives_a_free_slot_to_the_namespace_running_least() {
        let (tx, rx) = mpsc::unbounded_channel();
        let ended: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let fast_started: Arc<Mutex<Option<Instant>>> = Arc::default();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let slow: Vec<Key> = (0..40)
            .map(|i| Key::new("tarpit", &format!("s{i}")))
            .collect();
        let runner = {
            let (ended, fast_started) = (ended.clone(), fast_started.clone());
            tokio::spawn(async move {
                Runner::fair(4)
                    .run(
                        rx,
                        async {},
                        move || slow,
                        move |k: Key| {
                            let (ended, fast_started) = (ended.clone(), fast_started.clone());
                            async move {
                                if k.ns() == "tenant-b" {
                                    *fast_started.lock().unwrap() = Some(Instant::now());
                                    return Next::AwaitChange;
                                }
                                // Each slow reconcile ends at its own time.
                                let i: u64 = k.name[1..].parse().unwrap();
                                tokio::time::sleep(Duration::from_secs(60 + i)).await;
                                ended.lock().unwrap().push(Instant::now());
                                Next::AwaitChange
                            }
                        },
                        async move {
                            let _ = stop_rx.await;
                        },
                    )
                    .await
            })
        };
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        tx.send(Key::new("tenant-b", "db")).unwrap();
        tokio::time::sleep(Duration::from_secs(200)).await;
        stop_tx.send(()).unwrap();
        runner.await.unwrap();
        let first_end = *ended
            .lock()
            .unwrap()
            .iter()
            .min()
            .expect("slow reconciles ended");
        let started = fast_started.lock().unwrap().expect("tenant-b's key ran");
        assert!(
            started <= first_end,
            "tenant-b waited {:?} after the first slot freed at {:?}",
            started - first_end,
            first_end - start
        );
    }

    /// With one slot: key a parks (waits for something outside), key b
    /// takes the slot meanwhile; when a's wait ends it waits for b to give
    /// the slot back, so never two reconciles run unparked at once.
    #[tokio::test(start_paused = true)]
    async fn a_parked_reconcile_lends_its_slot() {
        let (tx, rx) = mpsc::unbounded_channel();
        let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let (unparked, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let runner = {
            let (log, unparked, peak) = (log.clone(), unparked.clone(), peak.clone());
            tokio::spawn(async move {
                Runner::new(1)
                    .run(
                        rx,
                        async {},
                        || vec![Key::new("n", "a")],
                        move |k: Key| {
                            let (log, unparked, peak) =
                                (log.clone(), unparked.clone(), peak.clone());
                            async move {
                                let enter = |what| {
                                    let now = unparked.fetch_add(1, Ordering::SeqCst) + 1;
                                    peak.fetch_max(now, Ordering::SeqCst);
                                    log.lock().unwrap().push(what);
                                };
                                let leave = || unparked.fetch_sub(1, Ordering::SeqCst);
                                if &*k.name == "a" {
                                    enter("a starts");
                                    leave();
                                    parked(tokio::time::sleep(Duration::from_secs(5))).await;
                                    enter("a ends");
                                    leave();
                                } else {
                                    enter("b starts");
                                    tokio::time::sleep(Duration::from_secs(10)).await;
                                    log.lock().unwrap().push("b ends");
                                    leave();
                                }
                                Next::AwaitChange
                            }
                        },
                        async move {
                            let _ = stop_rx.await;
                        },
                    )
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        tx.send(Key::new("n", "b")).unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        stop_tx.send(()).unwrap();
        runner.await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["a starts", "b starts", "b ends", "a ends"]
        );
        assert_eq!(peak.load(Ordering::SeqCst), 1);
    }

    /// `queued` times a triggered key's wait for a slot: b waits 9 s for
    /// the one slot that a (10 s) holds; a, triggered again while it runs,
    /// is not charged for waiting behind itself, and starts when b (at
    /// once) ends.
    #[tokio::test(start_paused = true)]
    async fn queued_times_the_wait_for_a_slot_not_behind_itself() {
        let (tx, rx) = mpsc::unbounded_channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let runs = Arc::new(AtomicUsize::new(0));
        let runner = {
            let runs = runs.clone();
            tokio::spawn(async move {
                Runner::new(1)
                    .timing_queue("test_queued")
                    .run(
                        rx,
                        async {},
                        || vec![Key::new("n", "a")],
                        move |k: Key| {
                            let first = runs.fetch_add(1, Ordering::SeqCst) == 0;
                            async move {
                                if &*k.name == "a" && first {
                                    tokio::time::sleep(Duration::from_secs(10)).await;
                                }
                                Next::AwaitChange
                            }
                        },
                        async move {
                            let _ = stop_rx.await;
                        },
                    )
                    .await
            })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        tx.send(Key::new("n", "b")).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        tx.send(Key::new("n", "a")).unwrap();
        tokio::time::sleep(Duration::from_secs(20)).await;
        stop_tx.send(()).unwrap();
        runner.await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let (count, sum) = super::super::phases::totals("test_queued");
        assert_eq!(count, 2);
        assert!((sum - 9.0).abs() < 0.01, "{sum}");
    }

    /// Outside a runner there is no slot to lend: `parked` just awaits.
    #[tokio::test]
    async fn parked_outside_a_runner_awaits() {
        assert_eq!(parked(async { 7 }).await, 7);
    }

    #[test]
    fn backoff_grows_to_a_bound_with_jitter() {
        assert_eq!(backoff(1, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(2, 0.0), Duration::from_secs(1));
        assert_eq!(backoff(4, 0.0), Duration::from_secs(4));
        assert_eq!(backoff(40, 0.0), Duration::from_secs(60));
        assert_eq!(backoff(40, 1.0), Duration::from_secs(72));
        assert_eq!(backoff(1, -1.0), Duration::from_millis(400));
    }

    /// Two triggers of a key while it runs give one more run after it, never
    /// two at once; other keys run alongside; nothing runs before the gate.
    #[tokio::test(start_paused = true)]
    async fn one_reconcile_per_key_at_a_time() {
        let (tx, rx) = mpsc::unbounded_channel();
        let runs: Arc<Mutex<Vec<String>>> = Arc::default();
        let (active, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (gate_tx, gate_rx) = tokio::sync::oneshot::channel::<()>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let a = Key::new("n", "a");
        tx.send(a.clone()).unwrap(); // before the gate: dropped
        let runner = {
            let (runs, active, peak) = (runs.clone(), active.clone(), peak.clone());
            let initial = vec![a.clone(), Key::new("n", "b")];
            tokio::spawn(async move {
                Runner::new(4)
                    .run(
                        rx,
                        async move {
                            let _ = gate_rx.await;
                        },
                        move || initial,
                        move |k: Key| {
                            let (runs, active, peak) = (runs.clone(), active.clone(), peak.clone());
                            async move {
                                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                                peak.fetch_max(now, Ordering::SeqCst);
                                runs.lock().unwrap().push(k.name.to_string());
                                tokio::time::sleep(Duration::from_secs(1)).await;
                                active.fetch_sub(1, Ordering::SeqCst);
                                if &*k.name == "b" {
                                    Next::Retry
                                } else {
                                    Next::AwaitChange
                                }
                            }
                        },
                        async move {
                            let _ = stop_rx.await;
                        },
                    )
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(runs.lock().unwrap().is_empty(), "nothing before the gate");
        gate_tx.send(()).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        tx.send(a.clone()).unwrap();
        tx.send(a.clone()).unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        stop_tx.send(()).unwrap();
        runner.await.unwrap();
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.iter().filter(|n| *n == "a").count(), 2, "{runs:?}");
        assert!(
            runs.iter().filter(|n| *n == "b").count() >= 3,
            "b retried with backoff: {runs:?}"
        );
        assert_eq!(
            peak.load(Ordering::SeqCst),
            2,
            "a and b together, never a twice"
        );
    }
}
