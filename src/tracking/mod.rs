//! Tracking mode, for users who do not pin versioned names in git: a
//! Deployment, StatefulSet or DaemonSet annotated
//! `randomsecret.io/track: <RandomSecret>[,<RandomSecret>...]` has its pod
//! template's references to those RandomSecrets (base name or any version)
//! pointed at the current version, which starts an ordinary rollout.
//!
//! A rollback is a human's intent, and tracking keeps it: each workload
//! carries a record, per RandomSecret it tracks, of the version the
//! controller last pointed it at (or found it on) as current, in a label
//! `tracked.randomsecret.io/<RandomSecret>: <hash>`. A template back on an
//! older, existing version while the record names the current one was moved
//! there by someone (`kubectl rollout undo`): it is left there ([`decide`]).
//! A label, not an annotation: `kubectl rollout undo` of a Deployment
//! replaces its annotations with those of the ReplicaSet it goes back to
//! (which recorded the older version), but leaves its labels alone.

pub mod batch;

use crate::cache::Key;
use crate::cache::holders::{Workload, WorkloadKind};
use crate::version::hash_alphabet_contains;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

pub const ANNOTATION_TRACK: &str = crate::api::key!("track");
/// Prefix of the record labels (`tracked.randomsecret.io/<RandomSecret>`);
/// a RandomSecret's name (at most 63 characters) is a valid label name.
pub const RECORD_PREFIX: &str = "tracked.randomsecret.io/";

/// The record label of RandomSecret `rs` on the workloads that track it.
pub fn record_label(rs: &str) -> String {
    format!("{RECORD_PREFIX}{rs}")
}

/// A workload's generation and record labels, hashed.
fn seen(meta: &ObjectMeta) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut h);
    for (k, v) in meta.labels.iter().flatten() {
        if k.starts_with(RECORD_PREFIX) {
            (k, v).hash(&mut h);
        }
    }
    h.finish()
}

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
        seen: seen(meta),
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

/// The names in a pod template spec that `own` accepts (the RandomSecret's
/// base name or its versions), as the rewrite sees them.
pub fn own_references(pod_spec: &Value, own: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
    let found = std::cell::RefCell::new(BTreeSet::new());
    crate::references::rewrite_pod_spec(&mut pod_spec.clone(), &|name| {
        if own(name) {
            found.borrow_mut().insert(name.to_string());
        }
        None
    });
    found.into_inner()
}

/// What tracking does with one workload, for one RandomSecret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to change.
    Leave,
    /// The template is on the current version already: only the record is
    /// written (a workload pointed before records existed, or by hand).
    Record,
    /// Point the template at the current version and record it.
    Point,
    /// Someone moved it back from the current version to these older,
    /// existing versions (`kubectl rollout undo`): leave it there.
    Pinned(Vec<String>),
}

/// The decision for a workload whose template references `refs` (its own
/// names, see [`own_references`]), whose record label is `record`, while
/// the current version is `current` with hash `hash`; `exists`: whether a
/// name is a version that exists.
///
/// Pinned only when the record names the current version (the controller
/// pointed it there, or saw it there) and every other reference is an
/// existing version: a base name or a deleted version cannot run, so it is
/// pointed. A record of another version means a rotation since: a new
/// intent, pointed as without a record.
pub fn decide(
    refs: &BTreeSet<String>,
    current: &str,
    hash: &str,
    record: Option<&str>,
    exists: &dyn Fn(&str) -> bool,
) -> Decision {
    let recorded_current = record == Some(hash);
    let older: Vec<String> = refs.iter().filter(|n| *n != current).cloned().collect();
    if older.is_empty() {
        return if refs.is_empty() || recorded_current {
            Decision::Leave
        } else {
            Decision::Record
        };
    }
    if recorded_current && older.iter().all(|n| exists(n)) {
        Decision::Pinned(older)
    } else {
        Decision::Point
    }
}

