//! The cache of our Secrets (selected by the managed-by label, metadata
//! only, never data): per version its identity, labels, creation time and
//! owners, compact; and which versions each RandomSecret has.
//!
//! Each entry records whether the Secret proves we created it
//! (`crate::proof`): labels alone prove nothing.
//!
//! Our own creates and patches are applied here from their responses
//! (metadata only), so the next reconcile sees them at once, and the watch
//! event that follows, carrying the same resourceVersion, triggers nothing.

use super::holders::HolderKind;
use super::{Key, Name, Uid};
use crate::api::{
    ANNOTATION_CREATED, FINALIZER_IN_USE, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY,
};
use crate::proof::{Proof, ProofKey};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::watcher::Event;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::RwLock;

/// An owner reference: ours (a RandomSecret or a holder) compact, any other
/// kept whole (retention never changes those).
#[derive(Clone, Debug, PartialEq)]
pub enum Owner {
    RandomSecret {
        name: Name,
        uid: Uid,
        controller: Option<bool>,
    },
    Holder {
        kind: HolderKind,
        name: Name,
        uid: Uid,
        controller: Option<bool>,
    },
    Other(Box<OwnerReference>),
}

const RANDOMSECRET_API_VERSION: &str = crate::api::API_VERSION;

impl Owner {
    pub fn of(o: &OwnerReference) -> Self {
        let uid = Uid::parse(&o.uid).filter(|_| o.block_owner_deletion.is_none());
        let holder = HolderKind::of(&o.kind, &o.api_version);
        match (uid, holder) {
            (Some(uid), _)
                if o.kind == "RandomSecret" && o.api_version == RANDOMSECRET_API_VERSION =>
            {
                Owner::RandomSecret {
                    name: o.name.as_str().into(),
                    uid,
                    controller: o.controller,
                }
            }
            (Some(uid), Some(kind)) => Owner::Holder {
                kind,
                name: o.name.as_str().into(),
                uid,
                controller: o.controller,
            },
            _ => Owner::Other(Box::new(o.clone())),
        }
    }

    pub fn to_reference(&self) -> OwnerReference {
        match self {
            Owner::RandomSecret {
                name,
                uid,
                controller,
            } => OwnerReference {
                api_version: RANDOMSECRET_API_VERSION.into(),
                kind: "RandomSecret".into(),
                name: name.to_string(),
                uid: uid.to_string(),
                controller: *controller,
                block_owner_deletion: None,
            },
            Owner::Holder {
                kind,
                name,
                uid,
                controller,
            } => OwnerReference {
                api_version: kind.api_version().into(),
                kind: kind.as_str().into(),
                name: name.to_string(),
                uid: uid.to_string(),
                controller: *controller,
                block_owner_deletion: None,
            },
            Owner::Other(o) => (**o).clone(),
        }
    }
}

/// A missing time.
const NONE: i64 = i64::MIN;

/// One of our Secrets, as cached.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    pub uid: Uid,
    pub resource_version: Name,
    /// Labelled `app.kubernetes.io/managed-by: randomsecret`.
    pub managed: bool,
    /// The `randomsecret.io/name` label.
    pub randomsecret: Option<Name>,
    /// The `randomsecret.io/hash` label, fingerprinted ([`label_hash`]): it
    /// is only ever compared, and 8 bytes keep a version in 128.
    hash: u64,
    /// Our creation annotation (to order versions, to the nanosecond), else
    /// creationTimestamp; in nanoseconds, `NONE` when neither.
    created: i64,
    /// creationTimestamp as stored (whole seconds, for the status); `NONE` when absent.
    creation_timestamp: i64,
    pub owners: Box<[Owner]>,
    /// What its proof annotation says, checked against the metadata.
    pub proof: Proof,
    /// Checked whole by this process (type, data, immutable), or created
    /// by it: a proof copied onto another Secret fails that check.
    pub verified: bool,
    /// From its record (`crate::version::record`), when it verifies:
    pub record: Recorded,
    /// Its finalizers and whether it is being deleted.
    pub deletion: Deletion,
    epoch: u32,
}

/// What deletion protection needs of a Secret's finalizers and deletion,
/// in one byte (it fits in a version's padding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deletion(u8);

