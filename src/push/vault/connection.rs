//! A RandomSecret's connection: found, allowed for its namespace, its CA
//! read, and a Vault token (a Kubernetes-auth login, cached in memory until
//! shortly before it expires, or a token from a Secret).

use super::address::Policy;
use super::client::{Client, VaultError};
use crate::api::connections::{ClusterVaultConnection, KeyRef, VaultConnection, VaultServer};
use crate::api::push::{ConnectionKind, ConnectionRef};
use crate::push::PushError;
use crate::runtime::outcome::Outcome as _;
use crate::runtime::status::Answer as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::Api;
use kube::api::PostParams;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Defaults of a connection's optional fields.
pub const DEFAULT_KV_MOUNT: &str = "secret";
pub const DEFAULT_PATH_PREFIX: &str = concat!(crate::api::project!(), "/{namespace}");
pub const DEFAULT_AUTH_MOUNT: &str = "kubernetes";
pub const DEFAULT_AUDIENCE: &str = "vault";
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest request timeout of a (namespaced) VaultConnection.
pub const MAX_TENANT_TIMEOUT: Duration = Duration::from_secs(15);
/// Lifetime asked of a ServiceAccount token (used once, to log in).
const SA_TOKEN_SECONDS: i64 = 600;
/// A cached Vault token is renewed by a new login this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// A connection as read: which object, and its server settings.
#[derive(Debug, Clone)]
pub struct Connection {
    pub kind: ConnectionKind,
    pub name: String,
    /// Namespace of its Secrets and ConfigMaps (a VaultConnection's own).
    pub namespace: Option<String>,
    pub server: VaultServer,
    /// Changes with every edit: a cached token of an older edit is not used.
    pub resource_version: String,
}

impl Connection {
    /// kind/name (namespace/name for a VaultConnection), for status and messages.
    pub fn id(&self) -> String {
        id_of(self.kind, &self.name, self.namespace.as_deref())
    }

    /// Each request's timeout. A VaultConnection is a tenant's: its
    /// timeout is capped ([`MAX_TENANT_TIMEOUT`]), so a tenant's server
    /// that never answers holds a push slot briefly.
    pub fn timeout(&self) -> Duration {
        let chosen = self
            .server
            .timeout_seconds
            .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.max(1) as u64));
        match self.kind {
            ConnectionKind::VaultConnection => chosen.min(MAX_TENANT_TIMEOUT),
            _ => chosen,
        }
    }

    pub fn kv_mount(&self) -> &str {
        self.server.kv_mount.as_deref().unwrap_or(DEFAULT_KV_MOUNT)
    }

    pub fn path_prefix(&self) -> &str {
        self.server
            .path_prefix
            .as_deref()
            .unwrap_or(DEFAULT_PATH_PREFIX)
    }

    /// Where a key reference points: a VaultConnection's own namespace, or
    /// the namespace a ClusterVaultConnection names.
    fn namespace_of<'a>(&'a self, r: &'a KeyRef) -> Result<&'a str, PushError> {
        self.namespace
            .as_deref()
            .or(r.namespace.as_deref())
            .ok_or_else(|| {
                PushError::InvalidConnection(format!(
                    "{}: the reference to {} names no namespace",
                    self.id(),
                    r.name
                ))
            })
    }
}

/// kind/name (namespace/name for a VaultConnection): the key of every
/// per-connection map (tokens, hold-down, last status written).
pub fn id_of(kind: ConnectionKind, name: &str, namespace: Option<&str>) -> String {
    match (kind, namespace) {
        (ConnectionKind::VaultConnection, Some(ns)) => format!("VaultConnection/{ns}/{name}"),
        (kind, _) => format!("{kind:?}/{name}"),
    }
}

