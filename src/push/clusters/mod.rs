//! Copies of every version in downstream clusters (`spec.push.clusters`).
//!
//! - [`kubeconfig`]: a connection's credentials, refused when they would run
//!   a command or read a file (pure).
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

pub mod copy;
pub mod kubeconfig;
pub mod link;
pub mod report;
pub mod sync;

use crate::api::RandomSecret;
use crate::cache::{Caches, Key};
use crate::push::api::{ClusterConnection, ClusterPushStatus, DeletionPolicy, KubeconfigFormat};
use crate::runtime::events::{EventType, Events};
use crate::runtime::leader::Leadership;
use crate::runtime::runner::{Next, Triggers};
use crate::runtime::shutdown::Signal;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use link::Link;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Held while `spec.push.clusters` is set, for the deletion policy (apart
/// from the Vault push's, so neither waits on the other).
pub const FINALIZER: &str = "randomsecret.io/push-clusters";
/// Field manager of `status.push.clusters` and `ClustersSynced`.
pub const MANAGER: &str = "randomsecret-push-clusters";
pub const CLUSTERS_SYNCED: &str = "ClustersSynced";
/// Default timeout of each request to a downstream cluster.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection (and its kubeconfig Secret) is read again after this long:
/// an edit takes effect within it.
pub const REFRESH: Duration = Duration::from_secs(10);
/// A synced RandomSecret is looked at again this often in each cluster (a
/// copy deleted there by hand is copied again; the watch usually says sooner).
pub const RESYNC: Duration = Duration::from_secs(600);
/// How often a deletion that waits on a cluster looks again.
pub const CLEANUP_RECHECK: Duration = Duration::from_secs(5);
/// How soon a RandomSecret waiting for its version is looked at again (the
/// watch usually brings it sooner).
pub const AWAIT: Duration = Duration::from_secs(5);
/// How soon a sync waiting for a namespace's first list looks again.
pub const FIRST_LIST: Duration = Duration::from_secs(1);

/// Why one cluster is not in sync; `reason()` is the status reason.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    ConnectionNotFound(String),
    #[error("{0}")]
    NamespaceNotAllowed(String),
    /// The kubeconfig is missing, unreadable or refused (exec, files).
    #[error("{0}")]
    InvalidConnection(String),
    #[error("{0}")]
    Unreachable(String),
    /// The downstream cluster refused the call (401 or 403).
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NamespaceNotFound(String),
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
    /// An upstream call failed.
    #[error("{0}")]
    Retry(String),
    /// A write lost a race (a resourceVersion moved on): again, quietly.
    #[error("{0}")]
    Conflict(String),
    #[error("no longer the leader")]
    LostLease,
}

impl ClusterError {
    pub fn reason(&self) -> &'static str {
        match self {
            ClusterError::ConnectionNotFound(_) => "ConnectionNotFound",
            ClusterError::NamespaceNotAllowed(_) => "NamespaceNotAllowed",
            ClusterError::InvalidConnection(_) => "InvalidConnection",
            ClusterError::Unreachable(_) => "Unreachable",
            ClusterError::Forbidden(_) => "Forbidden",
            ClusterError::NamespaceNotFound(_) => "NamespaceNotFound",
            ClusterError::SecretNameConflict(_) => "SecretNameConflict",
            ClusterError::ValueMismatch(_) => "ValueMismatch",
            ClusterError::Connecting(_) => "Connecting",
            ClusterError::Waiting(_) => "Waiting",
            ClusterError::Retry(_) => "Retrying",
            ClusterError::Conflict(_) => "Conflict",
            ClusterError::LostLease => "LostLease",
        }
    }

    /// What to do next: a conflict or mismatch needs a person (the watch
    /// brings the change); waiting looks again soon; the rest back off.
    pub fn next(&self) -> Next {
        match self {
            ClusterError::SecretNameConflict(_) | ClusterError::ValueMismatch(_) => {
                Next::RequeueAfter(RESYNC)
            }
            ClusterError::Waiting(_) => Next::RequeueAfter(AWAIT),
            ClusterError::Connecting(_) => Next::RequeueAfter(FIRST_LIST),
            _ => Next::Retry,
        }
    }

    /// Whether the connection itself is at fault (for its Ready condition).
    fn about_the_connection(&self) -> bool {
        matches!(
            self,
            ClusterError::InvalidConnection(_)
                | ClusterError::Unreachable(_)
                | ClusterError::Forbidden(_)
        )
    }

    /// A downstream call's error, for cluster `cluster`, doing `what`.
    pub fn downstream(cluster: &str, what: &str, e: kube::Error) -> Self {
        let message = format!("cluster {cluster}: {what}: {e}");
        match &e {
            kube::Error::Api(s) if s.code == 401 || s.code == 403 => {
                ClusterError::Forbidden(format!(
                    "{message}; the connection's credentials need create, get, list, watch, patch and delete on secrets, and list and watch on replicasets, controllerrevisions and pods, in the target namespace"
                ))
            }
            kube::Error::Api(s) if s.code == 404 && s.message.contains("namespaces") => {
                ClusterError::NamespaceNotFound(format!(
                    "{message}; create the namespace downstream or change spec.push.clusters[].namespace"
                ))
            }
            kube::Error::Api(s) if s.code == 409 => ClusterError::Conflict(message),
            kube::Error::Api(_) => ClusterError::Retry(message),
            _ => ClusterError::Unreachable(message),
        }
    }
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
        let r = registry.sub_registry_with_prefix("randomsecret");
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
    /// Keys whose status [`report`] writes.
    pub reports: Triggers,
    /// Which RandomSecrets have cluster work (spec or finalizer), from the watch.
    pub index: Arc<crate::push::index::Index>,
    pub shutdown: Signal,
}

