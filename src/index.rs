//! A small incremental multi-index fed by watch events: each object maps to a
//! few index keys (a ReplicaSet to the Secret names it references, a version
//! Secret to its RandomSecret), and lookups go from key to objects.
//!
//! Updates are incremental (`apply` / `delete`); a watch re-list is a
//! mark-and-sweep per stream (`init` / `init_done`), never a rebuild per event.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

pub trait Key: Clone + Eq + Hash {}
impl<T: Clone + Eq + Hash> Key for T {}

/// Which watch stream an object came from (one per kind and namespace scope).
pub type StreamId = u32;

/// Memory matters at tens of thousands of objects: each object is stored
/// once (shared by `Arc` between the two maps), and a key's objects are a
/// small `Vec` (usually one or two), not a `HashSet` with its spare buckets.
#[derive(Debug)]
pub struct MultiIndex<O: Key, I: Key> {
    objects: HashMap<Arc<O>, (StreamId, Vec<I>)>,
    reverse: HashMap<I, Vec<Arc<O>>>,
    relisting: HashMap<StreamId, HashSet<Arc<O>>>,
    synced: HashSet<StreamId>,
}

impl<O: Key, I: Key> Default for MultiIndex<O, I> {
    fn default() -> Self {
        Self {
            objects: HashMap::new(),
            reverse: HashMap::new(),
            relisting: HashMap::new(),
            synced: HashSet::new(),
        }
    }
}

impl<O: Key, I: Key> MultiIndex<O, I> {
    /// Records that `obj` (from `stream`) maps to `keys`, replacing what it mapped to before.
    pub fn apply(&mut self, stream: StreamId, obj: O, keys: Vec<I>) {
        // The stored Arc when the object is known (no second copy of it).
        let obj = match self.objects.get_key_value(&obj) {
            Some((known, _)) => known.clone(),
            None => Arc::new(obj),
        };
        if let Some(seen) = self.relisting.get_mut(&stream) {
            seen.insert(obj.clone());
        }
        self.remove_reverse(&obj);
        if keys.is_empty() {
            self.objects.remove(&obj);
            return;
        }
        let mut keys = keys;
        keys.shrink_to_fit();
        for k in &keys {
            let holders = self.reverse.entry(k.clone()).or_default();
            if !holders.contains(&obj) {
                holders.push(obj.clone());
            }
        }
        self.objects.insert(obj, (stream, keys));
    }

    pub fn delete(&mut self, obj: &O) {
        self.remove_reverse(obj);
        self.objects.remove(obj);
    }

    /// A re-list of `stream` starts: objects it does not list again are removed at `init_done`.
    pub fn init(&mut self, stream: StreamId) {
        self.relisting.insert(stream, HashSet::new());
    }

    pub fn init_done(&mut self, stream: StreamId) {
        let seen = self.relisting.remove(&stream).unwrap_or_default();
        let gone: Vec<Arc<O>> = self
            .objects
            .iter()
            .filter(|(o, (s, _))| *s == stream && !seen.contains(*o))
            .map(|(o, _)| o.clone())
            .collect();
        for o in gone {
            self.delete(&o);
        }
        self.synced.insert(stream);
    }

    /// Applies one watch event of `stream`; `extract` gives an object's key and index keys.
    pub fn handle<K>(
        &mut self,
        stream: StreamId,
        ev: &kube::runtime::watcher::Event<K>,
        extract: impl Fn(&K) -> (O, Vec<I>),
    ) {
        use kube::runtime::watcher::Event;
        match ev {
            Event::Apply(o) | Event::InitApply(o) => {
                let (obj, keys) = extract(o);
                self.apply(stream, obj, keys);
            }
            Event::Delete(o) => self.delete(&extract(o).0),
            Event::Init => self.init(stream),
            Event::InitDone => self.init_done(stream),
        }
    }

    /// Whether each of `streams` has completed its first list.
    pub fn synced(&self, streams: impl IntoIterator<Item = StreamId>) -> bool {
        streams.into_iter().all(|s| self.synced.contains(&s))
    }

    /// The objects that map to `key`.
    pub fn get(&self, key: &I) -> impl Iterator<Item = &O> {
        self.reverse.get(key).into_iter().flatten().map(|o| &**o)
    }

