//! The connection objects: where versions are pushed to (`ClusterVaultConnection`,
//! `VaultConnection`: Vault or OpenBao; `ClusterConnection`: a downstream
//! cluster), and what each may receive. No IO.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// How to reach and log in to a Vault or OpenBao server.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VaultServer {
    /// The server's address: https://host[:port] only, no path, query,
    /// fragment or user name (http:// only if the controller allows it, for
    /// development).
    #[schemars(length(min = 8, max = 512))]
    #[x_kube(validation = Rule::new(r#"self.matches('^https?://([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?/?$')"#).message("address must be https://host[:port] (or http:// where the controller allows it): no path, query, fragment or user name"))]
    pub address: String,
    /// The CA that signed the server's certificate, PEM (default: none; an
    /// https address then needs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<CaSource>,
    /// Mount of the KV v2 engine (default "secret").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    #[x_kube(validation = Rule::new("self.matches('^[-_.a-zA-Z0-9]+(/[-_.a-zA-Z0-9]+)*/?$') && !self.split('/').exists(s, s == '.' || s == '..')").message("a mount is segments of letters, digits, '-', '_' and '.', separated by single '/', without '.' or '..' segments"))]
    pub kv_mount: Option<String>,
    /// Every path is below this prefix; {namespace} is the RandomSecret's
    /// namespace (default "randomsecret/{namespace}").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub path_prefix: Option<String>,
    /// How the controller logs in: exactly one method.
    pub auth: VaultAuth,
    /// Timeout of each request to the server, in seconds (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: Option<i32>,
}

/// A PEM CA from one key of a Secret or ConfigMap.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.secretRef) != has(self.configMapRef)").message("set exactly one of secretRef and configMapRef"))]
pub struct CaSource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<KeyRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<KeyRef>,
}

/// One key of a Secret or ConfigMap.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KeyRef {
    /// The object's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The object's namespace: required in a ClusterVaultConnection, and
    /// ignored (its own namespace) in a VaultConnection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The data key.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Exactly one login method.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.kubernetes) != has(self.tokenSecretRef)").message("set exactly one auth method: kubernetes or tokenSecretRef"))]
pub struct VaultAuth {
    /// The Kubernetes auth method, with a token of the controller's
    /// ServiceAccount requested for the audience (TokenRequest API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubernetesAuth>,
    /// A Vault token in a Secret (for development).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_secret_ref: Option<KeyRef>,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesAuth {
    /// Mount of the auth method (default "kubernetes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    #[x_kube(validation = Rule::new("self.matches('^[-_.a-zA-Z0-9]+(/[-_.a-zA-Z0-9]+)*/?$') && !self.split('/').exists(s, s == '.' || s == '..')").message("a mount is segments of letters, digits, '-', '_' and '.', separated by single '/', without '.' or '..' segments"))]
    pub mount: Option<String>,
    /// The Vault role to log in as.
    #[schemars(length(min = 1, max = 128))]
    pub role: String,
    /// Audience of the requested token (default "vault"): the role's
    /// audience must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub audience: Option<String>,
}

/// Whether a connection works, as the last push through it found.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatus {
    /// Ready: reachable and authenticated (with a reason when not).
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// A Vault or OpenBao server that RandomSecrets of the allowed namespaces
/// push to, with the controller's own identity.
// rustfmt splits the printer columns over lines, where clippy takes their
// repeated `type_` for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "randomsecret.io",
    version = "v1",
    kind = "ClusterVaultConnection",
    plural = "clustervaultconnections",
    singular = "clustervaultconnection",
    status = "ConnectionStatus",
    shortname = "cvc",
    doc = "ClusterVaultConnection: a Vault or OpenBao KV v2 server that RandomSecrets of the allowed namespaces push their current version to.",
    printcolumn(name = "Address", type_ = "string", json_path = ".spec.address"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
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
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.ca) || (has(self.ca.secretRef) ? has(self.ca.secretRef.namespace) : has(self.ca.configMapRef.namespace))").message("ca: a ClusterVaultConnection names the namespace of its Secret or ConfigMap"),
    validation = Rule::new("!has(self.auth.tokenSecretRef) || has(self.auth.tokenSecretRef.namespace)").message("auth.tokenSecretRef: a ClusterVaultConnection names the namespace of its Secret"),
    validation = Rule::new("!has(self.pathPrefix) || self.pathPrefix.contains('{namespace}') || (has(self.allowedNamespaces) && size(self.allowedNamespaces) == 1) || (has(self.sharedPrefix) && self.sharedPrefix)").message("pathPrefix without {namespace} lets the RandomSecrets of every allowed namespace write below one prefix: list exactly one namespace in allowedNamespaces, or set sharedPrefix: true"),
)]
pub struct ClusterVaultConnectionSpec {
    #[serde(flatten)]
    pub server: VaultServer,
    /// Namespaces whose RandomSecrets may use this connection (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_namespaces: Option<Vec<String>>,
    /// A pathPrefix without {namespace} for more than one namespace: the
    /// allowed namespaces share one folder, first come first served (a path
    /// another namespace wrote first is PathNotManaged). Default false: such
    /// a prefix needs exactly one namespace in allowedNamespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix: Option<bool>,
}

