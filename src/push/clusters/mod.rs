//! Copies of every version in downstream clusters (`spec.push.clusters`).
//!
//! - [`kubeconfig`]: a connection's credentials, refused when they would run
//!   a command, read a file or skip the certificate check (pure).
//! - [`admit`]: which namespaces may copy where through a connection, and
//!   what a copy may be (pure).
//! - [`capped`]: every downstream reply read through a cap.
//! - [`copy`]: what is written downstream and how our objects are told from
//!   others' (pure).
//! - [`link`]: one downstream cluster: its client, its watches (per target
//!   namespace: the copies, and the ReplicaSets, ControllerRevisions and Pods
//!   that reference them) and a runner of its own.
//! - [`sync`]: one RandomSecret in one cluster: anchor, current copy,
//!   retention by that cluster's references.
//! - [`report`]: `status.push.clusters` and `ClustersSynced`, from one writer.
//!
//! Each connection has its own runner, timeout and backoff, so a cluster
//! that does not answer delays no other and nothing local; `Ready` stays
//! about the upstream version. This module's [`dispatch`] (leader only)
//! keeps the finalizer, routes each RandomSecret to its clusters' runners,
//! and carries out the deletion policy.

pub mod admit;
pub mod capped;
pub mod copy;
pub mod kubeconfig;
pub mod link;
pub mod report;
pub mod sync;
#[cfg(test)]
mod verifier;

use crate::api::RandomSecret;
use crate::api::connections::{ClusterConnection, KubeconfigFormat};
use crate::api::push::{ClusterPushStatus, DeletionPolicy};
use crate::cache::{Caches, Key};
use crate::runtime::events::{EventType, Events};
use crate::runtime::leader::Leadership;
use crate::runtime::outcome::Outcome;
use crate::runtime::runner::{Next, Triggers};
use crate::runtime::shutdown::Signal;
use crate::runtime::status::Answer as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use link::Link;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Held while `spec.push.clusters` is set, for the deletion policy (apart
/// from the Vault push's, so neither waits on the other).
pub const FINALIZER: &str = crate::api::push::CLUSTERS_FINALIZER;
/// Field manager of `status.push.clusters` and `ClustersSynced`.
pub const MANAGER: &str = concat!(crate::api::project!(), "-push-clusters");
pub const CLUSTERS_SYNCED: &str = "ClustersSynced";
/// Default timeout of each request to a downstream cluster.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection (and its kubeconfig Secret) is read again at a sync through
/// it once the last read is this old (nothing watches connections).
pub const REFRESH: Duration = Duration::from_secs(10);
/// The dispatcher has each RandomSecret synced again this often in each of
/// its clusters (the watches there usually say sooner), and a deletion that
/// waits on a cluster looks again this often: as the Vault push does.
pub use crate::push::{CLEANUP_RECHECK, RESYNC};
/// How soon a RandomSecret waiting for its version is looked at again (the
/// watch usually brings it sooner).
pub const AWAIT: Duration = Duration::from_secs(5);
/// How soon a sync waiting for a namespace's first list looks again.
pub const FIRST_LIST: Duration = Duration::from_secs(1);

/// The apiserver error a [`ClusterError`] was made from: its `source()`, for
/// a program (or a test) to inspect. Never printed: a log line, a status and
/// an Event say the `ClusterError`'s own text (fixed words), never its
/// source or its `{:?}`. A downstream server is the kubeconfig's to choose
/// and may echo what it was sent (a copy's values) in a Status message or a
/// body a parse error quotes, so unlike an upstream error it can hold a
/// value.
pub type Source = Arc<kube::Error>;

/// Why one cluster is not in sync; `reason()` is the status reason.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    ConnectionNotFound(String),
    #[error("{0}")]
    NamespaceNotAllowed(String),
    /// The connection lists no allowedNamespaces (it allows none).
    #[error("{0}")]
    AllowedNamespacesUnset(String),
    /// The version is outside the connection's copy policy.
    #[error("{0}")]
    NotAllowed(String),
    /// The target was added after the current version was made.
    #[error("{0}")]
    NotMadeForTarget(String),
    /// The upstream version carries no valid proof of creation.
    #[error("{0}")]
    UnprovenVersion(String),
    /// A downstream reply passed `capped::MAX_REPLY`.
    #[error("{message}")]
    ReplyTooLarge {
        message: String,
        #[source]
        source: Source,
    },
    /// The kubeconfig is missing, unreadable or refused (exec, files).
    #[error("{0}")]
    InvalidConnection(String),
    /// No answer, or not the Kubernetes API's (`source`: the call's error,
    /// when one made it).
    #[error("{message}")]
    Unreachable {
        message: String,
        #[source]
        source: Option<Source>,
    },
    /// The downstream cluster refused the call (401 or 403).
    #[error("{message}")]
    Forbidden {
        message: String,
        #[source]
        source: Source,
    },
    #[error("{message}")]
    NamespaceNotFound {
        message: String,
        #[source]
        source: Source,
    },
    #[error("{0}")]
    SecretNameConflict(String),
    #[error("{0}")]
    ValueMismatch(String),
    /// The downstream watches have not listed yet.
    #[error("{0}")]
    Connecting(String),
    /// The upstream version is not Ready yet.
    #[error("{0}")]
    Waiting(String),
    /// A call failed (upstream, or an answer downstream that says nothing
    /// more): again, with backoff.
    #[error("{message}")]
    Retry {
        message: String,
        #[source]
        source: Option<Source>,
    },
    /// A write lost a race (a resourceVersion moved on): again, quietly.
    #[error("{message}")]
    Conflict {
        message: String,
        #[source]
        source: Source,
    },
    #[error("no longer the leader")]
    LostLease,
}

