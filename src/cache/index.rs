//! A small incremental multi-index fed by watch events: each object maps to a
//! few index keys (a ReplicaSet to the version names it references, a
//! workload to the RandomSecrets it tracks), and lookups go from key to
//! objects. Every change returns the keys it affected, so only the
//! RandomSecrets concerned are reconciled (a pod's status update that keeps
//! its references triggers nothing).
//!
//! A watch re-list is a mark-and-sweep per stream: `init` starts a new epoch,
//! `apply` marks, `init_done` removes what the re-list did not show.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::Arc;

/// Which watch stream an object came from (one per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    ReplicaSets,
    ControllerRevisions,
    Pods,
    Deployments,
    StatefulSets,
    DaemonSets,
    Rollouts,
    /// The holders of a custom kind (`--reference`), by its index.
    Custom(u16),
}

struct Slot<I> {
    stream: Stream,
    epoch: u32,
    keys: Box<[I]>,
}

/// What an indexed object carries besides its identity (its `Eq` and
/// `Hash`): when that changes, the stored object is replaced, never kept
/// twice (a pod orphaned by its StatefulSet is the same pod).
pub trait Payload {
    fn same_payload(&self, _other: &Self) -> bool {
        true
    }
}

impl Payload for &str {}

/// Each object is stored once (shared by `Arc` between the two maps), and a
/// key's objects are a small list (one inline: usually one or two). The
/// reverse map is keyed by the key's hash (8 bytes where a `Key` takes 32;
/// at 100,000 versions, 3 MiB): keys sharing a hash share a list, and
/// [`MultiIndex::get`] keeps the objects that do map to the key asked.
pub struct MultiIndex<O, I, S = RandomState> {
    objects: HashMap<Arc<O>, Slot<I>>,
    reverse: super::HashedLists<Arc<O>>,
    /// Per process: nobody can choose keys that share a hash.
    seed: S,
    epochs: HashMap<Stream, u32>,
    listed: Vec<Stream>,
}

impl<O, I, S: Default> Default for MultiIndex<O, I, S> {
    fn default() -> Self {
        Self {
            objects: HashMap::new(),
            reverse: HashMap::new(),
            seed: S::default(),
            epochs: HashMap::new(),
            listed: Vec::new(),
        }
    }
}

impl<O: Eq + Hash + Payload, I: Clone + Eq + Hash, S: BuildHasher> MultiIndex<O, I, S> {
    /// Records that `obj` (from `stream`) maps to `keys`, replacing what it
    /// mapped to before. Returns the keys that gained or lost it.
    pub fn apply(&mut self, stream: Stream, obj: O, keys: Vec<I>) -> Vec<I> {
        let mut unique: Vec<I> = Vec::with_capacity(keys.len());
        for k in keys {
            if !unique.contains(&k) {
                unique.push(k);
            }
        }
        let keys = unique;
        let epoch = self.epochs.get(&stream).copied().unwrap_or_default();
        let (obj, old) = match self.objects.get_key_value(&obj) {
            Some((known, slot)) if known.same_payload(&obj) => (known.clone(), slot.keys.to_vec()),
            // The same object with another payload (a pod orphaned: owners
            // change): forgotten, then stored anew; every key it had or has
            // is reported, the payload mattering to them.
            Some(_) => {
                let old = self.delete(&obj);
                let mut changed = self.apply(stream, obj, keys);
                changed.extend(
                    old.into_iter()
                        .filter(|k| !changed.contains(k))
                        .collect::<Vec<_>>(),
                );
                return changed;
            }
            None => (Arc::new(obj), Vec::new()),
        };
        let mut changed: Vec<I> = old.iter().filter(|k| !keys.contains(k)).cloned().collect();
        changed.extend(keys.iter().filter(|k| !old.contains(k)).cloned());
        if keys.is_empty() {
            self.delete(&obj);
            return changed;
        }
        for k in changed.iter() {
            if keys.contains(k) {
                let h = self.seed.hash_one(k);
                self.reverse.entry(h).or_default().push(obj.clone());
            } else {
                self.unlink(k, &obj);
            }
        }
        let keys = keys.into_boxed_slice();
        self.objects.insert(
            obj,
            Slot {
                stream,
                epoch,
                keys,
            },
        );
        changed
    }