/// A Vault or OpenBao server for the RandomSecrets of its own namespace. It
/// logs in with a token from a Secret of that namespace only: the
/// controller's own identity (Kubernetes auth) is for ClusterVaultConnections,
/// so a namespace cannot send it to a server of its choosing.
// rustfmt splits the printer columns over lines, where clippy takes their
// repeated `type_` for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "randomsecret.io",
    version = "v1",
    kind = "VaultConnection",
    plural = "vaultconnections",
    singular = "vaultconnection",
    namespaced,
    status = "ConnectionStatus",
    shortname = "vc",
    doc = "VaultConnection: a Vault or OpenBao KV v2 server for the RandomSecrets of its namespace, with a token from a Secret of that namespace.",
    printcolumn(name = "Address", type_ = "string", json_path = ".spec.address"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
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
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.auth.kubernetes)").message("a VaultConnection logs in with auth.tokenSecretRef only: the controller's own identity (auth.kubernetes) needs a ClusterVaultConnection"))]
pub struct VaultConnectionSpec {
    #[serde(flatten)]
    pub server: VaultServer,
}

/// Where a downstream cluster's credentials are: a Secret of the upstream
/// cluster, as Fleet and Argo CD keep them.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KubeconfigRef {
    /// The Secret's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The Secret's namespace.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    /// The data key that holds the kubeconfig (default "value", as in
    /// Fleet's kubeconfig Secrets). Not used with format ArgoCD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub key: Option<String>,
    /// Kubeconfig (default): the key holds a kubeconfig. ArgoCD: an Argo CD
    /// cluster Secret (keys server and config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<KubeconfigFormat>,
}

#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
pub enum KubeconfigFormat {
    /// A kubeconfig file's text.
    #[default]
    Kubeconfig,
    /// Argo CD's declarative cluster Secret: `server`, and `config` (JSON
    /// with bearerToken or username/password, and tlsClientConfig).
    ArgoCD,
}

/// What copies through one ClusterConnection may be. The controller's own
/// labels and annotations (`randomsecret.io/`, `app.kubernetes.io/managed-by`)
/// are always allowed.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CopyPolicy {
    /// Secret types that may be copied (unset: the controller's; empty: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_types: Option<Vec<String>>,
    /// Prefixes every label key of a copy must start with (unset: the
    /// controller's; empty: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_prefixes: Option<Vec<String>>,
    /// Prefixes every annotation key of a copy must start with (unset: the
    /// controller's; empty: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_prefixes: Option<Vec<String>>,
}

/// A downstream cluster that RandomSecrets of the allowed namespaces copy
/// their versions to. Its credentials must be inline: a kubeconfig that would
/// run a command (exec, auth-provider) or read a file is refused, never run.
// rustfmt splits the printer columns over lines, where clippy takes their
// repeated `type_` for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "randomsecret.io",
    version = "v1",
    kind = "ClusterConnection",
    plural = "clusterconnections",
    singular = "clusterconnection",
    status = "ConnectionStatus",
    shortname = "rscc",
    doc = "ClusterConnection: a downstream cluster that RandomSecrets of the allowed namespaces copy each version to, with the same name and values.",
    printcolumn(
        name = "Secret",
        type_ = "string",
        json_path = ".spec.kubeconfigSecretRef.name"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
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
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConnectionSpec {
    /// The Secret with the downstream cluster's kubeconfig.
    pub kubeconfig_secret_ref: KubeconfigRef,
    /// Namespaces whose RandomSecrets may use this connection: none until
    /// listed; "*" for every namespace. (Before, unset meant every
    /// namespace: such a connection now copies nothing, AllowedNamespacesUnset.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_namespaces: Option<Vec<String>>,
    /// Downstream namespaces that RandomSecrets of any allowed namespace may
    /// copy into besides their own namespace's name (default: none). Each of
    /// them is open to all of allowedNamespaces: a tenant could place a copy
    /// under another tenant's next version name there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    /// Protected downstream namespaces this connection may copy into all the
    /// same (exact names). Protected are kube-*, argocd, flux-system,
    /// cattle-* and the controller's own namespace: Secrets there configure
    /// the cluster's own tools (an Argo CD repository, a Flux source), so a
    /// tenant whose namespace has such a name must not plant one. List one
    /// here only for a connection whose allowedNamespaces are trusted with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub allow_protected_namespaces: Option<Vec<String>>,
    /// What copies through this connection may be: Secret types and label and
    /// annotation key prefixes (each list unset: the controller's
    /// --allow-secret-types, --allow-label-prefixes, --allow-annotation-prefixes).
    /// A version outside it is not copied (NotAllowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_policy: Option<CopyPolicy>,
    /// Timeout of each request to the downstream cluster, in seconds
    /// (default 10): a cluster that does not answer delays nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_seconds: Option<i32>,
}
