//! The RandomSecret cache: per object its identity, generation, spec as
//! compact JSON (decoded per reconcile) and a summary of its status.
//!
//! Our own status writes are applied here from their responses (write-through),
//! so a reconcile never reads a status older than the one this process wrote;
//! a watch event older than what the cache holds is ignored.

use super::previous::Previous;
use super::slim::RandomSecretObject;
use super::{Key, Uid};
use crate::api::cluster::Values;
use crate::api::{RandomSecretSpec, RandomSecretStatus};
use crate::shard::ShardLabels;
use crate::stamp::claim::Claim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher::Event;
use std::collections::HashMap;
use std::sync::RwLock;

/// One cached RandomSecret.
#[derive(Clone, Debug)]
pub struct Entry {
    pub uid: Uid,
    pub generation: i64,
    /// metadata.creationTimestamp, in seconds (rotateEvery counts from it).
    pub created: i64,
    pub deleting: bool,
    /// Its status describes an older generation than its spec: written by
    /// another writer after ours (a shard the RandomSecret has left, a
    /// deposed leader), or not yet by us. Turning so reconciles it again.
    behind: bool,
    /// As a number, to order events; 0 when not numeric (then never compared).
    resource_version: u64,
    epoch: u32,
    spec: Box<str>,
    pub status: Previous,
    /// What it keeps of its labels and annotations: None for most
    /// (boxed, so that costs them one word). Read with the spec, so the
    /// two always agree.
    pub labelled: Option<Box<Labelled>>,
}

/// What a cached RandomSecret keeps of its labels and annotations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labelled {
    /// Its claim to be stamped with shared values (`crate::stamp::claim`), unproven.
    pub shared: Option<Claim>,
    /// Its shard labels (`crate::shard`), when this replica is sharded.
    pub shard: ShardLabels,
}

impl Labelled {
    fn of(meta: &ObjectMeta) -> Option<Box<Self>> {
        let l = Labelled {
            shared: Claim::of(meta.labels.as_ref(), meta.annotations.as_ref())
                .filter(|c| c.values == Values::Shared),
            shard: crate::shard::labels_of(crate::shard::keys(), meta.labels.as_ref()),
        };
        (l != Labelled::default()).then(|| Box::new(l))
    }
}

impl Entry {
    fn new(meta: &ObjectMeta, spec: String, status: Option<&RandomSecretStatus>) -> Option<Self> {
        Some(Entry {
            uid: Uid::of(meta)?,
            generation: meta.generation.unwrap_or_default(),
            created: meta
                .creation_timestamp
                .as_ref()
                .map_or(0, |t| t.0.as_second()),
            deleting: meta.deletion_timestamp.is_some(),
            behind: status
                .and_then(|s| s.observed_generation)
                .is_some_and(|o| o < meta.generation.unwrap_or_default()),
            resource_version: resource_version(meta),
            epoch: 0,
            spec: spec.into_boxed_str(),
            status: Previous::of(status),
            labelled: Labelled::of(meta),
        })
    }

    fn from_object(obj: &RandomSecretObject) -> Option<Self> {
        let status: Option<RandomSecretStatus> = obj
            .status
            .clone()
            .and_then(|s| serde_json::from_value(s).ok());
        Entry::new(&obj.metadata, obj.spec.to_string(), status.as_ref())
    }

    /// The spec, decoded (a spec this version cannot read is a clear error).
    pub fn spec(&self) -> Result<RandomSecretSpec, serde_json::Error> {
        serde_json::from_str(&self.spec)
    }

    /// Whether an object that was `self` and is now `next` needs a reconcile:
    /// a new incarnation, a spec change, or a deletion; not a status write,
    /// unless it puts the status behind the spec (another writer's stale
    /// status over ours: ours must be written again).
    fn changed_for_reconcile(&self, next: &Entry) -> bool {
        self.uid != next.uid
            || self.generation != next.generation
            || self.deleting != next.deleting
            || (next.behind && !self.behind)
    }

