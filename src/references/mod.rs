//! Which Secret names a pod template references, and who holds a reference
//! (ReplicaSets, ControllerRevisions, and Pods that have not finished).
//!
//! Two walkers over the same fields: [`SecretRefs`] (in `cache::slim`) reads
//! them (typed, and slim: a watch deserializes only these fields), [`untyped`] rewrites them in
//! place on JSON values (tracking mode, the GitOps filters). A test checks
//! that they agree.

pub mod custom;
pub mod untyped;

pub use untyped::rewrite_pod_spec;

use crate::cache::holders::{Holder, HolderKind};
use crate::cache::slim::{
    ControllerRevisionRefs, PodRefs, ReplicaSetRefs, SecretRefs, TemplateOwner,
};
use crate::cache::{Key, Uid};
use crate::version::hash_alphabet_contains;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeSet;

/// Every Secret name a typed pod spec references (see [`SecretRefs::names`]).
pub fn pod_spec_secret_names(spec: &k8s_openapi::api::core::v1::PodSpec) -> BTreeSet<String> {
    serde_json::to_value(spec)
        .ok()
        .and_then(|v| serde_json::from_value::<SecretRefs>(v).ok())
        .map(|r| r.names().into_iter().collect())
        .unwrap_or_default()
}

/// Whether `name` has the shape of a version (`<base>-<10-character hash>`):
/// only such names can matter to retention, so only they are indexed.
pub fn could_be_version(name: &str) -> bool {
    name.len() > 11
        && name.as_bytes()[name.len() - 11] == b'-'
        && name[name.len() - 10..].chars().all(hash_alphabet_contains)
}

fn holder(kind: HolderKind, meta: &ObjectMeta, covered: bool) -> Option<Holder> {
    Some(Holder {
        kind,
        namespace: Key::of(meta).namespace,
        name: meta.name.as_deref()?.into(),
        uid: Uid::of(meta)?,
        covered,
    })
}

/// A holder and the version-shaped Secrets it references (None: no usable
/// identity, nothing to index).
pub type Held = Option<(Holder, Vec<Key>)>;

fn held(kind: HolderKind, meta: &ObjectMeta, refs: Option<&SecretRefs>, covered: bool) -> Held {
    let h = holder(kind, meta, covered)?;
    keyed(h, refs.map(SecretRefs::names).unwrap_or_default())
}

/// The holder with the version-shaped names among `names`, as keys.
fn keyed(h: Holder, names: impl IntoIterator<Item = String>) -> Held {
    let keys = names
        .into_iter()
        .filter(|n| could_be_version(n))
        .map(|n| Key {
            namespace: h.namespace.clone(),
            name: n.into(),
        })
        .collect();
    Some((h, keys))
}

pub fn replica_set(rs: &ReplicaSetRefs) -> Held {
    held(
        HolderKind::ReplicaSet,
        &rs.metadata,
        rs.spec.as_ref().and_then(TemplateOwner::refs),
        false,
    )
}

pub fn controller_revision(cr: &ControllerRevisionRefs) -> Held {
    held(
        HolderKind::ControllerRevision,
        &cr.metadata,
        cr.data.as_ref().and_then(TemplateOwner::refs),
        false,
    )
}

/// An object of a custom kind (`--reference`, [`custom`]): it holds the
/// versions named at its kind's paths while it exists.
pub fn custom(index: u16, kind: &custom::CustomKind, obj: &kube::api::DynamicObject) -> Held {
    let h = holder(HolderKind::Custom(index), &obj.metadata, false)?;
    keyed(h, kind.names(&obj.data))
}

