//! Pushing versions elsewhere (`spec.push`): apart from the main reconcile,
//! leader only, one target at a time per RandomSecret with its own timeout,
//! backoff and condition, so a slow or broken target delays nothing else and
//! `Ready` stays about the Kubernetes version.
//!
//! - `crate::api::push`, `crate::api::connections`: `spec.push`, `status.push`
//!   and the connection kinds (the CRD types, on the ground floor).
//! - [`index`]: which RandomSecrets have push work, from the watch.
//! - [`targets`]: which targets a version was made for (a target added
//!   later starts with the next version).
//! - [`vault`]: the Vault / OpenBao KV v2 target.
//!
//! The push writes its condition (`VaultSynced`) and `status.push` by
//! server-side apply under its own field manager ([`MANAGER`]): the version's
//! writer owns Ready/Reconciling/Stalled, so neither removes the other's
//! fields (`status.conditions` is a list map keyed by type). A finalizer
//! ([`FINALIZER`]) is held only while `push` is set, for the deletion policy.

pub mod clusters;
pub mod index;
pub mod targets;
pub mod vault;
#[cfg(test)]
mod verifier;

use crate::api::RandomSecret;
use crate::api::push::VaultPushStatus;
use crate::cache::Key;
use crate::runtime::events::{EventType, Events};
use crate::runtime::leader::Leadership;
use crate::runtime::metrics::Metrics;
use crate::runtime::outcome::{Failure, Outcome, Reporter};
use crate::runtime::runner::Next;
use crate::runtime::status::Answer as _;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Field manager of the push's status fields.
pub const MANAGER: &str = concat!(crate::api::project!(), "-push");
/// Held while `spec.push` is set, so the deletion policy runs.
pub const FINALIZER: &str = crate::api::push::VAULT_FINALIZER;
/// The escape for a deletion that waits on an unreachable target: "true"
/// lets the RandomSecret go without cleaning up (the path stays).
pub const SKIP_CLEANUP: &str = crate::api::key!("skip-push-cleanup");
pub use crate::api::VAULT_SYNCED;
/// A synced target is compared again this often (a value changed by hand in
/// Vault is written back); reading writes nothing.
pub const RESYNC: Duration = Duration::from_secs(600);
/// How often a deletion that waits on its target looks again, at first;
/// the wait between looks grows with the wait so far, to [`CLEANUP_RECHECK_MAX`].
pub const CLEANUP_RECHECK: Duration = Duration::from_secs(5);
pub const CLEANUP_RECHECK_MAX: Duration = Duration::from_secs(120);
/// How long a deletion waits on a state only a person can fix (a namespace
/// no longer allowed, a role removed, an invalid path) before it lets the
/// RandomSecret go and keeps the path, with a Warning Event.
pub const CLEANUP_DEADLINE: Duration = Duration::from_secs(600);

/// The wait before a waiting deletion looks again, `waited` after it began:
/// a quarter of the wait so far, within [`CLEANUP_RECHECK`, `CLEANUP_RECHECK_MAX`].
pub fn cleanup_recheck(waited: Duration) -> Duration {
    (waited / 4).clamp(CLEANUP_RECHECK, CLEANUP_RECHECK_MAX)
}
/// How soon a push waiting for its version to be Ready looks again.
pub const AWAIT_READY: Duration = Duration::from_secs(15);
/// Most pushes at once (each waits on a remote server, not on the CPU);
/// the runner shares them between namespaces.
pub const CONCURRENCY: usize = 4;
/// The longest one push (login, read, write, mark) through a tenant's
/// VaultConnection holds a slot: with the slots shared between namespaces,
/// the longest a tenant's server that never answers delays another's push.
pub const TENANT_DEADLINE: Duration = Duration::from_secs(60);
/// The same for an administrator's ClusterVaultConnection (whose request
/// timeout may be up to 300 s).
pub const DEADLINE: Duration = Duration::from_secs(600);

