//! The optional mutating webhook of annotation mode, served by every replica
//! over TLS (`--webhook-bind-address`): it fills the missing keys of an
//! annotated Secret in the CREATE or UPDATE request itself, so the first
//! stored version is complete. It never denies and makes no API call while
//! answering.
//!
//! - [`admission`]: one review: the rules' plan and the JSONPatch (pure but
//!   for the random values).
//! - [`tls`]: the served certificate (swapped in place) and the HTTPS server.
//! - [`certs`]: issuing and reading certificates; [`store`]: the certificate
//!   Secret's format and carrying out a decision on it.
//! - [`lifecycle`]: when to create, renew and roll over (pure).
//! - [`manager`]: the leader's loop that writes the Secret and keeps the
//!   webhook configuration's caBundle ([`configuration`], pure).
//! - [`latest`]: one object watched by name; [`metrics`].
//!
//! Every replica watches the certificate Secret through the API (no volume
//! mount) and serves what it holds. In `external` mode (cert-manager) that is
//! all; in `self` mode the leader also manages it.

pub mod admission;
pub mod certs;
pub mod configuration;
pub mod latest;
pub mod lifecycle;
pub mod manager;
pub mod metrics;
pub mod store;
pub mod tls;

use crate::cli::{CertMode, ControllerArgs};
use crate::runtime::leader::Leadership;
use crate::runtime::metrics::PathLabel;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use latest::Seen;
use lifecycle::Policy;
use metrics::WebhookMetrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::time::{Duration, Instant};
use tls::CertStore;
use tokio::sync::watch;
use tracing::{info, warn};

/// How long the webhook configuration must carry a new CA before a
/// certificate it signed is served: time for every apiserver to see it.
pub const SETTLE_SECONDS: i64 = 5;

/// Admission requests carry the object and the old one: room for two 1 MiB Secrets.
const BODY_LIMIT: usize = 8 << 20;

/// The certificate periods and names from the flags, checked.
pub fn policy(args: &ControllerArgs) -> anyhow::Result<Policy> {
    let w = &args.webhook;
    let secs = |d: Duration| d.as_secs() as i64;
    let mut sans: Vec<String> = w
        .webhook_dns_names
        .iter()
        .filter(|n| !n.is_empty())
        .cloned()
        .collect();
    sans.extend(w.webhook_ip_addresses.iter().map(|i| i.to_string()));
    sans.sort();
    sans.dedup();
    if sans.is_empty() {
        anyhow::bail!(
            "the webhook's certificate needs a name: set --webhook-dns-names or --webhook-ip-addresses"
        );
    }
    let p = Policy {
        ca_validity: secs(w.webhook_ca_validity),
        ca_renew_before: secs(w.webhook_ca_renew_before),
        cert_validity: secs(w.webhook_cert_validity),
        cert_renew_before: secs(w.webhook_cert_renew_before),
        settle: SETTLE_SECONDS,
        sans,
    };
    p.check().map_err(anyhow::Error::msg)?;
    Ok(p)
}

/// Where the certificate Secret lives (namespace as for the proof key).
pub fn location(args: &ControllerArgs) -> (String, String) {
    let namespace = args
        .webhook
        .webhook_cert_namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .or_else(|| args.namespace.clone())
        .unwrap_or_else(|| "default".into());
    (namespace, args.webhook.webhook_cert_secret.clone())
}

#[derive(Clone)]
struct Hook {
    metrics: WebhookMetrics,
    fills: Family<PathLabel, Counter>,
}

async fn mutate(State(hook): State<Hook>, body: Bytes) -> impl IntoResponse {
    let started = Instant::now();
    let (review, outcome, dry_run) = admission::review(&body);
    let json = serde_json::to_vec(&review).unwrap_or_default();
    if outcome == admission::Outcome::Filled && !dry_run {
        hook.fills
            .get_or_create(&PathLabel { path: "webhook" })
            .inc();
    }
    hook.metrics
        .requests
        .get_or_create(&crate::runtime::metrics::ResultLabel {
            result: outcome.as_str(),
        })
        .inc();
    hook.metrics
        .duration
        .observe(started.elapsed().as_secs_f64());
    ([(header::CONTENT_TYPE, "application/json")], json)
}