/// Reads the connection `r` for a RandomSecret in `namespace`.
pub async fn resolve(
    client: &kube::Client,
    namespace: &str,
    r: &ConnectionRef,
) -> Result<Connection, PushError> {
    let kind = r.kind.unwrap_or_default();
    let not_found = |e: kube::Error| match e {
        kube::Error::Api(s) if s.not_found() => PushError::ConnectionNotFound(format!(
            "{kind:?} {} does not exist{}",
            r.name,
            if kind == ConnectionKind::VaultConnection {
                format!(" in namespace {namespace}")
            } else {
                String::new()
            }
        )),
        e => PushError::kube(format!("reading {kind:?} {}", r.name), e),
    };
    match kind {
        ConnectionKind::ClusterVaultConnection => {
            let c = Api::<ClusterVaultConnection>::all(client.clone())
                .get(&r.name)
                .await
                .map_err(not_found)?;
            let allowed = c.spec.allowed_namespaces.as_ref();
            if allowed.is_some_and(|a| !a.iter().any(|n| n == namespace)) {
                return Err(PushError::NamespaceNotAllowed(format!(
                    "ClusterVaultConnection {} does not list namespace {namespace} in allowedNamespaces",
                    r.name
                )));
            }
            if !prefix_separates_namespaces(&c.spec) {
                return Err(PushError::InvalidConnection(format!(
                    "ClusterVaultConnection {}: {SHARED_PREFIX}",
                    r.name
                )));
            }
            Ok(Connection {
                kind,
                name: r.name.clone(),
                namespace: None,
                server: c.spec.server,
                resource_version: c.metadata.resource_version.unwrap_or_default(),
            })
        }
        ConnectionKind::VaultConnection => {
            let c = Api::<VaultConnection>::namespaced(client.clone(), namespace)
                .get(&r.name)
                .await
                .map_err(not_found)?;
            if c.spec.server.auth.kubernetes.is_some() {
                // The CRD refuses it; an object stored before that rule is refused here.
                return Err(PushError::InvalidConnection(format!(
                    "VaultConnection {namespace}/{}: Kubernetes auth needs a ClusterVaultConnection",
                    r.name
                )));
            }
            Ok(Connection {
                kind,
                name: r.name.clone(),
                namespace: Some(namespace.to_string()),
                server: c.spec.server,
                resource_version: c.metadata.resource_version.unwrap_or_default(),
            })
        }
    }
}

/// Why a ClusterVaultConnection's prefix is refused (fixed text).
const SHARED_PREFIX: &str = "pathPrefix has no {namespace} and more than one namespace may use the connection: every allowed namespace would write below one prefix and could take another's paths first; list exactly one namespace in allowedNamespaces, or set sharedPrefix: true";

/// Whether each namespace gets its own folder below the prefix, or only one
/// namespace may use the connection, or the administrator chose to share.
pub fn prefix_separates_namespaces(
    spec: &crate::api::connections::ClusterVaultConnectionSpec,
) -> bool {
    let prefix = spec
        .server
        .path_prefix
        .as_deref()
        .unwrap_or(DEFAULT_PATH_PREFIX);
    prefix.contains("{namespace}")
        || spec
            .allowed_namespaces
            .as_ref()
            .is_some_and(|a| a.len() == 1)
        || spec.shared_prefix == Some(true)
}

/// One key of a Secret (`secret`) or ConfigMap.
async fn read_key(
    client: &kube::Client,
    conn: &Connection,
    r: &KeyRef,
    secret: bool,
) -> Result<Vec<u8>, PushError> {
    let ns = conn.namespace_of(r)?;
    let what = format!(
        "{} {ns}/{}",
        if secret { "Secret" } else { "ConfigMap" },
        r.name
    );
    let missing = |e: kube::Error| match e {
        kube::Error::Api(s) if s.not_found() => {
            PushError::ReferenceGone(format!("{}: {what} does not exist", conn.id()))
        }
        kube::Error::Api(s) if s.forbidden() => PushError::InvalidConnection(format!(
            "{}: {what} cannot be read ({})",
            conn.id(),
            s.reason
        )),
        e => PushError::kube(format!("reading {what}"), e),
    };
    let value = if secret {
        let s = Api::<Secret>::namespaced(client.clone(), ns)
            .get(&r.name)
            .await
            .map_err(missing)?;
        s.data.and_then(|mut d| d.remove(&r.key)).map(|b| b.0)
    } else {
        let c = Api::<ConfigMap>::namespaced(client.clone(), ns)
            .get(&r.name)
            .await
            .map_err(missing)?;
        c.data
            .and_then(|mut d| d.remove(&r.key))
            .map(String::into_bytes)
    };
    value.ok_or_else(|| {
        PushError::ReferenceGone(format!("{}: {what} has no key {}", conn.id(), r.key))
    })
}

