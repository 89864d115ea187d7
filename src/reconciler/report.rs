//! The one place where a reconcile's outcome becomes the status, the Event,
//! the metric and the log line, and decides what happens next.

use super::status::{self, Outcome, Versions};
use super::{Context, Done, Failed, MANAGER, ORPHANS_RETRY, ReconcileError, Subject};
use crate::api::RandomSecretStatus;
use crate::cache::Key;
use crate::cache::previous::{self, Previous};
use crate::cache::slim::RandomSecretObject;
use crate::runtime::outcome::{Failure, Outcome as _, Reporter};
use crate::runtime::runner::Next;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use std::time::Duration;
use tracing::warn;

/// Turns a reconcile's result into what happens next and a metric label.
pub async fn finish(
    key: &Key,
    result: Result<Done, Failed>,
    ctx: &Context,
) -> (Next, &'static str) {
    let (rs, err) = match result {
        Ok(Done::Ready { next_epoch_in }) => {
            return (
                next_epoch_in.map_or(Next::AwaitChange, Next::RequeueAfter),
                "ok",
            );
        }
        Ok(Done::Again) => return (Next::RequeueAfter(Duration::ZERO), "ok"),
        Ok(Done::Skipped(label)) => return (Next::AwaitChange, label),
        Ok(Done::Retry(label)) => return (Next::RequeueAfter(ORPHANS_RETRY), label),
        Ok(Done::Standby(next)) => return (next, "standby"),
        Err(e) => e,
    };
    if matches!(err, ReconcileError::NotLeading) {
        return (not_leading(ctx), "standby");
    }
    if err.quiet() {
        // A lost race is not a problem to report: look again, with backoff,
        // since a conflict that keeps coming back (another writer, a
        // webhook) must not spin.
        return (err.next(), "conflict");
    }
    if err.namespace_terminating() {
        // The namespace is going away, and this RandomSecret with it: nothing to retry.
        return (Next::AwaitChange, "deleting");
    }
    let reporter = Reporter::new(&ctx.events, Some(&ctx.metrics.errors), "reconcile");
    reporter.count(&err);
    let message = err.to_string();
    if !err.permanent() {
        warn!(randomsecret = %key, reason = err.reason(), "reconcile failed; retrying: {message}");
        let outcome = Outcome::Retrying {
            reason: err.reason().into(),
            message,
        };
        // Best effort: the apiserver may be what failed.
        if let Ok(true) = write_status(&rs, &outcome, None, ctx).await {
            return (Next::RequeueAfter(Duration::ZERO), "error");
        }
        return (err.next(), "error");
    }
    // A permanent problem: Stalled, a Warning Event when the reason is new
    // (not on every recheck), and no retry storm.
    let outcome = Outcome::Stalled {
        reason: err.reason().into(),
        message: message.clone(),
    };
    let newer_spec = match write_status(&rs, &outcome, None, ctx).await {
        Ok(newer) => newer,
        Err(ReconcileError::NotLeading) => return (not_leading(ctx), "standby"),
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "writing the Stalled status failed; retrying");
            return (Next::Retry, "error");
        }
    };
    reporter.tell(
        Failure {
            outcome: &err,
            subject: key,
            connection: None,
            regarding: rs.object_reference(),
            action: err.action(),
            what: "stalled",
            message,
        },
        rs.status.ready_reason.as_deref(),
    );
    // The write showed a newer spec (the user's fix, say): its watch event is
    // older than what the cache now holds, so nothing else would trigger it.
    let next = if newer_spec {
        Next::RequeueAfter(Duration::ZERO)
    } else {
        err.next()
    };
    (next, "stalled")
}

/// After a write refused for lack of leadership: as a standby does.
fn not_leading(ctx: &Context) -> Next {
    ctx.leader.standby().unwrap_or(Next::AwaitChange)
}

/// Writes the status for `outcome` by server-side apply when it would change
/// the stored one. `versions`: what to list (None: keep what is listed, read
/// from the apiserver only when a write is due, since the cache keeps a
/// summary of the status, not the list). Returns true when the response shows
/// a newer spec than the one reconciled.
pub async fn write_status(
    rs: &Subject,
    outcome: &Outcome,
    versions: Option<Versions>,
    ctx: &Context,
) -> Result<bool, ReconcileError> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let generation = Some(rs.generation);
    let api: Api<RandomSecretObject> = Api::namespaced(ctx.client.clone(), rs.key.ns());
    let desired = match versions {
        Some(versions) => {
            let desired = status::desired(&rs.status, generation, outcome, versions, &now);
            if previous::fingerprint(Some(&desired)) == rs.status.fingerprint {
                return Ok(false);
            }
            desired
        }
        None => {
            let probe = status::desired(&rs.status, generation, outcome, Versions::default(), &now);
            if previous::conditions_fingerprint(Some(&probe)) == rs.status.conditions_fingerprint {
                return Ok(false);
            }
            let stored = stored_status(&api, rs).await?;
            let previous = Previous::of(stored.as_ref());
            status::desired(
                &previous,
                generation,
                outcome,
                Versions::listed(stored.as_ref()),
                &now,
            )
        }
    };
    apply_status(rs, &api, MANAGER, desired, "writing the status", ctx).await
}

/// The status as stored, read when the cache's fingerprints are not enough
/// (transition times, what was reported already). From the object itself
/// (the controller's RBAC has get on it, not on /status), untyped: a spec
/// this version cannot read must not stop the report that says so.
pub(super) async fn stored_status(
    api: &Api<RandomSecretObject>,
    rs: &Subject,
) -> Result<Option<RandomSecretStatus>, ReconcileError> {
    Ok(api
        .get(&rs.key.name)
        .await
        .map_err(ReconcileError::api("reading the status"))?
        .status
        .and_then(|s| serde_json::from_value(s).ok()))
}

/// Applies `status` (server-side, field manager `manager`, while leading)
/// and passes the response to the cache. Returns true when it shows a newer
/// spec than the one reconciled. Each status writer (the version's, tracking
/// mode's) owns its fields through its own manager.
pub(super) async fn apply_status(
    rs: &Subject,
    api: &Api<RandomSecretObject>,
    manager: &str,
    status: impl serde::Serialize,
    what: &'static str,
    ctx: &Context,
) -> Result<bool, ReconcileError> {
    let patch =
        json!({"apiVersion": crate::api::API_VERSION, "kind": "RandomSecret", "status": status});
    ctx.may_write()?;
    let written = api
        .patch_status(
            &rs.key.name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(patch),
        )
        .await
        .map_err(ReconcileError::api(what))?;
    Ok(ctx
        .caches
        .randomsecrets
        .write_through(&written, rs.generation))
}