/// The admission router: `POST /mutate`.
pub fn router(metrics: WebhookMetrics, fills: Family<PathLabel, Counter>) -> axum::Router {
    axum::Router::new()
        .route("/mutate", post(mutate))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(Hook { metrics, fills })
}

/// Starts the webhook: the certificate watch and loader (every replica),
/// the leader's manager (self mode), and the HTTPS server. Returns the
/// certificate store, which readiness waits on.
pub async fn spawn(
    args: &ControllerArgs,
    client: kube::Client,
    leadership: Leadership,
    metrics: WebhookMetrics,
    fills: Family<PathLabel, Counter>,
    shutdown: crate::runtime::shutdown::Signal,
) -> anyhow::Result<Option<CertStore>> {
    let Some(addr) = args.webhook.webhook_bind_address else {
        return Ok(None);
    };
    let mode = args.webhook.webhook_cert_mode;
    let policy = (mode == CertMode::SelfManaged)
        .then(|| policy(args))
        .transpose()?;
    let listener = crate::runtime::admin::bind(addr, "the webhook").await?;
    let (namespace, name) = location(args);
    let secrets = kube::Api::namespaced(client.clone(), &namespace);

    let (secret_tx, secret_rx) = watch::channel(Seen::Unknown);
    tokio::spawn(latest::follow(
        secrets.clone(),
        name.clone(),
        "webhook certificate",
        secret_tx,
    ));
    let store = CertStore::new(metrics.certificate_expiry.clone());
    tokio::spawn(load(
        store.clone(),
        secret_rx.clone(),
        format!("{namespace}/{name}"),
    ));

    if let Some(policy) = policy {
        let configs = kube::Api::all(client);
        let config_name = args.webhook.webhook_configuration.clone();
        let (config_tx, config_rx) = watch::channel(Seen::Unknown);
        tokio::spawn(latest::follow(
            configs.clone(),
            config_name.clone(),
            "webhook configuration",
            config_tx,
        ));
        let manager = manager::Manager {
            secrets,
            secret_name: name,
            configs,
            config_name,
            policy,
            leadership,
            secret: secret_rx,
            config: config_rx,
            metrics: metrics.clone(),
        };
        tokio::spawn(manager.run(shutdown.clone()));
    }

    let config = tls::server_config(store.clone())?;
    info!(%addr, mode = ?mode, "serving the mutating webhook on /mutate");
    tokio::spawn(tls::serve(
        listener,
        config,
        router(metrics, fills),
        shutdown,
    ));
    Ok(Some(store))
}

/// Every replica: loads each new version of the certificate Secret into
/// the store (and looks again every 30 s, so a certificate refused as not
/// yet valid is taken once it is).
async fn load(
    store: CertStore,
    mut secret: watch::Receiver<Seen<k8s_openapi::api::core::v1::Secret>>,
    what: String,
) {
    let mut said = String::new();
    loop {
        let seen = secret.borrow_and_update().clone();
        let result = match &seen {
            Seen::Unknown => Ok(false),
            Seen::Absent => Err("it does not exist yet".to_string()),
            Seen::Present(s) => store.load(s.data.as_ref().unwrap_or(&Default::default())),
        };
        match result {
            Ok(true) => {
                said.clear();
                info!(secret = %what, "loaded the webhook's serving certificate");
            }
            Ok(false) => {}
            Err(e) if e != said => {
                warn!(secret = %what, problem = %e, "not serving from the webhook certificate Secret");
                said = e;
            }
            Err(_) => {}
        }
        tokio::select! {
            changed = secret.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
    }
}
