//! A RandomSecret moved into this replica's shard (relabelled,
//! `crate::shard`): its versions still carry the shard labels they were
//! made with, so this shard's Secret watch does not show them. Before
//! anything is decided on them, they are found by name (one LIST, only
//! when the status lists a live version the cache lacks), and each that
//! is proven a version of this RandomSecret is relabelled into the shard (a conditional metadata patch, whose answer goes to the cache).
//! The shard it left sees them go from its own watch; it deletes nothing
//! for a RandomSecret it no longer sees (`protection::orphans` only lets go
//! of versions already being deleted that nothing references).

use super::{Context, ReconcileError, Subject};
use crate::api::{LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY};
use crate::proof::Proof;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::ListParams;
use tracing::info;

/// With a shard: brings into it every version of `rs` out of its sight;
/// returns how many were relabelled.
pub async fn gather(rs: &Subject, ctx: &Context) -> Result<usize, ReconcileError> {
    if ctx.shard.is_none() {
        return Ok(0);
    }
    let held = ctx.caches.secrets.versions_of(&rs.key);
    if !rs.status.lists_beyond(held.iter().map(|(n, _)| &**n)) {
        return Ok(0);
    }
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), rs.key.ns());
    let lp = ListParams::default().labels(&format!(
        "{LABEL_NAME}={},{LABEL_MANAGED_BY}={MANAGED_BY}",
        rs.key.name
    ));
    let listed = api
        .list_metadata(&lp)
        .await
        .map_err(ReconcileError::api(format!(
            "listing the versions of RandomSecret {} (moved into this shard)",
            rs.key.name
        )))?;
    let mut moved = 0;
    for s in &listed.items {
        if relabel(rs, &s.metadata, &api, ctx).await? {
            moved += 1;
        }
    }
    if moved > 0 {
        info!(randomsecret = %rs.key, versions = moved, "handed over from another shard: its versions now carry this shard's labels");
    }
    Ok(moved)
}

/// Relabels the version Secret `meta` (read from the apiserver) into the
/// shard, if it is ours and a version of `rs` (its proof verifies), and
/// labelled for another shard; returns whether it did.
pub async fn relabel(
    rs: &Subject,
    meta: &ObjectMeta,
    api: &Api<Secret>,
    ctx: &Context,
) -> Result<bool, ReconcileError> {
    let Some(shard) = &ctx.shard else {
        return Ok(false);
    };
    let Some(version) = ctx.caches.secrets.read(meta) else {
        return Ok(false);
    };
    // Its proof binds the namespace, the name and the RandomSecret's name
    // label: a version of this RandomSecret. (Not its owners: a retained
    // version may be owned by its holders alone.)
    if version.proof != Proof::Valid || version.randomsecret.as_deref() != Some(&*rs.key.name) {
        return Ok(false);
    }
    let Some(mut patch) = shard.relabel(meta.labels.as_ref(), &rs.shard) else {
        return Ok(false);
    };
    patch["metadata"]["resourceVersion"] = meta.resource_version.clone().into();
    let name = meta.name.as_deref().unwrap_or_default();
    super::patch_version(api, &rs.key.sibling(name), patch, ctx).await?;
    Ok(true)
}
