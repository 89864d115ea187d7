//! Deletion protection: a version cannot vanish while something holds it.
//!
//! Every version Secret carries the finalizer `randomsecret.io/in-use`
//! (set in its create body, so it costs no request) while the retention
//! plan keeps it: current, within `spec.history`, or referenced. A delete of
//! a held version, by a person or by the garbage collector acting on a stale
//! belief, only marks it Terminating: it stays readable, the status says
//! `deleting`, a Warning Event names who holds it, and it goes when
//! retention releases it, which removes the finalizer. A version whose
//! RandomSecret is gone is released here once nothing references it
//! ([`orphans`]), so a deleted RandomSecret, a terminating namespace and a
//! controller back after a long absence all end with the finalizers gone.
//! `--deletion-protection=false` turns it off (and removes the finalizers
//! as versions are reconciled); `randomsecret release-finalizers` removes
//! them all, for an uninstall.
//!
//! The decisions are pure ([`wanted`], [`change`]); the patches below are
//! conditional on the resourceVersion the decision was made on, and keep
//! every other finalizer.

use super::{Context, ReconcileError};
use crate::api::FINALIZER_IN_USE;
use crate::cache::Key;
use crate::cache::secrets::{Deletion, Version as Cached};
use crate::proof::Proof;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use serde_json::{Value, json};
use tracing::info;

/// Whether a version should hold the finalizer: protection is on and the
/// retention plan keeps it.
pub fn wanted(enabled: bool, released: bool) -> bool {
    enabled && !released
}

/// Whether to add (`Some(true)`) or remove (`Some(false)`) our finalizer,
/// or leave it (`None`). A Terminating object takes no new finalizer, so
/// a version deleted while unprotected is not protected afterwards.
pub fn change(want: bool, d: Deletion) -> Option<bool> {
    if want == d.protected() || (want && d.deleting()) {
        None
    } else {
        Some(want)
    }
}

/// The `finalizers` of a merge patch that adds (`protect`) or removes ours
/// and keeps every other one of `present` (`null` when none is left).
pub fn finalizers(present: &[String], protect: bool) -> Value {
    let mut out: Vec<&str> = present
        .iter()
        .map(String::as_str)
        .filter(|f| *f != FINALIZER_IN_USE)
        .collect();
    if protect {
        out.push(FINALIZER_IN_USE);
    }
    if out.is_empty() {
        Value::Null
    } else {
        json!(out)
    }
}

/// The `finalizers` of a patch of `cached` (conditional on its cached
/// resourceVersion) that sets ours to `protect`. The cache knows only
/// whether there are others; when there are (rare), their names are read,
/// and a Secret changed since the cache saw it is a lost race.
pub async fn patched(
    api: &Api<Secret>,
    name: &str,
    cached: &Cached,
    protect: bool,
    ctx: &Context,
) -> Result<Value, ReconcileError> {
    if !cached.deletion.others() {
        return Ok(finalizers(&[], protect));
    }
    let meta = api
        .get_metadata(name)
        .await
        .map_err(ReconcileError::api(format!("reading Secret {name}")))?
        .metadata;
    if meta.resource_version.as_deref() != Some(&*cached.resource_version) {
        ctx.caches.secrets.refresh(&meta);
        return Err(ReconcileError::Stale(format!("Secret {name}")));
    }
    Ok(finalizers(
        meta.finalizers.as_deref().unwrap_or_default(),
        protect,
    ))
}

/// Removes our finalizer from a Secret whose whole metadata is at hand (a
/// delete's answer): conditional on that resourceVersion. Gone or changed
/// since is no error: the next pass sees it.
pub async fn release(
    api: &Api<Secret>,
    meta: &ObjectMeta,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    let (namespace, name) = (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    );
    if !meta
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER_IN_USE)
    {
        return Ok(());
    }
    let patch = json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "finalizers": finalizers(meta.finalizers.as_deref().unwrap_or_default(), false),
    }});
    super::patch_version(api, &Key::new(namespace, name), patch, ctx).await
}