impl Deletion {
    const PROTECTED: u8 = 1;
    const OTHERS: u8 = 2;
    const DELETING: u8 = 4;

    pub fn of(meta: &ObjectMeta) -> Self {
        let mut bits = 0;
        for f in meta.finalizers.iter().flatten() {
            bits |= if f == FINALIZER_IN_USE {
                Self::PROTECTED
            } else {
                Self::OTHERS
            };
        }
        if meta.deletion_timestamp.is_some() {
            bits |= Self::DELETING;
        }
        Deletion(bits)
    }

    /// It holds our finalizer (`randomsecret.io/in-use`).
    pub fn protected(self) -> bool {
        self.0 & Self::PROTECTED != 0
    }

    /// It holds finalizers of others too (a patch of ours must keep them).
    pub fn others(self) -> bool {
        self.0 & Self::OTHERS != 0
    }

    /// Someone deleted it (a person, the garbage collector): it is Terminating.
    pub fn deleting(self) -> bool {
        self.0 & Self::DELETING != 0
    }
}

/// The few facts of a version's record the reconciler needs without reading
/// the Secret, in 16 bytes a version (most rotate nothing, or are the first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// [`Lineage::seed`](crate::version::carry::Lineage::seed); 0 without a record.
    pub seed: u32,
    /// Its values could not be carried over from the version it superseded.
    pub uncarried: bool,
    /// It has no record at all: made before carry-over (an invalid one is
    /// not missing, and is never replaced).
    pub missing: bool,
    /// What only some versions record, boxed so the others pay 8 bytes.
    more: Option<Box<More>>,
}

/// The rarer parts of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
struct More {
    /// The keys this version rotated, joined by ',' (no data key has one).
    rotated: Name,
    /// When its first certificate ends (unix seconds), with one.
    not_after: Option<i64>,
}

impl Recorded {
    fn of(meta: &ObjectMeta, key: &ProofKey) -> Self {
        use crate::version::record::{ANNOTATION_LINEAGE, Record};
        let text = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_LINEAGE));
        let (Some(ns), Some(name)) = (meta.namespace.as_deref(), meta.name.as_deref()) else {
            return Recorded::default();
        };
        match Record::read(key, ns, name, text.map(String::as_str)) {
            Ok(r) => Recorded {
                seed: r.lineage.seed(),
                more: (!r.rotated.is_empty() || r.not_after.is_some()).then(|| {
                    Box::new(More {
                        rotated: r.rotated.join(",").into(),
                        not_after: r.not_after,
                    })
                }),
                uncarried: r.uncarried,
                missing: false,
            },
            Err(crate::version::record::Unusable::Missing) => Recorded {
                missing: true,
                ..Default::default()
            },
            Err(_) => Recorded::default(),
        }
    }

    /// The keys this version rotated.
    pub fn rotated_keys(&self) -> Vec<String> {
        self.more
            .iter()
            .flat_map(|m| m.rotated.split(','))
            .filter(|k| !k.is_empty())
            .map(String::from)
            .collect()
    }

    /// When its first certificate ends (unix seconds), if it holds one.
    pub fn not_after(&self) -> Option<i64> {
        self.more.as_ref()?.not_after
    }
}

impl Version {
    /// From a Secret's metadata (a watch event, a write's response, a GET).
    pub fn of(meta: &ObjectMeta, key: &ProofKey) -> Option<Self> {
        let label = |k: &str| meta.labels.as_ref()?.get(k).map(|v| v.as_str());
        let stamp = meta.creation_timestamp.as_ref().map(|t| t.0);
        Some(Version {
            uid: Uid::of(meta)?,
            resource_version: meta.resource_version.as_deref().unwrap_or_default().into(),
            managed: label(LABEL_MANAGED_BY) == Some(MANAGED_BY),
            randomsecret: label(LABEL_NAME).map(Into::into),
            hash: label_hash(label(LABEL_HASH)),
            created: meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_CREATED)?.parse::<Timestamp>().ok())
                .or(stamp)
                .and_then(|t| i64::try_from(t.as_nanosecond()).ok())
                .unwrap_or(NONE),
            creation_timestamp: stamp.map_or(NONE, |t| t.as_second()),
            owners: meta
                .owner_references
                .iter()
                .flatten()
                .map(Owner::of)
                .collect(),
            proof: key.check_metadata(meta),
            verified: false,
            record: Recorded::of(meta, key),
            deletion: Deletion::of(meta),
            epoch: 0,
        })
    }

    /// Whether its `randomsecret.io/hash` label is `hash`.
    pub fn has_hash(&self, hash: &str) -> bool {
        self.hash == label_hash(Some(hash))
    }

    pub fn owner_references(&self) -> Vec<OwnerReference> {
        self.owners.iter().map(Owner::to_reference).collect()
    }

    /// creationTimestamp as stored.
    pub fn created_time(&self) -> Option<Time> {
        (self.creation_timestamp != NONE)
            .then(|| {
                Timestamp::from_second(self.creation_timestamp)
                    .ok()
                    .map(Time)
            })
            .flatten()
    }

    /// When it was created, as precisely as known (to order versions).
    pub fn created(&self) -> Option<Timestamp> {
        (self.created != NONE)
            .then(|| Timestamp::from_nanosecond(i128::from(self.created)).ok())
            .flatten()
    }
}

