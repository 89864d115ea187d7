//! The watched types: each deserializes only the fields the caches read, so
//! a page of 500 ReplicaSets never becomes 500 full pod templates (and their
//! managedFields) in memory. Each implements `kube::Resource` with the
//! constants of the full type, so `watcher` and `Api` treat it as that kind.

use crate::proof::ANNOTATION_PROOF;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, BTreeSet};

/// Metadata without managedFields, labels and annotations: what identifies
/// the object and its owners.
pub fn slim_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    Ok(Slim::<IgnoredAny>::deserialize(d)?.meta())
}

/// [`slim_meta`], plus what a stamped RandomSecret claims
/// (`crate::stamp::claim`): its cluster label and stamp annotations, only
/// when it carries the label; and its shard labels (`crate::shard::keys`).
/// Other labels and annotations are dropped as they are read.
pub fn claimed_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    use crate::api::cluster::{ANNOTATION_TEMPLATE, ANNOTATION_VALUES, LABEL_CLUSTER};
    let mut s = Slim::<BTreeMap<String, String>>::deserialize(d)?;
    let (labels, annotations) = (s.labels.take(), s.annotations.take());
    let mut meta = s.meta();
    let shard = crate::shard::keys();
    let stamped = labels
        .as_ref()
        .is_some_and(|l| l.contains_key(LABEL_CLUSTER));
    let pick = |m: Option<BTreeMap<String, String>>, keep: &dyn Fn(&str) -> bool| {
        let mut m = m?;
        m.retain(|k, _| keep(k));
        (!m.is_empty()).then_some(m)
    };
    meta.labels = pick(labels, &|k| {
        (stamped && k == LABEL_CLUSTER) || shard.iter().any(|s| s == k)
    });
    if stamped {
        meta.annotations = pick(annotations, &|k| {
            [ANNOTATION_TEMPLATE, ANNOTATION_VALUES, ANNOTATION_PROOF].contains(&k)
        });
    }
    Ok(meta)
}

/// The metadata fields the caches read; labels and annotations as `L`
/// (skipped unread, or read whole for [`claimed_meta`] to pick from).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Slim<L> {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    owner_references: Option<Vec<OwnerReference>>,
    // Rare and short (the push's finalizer on RandomSecrets).
    finalizers: Option<Vec<String>>,
    labels: Option<L>,
    annotations: Option<L>,
}

impl<L> Slim<L> {
    fn meta(self) -> ObjectMeta {
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            generation: self.generation,
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            owner_references: self.owner_references,
            finalizers: self.finalizers,
            ..Default::default()
        }
    }
}

