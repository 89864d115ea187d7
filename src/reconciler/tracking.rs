//! Tracking mode: points the templates of workloads annotated
//! `randomsecret.io/track: <this RandomSecret>` at the current version.

use super::{Context, MANAGER, ReconcileError, Subject};
use crate::runtime::events::EventType;
use crate::version::Version;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;
use tracing::info;

pub async fn retarget(rs: &Subject, v: &Version, ctx: &Context) -> Result<(), ReconcileError> {
    for w in ctx.caches.tracking.of(&rs.key) {
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
        let Some(mut pod_spec) = obj.data.pointer("/spec/template/spec").cloned() else {
            continue;
        };
        if crate::tracking::retarget(&mut pod_spec, &v.base, &v.secret_name) == 0 {
            continue;
        }
        // resourceVersion: an optimistic update; a concurrent change means a retry.
        let patch = json!({"metadata": {"resourceVersion": obj.metadata.resource_version}, "spec": {"template": {"spec": pod_spec}}});
        let pp = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..Default::default()
        };
        api.patch(&w.name, &pp, &Patch::Merge(patch))
            .await
            .map_err(ReconcileError::api(format!(
                "pointing {what} at Secret {}",
                v.secret_name
            )))?;
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
    Ok(())
}
