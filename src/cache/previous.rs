//! What the cache keeps of a stored RandomSecret status instead of the
//! status itself ([`Previous`]): a few bytes per object, enough to compute
//! the next status and to tell whether writing it would change anything.

use crate::api::{
    CONDITIONS, PinnedWorkload, READY, RandomSecretStatus, VAULT_SYNCED, WORKLOADS_PINNED,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use std::hash::{Hash, Hasher};

/// What the reconciler needs of a stored status, in a few bytes per object:
/// enough to compute the next status (transition times, the last good name,
/// released names) and to tell whether it would change anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Previous {
    pub secret_name: Option<crate::cache::Name>,
    /// Per entry of [`CONDITIONS`]: its status and lastTransitionTime.
    conditions: [Stored; CONDITIONS.len()],
    pub ready_reason: Option<crate::cache::Name>,
    /// What `status.versions` lists, hashed: every name (what was live), and
    /// for a live one which object.
    pub listed: Box<[Listed]>,
    /// Of the whole status, and of its conditions part, without transition times.
    pub fingerprint: u64,
    pub conditions_fingerprint: u64,
    /// What only some statuses hold, boxed so the others pay 8 bytes (and
    /// a cache entry fits in 192).
    rare: Option<Box<Rare>>,
}

/// The parts of a status that only some RandomSecrets have.
#[derive(Clone, Debug, Default, PartialEq)]
struct Rare {
    released: Box<[crate::cache::Name]>,
    /// Of tracking mode's part ([`pinned_fingerprint`]); 0 when absent.
    pinned: u64,
    /// `status.nextRotation` (seconds), and whether `VaultSynced` is True
    /// (None: no such condition), for the per-object metrics.
    next_rotation: Option<i64>,
    vault_synced: Option<bool>,
}

impl Previous {
    pub fn of(status: Option<&RandomSecretStatus>) -> Self {
        let Some(s) = status else {
            return Previous {
                fingerprint: fingerprint(None),
                conditions_fingerprint: conditions_fingerprint(None),
                ..Default::default()
            };
        };
        let find = |t: &str| s.conditions.iter().find(|c| c.type_ == t);
        Previous {
            secret_name: s.secret_name.as_deref().map(Into::into),
            conditions: CONDITIONS.map(|t| {
                Stored::of(
                    find(t).map(|c| (c.status == "True", c.last_transition_time.0.as_second())),
                )
            }),
            ready_reason: find(READY).map(|c| c.reason.as_str().into()),
            listed: s
                .versions
                .iter()
                .map(|v| Listed {
                    name: name_hash(&v.name),
                    object: match &v.uid {
                        _ if v.state == crate::api::VersionState::Released => Object::Released,
                        Some(uid) => Object::Uid(name_hash(uid), v.deleting),
                        None => Object::Created(seconds(v.created.as_ref())),
                    },
                })
                .collect(),
            fingerprint: fingerprint(Some(s)),
            conditions_fingerprint: conditions_fingerprint(Some(s)),
            rare: Some(Box::new(Rare {
                released: s.released.iter().map(|n| n.as_str().into()).collect(),
                pinned: match find(WORKLOADS_PINNED) {
                    None if s.pinned_workloads.is_empty() => 0,
                    // A condition left without a list hashes to non-zero too: to remove.
                    c => pinned_hash(&s.pinned_workloads, c.and_then(|c| c.observed_generation)),
                },
                next_rotation: s.next_rotation.as_ref().map(|t| t.0.as_second()),
                vault_synced: find(VAULT_SYNCED).map(|c| c.status == "True"),
            }))
            .filter(|r| **r != Rare::default()),
        }
    }

    /// The names `status.released` lists.
    pub fn released_names(&self) -> &[crate::cache::Name] {
        self.rare.as_ref().map_or(&[], |r| &r.released)
    }

    /// Tracking mode's part, fingerprinted ([`pinned_fingerprint`]); 0 when absent.
    pub fn pinned(&self) -> u64 {
        self.rare.as_ref().map_or(0, |r| r.pinned)
    }

    /// `status.nextRotation`, in seconds.
    pub fn next_rotation(&self) -> Option<i64> {
        self.rare.as_ref().and_then(|r| r.next_rotation)
    }

    /// Whether `VaultSynced` is True (None: no such condition).
    pub fn vault_synced(&self) -> Option<bool> {
        self.rare.as_ref().and_then(|r| r.vault_synced)
    }

    /// How many versions the status lists as live (current and retained).
    pub fn live(&self) -> usize {
        self.listed
            .iter()
            .filter(|l| l.object != Object::Released)
            .count()
    }

