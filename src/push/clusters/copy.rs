//! What the cluster push writes downstream, and how it tells its own objects
//! from others'. Pure: no IO.
//!
//! - A **copy** of a version: the same name, data, type, labels and
//!   annotations (its proof of creation among them), `immutable`, plus the
//!   label [`LABEL_COPY_OF`] (the upstream namespace). Its proof was made
//!   for the upstream namespace, so it is checked as if it stood there: a
//!   Secret is our copy only if it carries that proof and the data it covers.
//! - An **anchor** per RandomSecret and target namespace (`<base>-anchor`, a
//!   Secret of type [`ANCHOR_TYPE`] without data): it owns the current and
//!   `history` copies, as the RandomSecret owns them upstream, so the
//!   downstream garbage collector deletes a superseded copy when its last
//!   downstream holder goes, with or without this controller.

use crate::api::{LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY};
use crate::proof::{ANNOTATION_PROOF, Proof, ProofKey};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::collections::BTreeMap;

/// On every copy and anchor: the upstream namespace it came from (what the
/// downstream watch selects).
pub const LABEL_COPY_OF: &str = crate::api::key!("copy-of");
/// On every copy and anchor: `<upstream namespace>/<RandomSecret>`.
pub const ANNOTATION_COPY_OF: &str = crate::api::key!("copy-of");
/// On anchors only.
pub const LABEL_ANCHOR: &str = crate::api::key!("anchor");
pub const ANCHOR_TYPE: &str = crate::api::key!("anchor");
/// The proof domain of anchors (`ProofKey::sign_fields`).
const ANCHOR_PROOF: &str = "anchor";

/// The anchor's name for a base name (`spec.secretName`): never a version's
/// name (those end in `-` and ten characters of the hash alphabet).
pub fn anchor_name(base: &str) -> String {
    format!("{base}-anchor")
}

/// Where a copy or anchor came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin<'a> {
    /// The RandomSecret's namespace and name upstream.
    pub namespace: &'a str,
    pub randomsecret: &'a str,
}

impl Origin<'_> {
    fn annotation(&self) -> String {
        format!("{}/{}", self.namespace, self.randomsecret)
    }
}

/// The copy of `upstream` (a version Secret, read whole) for `namespace`,
/// owned by `owners` there.
pub fn copy_of(upstream: &Secret, namespace: &str, owners: Vec<OwnerReference>) -> Secret {
    let m = &upstream.metadata;
    let mut labels = m.labels.clone().unwrap_or_default();
    labels.insert(
        LABEL_COPY_OF.into(),
        m.namespace.clone().unwrap_or_default(),
    );
    let mut annotations = m.annotations.clone().unwrap_or_default();
    annotations.insert(
        ANNOTATION_COPY_OF.into(),
        format!(
            "{}/{}",
            m.namespace.as_deref().unwrap_or_default(),
            labels.get(LABEL_NAME).map_or("", String::as_str)
        ),
    );
    Secret {
        metadata: ObjectMeta {
            name: m.name.clone(),
            namespace: Some(namespace.into()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(owners),
            ..Default::default()
        },
        immutable: Some(true),
        type_: upstream.type_.clone(),
        data: upstream.data.clone(),
        ..Default::default()
    }
}

/// What a Secret found downstream under a copy's name is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// Our copy of this version: same values.
    Ours,
    /// Our copy of a version of this name, with other values (the upstream
    /// version was released and re-created since): never overwritten.
    Mismatch,
    /// Not made by this controller: never touched.
    Foreign,
}

/// Whether `copy` (read whole) is our copy of a version of `origin_namespace`:
/// its proof verifies as if it stood in that namespace, with its data.
pub fn proven_copy(key: &ProofKey, copy: &Secret, origin_namespace: &str) -> bool {
    let mut upstream_view = copy.clone();
    upstream_view.metadata.namespace = Some(origin_namespace.into());
    copy.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_COPY_OF))
        .is_some_and(|ns| ns == origin_namespace)
        && key.check_secret(&upstream_view) == Proof::Valid
}

/// Why the upstream `version` (read whole) may not be copied, if it may not:
/// it must be the object the cache saw (`cached_uid`: the same incarnation,
/// not one put there since), controlled by this RandomSecret (`rs_uid`),
/// labelled with its name, and carry a valid proof of creation over its
/// namespace, name, labels, type and data (immutable). An owner reference
/// and labels are anyone's to write; the proof is not.
pub fn unproven_version(
    key: &ProofKey,
    version: &Secret,
    rs_name: &str,
    rs_uid: &str,
    cached_uid: Option<&str>,
) -> Option<String> {
    let m = &version.metadata;
    let name = m.name.as_deref().unwrap_or_default();
    if cached_uid.is_none() || m.uid.as_deref() != cached_uid {
        return Some(format!(
            "Secret {name} upstream is not the version this controller has seen (created again since?)"
        ));
    }
    let owned = m
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == rs_uid && o.controller == Some(true));
    let labelled = m
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_NAME))
        .is_some_and(|n| n == rs_name);
    (!owned || !labelled || key.check_secret(version) != Proof::Valid).then(|| {
        format!(
            "Secret {name} upstream carries no valid proof that this controller made it as a version of this RandomSecret: it is not copied"
        )
    })
}

