//! The status view, assembled by a pure function from what was read.
//!
//! Why a version is kept comes from the controller's own retention plan
//! (`reconciler::retention::plan`), fed with the holders read now: the view
//! and the controller cannot disagree on what "referenced" or "within
//! history" means.

use crate::api::{ANNOTATION_CREATED, LABEL_NAME, RandomSecretStatus, VersionState};
use crate::cache::holders::{Holder, HolderKind};
use crate::cache::slim::RandomSecretObject;
use crate::reconciler::retention::{self, Observed};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Serialize;

/// What `randomsecret status` shows: one entry per RandomSecret.
#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusList {
    pub items: Vec<RandomSecretView>,
    /// What could not be read (a kind the credentials may not list), so
    /// holders of that kind are not shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RandomSecretView {
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<Time>,
    /// The current version's Secret (`status.secretName`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// With rotateEvery: when the next version is due (`status.nextRotation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_rotation: Option<Time>,
    /// `spec.history`: superseded unreferenced versions kept.
    pub history: usize,
    /// The controller has not yet reconciled the latest spec.
    pub pending: bool,
    pub conditions: Vec<ConditionView>,
    /// Current first, then the others newest first; released ones last.
    pub versions: Vec<VersionView>,
    /// What each key of the spec holds (none when the spec does not read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<KeyView>,
}

/// A key of the spec and what it holds (never its value).
#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub name: String,
    pub kind: String,
}

/// The keys of `spec` and their kinds: generated ones, then static ones.
fn key_views(spec: &serde_json::Value) -> Vec<KeyView> {
    let Some(v) = serde_json::from_value(spec.clone())
        .ok()
        .and_then(|s| crate::version::VersionSpec::from_spec(&s).ok())
    else {
        return Vec::new();
    };
    let generated = v.generated.iter().map(|(k, g)| KeyView {
        name: k.clone(),
        kind: g.kind.describe(),
    });
    let statics = v.statics.keys().map(|k| KeyView {
        name: k.clone(),
        kind: "static".into(),
    });
    generated.chain(statics).collect()
}

#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConditionView {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[derive(Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VersionView {
    pub name: String,
    pub hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<Time>,
    pub state: VersionState,
    /// Why a current or retained version is kept (none once released).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<Kept>,
    pub secret: SecretPresence,
    /// The status lists this very Secret (by uid): the controller created
    /// or verified it. A labelled Secret the status does not list was made
    /// a moment ago, or is a look-alike the controller leaves alone (labels
    /// are no proof; only the controller can check its proof of creation).
    pub recorded: bool,
    pub holders: Vec<HolderView>,
    /// When its first certificate ends (from the status), if it holds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
}

/// Why a version is kept, in the retention plan's terms.
#[derive(Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum Kept {
    /// The version the spec describes now.
    Current,
    /// A ReplicaSet, ControllerRevision or unfinished Pod references it.
    Referenced,
    /// Unreferenced, but among the `history` newest superseded versions.
    History { position: usize, of: usize },
}

/// Whether the version's Secret exists.
#[derive(Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum SecretPresence {
    Present,
    /// Being deleted (by the garbage collector, its last owner gone; or by
    /// hand while held, when deletion protection keeps it readable).
    Deleting,
    /// Live in the status, but the Secret is gone (see the Stalled condition).
    Missing,
    /// Released and deleted.
    Deleted,
}

/// An object that references a version; a ReplicaSet lists its pods that do too.
#[derive(Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct HolderView {
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<String>,
}

/// One object that references Secrets, as read (through `references`).
#[derive(Clone, Debug)]
pub struct HeldRefs {
    pub holder: Holder,
    /// The Secret names it references.
    pub names: Vec<String>,
    /// For a pod: the ReplicaSet that controls it, if any.
    pub replica_set: Option<String>,
}

/// Everything the view is made of.
#[derive(Clone, Debug, Default)]
pub struct Read {
    pub randomsecrets: Vec<RandomSecretObject>,
    /// Metadata of the version Secrets (label-selected; no data).
    pub secrets: Vec<ObjectMeta>,
    pub holders: Vec<HeldRefs>,
    pub notes: Vec<String>,
}

fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// Creation to the nanosecond (the controller's annotation), else creationTimestamp:
/// versions created within one second still sort as the controller sorts them.
fn created(meta: &ObjectMeta) -> Option<Time> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_CREATED)?.parse().ok())
        .map(Time)
        .or_else(|| meta.creation_timestamp.clone())
}

