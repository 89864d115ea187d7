//! The admin HTTP servers: `/metrics` on one address, `/healthz` and `/readyz`
//! on another (the controller-runtime convention).

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;

/// A further condition of readiness: Some(what is missing) while not met.
pub type Gate = Arc<dyn Fn() -> Option<&'static str> + Send + Sync>;

/// Readiness: set once the caches are synced, and every gate is open (the
/// webhook's: a certificate is loaded).
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>, Arc<std::sync::OnceLock<Gate>>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Relaxed);
    }
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    /// Adds a condition (one at most).
    pub fn gate(&self, gate: Gate) {
        let _ = self.1.set(gate);
    }
    /// What readiness still waits for.
    pub fn missing(&self) -> Option<&'static str> {
        if !self.get() {
            return Some("caches not synced");
        }
        self.1.get().and_then(|g| g())
    }
}

/// The size of the pieces `/metrics` is sent in.
const CHUNK: usize = 64 * 1024;

/// `/metrics`, encoded on a blocking thread and sent in pieces as it is
/// made: with the per-object series a scrape of 10,000 RandomSecrets is
/// megabytes, which would otherwise be held whole (and made on a runtime
/// thread, holding up reconciles). At most a few pieces are in flight; a
/// scraper that goes away stops the encoding.
async fn metrics(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(2);
    tokio::task::spawn_blocking(move || {
        let mut out = Pieces {
            buf: String::with_capacity(CHUNK),
            tx,
        };
        let encoded = prometheus_client::encoding::text::encode(&mut out, &registry);
        let last = std::mem::take(&mut out.buf);
        // An error half-way ends the body with an error: the scraper sees a
        // broken response, never a partial one that parses.
        let _ = out.tx.blocking_send(match encoded {
            Ok(()) => Ok(last),
            Err(_) => Err(std::io::Error::other("encoding the metrics failed")),
        });
    });
    let body = axum::body::Body::from_stream(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        body,
    )
}

/// A `fmt::Write` that sends what is written in pieces of [`CHUNK`].
struct Pieces {
    buf: String,
    tx: tokio::sync::mpsc::Sender<Result<String, std::io::Error>>,
}

impl std::fmt::Write for Pieces {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.buf.push_str(s);
        if self.buf.len() >= CHUNK {
            let piece = std::mem::replace(&mut self.buf, String::with_capacity(CHUNK));
            // The scraper went away: stop encoding.
            self.tx
                .blocking_send(Ok(piece))
                .map_err(|_| std::fmt::Error)?;
        }
        Ok(())
    }
}

async fn readyz(State(ready): State<Readiness>) -> impl IntoResponse {
    match ready.missing() {
        None => (StatusCode::OK, "ok"),
        Some(what) => (StatusCode::SERVICE_UNAVAILABLE, what),
    }
}

pub async fn bind(addr: SocketAddr, what: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen for {what} on {addr}: {e}"))
}

pub fn metrics_router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(registry)
}

pub fn health_router(ready: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

/// Serves until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// Where the admin servers listen (`--metrics-bind-address`,
/// `--health-probe-bind-address`): named, as two bare addresses swap unseen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addresses {
    pub metrics: SocketAddr,
    pub health: SocketAddr,
}

/// Binds the metrics and health listeners (failing clearly when a port is
/// taken) and serves them until `shutdown`.
pub async fn spawn(
    at: Addresses,
    registry: Registry,
    readiness: Readiness,
    shutdown: super::shutdown::Signal,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let metrics_listener = bind(at.metrics, "metrics").await?;
    let health_listener = bind(at.health, "health probes").await?;
    let metrics = serve(
        metrics_listener,
        metrics_router(Arc::new(registry)),
        shutdown.clone(),
    );
    let health = serve(health_listener, health_router(readiness), shutdown);
    Ok(tokio::spawn(async move {
        tokio::try_join!(metrics, health)?;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;

    /// Sent in pieces, the body is the text encoding whole, in order.
    #[tokio::test]
    async fn metrics_in_pieces_are_the_whole_encoding() {
        let mut registry = Registry::default();
        let family = Family::<Vec<(String, String)>, Gauge>::default();
        for i in 0..8000 {
            family
                .get_or_create(&vec![("name".to_string(), format!("object-{i:05}"))])
                .set(i);
        }
        registry.register("many", "Series enough for several pieces", family);
        let mut whole = String::new();
        prometheus_client::encoding::text::encode(&mut whole, &registry).unwrap();
        assert!(
            whole.len() > 3 * CHUNK,
            "{} bytes: too few pieces",
            whole.len()
        );
        let response = metrics(State(Arc::new(registry))).await.into_response();
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(std::str::from_utf8(&body).unwrap(), whole);
    }
}
