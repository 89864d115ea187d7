//! Tracking mode: points the templates of workloads annotated
//! `randomsecret.io/track: <this RandomSecret>` at the current version,
//! except those someone rolled back from it (reported as pinned).
//!
//! Only names that are this RandomSecret's own are rewritten: its versions
//! (proven ours, or recorded in its status) and its base name while no
//! Secret has that name (a placeholder; the controller never creates it).
//! Otherwise whoever can edit `spec.secretName` could point a tracked
//! workload's other Secret references (a TLS certificate, say) at a version.

use super::status;
use super::{Context, MANAGER, ROLLING_RETRY, ReconcileError, Subject};
use crate::api::PinnedWorkload;
use crate::api::WORKLOADS_PINNED;
use crate::cache::holders::WorkloadKind;
use crate::cache::previous::{self, Previous};
use crate::cache::slim::RandomSecretObject;
use crate::proof::Proof;
use crate::runtime::events::EventType;
use crate::runtime::status::Answer as _;
use crate::tracking::batch::{self, Join, Move};
use crate::tracking::{
    Decision, decide, own_references, pinned_message, record_label, record_patch, refers_to,
    tracked_names, unpin_hint,
};
use crate::version::Version;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// Which names tracking may move to the current version.
struct Own {
    base: String,
    /// Whether a Secret exists under the bare base name (then it is not ours).
    base_taken: bool,
    versions: HashSet<String>,
}

impl Own {
    async fn of(rs: &Subject, v: &Version, ctx: &Context) -> Result<Self, ReconcileError> {
        let versions = ctx
            .caches
            .secrets
            .versions_of(&rs.key)
            .into_iter()
            .filter(|(_, c)| c.proof == Proof::Valid)
            .map(|(n, _)| n.to_string())
            .collect();
        let base_taken = Api::<Secret>::namespaced(ctx.client.clone(), rs.key.ns())
            .get_metadata_opt(&v.base)
            .await
            .map_err(ReconcileError::api(format!("reading Secret {}", v.base)))?
            .is_some();
        Ok(Own {
            base: v.base.clone(),
            base_taken,
            versions,
        })
    }

    fn accepts(&self, rs: &Subject, name: &str) -> bool {
        if name == self.base {
            return !self.base_taken;
        }
        refers_to(name, &self.base)
            && (self.versions.contains(name)
                || rs.status.was_live(name)
                || rs.status.released(name))
    }
}

/// Whether a workload's controller has not yet acted on its latest template
/// (`status.observedGeneration` behind `metadata.generation`): the
/// ReplicaSet or ControllerRevision of a template it was just pointed at may
/// not exist yet, or not be in the reference index yet.
fn rolling(obj: &DynamicObject) -> bool {
    // A number, or (Argo Rollouts) the number as a string.
    let observed = obj
        .data
        .pointer("/status/observedGeneration")
        .and_then(|g| g.as_i64().or_else(|| g.as_str()?.parse().ok()));
    observed.is_none() || observed < obj.metadata.generation
}

/// Field manager of tracking mode's status fields (WorkloadsPinned,
/// pinnedWorkloads): the version's writer applies its conditions under
/// [`MANAGER`], so neither removes the other's (conditions are a list map).
pub const STATUS_MANAGER: &str = concat!(crate::api::project!(), "-tracking");

/// A workload left on an older version, with what its Event needs.
struct Pin {
    kind: WorkloadKind,
    uid: Option<String>,
    listed: PinnedWorkload,
}