/// The deadline of one push to `target`.
pub fn deadline(target: &crate::api::push::VaultPush) -> Duration {
    match target.connection_ref.kind.unwrap_or_default() {
        crate::api::push::ConnectionKind::VaultConnection => TENANT_DEADLINE,
        crate::api::push::ConnectionKind::ClusterVaultConnection => DEADLINE,
    }
}

/// Why a push did not complete; `reason()` is the condition's reason.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PushError {
    #[error("{0}")]
    ConnectionNotFound(String),
    #[error("{0}")]
    NamespaceNotAllowed(String),
    #[error("{0}")]
    InvalidConnection(String),
    /// A Secret or ConfigMap the connection reads does not exist (or lacks
    /// the key): reported as InvalidConnection.
    #[error("{0}")]
    ReferenceGone(String),
    #[error("{0}")]
    InvalidPath(String),
    #[error("{0}")]
    KeyNotFound(String),
    /// The data to push is larger than `vault::plan::MAX_PAYLOAD`.
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    PathNotManaged(String),
    /// The version Secret carries no valid proof of creation: not pushed.
    #[error("{0}")]
    UnprovenVersion(String),
    #[error(transparent)]
    Vault(#[from] vault::client::VaultError),
    /// An apiserver call failed while doing `what`. The text is `what` and
    /// the error cut short ([`vault::brief`]), as a status says it.
    #[error("{what}: {}", vault::brief(.source))]
    Kube {
        what: String,
        #[source]
        source: Arc<kube::Error>,
    },
    /// The apiserver answered, but not with what the push needs (a
    /// TokenRequest without a token, a version Secret not controlled by its
    /// RandomSecret yet): retried as an apiserver error is.
    #[error("{0}")]
    Answer(String),
    /// The target was added after the current version was made.
    #[error("{0}")]
    NotMadeForTarget(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// This replica stopped leading during the push: it writes nothing more.
    #[error("no longer the leader")]
    LostLease,
}

impl PushError {
    /// The apiserver call doing `what` failed with `e`.
    pub fn kube(what: impl Into<String>, e: kube::Error) -> Self {
        PushError::Kube {
            what: what.into(),
            source: Arc::new(e),
        }
    }

    /// The connection, or a Secret or ConfigMap it reads, does not exist
    /// (as in a namespace being torn down). Not a refusal (403) or a bad CA:
    /// those can be fixed, and a deletion waits for them.
    pub fn connection_gone(&self) -> bool {
        matches!(
            self,
            PushError::ConnectionNotFound(_) | PushError::ReferenceGone(_)
        )
    }
}

impl Outcome for PushError {
    fn reason(&self) -> &'static str {
        match self {
            PushError::ConnectionNotFound(_) => "ConnectionNotFound",
            PushError::NamespaceNotAllowed(_) => "NamespaceNotAllowed",
            PushError::InvalidConnection(_) | PushError::ReferenceGone(_) => "InvalidConnection",
            PushError::InvalidPath(_) => "InvalidPath",
            PushError::KeyNotFound(_) => "KeyNotFound",
            PushError::PayloadTooLarge(_) => "PayloadTooLarge",
            PushError::PathNotManaged(_) => "PathNotManaged",
            PushError::UnprovenVersion(_) => "VersionNotProven",
            PushError::Vault(e) => e.reason(),
            PushError::Kube { .. } | PushError::Answer(_) => "ApiError",
            PushError::NotMadeForTarget(_) => "AwaitingNextVersion",
            PushError::Timeout(_) => "Unreachable",
            PushError::LostLease => "LostLease",
        }
    }

    /// A spec problem waits for a change of the spec; the others retry with
    /// backoff (a connection may be made or fixed later).
    fn next(&self) -> Next {
        match self {
            PushError::InvalidPath(_)
            | PushError::KeyNotFound(_)
            | PushError::PayloadTooLarge(_)
            | PushError::NotMadeForTarget(_) => Next::AwaitChange,
            _ => Next::Retry,
        }
    }

    /// Someone must change the connection, the spec or Vault's policy. A
    /// deletion that waits on one gives up after [`CLEANUP_DEADLINE`] (the
    /// path is kept, and said so).
    fn permanent(&self) -> bool {
        use vault::client::VaultError as V;
        match self {
            PushError::NamespaceNotAllowed(_)
            | PushError::InvalidConnection(_)
            | PushError::InvalidPath(_)
            | PushError::KeyNotFound(_)
            | PushError::PathNotManaged(_)
            | PushError::UnprovenVersion(_) => true,
            PushError::Vault(e) => matches!(
                e,
                V::AuthFailed { .. } | V::PermissionDenied { .. } | V::BadCa(_) | V::BadAddress(_)
            ),
            _ => false,
        }
    }
}

