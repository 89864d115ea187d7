//! Carries out the retention plan: owner references on every version, and
//! deletion of released ones. Returns the versions for the status.

use super::retention::{self, Change, Observed};
use super::status::{RELEASED_KEPT, Versions};
use super::{Context, MANAGER, ReconcileError, Subject, proven};
use crate::api::VersionStatus;
use crate::cache::secrets::Version as Cached;
use crate::runtime::events::EventType;
use crate::runtime::status::Answer as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;
use tracing::info;

/// Deletes only the state a retention plan was made on: another
/// incarnation, or an owner added since (a new holder), makes it a
/// conflict, and the next pass sees why. Upstream and downstream alike.
pub fn planned_delete(uid: String, resource_version: String) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: Some(resource_version),
        }),
        ..Default::default()
    }
}

fn observed(name: &str, v: &Cached) -> Observed {
    Observed {
        name: name.to_string(),
        hash: v.hash.as_deref().unwrap_or_default().to_string(),
        created: v
            .created()
            .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
        owners: v.owner_references(),
    }
}

/// Applies the plan for every version of `rs` (`current` as just ensured).
/// With `hold` (a tracking workload is rolling) nothing is released.
pub async fn apply(
    rs: &Subject,
    current_name: &str,
    current: &Cached,
    hold: bool,
    ctx: &Context,
) -> Result<Versions, ReconcileError> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), rs.key.ns());
    let mut versions: Vec<(String, Cached)> = vec![(current_name.to_string(), current.clone())];
    for (name, v) in ctx.caches.secrets.versions_of(&rs.key) {
        if &*name == current_name {
            continue;
        }
        match proven::ours(rs, &name, v, ctx).await? {
            Some(v) => versions.push((name.to_string(), v)),
            // Labelled as ours without proof: never patched or deleted.
            None => ctx.events.publish(
                rs.object_reference(),
                EventType::Warning,
                "UnprovenSecret",
                "RetainVersions",
                format!(
                    "Secret {name} is labelled as a version of this RandomSecret but does not prove that randomsecret created it: it is not treated as a version and is left untouched; find out who created it"
                ),
            ),
        }
    }
    let obs: Vec<Observed> = versions.iter().map(|(n, v)| observed(n, v)).collect();
    // While a watch is interrupted a version may look unreferenced only
    // because its ReplicaSet came during the gap: every superseded version is
    // kept (as if within history) until the caches are current again, when
    // every RandomSecret is reconciled (`cache::interruptions`). Likewise
    // while a tracking workload rolls onto a new template (`hold`).
    let history = if ctx.caches.references_current() && !hold {
        rs.spec.history.unwrap_or(0).max(0) as usize
    } else {
        usize::MAX
    };
    let planned = retention::plan(
        current_name,
        &rs.owner_reference(),
        &obs,
        |n| ctx.caches.holders.of(&rs.key.sibling(n)),
        history,
    );
    let mut live = Vec::new();
    let mut released = Vec::new();
    for p in planned {
        let cached = &versions
            .iter()
            .find(|(n, _)| *n == p.name)
            .expect("planned from observed")
            .1;
        match p.change {
            Change::None => {}
            Change::SetOwners => {
                // resourceVersion: an optimistic, conflict-checked update of the owners only.
                let patch = json!({"metadata": {"resourceVersion": &*cached.resource_version, "ownerReferences": p.owners}});
                let pp = PatchParams {
                    field_manager: Some(MANAGER.into()),
                    ..Default::default()
                };
                ctx.may_write()?;
                let patched = match api.patch_metadata(&p.name, &pp, &Patch::Merge(patch)).await {
                    Ok(patched) => patched,
                    Err(kube::Error::Api(s)) if s.conflict() => {
                        return Err(stale(&api, rs, &p.name, ctx).await);
                    }
                    Err(e) => {
                        return Err(ReconcileError::api(format!(
                            "setting the owners of Secret {}",
                            p.name
                        ))(e));
                    }
                };
                ctx.caches.secrets.write_through(&patched.metadata, false);
            }
            Change::Delete => {
                let dp =
                    planned_delete(cached.uid.to_string(), cached.resource_version.to_string());
                ctx.may_write()?;
                match api.delete(&p.name, &dp).await {
                    Ok(_) => {
                        ctx.caches.secrets.forget(&rs.key.sibling(&p.name));
                        ctx.metrics.versions_released.inc();
                        info!(randomsecret = %rs.key, secret = %p.name, "released version");
                        let note = format!(
                            "Deleted Secret {}: superseded, unreferenced and beyond spec.history",
                            p.name
                        );
                        ctx.events.publish(
                            rs.object_reference(),
                            EventType::Normal,
                            "VersionReleased",
                            "ReleaseVersion",
                            note,
                        );
                        released.push(p.name.clone());
                    }
                    // Gone already (another replica, a person): nothing to release.
                    Err(kube::Error::Api(s)) if s.not_found() => {}
                    // The uid or resourceVersion precondition failed.
                    Err(kube::Error::Api(s)) if s.conflict() => {
                        return Err(stale(&api, rs, &p.name, ctx).await);
                    }
                    Err(e) => {
                        return Err(ReconcileError::api(format!(
                            "deleting released Secret {}",
                            p.name
                        ))(e));
                    }
                }
                continue;
            }
        }
        live.push(VersionStatus {
            name: p.name,
            hash: p.hash,
            // As stored (whole seconds), not the precise time used for ordering.
            created: cached.created_time(),
            uid: Some(cached.uid.to_string()),
            state: p.state,
            referenced_by: p.referenced_by,
            rotated_keys: cached.record.rotated_keys(),
        });
    }
    Ok(Versions {
        live,
        released: remember_released(released, &rs.status.released, current_name),
    })
}

/// After a conditional write on Secret `name` lost a race (409): reads it
/// again into the cache (over the same object only, if newer), so the
/// reconcile that follows plans on what is there now (the garbage collector
/// removing a deleted holder from the owners, say).
async fn stale(api: &Api<Secret>, rs: &Subject, name: &str, ctx: &Context) -> ReconcileError {
    match api.get_metadata_opt(name).await {
        Ok(Some(fresh)) => ctx.caches.secrets.refresh(&fresh.metadata),
        Ok(None) => ctx.caches.secrets.forget(&rs.key.sibling(name)),
        Err(e) => return ReconcileError::api(format!("reading Secret {name} again"))(e),
    }
    ReconcileError::Stale(format!("Secret {name}"))
}

/// Released names for the status, newest first: those released now, then
/// those the status already lists; never the current name; at most `RELEASED_KEPT`.
pub fn remember_released(
    now: Vec<String>,
    listed: &[crate::cache::Name],
    current: &str,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in now.into_iter().chain(listed.iter().map(|n| n.to_string())) {
        if n != current && !out.contains(&n) {
            out.push(n);
        }
    }
    out.truncate(RELEASED_KEPT);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_names_are_newest_first_unique_bounded_and_never_current() {
        let listed: Vec<crate::cache::Name> = vec!["a-1".into(), "a-2".into()];
        assert_eq!(
            remember_released(vec!["a-3".into()], &listed, "a-2"),
            ["a-3", "a-1"]
        );
        let many: Vec<crate::cache::Name> = (0..20).map(|i| format!("a-{i}").into()).collect();
        assert_eq!(remember_released(vec![], &many, "x").len(), RELEASED_KEPT);
        assert_eq!(
            remember_released(vec!["a-1".into()], &listed, "x"),
            ["a-1", "a-2"]
        );
    }
}