fn holder_views(holders: &[&HeldRefs]) -> Vec<HolderView> {
    let mut out: Vec<HolderView> = holders
        .iter()
        .filter(|h| h.holder.kind != HolderKind::Pod)
        .map(|h| HolderView {
            kind: h.holder.kind.as_str().into(),
            name: h.holder.name.to_string(),
            pods: Vec::new(),
        })
        .collect();
    let mut bare = Vec::new();
    for h in holders.iter().filter(|h| h.holder.kind == HolderKind::Pod) {
        let parent = h.replica_set.as_deref().and_then(|rs| {
            out.iter_mut()
                .find(|v| v.kind == HolderKind::ReplicaSet.as_str() && v.name == rs)
        });
        match parent {
            Some(p) => p.pods.push(h.holder.name.to_string()),
            None => bare.push(HolderView {
                kind: HolderKind::Pod.as_str().into(),
                name: h.holder.name.to_string(),
                pods: Vec::new(),
            }),
        }
    }
    out.append(&mut bare);
    out.iter_mut().for_each(|v| v.pods.sort());
    out.sort();
    out
}

/// The view of one RandomSecret.
fn view(rs: &RandomSecretObject, read: &Read) -> RandomSecretView {
    let namespace = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let status: Option<RandomSecretStatus> = rs
        .status
        .clone()
        .and_then(|v| serde_json::from_value(v).ok());
    let history = rs
        .spec
        .get("history")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0) as usize;
    let current = status.as_ref().and_then(|s| s.secret_name.clone());
    let secrets: Vec<&ObjectMeta> = read
        .secrets
        .iter()
        .filter(|m| {
            m.namespace.as_deref() == Some(&namespace) && label(m, LABEL_NAME) == Some(&name)
        })
        .collect();
    let observed: Vec<Observed> = secrets
        .iter()
        .map(|m| Observed {
            name: m.name.clone().unwrap_or_default(),
            hash: label(m, crate::api::LABEL_HASH).unwrap_or_default().into(),
            created: created(m),
            owners: m.owner_references.clone().unwrap_or_default(),
        })
        .collect();
    let holders_of = |secret: &str| -> Vec<&HeldRefs> {
        read.holders
            .iter()
            .filter(|h| {
                h.holder.namespace.as_str() == namespace && h.names.iter().any(|n| n == secret)
            })
            .collect()
    };
    let owner = OwnerReference {
        api_version: crate::api::API_VERSION.into(),
        kind: "RandomSecret".into(),
        name: name.clone(),
        uid: rs.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    let plan = retention::plan(
        current.as_deref().unwrap_or_default(),
        &owner,
        &observed,
        |secret| {
            holders_of(secret)
                .into_iter()
                .map(|h| h.holder.clone())
                .collect()
        },
        history,
    );
    let mut in_history = 0;
    let mut versions: Vec<VersionView> = plan
        .into_iter()
        .map(|p| {
            let holders = holders_of(&p.name);
            let kept = match p.state {
                VersionState::Current => Some(Kept::Current),
                VersionState::Retained if !holders.is_empty() => Some(Kept::Referenced),
                VersionState::Retained => {
                    in_history += 1;
                    Some(Kept::History {
                        position: in_history,
                        of: history,
                    })
                }
                VersionState::Released => None,
            };
            let meta = secrets.iter().find(|m| m.name.as_deref() == Some(&p.name));
            let deleting = meta.is_some_and(|m| m.deletion_timestamp.is_some());
            let entry = status.iter().flat_map(|s| &s.versions).find(|v| {
                v.name == p.name && (v.uid.is_none() || v.uid == meta.and_then(|m| m.uid.clone()))
            });
            let recorded = entry.is_some();
            VersionView {
                not_after: entry.and_then(|v| v.not_after.clone()),
                recorded,
                secret: if deleting {
                    SecretPresence::Deleting
                } else {
                    SecretPresence::Present
                },
                holders: holder_views(&holders),
                name: p.name,
                hash: p.hash,
                created: p.created,
                state: p.state,
                kept,
            }
        })
        .collect();
    // What the status records but no Secret backs any more.
    let listed = |versions: &[VersionView], n: &str| versions.iter().any(|v| v.name == n);
    for v in status.iter().flat_map(|s| &s.versions) {
        if !listed(&versions, &v.name) {
            versions.push(VersionView {
                name: v.name.clone(),
                hash: v.hash.clone(),
                created: v.created.clone(),
                state: v.state,
                kept: None,
                secret: SecretPresence::Missing,
                recorded: true,
                holders: holder_views(&holders_of(&v.name)),
                not_after: v.not_after.clone(),
            });
        }
    }
    for n in status.iter().flat_map(|s| &s.released) {
        if !listed(&versions, n) {
            versions.push(VersionView {
                hash: crate::version::hash_in_name(n).into(),
                name: n.clone(),
                created: None,
                state: VersionState::Released,
                kept: None,
                secret: SecretPresence::Deleted,
                recorded: true,
                holders: holder_views(&holders_of(n)),
                not_after: None,
            });
        }
    }
    let conditions = status
        .as_ref()
        .map(|s| {
            s.conditions
                .iter()
                .map(|c| ConditionView {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    let observed_generation = status.as_ref().and_then(|s| s.observed_generation);
    RandomSecretView {
        pending: observed_generation.is_none() || observed_generation < rs.metadata.generation,
        namespace,
        name,
        created: rs.metadata.creation_timestamp.clone(),
        next_rotation: status.as_ref().and_then(|s| s.next_rotation.clone()),
        current,
        history,
        conditions,
        versions,
        keys: key_views(&rs.spec),
    }
}

/// The view of every RandomSecret read, ordered by namespace and name.
pub fn assemble(read: &Read) -> StatusList {
    let mut items: Vec<RandomSecretView> =
        read.randomsecrets.iter().map(|rs| view(rs, read)).collect();
    items.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    StatusList {
        items,
        notes: read.notes.clone(),
    }
}

impl RandomSecretView {
    pub fn condition(&self, type_: &str) -> Option<&ConditionView> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A RandomSecret rotated twice and rolled back, with a Deployment's
    //! three ReplicaSets and their pods, and a StatefulSet's revision.
    use super::*;
    use crate::cache::{Namespace, Uid};
    use serde_json::json;

    fn uid(n: u64) -> Uid {
        Uid::parse(&format!("00000000-0000-4000-8000-{n:012x}")).unwrap()
    }

    pub fn secret(name: &str, rs: &str, created: &str) -> ObjectMeta {
        serde_json::from_value(json!({
            "name": name, "namespace": "demo", "uid": format!("{name}-uid"),
            "creationTimestamp": format!("{}Z", &created[..19]),
            "labels": {"randomsecret.io/name": rs, "randomsecret.io/hash": &name[name.len() - 10..],
                       "app.kubernetes.io/managed-by": "randomsecret"},
            "annotations": {"randomsecret.io/created": created},
        }))
        .unwrap()
    }

    pub fn held(
        kind: HolderKind,
        name: &str,
        n: u64,
        names: &[&str],
        rs: Option<&str>,
    ) -> HeldRefs {
        HeldRefs {
            holder: Holder {
                kind,
                namespace: Namespace::new("demo"),
                name: name.into(),
                uid: uid(n),
                covered: rs.is_some(),
            },
            names: names.iter().map(|s| s.to_string()).collect(),
            replica_set: rs.map(Into::into),
        }
    }

    pub fn randomsecret(
        name: &str,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> RandomSecretObject {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "demo", "uid": format!("{name}-uid"), "generation": 4,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    pub const V1: &str = "db-b7c9f2k4tg";
    pub const V2: &str = "db-c8h2d5q9bx";
    pub const V3: &str = "db-7b9fk2m4tg";
    pub const V0: &str = "db-9fk2m4tg7b";
    pub const PLANTED: &str = "db-5555555555";

    /// db: current V2 (rolled back to), V3 referenced by the newest
    /// ReplicaSet, V1 only by an old revision, V0 within history; a second
    /// RandomSecret that is not Ready.
    pub fn read() -> Read {
        Read {
            randomsecrets: vec![
                randomsecret(
                    "db",
                    json!({"keys": {"password": {"length": 16}, "deploy": {"sshKeyPair": {"type": "ecdsa"}},
                                    "dsn": {"template": "x{{ keys.password }}"}},
                           "static": {"user": "app"}, "rotation": "2", "history": 1}),
                    json!({"observedGeneration": 4, "secretName": V2,
                        "versions": [
                            {"name": V2, "hash": &V2[3..], "state": "current", "uid": format!("{V2}-uid"), "notAfter": "2026-03-01T00:00:00Z"},
                            {"name": V3, "hash": &V3[3..], "state": "retained", "uid": format!("{V3}-uid")},
                            {"name": V1, "hash": &V1[3..], "state": "retained", "uid": format!("{V1}-uid")},
                            {"name": V0, "hash": &V0[3..], "state": "retained", "uid": format!("{V0}-uid")}],
                        "released": ["db-t2t2t2t2t2"],
                        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
                ),
                randomsecret(
                    "taken",
                    json!({"keys": {"password": {"length": 16}}}),
                    json!({"observedGeneration": 4,
                        "conditions": [
                            {"type": "Ready", "status": "False", "reason": "SecretNameTaken",
                             "message": "Secret taken-5555555555 exists and was not created by randomsecret: rename it or set spec.secretName",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"},
                            {"type": "Stalled", "status": "True", "reason": "SecretNameTaken", "message": "",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
                ),
            ],
            secrets: vec![
                secret(V0, "db", "2026-01-01T00:00:00.100000000Z"),
                secret(V1, "db", "2026-01-01T00:01:00.100000000Z"),
                secret(V2, "db", "2026-01-01T00:02:00.100000000Z"),
                // Within the same second as V2: the annotation orders them.
                secret(V3, "db", "2026-01-01T00:02:00.900000000Z"),
                secret("other-5555555555", "other", "2026-01-01T00:00:00.1Z"),
                // Our labels, but not in the status: someone else's look-alike.
                secret(PLANTED, "db", "2025-12-31T23:58:00.100000000Z"),
            ],
            holders: vec![
                held(HolderKind::ReplicaSet, "web-2", 1, &[V2], None),
                held(HolderKind::Pod, "web-2-a", 2, &[V2], Some("web-2")),
                held(HolderKind::Pod, "web-2-b", 3, &[V2], Some("web-2")),
                held(HolderKind::ReplicaSet, "web-3", 4, &[V3], None),
                // A pod of a pruned ReplicaSet, still terminating.
                held(HolderKind::Pod, "web-1-x", 5, &[V1], Some("web-1")),
                held(
                    HolderKind::ControllerRevision,
                    "cache-6d5f",
                    6,
                    &[V1, "unrelated-5555555555"],
                    None,
                ),
            ],
            notes: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn versions_with_their_holders_and_why_they_are_kept() {
        let list = assemble(&read());
        assert_eq!(list.items.len(), 2);
        let db = &list.items[0];
        assert_eq!((db.namespace.as_str(), db.name.as_str()), ("demo", "db"));
        assert_eq!(db.current.as_deref(), Some(V2));
        assert!(!db.pending);
        let rows: Vec<(&str, VersionState, Option<Kept>, SecretPresence)> = db
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.state, v.kept, v.secret))
            .collect();
        let unrecorded: Vec<&str> = db
            .versions
            .iter()
            .filter(|v| !v.recorded)
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(unrecorded, [PLANTED]);
        assert_eq!(
            rows,
            [
                (
                    V2,
                    VersionState::Current,
                    Some(Kept::Current),
                    SecretPresence::Present
                ),
                (
                    V3,
                    VersionState::Retained,
                    Some(Kept::Referenced),
                    SecretPresence::Present
                ),
                (
                    V1,
                    VersionState::Retained,
                    Some(Kept::Referenced),
                    SecretPresence::Present
                ),
                (
                    V0,
                    VersionState::Retained,
                    Some(Kept::History { position: 1, of: 1 }),
                    SecretPresence::Present
                ),
                (
                    PLANTED,
                    VersionState::Released,
                    None,
                    SecretPresence::Present
                ),
                (
                    "db-t2t2t2t2t2",
                    VersionState::Released,
                    None,
                    SecretPresence::Deleted
                ),
            ]
        );
        assert_eq!(
            db.versions[0].holders,
            [HolderView {
                kind: "ReplicaSet".into(),
                name: "web-2".into(),
                pods: vec!["web-2-a".into(), "web-2-b".into()]
            }]
        );
        let v1: Vec<(&str, &str)> = db.versions[2]
            .holders
            .iter()
            .map(|h| (h.kind.as_str(), h.name.as_str()))
            .collect();
        assert_eq!(
            v1,
            [("ControllerRevision", "cache-6d5f"), ("Pod", "web-1-x")]
        );
    }

    #[test]
    fn history_is_counted_as_the_controller_counts_it() {
        let mut r = read();
        // Nothing references V1 and V3 any more: with history 1 only the
        // newest superseded one is kept, the older ones are released.
        r.holders.retain(|h| h.names.iter().any(|n| n == V2));
        let db = &assemble(&r).items[0];
        let states: Vec<(&str, VersionState, Option<Kept>)> = db
            .versions
            .iter()
            .take(4)
            .map(|v| (v.name.as_str(), v.state, v.kept))
            .collect();
        assert_eq!(
            states,
            [
                (V2, VersionState::Current, Some(Kept::Current)),
                (
                    V3,
                    VersionState::Retained,
                    Some(Kept::History { position: 1, of: 1 })
                ),
                (V1, VersionState::Released, None),
                (V0, VersionState::Released, None),
            ]
        );
    }

    #[test]
    fn a_lost_version_and_a_pending_spec_are_shown() {
        let mut r = read();
        r.secrets.retain(|m| m.name.as_deref() != Some(V2));
        r.randomsecrets[0].metadata.generation = Some(5);
        let db = &assemble(&r).items[0];
        assert!(db.pending);
        let v2 = db.versions.iter().find(|v| v.name == V2).unwrap();
        assert_eq!(
            (v2.state, v2.secret),
            (VersionState::Current, SecretPresence::Missing)
        );
        assert_eq!(v2.holders[0].name, "web-2");
    }

    #[test]
    fn not_ready_conditions_are_kept() {
        let list = assemble(&read());
        let taken = &list.items[1];
        assert!(taken.versions.is_empty());
        let ready = taken.condition("Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "SecretNameTaken")
        );
    }
}
