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

async fn metrics(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            String::new(),
        ),
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
