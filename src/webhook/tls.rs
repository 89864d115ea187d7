//! The serving certificate every replica serves, swapped in place when the
//! certificate Secret changes, and the HTTPS server around the admission router.
//!
//! A certificate outside its validity period is never served: it is refused
//! when loaded and, if it expires while loaded, no longer handed out (the
//! handshake fails and the apiserver applies the failure policy).

use super::certs;
use super::manager::unix_now;
use super::store::{TLS_CRT, TLS_KEY};
use k8s_openapi::ByteString;
use prometheus_client::metrics::gauge::Gauge;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tracing::{debug, warn};

/// One loaded certificate.
#[derive(Debug)]
struct Served {
    key: Arc<CertifiedKey>,
    not_before: i64,
    not_after: i64,
    der: Vec<u8>,
}

/// What the TLS server hands out; shared by the loader and the server.
#[derive(Clone, Debug)]
pub struct CertStore {
    current: Arc<RwLock<Option<Served>>>,
    /// The served certificate's notAfter (unix seconds; 0: none).
    expiry: Gauge,
}

impl CertStore {
    pub fn new(expiry: Gauge) -> Self {
        CertStore {
            current: Arc::new(RwLock::new(None)),
            expiry,
        }
    }

    /// Whether a certificate valid now is loaded (readiness).
    pub fn ready(&self) -> bool {
        let now = unix_now();
        self.current
            .read()
            .expect("cert lock")
            .as_ref()
            .is_some_and(|s| s.not_before <= now && now < s.not_after)
    }

    /// The DER of the loaded certificate.
    pub fn served_der(&self) -> Option<Vec<u8>> {
        self.current
            .read()
            .expect("cert lock")
            .as_ref()
            .map(|s| s.der.clone())
    }

    /// Loads `tls.crt` and `tls.key` from a Secret's data, if they make a
    /// certificate valid now; otherwise keeps what is loaded.
    pub fn load(&self, data: &BTreeMap<String, ByteString>) -> Result<bool, String> {
        let served = parse(data, unix_now())?;
        let mut current = self.current.write().expect("cert lock");
        if current.as_ref().is_some_and(|c| c.der == served.der) {
            return Ok(false);
        }
        self.expiry.set(served.not_after);
        *current = Some(served);
        Ok(true)
    }
}

fn parse(data: &BTreeMap<String, ByteString>, now: i64) -> Result<Served, String> {
    let crt = data.get(TLS_CRT).ok_or("no tls.crt")?;
    let key = data.get(TLS_KEY).ok_or("no tls.key")?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&crt.0)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls.crt: {e}"))?;
    let first = chain.first().ok_or("tls.crt holds no certificate")?;
    let info = certs::info(first).map_err(|e| e.to_string())?;
    if now < info.not_before {
        return Err("the certificate is not valid yet".into());
    }
    if now >= info.not_after {
        return Err("the certificate has expired".into());
    }
    let key = PrivateKeyDer::from_pem_slice(&key.0).map_err(|e| format!("tls.key: {e}"))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("tls.key: {e}"))?;
    let certified = CertifiedKey::new(chain.clone(), signer);
    certified
        .keys_match()
        .map_err(|_| "tls.key is not the key of tls.crt".to_string())?;
    Ok(Served {
        key: Arc::new(certified),
        not_before: info.not_before,
        not_after: info.not_after,
        der: first.to_vec(),
    })
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let now = unix_now();
        let current = self.current.read().expect("cert lock");
        let s = current.as_ref()?;
        (s.not_before <= now && now < s.not_after).then(|| s.key.clone())
    }
}

/// The rustls configuration that serves from `store` (HTTP/1.1, ring).
pub fn server_config(store: CertStore) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(store));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Connections held at once: the apiservers keep a few each. One more is
/// closed as soon as it is accepted, so idle or slow clients cannot make the
/// server hold more than this many TLS sessions and buffers.
pub const MAX_CONNECTIONS: usize = 64;
/// A TLS handshake, and a request's headers (also the wait for the next
/// request on an idle connection), must come within this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// hyper's read buffer per connection (headers, and body chunks as read).
const READ_BUFFER: usize = 64 << 10;

/// Serves `router` over TLS on `listener` until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    router: axum::Router,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    warn!(error = %e, "webhook: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(held) = connections.clone().try_acquire_owned() else {
            debug!(%peer, "webhook: too many connections; closed");
            continue; // dropped: closed
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, router) = (acceptor.clone(), router.clone());
        tokio::spawn(async move {
            let _held = held;
            // A client that never finishes its handshake holds nothing for long.
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return debug!(%peer, error = %e, "webhook: TLS handshake failed"),
                Err(_) => return debug!(%peer, "webhook: TLS handshake timed out"),
            };
            let service = hyper_util::service::TowerToHyperService::new(router);
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(READ_BUFFER)
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            if let Err(e) = served {
                debug!(%peer, error = %e, "webhook: connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::certs::{issue_ca, issue_leaf};

    fn data(leaf: &certs::Pair) -> BTreeMap<String, ByteString> {
        BTreeMap::from([
            (TLS_CRT.into(), ByteString(leaf.cert.clone().into_bytes())),
            (TLS_KEY.into(), ByteString(leaf.key.clone().into_bytes())),
        ])
    }

    #[test]
    fn only_a_certificate_valid_now_with_its_key_is_loaded() {
        let now = unix_now();
        let sans = ["127.0.0.1".to_string()];
        let ca = issue_ca(now - 100, now + 1000, Some(&sans)).unwrap();
        let good = issue_leaf(&ca, &sans, now - 10, now + 100).unwrap();
        let expired = issue_leaf(&ca, &sans, now - 100, now - 10).unwrap();
        let store = CertStore::new(Gauge::default());
        assert!(!store.ready());
        assert!(store.load(&data(&expired)).unwrap_err().contains("expired"));
        assert!(!store.ready());
        let mut mismatched = data(&good);
        mismatched.insert(TLS_KEY.into(), ByteString(ca.key.clone().into_bytes()));
        assert!(store.load(&mismatched).is_err());
        assert_eq!(store.load(&data(&good)), Ok(true));
        assert_eq!(store.load(&data(&good)), Ok(false));
        assert!(store.ready());
        assert_eq!(store.expiry.get(), now + 100);
        // A bad update keeps the good certificate.
        assert!(store.load(&data(&expired)).is_err());
        assert!(store.ready());
    }
}