/// What the push needs.
pub struct Context {
    pub client: kube::Client,
    pub leader: Leadership,
    pub events: Events,
    pub metrics: Metrics,
    pub tokens: vault::connection::Tokens,
    /// The controller's ServiceAccount (Kubernetes auth); None: not known.
    pub identity: Option<vault::connection::Identity>,
    /// The controller's proof key: the owner proof of the Vault paths it
    /// writes (`vault::plan::META_OWNER`).
    pub proof_key: crate::proof::ProofKey,
    /// Where connections may send requests (--allow-http-vault,
    /// --vault-allowed-networks).
    pub vault_policy: vault::address::Policy,
    pub out_of_sync: Mutex<HashSet<Key>>,
    /// The Ready condition last written per connection (status, reason), so
    /// a connection's status is written when it changes, not on every push.
    pub connections: Mutex<std::collections::HashMap<String, (bool, &'static str)>>,
    /// Connections that did not answer, and until when pushes through them
    /// fail at once (`vault::hold`): a dead server holds one push slot at a
    /// time, not all of them.
    pub down: Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// The Vault push's settings, from the controller's flags.
pub struct Config {
    /// The controller's ServiceAccount (Kubernetes auth); None: not known.
    pub identity: Option<vault::connection::Identity>,
    /// Where connections may send requests.
    pub vault_policy: vault::address::Policy,
}

impl Context {
    /// The Vault push's context; its private state starts empty.
    pub fn new(shared: &crate::runtime::Shared, config: Config) -> Self {
        Context {
            client: shared.client.clone(),
            leader: shared.leader.clone(),
            events: shared.events.clone(),
            metrics: shared.metrics.clone(),
            tokens: Default::default(),
            identity: config.identity,
            proof_key: shared.proof_key.clone(),
            vault_policy: config.vault_policy,
            out_of_sync: Default::default(),
            connections: Default::default(),
            down: Default::default(),
        }
    }

    /// The push's failure reporter (counted in `randomsecret_push_errors`).
    fn reporter(&self) -> Reporter<'_> {
        Reporter::new(&self.events, Some(&self.metrics.push_errors), "push")
    }

    fn mark(&self, key: &Key, synced: bool) {
        let mut set = self.out_of_sync.lock().expect("out_of_sync lock");
        if synced {
            set.remove(key);
        } else {
            set.insert(key.clone());
        }
        self.metrics.push_out_of_sync.set(set.len() as i64);
    }
}

/// One push of the RandomSecret `key`: reads it, keeps the finalizer in line
/// with `spec.push`, pushes (or cleans up when it is being deleted), and
/// reports. Never fails: problems go to the condition, an Event and metrics.
pub async fn push(key: Key, ctx: std::sync::Arc<Context>) -> Next {
    if let Some(next) = standby(&ctx) {
        return next;
    }
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), key.ns());
    let rs = match api.get_opt(&key.name).await {
        Ok(Some(rs)) => rs,
        Ok(None) => {
            ctx.mark(&key, true);
            return Next::AwaitChange;
        }
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "push: reading the RandomSecret failed; retrying");
            return Next::Retry;
        }
    };
    match step(&key, &rs, &api, &ctx).await {
        Ok(next) => next,
        // Another writer (the cluster push's finalizer, a status write)
        // moved the resourceVersion on: read again, quietly.
        Err(kube::Error::Api(s)) if s.conflict_or_exists() => Next::Retry,
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "push: writing to the apiserver failed; retrying");
            Next::Retry
        }
    }
}

