//! The push API: `spec.push` of a RandomSecret and its `status.push` (the
//! connections they name are in `connections`). No IO.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// The Vault push's finalizer, held while `spec.push.vault` is set, so the
/// deletion policy runs.
pub const VAULT_FINALIZER: &str = crate::api::key!("push");
/// The cluster push's finalizer, held while `spec.push.clusters` is set
/// (apart from the Vault push's, so neither waits on the other).
pub const CLUSTERS_FINALIZER: &str = crate::api::key!("push-clusters");

/// Where each version is pushed besides the cluster. Never part of the
/// version hash: adding or changing it keeps the Secret's name.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PushSpec {
    /// Write the current version to a Vault or OpenBao KV v2 path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault: Option<VaultPush>,
    /// Copy every version to downstream clusters, with the same name and
    /// values; there each copy is retained by that cluster's own ReplicaSet
    /// and ControllerRevision history. One entry per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16))]
    #[x_kube(validation = Rule::new("self.all(a, self.filter(b, b.connectionRef.name == a.connectionRef.name).size() == 1)").message("clusters: each connectionRef.name may appear once"))]
    pub clusters: Option<Vec<ClusterPush>>,
}

/// One downstream cluster that gets a copy of each version: created there
/// create-only, never overwritten, owned there by an anchor Secret (the
/// current and `history` versions) and by the downstream ReplicaSets,
/// ControllerRevisions and Pods that reference a copy.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPush {
    /// The ClusterConnection to the downstream cluster.
    pub connection_ref: ClusterConnectionRef,
    /// Namespace in the downstream cluster (default: the RandomSecret's own
    /// namespace's name; another must be in the connection's targetNamespaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')").message("namespace must be a DNS label: lower-case letters, digits and '-'"))]
    pub namespace: Option<String>,
    /// What happens downstream when the RandomSecret is deleted: Retain
    /// (default; the anchor and every copy stay) or Delete (the anchor is
    /// deleted, so the downstream garbage collector removes each copy once
    /// nothing there references it). A delete with --cascade=orphan, or the
    /// annotation randomsecret.io/skip-push-cleanup: "true", always keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
}

/// A ClusterConnection, by name.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConnectionRef {
    /// The ClusterConnection's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// One KV v2 path that holds the current version: each change of the current
/// version is one new KV version there, and nothing else ever writes.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VaultPush {
    /// The connection to use.
    pub connection_ref: ConnectionRef,
    /// Path below the connection's kvMount and pathPrefix; {namespace} and
    /// {name} are replaced (default "{name}"). Segments of letters, digits,
    /// '-', '_' and '.', separated by '/'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    #[x_kube(validation = Rule::new("self.matches('^[-_.a-zA-Z0-9{}]+(/[-_.a-zA-Z0-9{}]+)*$') && !self.split('/').exists(s, s == '.' || s == '..')").message("path must be segments of letters, digits, '-', '_', '.', {namespace} and {name}, separated by single '/', without '.' or '..' segments"))]
    pub path: Option<String>,
    /// Which keys of the version to write (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub keys: Option<Vec<String>>,
    /// Prefix for each key's name in Vault (e.g. "DB_").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub key_prefix: Option<String>,
    /// What happens to the path when the RandomSecret is deleted: Retain
    /// (default; keeps it, with every KV version) or Delete (removes the
    /// metadata and all versions, only if the path is ours). A delete with
    /// --cascade=orphan, or the annotation randomsecret.io/skip-push-cleanup:
    /// "true", always keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
}

/// A connection object, by kind and name.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionRef {
    /// ClusterVaultConnection (default) or VaultConnection (in the
    /// RandomSecret's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ConnectionKind>,
    /// The connection's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash,
)]
pub enum ConnectionKind {
    /// Cluster-scoped, set up by the cluster's administrators.
    #[default]
    ClusterVaultConnection,
    /// In the RandomSecret's namespace (token auth only).
    VaultConnection,
}

#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
pub enum DeletionPolicy {
    /// Keep the path and its versions.
    #[default]
    Retain,
    /// Remove the path (metadata and every version) if it is ours.
    Delete,
}

/// What the pushes did (written by the push, apart from the version status).
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PushStatus {
    /// The Vault target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vault: Option<VaultPushStatus>,
    /// Each downstream cluster (written by the cluster push, apart from the
    /// Vault push and the version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<ClusterPushStatus>>,
}

/// One downstream cluster: which copies are there, and whether it is in sync.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPushStatus {
    /// The ClusterConnection's name.
    pub connection: String,
    /// The namespace in the downstream cluster.
    pub namespace: String,
    /// Whether the current version's copy is there and proven the same.
    pub synced: bool,
    /// Synced, or why not (ConnectionNotFound, NamespaceNotAllowed,
    /// AllowedNamespacesUnset, NotAllowed, AwaitingNextVersion,
    /// VersionNotProven, InvalidConnection, Unreachable, ReplyTooLarge,
    /// Forbidden, SecretNameConflict, ValueMismatch, Connecting, Waiting).
    pub reason: String,
    /// What to do about it, when not synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The copies this controller keeps there, current first (at most 10).
    #[serde(default)]
    pub secret_names: Vec<String>,
}

/// The Vault target: where, and which KV version holds which Secret version.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VaultPushStatus {
    /// The connection, kind/name.
    pub connection: String,
    /// The KV v2 mount and path (mount/path).
    pub path: String,
    /// Secret versions and their KV versions, newest first (at most 10).
    #[serde(default)]
    pub versions: Vec<VaultVersion>,
}

/// One Secret version written as one KV version.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VaultVersion {
    /// The Secret's name.
    pub secret_name: String,
    /// The KV v2 version that holds its values.
    pub kv_version: u64,
}
