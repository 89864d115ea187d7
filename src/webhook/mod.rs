//! The optional mutating webhook of annotation mode, served by every replica
//! over TLS (`--webhook-bind-address`): it fills the missing keys of an
//! annotated Secret in the CREATE or UPDATE request itself, so the first
//! stored version is complete. It never denies and makes no API call while
//! answering.
//!
//! - [`review`]: reading a review, one pass keeping only what the rules read;
//!   [`admission`]: the rules' plan and the JSONPatch (pure but for the
//!   random values), run on the blocking pool (bcrypt); RSA keys are left
//!   to the controller path, with a warning.
//! - Limits (finding #2 of issue 26): a body is at most [`BODY_LIMIT`]; at
//!   most [`IN_FLIGHT`] reviews are read at once, [`LARGE_IN_FLIGHT`] of
//!   them large, and one more is shed at once; each has [`REQUEST_TIMEOUT`];
//!   the server holds at most `tls::MAX_CONNECTIONS` connections.
//! - [`tls`]: the served certificate (swapped in place) and the HTTPS server.
//! - [`certs`]: issuing and reading certificates (a CA limited to the
//!   webhook's names); [`store`]: the serving and CA Secrets' format and
//!   carrying out a decision on them.
//! - [`lifecycle`]: when to create, renew and roll over (pure).
//! - [`manager`]: the leader's loop that writes the Secret and keeps the
//!   webhook configuration's caBundle ([`configuration`], pure).
//! - [`latest`]: one object watched by name; [`metrics`].
//!
//! Every replica watches the serving certificate Secret through the API (no
//! volume mount) and serves what it holds. In `external` mode (cert-manager)
//! that is all; in `self` mode the leader also manages it and the CA Secret,
//! which only the leader reads.

pub mod admission;
pub mod certs;
pub mod configuration;
pub mod latest;
pub mod lifecycle;
pub mod manager;
pub mod metrics;
pub mod review;
pub mod store;
pub mod tls;

use crate::cli::CertMode;
use crate::runtime::leader::Leadership;
use crate::runtime::metrics::PathLabel;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use latest::Seen;
use lifecycle::Policy;
use metrics::WebhookMetrics;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tls::CertStore;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tracing::{debug, info, warn};

/// How long the webhook configuration must carry a new CA before a
/// certificate it signed is served: time for every apiserver to see it.
pub const SETTLE_SECONDS: i64 = 5;

/// The largest body read. An UPDATE carries the object and the old one: a
/// stored Secret holds at most 1 MiB of data, 1,398,104 bytes in base64, so
/// two take 2,796,208 bytes and 3 MiB (3,145,728) leaves 349,520 for their
/// metadata and the review around them. The apiserver itself refuses
/// requests over 3 MiB. A longer body is refused (413) unread when its
/// Content-Length says so, else as soon as it passes the limit.
pub const BODY_LIMIT: usize = 3 << 20;
/// Reviews read at once. One costs about its body (at most 3 MiB) and the
/// values it fills (at most 1 MiB, and their patch): a few times 8 stays far
/// within the chart's 256 MiB.
pub const IN_FLIGHT: usize = 8;
/// Of those, large ones (a body over [`SMALL`], or of unknown length): a
/// flood of large reviews leaves room for ordinary ones.
pub const LARGE_IN_FLIGHT: usize = 4;
/// An ordinary review (a Secret of a few keys) is a few KiB.
pub const SMALL: u64 = 256 << 10;
/// From the end of the headers to the answer: reading the body and answering.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The slots of reviews in flight.
#[derive(Clone)]
struct Slots {
    all: Arc<Semaphore>,
    large: Arc<Semaphore>,
}

impl Slots {
    fn new() -> Self {
        Slots {
            all: Arc::new(Semaphore::new(IN_FLIGHT)),
            large: Arc::new(Semaphore::new(LARGE_IN_FLIGHT)),
        }
    }

    /// Slots for a review of `length` bytes, if free now: never waits, so a
    /// flood costs a refusal each, not a queue.
    fn take(&self, length: Option<u64>) -> Option<Vec<OwnedSemaphorePermit>> {
        let mut held = Vec::with_capacity(2);
        if length.is_none_or(|l| l > SMALL) {
            held.push(self.large.clone().try_acquire_owned().ok()?);
        }
        held.push(self.all.clone().try_acquire_owned().ok()?);
        Some(held)
    }
}

/// The webhook's settings (`--webhook-*`), when it is served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `--webhook-bind-address`, on every replica.
    pub addr: SocketAddr,
    pub mode: CertMode,
    /// Where the serving certificate Secret lives (namespace, name); the CA
    /// Secret (`ca_secret`) is beside it.
    pub secret: (String, String),
    pub ca_secret: String,
    /// The MutatingWebhookConfiguration whose caBundle the leader keeps (self mode).
    pub configuration: String,
    pub certificates: Certificates,
    /// Namespaces annotation mode leaves alone.
    pub excluded: Vec<String>,
}

/// The self-managed certificates' names and periods, as given: [`policy`]
/// checks them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificates {
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub ca_validity: Duration,
    pub ca_renew_before: Duration,
    pub cert_validity: Duration,
    pub cert_renew_before: Duration,
}

