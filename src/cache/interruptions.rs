//! Which watches are interrupted, so that retention never releases a version
//! on a stale index.
//!
//! A watch that fails (the apiserver restarts, etcd is down, a 410 Gone sends
//! it back to a list) misses what happens until it flows again: a ReplicaSet
//! created meanwhile is not in the reference index, and a version it uses
//! would look unreferenced. So from a watch's failure until it flows again,
//! retention keeps every superseded version (`Caches::references_current`
//! is false); when the last interrupted watch recovers, every RandomSecret is
//! reconciled again, and what is really unreferenced is released then.
//!
//! A watch flows again at its first event after the failure (`Apply` or
//! `Delete` of a resumed watch: those of the gap come first, in order; or
//! `InitDone` of a relist, never before it), or once [`QUIET`] passes after
//! its last failure with no relist under way: its retries come within
//! kube-runtime's backoff (at most 30 s apart) and each failed one is
//! reported, so a quiet, resumed watch is caught up by then.

use kube::runtime::watcher::Event;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after its last failure a watch with no events counts as flowing.
pub const QUIET: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
struct Interruption {
    since: Instant,
    /// A relist is under way (`Init` seen, `InitDone` not yet).
    relisting: bool,
}

#[derive(Default, Debug)]
pub struct Interruptions(Mutex<BTreeMap<&'static str, Interruption>>);

impl Interruptions {
    /// Watch `what` failed at `now`.
    pub fn failed(&self, what: &'static str, now: Instant) {
        let mut m = self.0.lock().expect("interruptions lock");
        let relisting = m.get(what).is_some_and(|i| i.relisting);
        m.insert(
            what,
            Interruption {
                since: now,
                relisting,
            },
        );
    }

    /// An event of watch `what`; true when it ends the last interruption
    /// (then every RandomSecret is to be reconciled again). The first list
    /// at start is no interruption: nothing reconciles before it.
    pub fn event<K>(&self, what: &'static str, ev: &Event<K>) -> bool {
        let mut m = self.0.lock().expect("interruptions lock");
        match (ev, m.get_mut(what)) {
            (Event::Init, Some(i)) => {
                i.relisting = true;
                false
            }
            (Event::InitApply(_) | Event::Init, _) | (_, None) => false,
            (Event::Apply(_) | Event::Delete(_), Some(i)) if i.relisting => false,
            (Event::InitDone | Event::Apply(_) | Event::Delete(_), Some(_)) => {
                m.remove(what);
                m.is_empty()
            }
        }
    }

    /// Ends the interruptions quiet for [`QUIET`] at `now`; true when that
    /// ends the last one.
    pub fn tick(&self, now: Instant) -> bool {
        let mut m = self.0.lock().expect("interruptions lock");
        let before = m.len();
        m.retain(|_, i| i.relisting || now.duration_since(i.since) < QUIET);
        before > 0 && m.is_empty()
    }

    /// The interrupted watches (empty: every index is current).
    pub fn which(&self) -> Vec<&'static str> {
        self.0
            .lock()
            .expect("interruptions lock")
            .keys()
            .copied()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Ev = Event<()>;

    #[test]
    fn the_first_list_is_no_interruption() {
        let i = Interruptions::default();
        assert!(!i.event("pods", &Ev::Init));
        assert!(!i.event("pods", &Ev::InitApply(())));
        assert!(!i.event("pods", &Ev::InitDone));
        assert!(!i.event("pods", &Ev::Apply(())));
        assert!(i.which().is_empty());
    }

    #[test]
    fn a_failed_watch_is_interrupted_until_its_next_event() {
        let (i, t0) = (Interruptions::default(), Instant::now());
        i.failed("replicasets", t0);
        i.failed("pods", t0);
        assert_eq!(i.which(), ["pods", "replicasets"]);
        assert!(!i.event("replicasets", &Ev::Apply(())), "pods still out");
        assert_eq!(i.which(), ["pods"]);
        assert!(i.event("pods", &Ev::Delete(())), "the last one recovers");
        assert!(i.which().is_empty());
    }

    #[test]
    fn a_relist_after_410_ends_at_init_done_only() {
        let (i, t0) = (Interruptions::default(), Instant::now());
        i.failed("replicasets", t0);
        assert!(!i.event("replicasets", &Ev::Init));
        assert!(!i.event("replicasets", &Ev::InitApply(())));
        // A relist that fails midway starts over; it is still under way.
        i.failed("replicasets", t0);
        assert!(!i.event("replicasets", &Ev::Init));
        assert!(!i.event("replicasets", &Ev::Apply(())));
        assert!(!i.tick(t0 + QUIET * 10), "a relist is never timed out");
        assert_eq!(i.which(), ["replicasets"]);
        assert!(i.event("replicasets", &Ev::InitDone));
        assert!(i.which().is_empty());
    }

    #[test]
    fn a_quiet_resumed_watch_recovers_after_the_quiet_period() {
        let (i, t0) = (Interruptions::default(), Instant::now());
        i.failed("controllerrevisions", t0);
        assert!(!i.tick(t0 + QUIET / 2));
        i.failed("controllerrevisions", t0 + QUIET / 2);
        assert!(!i.tick(t0 + QUIET), "counted from the last failure");
        assert!(i.tick(t0 + QUIET / 2 + QUIET));
        assert!(i.which().is_empty());
        assert!(!i.tick(t0 + QUIET * 3), "nothing left to recover");
    }
}
