//! The stamp wing's decisions, pure: which namespaces a ClusterRandomSecret
//! selects, what to write or delete in each, the RandomSecret it stamps,
//! and the status that says how far it got. No IO here.

use super::cache::{NamespaceEntry, Readiness};
use crate::api::cluster::{
    ANNOTATION_TEMPLATE, ANNOTATION_VALUES, ClusterRandomSecret, ClusterRandomSecretStatus,
    DeletionPolicy, FailedNamespace, LABEL_CLUSTER, Values,
};
use crate::api::{API_VERSION, LABEL_MANAGED_BY, MANAGED_BY, READY};
use crate::proof::ANNOTATION_PROOF;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use kube::core::{Selector, SelectorExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Most namespaces listed in `status.failedNamespaces` (the Ready message
/// counts them all): a status stays small however many fail.
pub const MAX_FAILED_LISTED: usize = 50;

/// The namespaces `crs` selects, sorted: those its selector matches and
/// those it names, that exist, are not terminating and are not `excluded`.
/// A selector the apiserver would refuse is an error that says what to fix.
pub fn selected(
    crs: &ClusterRandomSecret,
    namespaces: &[(String, NamespaceEntry)],
    excluded: &[String],
) -> Result<Vec<String>, String> {
    let selector = crs
        .spec
        .namespace_selector
        .clone()
        .map(Selector::try_from)
        .transpose()
        .map_err(|e| format!("spec.namespaceSelector: {e}"))?;
    let mut out: Vec<String> = namespaces
        .iter()
        .filter(|(name, ns)| {
            !ns.terminating
                && !excluded.contains(name)
                && (selector.as_ref().is_some_and(|s| s.matches(&ns.labels))
                    || crs.spec.namespaces.contains(name))
        })
        .map(|(name, _)| name.clone())
        .collect();
    out.sort();
    Ok(out)
}

/// The digest of what a stamped RandomSecret gets from `crs` (its labels,
/// annotations, spec and whether it is owned): a stamped one annotated with
/// another digest is brought up to date.
pub fn digest(crs: &ClusterRandomSecret) -> String {
    let t = &crs.spec.template;
    let mut canonical = json!({
        "labels": t.metadata.labels,
        "annotations": t.metadata.annotations,
        "spec": t.spec,
        "owned": crs.spec.deletion_policy == DeletionPolicy::Delete,
    });
    // Added only when shared, so the digest of every PerNamespace stamp
    // made before values could be shared stays what it was.
    if crs.spec.values == Values::Shared {
        canonical["values"] = json!(Values::Shared.as_str());
    }
    let sum = Sha256::digest(canonical.to_string().as_bytes());
    sum[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A stamped RandomSecret in one selected namespace, as the caches show it.
#[derive(Clone, Debug, PartialEq)]
pub enum Here {
    /// No RandomSecret of that name.
    Absent,
    /// Ours (its proof verifies): its uid, whether it carries the current
    /// template, whether someone else edited it since our last write, and
    /// its Ready.
    Ours {
        uid: String,
        current: bool,
        drifted: bool,
        readiness: Readiness,
    },
    /// A RandomSecret of that name that is not ours: never touched.
    Foreign,
}

/// One write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create the RandomSecret in this namespace (fails if the name is taken).
    Create(String),
    /// Bring ours (this uid) up to the template.
    Update(String, String),
    /// Delete ours (this uid): its namespace is no longer selected, or
    /// selected no more, under `deletionPolicy: Delete`.
    Delete(String, String),
}

/// What to write: for each selected namespace by what is there, and for
/// each of ours elsewhere (`unselected`: namespace, uid) by the policy.
pub fn steps(
    selected: &[(String, Here)],
    unselected: &[(String, String)],
    policy: DeletionPolicy,
) -> Vec<Step> {
    let mut out: Vec<Step> = selected
        .iter()
        .filter_map(|(ns, here)| match here {
            Here::Absent => Some(Step::Create(ns.clone())),
            Here::Ours {
                uid,
                current,
                drifted,
                ..
            } if !current || *drifted => Some(Step::Update(ns.clone(), uid.clone())),
            Here::Ours { .. } | Here::Foreign => None,
        })
        .collect();
    if policy == DeletionPolicy::Delete {
        out.extend(
            unselected
                .iter()
                .map(|(ns, uid)| Step::Delete(ns.clone(), uid.clone())),
        );
    }
    out
}

/// The RandomSecret `crs` stamps into `namespace`, with its digest and
/// proof; owned by `crs` under `deletionPolicy: Delete` (so deleting it
/// deletes them), not otherwise (so deleting it leaves them).
pub fn stamped(crs: &ClusterRandomSecret, namespace: &str, digest: &str, proof: &str) -> Value {
    let name = crs.metadata.name.clone().unwrap_or_default();
    let (labels, annotations) = ours(crs, digest, proof);
    let mut metadata = json!({
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "annotations": annotations,
    });
    if let Some(owner) = owner(crs) {
        metadata["ownerReferences"] = json!([owner]);
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": "RandomSecret",
        "metadata": metadata,
        "spec": crs.spec.template.spec,
    })
}

/// The labels and annotations a stamped RandomSecret carries.
fn ours(
    crs: &ClusterRandomSecret,
    digest: &str,
    proof: &str,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let t = &crs.spec.template.metadata;
    let mut labels = t.labels.clone();
    labels.insert(
        LABEL_CLUSTER.into(),
        crs.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(LABEL_MANAGED_BY.into(), MANAGED_BY.into());
    let mut annotations = t.annotations.clone();
    annotations.insert(ANNOTATION_TEMPLATE.into(), digest.into());
    annotations.insert(ANNOTATION_PROOF.into(), proof.into());
    annotations.insert(ANNOTATION_VALUES.into(), crs.spec.values.as_str().into());
    (labels, annotations)
}

/// Under `deletionPolicy: Delete`: `crs` as the controlling owner.
fn owner(crs: &ClusterRandomSecret) -> Option<OwnerReference> {
    (crs.spec.deletion_policy == DeletionPolicy::Delete).then(|| OwnerReference {
        api_version: API_VERSION.into(),
        kind: "ClusterRandomSecret".into(),
        name: crs.metadata.name.clone().unwrap_or_default(),
        uid: crs.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The patch that brings ours (`uid`, with `owners` now) back to the
/// template: the spec replaced whole (a field someone added goes too), our
/// labels and annotations set (others' kept), the owners ours per the
/// policy (others' kept). It applies only to that uid.
pub fn update(
    crs: &ClusterRandomSecret,
    digest: &str,
    proof: &str,
    uid: &str,
    owners: &[OwnerReference],
) -> json_patch::Patch {
    let crs_uid = crs.metadata.uid.as_deref().unwrap_or_default();
    let mut owners: Vec<OwnerReference> = owners
        .iter()
        .filter(|o| o.uid != crs_uid)
        .cloned()
        .collect();
    owners.extend(owner(crs));
    let (labels, annotations) = ours(crs, digest, proof);
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": uid}),
        json!({"op": "add", "path": "/spec", "value": crs.spec.template.spec}),
        json!({"op": "add", "path": "/metadata/ownerReferences", "value": owners}),
    ];
    // A stamped one has labels and annotations (ours): each key is added
    // (or replaced) alone, "/" escaped as JSON Pointer says.
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    for (k, v) in labels {
        ops.push(
            json!({"op": "add", "path": format!("/metadata/labels/{}", escape(&k)), "value": v}),
        );
    }
    for (k, v) in annotations {
        ops.push(json!({"op": "add", "path": format!("/metadata/annotations/{}", escape(&k)), "value": v}));
    }
    serde_json::from_value(Value::Array(ops)).expect("a JSON patch")
}

/// Why a selected namespace is not provisioned.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A RandomSecret of the name exists and is not ours.
    NameConflict,
    /// The write failed (the apiserver's words are not repeated: what
    /// failed, in ours).
    WriteFailed(String),
}

/// The status: `selected` namespaces with what is there after the writes
/// (`failures` by namespace), the conditions carried from `previous`.
pub fn status(
    crs: &ClusterRandomSecret,
    selected: &[(String, Here)],
    failures: &BTreeMap<String, Failure>,
    now: Time,
) -> ClusterRandomSecretStatus {
    let name = crs.metadata.name.as_deref().unwrap_or_default();
    let mut provisioned = Vec::new();
    let mut failed = Vec::new();
    let (mut conflicts, mut write_failures, mut waiting, mut not_ready) = (0, 0, 0, 0);
    for (ns, here) in selected {
        if let Some(f) = failures.get(ns) {
            let (reason, message) = match f {
                Failure::NameConflict => {
                    conflicts += 1;
                    (
                        "NameConflict",
                        format!(
                            "RandomSecret {ns}/{name} exists and was not made by this ClusterRandomSecret: it is left alone; delete or rename it to let this one provision {ns}"
                        ),
                    )
                }
                Failure::WriteFailed(what) => {
                    write_failures += 1;
                    ("WriteFailed", what.clone())
                }
            };
            failed.push(FailedNamespace {
                namespace: ns.clone(),
                reason: reason.into(),
                message,
            });
            continue;
        }
        provisioned.push(ns.clone());
        match here {
            Here::Ours {
                readiness: Readiness::Ready,
                ..
            } => {}
            Here::Ours {
                readiness: Readiness::NotReady(Some((reason, message))),
                ..
            } => {
                not_ready += 1;
                failed.push(FailedNamespace {
                    namespace: ns.clone(),
                    reason: "NotReady".into(),
                    message: format!("RandomSecret {ns}/{name} is not Ready ({reason}): {message}"),
                });
            }
            _ => waiting += 1,
        }
    }
    let total = selected.len();
    let (ready, reason, message) = if conflicts > 0 {
        (
            false,
            "NameConflict",
            format!(
                "{conflicts} of {total} selected namespaces have a RandomSecret named {name} that is not this one's (see failedNamespaces)"
            ),
        )
    } else if write_failures > 0 {
        (
            false,
            "WriteFailed",
            format!(
                "{write_failures} of {total} selected namespaces could not be written; retrying (see failedNamespaces)"
            ),
        )
    } else if not_ready > 0 {
        (
            false,
            "NotReady",
            format!("{not_ready} of {total} RandomSecrets are not Ready (see failedNamespaces)"),
        )
    } else if waiting > 0 {
        (
            false,
            "Provisioning",
            format!("{waiting} of {total} RandomSecrets have no Ready version yet"),
        )
    } else {
        (
            true,
            "Provisioned",
            format!("{total} selected namespaces, each RandomSecret {name} Ready"),
        )
    };
    let total_failed = failed.len();
    failed.truncate(MAX_FAILED_LISTED);
    let message = if total_failed > MAX_FAILED_LISTED {
        format!("{message}; {MAX_FAILED_LISTED} of {total_failed} listed")
    } else {
        message
    };
    ClusterRandomSecretStatus {
        observed_generation: crs.metadata.generation,
        provisioned: i32::try_from(provisioned.len()).unwrap_or(i32::MAX),
        provisioned_namespaces: provisioned,
        failed_namespaces: failed,
        conditions: vec![ready_condition(crs, ready, reason, message, now)],
    }
}

/// The status of `crs` when its selector cannot be read: Ready=False,
/// reason InvalidSelector, with what to fix; nothing provisioned.
pub fn invalid(crs: &ClusterRandomSecret, message: String, now: Time) -> ClusterRandomSecretStatus {
    ClusterRandomSecretStatus {
        observed_generation: crs.metadata.generation,
        conditions: vec![ready_condition(crs, false, "InvalidSelector", message, now)],
        ..Default::default()
    }
}

/// The Ready condition; its transition time moves only when its status
/// does (from `crs`'s current status).
fn ready_condition(
    crs: &ClusterRandomSecret,
    ready: bool,
    reason: &str,
    message: String,
    now: Time,
) -> Condition {
    let status = if ready { "True" } else { "False" };
    let since = crs
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == READY))
        .filter(|c| c.status == status)
        .map_or(now, |c| c.last_transition_time.clone());
    Condition {
        type_: READY.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time: since,
        observed_generation: crs.metadata.generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::cluster::{ClusterRandomSecretSpec, RandomSecretTemplate};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    fn crs(selector: Option<LabelSelector>, names: &[&str]) -> ClusterRandomSecret {
        let mut c = ClusterRandomSecret::new(
            "db",
            ClusterRandomSecretSpec {
                namespace_selector: selector,
                namespaces: names.iter().map(|s| s.to_string()).collect(),
                deletion_policy: DeletionPolicy::Orphan,
                values: Values::PerNamespace,
                template: RandomSecretTemplate::default(),
            },
        );
        c.metadata.uid = Some("u1".into());
        c.metadata.generation = Some(3);
        c
    }

    fn ns(name: &str, labels: &[(&str, &str)], terminating: bool) -> (String, NamespaceEntry) {
        (
            name.into(),
            NamespaceEntry {
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                terminating,
            },
        )
    }

    fn tenants() -> LabelSelector {
        LabelSelector {
            match_labels: Some([("tenant".to_string(), "yes".to_string())].into()),
            ..Default::default()
        }
    }

    #[test]
    fn selects_by_label_and_by_name_but_never_excluded_or_terminating_namespaces() {
        let all = [
            ns("b", &[("tenant", "yes")], false),
            ns("a", &[("tenant", "yes")], false),
            ns("gone", &[("tenant", "yes")], true),
            ns("kube-system", &[("tenant", "yes")], false),
            ns("ops", &[], false),
            ns("other", &[("tenant", "no")], false),
        ];
        let excluded = vec!["kube-system".to_string()];
        let c = crs(Some(tenants()), &["ops", "missing"]);
        assert_eq!(selected(&c, &all, &excluded).unwrap(), ["a", "b", "ops"]);
        // Names alone; an empty selector selects every namespace.
        assert_eq!(
            selected(&crs(None, &["ops"]), &all, &excluded).unwrap(),
            ["ops"]
        );
        let every = crs(Some(LabelSelector::default()), &[]);
        assert_eq!(
            selected(&every, &all, &excluded).unwrap(),
            ["a", "b", "ops", "other"]
        );
        // A selector the apiserver would refuse says what to fix.
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "Near".into(),
                values: None,
            }]),
            ..Default::default()
        };
        let e = selected(&crs(Some(bad), &[]), &all, &excluded).unwrap_err();
        assert!(e.starts_with("spec.namespaceSelector: "), "{e}");
    }

    fn ours(current: bool, drifted: bool, readiness: Readiness) -> Here {
        Here::Ours {
            uid: "x".into(),
            current,
            drifted,
            readiness,
        }
    }

    #[test]
    fn creates_where_absent_updates_what_is_stale_and_never_touches_a_foreign_one() {
        let selected = [
            ("a".to_string(), Here::Absent),
            ("b".to_string(), ours(true, false, Readiness::Ready)),
            ("c".to_string(), ours(false, false, Readiness::Ready)),
            ("d".to_string(), ours(true, true, Readiness::Ready)),
            ("e".to_string(), Here::Foreign),
        ];
        let away = [("f".to_string(), "uf".to_string())];
        let want = vec![
            Step::Create("a".into()),
            Step::Update("c".into(), "x".into()),
            Step::Update("d".into(), "x".into()),
        ];
        assert_eq!(steps(&selected, &away, DeletionPolicy::Orphan), want);
        let mut with_delete = want.clone();
        with_delete.push(Step::Delete("f".into(), "uf".into()));
        assert_eq!(steps(&selected, &away, DeletionPolicy::Delete), with_delete);
    }

    #[test]
    fn the_digest_follows_the_template_and_the_policy() {
        let a = crs(None, &["x"]);
        let mut b = a.clone();
        b.spec.namespaces.push("y".into());
        assert_eq!(digest(&a), digest(&b), "the selection is not in the digest");
        b.spec
            .template
            .metadata
            .labels
            .insert("team".into(), "a".into());
        assert_ne!(digest(&a), digest(&b));
        let mut c = a.clone();
        c.spec.deletion_policy = DeletionPolicy::Delete;
        assert_ne!(digest(&a), digest(&c));
        assert_eq!(digest(&a).len(), 32);
        let mut d = a.clone();
        d.spec.values = Values::Shared;
        assert_ne!(digest(&a), digest(&d), "sharing values is a change");
        // A PerNamespace digest is what it was before values could be
        // shared: stamps made then are not all rewritten on upgrade.
        assert_eq!(digest(&a), "a0c3fbc39fcc7934a7d2dfeaffb5d0d5");
    }

    #[test]
    fn the_stamped_randomsecret_is_labelled_proven_and_owned_only_under_delete() {
        let mut c = crs(None, &["x"]);
        c.spec
            .template
            .metadata
            .labels
            .insert("team".into(), "a".into());
        let v = stamped(&c, "x", "d1", "v1.p");
        assert_eq!(v["metadata"]["namespace"], "x");
        assert_eq!(v["metadata"]["name"], "db");
        assert_eq!(v["metadata"]["labels"][LABEL_CLUSTER], "db");
        assert_eq!(v["metadata"]["labels"]["team"], "a");
        assert_eq!(v["metadata"]["annotations"][ANNOTATION_TEMPLATE], "d1");
        assert_eq!(v["metadata"]["annotations"][ANNOTATION_PROOF], "v1.p");
        assert!(v["metadata"].get("ownerReferences").is_none());
        c.spec.deletion_policy = DeletionPolicy::Delete;
        let v = stamped(&c, "x", "d1", "v1.p");
        assert_eq!(v["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(v["metadata"]["ownerReferences"][0]["controller"], true);
    }

    #[test]
    fn the_update_replaces_the_spec_keeps_others_owners_and_applies_to_one_uid_only() {
        let mut c = crs(None, &["x"]);
        c.spec
            .template
            .metadata
            .labels
            .insert("team".into(), "a".into());
        let theirs = OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "keep".into(),
            uid: "k".into(),
            ..Default::default()
        };
        let mine = owner(&{
            let mut d = c.clone();
            d.spec.deletion_policy = DeletionPolicy::Delete;
            d
        })
        .unwrap();
        let mut rs = json!({
            "apiVersion": API_VERSION, "kind": "RandomSecret",
            "metadata": {"name": "db", "namespace": "x", "uid": "r1",
                "labels": {"other": "kept", LABEL_CLUSTER: "db"},
                "annotations": {ANNOTATION_PROOF: "old"},
                "ownerReferences": [theirs, mine]},
            "spec": {"keys": {"password": {"length": 8}}, "history": 3},
        });
        // Under Orphan our owner reference goes, theirs stays.
        let p = update(&c, "d2", "v1.new", "r1", &[theirs.clone(), mine.clone()]);
        json_patch::patch(&mut rs, &p.0).unwrap();
        assert_eq!(rs["spec"], json!({}), "the template's spec, whole");
        assert_eq!(rs["metadata"]["labels"]["other"], "kept");
        assert_eq!(rs["metadata"]["labels"]["team"], "a");
        assert_eq!(rs["metadata"]["annotations"][ANNOTATION_PROOF], "v1.new");
        assert_eq!(rs["metadata"]["annotations"][ANNOTATION_TEMPLATE], "d2");
        assert_eq!(rs["metadata"]["ownerReferences"], json!([theirs]));
        // Another object under the name: the patch does not apply.
        rs["metadata"]["uid"] = "r2".into();
        assert!(json_patch::patch(&mut rs, &p.0).is_err());
    }

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_000).unwrap())
    }

    #[test]
    fn ready_only_when_every_selected_namespace_has_a_ready_randomsecret() {
        let c = crs(None, &[]);
        let none = BTreeMap::new();
        let all_ready = [
            ("a".to_string(), ours(true, false, Readiness::Ready)),
            ("b".to_string(), ours(true, false, Readiness::Ready)),
        ];
        let s = status(&c, &all_ready, &none, now());
        assert_eq!(s.provisioned_namespaces, ["a", "b"]);
        assert_eq!(s.provisioned, 2);
        assert_eq!(s.observed_generation, Some(3));
        assert_eq!(
            (
                s.conditions[0].status.as_str(),
                s.conditions[0].reason.as_str()
            ),
            ("True", "Provisioned")
        );

        let waiting = [
            ("a".to_string(), ours(true, false, Readiness::Ready)),
            ("b".to_string(), Here::Absent),
        ];
        let s = status(&c, &waiting, &none, now());
        assert_eq!(s.conditions[0].reason, "Provisioning");
        assert_eq!(s.provisioned_namespaces, ["a", "b"]);

        let broken = [(
            "a".to_string(),
            ours(
                true,
                false,
                Readiness::NotReady(Some(("InvalidSpec".into(), "fix it".into()))),
            ),
        )];
        let s = status(&c, &broken, &none, now());
        assert_eq!(s.conditions[0].reason, "NotReady");
        assert_eq!(s.failed_namespaces[0].reason, "NotReady");
        assert!(s.failed_namespaces[0].message.contains("InvalidSpec"));
    }

    #[test]
    fn a_conflict_is_named_and_outranks_waiting() {
        let c = crs(None, &[]);
        let selected = [
            ("a".to_string(), Here::Foreign),
            ("b".to_string(), Here::Absent),
        ];
        let failures = BTreeMap::from([("a".to_string(), Failure::NameConflict)]);
        let s = status(&c, &selected, &failures, now());
        assert_eq!(s.provisioned_namespaces, ["b"]);
        assert_eq!(s.failed_namespaces.len(), 1);
        assert_eq!(s.failed_namespaces[0].namespace, "a");
        assert_eq!(s.failed_namespaces[0].reason, "NameConflict");
        assert!(s.failed_namespaces[0].message.contains("a/db"));
        assert_eq!(s.conditions[0].status, "False");
        assert_eq!(s.conditions[0].reason, "NameConflict");
    }

    #[test]
    fn the_transition_time_moves_only_with_the_status_and_the_list_is_bounded() {
        let mut c = crs(None, &[]);
        let earlier = Time(k8s_openapi::jiff::Timestamp::from_second(10).unwrap());
        c.status = Some(ClusterRandomSecretStatus {
            conditions: vec![Condition {
                type_: READY.into(),
                status: "False".into(),
                reason: "Provisioning".into(),
                message: String::new(),
                last_transition_time: earlier.clone(),
                observed_generation: Some(2),
            }],
            ..Default::default()
        });
        let selected: Vec<(String, Here)> = (0..60)
            .map(|i| (format!("n{i:02}"), Here::Foreign))
            .collect();
        let failures = selected
            .iter()
            .map(|(n, _)| (n.clone(), Failure::NameConflict))
            .collect();
        let s = status(&c, &selected, &failures, now());
        assert_eq!(s.conditions[0].last_transition_time, earlier);
        assert_eq!(s.failed_namespaces.len(), MAX_FAILED_LISTED);
        assert!(s.conditions[0].message.ends_with("50 of 60 listed"));
        let ok = status(&c, &[], &BTreeMap::new(), now());
        assert_eq!(ok.conditions[0].status, "True");
        assert_eq!(ok.conditions[0].last_transition_time, now());
        // An unreadable selector: False from False keeps the time too.
        let bad = invalid(&c, "spec.namespaceSelector: x".into(), now());
        assert_eq!(
            (
                bad.conditions[0].status.as_str(),
                bad.conditions[0].reason.as_str()
            ),
            ("False", "InvalidSelector")
        );
        assert_eq!(bad.conditions[0].last_transition_time, earlier);
        assert!(bad.provisioned_namespaces.is_empty() && bad.failed_namespaces.is_empty());
    }
}