fn standby(ctx: &Context) -> Option<Next> {
    ctx.leader.standby()
}

/// The current version's name once the version's writer has made it Ready
/// for this generation: what every push waits for.
pub(crate) fn ready_secret_name(rs: &RandomSecret) -> Option<String> {
    let s = rs.status.as_ref()?;
    let ready = s.observed_generation == rs.metadata.generation
        && s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
    ready.then(|| s.secret_name.clone()).flatten()
}

async fn step(
    key: &Key,
    rs: &RandomSecret,
    api: &Api<RandomSecret>,
    ctx: &Context,
) -> Result<Next, kube::Error> {
    let has_finalizer = rs.finalizers().iter().any(|f| f == FINALIZER);
    let target = rs.spec.push.as_ref().and_then(|p| p.vault.as_ref());
    if rs.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Next::AwaitChange);
        }
        return cleanup(key, rs, api, ctx).await;
    }
    let Some(target) = target else {
        // A target removed from the spec is forgotten, never deleted.
        if has_finalizer {
            set_finalizer(api, rs, FINALIZER, false).await?;
        }
        if has_push_status(rs) {
            apply_status(api, rs, None, None).await?;
        }
        ctx.mark(key, true);
        return Ok(Next::AwaitChange);
    };
    // Only a deletion that removes the path needs to wait for the
    // controller: with Retain, an uninstalled controller never holds a
    // RandomSecret (or its namespace) in deletion.
    let wants_finalizer =
        target.deletion_policy.unwrap_or_default() == crate::api::push::DeletionPolicy::Delete;
    if wants_finalizer != has_finalizer {
        set_finalizer(api, rs, FINALIZER, wants_finalizer).await?;
        // The patch is a change of its own: the watch brings it back here.
        return Ok(Next::AwaitChange);
    }
    // The version's writer decides what is current; wait for it.
    let Some(secret_name) = ready_secret_name(rs) else {
        // Ready is not in what brings a RandomSecret back here (only the
        // spec, the current version and the deletion are): look again.
        return Ok(Next::RequeueAfter(AWAIT_READY));
    };
    let start = Instant::now();
    let deadline = deadline(target);
    let result = match made_for(ctx, rs, target, &secret_name).await? {
        Err(e) => Err(e),
        Ok(()) => tokio::time::timeout(deadline, vault::sync(ctx, rs, target, &secret_name))
            .await
            .unwrap_or(Err(PushError::Timeout(deadline))),
    };
    ctx.metrics
        .push_duration
        .observe(start.elapsed().as_secs_f64());
    // The lease was lost meanwhile: the new leader reports (and writes) now.
    if let Some(next) = standby(ctx) {
        return Ok(next);
    }
    let previous = condition_of(rs, VAULT_SYNCED);
    match result {
        Ok(done) => {
            ctx.metrics
                .pushed(if done.written { "written" } else { "unchanged" });
            ctx.mark(key, true);
            if done.written {
                info!(randomsecret = %key, secret = %secret_name, kv_version = done.kv_version, path = %done.status.path, "push: wrote a KV version");
                let (kind, reason, note) = if done.drift {
                    (
                        EventType::Warning,
                        "VaultValueRestored",
                        format!(
                            "The values at {} were changed in Vault; wrote Secret {secret_name}'s values back as KV version {}",
                            done.status.path, done.kv_version
                        ),
                    )
                } else {
                    (
                        EventType::Normal,
                        "VaultVersionWritten",
                        format!(
                            "Wrote Secret {secret_name} to {} as KV version {}",
                            done.status.path, done.kv_version
                        ),
                    )
                };
                ctx.events
                    .publish(reference(rs), kind, reason, "PushVault", note);
            }
            let message = format!(
                "Secret {secret_name} is KV version {} of {}",
                done.kv_version, done.status.path
            );
            let cond = condition(rs, previous, true, "Synced", &message);
            apply_status(api, rs, Some(cond), Some(done.status)).await?;
            Ok(Next::RequeueAfter(RESYNC))
        }
        Err(e) => {
            ctx.metrics.pushed("error");
            ctx.mark(key, false);
            let message = e.to_string();
            ctx.reporter().failed(
                Failure {
                    outcome: &e,
                    subject: key,
                    connection: None,
                    regarding: reference(rs),
                    action: "PushVault",
                    what: "failed",
                    message: message.clone(),
                },
                previous.map(|c| c.reason.as_str()),
            );
            let cond = condition(rs, previous, false, e.reason(), &message);
            let kept = rs
                .status
                .as_ref()
                .and_then(|s| s.push.as_ref())
                .and_then(|p| p.vault.clone());
            apply_status(api, rs, Some(cond), kept).await?;
            Ok(e.next())
        }
    }
}