impl Context {
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
        let changed = entry.get(&status.connection) != Some(&status);
        entry.insert(status.connection.clone(), status);
        let out = results
            .values()
            .flat_map(|m| m.values())
            .filter(|s| !s.synced)
            .count();
        self.metrics.out_of_sync.set(out as i64);
        drop(results);
        if changed {
            let _ = self.reports.send(key.clone());
        }
    }

    /// Keeps only `connections`' results for `key`; has the status written.
    fn keep_only(&self, key: &Key, connections: &[&str]) {
        let mut results = self.results.lock().expect("results lock");
        let changed = match results.get_mut(key) {
            Some(m) => {
                let before = m.len();
                m.retain(|c, _| connections.contains(&c.as_str()));
                let changed = m.len() != before;
                if m.is_empty() {
                    results.remove(key);
                }
                changed
            }
            None => false,
        };
        drop(results);
        if changed || connections.is_empty() {
            let _ = self.reports.send(key.clone());
        }
    }

    fn standby(&self) -> Option<Next> {
        if self.leader.leading() {
            None
        } else if self.leader.lapsed() {
            Some(Next::RequeueAfter(crate::reconciler::LAPSED_RETRY))
        } else {
            Some(Next::AwaitChange)
        }
    }
}

/// The connections, each linked on first use and linked again when it or
/// its kubeconfig Secret changes.
#[derive(Default)]
pub struct Links {
    map: Mutex<HashMap<String, Linked>>,
    /// The Ready condition last written per connection.
    written: Mutex<HashMap<String, (bool, &'static str)>>,
}

struct Linked {
    link: Arc<Link>,
    /// The resourceVersions of the connection and of its kubeconfig Secret.
    version: (String, String),
    allowed: Option<Vec<String>>,
    read_at: Instant,
}

impl Links {
    /// The link of connection `name`, for a RandomSecret in `namespace`.
    pub async fn get(
        &self,
        name: &str,
        namespace: &str,
        ctx: &Arc<Context>,
    ) -> Result<Arc<Link>, ClusterError> {
        let cached = {
            let map = self.map.lock().expect("links lock");
            map.get(name)
                .filter(|l| l.read_at.elapsed() < REFRESH)
                .map(|l| (l.link.clone(), l.allowed.clone()))
        };
        let (link, allowed) = match cached {
            Some(c) => c,
            None => self.read(name, ctx).await?,
        };
        if allowed
            .as_ref()
            .is_some_and(|a| !a.iter().any(|n| n == namespace))
        {
            return Err(ClusterError::NamespaceNotAllowed(format!(
                "ClusterConnection {name} does not list namespace {namespace} in allowedNamespaces"
            )));
        }
        Ok(link)
    }

