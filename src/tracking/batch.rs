//! One rollout for several rotations: when RandomSecrets tracked by the
//! same workload get new versions close together (`rotate -l`, a GitOps
//! sync of several rotation tokens), pointing the workload once per
//! RandomSecret would start a rollout each time (VSO#644). Each
//! RandomSecret's reconcile instead adds its [`Move`] to the workload's
//! open batch; the first reconcile after the window (`--tracking-window`)
//! since the batch opened points the workload with all of them in one
//! patch.
//!
//! Pure bookkeeping with the clock passed in; the patch is the caller's.
//! A batch lives in memory only: a new leader decides every workload
//! again and opens new batches.

use crate::cache::holders::WorkloadKind;
use k8s_openapi::api::core::v1::ObjectReference;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A workload: kind, namespace, name.
pub type WorkloadKey = (WorkloadKind, String, String);

/// What one RandomSecret's reconcile wants done to a workload's template.
#[derive(Clone, Debug, PartialEq)]
pub struct Move {
    /// The RandomSecret's name (its record label's suffix).
    pub rs: String,
    /// Where its Events go.
    pub reference: ObjectReference,
    /// The current version's hash (the record) and Secret name.
    pub hash: String,
    pub current: String,
    /// The names in the template to point at `current`.
    pub from: BTreeSet<String>,
    /// The workload's generation it was decided on: a move decided on
    /// another template is dropped, and its RandomSecret decides again.
    pub generation: Option<i64>,
}

/// What to do with a move now.
#[derive(Debug, PartialEq)]
pub enum Join {
    /// The window is open: look again after this long.
    Wait(Duration),
    /// Point the workload with these moves, in one patch (the batch was
    /// opened at `since`, for [`Batches::restore`] if the patch fails).
    Now { moves: Vec<Move>, since: Instant },
}

struct Batch {
    since: Instant,
    moves: BTreeMap<String, Move>,
}

/// The open batches, one per workload.
pub struct Batches {
    window: Duration,
    open: Mutex<HashMap<WorkloadKey, Batch>>,
}

/// A batch nobody came back to (its RandomSecrets deleted) is dropped after
/// this many windows.
const ABANDONED_AFTER: u32 = 20;

impl Batches {
    /// `window`: how long a workload's first move waits for others; zero
    /// points at once.
    pub fn new(window: Duration) -> Self {
        Batches {
            window,
            open: Mutex::default(),
        }
    }

    /// Adds `m` to `workload`'s batch (replacing its RandomSecret's earlier
    /// move). `alone`: the workload tracks no other RandomSecret, so there
    /// is nothing to wait for.
    pub fn join(&self, workload: WorkloadKey, m: Move, alone: bool, now: Instant) -> Join {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let stale = self.window * ABANDONED_AFTER;
        open.retain(|_, b| now.saturating_duration_since(b.since) < stale);
        let batch = open.entry(workload.clone()).or_insert_with(|| Batch {
            since: now,
            moves: BTreeMap::new(),
        });
        batch.moves.insert(m.rs.clone(), m);
        let due = batch.since + self.window;
        if alone || now >= due {
            let batch = open.remove(&workload).expect("just inserted");
            return Join::Now {
                moves: batch.moves.into_values().collect(),
                since: batch.since,
            };
        }
        Join::Wait(due - now)
    }

    /// Puts back the moves of a patch that failed, so the next attempt
    /// still carries the others' (and is not held for a new window); a
    /// RandomSecret's newer move, added meanwhile, wins over its old one.
    pub fn restore(&self, workload: WorkloadKey, moves: Vec<Move>, since: Instant) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let batch = open.entry(workload).or_insert_with(|| Batch {
            since,
            moves: BTreeMap::new(),
        });
        batch.since = batch.since.min(since);
        for m in moves {
            batch.moves.entry(m.rs.clone()).or_insert(m);
        }
    }

    /// How many workloads have an open batch.
    pub fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Applies the moves decided on `generation` to a pod template spec: each
