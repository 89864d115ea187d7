//! The two reference indexes: who holds which version name (retention), and
//! which workloads track which RandomSecret (tracking mode).

use super::Key;
use super::index::{MultiIndex, Stream};
use crate::references::Holder;
use crate::tracking::Workload;
use std::sync::RwLock;

/// The holder streams that must have listed before anything is released.
pub const HOLDER_STREAMS: [Stream; 3] = [
    Stream::ReplicaSets,
    Stream::ControllerRevisions,
    Stream::Pods,
];

#[derive(Default)]
pub struct Holders(pub RwLock<MultiIndex<Holder, Key>>);

impl Holders {
    /// Who references Secret `secret`.
    pub fn of(&self, secret: &Key) -> Vec<Holder> {
        self.0
            .read()
            .expect("holders lock")
            .get(secret)
            .cloned()
            .collect()
    }

    /// Whether every holder stream has listed once.
    pub fn listed(&self) -> bool {
        self.0.read().expect("holders lock").listed(&HOLDER_STREAMS)
    }

    pub fn len(&self) -> usize {
        self.0.read().expect("holders lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Default)]
pub struct Tracking(pub RwLock<MultiIndex<Workload, Key>>);

impl Tracking {
    /// The workloads that track RandomSecret `rs`.
    pub fn of(&self, rs: &Key) -> Vec<Workload> {
        self.0
            .read()
            .expect("tracking lock")
            .get(rs)
            .cloned()
            .collect()
    }
}
