//! The infrastructure every wing runs on (the wings: `reconciler`,
//! `annotated`, `webhook`, `push`, `push::clusters`; the composition root
//! that starts them all: `crate::controller`). Nothing here imports a wing.
//!
//! - [`Shared`]: what the composition root makes once and every wing uses.
//! - [`client`]: the Kubernetes client and the CRD check.
//! - [`runner`]: runs reconciles (per-key exclusivity, backoff, shutdown).
//! - [`keygen`]: the bounded lane of costly key generation.
//! - [`leader`]: Lease-based leader election.
//! - [`proofkey`]: the key that signs the Secrets we create.
//! - [`shutdown`]: the signal and the deadline after it.
//! - [`logging`]: the log filter (kube's client muted below errors).
//! - [`admin`], [`metrics`], [`events`]: health and metrics servers, the
//!   Prometheus registry, Kubernetes Events; [`phases`]: where a
//!   reconcile's time goes; [`object_metrics`]: a few series per
//!   RandomSecret, from the caches at each scrape.

pub mod admin;
pub mod allocator;
pub mod client;
pub mod events;
pub mod keygen;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod object_metrics;
pub mod outcome;
pub mod own;
pub mod phases;
pub mod proofkey;
pub mod queue;
pub mod runner;
pub mod shutdown;
pub mod status;

use crate::cache::Caches;
use crate::proof::ProofKey;
use events::Events;
use leader::Leadership;
use metrics::Metrics;
use std::sync::Arc;

/// What every wing shares, made once by the composition root: a wing's
/// constructor takes this and its own small config, and keeps what it needs.
#[derive(Clone)]
pub struct Shared {
    pub client: kube::Client,
    pub caches: Arc<Caches>,
    pub events: Events,
    pub metrics: Metrics,
    /// Whether this replica leads (always true without leader election).
    pub leader: Leadership,
    pub shutdown: shutdown::Signal,
    /// The key that signs the Secrets we create.
    pub proof_key: ProofKey,
    /// This replica's shard (`--shard-selector`); None: everything.
    pub shard: Option<Arc<crate::shard::Shard>>,
    /// How every watch reads its initial state (`cache::lists`).
    pub lists: crate::cache::lists::Lists,
}

/// Who reports Events: this replica (the pod name), else the controller.
pub fn reporter() -> events::Reporter {
    let controller = crate::api::MANAGED_BY.to_string();
    events::Reporter {
        instance: std::env::var("POD_NAME").unwrap_or_else(|_| controller.clone()),
        controller,
    }
}