/// The certificate periods and names, checked.
pub fn policy(w: &Certificates) -> anyhow::Result<Policy> {
    let secs = |d: Duration| d.as_secs() as i64;
    let mut sans: Vec<String> = w
        .dns_names
        .iter()
        .filter(|n| !n.is_empty())
        .cloned()
        .collect();
    sans.extend(w.ip_addresses.iter().map(|i| i.to_string()));
    sans.sort();
    sans.dedup();
    if sans.is_empty() {
        anyhow::bail!(
            "the webhook's certificate needs a name: set --webhook-dns-names or --webhook-ip-addresses"
        );
    }
    let p = Policy {
        ca_validity: secs(w.ca_validity),
        ca_renew_before: secs(w.ca_renew_before),
        cert_validity: secs(w.cert_validity),
        cert_renew_before: secs(w.cert_renew_before),
        settle: SETTLE_SECONDS,
        sans,
    };
    p.check().map_err(anyhow::Error::msg)?;
    Ok(p)
}

#[derive(Clone)]
struct Hook {
    metrics: WebhookMetrics,
    fills: Family<PathLabel, Counter>,
    slots: Slots,
    /// Namespaces annotation mode leaves alone.
    excluded: Arc<Vec<String>>,
}

/// `POST /mutate`: a refusal at once (too large, no free slot), else the
/// review read and answered within [`REQUEST_TIMEOUT`].
///
/// Every refusal is an HTTP error, which the apiserver counts as a failed
/// call and, with `failurePolicy: Ignore`, lets the write through at once
/// (`apiserver_admission_webhook_fail_open_count`); the controller's path
/// fills the Secret once stored. Answering "allowed" instead would need the
/// uid, so the body: what shedding avoids. No `Retry-After`: it would make
/// the apiserver retry and hold the user's write.
async fn mutate(State(hook): State<Hook>, req: axum::extract::Request) -> Response {
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if length.is_some_and(|l| l > BODY_LIMIT as u64) {
        return refuse(&hook, "too_large", StatusCode::PAYLOAD_TOO_LARGE);
    }
    let Some(_slots) = hook.slots.take(length) else {
        return refuse(&hook, "shed", StatusCode::SERVICE_UNAVAILABLE);
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, answer(&hook, req.into_body(), length)).await {
        Ok(r) => r,
        Err(_) => refuse(&hook, "timeout", StatusCode::REQUEST_TIMEOUT),
    }
}

fn refuse(hook: &Hook, reason: &'static str, status: StatusCode) -> Response {
    debug!(reason, "webhook: review refused");
    hook.metrics
        .refused
        .get_or_create(&metrics::ReasonLabel { reason })
        .inc();
    // The connection is not reused: its body may be unread.
    (status, [(header::CONNECTION, "close")]).into_response()
}

/// Reads the body (at most [`BODY_LIMIT`]) into one buffer and answers it.
async fn answer(hook: &Hook, body: axum::body::Body, length: Option<u64>) -> Response {
    let started = Instant::now();
    let capacity = length.unwrap_or(0).min(BODY_LIMIT as u64) as usize;
    let mut buf = Vec::with_capacity(capacity);
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let Ok(chunk) = chunk else {
            return refuse(hook, "unreadable_body", StatusCode::BAD_REQUEST);
        };
        if buf.len() + chunk.len() > BODY_LIMIT {
            return refuse(hook, "too_large", StatusCode::PAYLOAD_TOO_LARGE);
        }
        buf.extend_from_slice(&chunk);
    }
    // On the blocking pool: a fill may hash a basic-auth password (bcrypt,
    // tens of milliseconds), which must not hold a runtime thread. At most
    // IN_FLIGHT reviews run at once (the slots).
    let excluded = hook.excluded.clone();
    let reviewed = tokio::task::spawn_blocking(move || {
        let excluded = |ns: &str| excluded.iter().any(|e| e == ns);
        admission::review(&buf, &excluded)
    })
    .await;
    let (answer, outcome, dry_run) = match reviewed {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => return refuse(hook, "shed", StatusCode::SERVICE_UNAVAILABLE),
    };
    let json = serde_json::to_vec(&answer).unwrap_or_default();
    drop(answer);
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
    ([(header::CONTENT_TYPE, "application/json")], json).into_response()
}

/// The admission router: `POST /mutate`. The body is read by [`answer`]
/// under its own limit, so axum's default one is off.
pub fn router(
    metrics: WebhookMetrics,
    fills: Family<PathLabel, Counter>,
    excluded: Vec<String>,
) -> axum::Router {
    axum::Router::new()
        .route("/mutate", post(mutate))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(Hook {
            metrics,
            fills,
            slots: Slots::new(),
            excluded: Arc::new(excluded),
        })
}

/// Starts the webhook: the certificate watch and loader (every replica),
/// the leader's manager (self mode), and the HTTPS server. Returns the
/// certificate store, which readiness waits on.
pub async fn spawn(
    config: Option<Config>,
    client: kube::Client,
    leadership: Leadership,
    metrics: WebhookMetrics,
    fills: Family<PathLabel, Counter>,
    shutdown: crate::runtime::shutdown::Signal,
) -> anyhow::Result<Option<CertStore>> {
    let Some(Config {
        addr,
        mode,
        secret: (namespace, name),
        ca_secret,
        configuration,
        certificates,
        excluded,
    }) = config
    else {
        return Ok(None);
    };
    let policy = (mode == CertMode::SelfManaged)
        .then(|| policy(&certificates))
        .transpose()?;
    let listener = crate::runtime::admin::bind(addr, "the webhook").await?;
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
        let config_name = configuration;
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
            ca_secret_name: ca_secret,
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
        router(metrics, fills, excluded),
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