/// Refuses to push `secret_name` to `target` unless the version was made
/// with that target in the spec (`targets`): values already in use are
/// never sent to a new place by an edit of `spec.push`.
async fn made_for(
    ctx: &Context,
    rs: &RandomSecret,
    target: &crate::api::push::VaultPush,
    secret_name: &str,
) -> Result<Result<(), PushError>, kube::Error> {
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    let pushed = rs
        .status
        .as_ref()
        .and_then(|s| s.push.as_ref())
        .and_then(|p| p.vault.as_ref());
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(ctx.client.clone(), namespace);
    // A version that is gone is the push's to report.
    let Some(meta) = secrets.get_metadata_opt(secret_name).await? else {
        return Ok(Ok(()));
    };
    let annotations = meta.metadata.annotations.as_ref();
    if targets::vault_may_push(target, namespace, pushed, secret_name, annotations) {
        return Ok(Ok(()));
    }
    Ok(Err(PushError::NotMadeForTarget(format!(
        "spec.push.vault names {}, which Secret {secret_name} was not made for (the target was added or changed after it was made): values already in use are never sent to a new place by an edit of spec.push; the next version is pushed: rotate (change spec.rotation, or run `randomsecret rotate {}`)",
        targets::vault(target).trim_start_matches("vault:"),
        rs.metadata.name.as_deref().unwrap_or_default()
    ))))
}