    /// Forgets `obj`; returns the keys it mapped to.
    pub fn delete(&mut self, obj: &O) -> Vec<I> {
        let Some(slot) = self.objects.remove(obj) else {
            return Vec::new();
        };
        for k in slot.keys.iter() {
            self.unlink(k, obj);
        }
        slot.keys.into_vec()
    }

    /// Removes `obj` from `key`'s list: one entry, as it was pushed once
    /// per key (another key of the same hash may hold it too).
    fn unlink(&mut self, key: &I, obj: &O) {
        let h = self.seed.hash_one(key);
        super::remove_one(&mut self.reverse, h, |o| **o == *obj);
    }

    /// A (re-)list of `stream` starts: objects it does not show again are
    /// removed at `init_done`.
    pub fn init(&mut self, stream: Stream) {
        *self.epochs.entry(stream).or_default() += 1;
    }

    /// The list is complete: removes what it did not show; returns their keys.
    pub fn init_done(&mut self, stream: Stream) -> Vec<I> {
        let epoch = self.epochs.get(&stream).copied().unwrap_or_default();
        let gone: Vec<Arc<O>> = self
            .objects
            .iter()
            .filter(|(_, s)| s.stream == stream && s.epoch != epoch)
            .map(|(o, _)| o.clone())
            .collect();
        let mut changed = Vec::new();
        for o in gone {
            changed.extend(self.delete(&o));
        }
        if !self.listed.contains(&stream) {
            self.listed.push(stream);
        }
        changed
    }

    /// Applies one watch event of `stream`; `extract` gives the object's
    /// identity and index keys (None: nothing to index). Returns the keys affected.
    pub fn handle<K>(
        &mut self,
        stream: Stream,
        ev: &kube::runtime::watcher::Event<K>,
        extract: impl Fn(&K) -> Option<(O, Vec<I>)>,
    ) -> Vec<I> {
        use kube::runtime::watcher::Event;
        match ev {
            Event::Apply(o) | Event::InitApply(o) => match extract(o) {
                Some((obj, keys)) => self.apply(stream, obj, keys),
                None => Vec::new(),
            },
            Event::Delete(o) => extract(o)
                .map(|(obj, _)| self.delete(&obj))
                .unwrap_or_default(),
            Event::Init => {
                self.init(stream);
                Vec::new()
            }
            Event::InitDone => self.init_done(stream),
        }
    }

    /// Whether each of `streams` has completed its first list.
    pub fn listed(&self, streams: &[Stream]) -> bool {
        streams.iter().all(|s| self.listed.contains(s))
    }