/// Points the tracking workloads at the current version, except those
/// someone rolled back from it ([`crate::tracking::decide`]): those are
/// reported. A workload that tracks other RandomSecrets too is pointed
/// through its batch ([`crate::tracking::batch`]): once for all that rotate
/// within the window. Returns how soon to look again, when a workload is
/// rolling onto a template change (pointed now, or one its controller has
/// not acted on yet: the version it was on before may be referenced by a
/// ReplicaSet the index does not show yet, so retention keeps every
/// superseded version) or waits in a batch.
pub async fn retarget(
    rs: &Subject,
    v: &Version,
    ctx: &Context,
) -> Result<Option<Duration>, ReconcileError> {
    let workloads = ctx.caches.tracking.of(&rs.key);
    if workloads.is_empty() {
        // None left (untracked, deleted): nothing is pinned either.
        report_pinned(rs, v, Vec::new(), ctx).await?;
        return Ok(None);
    }
    let mut again: Option<Duration> = None;
    let mut look_again = |d: Duration| again = Some(again.map_or(d, |a| a.min(d)));
    let own = Own::of(rs, v, ctx).await?;
    if own.base_taken {
        ctx.events.publish(
            rs.object_reference(),
            EventType::Warning,
            "TrackingSkipped",
            "TrackVersion",
            format!(
                "Secret {} exists and is not a version of this RandomSecret: tracking workloads' references to it are left as they are",
                v.base
            ),
        );
    }
    let label = record_label(&rs.key.name);
    let mut pins = Vec::new();
    for w in workloads {
        let what = format!("{} {}", w.kind.as_str(), w.name);
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), rs.key.ns(), &w.kind.api_resource());
        let Some(obj) = api
            .get_opt(&w.name)
            .await
            .map_err(ReconcileError::api(format!(
                "reading tracking workload {what}"
            )))?
        else {
            continue;
        };
        if rolling(&obj) {
            look_again(ROLLING_RETRY);
        }
        let Some(mut pod_spec) = obj.data.pointer("/spec/template/spec").cloned() else {
            continue;
        };
        let accepts = |name: &str| own.accepts(rs, name);
        let refs = own_references(&pod_spec, &accepts);
        let record = obj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&label))
            .map(String::as_str);
        let exists = |name: &str| own.versions.contains(name);
        let moves = match decide(&refs, &v.secret_name, &v.hash, record, &exists) {
            Decision::Leave => continue,
            Decision::Pinned(older) => {
                pins.extend(older.into_iter().map(|secret_name| Pin {
                    kind: w.kind,
                    uid: obj.metadata.uid.clone(),
                    listed: PinnedWorkload {
                        kind: w.kind.as_str().into(),
                        name: w.name.to_string(),
                        secret_name,
                    },
                }));
                continue;
            }
            Decision::Record => Vec::new(),
            Decision::Point => {
                let m = Move {
                    rs: rs.key.name.to_string(),
                    reference: rs.object_reference(),
                    hash: v.hash.clone(),
                    current: v.secret_name.clone(),
                    from: refs.into_iter().filter(|n| *n != v.secret_name).collect(),
                    generation: obj.metadata.generation,
                };
                let tracks = obj.metadata.annotations.as_ref().map(tracked_names);
                let alone = tracks.is_none_or(|t| t.len() <= 1);
                let workload = (w.kind, rs.key.ns().to_string(), w.name.to_string());
                match ctx.batches.join(workload.clone(), m, alone, Instant::now()) {
                    Join::Wait(left) => {
                        debug!(randomsecret = %rs.key, workload = %what, wait_ms = left.as_millis() as u64, "waiting for other RandomSecrets the workload tracks before pointing it");
                        look_again(left);
                        continue;
                    }
                    Join::Now { moves, since } => {
                        let (applied, dropped) =
                            batch::apply(&mut pod_spec, obj.metadata.generation, moves);
                        if !dropped.is_empty() {
                            debug!(randomsecret = %rs.key, workload = %what, dropped = dropped.len(), "moves decided on an older template dropped; their RandomSecrets decide again");
                        }
                        if let Err(e) = point(&api, &obj, &what, &applied, &pod_spec, ctx).await {
                            ctx.batches.restore(workload, applied, since);
                            return Err(e);
                        }
                        applied
                    }
                }
            }
        };
        if moves.is_empty() {
            let records = [(rs.key.name.as_str(), v.hash.as_str())];
            let patch = record_patch(obj.metadata.resource_version.as_deref(), &records, None);
            let doing = format!("recording that {what} is on Secret {}", v.secret_name);
            send(&api, &obj, &what, patch, doing, ctx).await?;
            debug!(randomsecret = %rs.key, workload = %what, secret = %v.secret_name, "recorded that a tracking workload is on the current version");
            continue;
        }
        look_again(ROLLING_RETRY);
        let together: Vec<&str> = moves.iter().map(|m| m.rs.as_str()).collect();
        for m in &moves {
            info!(randomsecret = %format!("{}/{}", rs.key.ns(), m.rs), workload = %what, secret = %m.current, "pointed tracking workload at the current version");
            let others: Vec<&str> = together.iter().copied().filter(|n| *n != m.rs).collect();
            let note = if others.is_empty() {
                format!("Pointed {what} at Secret {}", m.current)
            } else {
                format!(
                    "Pointed {what} at Secret {}, in one rollout with RandomSecrets {}",
                    m.current,
                    others.join(", ")
                )
            };
            ctx.events.publish(
                m.reference.clone(),
                EventType::Normal,
                "WorkloadUpdated",
                "TrackVersion",
                note,
            );
        }
    }
    report_pinned(rs, v, pins, ctx).await?;
    Ok(again)
}

