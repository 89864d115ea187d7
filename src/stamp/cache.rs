//! What the stamp wing reads, fed by its three watches: the
//! ClusterRandomSecrets (whole: they are few), the namespaces (names and
//! labels only) and the stamped RandomSecrets (those labelled
//! `randomsecret.io/cluster-randomsecret`: their identity, proof and Ready,
//! never their spec).

use super::claim::Claim;
use crate::api::cluster::ClusterRandomSecret;
use crate::api::{READY, RandomSecret};
use crate::cache::{Key, Listed};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, RwLock};

/// One table fed by one watch: a relist (`Init` .. `InitDone`) replaces
/// what it held, keeping what the relist saw again.
pub struct Table<K, V> {
    inner: RwLock<Entries<K, V>>,
    pub listed: Listed,
}

/// Each value with the epoch (the list) that last saw it.
struct Entries<K, V> {
    map: HashMap<K, (V, u32)>,
    epoch: u32,
}

impl<K, V> Default for Table<K, V> {
    fn default() -> Self {
        Table {
            inner: RwLock::new(Entries {
                map: HashMap::new(),
                epoch: 0,
            }),
            listed: Listed::default(),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Table<K, V> {
    /// Feeds one event (`of`: the key and value of an object, None to skip
    /// it); returns the key of the object it was about.
    pub fn handle<T>(&self, ev: &Event<T>, of: impl Fn(&T) -> Option<(K, V)>) -> Option<K> {
        let mut guard = self.inner.write().expect("stamp table lock");
        let Entries {
            map: entries,
            epoch,
        } = &mut *guard;
        match ev {
            Event::Init => {
                *epoch = epoch.wrapping_add(1);
                None
            }
            Event::InitApply(o) | Event::Apply(o) => {
                let (k, v) = of(o)?;
                entries.insert(k.clone(), (v, *epoch));
                Some(k)
            }
            Event::Delete(o) => {
                let (k, _) = of(o)?;
                entries.remove(&k);
                Some(k)
            }
            Event::InitDone => {
                let now = *epoch;
                entries.retain(|_, (_, e)| *e == now);
                self.listed.raise_if(true);
                None
            }
        }
    }

    pub fn get(&self, k: &K) -> Option<V> {
        let guard = self.inner.read().expect("stamp table lock");
        guard.map.get(k).map(|(v, _)| v.clone())
    }

    /// Every entry whose value passes `keep`.
    pub fn filter(&self, keep: impl Fn(&K, &V) -> bool) -> Vec<(K, V)> {
        let guard = self.inner.read().expect("stamp table lock");
        guard
            .map
            .iter()
            .filter(|(k, (v, _))| keep(k, v))
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }

    pub fn keys(&self) -> Vec<K> {
        let guard = self.inner.read().expect("stamp table lock");
        guard.map.keys().cloned().collect()
    }

    /// Our own write's answer, ahead of its watch event.
    pub fn put(&self, k: K, v: V) {
        let mut guard = self.inner.write().expect("stamp table lock");
        let epoch = guard.epoch;
        guard.map.insert(k, (v, epoch));
    }
}

/// A namespace as selection sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamespaceEntry {
    pub labels: BTreeMap<String, String>,
    pub terminating: bool,
}

/// A stamped RandomSecret's Ready condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Readiness {
    /// Ready=True for its current spec.
    Ready,
    /// Ready=False (reason, message), or not yet written for its current
    /// spec (None).
    NotReady(Option<(String, String)>),
}

/// A RandomSecret labelled as stamped: what proves it ours, and its Ready.
#[derive(Clone, Debug, PartialEq)]
pub struct StampedEntry {
    pub uid: String,
    /// What its label and annotations claim (the ClusterRandomSecret, the
    /// template digest, the values) and their proof.
    pub claim: Claim,
    pub generation: i64,
    pub readiness: Readiness,
    /// Its owner references (an update keeps those not ours).
    pub owners: Vec<OwnerReference>,
}

impl StampedEntry {
    pub fn of(rs: &RandomSecret) -> Option<(Key, StampedEntry)> {
        let key = Key::new(
            rs.metadata.namespace.as_deref()?,
            rs.metadata.name.as_deref()?,
        );
        let generation = rs.metadata.generation.unwrap_or_default();
        let status = rs.status.as_ref();
        let observed = status.and_then(|s| s.observed_generation) == Some(generation);
        let ready = status.and_then(|s| s.conditions.iter().find(|c| c.type_ == READY));
        let readiness = match ready {
            Some(c) if observed && c.status == "True" => Readiness::Ready,
            Some(c) if observed && c.status == "False" => {
                Readiness::NotReady(Some((c.reason.clone(), c.message.clone())))
            }
            _ => Readiness::NotReady(None),
        };
        Some((
            key,
            StampedEntry {
                uid: rs.metadata.uid.clone()?,
                claim: Claim::of(
                    rs.metadata.labels.as_ref(),
                    rs.metadata.annotations.as_ref(),
                )?,
                generation,
                readiness,
                owners: rs.metadata.owner_references.clone().unwrap_or_default(),
            },
        ))
    }
}

/// The three tables.
#[derive(Default)]
pub struct Stamps {
    pub clusters: Table<String, Arc<ClusterRandomSecret>>,
    pub namespaces: Table<String, NamespaceEntry>,
    pub stamped: Table<Key, StampedEntry>,
    /// Raised by the first ClusterRandomSecret seen: the namespaces and
    /// stamped RandomSecrets are watched from then on (a cluster without
    /// one pays for one watch, not three).
    pub wanted: Listed,
    /// Per stamped RandomSecret, the generation our last write left it at:
    /// a later generation is someone else's edit, put back (in memory only:
    /// a new leader trusts the template digest until the next change).
    pub written: RwLock<HashMap<Key, i64>>,
}

impl Stamps {
    pub fn cluster_of(c: &ClusterRandomSecret) -> Option<(String, Arc<ClusterRandomSecret>)> {
        Some((c.metadata.name.clone()?, Arc::new(c.clone())))
    }

    pub fn namespace_of(n: &PartialObjectMeta<Namespace>) -> Option<(String, NamespaceEntry)> {
        Some((
            n.metadata.name.clone()?,
            NamespaceEntry {
                labels: n.metadata.labels.clone().unwrap_or_default(),
                terminating: n.metadata.deletion_timestamp.is_some(),
            },
        ))
    }

    /// Whether every table has listed once.
    pub fn listed(&self) -> bool {
        self.clusters.listed.is_raised()
            && self.namespaces.listed.is_raised()
            && self.stamped.listed.is_raised()
    }

    /// Resolves once every table has listed.
    pub async fn wait_listed(&self) {
        self.clusters.listed.wait().await;
        self.namespaces.listed.wait().await;
        self.stamped.listed.wait().await;
    }

    /// Every ClusterRandomSecret, as runner keys (no namespace).
    pub fn cluster_keys(&self) -> Vec<Key> {
        self.clusters
            .keys()
            .into_iter()
            .map(|n| Key::new("", &n))
            .collect()
    }

    /// Whether `key` was edited by someone else since our last write.
    pub fn drifted(&self, key: &Key, generation: i64) -> bool {
        self.written
            .read()
            .expect("written lock")
            .get(key)
            .is_some_and(|g| *g != generation)
    }

    /// A stamped RandomSecret is gone: nothing to compare with any more.
    pub fn forget(&self, key: &Key) {
        self.written.write().expect("written lock").remove(key);
    }

    pub fn wrote(&self, key: Key, generation: i64) {
        self.written
            .write()
            .expect("written lock")
            .insert(key, generation);
    }
}
