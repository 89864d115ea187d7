//! A RandomSecret moved into this replica's shard (relabelled,
//! `crate::shard`): its versions still carry the shard labels they were
//! made with, so this shard's Secret watch does not show them. Before
//! anything is decided on them, they are found by name (one LIST, only
//! when the status lists a live version the cache lacks), and each that
//! is proven a version of this RandomSecret is relabelled into the shard
//! (a conditional metadata patch, whose answer goes to the cache).
//!
//! Only once the apiserver confirms that the RandomSecret is this shard's
//! (one GET, only when something is to be relabelled): the shard it left
//! may still hold it in its cache for a moment, and must not pull its
//! versions back. Such a stale shard stops its reconcile there (a quiet
//! conflict, retried until its watch shows the move). It deletes nothing
//! for a RandomSecret it no longer sees (`protection::orphans` only lets go
//! of versions already being deleted that nothing references).
//!
//! The shard it left also hands its versions on ([`hand_off`]) as soon as
//! its watch shows the RandomSecret gone while the apiserver still has it
//! under other labels: a version it made in the moment of the move, after
//! the new shard looked, reaches the new shard that way.

use super::{Context, ReconcileError, Subject};
use crate::api::{LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, RandomSecret};
use crate::cache::Uid;
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
    let moving: Vec<(&ObjectMeta, serde_json::Value)> = listed
        .items
        .iter()
        .filter_map(|s| Some((&s.metadata, patch(rs, &s.metadata, ctx)?)))
        .collect();
    if moving.is_empty() {
        return Ok(0);
    }
    confirm(rs, ctx).await?;
    for (meta, patch) in &moving {
        let name = meta.name.as_deref().unwrap_or_default();
        super::patch_version(&api, &rs.key.sibling(name), patch.clone(), ctx).await?;
    }
    info!(randomsecret = %rs.key, versions = moving.len(), "handed over from another shard: its versions now carry this shard's labels");
    Ok(moving.len())
}

/// Relabels the version Secret `meta` (read from the apiserver) into the
/// shard, if it is a version of `rs` labelled for another shard; returns
/// whether it did.
pub async fn relabel(
    rs: &Subject,
    meta: &ObjectMeta,
    api: &Api<Secret>,
    ctx: &Context,
) -> Result<bool, ReconcileError> {
    let Some(patch) = patch(rs, meta, ctx) else {
        return Ok(false);
    };
    confirm(rs, ctx).await?;
    let name = meta.name.as_deref().unwrap_or_default();
    super::patch_version(api, &rs.key.sibling(name), patch, ctx).await?;
    Ok(true)
}

/// The patch that brings version Secret `meta` into the shard: None
/// unless this replica is sharded, `meta` is ours and a version of `rs`
/// (its proof binds the namespace, the name and the RandomSecret's name
/// label; not its owners: a retained version may be owned by its holders
/// alone), and it carries other shard labels than `rs`. Conditional on
/// its resourceVersion.
fn patch(rs: &Subject, meta: &ObjectMeta, ctx: &Context) -> Option<serde_json::Value> {
    let shard = ctx.shard.as_ref()?;
    let version = ctx.caches.secrets.read(meta)?;
    if version.proof != Proof::Valid || version.randomsecret.as_deref() != Some(&*rs.key.name) {
        return None;
    }
    let mut patch = shard.relabel(meta.labels.as_ref(), &rs.shard)?;
    patch["metadata"]["resourceVersion"] = meta.resource_version.clone().into();
    Some(patch)
}

/// The apiserver's word that `rs` is this shard's, with the shard labels
/// the cache holds; else a quiet conflict (the watch will show the move).
async fn confirm(rs: &Subject, ctx: &Context) -> Result<(), ReconcileError> {
    let Some(shard) = &ctx.shard else {
        return Ok(());
    };
    let ours = labelled_now(&rs.key, shard, ctx)
        .await?
        .is_some_and(|(uid, labels)| {
            uid == Some(rs.uid) && labels == rs.shard && shard.matches(&labels)
        });
    if ours {
        Ok(())
    } else {
        Err(ReconcileError::Stale(format!(
            "RandomSecret {} (moved to another shard)",
            rs.key.name
        )))
    }
}

/// With a shard: `key` left this shard's watch. If the apiserver still has
/// it (not deleted: relabelled into another shard), the versions this
/// shard holds of it get its new shard labels, so that the shard it moved
/// to sees them all; returns how many.
pub async fn hand_off(key: &crate::cache::Key, ctx: &Context) -> Result<usize, ReconcileError> {
    let Some(shard) = &ctx.shard else {
        return Ok(0);
    };
    let held = ctx.caches.secrets.versions_of(key);
    if held.is_empty() {
        return Ok(0);
    }
    let Some((_, labels)) = labelled_now(key, shard, ctx).await? else {
        return Ok(0); // deleted: its versions go as a deleted one's do
    };
    if shard.matches(&labels) {
        return Ok(0); // still ours: the watch lags
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), key.ns());
    let relabelled = shard.labels_patch(&labels);
    let mut moved = 0;
    for (name, v) in held {
        if v.proof != Proof::Valid {
            continue;
        }
        let mut patch = relabelled.clone();
        patch["metadata"]["resourceVersion"] = v.resource_version.to_string().into();
        let version = key.sibling(&name);
        super::patch_version(&secrets, &version, patch, ctx).await?;
        // No longer this shard's: out of the cache now, not when the watch
        // says so, or each event until then would hand it off again.
        ctx.caches.secrets.forget(&version);
        moved += 1;
    }
    info!(randomsecret = %key, versions = moved, "moved to another shard: its versions here now carry its new shard labels");
    Ok(moved)
}

/// The RandomSecret `key` as the apiserver has it now (one GET of its
/// metadata): its uid and its shard labels; None when it is gone.
async fn labelled_now(
    key: &crate::cache::Key,
    shard: &crate::shard::Shard,
    ctx: &Context,
) -> Result<Option<(Option<Uid>, crate::shard::ShardLabels)>, ReconcileError> {
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), key.ns());
    let fresh = api
        .get_metadata_opt(&key.name)
        .await
        .map_err(ReconcileError::api(format!(
            "reading RandomSecret {} (its shard)",
            key.name
        )))?;
    Ok(fresh.map(|m| {
        let uid = m.metadata.uid.as_deref().and_then(Uid::parse);
        (uid, shard.labels_of(m.metadata.labels.as_ref()))
    }))
}
