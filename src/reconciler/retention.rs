//! Which versions to keep, as owner references: a pure function from what is
//! observed (versions, who references them, `spec.history`) to what each
//! version Secret's owners should be.
//!
//! Only versions proven to be ours (`reconciler::proven`) are planned.
//! A version is owned by its RandomSecret while it is current or within
//! `history`, and by every ReplicaSet, ControllerRevision or Pod that
//! references it (pods of a history: see below). When its last owner goes, the Kubernetes garbage collector
//! deletes it, even while this controller is down. A version with no owner left
//! is released: the controller deletes it.
//!
//! Pods of a ReplicaSet, StatefulSet or DaemonSet (`covered`: their history
//! references the same names) are owners too, but only of a version the
//! RandomSecret does not hold: a Deployment prunes an old ReplicaSet as soon
//! as its pods are terminating, and the collector would otherwise delete the
//! version under pods that still read it. So the current version's owners do
//! not change as its Deployment scales.

use crate::api::VersionState;
use crate::cache::holders::{Holder, HolderKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

/// A version Secret as observed in the cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub name: String,
    pub hash: String,
    pub created: Option<Time>,
    pub owners: Vec<OwnerReference>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The owners are right.
    None,
    /// Replace the owner references with `Planned::owners`.
    SetOwners,
    /// No owner is left: delete the Secret.
    Delete,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    pub name: String,
    pub hash: String,
    pub created: Option<Time>,
    pub state: VersionState,
    pub referenced_by: Vec<String>,
    pub owners: Vec<OwnerReference>,
    pub change: Change,
}

/// At most this many holders become owner references of one version (some
/// 20 KiB of metadata). Beyond, the RandomSecret's reference holds the
/// version; if the RandomSecret is deleted meanwhile, only these remain.
pub const MAX_HOLDER_OWNERS: usize = 128;
/// At most this many holders are listed in `referencedBy` (then a count).
pub const MAX_REFERENCED_BY: usize = 10;

/// `Kind/name` of each holder, at most `MAX_REFERENCED_BY`, then `+N more`.
/// Covered pods are listed only when they are all that holds the version
/// (their ReplicaSet is gone): otherwise every pod of a Deployment would be
/// listed, and the status rewritten as it scales.
fn referenced_by(holders: &[Holder]) -> Vec<String> {
    let owning: Vec<&Holder> = holders.iter().filter(|h| !h.covered).collect();
    let listed = if owning.is_empty() {
        holders.iter().collect()
    } else {
        owning
    };
    let mut out: Vec<String> = listed
        .iter()
        .take(MAX_REFERENCED_BY)
        .map(|h| h.display())
        .collect();
    if listed.len() > MAX_REFERENCED_BY {
        out.push(format!("+{} more", listed.len() - MAX_REFERENCED_BY));
    }
    out
}

/// Owner references this controller manages: RandomSecrets and holders.
fn managed(o: &OwnerReference) -> bool {
    (o.kind == "RandomSecret" && o.api_version.starts_with(crate::api::PREFIX))
        || HolderKind::of(&o.kind, &o.api_version).is_some()
}

fn same_owners(a: &[OwnerReference], b: &[OwnerReference]) -> bool {
    let key = |v: &[OwnerReference]| {
        let mut k: Vec<(String, String, Option<bool>)> = v
            .iter()
            .map(|o| (o.kind.clone(), o.uid.clone(), o.controller))
            .collect();
        k.sort();
        k
    };
    key(a) == key(b)
}