/// The RandomSecret is being deleted: the path is removed (Delete, ours,
/// not orphaned, no skip annotation) or kept, then the finalizer goes.
async fn cleanup(
    key: &Key,
    rs: &RandomSecret,
    api: &Api<RandomSecret>,
    ctx: &Context,
) -> Result<Next, kube::Error> {
    let target = rs.spec.push.as_ref().and_then(|p| p.vault.as_ref());
    // `kubectl delete --cascade=orphan` adds the orphan finalizer: keep everything.
    // The garbage collector removes that finalizer once the versions are
    // orphaned, so a version without our owner reference says the same.
    let orphan = rs.finalizers().iter().any(|f| f == "orphan") || orphaned(&ctx.client, rs).await?;
    let skip = rs
        .annotations()
        .get(SKIP_CLEANUP)
        .is_some_and(|v| v == "true");
    // Nothing recorded as written (the status maps no KV version): the path
    // is looked for once (a first write whose status was lost would be
    // there), and the deletion never waits on a server for it.
    let pushed = rs
        .status
        .as_ref()
        .and_then(|s| s.push.as_ref())
        .is_some_and(|p| p.vault.is_some());
    if let Some(target) = target
        && vault::plan::delete_on_cleanup(target.deletion_policy.unwrap_or_default(), orphan, skip)
    {
        let removed = vault::cleanup(ctx, rs, target).await;
        if let Some(next) = standby(ctx) {
            return Ok(next);
        }
        if let Err(e) = &removed
            && !pushed
        {
            warn!(randomsecret = %key, reason = e.reason(), "push cleanup: nothing was recorded as pushed, and the path could not be looked at ({e}); a path left by an interrupted first write stays");
        } else if let Err(e) = &removed
            && e.connection_gone()
        {
            // The connection (or what it reads) is gone, as in a namespace
            // being torn down: no one can remove the path now. It is kept
            // (never lost), and said so.
            path_kept(ctx, key, rs, e, format!("{e}"));
        } else if let Err(e) = &removed
            && e.permanent()
            && waited(rs) >= CLEANUP_DEADLINE
        {
            // Nothing changed in ten minutes and no retry can: let the
            // RandomSecret go, keep the path (never lost), say so.
            let why = format!(
                "the deletion waited {} minutes on a state only a person can fix ({e})",
                CLEANUP_DEADLINE.as_secs() / 60
            );
            path_kept(ctx, key, rs, e, why);
        } else if let Err(e) = &removed {
            ctx.mark(key, false);
            let message = format!(
                "deletion waits to remove the Vault path: {e}; to delete without removing it, annotate {SKIP_CLEANUP}=true"
            );
            let previous = condition_of(rs, VAULT_SYNCED);
            ctx.reporter().failed(
                Failure {
                    outcome: e,
                    subject: key,
                    connection: None,
                    regarding: reference(rs),
                    action: "DeleteVault",
                    what: "cleanup failed",
                    message: message.clone(),
                },
                previous.map(|c| c.reason.as_str()),
            );
            let cond = condition(rs, previous, false, e.reason(), &message);
            let kept = rs
                .status
                .as_ref()
                .and_then(|s| s.push.as_ref())
                .and_then(|p| p.vault.clone());
            apply_status(api, rs, Some(cond), kept).await?;
            // Not the runner's backoff: the escape annotation is no change
            // the watch brings here, so a waiting deletion looks again soon
            // at first, then less often.
            return Ok(Next::RequeueAfter(cleanup_recheck(waited(rs))));
        } else if matches!(removed, Ok(true)) {
            info!(randomsecret = %key, "push: deleted the Vault path (deletionPolicy Delete)");
        } else {
            info!(randomsecret = %key, "push: no path of ours to delete (none, or someone else's)");
        }
    } else if target.is_some() {
        info!(randomsecret = %key, orphan, skip, pushed, "push: kept the Vault path on deletion (or none was written)");
    }
    if let Some(next) = standby(ctx) {
        return Ok(next);
    }
    ctx.mark(key, true);
    set_finalizer(api, rs, FINALIZER, false).await?;
    Ok(Next::AwaitChange)
}

/// A deletion goes on without removing the path (`why` it cannot): the
/// path is kept, never lost, and a Warning Event says so.
fn path_kept(ctx: &Context, key: &Key, rs: &RandomSecret, e: &PushError, why: String) {
    let note = format!("kept the Vault path: {why}; remove it by hand if it is no longer needed");
    warn!(randomsecret = %key, reason = e.reason(), "push cleanup: {note}");
    ctx.events.publish(
        reference(rs),
        EventType::Warning,
        "VaultPathKept",
        "DeleteVault",
        note,
    );
}

/// How long the RandomSecret's deletion has been waiting.
pub(crate) fn waited(rs: &RandomSecret) -> Duration {
    rs.metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| k8s_openapi::jiff::Timestamp::now().duration_since(t.0))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or_default()
}

/// Whether the current version exists without an owner reference to `rs`
/// (a deletion with `--cascade=orphan` whose orphan finalizer is done).
pub(crate) async fn orphaned(
    client: &kube::Client,
    rs: &RandomSecret,
) -> Result<bool, kube::Error> {
    let Some(name) = rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) else {
        return Ok(false);
    };
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(
        client.clone(),
        rs.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let uid = rs.metadata.uid.as_deref();
    Ok(secrets.get_metadata_opt(name).await?.is_some_and(|m| {
        !m.metadata
            .owner_references
            .unwrap_or_default()
            .iter()
            .any(|o| Some(o.uid.as_str()) == uid)
    }))
}

