//! Carries out the retention plan: owner references on every version, and
//! deletion of released ones. Returns the versions for the status.

use super::retention::{self, Change, Observed};
use super::status::{RELEASED_KEPT, Versions};
use super::{Context, MANAGER, ReconcileError, Subject, protection, proven};
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
        let deletion = cached.deletion;
        if p.change == Change::Delete {
            if release(&api, rs, &p.name, cached, ctx).await? {
                released.push(p.name.clone());
            }
            continue;
        }
        let want = protection::wanted(ctx.protect, false);
        let finalizer = protection::change(want, deletion);
        if p.change == Change::SetOwners || finalizer.is_some() {
            // resourceVersion: an optimistic, conflict-checked update of
            // the owners (and our finalizer) only.
            let mut meta = json!({"resourceVersion": &*cached.resource_version});
            if p.change == Change::SetOwners {
                meta["ownerReferences"] = json!(p.owners);
            }
            if let Some(protect) = finalizer {
                meta["finalizers"] =
                    protection::patched(&api, &p.name, cached, protect, ctx).await?;
            }
            patch(&api, rs, &p.name, json!({"metadata": meta}), ctx).await?;
        }
        if deletion.deleting() && deletion.protected() && !rs.status.deleting(&p.name) {
            held(rs, &p, ctx);
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
            deleting: deletion.deleting(),
        });
    }
    Ok(Versions {
        live,
        released: remember_released(released, &rs.status.released, current_name),
    })
}

/// A metadata merge patch of a version kept (owners, finalizer), conditional
/// on the resourceVersion planned on; its answer goes to the cache.
async fn patch(
    api: &Api<Secret>,
    rs: &Subject,
    name: &str,
    patch: serde_json::Value,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    let pp = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..Default::default()
    };
    ctx.may_write()?;
    match api.patch_metadata(name, &pp, &Patch::Merge(patch)).await {
        Ok(patched) => {
            ctx.caches.secrets.write_through(&patched.metadata, false);
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.conflict() => {
            Err(super::stale(api, &rs.key.sibling(name), ctx).await)
        }
        Err(e) => Err(ReconcileError::api(format!(
            "setting the owners of Secret {name}"
        ))(e)),
    }
}

/// Releases version `name`: deletes it (only the state planned on, so a
/// holder added since makes it a conflict) and removes our finalizer; or,
/// when it was deleted earlier and held until now, removes the finalizer
/// alone. Returns whether it was released now (gone already is not).
async fn release(
    api: &Api<Secret>,
    rs: &Subject,
    name: &str,
    cached: &Cached,
    ctx: &Context,
) -> Result<bool, ReconcileError> {
    let note = if cached.deletion.deleting() {
        if cached.deletion.protected() {
            protection::unprotect(api, &rs.key.sibling(name), cached, ctx).await?;
        }
        format!("Released Secret {name}, deleted earlier: nothing holds it any more")
    } else {
        let dp = planned_delete(cached.uid.to_string(), cached.resource_version.to_string());
        ctx.may_write()?;
        match api.delete(name, &dp).await {
            Ok(deleted) => {
                // Terminating: our finalizer (or another's) holds it.
                if let Some(terminating) = deleted.left() {
                    protection::release(api, &terminating.metadata, ctx).await?;
                }
            }
            // Gone already (another replica, a person): nothing to release.
            Err(kube::Error::Api(s)) if s.not_found() => {
                ctx.caches.secrets.forget(&rs.key.sibling(name));
                return Ok(false);
            }
            // The uid or resourceVersion precondition failed.
            Err(kube::Error::Api(s)) if s.conflict() => {
                return Err(super::stale(api, &rs.key.sibling(name), ctx).await);
            }
            Err(e) => {
                return Err(ReconcileError::api(format!(
                    "deleting released Secret {name}"
                ))(e));
            }
        }
        format!("Deleted Secret {name}: superseded, unreferenced and beyond spec.history")
    };
    ctx.caches.secrets.forget(&rs.key.sibling(name));
    ctx.metrics.versions_released.inc();
    info!(randomsecret = %rs.key, secret = %name, "released version");
    ctx.events.publish(
        rs.object_reference(),
        EventType::Normal,
        "VersionReleased",
        "ReleaseVersion",
        note,
    );
    Ok(true)
}

/// The Warning Event for a version deleted while held, once (the status
/// then shows it as `deleting`): who holds it, and that it stays readable.
fn held(rs: &Subject, p: &retention::Planned, ctx: &Context) {
    let mut by: Vec<String> = Vec::new();
    match p.state {
        crate::api::VersionState::Current => {
            by.push("this RandomSecret (its current version)".into())
        }
        _ if p.referenced_by.is_empty() => {
            by.push("this RandomSecret (within spec.history)".into())
        }
        _ => {}
    }
    by.extend(p.referenced_by.iter().cloned());
    let note = format!(
        "Secret {} was deleted, but {} still hold it: it stays readable (Terminating) and goes once nothing holds it",
        p.name,
        by.join(", ")
    );
    ctx.events.publish(
        rs.object_reference(),
        EventType::Warning,
        "DeletionHeld",
        "ProtectVersion",
        note,
    );
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
