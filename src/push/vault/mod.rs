//! The Vault / OpenBao KV v2 target: the path holds the current version.
//!
//! - [`client`]: the HTTP calls (KV v2, login), bodies never logged.
//! - [`connection`]: the connection object, its CA and the token cache.
//! - [`plan`]: pure decisions (path, data, ours or not, what to write).
//!
//! The data is compared first and written with check-and-set, so a resync,
//! a restart or a leader change writes nothing; a new path gets its first
//! version with check-and-set 0, then the mark that says it is ours (custom
//! metadata), so a mark of ours never lands on someone else's path.

pub mod address;
pub mod audience;
pub mod client;
pub mod connection;
pub mod plan;

use super::{Context, PushError};
use crate::api::RandomSecret;
use crate::api::push::{VaultPush, VaultPushStatus};
use client::VaultError;
use connection::Connection;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use plan::{Decision, Source};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

/// The most of an error from elsewhere (the apiserver, an admission
/// webhook's words) that goes into a condition or an Event.
const BRIEF: usize = 300;

/// `e` as text of at most [`BRIEF`] characters.
pub(crate) fn brief(e: impl std::fmt::Display) -> String {
    let text = e.to_string();
    match text.char_indices().nth(BRIEF) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// A push that completed.
#[derive(Debug)]
pub struct Synced {
    pub status: VaultPushStatus,
    pub kv_version: u64,
    /// A new KV version was written.
    pub written: bool,
    /// ... because the values had been changed in Vault by hand.
    pub drift: bool,
}

fn source<'a>(rs: &'a RandomSecret, owner: &'a str) -> Source<'a> {
    Source {
        namespace: rs.metadata.namespace.as_deref().unwrap_or_default(),
        name: rs.metadata.name.as_deref().unwrap_or_default(),
        uid: rs.metadata.uid.as_deref().unwrap_or_default(),
        owner,
    }
}

/// This installation's owner proof for the RandomSecret's paths.
fn owner(ctx: &Context, rs: &RandomSecret) -> String {
    ctx.proof_key.sign_fields(
        plan::OWNER_DOMAIN,
        &plan::owner_fields(
            rs.metadata.namespace.as_deref().unwrap_or_default(),
            rs.metadata.name.as_deref().unwrap_or_default(),
        ),
    )
}

/// The whole exchange with one target is bounded: a server that accepts
/// connections and never answers cannot hold a push slot.
async fn bounded<T>(
    conn: &Connection,
    work: impl Future<Output = Result<T, PushError>>,
) -> Result<T, PushError> {
    let limit = conn.timeout() * 4;
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or(Err(PushError::Timeout(limit)))
}

/// Resolves the connection and logs in; a refused token is forgotten.
async fn open(
    ctx: &Context,
    rs: &RandomSecret,
    target: &VaultPush,
) -> Result<(Connection, client::Client, String, String), PushError> {
    let owner = owner(ctx, rs);
    let src = source(rs, &owner);
    let conn = match connection::resolve(&ctx.client, src.namespace, &target.connection_ref).await {
        Ok(conn) => conn,
        Err(e) => {
            if matches!(e, PushError::ConnectionNotFound(_)) {
                let r = &target.connection_ref;
                let kind = r.kind.unwrap_or_default();
                forget_connection(ctx, &connection::id_of(kind, &r.name, Some(src.namespace)));
            }
            return Err(e);
        }
    };
    let path = plan::path(conn.path_prefix(), target.path.as_deref(), &src).ok_or_else(|| {
        PushError::InvalidPath(format!(
            "the path {:?} below the prefix {:?} of {} is not a valid KV path for {}/{}",
            target.path.as_deref().unwrap_or("{name}"),
            conn.path_prefix(),
            conn.id(),
            src.namespace,
            src.name
        ))
    })?;
    held_down(ctx, &conn)?;
    let login = async {
        let vault = connection::client(&ctx.client, &ctx.vault_policy, &conn).await?;
        let token = bounded(
            &conn,
            ctx.tokens
                .get(&ctx.client, ctx.identity.as_ref(), &conn, &vault),
        )
        .await?;
        Ok((vault, token))
    };
    match login.await {
        Ok((vault, token)) => Ok((conn, vault, token, path)),
        Err(e) => {
            hold::<()>(ctx, &conn, Err(&e));
            connection::report(ctx, &conn, Err(&e)).await;
            Err(e)
        }
    }
}

/// Forgets what this process holds about a deleted connection: its token,
/// its hold-down and the status last written, so the maps hold only
/// connections that exist (a namespace that makes and deletes connections
/// cannot grow them).
fn forget_connection(ctx: &Context, id: &str) {
    ctx.tokens.forget_id(id);
    ctx.down.lock().expect("down lock").remove(id);
    ctx.connections.lock().expect("connections lock").remove(id);
}

/// How long pushes through a connection that did not answer fail at once.
const HOLD_DOWN: Duration = Duration::from_secs(10);

/// Connections held down, and until when (`Context::down`).
type Down = std::sync::Mutex<std::collections::HashMap<String, Instant>>;

/// Fails at once while `conn` is held down after it did not answer.
fn held_down(ctx: &Context, conn: &Connection) -> Result<(), PushError> {
    held_down_in(&ctx.down, &conn.id())
}

fn held_down_in(down: &Down, id: &str) -> Result<(), PushError> {
    let down = down.lock().expect("down lock");
    match down.get(id) {
        Some(until) if *until > Instant::now() => Err(PushError::Vault(VaultError::Unreachable {
            call: "connect",
            detail: format!(
                "{id} did not answer moments ago; it is tried again within {}s",
                HOLD_DOWN.as_secs()
            ),
        })),
        _ => Ok(()),
    }
}

/// Whether a failure says the server did not answer at all (no connection,
/// no answer in time): only that holds a connection down. An answer, any
/// HTTP status, is about one push's path or data: on a shared
/// ClusterVaultConnection one tenant's refused write must not stop another's.
fn transport_failure(e: &PushError) -> bool {
    matches!(
        e,
        PushError::Timeout(_) | PushError::Vault(VaultError::Unreachable { .. })
    )
}

/// Holds `conn` down after it did not answer; releases it once it does.
fn hold<T>(ctx: &Context, conn: &Connection, result: Result<T, &PushError>) {
    hold_in(&ctx.down, &conn.id(), result)
}

fn hold_in<T>(down: &Down, id: &str, result: Result<T, &PushError>) {
    let mut down = down.lock().expect("down lock");
    match result {
        Err(e) if transport_failure(e) => {
            let now = Instant::now();
            down.retain(|_, until| *until > now);
            down.insert(id.to_string(), now + HOLD_DOWN);
        }
        Ok(_) => {
            down.remove(id);
        }
        Err(_) => {}
    }
}

/// Forgets the token when the server refused it (revoked or expired early).
/// A path the policy denies (the token itself is valid: `Client::send` asks
/// the token's own lookup) keeps it: on a shared ClusterVaultConnection one
/// tenant's denied path must not make every push log in again.
fn refused(ctx: &Context, conn: &Connection, e: PushError) -> PushError {
    if token_refused(&e) {
        ctx.tokens.forget(conn);
    }
    e
}

fn token_refused(e: &PushError) -> bool {
    matches!(e, PushError::Vault(VaultError::AuthFailed { .. }))
}

/// Makes the path hold the values of `secret_name` (selected keys, prefixed).
pub async fn sync(
    ctx: &Context,
    rs: &RandomSecret,
    target: &VaultPush,
    secret_name: &str,
) -> Result<Synced, PushError> {
    let owner = owner(ctx, rs);
    let src = source(rs, &owner);
    let (conn, vault, token, path) = open(ctx, rs, target).await?;
    let values = version_values(ctx, rs, secret_name).await?;
    let desired = plan::data(
        &values,
        target.keys.as_deref(),
        target.key_prefix.as_deref(),
    )
    .map_err(|k| {
        PushError::KeyNotFound(format!(
            "spec.push.vault.keys names {k:?}, which Secret {secret_name} does not have"
        ))
    })?;
    drop(values);
    if plan::payload_size(&desired) > plan::MAX_PAYLOAD {
        return Err(PushError::PayloadTooLarge(format!(
            "the data to push is larger than {} KiB: a Vault shared with other namespaces is not sent it; push fewer keys (spec.push.vault.keys)",
            plan::MAX_PAYLOAD >> 10
        )));
    }
    let random = holds_generated(rs, target, &desired);
    let work = async {
        let meta: Option<client::Metadata> = vault.metadata(&token, &path).await?;
        let current = match &meta {
            Some(_) => vault.current(&token, &path).await?,
            None => None,
        };
        let decision = if plan::interrupted_claim(meta.as_ref(), current.as_ref(), &desired, random)
        {
            // Our first write, its mark not written yet: marked below.
            Decision::UpToDate { kv_version: 1 }
        } else {
            plan::decide(meta.as_ref(), current.as_ref(), &desired, &src, secret_name)
        };
        let remark = plan::needs_mark(meta.as_ref(), &src, secret_name);
        let ours = plan::ours(&src, secret_name);
        let (kv_version, written, drift) = match decision {
            Decision::NotManaged => {
                return Err::<_, PushError>(PushError::PathNotManaged(format!(
                    "{}/{path} exists and was not written by this RandomSecret (its custom metadata does not say managed-by=randomsecret, source-namespace={}, source-name={} with this installation's owner-proof): it is never written; choose another spec.push.vault.path, or delete the path in Vault",
                    conn.kv_mount(),
                    src.namespace,
                    src.name
                )));
            }
            Decision::UpToDate { kv_version } => (kv_version, false, false),
            Decision::Write { cas, claim, drift } => {
                // A replica that lost its lease meanwhile writes nothing.
                if !ctx.leader.leading() {
                    return Err(PushError::LostLease);
                }
                // The data first: its check-and-set (0 for a new path) fails
                // if someone else wrote meanwhile, so a mark of ours never
                // lands on their path. Then the mark.
                let v = vault.write(&token, &path, cas, &desired).await?;
                if claim {
                    vault.write_metadata(&token, &path, &ours).await?;
                }
                (v, true, drift)
            }
        };
        // The metadata names the version the path holds, and this
        // installation's owner proof.
        if remark && !matches!(decision, Decision::Write { claim: true, .. }) {
            vault.write_metadata(&token, &path, &ours).await?;
        }
        Ok((kv_version, written, drift))
    };
    let result = bounded(&conn, work).await;
    hold(ctx, &conn, result.as_ref());
    connection::report(ctx, &conn, result.as_ref().map(drop)).await;
    let (kv_version, written, drift) = result.map_err(|e| refused(ctx, &conn, e))?;
    let full_path = format!("{}/{path}", conn.kv_mount());
    let previous = rs
        .status
        .as_ref()
        .and_then(|s| s.push.as_ref())
        .and_then(|p| p.vault.as_ref());
    Ok(Synced {
        status: plan::status(previous, &conn.id(), &full_path, secret_name, kv_version),
        kv_version,
        written,
        drift,
    })
}

/// Whether the pushed data holds a generated value (not only static ones).
fn holds_generated(
    rs: &RandomSecret,
    target: &VaultPush,
    desired: &std::collections::BTreeMap<String, String>,
) -> bool {
    let prefix = target.key_prefix.as_deref().unwrap_or("");
    crate::version::VersionSpec::from_spec(&rs.spec).is_ok_and(|spec| {
        spec.generated
            .keys()
            .any(|k| desired.contains_key(&format!("{prefix}{k}")))
    })
}

/// Removes the path (metadata and every version) if it is ours; a path of
/// someone else, or none, is left as it is. Returns whether it was removed.
pub async fn cleanup(
    ctx: &Context,
    rs: &RandomSecret,
    target: &VaultPush,
) -> Result<bool, PushError> {
    let owner = owner(ctx, rs);
    let src = source(rs, &owner);
    let (conn, vault, token, path) = open(ctx, rs, target).await?;
    let work = async {
        match vault
            .metadata(&token, &path)
            .await
            .map_err(PushError::Vault)?
        {
            Some(meta) if plan::is_ours(&meta, &src) => vault
                .delete_all(&token, &path)
                .await
                .map_err(PushError::Vault)
                .map(|()| true),
            _ => Ok(false),
        }
    };
    let result = bounded(&conn, work).await;
    hold(ctx, &conn, result.as_ref());
    result.map_err(|e| refused(ctx, &conn, e))
}

/// Whether `secret` is a version of this RandomSecret that this controller
/// made, before its data is pushed: controlled by it (uid), labelled with its
/// name, and carrying a valid proof over its namespace, name, labels, type
/// and data, immutable. Anyone who can write Secrets in the namespace can
/// forge an owner reference; no one without the proof key can forge the proof.
fn check_version(
    key: &crate::proof::ProofKey,
    secret: &Secret,
    src: &Source,
) -> Result<(), PushError> {
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let owned = secret
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == src.uid && o.controller == Some(true));
    if !owned {
        return Err(PushError::Answer(format!(
            "Secret {name} is not controlled by this RandomSecret (yet); waiting for the version"
        )));
    }
    let labelled = secret
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(crate::api::LABEL_NAME))
        .is_some_and(|n| n == src.name);
    if !labelled || key.check_secret(secret) != crate::proof::Proof::Valid {
        return Err(PushError::UnprovenVersion(format!(
            "Secret {name} carries no valid proof that this controller made it as a version of this RandomSecret: its data is not pushed"
        )));
    }
    Ok(())
}