/// Whether the Vault push's own status fields are there (the cluster
/// push's are not its to remove).
fn has_push_status(rs: &RandomSecret) -> bool {
    rs.status.as_ref().is_some_and(|s| {
        s.push.as_ref().is_some_and(|p| p.vault.is_some())
            || s.conditions.iter().any(|c| c.type_ == VAULT_SYNCED)
    })
}

fn condition_of<'a>(rs: &'a RandomSecret, type_: &str) -> Option<&'a Condition> {
    rs.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
}

/// The VaultSynced condition; its transition time stays while its status does.
fn condition(
    rs: &RandomSecret,
    previous: Option<&Condition>,
    ok: bool,
    reason: &str,
    message: &str,
) -> Condition {
    let status = if ok { "True" } else { "False" };
    Condition {
        type_: VAULT_SYNCED.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: rs.metadata.generation,
        last_transition_time: previous
            .filter(|c| c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now())),
    }
}

/// Applies the push's fields (None, None: removes them) under [`MANAGER`],
/// when they differ from what is stored.
async fn apply_status(
    api: &Api<RandomSecret>,
    rs: &RandomSecret,
    cond: Option<Condition>,
    vault: Option<VaultPushStatus>,
) -> Result<(), kube::Error> {
    let stored = rs.status.as_ref();
    let same_cond = match (&cond, condition_of(rs, VAULT_SYNCED)) {
        (Some(a), Some(b)) => a == b,
        (None, None) => true,
        _ => false,
    };
    let same_push = stored
        .and_then(|s| s.push.as_ref())
        .and_then(|p| p.vault.as_ref())
        == vault.as_ref();
    if same_cond && same_push {
        return Ok(());
    }
    let mut status = serde_json::Map::new();
    if let Some(c) = cond {
        status.insert("conditions".into(), json!([c]));
    }
    if let Some(v) = vault {
        status.insert("push".into(), json!({"vault": v}));
    }
    let patch =
        json!({"apiVersion": crate::api::API_VERSION, "kind": "RandomSecret", "status": status});
    api.patch_status(
        &rs.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(patch),
    )
    .await
    .map(drop)
}