impl Outcome for ClusterError {
    fn reason(&self) -> &'static str {
        match self {
            ClusterError::ConnectionNotFound(_) => "ConnectionNotFound",
            ClusterError::NamespaceNotAllowed(_) => "NamespaceNotAllowed",
            ClusterError::AllowedNamespacesUnset(_) => "AllowedNamespacesUnset",
            ClusterError::NotAllowed(_) => "NotAllowed",
            ClusterError::NotMadeForTarget(_) => "AwaitingNextVersion",
            ClusterError::UnprovenVersion(_) => "VersionNotProven",
            ClusterError::ReplyTooLarge { .. } => "ReplyTooLarge",
            ClusterError::InvalidConnection(_) => "InvalidConnection",
            ClusterError::Unreachable { .. } => "Unreachable",
            ClusterError::Forbidden { .. } => "Forbidden",
            ClusterError::NamespaceNotFound { .. } => "NamespaceNotFound",
            ClusterError::SecretNameConflict(_) => "SecretNameConflict",
            ClusterError::ValueMismatch(_) => "ValueMismatch",
            ClusterError::Connecting(_) => "Connecting",
            ClusterError::Waiting(_) => "Waiting",
            ClusterError::Retry { .. } => "Retrying",
            ClusterError::Conflict { .. } => "Conflict",
            ClusterError::LostLease => "LostLease",
        }
    }

    /// A conflict or mismatch needs a person (the watch brings the change);
    /// waiting looks again soon; the rest back off.
    fn next(&self) -> Next {
        match self {
            // The dispatcher's resync ([`RESYNC`]) looks again.
            ClusterError::SecretNameConflict(_)
            | ClusterError::ValueMismatch(_)
            | ClusterError::NotMadeForTarget(_)
            | ClusterError::NotAllowed(_) => Next::AwaitChange,
            ClusterError::Waiting(_) => Next::RequeueAfter(AWAIT),
            ClusterError::Connecting(_) => Next::RequeueAfter(FIRST_LIST),
            _ => Next::Retry,
        }
    }

    /// Someone must change the connection, its kubeconfig, the RBAC
    /// downstream or the spec. A deletion that waits on one gives up after
    /// `push::CLEANUP_DEADLINE` (the copies are kept, and said so).
    fn permanent(&self) -> bool {
        matches!(
            self,
            ClusterError::NamespaceNotAllowed(_)
                | ClusterError::AllowedNamespacesUnset(_)
                | ClusterError::InvalidConnection(_)
                | ClusterError::Forbidden { .. }
                | ClusterError::NamespaceNotFound { .. }
                | ClusterError::SecretNameConflict(_)
        )
    }

    /// Waiting for the version or a first list, or a lost race: no news.
    fn quiet(&self) -> bool {
        matches!(
            self,
            ClusterError::Waiting(_) | ClusterError::Connecting(_) | ClusterError::Conflict { .. }
        )
    }
}

impl ClusterError {
    /// A downstream call's error, for cluster `cluster`, doing `what`.
    ///
    /// The text is fixed: the downstream server's words (a Status message,
    /// a body serde quotes, a certificate's names) never reach a status or
    /// an Event, where a tenant reads them. `e` is kept as the source.
    pub fn downstream(cluster: &str, what: &str, e: kube::Error) -> Self {
        let at = format!("cluster {cluster}: {what}");
        if capped::too_large(&e) {
            return ClusterError::ReplyTooLarge {
                message: format!(
                    "{at}: the answer is larger than {} MiB; it was not read (is the kubeconfig's server an apiserver?)",
                    capped::MAX_REPLY >> 20
                ),
                source: Arc::new(e),
            };
        }
        let source = Arc::new(e);
        match &*source {
            kube::Error::Api(s) if s.refused() => ClusterError::Forbidden {
                message: format!(
                    "{at}: refused ({}); the connection's credentials need create, get, list, watch, patch and delete on secrets, and list and watch on replicasets, controllerrevisions and pods, in the target namespace",
                    s.code
                ),
                source,
            },
            kube::Error::Api(s) if s.not_found() && s.about_kind("namespaces") => {
                ClusterError::NamespaceNotFound {
                    message: format!(
                        "{at}: the namespace does not exist there; create the namespace downstream or change spec.push.clusters[].namespace"
                    ),
                    source,
                }
            }
            kube::Error::Api(s) if s.conflict_or_exists() => ClusterError::Conflict {
                message: format!("{at}: a conflict (409)"),
                source,
            },
            kube::Error::Api(s) => ClusterError::Retry {
                message: format!("{at}: the apiserver answered {}", s.code),
                source: Some(source),
            },
            kube::Error::SerdeError(_)
            | kube::Error::FromUtf8(_)
            | kube::Error::LinesCodecMaxLineLengthExceeded => ClusterError::Unreachable {
                message: format!(
                    "{at}: an answer that is not the Kubernetes API's (is the kubeconfig's server an apiserver?)"
                ),
                source: Some(source),
            },
            e => ClusterError::Unreachable {
                message: format!("{at}: {}", transport(e)),
                source: Some(source),
            },
        }
    }