/// A label's value, hashed as the status summary hashes names
/// ([`super::previous::name_hash`]); 0 when absent.
fn label_hash(value: Option<&str>) -> u64 {
    value.map_or(0, |v| super::previous::name_hash(v).max(1))
}

#[derive(Default)]
struct Inner<S = std::hash::RandomState> {
    /// Boxed, as in the RandomSecret cache: empty slots stay small.
    versions: HashMap<Key, Box<Version>>,
    /// RandomSecret (its key hashed by `seed`, 8 bytes where a key takes
    /// 32) -> the names of the Secrets labelled as its versions (one,
    /// mostly: inline). Two keys may share a hash: lookups check each
    /// version's namespace and label ([`Inner::versions_of`]).
    by_randomsecret: super::HashedLists<Name>,
    /// Per process: nobody can choose names that share a hash.
    seed: S,
    epoch: u32,
    listed: bool,
}

impl<S: BuildHasher> Inner<S> {
    /// Stores `v` at `key`; returns the RandomSecrets concerned when it
    /// changed anything (the same resourceVersion again changes nothing).
    fn put(&mut self, key: Key, mut v: Version) -> Vec<Key> {
        if let Some(known) = self.versions.get_mut(&key)
            && known.uid == v.uid
        {
            // The same object: what was verified stays verified.
            v.verified |= known.verified;
            if known.resource_version == v.resource_version {
                known.epoch = v.epoch;
                known.verified = v.verified;
                return Vec::new();
            }
        }
        let mut affected = self.remove(&key);
        if let Some(rs) = &v.randomsecret {
            let owner = key.sibling(rs);
            self.by_randomsecret
                .entry(self.seed.hash_one(&owner))
                .or_default()
                .push(key.name.clone());
            if !affected.contains(&owner) {
                affected.push(owner);
            }
        }
        self.versions.insert(key, Box::new(v));
        affected
    }

    fn remove(&mut self, key: &Key) -> Vec<Key> {
        let Some(old) = self.versions.remove(key) else {
            return Vec::new();
        };
        let Some(rs) = &old.randomsecret else {
            return Vec::new();
        };
        let owner = key.sibling(rs);
        let h = self.seed.hash_one(&owner);
        // One entry: a namespace sharing the hash may list the same name.
        super::remove_one(&mut self.by_randomsecret, h, |n| *n == key.name);
        vec![owner]
    }

    /// The cached versions of RandomSecret `rs`, by name.
    fn versions_of(&self, rs: &Key) -> Vec<(Name, Version)> {
        let mut found: Vec<(Name, Version)> = Vec::new();
        for n in self
            .by_randomsecret
            .get(&self.seed.hash_one(rs))
            .into_iter()
            .flatten()
        {
            let Some(v) = self.versions.get(&rs.sibling(n)) else {
                continue;
            };
            if v.randomsecret.as_deref() == Some(&*rs.name) && !found.iter().any(|(f, _)| f == n) {
                found.push((n.clone(), (**v).clone()));
            }
        }
        found
    }
}

pub struct Secrets {
    inner: RwLock<Inner>,
    key: ProofKey,
}

impl Secrets {
    pub fn new(key: ProofKey) -> Self {
        Secrets {
            inner: RwLock::default(),
            key,
        }
    }