/// Implements `kube::Resource` for a slim type by borrowing a full type's
/// group, version, kind and plural.
macro_rules! slim_resource {
    ($slim:ty, $full:ty) => {
        impl kube::Resource for $slim {
            type DynamicType = ();
            type Scope = k8s_openapi::NamespaceResourceScope;
            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                <$full as kube::Resource>::kind(&())
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                <$full as kube::Resource>::group(&())
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                <$full as kube::Resource>::version(&())
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                <$full as kube::Resource>::plural(&())
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

/// An Argo Rollout (argoproj.io/v1alpha1), for tracking mode: watched as
/// metadata only, read and patched as a dynamic object. Argo Rollouts'
/// types are not a dependency; this names its resource.
#[derive(Deserialize, Clone, Debug)]
pub struct RolloutObject {
    pub metadata: ObjectMeta,
}

impl kube::Resource for RolloutObject {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;
    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "Rollout".into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "argoproj.io".into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1alpha1".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "rollouts".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A RandomSecret as watched: the spec stays untyped here (a spec this
/// version cannot read must not break the whole list; the reconciler reports it).
#[derive(Deserialize, Clone, Debug)]
pub struct RandomSecretObject {
    #[serde(deserialize_with = "claimed_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: serde_json::Value,
    #[serde(default)]
    pub status: Option<serde_json::Value>,
}
slim_resource!(RandomSecretObject, crate::api::RandomSecret);

/// `spec.template.spec` of a workload or of a revision's data.
#[derive(Deserialize, Clone, Debug, Default)]
pub struct TemplateOwner {
    #[serde(default)]
    pub template: Option<Template>,
}

#[derive(Deserialize, Clone, Debug, Default)]
pub struct Template {
    #[serde(default)]
    pub spec: Option<SecretRefs>,
}

impl TemplateOwner {
    pub fn refs(&self) -> Option<&SecretRefs> {
        self.template.as_ref()?.spec.as_ref()
    }
}

#[derive(Deserialize, Clone, Debug)]
pub struct ReplicaSetRefs {
    #[serde(deserialize_with = "slim_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<TemplateOwner>,
}
slim_resource!(ReplicaSetRefs, k8s_openapi::api::apps::v1::ReplicaSet);

/// A StatefulSet's or DaemonSet's revision keeps its pod template at
/// `data.spec.template`; `data` is free-form, so it is read leniently.
#[derive(Deserialize, Clone, Debug)]
pub struct ControllerRevisionRefs {
    #[serde(deserialize_with = "slim_meta")]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "lenient_revision_data")]
    pub data: Option<TemplateOwner>,
}
slim_resource!(
    ControllerRevisionRefs,
    k8s_openapi::api::apps::v1::ControllerRevision
);

fn lenient_revision_data<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<TemplateOwner>, D::Error> {
    #[derive(Deserialize)]
    struct Data {
        spec: Option<TemplateOwner>,
    }
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(v.and_then(|v| serde_json::from_value::<Data>(v).ok())
        .and_then(|d| d.spec))
}

#[derive(Deserialize, Clone, Debug)]
pub struct PodRefs {
    #[serde(deserialize_with = "slim_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<SecretRefs>,
    #[serde(default)]
    pub status: Option<PodPhase>,
}
slim_resource!(PodRefs, k8s_openapi::api::core::v1::Pod);

#[derive(Deserialize, Clone, Debug, Default)]
pub struct PodPhase {
    #[serde(default)]
    pub phase: Option<String>,
}

/// A pod spec, reading only the fields that name Secrets.
#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct SecretRefs {
    containers: Option<Vec<ContainerRefs>>,
    init_containers: Option<Vec<ContainerRefs>>,
    ephemeral_containers: Option<Vec<ContainerRefs>>,
    volumes: Option<Vec<VolumeRefs>>,
    image_pull_secrets: Option<Vec<NameRef>>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct ContainerRefs {
    env: Option<Vec<EnvRef>>,
    env_from: Option<Vec<EnvFromRef>>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct EnvRef {
    value_from: Option<ValueFromRef>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct ValueFromRef {
    secret_key_ref: Option<NameRef>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct EnvFromRef {
    secret_ref: Option<NameRef>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct VolumeRefs {
    secret: Option<SecretVolumeRef>,
    projected: Option<ProjectedRefs>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct SecretVolumeRef {
    secret_name: Option<String>,
}

#[derive(Deserialize, Clone, Debug, Default)]
struct ProjectedRefs {
    sources: Option<Vec<ProjectionRef>>,
}

#[derive(Deserialize, Clone, Debug, Default)]
struct ProjectionRef {
    secret: Option<NameRef>,
}

#[derive(Deserialize, Clone, Debug, Default)]
struct NameRef {
    name: Option<String>,
}

impl SecretRefs {
    /// Every Secret name referenced: env `secretKeyRef` and `envFrom`
    /// `secretRef` of containers, initContainers and ephemeralContainers;
    /// `secret` and `projected` secret volumes; `imagePullSecrets`. Sorted, unique.
    pub fn names(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        let containers = [
            &self.containers,
            &self.init_containers,
            &self.ephemeral_containers,
        ];
        for c in containers.into_iter().flatten().flatten() {
            for e in c.env.iter().flatten() {
                out.extend(
                    e.value_from
                        .as_ref()
                        .and_then(|v| v.secret_key_ref.as_ref()?.name.clone()),
                );
            }
            for e in c.env_from.iter().flatten() {
                out.extend(e.secret_ref.as_ref().and_then(|r| r.name.clone()));
            }
        }
        for v in self.volumes.iter().flatten() {
            out.extend(v.secret.as_ref().and_then(|s| s.secret_name.clone()));
            for s in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
                out.extend(s.secret.as_ref().and_then(|r| r.name.clone()));
            }
        }
        for r in self.image_pull_secrets.iter().flatten() {
            out.extend(r.name.clone());
        }
        out.retain(|n| !n.is_empty());
        out.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slim_types_keep_identity_and_references_only() {
        let rs: ReplicaSetRefs = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "n", "uid": "u", "resourceVersion": "7",
                "labels": {"a": "b"}, "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "x", "envFrom": [{"secretRef": {"name": "db-1"}}]}]}}},
        }))
        .unwrap();
        assert_eq!(rs.metadata.name.as_deref(), Some("web-1"));
        assert_eq!(rs.metadata.resource_version.as_deref(), Some("7"));
        assert!(rs.metadata.labels.is_none() && rs.metadata.managed_fields.is_none());
        let names = rs
            .spec
            .as_ref()
            .and_then(TemplateOwner::refs)
            .unwrap()
            .names();
        assert_eq!(names, ["db-1"]);
        assert_eq!(
            <ReplicaSetRefs as kube::Resource>::plural(&()),
            "replicasets"
        );
        assert_eq!(<ReplicaSetRefs as kube::Resource>::group(&()), "apps");
    }

    #[test]
    fn revision_data_of_another_shape_is_no_error() {
        let cr: ControllerRevisionRefs = serde_json::from_value(json!({
            "metadata": {"name": "r", "namespace": "n"}, "revision": 1, "data": [1, 2, 3]}))
        .unwrap();
        assert!(cr.data.is_none());
        let cr: ControllerRevisionRefs = serde_json::from_value(json!({
            "metadata": {"name": "r", "namespace": "n"}, "revision": 1,
            "data": {"spec": {"template": {"$patch": "replace", "spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}}}}))
        .unwrap();
        assert_eq!(
            cr.data
                .as_ref()
                .and_then(TemplateOwner::refs)
                .unwrap()
                .names(),
            ["s"]
        );
    }
}