/// The connection's address, checked against the administrator's
/// `policy` before anything is sent: scheme, host and port only; http only
/// if allowed, and never with Kubernetes auth (the controller's token would
/// cross the network in the clear); a namespaced VaultConnection (a
/// tenant's input) resolved, checked and pinned (see [`super::address`]).
/// Fixed texts: a refusal never says what the name resolved to.
pub async fn checked_address(
    policy: &Policy,
    conn: &Connection,
) -> Result<Option<std::net::SocketAddr>, PushError> {
    let refuse = |why: &str| PushError::InvalidConnection(format!("{}: {why}", conn.id()));
    let address = super::address::parse(&conn.server.address).map_err(refuse)?;
    if !address.https && conn.server.auth.kubernetes.is_some() {
        return Err(refuse(
            "Kubernetes auth needs an https:// address: the controller's ServiceAccount token is never sent in the clear",
        ));
    }
    if !address.https && !policy.allow_http {
        return Err(refuse(super::address::NO_HTTP));
    }
    match conn.kind {
        ConnectionKind::ClusterVaultConnection => Ok(None),
        ConnectionKind::VaultConnection => super::address::pin(policy, &address, conn.timeout())
            .await
            .map(Some)
            .map_err(refuse),
    }
}

/// The HTTP client of a connection, trusting its CA.
pub async fn client(
    client: &kube::Client,
    policy: &Policy,
    conn: &Connection,
) -> Result<Client, PushError> {
    let pin = checked_address(policy, conn).await?;
    let ca = match &conn.server.ca {
        Some(ca) => match (&ca.secret_ref, &ca.config_map_ref) {
            (Some(r), _) => Some(read_key(client, conn, r, true).await?),
            (None, Some(r)) => Some(read_key(client, conn, r, false).await?),
            (None, None) => None,
        },
        None => None,
    };
    Client::pinned(
        &conn.server.address,
        conn.kv_mount(),
        ca.as_deref(),
        conn.timeout(),
        pin,
    )
    .map_err(|e| PushError::InvalidConnection(format!("{}: {}", conn.id(), super::brief(e))))
}

/// Why Kubernetes auth cannot log in: the controller was not told its
/// ServiceAccount (the flag and variable of `randomsecret controller`).
pub(crate) const NO_IDENTITY: &str = "Kubernetes auth needs the controller's ServiceAccount: run the controller with --service-account-name (or $RANDOMSECRET_SERVICE_ACCOUNT_NAME); the chart sets it";

/// The controller's own ServiceAccount, for Kubernetes auth.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    pub namespace: String,
    pub name: String,
    /// The controller's pod ($POD_NAME, $POD_UID): each token is bound to
    /// it, so it stops working when the pod is gone.
    pub pod: Option<(String, Option<String>)>,
    /// The audiences of the controller's own credential (the apiserver's):
    /// never requested ([`super::audience`]).
    pub api_audiences: Vec<String>,
}

struct Cached {
    token: String,
    resource_version: String,
    renew_at: Instant,
    /// The server a login token came from, to revoke it when it is
    /// replaced or forgotten; None for a token from a Secret (not ours).
    revoke: Option<Client>,
    /// How long a push may still use it after it is replaced (the bound of
    /// one push's exchange): it is revoked after that.
    grace: Duration,
}

/// Vault tokens by connection, in memory only (never logged or written);
/// and the issuer the apiserver publishes, read once.
#[derive(Default)]
pub struct Tokens(Mutex<HashMap<String, Cached>>, Mutex<Option<String>>);

/// Why a ClusterVaultConnection's audience is refused (fixed text).
const APISERVER_AUDIENCE: &str = "auth.kubernetes.audience is one the Kubernetes apiserver accepts: a token for it would be an apiserver credential of the controller; use the audience of the Vault role (default \"vault\")";