/// Removes our finalizer from `cached` (as the cache shows it).
pub async fn unprotect(
    api: &Api<Secret>,
    secret: &Key,
    cached: &Cached,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    let patch = json!({"metadata": {
        "resourceVersion": &*cached.resource_version,
        "finalizers": patched(api, &secret.name, cached, false, ctx).await?,
    }});
    super::patch_version(api, secret, patch, ctx).await
}

/// Whether a version of a RandomSecret that is gone may be let go: it is
/// being deleted, holds our finalizer, proves we made it (from its
/// metadata: only our own finalizer is ever removed), and nothing
/// references it. Pure.
pub fn orphan_released(v: &Cached, referenced: bool) -> bool {
    v.deletion.deleting() && v.deletion.protected() && v.proof == Proof::Valid && !referenced
}

/// For a RandomSecret that is gone (or being deleted): removes our
/// finalizer from each of its versions being deleted that nothing
/// references. One still referenced stays until its holders go (each
/// holder's change reconciles it again). While a watch is interrupted,
/// nothing is let go: a reference may be missing from the index.
pub async fn orphans(key: &Key, ctx: &Context) -> Result<usize, ReconcileError> {
    if !ctx.caches.references_current() {
        return Ok(0);
    }
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), key.ns());
    let mut released = 0;
    for (name, v) in ctx.caches.secrets.versions_of(key) {
        let referenced = !ctx.caches.holders.of(&key.sibling(&name)).is_empty();
        if !orphan_released(&v, referenced) {
            continue;
        }
        unprotect(&api, &key.sibling(&name), &v, ctx).await?;
        ctx.metrics.versions_released.inc();
        info!(randomsecret = %key, secret = %name, "released a version of a deleted RandomSecret");
        released += 1;
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deletion(finalizers: &[&str], deleting: bool) -> Deletion {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "finalizers": finalizers,
            "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z"),
        }))
        .unwrap();
        Deletion::of(&meta)
    }

    #[test]
    fn the_finalizer_follows_the_plan_but_a_terminating_object_takes_none() {
        let ours = [FINALIZER_IN_USE];
        // Kept and protected, or released and not: nothing to do.
        assert_eq!(change(true, deletion(&ours, false)), None);
        assert_eq!(change(false, deletion(&[], false)), None);
        // Kept, made before protection: add. Released or turned off: remove.
        assert_eq!(change(true, deletion(&[], false)), Some(true));
        assert_eq!(change(true, deletion(&["other/x"], false)), Some(true));
        assert_eq!(change(false, deletion(&ours, false)), Some(false));
        // Deleted and held: keep it. Deleted and released: let it go.
        assert_eq!(change(true, deletion(&ours, true)), None);
        assert_eq!(change(false, deletion(&ours, true)), Some(false));
        // Deleted while unprotected: an object being deleted takes no finalizer.
        assert_eq!(change(true, deletion(&[], true)), None);
        assert!(wanted(true, false));
        assert!(!wanted(true, true));
        assert!(!wanted(false, false));
    }

    #[test]
    fn a_patch_keeps_every_other_finalizer() {
        let present = vec!["a/b".to_string(), FINALIZER_IN_USE.to_string()];
        assert_eq!(finalizers(&present, false), json!(["a/b"]));
        assert_eq!(finalizers(&present, true), json!(["a/b", FINALIZER_IN_USE]));
        assert_eq!(finalizers(&[], true), json!([FINALIZER_IN_USE]));
        assert_eq!(
            finalizers(&[FINALIZER_IN_USE.to_string()], false),
            Value::Null
        );
        assert_eq!(finalizers(&[], false), Value::Null);
    }

    #[test]
    fn deletion_reads_ours_others_and_the_timestamp() {
        let d = deletion(&[FINALIZER_IN_USE, "kubernetes.io/x"], true);
        assert!(d.protected() && d.others() && d.deleting());
        let d = deletion(&[], false);
        assert!(!d.protected() && !d.others() && !d.deleting());
    }
}