    /// Whether `name` is among the released names.
    pub fn released(&self, name: &str) -> bool {
        self.released_names().iter().any(|n| &**n == name)
    }

    /// Whether the status shows `name` as a version that was live (the
    /// current name, or listed in `versions`): pods may have read its values.
    pub fn was_live(&self, name: &str) -> bool {
        let h = name_hash(name);
        self.secret_name.as_deref() == Some(name) || self.listed.iter().any(|l| l.name == h)
    }

    /// Whether the status shows a live version (the current name, or one
    /// listed live) other than `held`: one out of this replica's sight,
    /// as the versions of a RandomSecret handed over from another shard are.
    pub fn lists_beyond<'a>(&self, held: impl IntoIterator<Item = &'a str>) -> bool {
        let held: Vec<u64> = held.into_iter().map(name_hash).collect();
        self.secret_name
            .as_deref()
            .is_some_and(|n| !held.contains(&name_hash(n)))
            || self
                .listed
                .iter()
                .any(|l| l.object != Object::Released && !held.contains(&l.name))
    }

    /// Whether the status records this very object (`uid`) as a live
    /// version `name`: the controller created or verified it before.
    pub fn recorded(&self, name: &str, uid: &str) -> bool {
        let (name, uid) = (name_hash(name), name_hash(uid));
        self.listed
            .iter()
            .any(|l| l.name == name && matches!(l.object, Object::Uid(u, _) if u == uid))
    }

    /// Whether the status already shows the live version `name` as being
    /// deleted (so its Warning Event was posted).
    pub fn deleting(&self, name: &str) -> bool {
        let name = name_hash(name);
        self.listed
            .iter()
            .any(|l| l.name == name && matches!(l.object, Object::Uid(_, true)))
    }

    /// Whether a status written before uids were recorded lists `name`,
    /// created at `created`, as a live version (for signing versions made
    /// before proofs existed: only an object created in that very second
    /// matches, so one made again later does not).
    pub fn recorded_before_uids(&self, name: &str, created: Option<&Time>) -> bool {
        self.listed.contains(&Listed {
            name: name_hash(name),
            object: Object::Created(seconds(created)),
        })
    }

    /// The stored lastTransitionTime of condition `type_`, while its status is still `status`.
    pub fn transition(&self, type_: &str, status: bool) -> Option<Time> {
        let (was, at) = self.condition(type_)?;
        (was == status).then(|| Time(Timestamp::from_second(at).unwrap_or(Timestamp::UNIX_EPOCH)))
    }

    /// Condition `type_` (one of [`CONDITIONS`]) as stored: its status and
    /// lastTransitionTime (seconds).
    pub fn condition(&self, type_: &str) -> Option<(bool, i64)> {
        let i = CONDITIONS.iter().position(|t| *t == type_)?;
        self.conditions[i].get()
    }
}

/// A missing time.
const NONE: i64 = i64::MIN;

/// A condition as stored, in 8 bytes where `Option<(bool, i64)>` takes 16
/// (a cache entry per RandomSecret holds four): its lastTransitionTime in
/// seconds shifted left, its status in the low bit; [`NONE`] when absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stored(i64);

impl Default for Stored {
    fn default() -> Self {
        Stored(NONE)
    }
}

impl Stored {
    /// Times beyond ±2^62 seconds (no real one) are clamped to fit.
    fn of(condition: Option<(bool, i64)>) -> Self {
        const LIMIT: i64 = 1 << 62;
        condition.map_or(Stored(NONE), |(status, at)| {
            Stored((at.clamp(1 - LIMIT, LIMIT - 1) << 1) | i64::from(status))
        })
    }

    fn get(self) -> Option<(bool, i64)> {
        (self.0 != NONE).then_some((self.0 & 1 == 1, self.0 >> 1))
    }
}

/// Tracking mode's part of a status (the pinned workloads, and the
/// generation its condition names), hashed; 0 for nothing pinned.
pub fn pinned_fingerprint(pinned: &[PinnedWorkload], generation: Option<i64>) -> u64 {
    if pinned.is_empty() {
        return 0;
    }
    pinned_hash(pinned, generation)
}

fn pinned_hash(pinned: &[PinnedWorkload], generation: Option<i64>) -> u64 {
    hash_json(&(pinned, generation)).max(1)
}

/// One entry of `status.versions`, hashed (24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listed {
    name: u64,
    object: Object,
}

/// Which object a listed version is: released ones are not recorded (a
/// release before proofs listed look-alikes so); a live one by its uid, or,
/// as a release before uids wrote it, by its creation second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Object {
    Released,
    /// Its uid, hashed, and whether it was shown as being deleted.
    Uid(u64, bool),
    Created(i64),
}