/// Classifies `found` (read whole, downstream) against `upstream` (the
/// version, read whole).
pub fn classify(key: &ProofKey, found: &Secret, upstream: &Secret) -> Found {
    let ns = upstream.metadata.namespace.as_deref().unwrap_or_default();
    if !proven_copy(key, found, ns) {
        return Found::Foreign;
    }
    let type_of = |s: &Secret| s.type_.clone().unwrap_or_else(|| "Opaque".into());
    if found.data == upstream.data && type_of(found) == type_of(upstream) {
        Found::Ours
    } else {
        Found::Mismatch
    }
}

fn anchor_fields<'a>(origin: &'a Origin<'a>, namespace: &'a str, name: &'a str) -> [&'a str; 4] {
    [origin.namespace, origin.randomsecret, namespace, name]
}

/// The anchor of `origin`'s copies in `namespace`, signed for it.
pub fn anchor(key: &ProofKey, origin: &Origin, base: &str, namespace: &str) -> Secret {
    let name = anchor_name(base);
    let proof = key.sign_fields(ANCHOR_PROOF, &anchor_fields(origin, namespace, &name));
    Secret {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.into()),
            labels: Some(BTreeMap::from([
                (LABEL_NAME.into(), origin.randomsecret.into()),
                (LABEL_COPY_OF.into(), origin.namespace.into()),
                (LABEL_ANCHOR.into(), "true".into()),
                (LABEL_MANAGED_BY.into(), MANAGED_BY.into()),
            ])),
            annotations: Some(BTreeMap::from([
                (ANNOTATION_COPY_OF.into(), origin.annotation()),
                (ANNOTATION_PROOF.into(), proof),
            ])),
            ..Default::default()
        },
        immutable: Some(true),
        type_: Some(ANCHOR_TYPE.into()),
        ..Default::default()
    }
}

/// Whether `meta` is the anchor this controller made for `origin` (its
/// metadata says all there is: an anchor has no data).
pub fn proven_anchor(key: &ProofKey, meta: &ObjectMeta, origin: &Origin) -> bool {
    let (Some(name), Some(namespace)) = (meta.name.as_deref(), meta.namespace.as_deref()) else {
        return false;
    };
    let proof = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_PROOF))
        .map(String::as_str);
    key.check_fields(ANCHOR_PROOF, &anchor_fields(origin, namespace, name), proof) == Proof::Valid
}

