//! Which Secret names a workload's pod template references, and who holds a
//! reference (ReplicaSets, ControllerRevisions, Pods that neither of those covers).

use k8s_openapi::api::apps::v1::{ControllerRevision, ReplicaSet};
use k8s_openapi::api::core::v1::{Container, EnvFromSource, EnvVar, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use std::collections::BTreeSet;

/// The kinds that hold references to Secret versions and own them while they do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HolderKind {
    ReplicaSet,
    ControllerRevision,
    Pod,
}

impl HolderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HolderKind::ReplicaSet => "ReplicaSet",
            HolderKind::ControllerRevision => "ControllerRevision",
            HolderKind::Pod => "Pod",
        }
    }
    pub fn api_version(self) -> &'static str {
        match self {
            HolderKind::ReplicaSet | HolderKind::ControllerRevision => "apps/v1",
            HolderKind::Pod => "v1",
        }
    }
    pub fn from_kind(kind: &str) -> Option<Self> {
        [
            HolderKind::ReplicaSet,
            HolderKind::ControllerRevision,
            HolderKind::Pod,
        ]
        .into_iter()
        .find(|k| k.as_str() == kind)
    }
}

/// One object that references Secrets (its uid tells incarnations apart).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Holder {
    pub kind: HolderKind,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl Holder {
    /// `Kind/name`, as listed in `status.versions[].referencedBy`.
    pub fn display(&self) -> String {
        format!("{}/{}", self.kind.as_str(), self.name)
    }

    /// A non-controller owner reference: the version lives while this holder does.
    pub fn owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.kind.api_version().into(),
            kind: self.kind.as_str().into(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: None,
            block_owner_deletion: None,
        }
    }
}

fn env_names<'a>(
    env: &'a [EnvVar],
    env_from: &'a [EnvFromSource],
) -> impl Iterator<Item = &'a str> {
    let from_env = env
        .iter()
        .filter_map(|e| e.value_from.as_ref()?.secret_key_ref.as_ref())
        .map(|r| r.name.as_str());
    let from_env_from = env_from
        .iter()
        .filter_map(|e| e.secret_ref.as_ref())
        .map(|r| r.name.as_str());
    from_env.chain(from_env_from)
}

fn container_names(c: &Container) -> impl Iterator<Item = &str> {
    env_names(
        c.env.as_deref().unwrap_or_default(),
        c.env_from.as_deref().unwrap_or_default(),
    )
}

/// Every Secret name a pod spec references: env `secretKeyRef` and `envFrom`
/// `secretRef` of containers, initContainers and ephemeralContainers; `secret`
/// and `projected` secret volumes; `imagePullSecrets`.
pub fn pod_spec_secret_names(spec: &PodSpec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for c in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        out.extend(container_names(c).map(String::from));
    }
    for c in spec.ephemeral_containers.iter().flatten() {
        out.extend(
            env_names(
                c.env.as_deref().unwrap_or_default(),
                c.env_from.as_deref().unwrap_or_default(),
            )
            .map(String::from),
        );
    }
    for v in spec.volumes.iter().flatten() {
        if let Some(name) = v.secret.as_ref().and_then(|s| s.secret_name.as_ref()) {
            out.insert(name.clone());
        }
        for src in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(s) = &src.secret {
                out.insert(s.name.clone());
            }
        }
    }
    for r in spec.image_pull_secrets.iter().flatten() {
        out.insert(r.name.clone());
    }
    out.retain(|n| !n.is_empty());
    out
}

fn holder(kind: HolderKind, meta: &impl ResourceExt) -> Holder {
    Holder {
        kind,
        namespace: meta.namespace().unwrap_or_default(),
        name: meta.name_any(),
        uid: meta.uid().unwrap_or_default(),
    }
}

pub fn replica_set(rs: &ReplicaSet) -> (Holder, BTreeSet<String>) {
    let names = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref()?.spec.as_ref())
        .map(pod_spec_secret_names)
        .unwrap_or_default();
    (holder(HolderKind::ReplicaSet, rs), names)
}

/// A StatefulSet's or DaemonSet's revision stores its pod template at `data.spec.template`.
pub fn controller_revision(cr: &ControllerRevision) -> (Holder, BTreeSet<String>) {
    let spec = cr
        .data
        .as_ref()
        .and_then(|d| d.0.pointer("/spec/template/spec"))
        .and_then(|s| serde_json::from_value::<PodSpec>(s.clone()).ok());
    (
        holder(HolderKind::ControllerRevision, cr),
        spec.as_ref().map(pod_spec_secret_names).unwrap_or_default(),
    )
}

/// Pods count only when no indexed history covers them (bare pods, Job pods, ...):
/// a pod of a ReplicaSet, StatefulSet or DaemonSet is held by its history.
pub fn pod(pod: &Pod) -> (Holder, BTreeSet<String>) {
    let covered = pod.owner_references().iter().any(|o| {
        o.controller == Some(true)
            && matches!(o.kind.as_str(), "ReplicaSet" | "StatefulSet" | "DaemonSet")
    });
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    let names = if covered || finished {
        BTreeSet::new()
    } else {
        pod.spec
            .as_ref()
            .map(pod_spec_secret_names)
            .unwrap_or_default()
    };
    (holder(HolderKind::Pod, pod), names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_reference_field_is_found() {
        let spec: PodSpec = serde_json::from_value(json!({
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
        }))
        .unwrap();
        let names: Vec<String> = pod_spec_secret_names(&spec).into_iter().collect();
        assert_eq!(
            names,
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
    }

    #[test]
    fn controller_revision_template_is_read() {
        let cr: ControllerRevision = serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "n", "uid": "u"},
            "revision": 1,
            "data": {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": "db-1"}}]}]}}}},
        }))
        .unwrap();
        let (h, names) = controller_revision(&cr);
        assert_eq!(
            (h.kind, h.name.as_str(), h.uid.as_str()),
            (HolderKind::ControllerRevision, "web-abc", "u")
        );
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["db-1"]);
    }

    #[test]
    fn pods_covered_by_history_or_finished_hold_nothing() {
        let mk = |owner: Option<&str>, phase: &str| -> Pod {
            let owners: Vec<_> = owner.into_iter().map(|k| json!({"apiVersion": "apps/v1", "kind": k, "name": "o", "uid": "x", "controller": true})).collect();
            serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "n", "uid": "u", "ownerReferences": owners},
                "spec": {"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": "s"}}]}]},
                "status": {"phase": phase},
            }))
            .unwrap()
        };
        assert_eq!(pod(&mk(None, "Running")).1.len(), 1);
        assert_eq!(pod(&mk(Some("Job"), "Running")).1.len(), 1);
        assert!(pod(&mk(Some("ReplicaSet"), "Running")).1.is_empty());
        assert!(pod(&mk(Some("StatefulSet"), "Running")).1.is_empty());
        assert!(pod(&mk(None, "Succeeded")).1.is_empty());
    }
}
