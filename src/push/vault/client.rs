//! The few Vault / OpenBao HTTP calls the push needs (KV v2 and login), on
//! reqwest with the process's rustls (ring) provider and the connection's CA.
//!
//! Bodies are never logged and never part of an error: a KV response holds
//! values, and a login response a token. Errors carry the call and the HTTP
//! status only.

use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// Why a call failed, as the condition reason says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    #[error("{call}: the server is unreachable: {detail}")]
    Unreachable { call: &'static str, detail: String },
    #[error("{call}: the server is sealed")]
    Sealed { call: &'static str },
    #[error(
        "{call}: login refused (HTTP {status}): check the role, its bound ServiceAccount and audience, or the token"
    )]
    AuthFailed { call: &'static str, status: u16 },
    #[error(
        "{call}: permission denied (HTTP 403): the policy of the controller's role must allow this path"
    )]
    PermissionDenied { call: &'static str },
    #[error("{call}: the path changed since it was read (check-and-set); reading it again")]
    CasMismatch { call: &'static str },
    #[error("{call}: unexpected answer (HTTP {status})")]
    Status { call: &'static str, status: u16 },
    #[error("{call}: unreadable answer: {detail}")]
    Invalid { call: &'static str, detail: String },
    #[error("{call}: the answer is larger than {} MiB; it was not read", MAX_REPLY >> 20)]
    ReplyTooLarge { call: &'static str },
    #[error("the connection's CA is not a PEM certificate: {0}")]
    BadCa(String),
    #[error("{0}")]
    BadAddress(&'static str),
}

/// The most of a reply that is read: a KV version, its metadata or a login
/// is a few KiB; a server that sends more (a hostile one: gigabytes, or a
/// body without end) is refused before it can fill the controller's memory.
pub const MAX_REPLY: usize = 4 << 20;

impl VaultError {
    /// The VaultSynced reason.
    pub fn reason(&self) -> &'static str {
        match self {
            VaultError::Unreachable { .. } => "Unreachable",
            // An answer: the server is there, it refused or garbled this call.
            VaultError::Status { .. } => "UnexpectedStatus",
            VaultError::Invalid { .. } => "InvalidReply",
            VaultError::Sealed { .. } => "Sealed",
            VaultError::AuthFailed { .. } => "AuthFailed",
            VaultError::PermissionDenied { .. } => "PermissionDenied",
            VaultError::CasMismatch { .. } => "Conflict",
            VaultError::BadCa(_) | VaultError::BadAddress(_) => "InvalidConnection",
            VaultError::ReplyTooLarge { .. } => "ReplyTooLarge",
        }
    }
}

/// A KV v2 path's metadata: its current version and custom metadata.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Metadata {
    #[serde(default)]
    pub current_version: u64,
    #[serde(default)]
    pub custom_metadata: Option<BTreeMap<String, String>>,
}

/// The newest version of a KV v2 path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Current {
    pub version: u64,
    /// None when the newest version is deleted or destroyed.
    pub data: Option<BTreeMap<String, String>>,
}

/// A login: the token and how long it lives.
pub struct Login {
    pub token: String,
    pub lease: Duration,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    address: String,
    mount: String,
}

impl Client {
    /// A client for `address` (`scheme://host[:port]`, anything more is
    /// refused) and the KV v2 `mount`, trusting `ca_pem` (if any) and each
    /// request bounded by `timeout`.
    pub fn new(
        address: &str,
        mount: &str,
        ca_pem: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Self, VaultError> {
        Self::pinned(address, mount, ca_pem, timeout, None)
    }

    /// As [`Client::new`]; with `pin`, every request goes to that socket
    /// address (checked before, see `address::pin`), whatever the name
    /// resolves to later, and never through a proxy.
    pub fn pinned(
        address: &str,
        mount: &str,
        ca_pem: Option<&[u8]>,
        timeout: Duration,
        pin: Option<std::net::SocketAddr>,
    ) -> Result<Self, VaultError> {
        let parsed = super::address::parse(address).map_err(VaultError::BadAddress)?;
        if !super::address::mount_ok(mount) {
            return Err(VaultError::BadAddress(super::address::BAD_MOUNT));
        }
        let mut roots = rustls::RootCertStore::empty();
        if let Some(pem) = ca_pem {
            let certs = pem::parse_many(pem).map_err(|e| VaultError::BadCa(e.to_string()))?;
            let mut n = 0;
            for c in certs.iter().filter(|c| c.tag() == "CERTIFICATE") {
                roots
                    .add(c.contents().to_vec().into())
                    .map_err(|e| VaultError::BadCa(e.to_string()))?;
                n += 1;
            }
            if n == 0 {
                return Err(VaultError::BadCa("no CERTIFICATE block".into()));
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| VaultError::BadCa(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none());
        if let Some(pin) = pin {
            http = http.no_proxy();
            if parsed.ip().is_none() {
                http = http.resolve(&parsed.host, pin);
            }
        }
        let http = http
            .build()
            .map_err(|e| VaultError::BadCa(e.without_url().to_string()))?;
        Ok(Client {
            http,
            address: parsed.base,
            mount: mount.trim_matches('/').to_string(),
        })
    }

    fn url(&self, rest: &str) -> String {
        format!("{}/v1/{rest}", self.address)
    }

    /// Sends a request (with `token`, if any); classifies the failures
    /// every call shares.
    async fn send(
        &self,
        call: &'static str,
        token: Option<&str>,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, VaultError> {
        let req = match token {
            Some(t) => req.header("X-Vault-Token", t),
            None => req,
        };
        let resp = req.send().await.map_err(|e| VaultError::Unreachable {
            call,
            detail: describe(&e),
        })?;
        match resp.status().as_u16() {
            503 if self.sealed().await => Err(VaultError::Sealed { call }),
            403 => match token {
                Some(t) if !self.token_valid(t).await => {
                    Err(VaultError::AuthFailed { call, status: 403 })
                }
                _ => Err(VaultError::PermissionDenied { call }),
            },
            _ => Ok(resp),
        }
    }

    /// Whether the server takes `token` at all. Vault and OpenBao answer a
    /// wrong, expired or revoked token with the same 403 "permission
    /// denied" as a path the policy does not allow; the token's own lookup
    /// (`auth/token/lookup-self`, allowed by the `default` policy) tells
    /// them apart. A token without the `default` policy is taken as wrong.
    async fn token_valid(&self, token: &str) -> bool {
        let resp = self
            .http
            .get(self.url("auth/token/lookup-self"))
            .header("X-Vault-Token", token)
            .send()
            .await;
        // No answer says nothing about the token.
        !matches!(resp, Ok(r) if r.status().as_u16() == 403)
    }

    /// Revokes `token` (`auth/token/revoke-self`): a login token this
    /// process no longer uses. Best effort: a failure is only logged.
    pub async fn revoke_self(&self, token: &str) {
        let sent = self
            .http
            .post(self.url("auth/token/revoke-self"))
            .header("X-Vault-Token", token)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => tracing::debug!(
                status = r.status().as_u16(),
                "revoking a Vault token failed"
            ),
            Err(e) => tracing::debug!(error = %describe(&e), "revoking a Vault token failed"),
        }
    }

    /// Whether the server says it is sealed (sys/health, no token needed).
    pub async fn sealed(&self) -> bool {
        #[derive(Deserialize)]
        struct Health {
            #[serde(default)]
            sealed: bool,
        }
        let Ok(resp) = self.http.get(self.url("sys/health")).send().await else {
            return false;
        };
        read_capped("reading sys/health", resp)
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<Health>(&b).ok())
            .is_some_and(|h| h.sealed)
    }

    /// Logs in with a JWT at `auth/<mount>/login`.
    pub async fn login_kubernetes(
        &self,
        auth_mount: &str,
        role: &str,
        jwt: &str,
    ) -> Result<Login, VaultError> {
        const CALL: &str = "login";
        if !super::address::mount_ok(auth_mount) {
            return Err(VaultError::BadAddress(super::address::BAD_MOUNT));
        }
        let req = self
            .http
            .post(self.url(&format!("auth/{}/login", auth_mount.trim_matches('/'))))
            .json(&json!({"role": role, "jwt": jwt}));
        let resp = match self.send(CALL, None, req).await {
            Err(VaultError::PermissionDenied { .. }) => {
                return Err(VaultError::AuthFailed {
                    call: CALL,
                    status: 403,
                });
            }
            r => r?,
        };
        let status = resp.status().as_u16();
        if status == 400 || status == 401 {
            return Err(VaultError::AuthFailed { call: CALL, status });
        }
        let body: Value = ok_json(CALL, resp).await?.unwrap_or_default();
        let token = body["auth"]["client_token"].as_str().unwrap_or_default();
        if token.is_empty() {
            return Err(VaultError::Invalid {
                call: CALL,
                detail: "no auth.client_token".into(),
            });
        }
        Ok(Login {
            token: token.to_string(),
            lease: Duration::from_secs(body["auth"]["lease_duration"].as_u64().unwrap_or(0)),
        })
    }

    /// The path's metadata; None when the path does not exist.
    pub async fn metadata(&self, token: &str, path: &str) -> Result<Option<Metadata>, VaultError> {
        const CALL: &str = "reading the path's metadata";
        let req = self
            .http
            .get(self.url(&format!("{}/metadata/{path}", self.mount)));
        let resp = self.send(CALL, Some(token), req).await?;
        let Some(body) = ok_json::<Value>(CALL, resp).await? else {
            return Ok(None);
        };
        serde_json::from_value(body["data"].clone())
            .map(Some)
            .map_err(|_| VaultError::Invalid {
                call: CALL,
                detail: "not KV version 2 metadata".into(),
            })
    }

    /// The newest version's data; None when the path has no data at all.
    pub async fn current(&self, token: &str, path: &str) -> Result<Option<Current>, VaultError> {
        const CALL: &str = "reading the path's data";
        let req = self
            .http
            .get(self.url(&format!("{}/data/{path}", self.mount)));
        let resp = self.send(CALL, Some(token), req).await?;
        let status = resp.status().as_u16();
        // 404 with a body names a deleted newest version; without, no path.
        let bytes = read_capped(CALL, resp).await?;
        let body: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(_) if status == 404 => return Ok(None),
            Err(e) => {
                return Err(VaultError::Invalid {
                    call: CALL,
                    detail: format!("not JSON at line {} column {}", e.line(), e.column()),
                });
            }
        };
        if status == 404 && body["data"].is_null() {
            return Ok(None);
        }
        if status != 200 && status != 404 {
            return Err(VaultError::Status { call: CALL, status });
        }
        let version = body["data"]["metadata"]["version"].as_u64().unwrap_or(0);
        let data = match &body["data"]["data"] {
            Value::Object(m) => Some(
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), String::from),
                        )
                    })
                    .collect(),
            ),
            _ => None,
        };
        Ok(Some(Current { version, data }))
    }

    /// Writes a new version if the newest is `cas` (0: the path must not
    /// exist); returns the new version's number.
    pub async fn write(
        &self,
        token: &str,
        path: &str,
        cas: u64,
        data: &BTreeMap<String, String>,
    ) -> Result<u64, VaultError> {
        const CALL: &str = "writing a version";
        let req = self
            .http
            .post(self.url(&format!("{}/data/{path}", self.mount)))
            .json(&json!({"options": {"cas": cas}, "data": data}));
        let resp = self.send(CALL, Some(token), req).await?;
        // KV v2 answers a check-and-set mismatch with 400.
        if resp.status().as_u16() == 400 {
            return Err(VaultError::CasMismatch { call: CALL });
        }
        let body: Value = ok_json(CALL, resp).await?.unwrap_or_default();
        body["data"]["version"].as_u64().ok_or(VaultError::Invalid {
            call: CALL,
            detail: "no data.version (is kvMount a KV version 2 engine?)".into(),
        })
    }

    /// Sets the path's custom metadata (creates the path's metadata if needed).
    pub async fn write_metadata(
        &self,
        token: &str,
        path: &str,
        custom: &BTreeMap<String, String>,
    ) -> Result<(), VaultError> {
        const CALL: &str = "writing the path's metadata";
        let req = self
            .http
            .post(self.url(&format!("{}/metadata/{path}", self.mount)))
            .json(&json!({"custom_metadata": custom}));
        let resp = self.send(CALL, Some(token), req).await?;
        ok_json::<Value>(CALL, resp).await.map(drop)
    }

    /// Removes the path: its metadata and every version.
    pub async fn delete_all(&self, token: &str, path: &str) -> Result<(), VaultError> {
        const CALL: &str = "deleting the path";
        let req = self
            .http
            .delete(self.url(&format!("{}/metadata/{path}", self.mount)));
        let resp = self.send(CALL, Some(token), req).await?;
        ok_json::<Value>(CALL, resp).await.map(drop)
    }
}