    pub fn key(&self) -> &ProofKey {
        &self.key
    }

    /// A Secret's metadata as this cache would hold it.
    pub fn read(&self, meta: &ObjectMeta) -> Option<Version> {
        Version::of(meta, &self.key)
    }

    /// Applies one watch event of the metadata-only Secret watch; returns the
    /// RandomSecrets to reconcile.
    pub fn handle(
        &self,
        ev: &Event<kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Secret>>,
    ) -> Vec<Key> {
        let mut inner = self.inner.write().expect("secrets lock");
        match ev {
            Event::Init => {
                inner.epoch += 1;
                Vec::new()
            }
            Event::InitApply(s) | Event::Apply(s) => match self.read(&s.metadata) {
                Some(mut v) => {
                    v.epoch = inner.epoch;
                    inner.put(Key::of(&s.metadata), v)
                }
                None => Vec::new(),
            },
            Event::Delete(s) => inner.remove(&Key::of(&s.metadata)),
            Event::InitDone => {
                let epoch = inner.epoch;
                let gone: Vec<Key> = inner
                    .versions
                    .iter()
                    .filter(|(_, v)| v.epoch != epoch)
                    .map(|(k, _)| k.clone())
                    .collect();
                inner.listed = true;
                gone.iter().flat_map(|k| inner.remove(k)).collect()
            }
        }
    }

    /// Applies the metadata of our own write's response (create or patch),
    /// or of a Secret read whole; `verified`: created by us, or checked whole.
    pub fn write_through(&self, meta: &ObjectMeta, verified: bool) {
        if let Some(mut v) = self.read(meta) {
            let mut inner = self.inner.write().expect("secrets lock");
            v.epoch = inner.epoch;
            v.verified = verified;
            inner.put(Key::of(meta), v);
        }
    }

    /// Applies the metadata of a Secret read again (after a lost race): only
    /// over the cached entry of the same object, and only if newer. Never
    /// inserts, since the watch may have shown its deletion meanwhile.
    pub fn refresh(&self, meta: &ObjectMeta) {
        let (Some(uid), Some(fresh)) = (Uid::of(meta), self.read(meta)) else {
            return;
        };
        let key = Key::of(meta);
        let mut inner = self.inner.write().expect("secrets lock");
        let newer = inner.versions.get(&key).is_some_and(|known| {
            known.uid == uid && newer_version(&known.resource_version, &fresh.resource_version)
        });
        if newer {
            let epoch = inner.epoch;
            inner.put(key, Version { epoch, ..fresh });
        }
    }

    /// Marks the cached entry verified if it is the object `meta` describes
    /// (same uid and resourceVersion); a read never inserts or replaces,
    /// since the watch may already have shown a newer object.
    pub fn mark_verified(&self, meta: &ObjectMeta) {
        let Some(uid) = Uid::of(meta) else { return };
        let rv = meta.resource_version.as_deref().unwrap_or_default();
        let mut inner = self.inner.write().expect("secrets lock");
        if let Some(v) = inner.versions.get_mut(&Key::of(meta))
            && v.uid == uid
            && v.resource_version == rv
        {
            v.verified = true;
        }
    }

    /// Our own delete.
    pub fn forget(&self, key: &Key) {
        self.inner.write().expect("secrets lock").remove(key);
    }

    pub fn get(&self, key: &Key) -> Option<Version> {
        self.inner
            .read()
            .expect("secrets lock")
            .versions
            .get(key)
            .map(|v| (**v).clone())
    }

    /// The Secrets labelled as versions of RandomSecret `rs`, with their metadata.
    pub fn versions_of(&self, rs: &Key) -> Vec<(Name, Version)> {
        self.inner.read().expect("secrets lock").versions_of(rs)
    }

    /// When each of `versions` was created (whole seconds, as stored), where
    /// it is cached: in one pass under the lock.
    pub fn created_seconds(&self, versions: &[Key]) -> Vec<Option<i64>> {
        let inner = self.inner.read().expect("secrets lock");
        versions
            .iter()
            .map(|k| {
                let v = inner.versions.get(k)?;
                (v.creation_timestamp != NONE).then_some(v.creation_timestamp)
            })
            .collect()
    }