/// RandomSecret's old names point at its current version. Returns the moves
/// applied and those dropped (decided on another template).
pub fn apply(
    pod_spec: &mut serde_json::Value,
    generation: Option<i64>,
    moves: Vec<Move>,
) -> (Vec<Move>, Vec<Move>) {
    let (applied, dropped): (Vec<Move>, Vec<Move>) =
        moves.into_iter().partition(|m| m.generation == generation);
    crate::references::rewrite_pod_spec(pod_spec, &|name| {
        applied
            .iter()
            .find(|m| m.from.contains(name))
            .map(|m| m.current.clone())
    });
    (applied, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> WorkloadKey {
        (WorkloadKind::Deployment, "shop".into(), "web".into())
    }

    fn mv(rs: &str, hash: &str, generation: i64) -> Move {
        Move {
            rs: rs.into(),
            reference: ObjectReference::default(),
            hash: hash.into(),
            current: format!("{rs}-{hash}"),
            from: [rs.to_string()].into(),
            generation: Some(generation),
        }
    }

    const W: Duration = Duration::from_secs(2);

    fn names(j: &Join) -> Vec<&str> {
        match j {
            Join::Now { moves, .. } => moves.iter().map(|m| m.rs.as_str()).collect(),
            Join::Wait(_) => vec![],
        }
    }

    #[test]
    fn moves_within_the_window_go_out_together_after_it() {
        let b = Batches::new(W);
        let t0 = Instant::now();
        assert_eq!(b.join(key(), mv("db", "h1", 1), false, t0), Join::Wait(W));
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(
            b.join(key(), mv("api", "h2", 1), false, t1),
            Join::Wait(Duration::from_millis(1500)),
            "the window runs from the first move, not the last"
        );
        // db's reconcile again, with a newer version: replaces its move.
        let again = b.join(key(), mv("db", "h3", 1), false, t0 + W);
        assert_eq!(names(&again), ["api", "db"]);
        let Join::Now { moves, since } = again else {
            unreachable!()
        };
        assert_eq!(since, t0);
        assert_eq!(moves[1].hash, "h3");
        assert!(b.is_empty(), "a batch that went out is closed");
        // The next move opens a new window.
        assert!(matches!(
            b.join(key(), mv("db", "h4", 2), false, t0 + W),
            Join::Wait(_)
        ));
    }

    #[test]
    fn a_workload_tracking_one_randomsecret_or_no_window_is_pointed_at_once() {
        let t0 = Instant::now();
        let b = Batches::new(W);
        assert_eq!(names(&b.join(key(), mv("db", "h1", 1), true, t0)), ["db"]);
        let none = Batches::new(Duration::ZERO);
        assert_eq!(
            names(&none.join(key(), mv("db", "h1", 1), false, t0)),
            ["db"]
        );
        assert!(b.is_empty() && none.is_empty());
    }

    #[test]
    fn batches_are_per_workload() {
        let b = Batches::new(W);
        let t0 = Instant::now();
        let other = (WorkloadKind::StatefulSet, "shop".into(), "web".into());
        b.join(key(), mv("db", "h1", 1), false, t0);
        b.join(other.clone(), mv("db", "h1", 1), false, t0);
        assert_eq!(b.len(), 2);
        assert_eq!(
            names(&b.join(other, mv("api", "h2", 1), false, t0 + W)),
            ["api", "db"]
        );
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn a_failed_patch_keeps_its_moves_and_window_and_newer_moves_win() {
        let b = Batches::new(W);
        let t0 = Instant::now();
        b.join(key(), mv("db", "h1", 1), false, t0);
        let Join::Now { moves, since } = b.join(key(), mv("api", "h2", 1), false, t0 + W) else {
            panic!("due")
        };
        // Meanwhile db has a newer move (a new window would start now).
        b.join(key(), mv("db", "h9", 1), false, t0 + W);
        b.restore(key(), moves, since);
        let Join::Now { moves, since } = b.join(key(), mv("api", "h2", 1), false, t0 + W) else {
            panic!("the restored batch is due at once")
        };
        assert_eq!(since, t0);
        let db = moves.iter().find(|m| m.rs == "db").unwrap();
        assert_eq!(db.hash, "h9");
    }

    #[test]
    fn abandoned_batches_are_dropped() {
        let b = Batches::new(W);
        let t0 = Instant::now();
        b.join(key(), mv("db", "h1", 1), false, t0);
        let other = (WorkloadKind::DaemonSet, "shop".into(), "agent".into());
        b.join(other, mv("db", "h1", 1), false, t0 + W * ABANDONED_AFTER);
        assert_eq!(b.len(), 1, "only the new one is left");
    }

    #[test]
    fn apply_points_each_randomsecrets_names_and_drops_moves_on_another_template() {
        let mut spec = json!({"containers": [{"name": "a", "envFrom": [
            {"secretRef": {"name": "db"}}, {"secretRef": {"name": "api"}},
            {"secretRef": {"name": "tls"}}, {"secretRef": {"name": "cache"}}]}]});
        let (applied, dropped) = apply(
            &mut spec,
            Some(1),
            vec![mv("db", "h1", 1), mv("api", "h2", 1), mv("cache", "h3", 0)],
        );
        assert_eq!(applied.len(), 2);
        assert_eq!(dropped.len(), 1);
        assert_eq!(
            crate::tracking::env_from_names(&spec),
            ["db-h1", "api-h2", "tls", "cache"]
        );
    }
}
