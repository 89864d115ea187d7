//! The reconciler: one immutable Secret per version of a RandomSecret.
//!
//! A reconcile is a short chain of steps, each in its own module:
//! [`subject`] reads the RandomSecret from the cache, the version is computed
//! (pure, `crate::version`), [`ensure`] creates it if missing (AlreadyExists of
//! our own Secret is success) from the values [`carry`] takes over from the
//! version it supersedes (a RandomSecret moved into this shard has its
//! versions relabelled into it first, [`handover`]), [`proven`] tells our Secrets from look-alikes
//! before anything is adopted, patched or deleted, [`retain`] sets every version's owners from the
//! retention plan (pure, [`retention`]) and deletes released ones,
//! [`tracking`] points tracking workloads at it, and [`report`] turns the
//! outcome, good or bad, into the status (pure, [`status`]), the Event and
//! the metric, in one place. Secret data is written once; it is read back
//! only to check a proof, and never kept.

pub mod carry;
pub mod ensure;
pub mod error;
pub mod handover;
pub mod policy;
pub mod protection;
pub mod proven;
pub mod report;
pub mod retain;
pub mod retention;
pub mod shared;
pub mod status;
pub mod subject;
pub mod tracking;

#[cfg(test)]
mod tests;

pub use error::ReconcileError;
pub use subject::Subject;

use crate::cache::{Caches, Key};
use crate::runtime::events::{EventType, Events};
use crate::runtime::keygen::KeyGeneration;
use crate::runtime::metrics::Metrics;
use crate::runtime::runner::Next;
use crate::version::Version;
use ensure::Ensured;
use kube::Client;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{Instrument as _, info};

/// Field manager of every write (status by server-side apply).
pub const MANAGER: &str = crate::api::NAME;

pub struct Context {
    pub client: Client,
    pub caches: Arc<Caches>,
    pub events: Events,
    pub metrics: Metrics,
    /// Whether this replica leads (always true without leader election).
    pub leader: crate::runtime::leader::Leadership,
    /// What RandomSecrets may produce (`--allow-*`).
    pub policy: policy::Policy,
    /// Deletion protection (`--deletion-protection`, [`protection`]).
    pub protect: bool,
    /// Costly key generation (RSA, bcrypt) runs in this lane on the
    /// blocking pool, so it never stalls the runtime's threads (other
    /// reconciles, the webhook, lease renewal) or holds a runner slot.
    pub keygen: Arc<KeyGeneration>,
    /// Tracking mode's open batches: one rollout for several rotations.
    pub batches: crate::tracking::batch::Batches,
    /// Shared values are made once per version (`shared`).
    pub shared_locks: shared::Locks,
    /// This replica's shard: versions carry their RandomSecret's shard
    /// labels, and a RandomSecret moved here is handed over (`handover`).
    pub shard: Option<Arc<crate::shard::Shard>>,
}

impl Context {
    /// The reconciler's context: the shared handles, what RandomSecrets may
    /// produce, deletion protection, the lane of costly key generation, and
    /// how long tracking waits to point a workload with several rotations
    /// at once.
    pub fn new(
        shared: &crate::runtime::Shared,
        policy: policy::Policy,
        protect: bool,
        keygen: Arc<KeyGeneration>,
        tracking_window: Duration,
    ) -> Self {
        Context {
            client: shared.client.clone(),
            caches: shared.caches.clone(),
            events: shared.events.clone(),
            metrics: shared.metrics.clone(),
            leader: shared.leader.clone(),
            policy,
            protect,
            keygen,
            batches: crate::tracking::batch::Batches::new(tracking_window),
            shared_locks: shared::Locks::default(),
            shard: shared.shard.clone(),
        }
    }

    /// Checked before every write: a replica whose leadership is uncertain
    /// (renew deadline passed) writes nothing more.
    pub fn may_write(&self) -> Result<(), ReconcileError> {
        if self.leader.leading() {
            Ok(())
        } else {
            Err(ReconcileError::NotLeading)
        }
    }
}