/// Plans every version of one RandomSecret. `current` is the current version's
/// name, `owner` the RandomSecret's controller reference, `holders_of` who
/// references a Secret name. Returns the current version first, then the others
/// newest first.
pub fn plan(
    current: &str,
    owner: &OwnerReference,
    versions: &[Observed],
    holders_of: impl Fn(&str) -> Vec<Holder>,
    history: usize,
) -> Vec<Planned> {
    let mut ordered: Vec<&Observed> = versions.iter().collect();
    // Current first, then newest first (a missing time sorts last).
    ordered.sort_by(|a, b| {
        (b.name == current).cmp(&(a.name == current)).then_with(|| {
            b.created
                .as_ref()
                .map(|t| t.0)
                .cmp(&a.created.as_ref().map(|t| t.0))
        })
    });
    let mut unreferenced_superseded = 0;
    ordered
        .into_iter()
        .map(|v| {
            let mut holders = holders_of(&v.name);
            holders.sort();
            let is_current = v.name == current;
            let in_history = !is_current && holders.is_empty() && {
                unreferenced_superseded += 1;
                unreferenced_superseded <= history
            };
            let state = if is_current {
                VersionState::Current
            } else if !holders.is_empty() || in_history {
                VersionState::Retained
            } else {
                VersionState::Released
            };
            // Covered pods own only what the RandomSecret does not (module doc).
            let held_by_randomsecret = is_current || in_history;
            let owning: Vec<&Holder> = holders
                .iter()
                .filter(|h| !h.covered || !held_by_randomsecret)
                .collect();
            // Past MAX_HOLDER_OWNERS holders (a Job's thousand bare pods, say),
            // the RandomSecret holds the version in their stead, so the
            // Secret's metadata stays small and nothing is collected early.
            let many = owning.len() > MAX_HOLDER_OWNERS;
            let mut owners: Vec<OwnerReference> = Vec::new();
            if state != VersionState::Released && (held_by_randomsecret || many) {
                owners.push(owner.clone());
            }
            owners.extend(
                owning
                    .iter()
                    .take(MAX_HOLDER_OWNERS)
                    .map(|h| h.owner_reference()),
            );
            // Owners of the owner's kind are ours too (a downstream copy's
            // anchor, `push::clusters`, is a Secret).
            owners.extend(
                v.owners
                    .iter()
                    .filter(|o| {
                        let owners_kind =
                            o.kind == owner.kind && o.api_version == owner.api_version;
                        !(managed(o) || owners_kind)
                    })
                    .cloned(),
            );
            // Only proven versions are planned (`reconciler::proven`), so
            // one left with no owner is deleted, even if it never had one.
            let change = if owners.is_empty() {
                Change::Delete
            } else if same_owners(&owners, &v.owners) {
                Change::None
            } else {
                Change::SetOwners
            };
            Planned {
                name: v.name.clone(),
                hash: v.hash.clone(),
                created: v.created.clone(),
                state,
                referenced_by: referenced_by(&holders),
                owners,
                change,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn t(s: i64) -> Option<Time> {
        Some(Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap()))
    }
    fn rs_owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "randomsecret.io/v1".into(),
            kind: "RandomSecret".into(),
            name: "db".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }
    fn holder(name: &str) -> Holder {
        // A distinct, well-formed uid per name.
        let n = name.bytes().fold(0u64, |a, b| a * 31 + u64::from(b));
        Holder {
            kind: HolderKind::ReplicaSet,
            namespace: crate::cache::Namespace::new("n"),
            name: name.into(),
            uid: crate::cache::Uid::parse(&format!("00000000-0000-4000-8000-{n:012x}")).unwrap(),
            covered: false,
        }
    }
    /// A pod of a ReplicaSet (its history owns what it references).
    fn covered_pod(name: &str) -> Holder {
        Holder {
            kind: HolderKind::Pod,
            covered: true,
            ..holder(name)
        }
    }
    fn obs(name: &str, created: i64, owners: Vec<OwnerReference>) -> Observed {
        Observed {
            name: name.into(),
            hash: name.into(),
            created: t(created),
            owners,
        }
    }
    fn run(
        current: &str,
        versions: &[Observed],
        refs: &[(&str, &str)],
        history: usize,
    ) -> Vec<Planned> {
        let mut map: HashMap<String, Vec<Holder>> = HashMap::new();
        for (secret, rs) in refs {
            map.entry(secret.to_string()).or_default().push(holder(rs));
        }
        plan(
            current,
            &rs_owner("me"),
            versions,
            |n| map.get(n).cloned().unwrap_or_default(),
            history,
        )
    }
    fn states(p: &[Planned]) -> Vec<(&str, VersionState)> {
        p.iter().map(|v| (v.name.as_str(), v.state)).collect()
    }

    /// A downstream copy's owner is an anchor Secret: a superseded copy
    /// loses it (so the collector deletes the copy with its last holder),
    /// while another Secret owning it, not the anchor, is kept.
    #[test]
    fn an_anchor_of_kind_secret_is_managed_like_the_randomsecret() {
        let anchor = |uid: &str| OwnerReference {
            api_version: "v1".into(),
            kind: "Secret".into(),
            name: "db-anchor".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        let foreign = OwnerReference {
            api_version: "example.com/v1".into(),
            kind: "Thing".into(),
            name: "t".into(),
            uid: "t1".into(),
            controller: None,
            block_owner_deletion: None,
        };
        let versions = [
            obs("v2", 2, vec![anchor("a")]),
            obs("v1", 1, vec![anchor("a"), foreign.clone()]),
            obs("v0", 0, vec![anchor("a")]),
        ];
        let map: HashMap<&str, Vec<Holder>> = HashMap::from([("v1", vec![holder("web-1")])]);
        let p = plan(
            "v2",
            &anchor("a"),
            &versions,
            |n| map.get(n).cloned().unwrap_or_default(),
            0,
        );
        assert_eq!(p[0].change, Change::None);
        assert_eq!(p[1].name, "v1");
        assert_eq!(p[1].change, Change::SetOwners);
        let kinds: Vec<&str> = p[1].owners.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["ReplicaSet", "Thing"]);
        assert_eq!(p[2].change, Change::Delete);
    }

    #[test]
    fn current_is_owned_by_the_randomsecret_and_its_holders() {
        let p = run(
            "v1",
            &[obs("v1", 1, vec![rs_owner("me")])],
            &[("v1", "web-1")],
            0,
        );
        assert_eq!(p[0].state, VersionState::Current);
        assert_eq!(
            p[0].owners
                .iter()
                .map(|o| o.kind.as_str())
                .collect::<Vec<_>>(),
            ["RandomSecret", "ReplicaSet"]
        );
        assert_eq!(p[0].referenced_by, ["ReplicaSet/web-1"]);
        assert_eq!(p[0].change, Change::SetOwners);
    }

    #[test]
    fn superseded_and_referenced_is_retained_by_its_holders_only() {
        let v1 = obs(
            "v1",
            1,
            vec![rs_owner("me"), holder("web-1").owner_reference()],
        );
        let v2 = obs("v2", 2, vec![rs_owner("me")]);
        let p = run("v2", &[v1, v2], &[("v1", "web-1"), ("v2", "web-2")], 0);
        assert_eq!(
            states(&p),
            [
                ("v2", VersionState::Current),
                ("v1", VersionState::Retained)
            ]
        );
        assert_eq!(p[1].owners, vec![holder("web-1").owner_reference()]);
        assert_eq!(p[1].change, Change::SetOwners);
    }

    #[test]
    fn superseded_unreferenced_is_released_beyond_history() {
        let vs = [
            obs("v1", 1, vec![rs_owner("me")]),
            obs("v2", 2, vec![rs_owner("me")]),
            obs("v3", 3, vec![rs_owner("me")]),
            obs("v4", 4, vec![rs_owner("me")]),
        ];
        let p = run("v4", &vs, &[], 2);
        assert_eq!(
            states(&p),
            [
                ("v4", VersionState::Current),
                ("v3", VersionState::Retained),
                ("v2", VersionState::Retained),
                ("v1", VersionState::Released)
            ]
        );
        assert_eq!(
            (
                p[1].change.clone(),
                p[2].change.clone(),
                p[3].change.clone()
            ),
            (Change::None, Change::None, Change::Delete)
        );
    }

    #[test]
    fn referenced_versions_do_not_use_up_history() {
        let vs = [
            obs("v1", 1, vec![]),
            obs("v2", 2, vec![]),
            obs("v3", 3, vec![]),
        ];
        let p = run("v3", &vs, &[("v2", "web-2")], 1);
        assert_eq!(
            states(&p),
            [
                ("v3", VersionState::Current),
                ("v2", VersionState::Retained),
                ("v1", VersionState::Retained)
            ]
        );
        assert_eq!(p[2].owners, vec![rs_owner("me")]);
    }

    #[test]
    fn stale_randomsecret_owners_are_replaced_and_foreign_owners_kept() {
        let foreign = OwnerReference {
            api_version: "example.com/v1".into(),
            kind: "Thing".into(),
            name: "t".into(),
            uid: "t".into(),
            ..Default::default()
        };
        let p = run(
            "v1",
            &[obs("v1", 1, vec![rs_owner("old"), foreign.clone()])],
            &[],
            0,
        );
        assert_eq!(p[0].owners, vec![rs_owner("me"), foreign.clone()]);
        // A released version with a foreign owner is left to that owner, not deleted.
        let p = run(
            "v2",
            &[
                obs("v1", 1, vec![rs_owner("me"), foreign.clone()]),
                obs("v2", 2, vec![rs_owner("me")]),
            ],
            &[],
            0,
        );
        assert_eq!(
            (p[1].state, p[1].change.clone(), p[1].owners.clone()),
            (VersionState::Released, Change::SetOwners, vec![foreign])
        );
    }

    /// A released (proven) version that has no owner at all is deleted, not
    /// kept in the status forever (issue 12, point 4).
    #[test]
    fn a_released_version_without_any_owner_is_deleted() {
        let p = run(
            "v2",
            &[obs("v1", 1, vec![]), obs("v2", 2, vec![rs_owner("me")])],
            &[],
            0,
        );
        assert_eq!(
            (p[1].state, p[1].change.clone()),
            (VersionState::Released, Change::Delete)
        );
    }

    /// A thousand holders (a Job's bare pods): a bounded number of owner
    /// references, the RandomSecret holding the version for the rest, and a
    /// bounded `referencedBy` with a count.
    #[test]
    fn many_holders_are_bounded_and_the_randomsecret_holds_for_the_rest() {
        let refs: Vec<(String, String)> = (0..1000)
            .map(|i| ("v1".to_string(), format!("pod-{i:04}")))
            .collect();
        let refs: Vec<(&str, &str)> = refs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let p = run(
            "v2",
            &[obs("v1", 1, vec![]), obs("v2", 2, vec![rs_owner("me")])],
            &refs,
            0,
        );
        let v1 = &p[1];
        assert_eq!(v1.state, VersionState::Retained);
        assert_eq!(v1.owners.len(), MAX_HOLDER_OWNERS + 1);
        assert!(v1.owners.iter().any(|o| o.kind == "RandomSecret"));
        assert_eq!(v1.referenced_by.len(), MAX_REFERENCED_BY + 1);
        assert_eq!(v1.referenced_by.last().unwrap(), "+990 more");
        // Few holders: each is an owner, and the RandomSecret is not.
        let p = run(
            "v2",
            &[obs("v1", 1, vec![]), obs("v2", 2, vec![rs_owner("me")])],
            &refs[..3],
            0,
        );
        assert_eq!(p[1].owners.len(), 3);
        assert!(p[1].owners.iter().all(|o| o.kind != "RandomSecret"));
    }

    /// Issue 12, point 1: a Deployment prunes an old ReplicaSet while its
    /// pods are still terminating. Those pods own a superseded version with
    /// the ReplicaSet, so the collector keeps it until the last of them is
    /// gone, even while this controller is down; the current version's owners
    /// do not follow its pods.
    #[test]
    fn pods_of_a_history_own_a_superseded_version_not_the_current_one() {
        let vs = [
            obs("v1", 1, vec![holder("web-1").owner_reference()]),
            obs("v2", 2, vec![rs_owner("me")]),
        ];
        let plan_with = |v1: Vec<Holder>, v2: Vec<Holder>| {
            plan(
                "v2",
                &rs_owner("me"),
                &vs,
                |n| if n == "v1" { v1.clone() } else { v2.clone() },
                0,
            )
        };
        // Rolling out: the old ReplicaSet and its pod; the new one and its pod.
        let p = plan_with(
            vec![holder("web-1"), covered_pod("web-1-abc")],
            vec![holder("web-2"), covered_pod("web-2-xyz")],
        );
        assert_eq!(
            p[0].owners,
            vec![rs_owner("me"), holder("web-2").owner_reference()]
        );
        assert_eq!(p[0].referenced_by, ["ReplicaSet/web-2"]);
        assert_eq!(p[1].state, VersionState::Retained);
        assert_eq!(
            p[1].owners,
            vec![
                holder("web-1").owner_reference(),
                covered_pod("web-1-abc").owner_reference()
            ]
        );
        assert_eq!(p[1].referenced_by, ["ReplicaSet/web-1"]);
        // The ReplicaSet is pruned; its pod is terminating.
        let p = plan_with(vec![covered_pod("web-1-abc")], vec![]);
        assert_eq!(
            (p[1].state, p[1].owners.clone()),
            (
                VersionState::Retained,
                vec![covered_pod("web-1-abc").owner_reference()]
            )
        );
        assert_eq!(p[1].referenced_by, ["Pod/web-1-abc"]);
        // The pod is gone.
        let p = plan_with(vec![], vec![]);
        assert_eq!(
            (p[1].state, p[1].change.clone()),
            (VersionState::Released, Change::Delete)
        );
        // A history still referencing it, its pods gone: the history alone.
        let p = plan_with(vec![holder("web-1")], vec![]);
        assert_eq!(p[1].owners, vec![holder("web-1").owner_reference()]);
        assert_eq!(p[1].change, Change::None);
    }

    #[test]
    fn owners_already_right_need_no_change() {
        let v1 = obs(
            "v1",
            1,
            vec![holder("web-1").owner_reference(), rs_owner("me")],
        );
        let p = run("v1", &[v1], &[("v1", "web-1")], 0);
        assert_eq!(p[0].change, Change::None);
    }
}