    /// Every cached version that holds a certificate, by its verified
    /// record: (Secret, its RandomSecret's name, when the first certificate
    /// ends in unix seconds).
    pub fn certificate_ends(&self) -> Vec<(Key, Name, i64)> {
        let inner = self.inner.read().expect("secrets lock");
        inner
            .versions
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.randomsecret.clone()?, v.record.not_after()?)))
            .collect()
    }

    /// The RandomSecrets with a version being deleted that our finalizer holds.
    pub fn held_back(&self) -> Vec<Key> {
        let inner = self.inner.read().expect("secrets lock");
        let mut keys: Vec<Key> = inner
            .versions
            .iter()
            .filter(|(_, v)| v.deletion.deleting() && v.deletion.protected())
            .filter_map(|(k, v)| Some(k.sibling(v.randomsecret.as_deref()?)))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// The RandomSecret a cached Secret is labelled as a version of.
    pub fn randomsecret_of(&self, secret: &Key) -> Option<Key> {
        let inner = self.inner.read().expect("secrets lock");
        let rs = inner.versions.get(secret)?.randomsecret.as_deref()?;
        Some(secret.sibling(rs))
    }

    pub fn listed(&self) -> bool {
        self.inner.read().expect("secrets lock").listed
    }

    pub fn len(&self) -> usize {
        self.inner.read().expect("secrets lock").versions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether resourceVersion `b` is newer than `a`. They are opaque to
/// clients, but etcd's are increasing integers; anything else counts as
/// newer only when different.
fn newer_version(a: &str, b: &str) -> bool {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => b > a,
        _ => a != b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::PartialObjectMeta;
    use serde_json::json;

    const UID: &str = "6f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
    const RS_UID: &str = "0f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    /// One entry a version, 10,000 of them in the benchmark: the record's
    /// facts add 16 bytes, not a string's 24 and more.
    #[test]
    fn a_record_costs_a_version_16_bytes() {
        assert_eq!(std::mem::size_of::<Recorded>(), 16);
    }

    /// A version fills one of jemalloc's 128-byte classes (a 16-byte-aligned
    /// uid, two compact strings, the hash label's fingerprint; deletion
    /// protection's facts in the padding): one byte more costs 32.
    #[test]
    fn a_version_fits_in_128_bytes() {
        assert_eq!(std::mem::size_of::<Version>(), 128);
    }

    fn meta(name: &str, rv: &str) -> ObjectMeta {
        serde_json::from_value(json!({
            "name": name, "namespace": "n", "uid": UID, "resourceVersion": rv,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {LABEL_MANAGED_BY: MANAGED_BY, LABEL_NAME: "db", LABEL_HASH: "tmm2ctc5b4"},
            "annotations": {ANNOTATION_CREATED: "2026-01-01T00:00:00.123456789Z"},
            "ownerReferences": [
                {"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "name": "db", "uid": RS_UID, "controller": true},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": UID},
                {"apiVersion": "example.com/v1", "kind": "Thing", "name": "t", "uid": "t", "blockOwnerDeletion": true}],
        }))
        .unwrap()
    }

    fn event(m: ObjectMeta) -> Event<PartialObjectMeta<k8s_openapi::api::core::v1::Secret>> {
        Event::Apply(PartialObjectMeta {
            metadata: m,
            ..Default::default()
        })
    }

    #[test]
    fn owner_references_round_trip_compactly() {
        let m = meta("db-tmm2ctc5b4", "1");
        let v = Version::of(&m, &ProofKey::generate().unwrap()).unwrap();
        assert!(matches!(v.owners[0], Owner::RandomSecret { .. }));
        assert!(matches!(
            v.owners[1],
            Owner::Holder {
                kind: HolderKind::ReplicaSet,
                ..
            }
        ));
        assert!(matches!(v.owners[2], Owner::Other(_)));
        assert_eq!(v.owner_references(), m.owner_references.unwrap());
        assert_eq!(v.created().unwrap().subsec_nanosecond(), 123456789);
        assert_eq!(v.created_time(), m.creation_timestamp);
        assert!(v.managed && v.has_hash("tmm2ctc5b4") && !v.has_hash("tmm2ctc5b5"));
    }

    /// A Secret read again after a lost race updates only the same object,
    /// only forward, and never brings back one the watch showed deleted.
    #[test]
    fn a_refresh_never_inserts_nor_goes_back() {
        let c = Secrets::new(ProofKey::generate().unwrap());
        let key = Key::new("n", "db-tmm2ctc5b4");
        c.refresh(&meta("db-tmm2ctc5b4", "5"));
        assert!(c.get(&key).is_none(), "inserted by a refresh");
        c.handle(&event(meta("db-tmm2ctc5b4", "7")));
        c.refresh(&meta("db-tmm2ctc5b4", "6"));
        assert_eq!(&*c.get(&key).unwrap().resource_version, "7");
        c.refresh(&meta("db-tmm2ctc5b4", "8"));
        assert_eq!(&*c.get(&key).unwrap().resource_version, "8");
        let mut other = meta("db-tmm2ctc5b4", "9");
        other.uid = Some("0f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5c".into());
        c.refresh(&other);
        assert_eq!(
            &*c.get(&key).unwrap().resource_version,
            "8",
            "another object"
        );
    }

    /// RandomSecrets whose keys share a hash (all of them, under
    /// `Collide`) share a list of names: each still finds its own versions
    /// only, in its own namespace, and a removal takes only the one removed.
    #[test]
    fn randomsecrets_sharing_a_hash_each_find_their_own_versions() {
        let key = ProofKey::generate().unwrap();
        let mut inner: Inner<crate::testing::fixtures::Collide> = Inner::default();
        let version = |ns: &str, name: &str, rs: &str| {
            let mut m = meta(name, "1");
            m.namespace = Some(ns.into());
            m.labels
                .as_mut()
                .unwrap()
                .insert(LABEL_NAME.into(), rs.into());
            (Key::of(&m), Version::of(&m, &key).unwrap())
        };
        for (ns, name, rs) in [
            ("n", "db-tmm2ctc5b4", "db"),
            ("m", "db-tmm2ctc5b4", "db"),
            ("n", "db-ggggcccc44", "db"),
            ("n", "web-tmm2ctc5b4", "web"),
        ] {
            let (k, v) = version(ns, name, rs);
            inner.put(k, v);
        }
        let names = |inner: &Inner<_>, ns: &str, rs: &str| {
            let mut n: Vec<String> = inner
                .versions_of(&Key::new(ns, rs))
                .into_iter()
                .map(|(n, _)| n.to_string())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(&inner, "n", "db"), ["db-ggggcccc44", "db-tmm2ctc5b4"]);
        assert_eq!(names(&inner, "m", "db"), ["db-tmm2ctc5b4"]);
        assert_eq!(names(&inner, "n", "web"), ["web-tmm2ctc5b4"]);
        assert!(names(&inner, "m", "web").is_empty());
        inner.remove(&Key::new("m", "db-tmm2ctc5b4"));
        assert!(names(&inner, "m", "db").is_empty());
        assert_eq!(names(&inner, "n", "db"), ["db-ggggcccc44", "db-tmm2ctc5b4"]);
    }

    #[test]
    fn versions_are_indexed_by_randomsecret_and_our_writes_do_not_trigger_twice() {
        let c = Secrets::new(ProofKey::generate().unwrap());
        let rs = Key::new("n", "db");
        let m = meta("db-tmm2ctc5b4", "5");
        c.write_through(&m, true);
        assert_eq!(c.versions_of(&rs).len(), 1);
        assert!(
            c.handle(&event(m.clone())).is_empty(),
            "the event of our own write"
        );
        assert_eq!(
            c.handle(&event(meta("db-tmm2ctc5b4", "6"))),
            std::slice::from_ref(&rs)
        );
        assert!(
            c.get(&rs.sibling("db-tmm2ctc5b4")).unwrap().verified,
            "a later event of the same object keeps it verified"
        );
        assert_eq!(
            c.randomsecret_of(&rs.sibling("db-tmm2ctc5b4")),
            Some(rs.clone())
        );
        c.forget(&rs.sibling("db-tmm2ctc5b4"));
        assert!(c.versions_of(&rs).is_empty());
        // A relist that no longer shows a version reports its RandomSecret.
        c.handle(&event(meta("db-tmm2ctc5b4", "7")));
        c.handle(&Event::Init);
        assert_eq!(c.handle(&Event::InitDone), [rs]);
        assert!(c.is_empty() && c.listed());
    }
}