    /// A call that failed and is tried again, in these words (`source`:
    /// an upstream call's error, when one made it).
    pub fn retry(message: String, source: Option<kube::Error>) -> Self {
        ClusterError::Retry {
            message,
            source: source.map(Arc::new),
        }
    }

    /// No answer (or none of the Kubernetes API's), in these words.
    pub fn unreachable(message: String) -> Self {
        ClusterError::Unreachable {
            message,
            source: None,
        }
    }
}

/// What went wrong on the way, in fixed words: the OS's kind of error, or
/// that TLS failed (a certificate's text is the server's to choose).
fn transport(e: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.is::<rustls::Error>() {
            return "the TLS handshake failed (is certificate-authority-data the server's CA, and the server's name in its certificate?)";
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if let Some(inner) = io.get_ref()
                && inner.is::<rustls::Error>()
            {
                return transport(inner);
            }
            return match io.kind() {
                K::ConnectionRefused => "the connection was refused",
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                    "the connection was cut"
                }
                K::TimedOut => "no answer in time",
                K::NotFound | K::AddrNotAvailable => "the server's address was not found",
                _ => "the connection failed",
            };
        }
        next = e.source();
    }
    "no answer (the connection failed)"
}

/// The cluster push's metrics (labels are outcomes, never names).
#[derive(Clone)]
pub struct Metrics {
    pub syncs: Family<crate::runtime::metrics::ResultLabel, Counter>,
    pub errors: Family<crate::runtime::metrics::ReasonLabel, Counter>,
    pub copies_created: Counter,
    pub duration: Histogram,
    pub out_of_sync: Gauge,
}

impl Metrics {
    pub fn register(registry: &mut prometheus_client::registry::Registry) -> Self {
        let m = Metrics {
            syncs: Family::default(),
            errors: Family::default(),
            copies_created: Counter::default(),
            duration: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            out_of_sync: Gauge::default(),
        };
        let r = registry.sub_registry_with_prefix(crate::api::NAME);
        r.register(
            "cluster_syncs",
            "Syncs of a RandomSecret with a downstream cluster, by result (synced, error)",
            m.syncs.clone(),
        );
        r.register(
            "cluster_sync_errors",
            "Downstream cluster sync failures by reason (Unreachable, Forbidden, SecretNameConflict, ValueMismatch, ConnectionNotFound, ...)",
            m.errors.clone(),
        );
        r.register(
            "cluster_copies_created",
            "Version copies created in downstream clusters",
            m.copies_created.clone(),
        );
        r.register(
            "cluster_sync_duration_seconds",
            "Time of one sync of a RandomSecret with one downstream cluster",
            m.duration.clone(),
        );
        r.register(
            "cluster_targets_out_of_sync",
            "Downstream cluster targets (RandomSecret and connection) not in sync now",
            m.out_of_sync.clone(),
        );
        m
    }
}

/// What the cluster push needs.
pub struct Context {
    pub client: kube::Client,
    pub leader: Leadership,
    pub events: Events,
    pub metrics: Metrics,
    /// The proof key, and the upstream versions' metadata.
    pub caches: Arc<Caches>,
    pub links: Links,
    /// The last result per RandomSecret and connection, for [`report`].
    pub results: Mutex<HashMap<Key, BTreeMap<String, ClusterPushStatus>>>,
    /// Per RandomSecret being deleted: the connections whose cleanup is done.
    pub cleaned: Mutex<HashMap<Key, HashSet<String>>>,
    /// Keys whose status [`report`] writes.
    pub reports: Triggers,
    /// Keys for [`dispatch`] (a link's cleanup is done: the finalizer may go).
    pub dispatches: Triggers,
    /// Which RandomSecrets have cluster work (spec or finalizer), from the watch.
    pub index: Arc<crate::push::index::Index>,
    pub shutdown: Signal,
    /// The controller's flags for every connection (policy, protected
    /// namespaces, insecure TLS).
    pub settings: admit::Settings,
}

impl Context {
    /// The cluster push's context: `index` says which RandomSecrets have
    /// cluster work, `dispatches` and `reports` are the keys of its two
    /// runners; links and results start empty.
    pub fn new(
        shared: &crate::runtime::Shared,
        metrics: Metrics,
        settings: admit::Settings,
        index: Arc<crate::push::index::Index>,
        dispatches: Triggers,
        reports: Triggers,
    ) -> Self {
        Context {
            client: shared.client.clone(),
            leader: shared.leader.clone(),
            events: shared.events.clone(),
            metrics,
            caches: shared.caches.clone(),
            links: Default::default(),
            results: Default::default(),
            cleaned: Default::default(),
            reports,
            dispatches,
            index,
            shutdown: shared.shutdown.clone(),
            settings,
        }
    }

