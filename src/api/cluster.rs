//! `ClusterRandomSecret`: one RandomSecret of the same shape stamped into
//! each selected namespace (by label selector, by name, or both), as
//! External Secrets' ClusterExternalSecret does for ExternalSecrets.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Label on each stamped RandomSecret: the ClusterRandomSecret it was
/// stamped from. The label alone proves nothing (anyone who can create a
/// RandomSecret can set it): the proof annotation does (`proof::stamp`).
pub const LABEL_CLUSTER: &str = super::key!("cluster-randomsecret");
/// Annotation on each stamped RandomSecret: the digest of the template it
/// was stamped from (covered by its proof).
pub const ANNOTATION_TEMPLATE: &str = super::key!("template");
/// Annotation on each stamped RandomSecret: whose values its versions hold
/// (`PerNamespace` or `Shared`, [`Values`]). Covered by its proof when
/// `Shared`, which is what lets the reconciler copy another namespace's.
pub const ANNOTATION_VALUES: &str = super::key!("values");

/// What happens to a stamped RandomSecret when its namespace stops being
/// selected, or the ClusterRandomSecret is deleted.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
pub enum DeletionPolicy {
    /// Left in place, with its versions (the default: a label edit never
    /// removes a version a pod may use). Selected again, it is taken back.
    #[default]
    Orphan,
    /// Deleted; its versions go with it as their holders release them.
    /// The ClusterRandomSecret owns each stamped RandomSecret, so deleting
    /// it deletes them (the garbage collector's cascade).
    Delete,
}

/// Whose values each namespace's versions hold.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
pub enum Values {
    /// Each namespace its own random values (the default).
    #[default]
    PerNamespace,
    /// Every namespace's version holds the same values: made once, by the
    /// first namespace to need that version, and copied into the others
    /// from a version proven ours. The version's name is the same in every
    /// namespace either way.
    Shared,
}

impl Values {
    pub fn as_str(self) -> &'static str {
        match self {
            Values::PerNamespace => "PerNamespace",
            Values::Shared => "Shared",
        }
    }
}

/// The labels and annotations every stamped RandomSecret gets.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMetadata {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The RandomSecret stamped into each namespace.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RandomSecretTemplate {
    #[serde(default)]
    pub metadata: TemplateMetadata,
    pub spec: super::RandomSecretSpec,
}

/// A ClusterRandomSecret keeps one RandomSecret, named as itself, in every
/// namespace it selects.
// rustfmt splits the printer columns over lines, where clippy takes their
// repeated `type_` for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "randomsecret.io",
    version = "v1",
    kind = "ClusterRandomSecret",
    plural = "clusterrandomsecrets",
    singular = "clusterrandomsecret",
    status = "ClusterRandomSecretStatus",
    shortname = "crsec",
    doc = "ClusterRandomSecret keeps one RandomSecret, named as itself and made from its template, in every namespace it selects.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Namespaces",
        type_ = "integer",
        json_path = ".status.provisioned",
        description = "Namespaces whose RandomSecret it keeps"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    validation = Rule::new("size(self.metadata.name) <= 63").message("metadata.name must be at most 63 characters: it names the RandomSecret in each namespace")
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.namespaceSelector) || (has(self.namespaces) && size(self.namespaces) > 0)").message("select namespaces: set namespaceSelector (matchLabels: {} selects every namespace), namespaces, or both"),
)]
pub struct ClusterRandomSecretSpec {
    /// Namespaces whose labels match (`matchLabels: {}` selects every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Namespaces by name (added to those the selector matches): each a
    /// namespace name (a DNS label), at most 1,000.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 1000),
        inner(
            length(min = 1, max = 63),
            regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
        )
    )]
    pub namespaces: Vec<String>,
    /// What becomes of a stamped RandomSecret whose namespace stops being
    /// selected, and of all of them when this is deleted: Orphan (default)
    /// or Delete.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// PerNamespace (default): each namespace's versions get values of
    /// their own. Shared: every namespace's version of the same spec holds
    /// the same values.
    #[serde(default)]
    pub values: Values,
    /// The RandomSecret each selected namespace gets: its labels,
    /// annotations and spec.
    pub template: RandomSecretTemplate,
}

/// A selected namespace whose RandomSecret is not kept, and why.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FailedNamespace {
    pub namespace: String,
    /// NameConflict (a RandomSecret of that name that is not ours),
    /// WriteFailed or NotReady.
    pub reason: String,
    pub message: String,
}

/// Observed state, kstatus-compatible.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRandomSecretStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Selected namespaces whose RandomSecret this keeps, sorted.
    #[serde(default)]
    pub provisioned_namespaces: Vec<String>,
    /// How many (the length of provisionedNamespaces).
    #[serde(default)]
    pub provisioned: i32,
    /// Selected namespaces it could not provision, or whose RandomSecret is
    /// not Ready, with the reason (at most 50; the Ready message counts all).
    #[serde(default)]
    pub failed_namespaces: Vec<FailedNamespace>,
    /// Ready: True when every selected namespace's RandomSecret is Ready.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