/// Points the workload `what` with `moves` applied to its template
/// (`pod_spec`) and their records, in one patch conditional on the read's
/// resourceVersion.
async fn point(
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    what: &str,
    moves: &[Move],
    pod_spec: &serde_json::Value,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    let records: Vec<(&str, &str)> = moves
        .iter()
        .map(|m| (m.rs.as_str(), m.hash.as_str()))
        .collect();
    let patch = record_patch(
        obj.metadata.resource_version.as_deref(),
        &records,
        Some(pod_spec),
    );
    let to: Vec<&str> = moves.iter().map(|m| m.current.as_str()).collect();
    let doing = format!("pointing {what} at Secret {}", to.join(", "));
    send(api, obj, what, patch, doing, ctx).await
}

/// Sends a merge patch of the workload `what`. A conflict (changed since
/// the read: its controller updated its status, or someone rolled it back)
/// is Stale: read and decide again.
async fn send(
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    what: &str,
    patch: serde_json::Value,
    doing: String,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    ctx.may_write()?;
    let pp = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..Default::default()
    };
    let name = obj.metadata.name.as_deref().unwrap_or_default();
    match api.patch(name, &pp, &Patch::Merge(patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.conflict() => Err(ReconcileError::Stale(what.to_string())),
        Err(e) => Err(ReconcileError::api(doing)(e)),
    }
}

/// Writes the pinned workloads (`status.pinnedWorkloads`, WorkloadsPinned)
/// when they differ from what the status holds, and posts a Warning Event
/// for each one not listed before, on the RandomSecret and on the workload:
/// once per rollback, not once per reconcile.
async fn report_pinned(
    rs: &Subject,
    v: &Version,
    mut pins: Vec<Pin>,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    pins.sort_by(|a, b| a.listed.cmp(&b.listed));
    pins.truncate(status::PINNED_LISTED);
    let list: Vec<PinnedWorkload> = pins.iter().map(|p| p.listed.clone()).collect();
    let generation = Some(rs.generation);
    let wanted = previous::pinned_fingerprint(&list, generation);
    if wanted == rs.status.pinned() {
        return Ok(());
    }
    // Read what is stored (the cache keeps a fingerprint only): the
    // transition time, and which workloads were reported already.
    let api: Api<RandomSecretObject> = Api::namespaced(ctx.client.clone(), rs.key.ns());
    let stored = super::report::stored_status(&api, rs).await?;
    if Previous::of(stored.as_ref()).pinned() == wanted {
        return Ok(()); // The cache has not seen our last write yet.
    }
    let stored_condition = stored
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == WORKLOADS_PINNED));
    let status = if list.is_empty() {
        // Applying nothing removes what this manager wrote.
        json!({})
    } else {
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let message = pinned_message(&rs.key.name, &v.secret_name, &list);
        let condition = status::pinned_condition(&message, generation, stored_condition, &now);
        json!({"conditions": [condition], "pinnedWorkloads": list})
    };
    // A newer spec shown in the response is the version's writer's to act on.
    super::report::apply_status(
        rs,
        &api,
        STATUS_MANAGER,
        status,
        "writing the pinned workloads to the status",
        ctx,
    )
    .await?;
    let before = stored.map(|s| s.pinned_workloads).unwrap_or_default();
    for p in pins.iter().filter(|p| !before.contains(&p.listed)) {
        let PinnedWorkload {
            kind,
            name,
            secret_name,
        } = &p.listed;
        let hint = unpin_hint(&rs.key.name, rs.key.ns(), p.kind, name);
        warn!(randomsecret = %rs.key, workload = %format!("{kind} {name}"), secret = %secret_name, "tracking workload rolled back to an older version; left there");
        ctx.events.publish(
            rs.object_reference(),
            EventType::Warning,
            "WorkloadPinned",
            "TrackVersion",
            format!(
                "{kind} {name} was rolled back to Secret {secret_name} after tracking had pointed it at {}: it is left there; {hint}",
                v.secret_name
            ),
        );
        ctx.events.publish(
            ObjectReference {
                api_version: Some(p.kind.api_version().into()),
                kind: Some(kind.clone()),
                name: Some(name.clone()),
                namespace: Some(rs.key.ns().to_string()),
                uid: p.uid.clone(),
                ..Default::default()
            },
            EventType::Warning,
            "WorkloadPinned",
            "TrackVersion",
            format!(
                "Rolled back to Secret {secret_name}, an older version of RandomSecret {}, after tracking had pointed it at {}: it is left there; {hint}",
                rs.key.name, v.secret_name
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(generation: i64, status: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": generation},
            "spec": {}, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_workload_rolls_until_its_controller_observes_its_latest_template() {
        assert!(rolling(&workload(3, json!({"observedGeneration": 2}))));
        assert!(rolling(&workload(1, json!({}))), "never observed yet");
        assert!(!rolling(&workload(3, json!({"observedGeneration": 3}))));
        // Argo Rollouts writes it as a string.
        assert!(rolling(&workload(3, json!({"observedGeneration": "2"}))));
        assert!(!rolling(&workload(3, json!({"observedGeneration": "3"}))));
    }
}