/// The merge patch that records, per RandomSecret, the `(name, hash)` of
/// `records` (and, with `pod_spec`, points the template): only their own
/// labels, so the records of the other RandomSecrets a workload tracks are
/// kept; `resourceVersion` makes a concurrent change a conflict (read and
/// decide again).
pub fn record_patch(
    resource_version: Option<&str>,
    records: &[(&str, &str)],
    pod_spec: Option<&Value>,
) -> Value {
    let labels: serde_json::Map<String, Value> = records
        .iter()
        .map(|(rs, hash)| (record_label(rs), json!(hash)))
        .collect();
    let mut patch = json!({"metadata": {
        "resourceVersion": resource_version,
        "labels": labels,
    }});
    if let Some(spec) = pod_spec {
        patch["spec"] = json!({"template": {"spec": spec}});
    }
    patch
}

/// How to move a pinned workload onto the current version, for Events and
/// the condition.
pub fn unpin_hint(rs: &str, namespace: &str, kind: WorkloadKind, workload: &str) -> String {
    format!(
        "to point it at the current version, rotate again (a new version), set spec.rotation back to the pinned version's, or remove its record: kubectl label -n {namespace} {}/{workload} {}-",
        kind.as_str().to_lowercase(),
        record_label(rs)
    )
}

/// The WorkloadsPinned condition's message: who is pinned (the first few),
/// and how to move them on.
pub fn pinned_message(rs: &str, current: &str, pinned: &[crate::api::PinnedWorkload]) -> String {
    const NAMED: usize = 3;
    let mut named: Vec<String> = pinned
        .iter()
        .take(NAMED)
        .map(|p| format!("{} {} ({})", p.kind, p.name, p.secret_name))
        .collect();
    if pinned.len() > NAMED {
        named.push(format!(
            "{} more in status.pinnedWorkloads",
            pinned.len() - NAMED
        ));
    }
    format!(
        "Rolled back to an older version after tracking had pointed them at the current one, and left there: {}. The next rotation points them at its version; to point one at {current} now, remove its record label {}",
        named.join(", "),
        record_label(rs)
    )
}

