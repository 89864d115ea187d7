//! Tracking mode: points the templates of workloads annotated
//! `randomsecret.io/track: <this RandomSecret>` at the current version.
//!
//! Only names that are this RandomSecret's own are rewritten: its versions
//! (proven ours, or recorded in its status) and its base name while no
//! Secret has that name (a placeholder; the controller never creates it).
//! Otherwise whoever can edit `spec.secretName` could point a tracked
//! workload's other Secret references (a TLS certificate, say) at a version.

use super::{Context, MANAGER, ReconcileError, Subject};
use crate::proof::Proof;
use crate::runtime::events::EventType;
use crate::tracking::refers_to;
use crate::version::Version;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::collections::HashSet;
use tracing::info;

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
    let observed = obj
        .data
        .pointer("/status/observedGeneration")
        .and_then(|g| g.as_i64());
    observed.is_none() || observed < obj.metadata.generation
}

/// Points the tracking workloads at the current version. Returns whether
/// one of them is rolling onto a template change (pointed now, or one its
/// controller has not acted on yet): then the version it was pointed at
/// before may be referenced by a ReplicaSet the index does not show yet, so
/// retention keeps every superseded version and looks again shortly.
pub async fn retarget(rs: &Subject, v: &Version, ctx: &Context) -> Result<bool, ReconcileError> {
    let workloads = ctx.caches.tracking.of(&rs.key);
    if workloads.is_empty() {
        return Ok(false);
    }
    let mut any_rolling = false;
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
        any_rolling |= rolling(&obj);
        let Some(mut pod_spec) = obj.data.pointer("/spec/template/spec").cloned() else {
            continue;
        };
        let accepts = |name: &str| own.accepts(rs, name);
        if crate::tracking::retarget(&mut pod_spec, &accepts, &v.secret_name) == 0 {
            continue;
        }
        // resourceVersion: an optimistic update; a concurrent change means a retry.
        let patch = json!({"metadata": {"resourceVersion": obj.metadata.resource_version}, "spec": {"template": {"spec": pod_spec}}});
        let pp = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..Default::default()
        };
        ctx.may_write()?;
        match api.patch(&w.name, &pp, &Patch::Merge(patch)).await {
            Ok(_) => {}
            // Changed since the read (its controller updated its status, say):
            // read and rewrite it again.
            Err(kube::Error::Api(s)) if s.code == 409 => return Err(ReconcileError::Stale(what)),
            Err(e) => {
                return Err(ReconcileError::api(format!(
                    "pointing {what} at Secret {}",
                    v.secret_name
                ))(e));
            }
        }
        any_rolling = true;
        info!(randomsecret = %rs.key, workload = %what, secret = %v.secret_name, "pointed tracking workload at the current version");
        let note = format!("Pointed {what} at Secret {}", v.secret_name);
        ctx.events.publish(
            rs.object_reference(),
            EventType::Normal,
            "WorkloadUpdated",
            "TrackVersion",
            note,
        );
    }
    Ok(any_rolling)
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
    }
}