impl Tokens {
    /// A token for `conn`: cached, or from a new login.
    pub async fn get(
        &self,
        kube: &kube::Client,
        identity: Option<&Identity>,
        conn: &Connection,
        vault: &Client,
    ) -> Result<String, PushError> {
        let id = conn.id();
        if let Some(c) = self.0.lock().expect("tokens lock").get(&id)
            && c.resource_version == conn.resource_version
            && Instant::now() < c.renew_at
        {
            return Ok(c.token.clone());
        }
        let auth = &conn.server.auth;
        let (token, lease) = if let Some(k) = &auth.kubernetes {
            let identity =
                identity.ok_or_else(|| PushError::InvalidConnection(NO_IDENTITY.into()))?;
            let audience = k.audience.as_deref().unwrap_or(DEFAULT_AUDIENCE);
            let refuse =
                || PushError::InvalidConnection(format!("{}: {APISERVER_AUDIENCE}", conn.id()));
            // Refused before any TokenRequest: the known audiences first,
            // then the issuer the apiserver publishes.
            if super::audience::refused(audience, &identity.api_audiences) {
                return Err(refuse());
            }
            if let Some(issuer) = self.issuer(kube).await
                && super::audience::refused(audience, &[issuer])
            {
                return Err(refuse());
            }
            let jwt = service_account_token(kube, identity, audience).await?;
            // The apiserver issued it for exactly that audience, nothing more.
            if !super::audience::issued_for(&jwt, audience) {
                return Err(refuse());
            }
            let login = vault
                .login_kubernetes(
                    k.mount.as_deref().unwrap_or(DEFAULT_AUTH_MOUNT),
                    &k.role,
                    &jwt,
                )
                .await
                .map_err(PushError::Vault)?;
            (login.token, login.lease)
        } else if let Some(r) = &auth.token_secret_ref {
            let bytes = read_key(kube, conn, r, true).await?;
            let token = String::from_utf8(bytes).map_err(|_| {
                PushError::InvalidConnection(format!("{id}: the token is not UTF-8"))
            })?;
            // Read again on every push after a short while: the Secret may change.
            (token.trim().to_string(), Duration::from_secs(120))
        } else {
            return Err(PushError::InvalidConnection(format!(
                "{id}: no auth method"
            )));
        };
        // A lease of 0 never expires; look again after an hour anyway (and
        // at least daily, whatever the server says).
        let lease = if lease.is_zero() {
            Duration::from_secs(3600)
        } else {
            lease.min(Duration::from_secs(86_400))
        };
        self.store(
            id,
            Cached {
                token: token.clone(),
                resource_version: conn.resource_version.clone(),
                renew_at: Instant::now() + lease.saturating_sub(RENEW_BEFORE).max(lease / 2),
                revoke: auth.kubernetes.is_some().then(|| vault.clone()),
                grace: conn.timeout() * 4,
            },
        );
        Ok(token)
    }

    /// The issuer the apiserver publishes, read once (None while unreadable).
    async fn issuer(&self, kube: &kube::Client) -> Option<String> {
        if let Some(i) = self.1.lock().expect("issuer lock").clone() {
            return Some(i);
        }
        let i = super::audience::issuer(kube).await?;
        *self.1.lock().expect("issuer lock") = Some(i.clone());
        Some(i)
    }

    /// Forgets the token of `conn` (refused: expired or revoked early).
    pub fn forget(&self, conn: &Connection) {
        self.forget_id(&conn.id());
    }

    /// Forgets the token of the connection `id` (deleted), revoking it.
    pub fn forget_id(&self, id: &str) {
        let gone = self.0.lock().expect("tokens lock").remove(id);
        revoke(gone.into_iter().collect());
    }

    /// Caches `new` for `id`; the token it replaces, and tokens due for
    /// renewal (the map holds connections in use), are dropped and revoked
    /// if they came from a login.
    fn store(&self, id: String, new: Cached) {
        let now = Instant::now();
        let mut gone = Vec::new();
        {
            let mut cached = self.0.lock().expect("tokens lock");
            let expired: Vec<String> = cached
                .iter()
                .filter(|(_, c)| c.renew_at <= now)
                .map(|(k, _)| k.clone())
                .collect();
            gone.extend(expired.iter().filter_map(|k| cached.remove(k)));
            let same = |old: &Cached| old.token == new.token;
            let replaced = cached.remove(&id).filter(|old| !same(old));
            gone.extend(replaced);
            cached.insert(id, new);
        }
        revoke(gone);
    }