    /// Records one cluster's result for `key` (counted, by result and
    /// reason) and has the status written.
    pub fn record(&self, key: &Key, status: ClusterPushStatus) {
        use crate::runtime::metrics::{ReasonLabel, ResultLabel};
        let result = if status.synced { "synced" } else { "error" };
        self.metrics
            .syncs
            .get_or_create(&ResultLabel { result })
            .inc();
        if !status.synced {
            self.metrics
                .errors
                .get_or_create(&ReasonLabel {
                    reason: status.reason.clone(),
                })
                .inc();
        }
        let mut results = self.results.lock().expect("results lock");
        let entry = results.entry(key.clone()).or_default();
        let before = entry.insert(status.connection.clone(), status.clone());
        let changed = before.as_ref() != Some(&status);
        let (was_out, is_out) = (before.is_some_and(|b| !b.synced), !status.synced);
        if was_out != is_out {
            self.metrics.out_of_sync.inc_by(if is_out { 1 } else { -1 });
        }
        drop(results);
        if changed {
            let _ = self.reports.send(key.clone());
        }
    }

    /// Keeps only `connections`' results for `key`; has the status written.
    fn keep_only(&self, key: &Key, connections: &[&str]) {
        let mut results = self.results.lock().expect("results lock");
        let mut changed = false;
        if let Some(m) = results.get_mut(key) {
            m.retain(|c, s| {
                let keep = connections.contains(&c.as_str());
                if !keep {
                    changed = true;
                    if !s.synced {
                        self.metrics.out_of_sync.dec();
                    }
                }
                keep
            });
            if m.is_empty() {
                results.remove(key);
            }
        }
        drop(results);
        if changed || connections.is_empty() {
            let _ = self.reports.send(key.clone());
        }
    }

    /// The cluster push's failure reporter (failures are counted by
    /// [`Self::record`], with every result).
    pub fn reporter(&self) -> crate::runtime::outcome::Reporter<'_> {
        crate::runtime::outcome::Reporter::new(&self.events, None, "cluster push")
    }

    fn standby(&self) -> Option<Next> {
        self.leader.standby()
    }

    /// Checked before every write: a replica whose lease is uncertain writes nothing.
    pub fn may_write(&self) -> Result<(), ClusterError> {
        if self.leader.leading() {
            Ok(())
        } else {
            Err(ClusterError::LostLease)
        }
    }

    fn is_cleaned(&self, key: &Key, connection: &str) -> bool {
        self.cleaned
            .lock()
            .expect("cleaned lock")
            .get(key)
            .is_some_and(|c| c.contains(connection))
    }

    /// The cleanup of `connection` for `key` is done (or not needed).
    pub fn mark_cleaned(&self, key: &Key, connection: &str) {
        self.cleaned
            .lock()
            .expect("cleaned lock")
            .entry(key.clone())
            .or_default()
            .insert(connection.to_string());
    }
}

/// The connections, each linked on first use and linked again when it or
/// its kubeconfig Secret changes.
#[derive(Default)]
pub struct Links {
    map: Mutex<HashMap<String, Linked>>,
    /// One read (and link) at a time: two dispatches never link one
    /// connection twice.
    reading: tokio::sync::Mutex<()>,
    /// The Ready condition last written per connection.
    written: Mutex<HashMap<String, (bool, &'static str)>>,
}

struct Linked {
    link: Arc<Link>,
    /// The resourceVersions of the connection and of its kubeconfig Secret.
    version: (String, String),
    grant: admit::Grant,
    read_at: Instant,
}

impl Links {
    /// The link of connection `name`, for a RandomSecret in `namespace`
    /// copying into `target`, read again when older than [`REFRESH`].
    pub async fn get(
        &self,
        name: &str,
        namespace: &str,
        target: &str,
        ctx: &Arc<Context>,
    ) -> Result<Arc<Link>, ClusterError> {
        let s = &ctx.settings;
        if let Some(link) = self.fresh(s, name, namespace, target) {
            return link;
        }
        let _one = self.reading.lock().await;
        // Another dispatch may have read it while this one waited.
        if let Some(link) = self.fresh(s, name, namespace, target) {
            return link;
        }
        self.read(name, ctx).await?;
        self.fresh(s, name, namespace, target)
            .unwrap_or_else(|| Err(ClusterError::retry(format!("linking {name}"), None)))
    }

    fn fresh(
        &self,
        settings: &admit::Settings,
        name: &str,
        namespace: &str,
        target: &str,
    ) -> Option<Result<Arc<Link>, ClusterError>> {
        let map = self.map.lock().expect("links lock");
        let l = map.get(name).filter(|l| l.read_at.elapsed() < REFRESH)?;
        Some(
            l.grant
                .permits(settings, name, namespace, target)
                .map(|_| l.link.clone()),
        )
    }

    /// The policy copies through connection `name` follow (as last read).
    pub fn policy(
        &self,
        settings: &admit::Settings,
        name: &str,
    ) -> crate::reconciler::policy::Policy {
        self.map
            .lock()
            .expect("links lock")
            .get(name)
            .map_or_else(|| settings.policy.clone(), |l| l.grant.policy(settings))
    }