/// The `envFrom` Secret names of a pod spec's first container, for tests.
#[cfg(test)]
pub(crate) fn env_from_names(spec: &Value) -> Vec<&str> {
    spec["containers"][0]["envFrom"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["secretRef"]["name"].as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn refs(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    const V1: &str = "db-hgkm245tbc";
    const V2: &str = "db-tmm2ctc5b4";
    const H2: &str = "tmm2ctc5b4";

    #[test]
    fn a_rollback_from_the_recorded_current_version_is_pinned() {
        let exists = |n: &str| n == V1 || n == V2;
        assert_eq!(
            decide(&refs(&[V1]), V2, H2, Some(H2), &exists),
            Decision::Pinned(vec![V1.into()])
        );
        // Mixed with the current version (one container rolled back): pinned too.
        assert_eq!(
            decide(&refs(&[V1, V2]), V2, H2, Some(H2), &exists),
            Decision::Pinned(vec![V1.into()])
        );
    }

    #[test]
    fn a_record_of_an_older_version_or_none_is_pointed() {
        let exists = |n: &str| n == V1 || n == V2;
        // A rotation since the record: a new intent.
        assert_eq!(
            decide(&refs(&[V1]), V2, H2, Some("hgkm245tbc"), &exists),
            Decision::Point
        );
        // Never pointed (no record), or a record that is not a hash.
        assert_eq!(decide(&refs(&[V1]), V2, H2, None, &exists), Decision::Point);
        assert_eq!(
            decide(&refs(&[V1]), V2, H2, Some("junk"), &exists),
            Decision::Point
        );
    }

    #[test]
    fn names_that_cannot_run_are_pointed_even_when_recorded() {
        // The base name (a placeholder, a GitOps sync put it back) or a
        // version that no longer exists.
        let exists = |n: &str| n == V2;
        assert_eq!(
            decide(&refs(&["db"]), V2, H2, Some(H2), &exists),
            Decision::Point
        );
        assert_eq!(
            decide(&refs(&[V1]), V2, H2, Some(H2), &exists),
            Decision::Point
        );
        assert_eq!(
            decide(&refs(&["db", V1]), V2, H2, Some(H2), &|n| n == V1
                || n == V2),
            Decision::Point
        );
    }

    #[test]
    fn a_template_on_the_current_version_is_recorded_once() {
        let exists = |_: &str| true;
        assert_eq!(
            decide(&refs(&[V2]), V2, H2, None, &exists),
            Decision::Record
        );
        assert_eq!(
            decide(&refs(&[V2]), V2, H2, Some("hgkm245tbc"), &exists),
            Decision::Record
        );
        assert_eq!(
            decide(&refs(&[V2]), V2, H2, Some(H2), &exists),
            Decision::Leave
        );
        // Not referencing this RandomSecret at all: nothing to record.
        assert_eq!(decide(&refs(&[]), V2, H2, None, &exists), Decision::Leave);
    }

    #[test]
    fn own_references_are_the_names_the_rewrite_would_see() {
        let spec = json!({"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": V1}}],
            "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "tls", "key": "k"}}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "db"}}]});
        let own = |n: &str| refers_to(n, "db");
        assert_eq!(own_references(&spec, &own), refs(&["db", V1]));
        assert!(own_references(&spec, &|_| false).is_empty());
    }

    /// Several RandomSecrets track one workload: each patch carries only its
    /// own record, so a merge keeps the others' (and the user's labels).
    #[test]
    fn a_record_patch_keeps_other_randomsecrets_records() {
        let mut obj = json!({"metadata": {"labels": {
            "app": "web", "tracked.randomsecret.io/api": "c8h2d5q9bx", "tracked.randomsecret.io/db": "hgkm245tbc"}}});
        let spec = json!({"containers": []});
        let patch = record_patch(Some("42"), &[("db", H2)], Some(&spec));
        assert_eq!(patch["metadata"]["resourceVersion"], "42");
        assert_eq!(patch["spec"]["template"]["spec"], spec);
        json_patch::merge(&mut obj, &patch);
        assert_eq!(
            obj["metadata"]["labels"],
            json!({"app": "web", "tracked.randomsecret.io/api": "c8h2d5q9bx", "tracked.randomsecret.io/db": H2})
        );
        let only = record_patch(None, &[("api", "c8h2d5q9bx")], None);
        assert!(
            only.get("spec").is_none(),
            "a record alone does not touch the template"
        );
    }

    #[test]
    fn a_new_template_or_record_is_a_new_payload_other_changes_are_not() {
        let meta = |generation: i64, labels: serde_json::Value| -> ObjectMeta {
            serde_json::from_value(
                json!({"name": "web", "namespace": "n", "generation": generation,
                "labels": labels, "annotations": {ANNOTATION_TRACK: "db"}}),
            )
            .unwrap()
        };
        let w = |m: &ObjectMeta| workload(WorkloadKind::Deployment, m).unwrap().0;
        let base = w(&meta(1, json!({"app": "web"})));
        let same = w(&meta(1, json!({"app": "web", "team": "x"})));
        assert!(crate::cache::index::Payload::same_payload(&base, &same));
        for other in [
            w(&meta(2, json!({"app": "web"}))),
            w(&meta(
                1,
                json!({"app": "web", "tracked.randomsecret.io/db": H2}),
            )),
        ] {
            assert_eq!(base, other, "the same workload");
            assert!(!crate::cache::index::Payload::same_payload(&base, &other));
        }
    }

    #[test]
    fn the_pinned_message_names_a_few_and_the_label() {
        let p = |i: usize| crate::api::PinnedWorkload {
            kind: "Deployment".into(),
            name: format!("web-{i}"),
            secret_name: V1.into(),
        };
        let one = pinned_message("db", V2, &[p(0)]);
        assert!(one.contains(&format!("Deployment web-0 ({V1})")), "{one}");
        assert!(
            one.contains("tracked.randomsecret.io/db") && one.contains(V2),
            "{one}"
        );
        let many = pinned_message("db", V2, &(0..5).map(p).collect::<Vec<_>>());
        assert!(many.contains("web-2") && !many.contains("web-3"), "{many}");
        assert!(many.contains("2 more in status.pinnedWorkloads"), "{many}");
        let hint = unpin_hint("db", "shop", WorkloadKind::StatefulSet, "pg");
        assert!(
            hint.contains("kubectl label -n shop statefulset/pg tracked.randomsecret.io/db-"),
            "{hint}"
        );
    }
}