    /// Revokes every login token (at shutdown), waiting at most `limit`.
    pub async fn revoke_all(&self, limit: Duration) {
        let all: Vec<Cached> = self
            .0
            .lock()
            .expect("tokens lock")
            .drain()
            .map(|(_, c)| c)
            .collect();
        let calls = all.into_iter().filter_map(|c| {
            let client = c.revoke?;
            Some(async move { client.revoke_self(&c.token).await })
        });
        let _ = tokio::time::timeout(limit, futures::future::join_all(calls)).await;
    }
}

/// Revokes the login tokens among `gone`, in the background, once a push
/// that took one just before could no longer be using it.
fn revoke(gone: Vec<Cached>) {
    for c in gone {
        if let Some(client) = c.revoke {
            tokio::spawn(async move {
                tokio::time::sleep(c.grace).await;
                client.revoke_self(&c.token).await
            });
        }
    }
}

/// A short-lived token of the controller's ServiceAccount for `audience`
/// (TokenRequest API: RBAC create on serviceaccounts/token, by name).
async fn service_account_token(
    kube: &kube::Client,
    identity: &Identity,
    audience: &str,
) -> Result<String, PushError> {
    let api: Api<ServiceAccount> = Api::namespaced(kube.clone(), &identity.namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![audience.to_string()],
            expiration_seconds: Some(SA_TOKEN_SECONDS),
            bound_object_ref: identity.pod.as_ref().map(|(name, uid)| {
                k8s_openapi::api::authentication::v1::BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: Some(name.clone()),
                    uid: uid.clone(),
                }
            }),
        },
        ..Default::default()
    };
    let answer = api
        .create_token_request(&identity.name, &PostParams::default(), &request)
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.forbidden() || s.not_found() => {
                PushError::Vault(VaultError::AuthFailed {
                    call: "requesting a ServiceAccount token",
                    status: s.code,
                })
            }
            e => PushError::kube("requesting a ServiceAccount token", e),
        })?;
    answer
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| PushError::Answer("the TokenRequest answer has no token".into()))
}

/// What a push found out about a connection, for its Ready condition: a
/// failure to reach or log in is not Ready; any answer after the login (a
/// path's permission, a path of someone else) is; an apiserver error says
/// nothing (None).
pub fn readiness(result: &Result<(), &PushError>) -> Option<(bool, &'static str, String)> {
    match result {
        Ok(()) => Some((
            true,
            "Authenticated",
            "reachable; the login succeeded".into(),
        )),
        Err(
            e @ (PushError::Vault(
                VaultError::Unreachable { .. }
                | VaultError::Status { .. }
                | VaultError::Invalid { .. }
                | VaultError::Sealed { .. }
                | VaultError::AuthFailed { .. }
                | VaultError::ReplyTooLarge { .. }
                | VaultError::BadAddress(_)
                | VaultError::BadCa(_),
            )
            | PushError::Timeout(_)
            | PushError::InvalidConnection(_)
            | PushError::ReferenceGone(_)),
        ) => Some((false, e.reason(), e.to_string())),
        Err(PushError::Kube { .. } | PushError::Answer(_)) => None,
        Err(_) => Some((
            true,
            "Authenticated",
            "reachable; the login succeeded".into(),
        )),
    }
}

