//! Tracking mode, for users who do not pin versioned names in git: a
//! Deployment, StatefulSet or DaemonSet annotated
//! `randomsecret.io/track: <RandomSecret>[,<RandomSecret>...]` has its pod
//! template's references to those RandomSecrets (base name or any version)
//! pointed at the current version, which starts an ordinary rollout.

use crate::cache::{Key, Namespace};
use crate::version::hash_alphabet_contains;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use std::collections::BTreeMap;

pub const ANNOTATION_TRACK: &str = "randomsecret.io/track";

/// The workload kinds tracking mode rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl WorkloadKind {
    pub fn api_resource(self) -> kube::core::ApiResource {
        match self {
            WorkloadKind::Deployment => kube::core::ApiResource::erase::<Deployment>(&()),
            WorkloadKind::StatefulSet => kube::core::ApiResource::erase::<StatefulSet>(&()),
            WorkloadKind::DaemonSet => kube::core::ApiResource::erase::<DaemonSet>(&()),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub namespace: Namespace,
    pub name: crate::cache::Name,
}

impl crate::cache::index::Payload for Workload {}

/// The RandomSecrets a workload's annotation names.
pub fn tracked_names(annotations: &BTreeMap<String, String>) -> Vec<String> {
    annotations
        .get(ANNOTATION_TRACK)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The workload and the RandomSecrets it tracks.
pub fn workload(kind: WorkloadKind, meta: &ObjectMeta) -> Option<(Workload, Vec<Key>)> {
    let key = Key::of(meta);
    let tracked = meta
        .annotations
        .as_ref()
        .map(tracked_names)
        .unwrap_or_default();
    let rs = tracked.iter().map(|n| key.sibling(n)).collect();
    let w = Workload {
        kind,
        namespace: key.namespace,
        name: meta.name.as_deref()?.into(),
    };
    Some((w, rs))
}

/// Whether `name` is the base name or a version (`<base>-<hash>`) of it.
pub fn refers_to(name: &str, base: &str) -> bool {
    name == base
        || name
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|hash| hash.len() == 10 && hash.chars().all(hash_alphabet_contains))
}

/// Points every reference in a pod template spec that `own` accepts (the
/// RandomSecret's base name or one of its versions) at `current`; returns
/// how many changed.
pub fn retarget(pod_spec: &mut Value, own: &dyn Fn(&str) -> bool, current: &str) -> usize {
    crate::references::rewrite_pod_spec(pod_spec, &|name| {
        (name != current && own(name)).then(|| current.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotation_lists_names() {
        let a = BTreeMap::from([(ANNOTATION_TRACK.to_string(), " db, api ,,".to_string())]);
        assert_eq!(tracked_names(&a), ["db", "api"]);
        assert!(tracked_names(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn base_name_and_versions_are_recognised() {
        assert!(refers_to("db", "db"));
        assert!(refers_to("db-tmm2ctc5b4", "db"));
        assert!(!refers_to("db-creds", "db"));
        assert!(!refers_to("db-tmm2ctc5b", "db"));
        assert!(!refers_to("db-tmm2ctc5ba", "db")); // 'a' is never in a hash
        assert!(!refers_to("other-tmm2ctc5b4", "db"));
    }

    #[test]
    fn retarget_moves_base_and_old_versions_only() {
        let mut spec = json!({"containers": [{"name": "a", "envFrom": [
            {"secretRef": {"name": "db"}}, {"secretRef": {"name": "db-hgkm245tbc"}}, {"secretRef": {"name": "db-creds"}}]}]});
        let own = |n: &str| refers_to(n, "db");
        assert_eq!(retarget(&mut spec, &own, "db-tmm2ctc5b4"), 2);
        let names: Vec<&str> = spec["containers"][0]["envFrom"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["secretRef"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["db-tmm2ctc5b4", "db-tmm2ctc5b4", "db-creds"]);
        assert_eq!(
            retarget(&mut spec, &own, "db-tmm2ctc5b4"),
            0,
            "nothing left to move"
        );
        let none = |_: &str| false;
        assert_eq!(retarget(&mut spec, &none, "db-hgkm245tbc"), 0);
    }
}
