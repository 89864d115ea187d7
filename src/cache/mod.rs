//! Caches of our own, compact: per kind only what the reconciler reads.
//!
//! kube-runtime's reflector stores keep whole objects (a RandomSecret with its
//! status is several KB in k8s-openapi structs; every one-entry `BTreeMap` is
//! a ~0.5 KB node). At tens of thousands of objects that is most of the
//! process, so the watches feed these instead: namespaces interned, names as
//! `Box<str>`, uids as numbers, a RandomSecret's spec as compact JSON decoded
//! per reconcile, its status as a summary.
//!
//! - [`key`]: the typed key (namespace + name) and uids.
//! - [`slim`]: watched types that deserialize only the fields we read.
//! - [`randomsecrets`], [`secrets`]: the two object caches; [`previous`]:
//!   what the first keeps of a RandomSecret's status.
//! - [`index`]: the multi-index behind [`holders`] (who references which
//!   Secret name) and tracking mode (which workloads track a RandomSecret).
//! - [`interruptions`]: which watches are failing or relisting (their
//!   caches may be stale: retention then releases nothing).

pub mod holders;
pub mod index;
pub mod interruptions;
pub mod key;
pub mod previous;
pub mod randomsecrets;
pub mod secrets;
pub mod slim;

pub use key::{Key, Name, Namespace, Uid};

/// Every cache the reconciler reads, fed by the watches (`runtime::watches`).
pub struct Caches {
    pub randomsecrets: randomsecrets::RandomSecrets,
    pub secrets: secrets::Secrets,
    pub holders: holders::Holders,
    pub tracking: holders::Tracking,
    pub interruptions: interruptions::Interruptions,
}

impl Caches {
    /// Empty caches; `key` checks which Secrets we created.
    pub fn new(key: crate::proof::ProofKey) -> Self {
        Caches {
            randomsecrets: Default::default(),
            secrets: secrets::Secrets::new(key),
            holders: Default::default(),
            tracking: Default::default(),
            interruptions: Default::default(),
        }
    }

    /// Whether the reference index and the Secrets cache are current: no
    /// watch is failing or relisting. While one is, a version may look
    /// unreferenced only because its ReplicaSet was created during the gap,
    /// so retention releases nothing.
    pub fn references_current(&self) -> bool {
        self.interruptions.which().is_empty()
    }

    /// Whether the caches retention depends on have listed once: before
    /// that, a version would look missing or unreferenced.
    pub fn listed(&self) -> bool {
        self.randomsecrets.listed() && self.secrets.listed() && self.holders.listed()
    }

    /// What is not listed yet, for the log.
    pub fn waiting_for(&self) -> Vec<&'static str> {
        [
            ("randomsecrets", self.randomsecrets.listed()),
            ("secrets", self.secrets.listed()),
            (
                "replicasets, controllerrevisions, pods",
                self.holders.listed(),
            ),
        ]
        .into_iter()
        .filter(|(_, done)| !done)
        .map(|(what, _)| what)
        .collect()
    }
}