/// The values of the version Secret, read once for this push and dropped
/// after (never cached). It must be this RandomSecret's version.
async fn version_values(
    ctx: &Context,
    rs: &RandomSecret,
    secret_name: &str,
) -> Result<BTreeMap<String, String>, PushError> {
    let src = source(rs, "");
    let secret = Api::<Secret>::namespaced(ctx.client.clone(), src.namespace)
        .get(secret_name)
        .await
        .map_err(|e| PushError::kube(format!("reading Secret {secret_name}"), e))?;
    check_version(&ctx.proof_key, &secret, &src)?;
    Ok(secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::outcome::Outcome as _;

    #[test]
    fn foreign_text_is_cut_short() {
        assert_eq!(brief("short"), "short");
        let long = "é".repeat(1000);
        let cut = brief(&long);
        assert_eq!(cut.chars().count(), BRIEF + 1);
        assert!(cut.ends_with('…'));
    }

    /// A Secret made to look like a version (owner reference, labels) but
    /// not made by the controller is never pushed; one it made and signed is.
    #[test]
    fn only_a_proven_version_is_pushed() {
        let key = crate::proof::ProofKey::generate().unwrap();
        let src = Source {
            namespace: "team",
            name: "db",
            uid: "u1",
            owner: "",
        };
        let mut secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db-abc", "namespace": "team",
                "labels": {crate::api::LABEL_NAME: "db", crate::api::LABEL_HASH: "abc"},
                "ownerReferences": [{"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
                    "name": "db", "uid": "u1", "controller": true}]},
            "immutable": true,
            "data": {"password": "Zm9yZ2Vk"},
        }))
        .unwrap();
        let e = check_version(&key, &secret, &src).unwrap_err();
        assert_eq!(e.reason(), "VersionNotProven");
        let proof = key.sign(&secret);
        secret
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(crate::proof::ANNOTATION_PROOF.into(), proof);
        assert!(check_version(&key, &secret, &src).is_ok());
        // Signed by another installation's key: not ours.
        let other = crate::proof::ProofKey::generate().unwrap();
        assert_eq!(
            check_version(&other, &secret, &src).unwrap_err().reason(),
            "VersionNotProven"
        );
        // Relabelled to another RandomSecret: the proof no longer holds.
        let mut moved = secret.clone();
        moved
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(crate::api::LABEL_NAME.into(), "other".into());
        assert!(
            check_version(
                &key,
                &moved,
                &Source {
                    name: "other",
                    ..src.clone()
                }
            )
            .is_err()
        );
    }
    use axum::Router;
    use axum::http::StatusCode;
    use axum::routing::{get, post};

    /// A shared server: tenant A's paths answer every call with an error
    /// status (403, 400, 500, 413, a body that is not JSON); tenant B's
    /// work. A's failures must not hold the shared connection down for B.
    #[tokio::test]
    async fn a_tenants_refused_write_does_not_hold_a_shared_connection_down() {
        let app = Router::new()
            .route(
                "/v1/secret/metadata/a/{code}",
                get(
                    |axum::extract::Path(code): axum::extract::Path<u16>| async move {
                        (StatusCode::from_u16(code).unwrap(), "<html>not json</html>")
                    },
                ),
            )
            .route(
                "/v1/secret/metadata/a-bad-json/x",
                get(|| async { (StatusCode::OK, "<html>not json</html>") }),
            )
            .route(
                "/v1/secret/metadata/b/x",
                get(|| async { (StatusCode::NOT_FOUND, "") }),
            )
            .route(
                "/v1/secret/data/b/x",
                post(|| async { r#"{"data":{"version":1}}"# }),
            )
            .route(
                "/v1/auth/token/lookup-self",
                get(|| async { (StatusCode::OK, "{}") }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let vault = client::Client::new(
            &format!("http://{addr}"),
            "secret",
            None,
            Duration::from_secs(2),
        )
        .unwrap();
        let down = Down::default();
        let shared = "ClusterVaultConnection/shared";
        for path in ["a/403", "a/400", "a/500", "a/413", "a/502", "a-bad-json/x"] {
            let e = PushError::Vault(vault.metadata("t", path).await.unwrap_err());
            hold_in::<()>(&down, shared, Err(&e));
            assert!(
                held_down_in(&down, shared).is_ok(),
                "tenant A's {path} ({}) held the shared connection down",
                e.reason()
            );
            assert_ne!(e.reason(), "Unreachable", "{path}: {e}");
            assert!(!e.to_string().contains("html"), "{e}");
        }
        // Nor does it cost the shared connection its token.
        let denied = PushError::Vault(VaultError::PermissionDenied { call: "x" });
        assert!(!token_refused(&denied));
        assert!(token_refused(&PushError::Vault(VaultError::AuthFailed {
            call: "x",
            status: 403
        })));
        // Tenant B's push through the same connection goes through at once.
        assert_eq!(vault.metadata("t", "b/x").await.unwrap(), None);
        assert_eq!(
            vault.write("t", "b/x", 0, &BTreeMap::new()).await.unwrap(),
            1
        );
        // A server that does not answer at all holds it down.
        let dead =
            client::Client::new("http://127.0.0.1:9", "secret", None, Duration::from_secs(2))
                .unwrap();
        let e = PushError::Vault(dead.metadata("t", "b/x").await.unwrap_err());
        assert_eq!(e.reason(), "Unreachable");
        hold_in::<()>(&down, shared, Err(&e));
        assert!(held_down_in(&down, shared).is_err());
        hold_in(&down, shared, Ok::<_, &PushError>(()));
        assert!(held_down_in(&down, shared).is_ok());
        let timeout = PushError::Timeout(Duration::from_secs(1));
        hold_in::<()>(&down, shared, Err(&timeout));
        assert!(held_down_in(&down, shared).is_err());
    }
}
