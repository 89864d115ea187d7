//! Whether a Secret labelled as one of our versions really is one, before it
//! is adopted, patched or deleted (`crate::proof`).
//!
//! The cache checks each Secret's proof against its metadata. That is enough
//! for a Secret this process created or read whole, and for the very object
//! the status records as live (same name, same uid). Any other Secret with a
//! proof is read whole once, so that a proof copied from another Secret (a
//! released version's, say) onto different values is caught. A Secret
//! without a proof that the status records as live was made by a release
//! before proofs existed: it is read, and signed if it is immutable.

use super::{Context, MANAGER, ReconcileError, Subject};
use crate::cache::secrets::Version as Cached;
use crate::proof::{ANNOTATION_PROOF, Proof};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tracing::info;

/// The Secret `name` of `rs`, as cached, if it is proven ours; `None` if it
/// is not (a foreign Secret: never touched).
pub async fn ours(
    rs: &Subject,
    name: &str,
    cached: Cached,
    ctx: &Context,
) -> Result<Option<Cached>, ReconcileError> {
    let recorded = rs.status.recorded(name, &cached.uid.to_string());
    let legacy = recorded
        || rs
            .status
            .recorded_before_uids(name, cached.created_time().as_ref());
    match cached.proof {
        Proof::Valid if cached.verified || recorded => Ok(Some(cached)),
        Proof::Valid => Ok(read(rs, name, ctx)
            .await?
            .and_then(|s| found(&s, ctx))
            .filter(|c| c.proof == Proof::Valid)),
        // Checked again against what the read returns.
        Proof::Missing if legacy => sign_legacy(rs, name, ctx).await,
        Proof::Missing | Proof::Invalid => Ok(None),
    }
}

/// A Secret read whole from the apiserver: its metadata as cached, with the
/// proof checked against the whole Secret. The cache entry is marked
/// verified only if it is this very object (the watch may already show a
/// newer one); nothing is inserted from a read.
pub fn found(secret: &Secret, ctx: &Context) -> Option<Cached> {
    let mut cached = ctx.caches.secrets.read(&secret.metadata)?;
    cached.proof = ctx.caches.secrets.key().check_secret(secret);
    if cached.proof == Proof::Valid {
        ctx.caches.secrets.mark_verified(&secret.metadata);
        cached.verified = true;
    }
    Some(cached)
}

async fn read(rs: &Subject, name: &str, ctx: &Context) -> Result<Option<Secret>, ReconcileError> {
    Api::<Secret>::namespaced(ctx.client.clone(), rs.key.ns())
        .get_opt(name)
        .await
        .map_err(ReconcileError::api(format!("reading Secret {name}")))
}

/// Signs a version made before proofs existed, if the status records that
/// very object as live (by uid, or, as a release before uids wrote it, by
/// its creation time to the second) and it is immutable and labelled ours:
/// a metadata patch, conditional on the resourceVersion read (immutable
/// Secrets take metadata changes). Anything else stays unproven.
async fn sign_legacy(
    rs: &Subject,
    name: &str,
    ctx: &Context,
) -> Result<Option<Cached>, ReconcileError> {
    let Some(secret) = read(rs, name, ctx).await? else {
        return Ok(None);
    };
    let meta = &secret.metadata;
    let Some(read_as) = ctx.caches.secrets.read(meta) else {
        return Ok(None);
    };
    let recorded = rs.status.recorded(name, &read_as.uid.to_string())
        || rs
            .status
            .recorded_before_uids(name, read_as.created_time().as_ref());
    if !recorded
        || read_as.proof != Proof::Missing
        || !read_as.managed
        || secret.immutable != Some(true)
    {
        return Ok(None);
    }
    let proof = ctx.caches.secrets.key().sign(&secret);
    let patch = json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "annotations": {ANNOTATION_PROOF: proof},
    }});
    let pp = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..Default::default()
    };
    ctx.may_write()?;
    let patched = Api::<Secret>::namespaced(ctx.client.clone(), rs.key.ns())
        .patch_metadata(name, &pp, &Patch::Merge(patch))
        .await
        .map_err(ReconcileError::api(format!("signing Secret {name}")))?;
    info!(randomsecret = %rs.key, secret = %name, "signed a version made before proofs of creation");
    ctx.caches.secrets.write_through(&patched.metadata, true);
    Ok(ctx.caches.secrets.read(&patched.metadata).map(|mut c| {
        c.verified = true;
        c
    }))
}