    /// The objects that map to `key`.
    pub fn get(&self, key: &I) -> impl Iterator<Item = &O> {
        let list = self
            .reverse
            .get(&self.seed.hash_one(key))
            .map_or(&[][..], |l| &l[..]);
        list.iter()
            .enumerate()
            // Once each (an object two of whose keys share a hash is listed
            // twice), and only where it maps to `key` itself.
            .filter(move |(i, o)| {
                !list[..*i].iter().any(|p| Arc::ptr_eq(p, o))
                    && self
                        .objects
                        .get(&***o)
                        .is_some_and(|s| s.keys.contains(key))
            })
            .map(|(_, o)| &**o)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fixtures::Collide;
    use Stream::{Pods, ReplicaSets};

    fn sorted<'a>(it: impl Iterator<Item = &'a &'static str>) -> Vec<&'static str> {
        let mut v: Vec<_> = it.copied().collect();
        v.sort();
        v
    }

    #[test]
    fn apply_replace_and_delete_report_what_changed() {
        check_apply_replace_and_delete_report_what_changed::<RandomState>();
        check_apply_replace_and_delete_report_what_changed::<Collide>();
    }

    fn check_apply_replace_and_delete_report_what_changed<S: BuildHasher + Default>() {
        let mut ix: MultiIndex<&str, &str, S> = MultiIndex::default();
        assert_eq!(ix.apply(ReplicaSets, "rs1", vec!["s1", "s2"]), ["s1", "s2"]);
        assert_eq!(ix.apply(ReplicaSets, "rs2", vec!["s2"]), ["s2"]);
        assert_eq!(sorted(ix.get(&"s2")), vec!["rs1", "rs2"]);
        assert!(
            ix.apply(ReplicaSets, "rs1", vec!["s1", "s2"]).is_empty(),
            "no change, no trigger"
        );
        assert_eq!(ix.apply(ReplicaSets, "rs1", vec!["s3"]), ["s1", "s2", "s3"]);
        assert_eq!(sorted(ix.get(&"s2")), vec!["rs2"]);
        assert_eq!(ix.get(&"s1").count(), 0);
        assert_eq!(ix.delete(&"rs2"), ["s2"]);
        assert_eq!(ix.get(&"s2").count(), 0);
        assert_eq!(ix.apply(ReplicaSets, "rs1", vec![]), ["s3"]);
        assert!(ix.is_empty());
    }

    /// An object whose identity is its first field; the second is payload.
    #[derive(Debug, Clone)]
    struct Flagged(&'static str, bool);
    impl PartialEq for Flagged {
        fn eq(&self, o: &Self) -> bool {
            self.0 == o.0
        }
    }
    impl Eq for Flagged {}
    impl Hash for Flagged {
        fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
            self.0.hash(h)
        }
    }
    impl Payload for Flagged {
        fn same_payload(&self, o: &Self) -> bool {
            self.1 == o.1
        }
    }

    /// A change of payload (a pod orphaned, its `covered` flag cleared)
    /// replaces the object and is reported: never two entries for one
    /// identity, and its deletion leaves nothing behind.
    #[test]
    fn a_payload_change_replaces_the_object() {
        check_a_payload_change_replaces_the_object::<RandomState>();
        check_a_payload_change_replaces_the_object::<Collide>();
    }

    fn check_a_payload_change_replaces_the_object<S: BuildHasher + Default>() {
        let mut ix: MultiIndex<Flagged, &str, S> = MultiIndex::default();
        ix.apply(Pods, Flagged("p", true), vec!["s"]);
        assert_eq!(ix.apply(Pods, Flagged("p", false), vec!["s"]), ["s"]);
        assert!(ix.apply(Pods, Flagged("p", false), vec!["s"]).is_empty());
        assert_eq!(ix.get(&"s").map(|f| f.1).collect::<Vec<_>>(), [false]);
        assert_eq!(ix.len(), 1);
        let mut changed = ix.apply(Pods, Flagged("p", true), vec!["t"]);
        changed.sort();
        assert_eq!(changed, ["s", "t"]);
        assert_eq!(ix.get(&"s").count(), 0);
        assert_eq!(ix.delete(&Flagged("p", false)), ["t"]);
        assert!(ix.is_empty() && ix.get(&"t").count() == 0);
    }

    #[test]
    fn relist_sweeps_only_its_own_stream() {
        check_relist_sweeps_only_its_own_stream::<RandomState>();
        check_relist_sweeps_only_its_own_stream::<Collide>();
    }

    fn check_relist_sweeps_only_its_own_stream<S: BuildHasher + Default>() {
        let mut ix: MultiIndex<&str, &str, S> = MultiIndex::default();
        assert!(!ix.listed(&[ReplicaSets, Pods]));
        ix.init(ReplicaSets);
        ix.apply(ReplicaSets, "a", vec!["s"]);
        ix.apply(ReplicaSets, "b", vec!["t"]);
        assert!(ix.init_done(ReplicaSets).is_empty());
        ix.init(Pods);
        ix.apply(Pods, "c", vec!["s"]);
        ix.init_done(Pods);
        assert!(ix.listed(&[ReplicaSets, Pods]));
        // ReplicaSets re-list without "b" (deleted while the watch was down).
        ix.init(ReplicaSets);
        ix.apply(ReplicaSets, "a", vec!["s"]);
        assert_eq!(ix.init_done(ReplicaSets), ["t"]);
        assert_eq!(sorted(ix.get(&"s")), vec!["a", "c"]);
        assert_eq!(ix.len(), 2);
    }
}