    /// Reads the connection and its Secret; links anew when either changed.
    async fn read(
        &self,
        name: &str,
        ctx: &Arc<Context>,
    ) -> Result<(Arc<Link>, Option<Vec<String>>), ClusterError> {
        let upstream = |what: String| {
            move |e: kube::Error| ClusterError::Retry(format!("reading {what}: {e}"))
        };
        let conn = Api::<ClusterConnection>::all(ctx.client.clone())
            .get_opt(name)
            .await
            .map_err(upstream(format!("ClusterConnection {name}")))?
            .ok_or_else(|| {
                ClusterError::ConnectionNotFound(format!("ClusterConnection {name} does not exist"))
            })?;
        let r = &conn.spec.kubeconfig_secret_ref;
        let refused = |message: String| {
            let e = ClusterError::InvalidConnection(format!("ClusterConnection {name}: {message}"));
            (e, "InvalidKubeconfig")
        };
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
                l.allowed = conn.spec.allowed_namespaces.clone();
                return Ok((l.link.clone(), l.allowed.clone()));
            }
            let data: BTreeMap<String, Vec<u8>> = secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            let format = r.format.unwrap_or(KubeconfigFormat::Kubeconfig);
            let key = r.key.as_deref().unwrap_or(kubeconfig::DEFAULT_KEY);
            let kc = kubeconfig::parse(format, key, &data).map_err(|m| {
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
            let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|e| refused(format!("the kubeconfig cannot be used: {e}")))?;
            config.connect_timeout = Some(timeout);
            let client = kube::Client::try_from(config)
                .map_err(|e| refused(format!("no client for the kubeconfig: {e}")))?;
            let link = Link::start(name, client, timeout, ctx.clone());
            info!(connection = name, "linked a downstream cluster");
            let mut map = self.map.lock().expect("links lock");
            if let Some(old) = map.insert(
                name.to_string(),
                Linked {
                    link: link.clone(),
                    version,
                    allowed: conn.spec.allowed_namespaces.clone(),
                    read_at: Instant::now(),
                },
            ) {
                old.link.stop();
            }
            Ok((link, conn.spec.allowed_namespaces.clone()))
        }
        .await;
        if let Err((e, reason)) = &built
            && reason != &"ApiError"
        {
            self.connection_ready(ctx, name, false, reason, &e.to_string())
                .await;
        }
        built.map_err(|(e, _)| e)
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
            "apiVersion": "randomsecret.io/v1", "kind": "ClusterConnection",
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

    /// Reports how a call through connection `name` went.
    pub async fn observed(&self, ctx: &Context, name: &str, result: Result<(), &ClusterError>) {
        match result {
            Ok(()) => {
                self.connection_ready(ctx, name, true, "Connected", "reachable and authorized")
                    .await
            }
            Err(e) if e.about_the_connection() => {
                self.connection_ready(ctx, name, false, e.reason(), &e.to_string())
                    .await
            }
            Err(_) => {}
        }
    }
}

/// The clusters a RandomSecret pushes to.
fn targets(rs: &RandomSecret) -> &[crate::push::api::ClusterPush] {
    rs.spec
        .push
        .as_ref()
        .and_then(|p| p.clusters.as_deref())
        .unwrap_or_default()
}

/// One RandomSecret's cluster work: the finalizer in line with the spec,
/// each target's runner told, and the deletion policy on deletion.
pub async fn dispatch(key: Key, ctx: Arc<Context>) -> Next {
    if let Some(next) = ctx.standby() {
        return next;
    }
    if !ctx.index.wants_clusters(&key) {
        return Next::AwaitChange;
    }
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), key.ns());
    let rs = match api.get_opt(&key.name).await {
        Ok(Some(rs)) => rs,
        Ok(None) => {
            ctx.keep_only(&key, &[]);
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
            set_finalizer(&api, &rs, false)
                .await
                .map(|_| Next::AwaitChange)
        } else {
            Ok(Next::AwaitChange)
        }
    } else if !has_finalizer {
        // The patch is a change of its own: the watch brings it back here.
        set_finalizer(&api, &rs, true)
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
            match ctx.links.get(name, key.ns(), &ctx).await {
                Ok(link) => link.trigger(&key),
                Err(e) => ctx.record(&key, report::failed(name, t, &key, &e)),
            }
        }
        Ok(Next::RequeueAfter(RESYNC))
    };
    result.unwrap_or_else(|e| {
        match &e {
            // Another writer moved the resourceVersion on: read again.
            kube::Error::Api(s) if s.code == 409 => {
                tracing::debug!(randomsecret = %key, "cluster push: the finalizer patch lost a race; again")
            }
            e => {
                warn!(randomsecret = %key, error = %e, "cluster push: writing the finalizer failed; retrying")
            }
        }
        Next::Retry
    })
}