/// How a reconcile ended, for the metric and what to do next.
#[derive(Debug)]
pub enum Done {
    /// The current version is Ready; with rotateEvery, look again then.
    Ready { next_epoch_in: Option<Duration> },
    /// Nothing to do here: standby, gone, or being deleted.
    Skipped(&'static str),
    /// Gone or being deleted, and releasing its versions failed: again later.
    Retry(&'static str),
    /// The status write showed a newer spec than the one reconciled.
    Again,
    /// Not leading: what [`Leadership::standby`](crate::runtime::leader::Leadership::standby) said.
    Standby(Next),
}

/// How soon retention looks again while a tracking workload rolls.
pub const ROLLING_RETRY: Duration = Duration::from_secs(3);

pub use crate::runtime::leader::LAPSED_RETRY;

/// How soon a failed release of a deleted RandomSecret's versions is tried again.
pub const ORPHANS_RETRY: Duration = Duration::from_secs(5);

/// Reconciles the RandomSecret `key`; never fails (problems are reported
/// through the status, an Event and the metrics, then retried or awaited).
pub async fn reconcile(key: Key, ctx: Arc<Context>) -> Next {
    let start = Instant::now();
    ctx.metrics.in_flight.inc();
    let result = steps(&key, &ctx).await;
    let (next, label) = report::finish(&key, result, &ctx).await;
    ctx.metrics.in_flight.dec();
    ctx.metrics.duration.observe(start.elapsed().as_secs_f64());
    ctx.metrics.reconciled(label);
    next
}

/// A reconcile that failed: the RandomSecret as read, and why.
pub type Failed = (Box<Subject>, ReconcileError);

async fn steps(key: &Key, ctx: &Context) -> Result<Done, Failed> {
    if let Some(next) = ctx.leader.standby() {
        // A standby: caches stay warm; everything is reconciled on taking over.
        return Ok(Done::Standby(next));
    }
    let Some(entry) = ctx.caches.randomsecrets.get(key) else {
        // Gone from the watch: deleted, or moved to another shard.
        if let Err(e) = handover::hand_off(key, ctx).await {
            tracing::warn!(randomsecret = %key, error = %e, "handing the versions of a RandomSecret to its new shard; retrying");
            return Ok(Done::Retry("moved"));
        }
        return Ok(orphans(key, "gone", ctx).await);
    };
    if entry.deleting {
        // The garbage collector removes what is owned; protection lets go
        // of what nothing references.
        return Ok(orphans(key, "deleting", ctx).await);
    }
    let (rs, unreadable) = Subject::read(key.clone(), entry);
    // Moved to another shard, as our own write's answer showed before the
    // watch did: that shard's now (`handover`).
    if ctx.shard.as_ref().is_some_and(|s| !s.matches(&rs.shard)) {
        return Ok(Done::Skipped("moved"));
    }
    if let Some(e) = unreadable {
        return Err((Box::new(rs), e));
    }
    let at = |e: ReconcileError| (Box::new(rs.clone()), e);
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let (v, next_epoch) =
        Version::at(&rs.spec, &rs.key.name, rs.created, now).map_err(|e| at(e.into()))?;
    let labels = rs.spec.secret_labels.iter().flat_map(|m| m.keys());
    let annotations = rs.spec.secret_annotations.iter().flat_map(|m| m.keys());
    if let Some(why) = ctx.policy.refuses(&v, labels, annotations) {
        return Err(at(ReconcileError::NotAllowed(why)));
    }
    // A RandomSecret moved into this shard: its versions first.
    handover::gather(&rs, ctx).await.map_err(at)?;
    let (ensured, current) = ensure::version(&rs, &v, ctx).await.map_err(at)?;
    announce(&rs, &v, &ensured, ctx);
    // Tracking first: a workload rolling onto a template change, or waiting
    // for other rotations, holds back retention (the version it left may be
    // in a ReplicaSet not indexed yet).
    let again = tracking::retarget(&rs, &v, ctx)
        .instrument(crate::phase!("tracking"))
        .await
        .map_err(at)?;
    let versions = retain::apply(&rs, &v, &current, again.is_some(), ctx)
        .instrument(crate::phase!("retention"))
        .await
        .map_err(at)?;
    let ready = status::Outcome::Ready {
        secret_name: v.secret_name.clone(),
        uncarried: current.record.uncarried,
        next_rotation: next_epoch
            .and_then(|at| k8s_openapi::jiff::Timestamp::from_second(at).ok())
            .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
    };
    if report::write_status(&rs, &ready, Some(versions), ctx)
        .instrument(crate::phase!("status"))
        .await
        .map_err(at)?
    {
        return Ok(Done::Again);
    }
    let next_epoch_in =
        next_epoch.map(|at| Duration::from_secs(at.saturating_sub(now).max(1).unsigned_abs()));
    Ok(Done::Ready {
        // While a tracking workload rolls or waits, look again soon.
        next_epoch_in: match again {
            Some(a) => Some(next_epoch_in.map_or(a, |d| d.min(a))),
            None => next_epoch_in,
        },
    })
}

/// A RandomSecret that is gone or being deleted: its versions that are
/// being deleted and that nothing references lose our finalizer
/// ([`protection::orphans`]). Nothing to report on (there is no status);
/// a failure is retried.
async fn orphans(key: &Key, label: &'static str, ctx: &Context) -> Done {
    match protection::orphans(key, ctx).await {
        Ok(_) => Done::Skipped(label),
        Err(e) => {
            tracing::warn!(randomsecret = %key, error = %e, "releasing the versions of a deleted RandomSecret; retrying");
            Done::Retry(label)
        }
    }
}

/// After a conditional write on the version Secret `secret` lost a race
/// (409): reads it again into the cache (over the same object only, if
/// newer), so the reconcile that follows plans on what is there now (the
/// garbage collector removing a deleted holder from the owners, say).
pub async fn stale(
    api: &kube::Api<k8s_openapi::api::core::v1::Secret>,
    secret: &Key,
    ctx: &Context,
) -> ReconcileError {
    let name = &secret.name;
    match api.get_metadata_opt(name).await {
        Ok(Some(fresh)) => ctx.caches.secrets.refresh(&fresh.metadata),
        Ok(None) => ctx.caches.secrets.forget(secret),
        Err(e) => return ReconcileError::api(format!("reading Secret {name} again"))(e),
    }
    ReconcileError::Stale(format!("Secret {name}"))
}

/// A metadata merge patch of a version Secret (owners, finalizer, record),
/// conditional on the resourceVersion in it; its answer goes to the cache.
/// NotFound (released meanwhile) is success; a lost race reads it again.
pub async fn patch_version(
    api: &kube::Api<k8s_openapi::api::core::v1::Secret>,
    secret: &Key,
    patch: serde_json::Value,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    use crate::runtime::status::Answer as _;
    let pp = kube::api::PatchParams {
        field_manager: Some(MANAGER.into()),
        ..Default::default()
    };
    ctx.may_write()?;
    let name = &secret.name;
    match api
        .patch_metadata(name, &pp, &kube::api::Patch::Merge(patch))
        .await
    {
        Ok(patched) => {
            ctx.caches.secrets.write_through(&patched.metadata, false);
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.not_found() => Ok(()),
        Err(kube::Error::Api(s)) if s.conflict() => Err(stale(api, secret, ctx).await),
        Err(e) => Err(ReconcileError::api(format!(
            "patching the metadata of Secret {name}"
        ))(e)),
    }
}

/// Logs, counts and posts an Event for a version created or adopted.
fn announce(rs: &Subject, v: &Version, ensured: &Ensured, ctx: &Context) {
    let (reason, action, note) = match ensured {
        Ensured::Existed => return,
        Ensured::Created(how) => {
            ctx.metrics.versions_created.inc();
            info!(randomsecret = %rs.key, secret = %v.secret_name, "created version");
            if let Some(why) = &how.unavailable {
                let note = format!(
                    "Created Secret {} with new values for every generated key: {why}, so no value could be carried over",
                    v.secret_name
                );
                ctx.events.publish(
                    rs.object_reference(),
                    EventType::Warning,
                    "PreviousUnavailable",
                    "CarryOver",
                    note,
                );
            }
            let summary = match how.summary() {
                s if s.is_empty() => s,
                s => format!(": {s}"),
            };
            // A revert to a rotation whose version was already released.
            if rs.status.released(&v.secret_name) {
                let note = format!(
                    "Created Secret {} again, as this version was released earlier, after no pod referenced it{summary}",
                    v.secret_name
                );
                ("VersionRecreated", "CreateVersion", note)
            } else {
                let note = format!(
                    "Created Secret {} (version {}){summary}",
                    v.secret_name, v.hash
                );
                ("VersionCreated", "CreateVersion", note)
            }
        }
        Ensured::Adopted => {
            ctx.metrics.versions_adopted.inc();
            info!(randomsecret = %rs.key, secret = %v.secret_name, "adopted existing version");
            let note = format!(
                "Adopted existing Secret {}; its values are unchanged",
                v.secret_name
            );
            ("VersionAdopted", "AdoptVersion", note)
        }
    };
    ctx.events.publish(
        rs.object_reference(),
        EventType::Normal,
        reason,
        action,
        note,
    );
}