fn seconds(t: Option<&Time>) -> i64 {
    t.map_or(NONE, |t| t.0.as_second())
}

/// A name, hashed (SipHash, fixed keys: the same in every process).
pub(super) fn name_hash(name: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

fn hash_json(value: &impl serde::Serialize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(value).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// This writer's conditions (not the push's VaultSynced nor tracking's WorkloadsPinned), without their
/// transition times: another writer's fields are no reason to write.
fn without_transition_times(conditions: &[Condition]) -> Vec<Condition> {
    conditions
        .iter()
        .filter(|c| CONDITIONS.contains(&c.type_.as_str()))
        .cloned()
        .map(|mut c| {
            c.last_transition_time = Time(Timestamp::UNIX_EPOCH);
            c
        })
        .collect()
}

/// What a status says, leaving out `lastTransitionTime` (a fresh "now" for
/// the same transition is no change).
pub fn fingerprint(status: Option<&RandomSecretStatus>) -> u64 {
    let s = status.map(|s| RandomSecretStatus {
        conditions: without_transition_times(&s.conditions),
        push: None,
        pinned_workloads: Vec::new(),
        ..s.clone()
    });
    hash_json(&s)
}

/// The same, of the conditions part only (conditions, observed generation,
/// current name): what a Stalled or Retrying outcome changes.
pub fn conditions_fingerprint(status: Option<&RandomSecretStatus>) -> u64 {
    hash_json(&status.map(|s| {
        (
            s.observed_generation,
            &s.secret_name,
            without_transition_times(&s.conditions),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{STALLED, VersionState, VersionStatus};

    fn listed(name: &str, uid: Option<&str>, state: VersionState) -> VersionStatus {
        serde_json::from_value(serde_json::json!({
            "name": name, "hash": "h", "uid": uid, "state": state,
        }))
        .unwrap()
    }

    /// A handed-over RandomSecret's status lists versions the new shard's
    /// cache lacks; released ones never count.
    #[test]
    fn a_live_version_out_of_sight_is_seen_and_a_released_one_is_not() {
        let status = RandomSecretStatus {
            secret_name: Some("db-2".into()),
            versions: vec![
                listed("db-2", Some("u2"), VersionState::Current),
                listed("db-1", Some("u1"), VersionState::Retained),
                listed("db-0", None, VersionState::Released),
            ],
            ..Default::default()
        };
        let p = Previous::of(Some(&status));
        assert!(!p.lists_beyond(["db-2", "db-1"]));
        assert!(p.lists_beyond(["db-2"]));
        assert!(p.lists_beyond(["db-1"]));
        assert!(p.lists_beyond([]));
        assert!(!Previous::of(None).lists_beyond([]));
    }

    /// The conditions, kept in 8 bytes each, read back as stored; what few
    /// statuses hold (released names, pinned workloads, a next rotation,
    /// VaultSynced) costs the others nothing but its pointer.
    #[test]
    fn conditions_round_trip_and_rare_parts_are_boxed_only_when_present() {
        let condition = |type_: &str, status: &str, at: i64| -> Condition {
            serde_json::from_value(serde_json::json!({
                "type": type_, "status": status, "reason": "R", "message": "",
                "lastTransitionTime": Time(Timestamp::from_second(at).unwrap()),
            }))
            .unwrap()
        };
        let plain = RandomSecretStatus {
            conditions: vec![
                condition(READY, "True", 1_800_000_000),
                condition(STALLED, "False", 7),
            ],
            ..Default::default()
        };
        let p = Previous::of(Some(&plain));
        assert_eq!(p.condition(READY), Some((true, 1_800_000_000)));
        assert_eq!(p.condition(STALLED), Some((false, 7)));
        assert_eq!(p.condition(crate::api::RECONCILING), None);
        assert!(p.rare.is_none(), "nothing rare, nothing boxed");
        assert_eq!(
            (p.next_rotation(), p.vault_synced(), p.pinned()),
            (None, None, 0)
        );
        assert!(p.released_names().is_empty());

        let rare = RandomSecretStatus {
            released: vec!["db-0".into()],
            next_rotation: Some(Time(Timestamp::from_second(1_900_000_000).unwrap())),
            conditions: vec![condition(VAULT_SYNCED, "False", 3)],
            ..plain
        };
        let p = Previous::of(Some(&rare));
        assert_eq!(p.next_rotation(), Some(1_900_000_000));
        assert_eq!(p.vault_synced(), Some(false));
        assert!(p.released("db-0") && !p.released("db-1"));
        assert_eq!(p.released_names().len(), 1);
    }
}