/// The RandomSecret is being deleted: with `Delete` (and neither an orphan
/// deletion nor the skip annotation) each cluster's anchor is deleted, so
/// that cluster's collector removes every copy nothing there references;
/// then the finalizer goes. A cluster that cannot be reached holds the
/// deletion, saying why and how to skip.
async fn cleanup(
    key: &Key,
    rs: &RandomSecret,
    api: &Api<RandomSecret>,
    ctx: &Arc<Context>,
) -> Result<Next, kube::Error> {
    let orphan = rs.finalizers().iter().any(|f| f == "orphan")
        || crate::push::orphaned(&ctx.client, rs).await?;
    let skip = rs
        .annotations()
        .get(crate::push::SKIP_CLEANUP)
        .is_some_and(|v| v == "true");
    let base = rs
        .spec
        .secret_name
        .clone()
        .unwrap_or_else(|| key.name.to_string());
    for t in targets(rs) {
        let name = &t.connection_ref.name;
        if t.deletion_policy.unwrap_or_default() != DeletionPolicy::Delete || orphan || skip {
            info!(randomsecret = %key, connection = %name, orphan, skip, "cluster push: kept the copies downstream on deletion");
            continue;
        }
        let ns = t.namespace.clone().unwrap_or_else(|| key.ns().to_string());
        let removed = match ctx.links.get(name, key.ns(), ctx).await {
            Ok(link) => {
                link.delete_anchor(key, &base, &ns, ctx.caches.secrets.key())
                    .await
            }
            Err(e) => Err(e),
        };
        if let Some(next) = ctx.standby() {
            return Ok(next);
        }
        match removed {
            Ok(found) => {
                info!(randomsecret = %key, connection = %name, found, "cluster push: deleted the anchor downstream (deletionPolicy Delete); that cluster's collector removes the copies nothing there references")
            }
            Err(
                e @ (ClusterError::ConnectionNotFound(_)
                | ClusterError::InvalidConnection(_)
                | ClusterError::NamespaceNotAllowed(_)),
            ) => {
                // No one can reach that cluster through this connection now:
                // the copies are kept (never lost), and said so.
                let note = format!(
                    "kept the copies in cluster {name}: {e}; delete the anchor Secret {} there by hand if they are no longer needed",
                    copy::anchor_name(&base)
                );
                warn!(randomsecret = %key, reason = e.reason(), "cluster push cleanup: {note}");
                ctx.events.publish(
                    rs_reference(rs),
                    EventType::Warning,
                    "ClusterCopiesKept",
                    "DeleteClusterCopies",
                    note,
                );
            }
            Err(e) => {
                let message = format!(
                    "deletion waits to delete the anchor in cluster {name}: {e}; to delete without it, annotate {}=true",
                    crate::push::SKIP_CLEANUP
                );
                warn!(randomsecret = %key, reason = e.reason(), "cluster push cleanup: {message}");
                let mut status = report::failed(name, t, key, &e);
                status.message = Some(message);
                ctx.record(key, status);
                return Ok(Next::RequeueAfter(CLEANUP_RECHECK));
            }
        }
    }
    if let Some(next) = ctx.standby() {
        return Ok(next);
    }
    set_finalizer(api, rs, false).await?;
    Ok(Next::AwaitChange)
}

/// Adds or removes our finalizer; the resourceVersion makes a concurrent
/// change of the list a conflict (retried) instead of a lost finalizer.
async fn set_finalizer(
    api: &Api<RandomSecret>,
    rs: &RandomSecret,
    on: bool,
) -> Result<(), kube::Error> {
    let mut list: Vec<String> = rs
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if on {
        list.push(FINALIZER.into());
    }
    let patch = json!({"metadata": {"resourceVersion": rs.resource_version(), "finalizers": list}});
    api.patch(
        &rs.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .map(drop)
}

pub(crate) fn rs_reference(rs: &RandomSecret) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("randomsecret.io/v1".into()),
        kind: Some("RandomSecret".into()),
        name: rs.metadata.name.clone(),
        namespace: rs.metadata.namespace.clone(),
        uid: rs.metadata.uid.clone(),
        ..Default::default()
    }
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
        let missing = ClusterError::downstream(
            "east",
            "creating Secret db-x",
            kube::Error::Api(Box::new(
                kube::core::Status::failure("namespaces \"apps\" not found", "NotFound")
                    .with_code(404),
            )),
        );
        assert_eq!(missing.reason(), "NamespaceNotFound");
        assert_eq!(
            ClusterError::ValueMismatch(String::new()).next(),
            Next::RequeueAfter(RESYNC)
        );
        assert_eq!(
            ClusterError::Waiting(String::new()).next(),
            Next::RequeueAfter(AWAIT)
        );
        assert!(ClusterError::Unreachable(String::new()).about_the_connection());
        assert!(!ClusterError::SecretNameConflict(String::new()).about_the_connection());
    }
}
