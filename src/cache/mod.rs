//! Caches of our own, compact: per kind only what the reconciler reads.
//!
//! kube-runtime's reflector stores keep whole objects (a RandomSecret with its
//! status is several KB in k8s-openapi structs; every one-entry `BTreeMap` is
//! a ~0.5 KB node). At tens of thousands of objects that is most of the
//! process, so the watches feed these instead: namespaces interned, names
//! inline (up to 24 bytes), uids as numbers, a RandomSecret's spec as compact
//! JSON decoded per reconcile, its status as a summary, the maps from a key to
//! a few names or holders keyed by the key's hash, and each entry sized to
//! one of jemalloc's classes (tests pin the sizes).
//!
//! - [`key`]: the typed key (namespace + name) and uids.
//! - [`slim`]: watched types that deserialize only the fields we read.
//! - [`randomsecrets`], [`secrets`]: the two object caches; [`previous`]:
//!   what the first keeps of a RandomSecret's status.
//! - [`index`]: the multi-index behind [`holders`] (who references which
//!   Secret name) and tracking mode (which workloads track a RandomSecret).
//! - [`interruptions`]: which watches are failing or relisting (their
//!   caches may be stale: retention then releases nothing).
//! - [`feed`]: runs one watch into a cache (every watch, upstream and
//!   downstream, goes through it).
//! - [`Listed`]: the "has listed once" signal the runners wait for.

pub mod feed;
pub mod holders;
pub mod index;
pub mod interruptions;
pub mod key;
pub mod lists;
pub mod previous;
pub mod randomsecrets;
pub mod secrets;
pub mod slim;

pub use key::{Key, Name, Namespace, Uid};

/// A map from a key's hash to the few values listed under it (one inline):
/// the shape of the two maps keyed by hashes (a RandomSecret's version
/// names, a version name's holders).
pub type HashedLists<T> = std::collections::HashMap<u64, smallvec::SmallVec<[T; 1]>>;

/// Takes one value that `is` out of the list at `hash` (keys sharing a hash
/// may list equal values: one entry each), and the list when it empties.
pub fn remove_one<T>(lists: &mut HashedLists<T>, hash: u64, is: impl Fn(&T) -> bool) {
    if let Some(list) = lists.get_mut(&hash) {
        if let Some(i) = list.iter().position(is) {
            list.remove(i);
        }
        if list.is_empty() {
            lists.remove(&hash);
        }
    }
}

/// Whether a cache has listed once, as a signal: runners wait for it
/// ([`Listed::wait`]) instead of polling, and the feeds raise it.
#[derive(Debug)]
pub struct Listed(tokio::sync::watch::Sender<bool>);

impl Default for Listed {
    fn default() -> Self {
        Listed(tokio::sync::watch::Sender::new(false))
    }
}

impl Listed {
    /// Raises the signal once `listed` (it is never lowered: a relist is an
    /// interruption, not a new start).
    pub fn raise_if(&self, listed: bool) {
        if listed {
            self.0.send_if_modified(|l| !std::mem::replace(l, true));
        }
    }

    pub fn is_raised(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once raised.
    pub async fn wait(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives as long as `self`, so this only ends when raised.
        let _ = rx.wait_for(|l| *l).await;
    }
}

/// Every cache the reconciler reads, fed by the watches (`controller::watches`).
pub struct Caches {
    pub randomsecrets: randomsecrets::RandomSecrets,
    pub secrets: secrets::Secrets,
    pub holders: holders::Holders,
    pub tracking: holders::Tracking,
    pub interruptions: interruptions::Interruptions,
    /// Raised once every cache of [`Caches::listed`] has listed.
    pub ready: Listed,
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
            ready: Listed::default(),
        }
    }

    /// Raises [`Caches::ready`] once every cache has listed: called by the
    /// watches after each event.
    pub fn note_listed(&self) {
        if !self.ready.is_raised() {
            self.ready.raise_if(self.listed());
        }
    }

    /// What a full pass reconciles: every RandomSecret, and every deleted
    /// one whose versions deletion protection still holds (they are let go
    /// once nothing references them, `reconciler::protection`).
    pub fn to_reconcile(&self) -> Vec<Key> {
        let mut keys = self.randomsecrets.keys();
        for k in self.secrets.held_back() {
            if self.randomsecrets.get(&k).is_none() {
                keys.push(k);
            }
        }
        keys
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