/// Adds or removes the finalizer `name` (each push target has its own);
/// the resourceVersion makes a concurrent change of the list a conflict
/// (retried) instead of a lost finalizer.
pub(crate) async fn set_finalizer(
    api: &Api<RandomSecret>,
    rs: &RandomSecret,
    name: &str,
    on: bool,
) -> Result<(), kube::Error> {
    let mut list: Vec<String> = rs
        .finalizers()
        .iter()
        .filter(|f| *f != name)
        .cloned()
        .collect();
    if on {
        list.push(name.into());
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

pub(crate) fn reference(rs: &RandomSecret) -> ObjectReference {
    ObjectReference {
        api_version: Some(crate::api::API_VERSION.into()),
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
    fn a_waiting_deletion_looks_again_less_often_and_gives_up_only_on_what_a_person_must_fix() {
        assert_eq!(cleanup_recheck(Duration::ZERO), CLEANUP_RECHECK);
        assert_eq!(
            cleanup_recheck(Duration::from_secs(100)),
            Duration::from_secs(25)
        );
        assert_eq!(
            cleanup_recheck(Duration::from_secs(3600)),
            CLEANUP_RECHECK_MAX
        );
        use vault::client::VaultError as V;
        assert!(PushError::NamespaceNotAllowed("x".into()).permanent());
        assert!(PushError::Vault(V::PermissionDenied { call: "c" }).permanent());
        // A server that is down or sealed comes back by itself: the deletion
        // waits for it (or for the skip annotation).
        assert!(!PushError::Vault(V::Sealed { call: "c" }).permanent());
        assert!(!PushError::Timeout(Duration::from_secs(1)).permanent());
        assert!(!PushError::Answer("x".into()).permanent());
    }

    #[test]
    fn a_tenants_push_has_the_short_deadline() {
        let target = |kind| crate::api::push::VaultPush {
            connection_ref: crate::api::push::ConnectionRef {
                kind,
                name: "c".into(),
            },
            ..Default::default()
        };
        assert_eq!(
            deadline(&target(Some(
                crate::api::push::ConnectionKind::VaultConnection
            ))),
            TENANT_DEADLINE
        );
        assert_eq!(deadline(&target(None)), DEADLINE);
        // One deadline covers every request of a tenant's push.
        assert!(TENANT_DEADLINE >= vault::connection::MAX_TENANT_TIMEOUT * 4);
    }

    #[test]
    fn only_a_missing_connection_or_reference_lets_a_deletion_keep_the_path() {
        assert!(PushError::ConnectionNotFound("c".into()).connection_gone());
        assert!(
            PushError::ReferenceGone("ConfigMap ns/ca does not exist".into()).connection_gone()
        );
        // A refused read, a bad CA or a dead server can be fixed: the deletion waits.
        assert!(!PushError::InvalidConnection("403".into()).connection_gone());
        assert!(!PushError::Timeout(std::time::Duration::from_secs(1)).connection_gone());
        assert_eq!(
            PushError::ReferenceGone("x".into()).reason(),
            "InvalidConnection"
        );
    }

    /// An apiserver's answer, as a failed call returns it.
    fn gone() -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("secrets \"x\" not found", "NotFound").with_code(404),
        ))
    }

    /// The apiserver's error stays the push error's source; the text is the
    /// one a status always said ("reading ...: " and the error cut short).
    #[test]
    fn an_apiserver_error_is_the_source_and_its_text_is_unchanged() {
        use std::error::Error as _;
        let e = PushError::kube("reading Secret ns/x", gone());
        assert_eq!(
            e.to_string(),
            format!("reading Secret ns/x: {}", vault::brief(gone()))
        );
        let source = e
            .source()
            .and_then(|s| s.downcast_ref::<Arc<kube::Error>>());
        assert!(matches!(source.map(|s| &**s), Some(kube::Error::Api(s)) if s.not_found()));
        assert!(PushError::Answer("no token".into()).source().is_none());
    }

    #[test]
    fn each_push_error_knows_its_reason_and_what_comes_next() {
        use PushError as E;
        let s = String::new;
        let table: Vec<(PushError, &str, Next, bool)> = vec![
            (
                E::ConnectionNotFound(s()),
                "ConnectionNotFound",
                Next::Retry,
                false,
            ),
            (
                E::NamespaceNotAllowed(s()),
                "NamespaceNotAllowed",
                Next::Retry,
                true,
            ),
            (
                E::InvalidConnection(s()),
                "InvalidConnection",
                Next::Retry,
                true,
            ),
            (
                E::ReferenceGone(s()),
                "InvalidConnection",
                Next::Retry,
                false,
            ),
            (E::InvalidPath(s()), "InvalidPath", Next::AwaitChange, true),
            (E::KeyNotFound(s()), "KeyNotFound", Next::AwaitChange, true),
            (
                E::PayloadTooLarge(s()),
                "PayloadTooLarge",
                Next::AwaitChange,
                false,
            ),
            (E::PathNotManaged(s()), "PathNotManaged", Next::Retry, true),
            (
                E::UnprovenVersion(s()),
                "VersionNotProven",
                Next::Retry,
                true,
            ),
            (E::kube(s(), gone()), "ApiError", Next::Retry, false),
            (E::Answer(s()), "ApiError", Next::Retry, false),
            (
                E::NotMadeForTarget(s()),
                "AwaitingNextVersion",
                Next::AwaitChange,
                false,
            ),
            (
                E::Timeout(Duration::from_secs(1)),
                "Unreachable",
                Next::Retry,
                false,
            ),
            (E::LostLease, "LostLease", Next::Retry, false),
        ];
        for (e, reason, next, permanent) in table {
            assert_eq!(
                (e.reason(), e.next(), e.permanent(), e.quiet()),
                (reason, next, permanent, false),
                "{e:?}"
            );
        }
    }
}