/// The JSON body of a 2xx answer (None for 404 and for 204).
async fn ok_json<T: serde::de::DeserializeOwned>(
    call: &'static str,
    resp: reqwest::Response,
) -> Result<Option<T>, VaultError> {
    let status = resp.status().as_u16();
    match status {
        404 | 204 => Ok(None),
        200..=299 => {
            let bytes = read_capped(call, resp).await?;
            if bytes.is_empty() {
                return Ok(None);
            }
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| VaultError::Invalid {
                    call,
                    detail: format!("not JSON at line {} column {}", e.line(), e.column()),
                })
        }
        _ => Err(VaultError::Status { call, status }),
    }
}

/// The body of `resp`, at most [`MAX_REPLY`] bytes: a Content-Length above
/// it is refused before anything is read, and a body that runs on (chunked,
/// or longer than it said) is refused as soon as it passes the cap.
async fn read_capped(
    call: &'static str,
    mut resp: reqwest::Response,
) -> Result<Vec<u8>, VaultError> {
    if resp.content_length().is_some_and(|n| n > MAX_REPLY as u64) {
        return Err(VaultError::ReplyTooLarge { call });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| VaultError::Unreachable {
        call,
        detail: describe(&e),
    })? {
        if body.len() + chunk.len() > MAX_REPLY {
            return Err(VaultError::ReplyTooLarge { call });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A transport error as fixed text: what failed, never the URL, an
/// address, or anything the server sent (a tenant's connection must not
/// turn the controller into a probe that reports what it found).
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_decode() || e.is_body() {
        "the answer broke off"
    } else {
        "request failed"
    };
    let mut hint = None;
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.downcast_ref::<rustls::Error>().is_some() {
            hint = Some("TLS handshake failed (check the connection's CA and the server's name)");
        } else if let Some(io) = s.downcast_ref::<std::io::Error>() {
            hint = hint.or(match io.kind() {
                std::io::ErrorKind::ConnectionRefused => Some("connection refused"),
                std::io::ErrorKind::ConnectionReset => Some("connection reset"),
                std::io::ErrorKind::TimedOut => Some("timed out"),
                _ => None,
            });
        }
        source = s.source();
    }
    match hint {
        Some(h) => format!("{kind}: {h}"),
        None => kind.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::http::StatusCode;
    use axum::routing::{get, post};

    /// A server that answers each call the way a real one fails, bodies
    /// holding a value that must never reach an error.
    async fn server(sealed: bool) -> String {
        const BODY: &str = r#"{"errors":["value-that-must-not-leak"]}"#;
        let app = Router::new()
            .route(
                "/v1/sys/health",
                get(move || async move {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(r#"{{"sealed":{sealed}}}"#),
                    )
                }),
            )
            .route(
                "/v1/secret/metadata/{*p}",
                get(|| async { (StatusCode::SERVICE_UNAVAILABLE, BODY) }),
            )
            .route(
                "/v1/secret/data/{*p}",
                post(|| async { (StatusCode::BAD_REQUEST, BODY) }).get(|| async {
                    r#"{"data":{"data":{"a":"1","n":2},"metadata":{"version":7}}}"#
                }),
            )
            .route(
                "/v1/auth/kubernetes/login",
                post(|| async { (StatusCode::FORBIDDEN, BODY) }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn failures_are_classified_without_their_bodies() {
        let c = Client::new(&server(true).await, "secret", None, Duration::from_secs(2)).unwrap();
        let sealed = c.metadata("t", "p").await.unwrap_err();
        assert_eq!(sealed.reason(), "Sealed");
        let cas = c.write("t", "p", 3, &BTreeMap::new()).await.unwrap_err();
        assert_eq!(cas.reason(), "Conflict");
        let login = c
            .login_kubernetes("kubernetes", "r", "jwt")
            .await
            .unwrap_err();
        assert_eq!(login.reason(), "AuthFailed");
        for e in [sealed, cas, login] {
            assert!(!e.to_string().contains("must-not-leak"), "{e}");
        }
        let current = c.current("t", "q").await.unwrap().unwrap();
        assert_eq!(current.version, 7);
        assert_eq!(
            current.data.unwrap(),
            BTreeMap::from([("a".into(), "1".into()), ("n".into(), "2".into())])
        );
        // 503 from a server that is not sealed: an unexpected status, not Sealed.
        let c = Client::new(&server(false).await, "secret", None, Duration::from_secs(2)).unwrap();
        assert_eq!(
            c.metadata("t", "p").await.unwrap_err().reason(),
            "UnexpectedStatus"
        );
    }

    /// OpenBao answers a wrong token and a path outside the policy alike
    /// (403 "permission denied"); the token's own lookup tells them apart.
    #[tokio::test]
    async fn a_wrong_token_is_auth_failed_and_a_denied_path_permission_denied() {
        use axum::http::HeaderMap;
        const DENIED: (StatusCode, &str) =
            (StatusCode::FORBIDDEN, r#"{"errors":["permission denied"]}"#);
        let app = Router::new()
            .route("/v1/secret/metadata/{*p}", get(|| async { DENIED }))
            .route("/v1/secret/data/{*p}", post(|| async { DENIED }))
            .route(
                "/v1/auth/token/lookup-self",
                get(|h: HeaderMap| async move {
                    if h.get("x-vault-token").is_some_and(|t| t == "good") {
                        (StatusCode::OK, r#"{"data":{}}"#)
                    } else {
                        DENIED
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let c = Client::new(
            &format!("http://{addr}"),
            "secret",
            None,
            Duration::from_secs(2),
        )
        .unwrap();
        let wrong = c.metadata("wrong", "p").await.unwrap_err();
        assert!(
            matches!(wrong, VaultError::AuthFailed { status: 403, .. }),
            "{wrong:?}"
        );
        assert_eq!(wrong.reason(), "AuthFailed");
        let wrong = c
            .write("wrong", "p", 0, &BTreeMap::new())
            .await
            .unwrap_err();
        assert_eq!(wrong.reason(), "AuthFailed");
        let denied = c.metadata("good", "p").await.unwrap_err();
        assert!(
            matches!(denied, VaultError::PermissionDenied { .. }),
            "{denied:?}"
        );
        assert_eq!(denied.reason(), "PermissionDenied");
    }

    #[test]
    fn a_ca_that_is_not_pem_is_refused() {
        let e = Client::new(
            "https://x",
            "secret",
            Some(b"not pem"),
            Duration::from_secs(1),
        );
        assert!(matches!(e, Err(VaultError::BadCa(_))));
    }
}

#[cfg(test)]
mod hostile {
    //! A server that answers with endless or huge bodies: every reply is
    //! read through a cap, so the controller's memory stays small.
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A raw HTTP/1.1 server on loopback that answers every request with
    /// `head`, then 64 KiB pieces of body forever (chunks if `chunked`).
    async fn server(head: &'static str, chunked: bool) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    if s.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let piece = "x".repeat(0x10000);
                    let chunk = if chunked {
                        format!("10000\r\n{piece}\r\n")
                    } else {
                        piece
                    };
                    loop {
                        if s.write_all(chunk.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        format!("http://{addr}")
    }

    fn rss_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn a_huge_or_endless_reply_is_refused_not_read() {
        let before = rss_kib();
        let huge = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n{",
            false,
        )
        .await;
        let endless = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            true,
        )
        .await;
        for address in [huge, endless] {
            let c = Client::new(&address, "secret", None, Duration::from_secs(20)).unwrap();
            let started = std::time::Instant::now();
            let calls = [
                c.metadata("t", "p").await.map(drop),
                c.current("t", "p").await.map(drop),
                c.login_kubernetes("kubernetes", "r", "jwt").await.map(drop),
                c.write("t", "p", 0, &BTreeMap::new()).await.map(drop),
            ];
            for r in calls {
                let e = r.unwrap_err();
                assert_eq!(e.reason(), "ReplyTooLarge", "{address}: {e}");
            }
            assert!(!c.sealed().await);
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{address}: the body was read on and on"
            );
        }
        let grown = rss_kib().saturating_sub(before);
        assert!(grown < 200 * 1024, "RSS grew by {grown} KiB");
    }
}

#[cfg(test)]
mod request_target {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback server that records each request line.
    async fn recorder() -> (String, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                log.lock()
                    .unwrap()
                    .push(text.lines().next().unwrap_or_default().to_string());
                let _ = s
                    .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    .await;
            }
        });
        (format!("http://{addr}"), seen)
    }

    /// An address with a path, '?' or '#' would fix the request target
    /// (`/v1/sys/seal#` makes every call a request to /v1/sys/seal): it is
    /// refused before anything is sent.
    #[tokio::test]
    async fn an_address_cannot_choose_the_request_target() {
        let (base, seen) = recorder().await;
        for suffix in [
            "/v1/sys/seal#",
            "/v1/sys/seal?",
            "/v1/sys/seal?x=",
            "/anything",
        ] {
            let address = format!("{base}{suffix}");
            if let Ok(c) = Client::new(&address, "secret", None, Duration::from_secs(2)) {
                let _ = c.metadata("t", "p").await;
            }
        }
        let seen = seen.lock().unwrap().clone();
        assert!(seen.is_empty(), "requests were sent: {seen:?}");
    }

    /// A pinned client sends to the pinned socket address, whatever its
    /// name would resolve to (here: nothing; no DNS query is made).
    #[tokio::test]
    async fn a_pinned_client_goes_to_the_checked_address_only() {
        let (base, seen) = recorder().await;
        let port = base.rsplit(':').next().unwrap();
        let pin: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let c = Client::pinned(
            &format!("http://vault.invalid:{port}"),
            "secret",
            None,
            Duration::from_secs(2),
            Some(pin),
        )
        .unwrap();
        assert_eq!(c.metadata("t", "p").await.unwrap(), None);
        assert_eq!(
            seen.lock().unwrap().clone(),
            vec!["GET /v1/secret/metadata/p HTTP/1.1".to_string()]
        );
    }
}