    /// Reads the connection and its Secret; links anew when either changed
    /// (the old link's RandomSecrets go to the new one).
    async fn read(&self, name: &str, ctx: &Arc<Context>) -> Result<(), ClusterError> {
        let upstream = |what: String| {
            move |e: kube::Error| {
                let message = format!("reading {what}: {}", crate::push::vault::brief(&e));
                ClusterError::retry(message, Some(e))
            }
        };
        let Some(conn) = Api::<ClusterConnection>::all(ctx.client.clone())
            .get_opt(name)
            .await
            .map_err(upstream(format!("ClusterConnection {name}")))?
        else {
            self.unlink(name);
            // A connection made again under this name gets its own status.
            self.written.lock().expect("written lock").remove(name);
            return Err(ClusterError::ConnectionNotFound(format!(
                "ClusterConnection {name} does not exist"
            )));
        };
        let r = &conn.spec.kubeconfig_secret_ref;
        let refused = |message: String| {
            let e = ClusterError::InvalidConnection(format!("ClusterConnection {name}: {message}"));
            (e, "InvalidKubeconfig")
        };
        let grant = admit::Grant::of(&conn.spec);
        let built = async {
            let secret = Api::<Secret>::namespaced(ctx.client.clone(), &r.namespace)
                .get_opt(&r.name)
                .await
                .map_err(|e| {
                    (
                        upstream(format!("Secret {}/{}", r.namespace, r.name))(e),
                        "ApiError",
                    )
                })?
                .ok_or_else(|| {
                    refused(format!(
                        "its kubeconfig Secret {}/{} does not exist",
                        r.namespace, r.name
                    ))
                })?;
            let version = (
                conn.metadata.resource_version.clone().unwrap_or_default(),
                secret.metadata.resource_version.clone().unwrap_or_default(),
            );
            if let Some(l) = self.map.lock().expect("links lock").get_mut(name)
                && l.version == version
            {
                l.read_at = Instant::now();
                return Ok(());
            }
            let data: BTreeMap<String, Vec<u8>> = secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            let format = r.format.unwrap_or(KubeconfigFormat::Kubeconfig);
            let key = r.key.as_deref().unwrap_or(kubeconfig::DEFAULT_KEY);
            let insecure_ok = ctx.settings.allow_insecure_tls;
            let kc = kubeconfig::parse(format, key, &data, insecure_ok).map_err(|m| {
                (
                    ClusterError::InvalidConnection(format!(
                        "ClusterConnection {name}: kubeconfig Secret {}/{}: {m}",
                        r.namespace, r.name
                    )),
                    "KubeconfigRefused",
                )
            })?;
            let timeout = conn
                .spec
                .timeout_seconds
                .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.max(1) as u64));
            let client = client_for(kc, timeout).await.map_err(refused)?;
            let link = start_link(name, client, timeout, ctx);
            info!(connection = name, "linked a downstream cluster");
            let old = self.map.lock().expect("links lock").insert(
                name.to_string(),
                Linked {
                    link: link.clone(),
                    version,
                    grant: grant.clone(),
                    read_at: Instant::now(),
                },
            );
            if let Some(old) = old {
                old.link.stop();
                for key in old.link.served() {
                    link.trigger(&key);
                }
            }
            Ok(())
        }
        .await;
        match &built {
            // An upstream read failed: the link stays as it was.
            Err((_, "ApiError")) => {}
            Err((e, reason)) => {
                // The connection can no longer be used as it was: its old
                // link (and the watches it runs downstream) stops.
                self.unlink(name);
                self.connection_ready(ctx, name, false, reason, &e.to_string())
                    .await;
            }
            Ok(()) => {
                if let Some(l) = self.map.lock().expect("links lock").get_mut(name) {
                    l.grant = grant;
                }
            }
        }
        built.map_err(|(e, _)| e)
    }

    /// Stops and forgets the link of connection `name`, if any.
    fn unlink(&self, name: &str) {
        if let Some(old) = self.map.lock().expect("links lock").remove(name) {
            old.link.stop();
            info!(connection = name, "unlinked a downstream cluster");
        }
    }

    /// Writes the connection's Ready condition when it changes.
    pub async fn connection_ready(
        &self,
        ctx: &Context,
        name: &str,
        ready: bool,
        reason: &'static str,
        message: &str,
    ) {
        if self.written.lock().expect("written lock").get(name) == Some(&(ready, reason)) {
            return;
        }
        let status = if ready { "True" } else { "False" };
        let patch = json!({
            "apiVersion": crate::api::API_VERSION, "kind": "ClusterConnection",
            "status": {"conditions": [{
                "type": "Ready", "status": status, "reason": reason, "message": message,
                "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
            }]}
        });
        let api = Api::<ClusterConnection>::all(ctx.client.clone());
        match api
            .patch_status(
                name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(patch),
            )
            .await
        {
            Ok(_) => {
                self.written
                    .lock()
                    .expect("written lock")
                    .insert(name.to_string(), (ready, reason));
            }
            Err(e) => {
                warn!(connection = name, error = %e, "writing the ClusterConnection's status failed")
            }
        }
    }

    /// Reports how a call through connection `name` went: Ready is about
    /// reaching the cluster with usable credentials (a namespace's missing
    /// RBAC is that RandomSecret's reason, not the connection's).
    pub async fn observed(&self, ctx: &Context, name: &str, result: Result<(), &ClusterError>) {
        match result {
            Ok(()) => {
                self.connection_ready(
                    ctx,
                    name,
                    true,
                    "Connected",
                    "reachable, credentials accepted",
                )
                .await
            }
            Err(e @ (ClusterError::Unreachable { .. } | ClusterError::InvalidConnection(_))) => {
                self.connection_ready(ctx, name, false, e.reason(), &e.to_string())
                    .await
            }
            Err(_) => {}
        }
    }
}