    /// The keys `obj` maps to.
    pub fn keys_of(&self, obj: &O) -> &[I] {
        self.objects
            .get(obj)
            .map(|(_, k)| k.as_slice())
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    fn remove_reverse(&mut self, obj: &O) {
        if let Some((_, keys)) = self.objects.get(obj) {
            for k in keys {
                if let Some(holders) = self.reverse.get_mut(k) {
                    holders.retain(|o| **o != *obj);
                    if holders.is_empty() {
                        self.reverse.remove(k);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted<'a>(it: impl Iterator<Item = &'a &'static str>) -> Vec<&'static str> {
        let mut v: Vec<_> = it.copied().collect();
        v.sort();
        v
    }

    #[test]
    fn apply_replace_and_delete() {
        let mut ix: MultiIndex<&str, &str> = MultiIndex::default();
        ix.apply(0, "rs1", vec!["s1", "s2"]);
        ix.apply(0, "rs2", vec!["s2"]);
        assert_eq!(sorted(ix.get(&"s2")), vec!["rs1", "rs2"]);
        ix.apply(0, "rs1", vec!["s3"]);
        assert_eq!(sorted(ix.get(&"s2")), vec!["rs2"]);
        assert_eq!(sorted(ix.get(&"s1")), Vec::<&str>::new());
        ix.delete(&"rs2");
        assert_eq!(ix.get(&"s2").count(), 0);
        assert_eq!(ix.keys_of(&"rs1"), &["s3"]);
        ix.apply(0, "rs1", vec![]);
        assert!(ix.is_empty());
    }

    #[test]
    fn relist_sweeps_only_its_own_stream() {
        let mut ix: MultiIndex<&str, &str> = MultiIndex::default();
        assert!(!ix.synced([0, 1]));
        ix.init(0);
        ix.apply(0, "a", vec!["s"]);
        ix.apply(0, "b", vec!["s"]);
        ix.init_done(0);
        ix.init(1);
        ix.apply(1, "c", vec!["s"]);
        ix.init_done(1);
        assert!(ix.synced([0, 1]));
        // Stream 0 re-lists without "b" (deleted while the watch was down).
        ix.init(0);
        ix.apply(0, "a", vec!["s"]);
        ix.init_done(0);
        assert_eq!(sorted(ix.get(&"s")), vec!["a", "c"]);
    }
}

/// The indexes the reconciler reads, fed by the watch streams (see `manager`).
#[derive(Default)]
pub struct Indexes {
    /// Holder (ReplicaSet, ControllerRevision, Pod) -> (namespace, Secret name) it references.
    pub refs: std::sync::RwLock<MultiIndex<crate::references::Holder, (String, String)>>,
    /// (namespace, version Secret) -> (namespace, RandomSecret name), from the Secret's label.
    pub versions: std::sync::RwLock<MultiIndex<(String, String), (String, String)>>,
    /// Workload (tracking mode) -> (namespace, RandomSecret name) it tracks.
    pub tracking: std::sync::RwLock<MultiIndex<crate::tracking::Workload, (String, String)>>,
    pub ref_streams: Vec<StreamId>,
    pub version_streams: Vec<StreamId>,
}

impl Indexes {
    /// Whether every stream has listed once: before that, nothing may be released.
    pub fn synced(&self) -> bool {
        self.refs
            .read()
            .expect("index lock")
            .synced(self.ref_streams.iter().copied())
            && self
                .versions
                .read()
                .expect("index lock")
                .synced(self.version_streams.iter().copied())
    }

    /// Who references Secret `name` in `namespace`.
    pub fn holders(&self, namespace: &str, name: &str) -> Vec<crate::references::Holder> {
        let key = (namespace.to_string(), name.to_string());
        self.refs
            .read()
            .expect("index lock")
            .get(&key)
            .cloned()
            .collect()
    }

    /// The version Secrets labelled as belonging to RandomSecret `name`.
    pub fn versions_of(&self, namespace: &str, name: &str) -> Vec<String> {
        let key = (namespace.to_string(), name.to_string());
        self.versions
            .read()
            .expect("index lock")
            .get(&key)
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// The workloads that track RandomSecret `name`.
    pub fn tracking(&self, namespace: &str, name: &str) -> Vec<crate::tracking::Workload> {
        let key = (namespace.to_string(), name.to_string());
        self.tracking
            .read()
            .expect("index lock")
            .get(&key)
            .cloned()
            .collect()
    }

    /// The RandomSecret a version Secret belongs to, if it is one.
    pub fn owner_of(&self, namespace: &str, secret: &str) -> Option<String> {
        let key = (namespace.to_string(), secret.to_string());
        self.versions
            .read()
            .expect("index lock")
            .keys_of(&key)
            .first()
            .map(|(_, rs)| rs.clone())
    }
}