/// A pod holds its versions until it has finished (or is gone). One of a
/// ReplicaSet, StatefulSet or DaemonSet is `covered`: its history is the
/// owner, but the pod still counts, because a Deployment prunes an old
/// ReplicaSet as soon as its pods are terminating, not terminated.
pub fn pod(pod: &PodRefs) -> Held {
    let covered = pod.metadata.owner_references.iter().flatten().any(|o| {
        o.controller == Some(true)
            && matches!(o.kind.as_str(), "ReplicaSet" | "StatefulSet" | "DaemonSet")
    });
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    let refs = if finished { None } else { pod.spec.as_ref() };
    held(HolderKind::Pod, &pod.metadata, refs, covered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const UID: &str = "6f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn every_field() -> Value {
        json!({
            "containers": [{"name": "a",
                "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "env-ref", "key": "k"}}},
                        {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "not-a-secret", "key": "k"}}},
                        {"name": "Z", "value": "plain"}],
                "envFrom": [{"secretRef": {"name": "env-from"}}, {"configMapRef": {"name": "cm"}}]}],
            "initContainers": [{"name": "i", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "init-env", "key": "k"}}}]}],
            "ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "ephemeral"}}]}],
            "volumes": [
                {"name": "v1", "secret": {"secretName": "volume"}},
                {"name": "v2", "projected": {"sources": [{"secret": {"name": "projected"}}, {"configMap": {"name": "cm"}}]}},
                {"name": "v3", "configMap": {"name": "cm"}}],
            "imagePullSecrets": [{"name": "pull"}],
        })
    }

    #[test]
    fn every_reference_field_is_found() {
        let refs: SecretRefs = serde_json::from_value(every_field()).unwrap();
        assert_eq!(
            refs.names(),
            [
                "env-from",
                "env-ref",
                "ephemeral",
                "init-env",
                "projected",
                "pull",
                "volume"
            ]
        );
        let typed: k8s_openapi::api::core::v1::PodSpec =
            serde_json::from_value(every_field()).unwrap();
        assert_eq!(pod_spec_secret_names(&typed).len(), 7);
    }

    /// The reader and the rewriter walk the same fields: every name the reader
    /// finds, the rewriter renames, and nothing else.
    #[test]
    fn typed_and_untyped_walkers_agree() {
        let specs = [
            every_field(),
            json!({"containers": [{"name": "a", "env": [{"name": "x", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "k"}}}]}]}),
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s2"}}, {"secret": {"name": "s3"}}]}}]}),
            json!({"containers": [], "imagePullSecrets": [{"name": "p"}, {"name": ""}]}),
            json!({}),
        ];
        for spec in specs {
            let read: SecretRefs = serde_json::from_value(spec.clone()).unwrap();
            let seen = std::cell::RefCell::new(BTreeSet::new());
            let mut copy = spec.clone();
            rewrite_pod_spec(&mut copy, &|n| {
                seen.borrow_mut().insert(n.to_string());
                Some(format!("{n}-renamed"))
            });
            let mut rewritten: Vec<String> = seen.into_inner().into_iter().collect();
            rewritten.retain(|n| !n.is_empty());
            assert_eq!(read.names(), rewritten, "{spec}");
            let after: SecretRefs = serde_json::from_value(copy).unwrap();
            assert!(
                after.names().iter().all(|n| n.ends_with("-renamed")),
                "{spec}"
            );
        }
    }

    #[test]
    fn only_version_shaped_names_are_indexed() {
        assert!(could_be_version("db-tmm2ctc5b4"));
        assert!(!could_be_version("db"));
        assert!(!could_be_version("db-creds"));
        assert!(!could_be_version("-tmm2ctc5b4"));
        assert!(!could_be_version("db-tmm2ctc5ba"));
        let rs: ReplicaSetRefs = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "n", "uid": UID},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "envFrom": [
                {"secretRef": {"name": "db-tmm2ctc5b4"}}, {"secretRef": {"name": "plain"}}]}]}}}}))
        .unwrap();
        let (h, names) = replica_set(&rs).unwrap();
        assert_eq!(
            (h.kind, &*h.name, h.uid.to_string().as_str()),
            (HolderKind::ReplicaSet, "web-1", UID)
        );
        assert_eq!(names, vec![Key::new("n", "db-tmm2ctc5b4")]);
    }

    #[test]
    fn running_pods_hold_and_those_of_a_history_are_marked_covered() {
        let mk = |owner: Option<&str>, phase: &str| -> PodRefs {
            let owners: Vec<_> = owner.into_iter().map(|k| json!({"apiVersion": "apps/v1", "kind": k, "name": "o", "uid": UID, "controller": true})).collect();
            serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "n", "uid": UID, "ownerReferences": owners},
                "spec": {"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": "s-tmm2ctc5b4"}}]}]},
                "status": {"phase": phase},
            }))
            .unwrap()
        };
        let held = |p: PodRefs| {
            let (h, keys) = pod(&p).unwrap();
            (keys.len(), h.covered)
        };
        assert_eq!(held(mk(None, "Running")), (1, false));
        assert_eq!(held(mk(Some("Job"), "Running")), (1, false));
        assert_eq!(held(mk(Some("ReplicaSet"), "Running")), (1, true));
        assert_eq!(held(mk(Some("StatefulSet"), "Pending")), (1, true));
        assert_eq!(held(mk(Some("DaemonSet"), "Running")), (1, true));
        assert_eq!(held(mk(None, "Succeeded")), (0, false));
        assert_eq!(held(mk(Some("ReplicaSet"), "Failed")), (0, true));
    }
}