/// Links cluster `name`: its runner syncs each RandomSecret sent there. The
/// composition of the cluster push is here, so that `link` (the cluster)
/// and `sync` (what is done there) do not import each other: sync uses a
/// link, a link runs what it is given.
pub(crate) fn start_link(
    name: &str,
    client: kube::Client,
    timeout: Duration,
    ctx: &Arc<Context>,
) -> Arc<Link> {
    let ctx = ctx.clone();
    Link::start(
        name,
        client,
        timeout,
        ctx.shutdown.clone(),
        move |key, link| sync::boxed(key, link, ctx.clone()),
    )
}

/// The client for a checked kubeconfig (`kubeconfig::check`): every reply
/// it reads goes through [`capped`]. Errors are the kubeconfig's to fix,
/// cut short (they name fields, never a credential).
pub async fn client_for(
    kc: kube::config::Kubeconfig,
    timeout: Duration,
) -> Result<kube::Client, String> {
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| {
            format!(
                "the kubeconfig cannot be used: {}",
                crate::push::vault::brief(e)
            )
        })?;
    config.connect_timeout = Some(timeout);
    // No proxy of the environment's either: the server is the kubeconfig's.
    config.proxy_url = None;
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| {
        format!(
            "no client for the kubeconfig: {}",
            crate::push::vault::brief(e)
        )
    })?;
    Ok(builder.with_layer(&capped::CapLayer).build())
}

/// The clusters a RandomSecret pushes to.
fn targets(rs: &RandomSecret) -> &[crate::api::push::ClusterPush] {
    rs.spec
        .push
        .as_ref()
        .and_then(|p| p.clusters.as_deref())
        .unwrap_or_default()
}

/// One RandomSecret's cluster work: the finalizer in line with the spec,
/// each target's runner told (also on deletion, for its cleanup), and the
/// finalizer removed once every target's cleanup is done.
pub async fn dispatch(key: Key, ctx: Arc<Context>) -> Next {
    if let Some(next) = ctx.standby() {
        return next;
    }
    let wanted = ctx.index.wants_clusters(&key);
    if !wanted && !ctx.results.lock().expect("results lock").contains_key(&key) {
        return Next::AwaitChange;
    }
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), key.ns());
    let rs = match api.get_opt(&key.name).await {
        Ok(Some(rs)) if wanted => rs,
        Ok(_) => {
            // Gone, or no cluster work any more: forget what was recorded.
            ctx.keep_only(&key, &[]);
            ctx.cleaned.lock().expect("cleaned lock").remove(&key);
            return Next::AwaitChange;
        }
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "cluster push: reading the RandomSecret failed; retrying");
            return Next::Retry;
        }
    };
    let has_finalizer = rs.finalizers().iter().any(|f| f == FINALIZER);
    let targets = targets(&rs);
    let result = if rs.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Next::AwaitChange;
        }
        cleanup(&key, &rs, &api, &ctx).await
    } else if targets.is_empty() {
        // A target removed from the spec is forgotten, never deleted.
        ctx.keep_only(&key, &[]);
        if has_finalizer {
            crate::push::set_finalizer(&api, &rs, FINALIZER, false)
                .await
                .map(|_| Next::AwaitChange)
        } else {
            Ok(Next::AwaitChange)
        }
    } else if wants_finalizer(targets) != has_finalizer {
        // Only a deletion that removes copies needs to wait for the
        // controller: with Retain, an uninstalled controller never holds a
        // RandomSecret (or its namespace) in deletion. The patch is a change
        // of its own: the watch brings it back here.
        crate::push::set_finalizer(&api, &rs, FINALIZER, !has_finalizer)
            .await
            .map(|_| Next::AwaitChange)
    } else {
        let names: Vec<&str> = targets
            .iter()
            .map(|t| t.connection_ref.name.as_str())
            .collect();
        ctx.keep_only(&key, &names);
        for t in targets {
            let name = &t.connection_ref.name;
            let target = report::target_namespace(t, &key);
            match ctx.links.get(name, key.ns(), &target, &ctx).await {
                Ok(link) => link.trigger(&key),
                Err(e) => ctx.record(&key, report::failed(name, t, &key, &e)),
            }
        }
        Ok(Next::RequeueAfter(RESYNC))
    };
    result.unwrap_or_else(|e| {
        match &e {
            // Another writer moved the resourceVersion on: read again.
            kube::Error::Api(s) if s.conflict() => {
                tracing::debug!(randomsecret = %key, "cluster push: the finalizer patch lost a race; again")
            }
            e => {
                warn!(randomsecret = %key, error = %e, "cluster push: writing the finalizer failed; retrying")
            }
        }
        Next::Retry
    })
}

/// Whether a deletion must wait for the controller: some target's copies go.
fn wants_finalizer(targets: &[crate::api::push::ClusterPush]) -> bool {
    targets
        .iter()
        .any(|t| t.deletion_policy.unwrap_or_default() == DeletionPolicy::Delete)
}