    /// Whether `next` is older than `self` (an event overtaken by our own write).
    fn newer_than(&self, next: &Entry) -> bool {
        self.uid == next.uid
            && self.resource_version != 0
            && next.resource_version != 0
            && self.resource_version > next.resource_version
    }
}

fn resource_version(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

#[derive(Default)]
struct Inner {
    /// Boxed: a table of 10,000 entries has some 16,000 slots, and an empty
    /// slot costs the size of its value.
    map: HashMap<Key, Box<Entry>>,
    epoch: u32,
    listed: bool,
}

#[derive(Default)]
pub struct RandomSecrets(RwLock<Inner>);

impl RandomSecrets {
    /// Applies one watch event; returns the RandomSecrets to reconcile.
    pub fn handle(&self, ev: &Event<RandomSecretObject>) -> Vec<Key> {
        let mut inner = self.0.write().expect("randomsecrets lock");
        match ev {
            Event::Init => {
                inner.epoch += 1;
                Vec::new()
            }
            Event::InitApply(obj) | Event::Apply(obj) => {
                let key = Key::of(&obj.metadata);
                let Some(mut next) = Entry::from_object(obj) else {
                    return Vec::new();
                };
                next.epoch = inner.epoch;
                let trigger = match inner.map.get_mut(&key) {
                    Some(known) if known.newer_than(&next) => {
                        known.epoch = next.epoch;
                        false
                    }
                    Some(known) => {
                        let trigger = known.changed_for_reconcile(&next);
                        **known = next;
                        trigger
                    }
                    None => {
                        inner.map.insert(key.clone(), Box::new(next));
                        true
                    }
                };
                if trigger { vec![key] } else { Vec::new() }
            }
            // Reconciled once more when gone: deletion protection lets go of
            // its versions that nothing references (`reconciler::protection`).
            Event::Delete(obj) => {
                let key = Key::of(&obj.metadata);
                inner.map.remove(&key);
                vec![key]
            }
            Event::InitDone => {
                let epoch = inner.epoch;
                let gone: Vec<Key> = inner
                    .map
                    .iter()
                    .filter(|(_, e)| e.epoch != epoch)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in &gone {
                    inner.map.remove(k);
                }
                inner.listed = true;
                gone
            }
        }
    }

    /// Applies the response of our own write. Returns true when it shows a
    /// newer spec than `generation` (the one just reconciled): reconcile again.
    pub fn write_through(&self, obj: &RandomSecretObject, generation: i64) -> bool {
        let key = Key::of(&obj.metadata);
        let Some(mut next) = Entry::from_object(obj) else {
            return false;
        };
        let mut inner = self.0.write().expect("randomsecrets lock");
        match inner.map.get_mut(&key) {
            Some(known) if known.newer_than(&next) => {}
            Some(known) => {
                // Keeps its place in a relist under way (the relist decides whether it stays).
                next.epoch = known.epoch;
                **known = next.clone();
            }
            // Deleted meanwhile: the watch will say so; do not bring it back.
            None => return false,
        }
        next.generation != generation
    }

    /// Calls `f` with each RandomSecret not being deleted and what the cache
    /// keeps of its status, under the read lock: `f` copies what it needs
    /// and returns (a scrape must not hold back the watches).
    pub fn each_status(&self, mut f: impl FnMut(&Key, &Previous)) {
        let inner = self.0.read().expect("randomsecrets lock");
        for (key, entry) in &inner.map {
            if !entry.deleting {
                f(key, &entry.status);
            }
        }
    }

    pub fn get(&self, key: &Key) -> Option<Entry> {
        self.0
            .read()
            .expect("randomsecrets lock")
            .map
            .get(key)
            .map(|e| (**e).clone())
    }

    /// The RandomSecrets named `name`, in any namespace, that claim to be
    /// stamped with shared values: their key, uid and (unproven) claim,
    /// sorted by namespace. A scan: it runs when such a version is made.
    pub fn shared_named(&self, name: &str) -> Vec<(Key, Uid, Claim)> {
        let guard = self.0.read().expect("randomsecrets lock");
        let mut out: Vec<(Key, Uid, Claim)> = guard
            .map
            .iter()
            .filter(|(k, _)| k.name.as_str() == name)
            .filter_map(|(k, e)| Some((k.clone(), e.uid, e.labelled.as_ref()?.shared.clone()?)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    pub fn keys(&self) -> Vec<Key> {
        self.0
            .read()
            .expect("randomsecrets lock")
            .map
            .keys()
            .cloned()
            .collect()
    }

    /// Whether the first list has been applied.
    pub fn listed(&self) -> bool {
        self.0.read().expect("randomsecrets lock").listed
    }

    pub fn len(&self) -> usize {
        self.0.read().expect("randomsecrets lock").map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UID: &str = "6f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    /// An entry a RandomSecret, 100,000 of them in the benchmark: it fills
    /// one of jemalloc's 192-byte classes; one byte more costs 32.
    #[test]
    fn an_entry_fits_in_192_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 192);
    }

    fn obj(rv: &str, generation: i64, status: serde_json::Value) -> RandomSecretObject {
        serde_json::from_value(json!({
            "metadata": {"name": "db", "namespace": "n", "uid": UID, "resourceVersion": rv,
                "generation": generation, "creationTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": [{"manager": "kubectl"}], "annotations": {"big": "x"}},
            "spec": {"keys": {"password": {"length": 16}}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn spec_changes_trigger_and_status_writes_do_not() {
        let c = RandomSecrets::default();
        let key = Key::new("n", "db");
        c.handle(&Event::Init);
        assert_eq!(
            c.handle(&Event::InitApply(obj("10", 1, json!(null)))),
            std::slice::from_ref(&key)
        );
        c.handle(&Event::InitDone);
        assert!(c.listed());
        let e = c.get(&key).unwrap();
        assert_eq!(e.spec().unwrap().keys.unwrap()["password"].length, Some(16));
        assert_eq!(e.created, 1767225600);
        // A status write (same generation) does not trigger; a new generation does.
        assert!(
            c.handle(&Event::Apply(obj("11", 1, json!({"secretName": "db-x"}))))
                .is_empty()
        );
        assert_eq!(
            c.get(&key).unwrap().status.secret_name.as_deref(),
            Some("db-x")
        );
        assert_eq!(
            c.handle(&Event::Apply(obj("12", 2, json!(null)))),
            std::slice::from_ref(&key)
        );
    }

    /// Another writer's stale status over ours (a shard the RandomSecret
    /// left, writing after the shard it moved to) reconciles it again, once.
    #[test]
    fn a_status_put_behind_the_spec_triggers() {
        let c = RandomSecrets::default();
        let key = Key::new("n", "db");
        c.handle(&Event::Apply(obj("10", 2, json!(null))));
        // Ours, for generation 2: nothing to do.
        let ours = json!({"observedGeneration": 2, "secretName": "db-2"});
        assert!(c.handle(&Event::Apply(obj("11", 2, ours))).is_empty());
        // Theirs, for generation 1, after: again.
        let stale = json!({"observedGeneration": 1, "secretName": "db-1"});
        assert_eq!(
            c.handle(&Event::Apply(obj("12", 2, stale.clone()))),
            std::slice::from_ref(&key)
        );
        // Still behind (another status write of theirs): no more triggers.
        assert!(c.handle(&Event::Apply(obj("13", 2, stale))).is_empty());
    }

    #[test]
    fn an_event_older_than_our_write_is_ignored() {
        let c = RandomSecrets::default();
        let key = Key::new("n", "db");
        c.handle(&Event::Apply(obj("10", 1, json!(null))));
        let written: RandomSecretObject = serde_json::from_value(json!({
            "metadata": {"name": "db", "namespace": "n", "uid": UID, "resourceVersion": "12", "generation": 1},
            "spec": {"keys": {"password": {"length": 16}}},
            "status": {"secretName": "db-x"},
        }))
        .unwrap();
        assert!(!c.write_through(&written, 1));
        c.handle(&Event::Apply(obj("11", 1, json!(null))));
        assert_eq!(
            c.get(&key).unwrap().status.secret_name.as_deref(),
            Some("db-x")
        );
        assert!(
            c.write_through(&written, 0),
            "a newer generation than reconciled: again"
        );
    }

    #[test]
    fn relist_sweeps_what_it_did_not_show() {
        let c = RandomSecrets::default();
        c.handle(&Event::Apply(obj("10", 1, json!(null))));
        c.handle(&Event::Init);
        // Reconciled once more, gone: its held versions may be let go.
        assert_eq!(c.handle(&Event::InitDone), [Key::new("n", "db")]);
        assert!(c.is_empty());
    }

    #[test]
    fn a_deletion_reconciles_once_more() {
        let c = RandomSecrets::default();
        c.handle(&Event::Apply(obj("10", 1, json!(null))));
        assert_eq!(
            c.handle(&Event::Delete(obj("11", 1, json!(null)))),
            [Key::new("n", "db")]
        );
        assert!(c.is_empty());
    }

    #[test]
    fn a_shared_stamp_claim_is_kept_and_nothing_else_of_the_metadata() {
        let c = RandomSecrets::default();
        let stamped = |ns: &str, values: &str| -> RandomSecretObject {
            serde_json::from_value(json!({
                "metadata": {"name": "db", "namespace": ns, "uid": UID, "resourceVersion": "5",
                    "labels": {"randomsecret.io/cluster-randomsecret": "db", "team": "a"},
                    "annotations": {"randomsecret.io/template": "d1", "randomsecret.io/values": values,
                        "randomsecret.io/proof": "v1.00", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
                "spec": {},
            }))
            .unwrap()
        };
        let shared = stamped("a", "Shared");
        assert_eq!(
            shared.metadata.labels.as_ref().unwrap().len(),
            1,
            "only the stamp's label"
        );
        assert_eq!(
            shared.metadata.annotations.as_ref().unwrap().len(),
            3,
            "only the stamp's annotations"
        );
        c.handle(&Event::Apply(shared));
        c.handle(&Event::Apply(stamped("b", "PerNamespace")));
        c.handle(&Event::Apply(obj("10", 1, json!(null))));
        let found = c.shared_named("db");
        assert_eq!(found.len(), 1, "{found:?}");
        let (key, _, claim) = &found[0];
        assert_eq!(key, &Key::new("a", "db"));
        assert_eq!(
            (
                claim.cluster.as_str(),
                claim.template.as_deref(),
                claim.values
            ),
            ("db", Some("d1"), Values::Shared)
        );
        // Unstamped: no label, nothing kept.
        let plain = obj("10", 1, json!(null));
        assert_eq!(
            (plain.metadata.labels, plain.metadata.annotations),
            (None, None)
        );
        assert!(c.get(&Key::new("n", "db")).unwrap().labelled.is_none());
    }

    /// A sharded replica keeps each RandomSecret's shard label (its
    /// versions carry it), and still no other label.
    #[test]
    fn a_shard_label_is_kept_for_the_versions() {
        use crate::shard::{SHARD_KEY, Shard};
        // The process's shard, as the controller registers it at start (once
        // per test process: it changes only objects that carry the key).
        let _ = crate::shard::register(&Shard::parse(&format!("{SHARD_KEY}=s1")).unwrap());
        let c = RandomSecrets::default();
        let o: RandomSecretObject = serde_json::from_value(json!({
            "metadata": {"name": "db", "namespace": "s", "uid": UID, "resourceVersion": "5",
                "labels": {SHARD_KEY: "s1", "team": "a"}},
            "spec": {},
        }))
        .unwrap();
        assert_eq!(
            o.metadata.labels.as_ref().unwrap().len(),
            1,
            "only the shard's label"
        );
        c.handle(&Event::Apply(o));
        let kept = c.get(&Key::new("s", "db")).unwrap().labelled.unwrap();
        assert_eq!(kept.shard, [(SHARD_KEY.to_string(), "s1".to_string())]);
        assert_eq!(kept.shared, None);
    }
}