/// The anchor as the copies' owner (their controller, as the RandomSecret is upstream).
pub fn anchor_owner(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Secret".into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn version(key: &ProofKey, ns: &str, value: &str) -> Secret {
        let mut s = Secret {
            metadata: ObjectMeta {
                name: Some("db-b2c4d6f8gh".into()),
                namespace: Some(ns.into()),
                labels: Some(BTreeMap::from([
                    (LABEL_NAME.into(), "db".into()),
                    ("randomsecret.io/hash".into(), "b2c4d6f8gh".into()),
                    (LABEL_MANAGED_BY.into(), MANAGED_BY.into()),
                ])),
                annotations: Some(BTreeMap::new()),
                ..Default::default()
            },
            immutable: Some(true),
            type_: Some("Opaque".into()),
            data: Some(BTreeMap::from([(
                "password".into(),
                ByteString(value.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        let proof = key.sign(&s);
        s.metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(ANNOTATION_PROOF.into(), proof);
        s
    }

    #[test]
    fn a_copy_keeps_everything_and_says_where_it_came_from() {
        let key = ProofKey::generate().unwrap();
        let up = version(&key, "team-a", "s3cr3t");
        let owner = anchor_owner("db-anchor", "u1");
        let c = copy_of(&up, "apps", vec![owner.clone()]);
        assert_eq!(c.metadata.name, up.metadata.name);
        assert_eq!(c.metadata.namespace.as_deref(), Some("apps"));
        assert_eq!(c.data, up.data);
        assert_eq!(c.type_, up.type_);
        assert_eq!(c.immutable, Some(true));
        let labels = c.metadata.labels.as_ref().unwrap();
        for (k, v) in up.metadata.labels.as_ref().unwrap() {
            assert_eq!(labels.get(k), Some(v), "{k}");
        }
        assert_eq!(
            labels.get(LABEL_COPY_OF).map(String::as_str),
            Some("team-a")
        );
        assert_eq!(
            c.metadata
                .annotations
                .as_ref()
                .unwrap()
                .get(ANNOTATION_COPY_OF)
                .map(String::as_str),
            Some("team-a/db")
        );
        assert_eq!(c.metadata.owner_references, Some(vec![owner]));
        assert_eq!(classify(&key, &c, &up), Found::Ours);
    }

    #[test]
    fn other_values_another_origin_or_another_key_are_never_ours() {
        let key = ProofKey::generate().unwrap();
        let up = version(&key, "team-a", "s3cr3t");
        // The same name re-created upstream with new values: the old copy mismatches.
        let old = copy_of(&version(&key, "team-a", "older"), "apps", vec![]);
        assert_eq!(classify(&key, &old, &up), Found::Mismatch);
        // Another namespace's version of the same name is not this one's copy.
        let other_ns = copy_of(&version(&key, "team-b", "s3cr3t"), "apps", vec![]);
        assert_eq!(classify(&key, &other_ns, &up), Found::Foreign);
        // Another controller's key, or a proof copied onto other data.
        let theirs = copy_of(
            &version(&ProofKey::generate().unwrap(), "team-a", "s3cr3t"),
            "apps",
            vec![],
        );
        assert_eq!(classify(&key, &theirs, &up), Found::Foreign);
        let mut forged = copy_of(&up, "apps", vec![]);
        forged.data = Some(BTreeMap::from([(
            "password".into(),
            ByteString(b"planted".to_vec()),
        )]));
        assert_eq!(classify(&key, &forged, &up), Found::Foreign);
        // A look-alike without the copy label.
        let mut unlabelled = copy_of(&up, "apps", vec![]);
        unlabelled
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(LABEL_COPY_OF);
        assert_eq!(classify(&key, &unlabelled, &up), Found::Foreign);
    }

    /// A Secret made to look like a version upstream (owner reference,
    /// labels) is never copied; the signed one is, and only the incarnation
    /// the cache saw.
    #[test]
    fn only_a_proven_version_the_cache_saw_is_copied() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let key = ProofKey::generate().unwrap();
        let mut signed = version(&key, "team-a", "s3cr3t");
        signed.metadata.uid = Some("v1".into());
        signed.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "randomsecret.io/v1".into(),
            kind: "RandomSecret".into(),
            name: "db".into(),
            uid: "rs-uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        assert_eq!(
            unproven_version(&key, &signed, "db", "rs-uid", Some("v1")),
            None
        );
        // A look-alike: the same labels and owner, no proof.
        let mut planted = signed.clone();
        planted.metadata.annotations = Some(BTreeMap::new());
        let why = unproven_version(&key, &planted, "db", "rs-uid", Some("v1")).unwrap();
        assert!(why.contains("no valid proof"), "{why}");
        // The proof copied onto other values.
        let mut forged = signed.clone();
        forged.data = Some(BTreeMap::from([(
            "password".into(),
            ByteString(b"planted".to_vec()),
        )]));
        assert!(unproven_version(&key, &forged, "db", "rs-uid", Some("v1")).is_some());
        // Another RandomSecret's, another key's, or not the one the cache saw.
        assert!(unproven_version(&key, &signed, "other", "rs-uid", Some("v1")).is_some());
        assert!(unproven_version(&key, &signed, "db", "other-uid", Some("v1")).is_some());
        let other = ProofKey::generate().unwrap();
        assert!(unproven_version(&other, &signed, "db", "rs-uid", Some("v1")).is_some());
        let why = unproven_version(&key, &signed, "db", "rs-uid", Some("v0")).unwrap();
        assert!(why.contains("not the version"), "{why}");
        assert!(unproven_version(&key, &signed, "db", "rs-uid", None).is_some());
    }

    #[test]
    fn an_anchor_is_proven_only_where_and_for_whom_it_was_made() {
        let key = ProofKey::generate().unwrap();
        let origin = Origin {
            namespace: "team-a",
            randomsecret: "db",
        };
        let a = anchor(&key, &origin, "db", "apps");
        assert_eq!(a.metadata.name.as_deref(), Some("db-anchor"));
        assert!(a.data.is_none());
        assert!(proven_anchor(&key, &a.metadata, &origin));
        let other = Origin {
            namespace: "team-b",
            randomsecret: "db",
        };
        assert!(!proven_anchor(&key, &a.metadata, &other));
        let mut moved = a.metadata.clone();
        moved.namespace = Some("elsewhere".into());
        assert!(!proven_anchor(&key, &moved, &origin));
        assert!(!proven_anchor(
            &ProofKey::generate().unwrap(),
            &a.metadata,
            &origin
        ));
        assert!(!crate::references::could_be_version(&anchor_name("db-abc")));
    }
}