/// A deletion gives up on target `name` and keeps its copies (never lost),
/// with a Warning Event saying why and what to remove by hand.
pub(crate) fn copies_kept(
    ctx: &Context,
    key: &Key,
    rs: &RandomSecret,
    name: &str,
    target: &str,
    why: String,
) {
    let base = rs.spec.secret_name.as_deref().unwrap_or(&key.name);
    let note = format!(
        "kept the copies in cluster {name}: {why}; delete the anchor Secret {} in namespace {target} there by hand if they are no longer needed",
        copy::anchor_name(base)
    );
    warn!(randomsecret = %key, connection = %name, "cluster push cleanup: {note}");
    ctx.events.publish(
        crate::push::reference(rs),
        EventType::Warning,
        "ClusterCopiesKept",
        "DeleteClusterCopies",
        note,
    );
    ctx.mark_cleaned(key, name);
}

/// Whether a deletion waiting on `e` has waited long enough to give up.
pub(crate) fn gives_up(rs: &RandomSecret, e: &ClusterError) -> bool {
    e.permanent() && crate::push::waited(rs) >= crate::push::CLEANUP_DEADLINE
}

/// Whether the deletion of `rs` removes the copies in target `t`: with
/// `Delete`, unless it is an orphan deletion or the skip annotation is set.
pub(crate) async fn deletes_copies(
    client: &kube::Client,
    rs: &RandomSecret,
    t: &crate::api::push::ClusterPush,
) -> Result<bool, kube::Error> {
    if t.deletion_policy.unwrap_or_default() != DeletionPolicy::Delete
        || rs
            .annotations()
            .get(crate::push::SKIP_CLEANUP)
            .is_some_and(|v| v == "true")
        || rs.finalizers().iter().any(|f| f == "orphan")
    {
        return Ok(false);
    }
    Ok(!crate::push::orphaned(client, rs).await?)
}

/// The RandomSecret is being deleted: each target whose copies go
/// (`deletes_copies`) is cleaned up by its own cluster's runner, one at a
/// time with that cluster's syncs ([`sync`]), so a cluster that does not
/// answer holds only its own deletions; the finalizer goes once every
/// target is done. A target whose connection is gone keeps its copies, and
/// an Event says so.
async fn cleanup(
    key: &Key,
    rs: &RandomSecret,
    api: &Api<RandomSecret>,
    ctx: &Arc<Context>,
) -> Result<Next, kube::Error> {
    let mut waiting = false;
    for t in targets(rs) {
        let name = &t.connection_ref.name;
        if ctx.is_cleaned(key, name) {
            continue;
        }
        if !deletes_copies(&ctx.client, rs, t).await? {
            info!(randomsecret = %key, connection = %name, "cluster push: kept the copies downstream on deletion");
            ctx.mark_cleaned(key, name);
            continue;
        }
        let target = report::target_namespace(t, key);
        match ctx.links.get(name, key.ns(), &target, ctx).await {
            Ok(link) => {
                link.trigger(key);
                waiting = true;
            }
            Err(
                e @ (ClusterError::ConnectionNotFound(_)
                | ClusterError::InvalidConnection(_)
                | ClusterError::AllowedNamespacesUnset(_)
                | ClusterError::NamespaceNotAllowed(_)),
            ) => {
                // No one can reach that cluster through this connection now:
                // the copies are kept (never lost), and said so.
                copies_kept(ctx, key, rs, name, &target, e.to_string());
            }
            Err(e) => {
                let mut status = report::failed(name, t, key, &e);
                status.message = Some(waits_message(name, &e));
                ctx.record(key, status);
                waiting = true;
            }
        }
    }
    if waiting {
        // The links say when they are done (`dispatches`); this is the
        // fallback, less often the longer the deletion waits.
        return Ok(Next::RequeueAfter(crate::push::cleanup_recheck(
            crate::push::waited(rs),
        )));
    }
    if let Some(next) = ctx.standby() {
        return Ok(next);
    }
    crate::push::set_finalizer(api, rs, FINALIZER, false).await?;
    ctx.cleaned.lock().expect("cleaned lock").remove(key);
    ctx.keep_only(key, &[]);
    Ok(Next::AwaitChange)
}