/// Writes the connection's Ready condition (server-side apply, the push's
/// field manager) when it differs from what this process last wrote.
pub async fn report(ctx: &crate::push::Context, conn: &Connection, result: Result<(), &PushError>) {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use kube::api::{Patch, PatchParams};
    let Some((ok, reason, message)) = readiness(&result) else {
        return;
    };
    let id = conn.id();
    if ctx.connections.lock().expect("connections lock").get(&id) == Some(&(ok, reason)) {
        return;
    }
    let cond = Condition {
        type_: "Ready".into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: reason.into(),
        message,
        observed_generation: None,
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::now()),
    };
    let kind = format!("{:?}", conn.kind);
    let patch = serde_json::json!({"apiVersion": crate::api::API_VERSION, "kind": kind, "status": {"conditions": [cond]}});
    let params = PatchParams::apply(crate::push::MANAGER).force();
    let written = match &conn.namespace {
        Some(ns) => Api::<VaultConnection>::namespaced(ctx.client.clone(), ns)
            .patch_status(&conn.name, &params, &Patch::Apply(patch))
            .await
            .map(drop),
        None => Api::<ClusterVaultConnection>::all(ctx.client.clone())
            .patch_status(&conn.name, &params, &Patch::Apply(patch))
            .await
            .map(drop),
    };
    match written {
        Ok(()) => {
            ctx.connections
                .lock()
                .expect("connections lock")
                .insert(id, (ok, reason));
        }
        Err(e) => {
            tracing::debug!(connection = %id, error = %e, "writing the connection's status failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenant's connection cannot ask for the 300 s an administrator's may.
    #[test]
    fn a_tenants_timeout_is_capped_and_an_administrators_is_not() {
        let of = |kind, seconds| {
            Connection {
                kind,
                name: "c".into(),
                namespace: None,
                server: VaultServer {
                    timeout_seconds: seconds,
                    ..Default::default()
                },
                resource_version: "1".into(),
            }
            .timeout()
        };
        let tenant = ConnectionKind::VaultConnection;
        let admin = ConnectionKind::ClusterVaultConnection;
        assert_eq!(of(tenant, Some(300)), MAX_TENANT_TIMEOUT);
        assert_eq!(of(tenant, Some(5)), Duration::from_secs(5));
        assert_eq!(of(tenant, None), DEFAULT_TIMEOUT);
        assert_eq!(of(admin, Some(300)), Duration::from_secs(300));
    }

    fn conn(kind: ConnectionKind, address: &str, kubernetes: bool) -> Connection {
        use crate::api::connections::{KubernetesAuth, VaultAuth};
        Connection {
            kind,
            name: "c".into(),
            namespace: (kind == ConnectionKind::VaultConnection).then(|| "team".into()),
            server: VaultServer {
                address: address.into(),
                auth: VaultAuth {
                    kubernetes: kubernetes.then(|| KubernetesAuth {
                        role: "r".into(),
                        ..Default::default()
                    }),
                    token_secret_ref: (!kubernetes).then(|| KeyRef {
                        name: "t".into(),
                        namespace: None,
                        key: "token".into(),
                    }),
                },
                ..Default::default()
            },
            resource_version: "1".into(),
        }
    }

    /// A tenant's VaultConnection never reaches the controller's own host or
    /// the metadata service, whatever the address's form; an administrator's
    /// ClusterVaultConnection may use a loopback dev server; http only with
    /// the flag, never with Kubernetes auth. All refused before any
    /// connection (IP literals: nothing is resolved, nothing is sent).
    #[tokio::test]
    async fn addresses_are_checked_before_anything_is_sent() {
        use ConnectionKind::{ClusterVaultConnection as Cluster, VaultConnection as Tenant};
        let strict = Policy::default();
        let http = Policy {
            allow_http: true,
            ..Default::default()
        };
        let refused = |r: Result<Option<std::net::SocketAddr>, PushError>| {
            matches!(r, Err(PushError::InvalidConnection(_)))
        };
        for address in [
            "https://127.0.0.1:8200",
            "https://[::1]:8200",
            "https://169.254.169.254",
            "https://[::ffff:169.254.169.254]",
            "https://[fe80::1%25eth0]:8200",
            "https://[fe80::1]:8200",
            "https://0.0.0.0:8200",
            "https://2130706433:8200",
            "https://0x7f.1:8200",
        ] {
            let r = checked_address(&http, &conn(Tenant, address, false)).await;
            assert!(refused(r.clone()), "{address}: {r:?}");
            if let Err(e) = r {
                assert!(!e.to_string().contains("127.0.0.1"), "{e}");
            }
        }
        // Shape, for every kind.
        for kind in [Tenant, Cluster] {
            for address in ["https://192.0.2.1:8200/v1/sys/seal#", "https://192.0.2.1?"] {
                assert!(
                    refused(checked_address(&http, &conn(kind, address, false)).await),
                    "{kind:?} {address}"
                );
            }
        }
        // http: only with the flag; Kubernetes auth never.
        assert!(refused(
            checked_address(&strict, &conn(Cluster, "http://127.0.0.1:8200", false)).await
        ));
        assert_eq!(
            checked_address(&http, &conn(Cluster, "http://127.0.0.1:8200", false))
                .await
                .unwrap(),
            None
        );
        assert!(refused(
            checked_address(&http, &conn(Cluster, "http://127.0.0.1:8200", true)).await
        ));
        assert!(refused(
            checked_address(&strict, &conn(Tenant, "http://192.0.2.1:8200", false)).await
        ));
        // A tenant's ordinary address is pinned; the administrator's list
        // may open a loopback server.
        assert_eq!(
            checked_address(&strict, &conn(Tenant, "https://192.0.2.1:8200", false))
                .await
                .unwrap(),
            Some("192.0.2.1:8200".parse().unwrap())
        );
        let opened = Policy {
            allowed_networks: vec!["127.0.0.1/32".parse().unwrap()],
            ..Default::default()
        };
        assert!(
            checked_address(&opened, &conn(Tenant, "https://127.0.0.1:8200", false))
                .await
                .is_ok()
        );
        assert!(refused(
            checked_address(&opened, &conn(Tenant, "https://192.0.2.1:8200", false)).await
        ));
    }

    /// A ClusterVaultConnection whose audience the apiserver accepts gets
    /// InvalidConnection and no TokenRequest is made; a token the apiserver
    /// issued for more than the audience asked is not used.
    #[tokio::test]
    async fn apiserver_audiences_get_no_token() {
        use http::{Request, Response};
        use kube::client::Body;
        use std::sync::{Arc, Mutex as StdMutex};
        use tower_test::mock;
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let requests = Arc::new(StdMutex::new(Vec::<String>::new()));
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Some((req, send)) = handle.next_request().await {
                let path = req.uri().path().to_string();
                seen.lock().unwrap().push(path.clone());
                let body = if path.ends_with("/token") {
                    // Issued for "vault" and the apiserver's audience.
                    let claims = r#"{"aud":["vault","https://issuer.test"]}"#;
                    let enc = |b: &[u8]| {
                        b.iter()
                            .map(|c| format!("{c:08b}"))
                            .collect::<String>()
                            .as_bytes()
                            .chunks(6)
                            .map(|c| {
                                let mut v = 0u8;
                                for (i, bit) in c.iter().enumerate() {
                                    v |= (bit - b'0') << (5 - i);
                                }
                                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                                    [v as usize] as char
                            })
                            .collect::<String>()
                    };
                    serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                        "spec": {"audiences": ["vault"]},
                        "status": {"token": format!("e30.{}.sig", enc(claims.as_bytes())), "expirationTimestamp": "2030-01-01T00:00:00Z"}})
                } else {
                    serde_json::json!({"issuer": "https://issuer.test"})
                };
                send.send_response(
                    Response::builder()
                        .status(if path.ends_with("/token") { 201 } else { 200 })
                        .body(Body::from(serde_json::to_vec(&body).unwrap()))
                        .unwrap(),
                );
            }
        });
        let kube = kube::Client::new(service, "default");
        let identity = Identity {
            namespace: "system".into(),
            name: "controller".into(),
            pod: None,
            api_audiences: vec!["https://own-token-audience.test".into()],
        };
        let vault = Client::new(
            "https://127.0.0.1:1",
            "secret",
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        let tokens = Tokens::default();
        let with = |audience: &str| {
            let mut c = conn(
                ConnectionKind::ClusterVaultConnection,
                "https://127.0.0.1:1",
                true,
            );
            c.server.auth.kubernetes.as_mut().unwrap().audience = Some(audience.into());
            c
        };
        for audience in [
            "https://kubernetes.default.svc",
            "https://own-token-audience.test",
            "https://issuer.test",
            " ",
        ] {
            let e = tokens
                .get(&kube, Some(&identity), &with(audience), &vault)
                .await
                .unwrap_err();
            assert!(
                matches!(e, PushError::InvalidConnection(_)),
                "{audience}: {e:?}"
            );
            assert!(e.to_string().contains("apiserver"), "{e}");
        }
        assert!(
            requests
                .lock()
                .unwrap()
                .iter()
                .all(|p| !p.ends_with("/token")),
            "a TokenRequest was made: {:?}",
            requests.lock().unwrap()
        );
        // "vault" is asked; the answer is for more than that: not used.
        let e = tokens
            .get(&kube, Some(&identity), &with("vault"), &vault)
            .await
            .unwrap_err();
        assert!(matches!(e, PushError::InvalidConnection(_)), "{e:?}");
        assert!(
            requests
                .lock()
                .unwrap()
                .iter()
                .any(|p| p.ends_with("/token"))
        );
    }

    /// A shared ClusterVaultConnection whose prefix does not separate
    /// namespaces is refused unless one namespace, or sharedPrefix.
    #[test]
    fn a_prefix_without_namespace_needs_one_namespace_or_shared_prefix() {
        use crate::api::connections::ClusterVaultConnectionSpec;
        let spec = |prefix: Option<&str>, allowed: Option<Vec<&str>>, shared: Option<bool>| {
            ClusterVaultConnectionSpec {
                server: VaultServer {
                    path_prefix: prefix.map(String::from),
                    ..Default::default()
                },
                allowed_namespaces: allowed.map(|a| a.into_iter().map(String::from).collect()),
                shared_prefix: shared,
            }
        };
        assert!(prefix_separates_namespaces(&spec(None, None, None)));
        assert!(prefix_separates_namespaces(&spec(
            Some("kv/{namespace}/x"),
            None,
            None
        )));
        assert!(!prefix_separates_namespaces(&spec(
            Some("shared"),
            None,
            None
        )));
        assert!(!prefix_separates_namespaces(&spec(
            Some("shared"),
            Some(vec!["a", "b"]),
            None
        )));
        assert!(!prefix_separates_namespaces(&spec(
            Some("shared"),
            None,
            Some(false)
        )));
        assert!(prefix_separates_namespaces(&spec(
            Some("shared"),
            Some(vec!["a"]),
            None
        )));
        assert!(prefix_separates_namespaces(&spec(
            Some("shared"),
            None,
            Some(true)
        )));
    }

    /// A login token is revoked when a new login replaces it, when its
    /// connection is deleted, and at shutdown; a token from a Secret (the
    /// user's, not ours) never is.
    #[tokio::test]
    async fn login_tokens_are_revoked_when_replaced_and_at_shutdown() {
        use axum::Router;
        use axum::http::HeaderMap;
        use axum::routing::post;
        use std::sync::Arc;
        let revoked = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = revoked.clone();
        let app = Router::new().route(
            "/v1/auth/token/revoke-self",
            post(move |h: HeaderMap| {
                let seen = seen.clone();
                async move {
                    let t = h
                        .get("x-vault-token")
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_string();
                    seen.lock().unwrap().push(t);
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let vault = Client::new(
            &format!("http://{addr}"),
            "secret",
            None,
            Duration::from_secs(2),
        )
        .unwrap();
        let cached = |token: &str, login: bool| Cached {
            token: token.into(),
            resource_version: "1".into(),
            renew_at: Instant::now() + Duration::from_secs(600),
            revoke: login.then(|| vault.clone()),
            grace: Duration::from_millis(50),
        };
        let tokens = Tokens::default();
        tokens.store("a".into(), cached("login-1", true));
        tokens.store("a".into(), cached("login-2", true));
        tokens.store("b".into(), cached("from-a-secret", false));
        tokens.store("b".into(), cached("from-a-secret-2", false));
        tokens.store("c".into(), cached("login-c", true));
        tokens.forget_id("c");
        tokens.revoke_all(Duration::from_secs(5)).await;
        // The background revocations of the first two.
        for _ in 0..100 {
            if revoked.lock().unwrap().len() >= 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut got = revoked.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, ["login-1", "login-2", "login-c"]);
    }
}