/// What a deletion waiting on cluster `name` says.
pub(crate) fn waits_message(name: &str, e: &ClusterError) -> String {
    format!(
        "deletion waits to delete the anchor in cluster {name}: {e}; to delete without it, annotate {}=true",
        crate::push::SKIP_CLEANUP
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_their_reason_and_what_comes_next() {
        let forbidden = ClusterError::downstream(
            "east",
            "creating Secret db-x",
            kube::Error::Api(Box::new(
                kube::core::Status::failure("secrets is forbidden", "Forbidden").with_code(403),
            )),
        );
        assert_eq!(forbidden.reason(), "Forbidden");
        assert!(
            forbidden
                .to_string()
                .contains("list and watch on replicasets")
        );
        assert_eq!(forbidden.next(), Next::Retry);
        let missing =
            ClusterError::downstream("east", "creating Secret db-x", recorded(NO_NAMESPACE));
        assert_eq!(missing.reason(), "NamespaceNotFound");
        assert_eq!(
            ClusterError::ValueMismatch(String::new()).next(),
            Next::AwaitChange
        );
        assert_eq!(
            ClusterError::Waiting(String::new()).next(),
            Next::RequeueAfter(AWAIT)
        );
    }

    /// As kube-apiserver answers a create in a namespace that does not exist.
    const NO_NAMESPACE: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"apps\" not found","reason":"NotFound","details":{"name":"apps","kind":"namespaces"},"code":404}"#;
    /// As it answers a read of a missing Secret whose name says "namespaces".
    const NO_SECRET: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets \"namespaces-db\" not found","reason":"NotFound","details":{"name":"namespaces-db","kind":"secrets"},"code":404}"#;

    fn recorded(json: &str) -> kube::Error {
        kube::Error::Api(Box::new(serde_json::from_str(json).unwrap()))
    }

    /// The downstream's error is the source, and none of its words is in
    /// the text (a hostile server's message could echo what it was sent).
    #[test]
    fn a_downstream_error_is_the_source_and_its_words_stay_out_of_the_text() {
        use std::error::Error as _;
        let echo = kube::Error::Api(Box::new(
            kube::core::Status::failure("echo: c2VjcmV0", "BadRequest").with_code(400),
        ));
        let e = ClusterError::downstream("east", "creating Secret db-x", echo);
        assert_eq!(
            e.to_string(),
            "cluster east: creating Secret db-x: the apiserver answered 400"
        );
        let source = e.source().and_then(|s| s.downcast_ref::<Source>());
        assert!(
            matches!(source.map(|s| &**s), Some(kube::Error::Api(s)) if s.message == "echo: c2VjcmV0")
        );
        assert!(
            ClusterError::unreachable("no answer".into())
                .source()
                .is_none()
        );
    }

    /// The attack: a missing Secret (or any object) whose name or message
    /// says "namespaces" was taken for a missing namespace (matched by the
    /// message's text), a state that needs a person and lets a deletion give
    /// up. The Status's details say what is missing.
    #[test]
    fn a_missing_namespace_is_read_from_the_details_not_the_message() {
        let e =
            ClusterError::downstream("east", "reading Secret namespaces-db", recorded(NO_SECRET));
        assert_eq!(e.reason(), "Retrying", "{e}");
        assert!(!e.permanent());
        // Nor does a foreign text decide: a 404 without details is not a namespace.
        let bare = kube::Error::Api(Box::new(
            kube::core::Status::failure("namespaces \"apps\" not found", "NotFound").with_code(404),
        ));
        assert_eq!(
            ClusterError::downstream("east", "creating", bare).reason(),
            "Retrying"
        );
        let e = ClusterError::downstream("east", "creating Secret db-x", recorded(NO_NAMESPACE));
        assert_eq!((e.reason(), e.permanent()), ("NamespaceNotFound", true));
    }

    #[test]
    fn each_cluster_error_knows_its_reason_next_and_whether_it_is_news() {
        use ClusterError as E;
        let s = String::new;
        let src = || Arc::new(recorded(NO_SECRET));
        let table: Vec<(ClusterError, &str, Next, bool, bool)> = vec![
            (
                E::ConnectionNotFound(s()),
                "ConnectionNotFound",
                Next::Retry,
                false,
                false,
            ),
            (
                E::NamespaceNotAllowed(s()),
                "NamespaceNotAllowed",
                Next::Retry,
                true,
                false,
            ),
            (
                E::AllowedNamespacesUnset(s()),
                "AllowedNamespacesUnset",
                Next::Retry,
                true,
                false,
            ),
            (
                E::NotAllowed(s()),
                "NotAllowed",
                Next::AwaitChange,
                false,
                false,
            ),
            (
                E::NotMadeForTarget(s()),
                "AwaitingNextVersion",
                Next::AwaitChange,
                false,
                false,
            ),
            (
                E::UnprovenVersion(s()),
                "VersionNotProven",
                Next::Retry,
                false,
                false,
            ),
            (
                E::ReplyTooLarge {
                    message: s(),
                    source: src(),
                },
                "ReplyTooLarge",
                Next::Retry,
                false,
                false,
            ),
            (
                E::InvalidConnection(s()),
                "InvalidConnection",
                Next::Retry,
                true,
                false,
            ),
            (
                E::unreachable(s()),
                "Unreachable",
                Next::Retry,
                false,
                false,
            ),
            (
                E::Forbidden {
                    message: s(),
                    source: src(),
                },
                "Forbidden",
                Next::Retry,
                true,
                false,
            ),
            (
                E::NamespaceNotFound {
                    message: s(),
                    source: src(),
                },
                "NamespaceNotFound",
                Next::Retry,
                true,
                false,
            ),
            (
                E::SecretNameConflict(s()),
                "SecretNameConflict",
                Next::AwaitChange,
                true,
                false,
            ),
            (
                E::ValueMismatch(s()),
                "ValueMismatch",
                Next::AwaitChange,
                false,
                false,
            ),
            (
                E::Connecting(s()),
                "Connecting",
                Next::RequeueAfter(FIRST_LIST),
                false,
                true,
            ),
            (
                E::Waiting(s()),
                "Waiting",
                Next::RequeueAfter(AWAIT),
                false,
                true,
            ),
            (E::retry(s(), None), "Retrying", Next::Retry, false, false),
            (
                E::Conflict {
                    message: s(),
                    source: src(),
                },
                "Conflict",
                Next::Retry,
                false,
                true,
            ),
            (E::LostLease, "LostLease", Next::Retry, false, false),
        ];
        for (e, reason, next, permanent, quiet) in table {
            assert_eq!(
                (e.reason(), e.next(), e.permanent(), e.quiet()),
                (reason, next, permanent, quiet),
                "{e:?}"
            );
        }
    }
}
