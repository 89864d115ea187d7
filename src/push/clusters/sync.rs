//! One RandomSecret in one downstream cluster, in three steps:
//!
//! 1. the current version, before anything is written there: proven ours
//!    upstream (the incarnation the cache saw, with its proof of creation),
//!    made for this target (`push::targets`: a target added later waits for
//!    the next version) and within the connection's copy policy, unless its
//!    copy is already there;
//! 2. the anchor (`copy`): created once, or found and proven ours;
//! 3. the current version's copy: created create-only from the upstream
//!    version (read whole, never kept), or found and proven the same values;
//!    a Secret of that name that is not our copy is never touched (and,
//!    proven foreign once, not read whole again until it changes);
//! 4. retention there: the upstream plan (`reconciler::retention`) over the
//!    copies, with the anchor as owner and that cluster's own ReplicaSets,
//!    ControllerRevisions and Pods as holders.
//!
//! A copy lost downstream is copied again with the same values (they come
//! from the upstream version), so no name there ever changes its values.

use super::admit;
use super::copy::{self, Found, Origin};
use super::link::{Downstream, Link};
use super::{ClusterError, Context, report};
use crate::api::RandomSecret;
use crate::api::push::ClusterPush;
use crate::cache::Key;
use crate::push::targets;
use crate::reconciler::retention::{self, Change, Observed};
use crate::runtime::events::EventType;
use crate::runtime::outcome::{Failure, Outcome};
use crate::runtime::runner::Next;
use crate::runtime::status::Answer as _;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;
use tracing::{info, warn};

/// [`sync`], boxed: the work a link's runner is started with
/// ([`super::start_link`]). Named and boxed, so that the future of the read
/// that starts a link does not contain (and need the `Send` proof of) the
/// future of the syncs it starts.
pub fn boxed(key: Key, link: Arc<Link>, ctx: Arc<Context>) -> BoxFuture<'static, Next> {
    Box::pin(sync(key, link, ctx))
}

/// Syncs RandomSecret `key` with the cluster of `link`; never fails:
/// the outcome goes to the status, an Event and the metrics.
pub async fn sync(key: Key, link: Arc<Link>, ctx: Arc<Context>) -> Next {
    if let Some(next) = ctx.standby() {
        return next;
    }
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), key.ns());
    let rs = match api.get_opt(&key.name).await {
        Ok(Some(rs)) => rs,
        Ok(None) => return Next::AwaitChange,
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "cluster push: reading the RandomSecret failed; retrying");
            return Next::Retry;
        }
    };
    let Some(target) = super::targets(&rs)
        .iter()
        .find(|t| t.connection_ref.name == link.name)
        .cloned()
    else {
        // Removed from the spec: forgotten (the dispatcher drops its status).
        link.forget(&key);
        return Next::AwaitChange;
    };
    let deleting = rs.metadata.deletion_timestamp.is_some();
    // The connection as it is now: edited (a new link), deleted, or no
    // longer open to this namespace or target.
    let namespace = report::target_namespace(&target, &key);
    match ctx.links.get(&link.name, key.ns(), &namespace, &ctx).await {
        Ok(now) if !Arc::ptr_eq(&now, &link) => {
            link.forget(&key);
            now.trigger(&key);
            return Next::AwaitChange;
        }
        Ok(_) => {}
        // The dispatcher reports a deletion's connection problems.
        Err(_) if deleting => return Next::AwaitChange,
        Err(e) => {
            link.forget(&key);
            ctx.record(&key, report::failed(&link.name, &target, &key, &e));
            return e.next();
        }
    }
    if deleting {
        return cleanup(&key, &rs, &target, &link, &ctx).await;
    }
    let start = Instant::now();
    let result = step(&key, &rs, &target, &link, &ctx).await;
    ctx.metrics.duration.observe(start.elapsed().as_secs_f64());
    if let Some(next) = ctx.standby() {
        return next;
    }
    ctx.links
        .observed(&ctx, &link.name, result.as_ref().map(drop))
        .await;
    let previous = ctx
        .results
        .lock()
        .expect("results lock")
        .get(&key)
        .and_then(|m| m.get(&link.name))
        .map(|s| s.reason.clone());
    match result {
        Ok(kept) => {
            ctx.record(&key, report::synced(&link.name, &target, &key, kept));
            // The dispatcher's resync brings it back.
            Next::AwaitChange
        }
        Err(ClusterError::Conflict { message: m, .. }) => {
            // A lost race is no news: read again, and say nothing.
            tracing::debug!(randomsecret = %key, connection = %link.name, "cluster push: {m}; again");
            Next::Retry
        }
        Err(e) => {
            ctx.reporter().tell(
                Failure {
                    outcome: &e,
                    subject: &key,
                    connection: Some(&link.name),
                    regarding: crate::push::reference(&rs),
                    action: "PushCluster",
                    what: "failed",
                    message: e.to_string(),
                },
                previous.as_deref(),
            );
            ctx.record(&key, report::failed(&link.name, &target, &key, &e));
            e.next()
        }
    }
}

/// The names of the copies kept in the cluster, current first.
async fn step(
    key: &Key,
    rs: &RandomSecret,
    target: &ClusterPush,
    link: &Arc<Link>,
    ctx: &Arc<Context>,
) -> Result<Vec<String>, ClusterError> {
    let namespace = report::target_namespace(target, key);
    let down = first_listed(link, &namespace, ctx)?;
    let current = crate::push::ready_secret_name(rs).ok_or_else(|| {
        ClusterError::Waiting("waiting for the version to be Ready upstream".into())
    })?;
    let base = rs
        .spec
        .secret_name
        .clone()
        .unwrap_or_else(|| key.name.to_string());
    let here = SyncScope {
        key,
        rs,
        namespace: &namespace,
        down: &down,
        link,
        ctx,
    };
    let upstream = here.version_to_copy(&current, target).await?;
    let anchor = here.ensure_anchor(&base).await?;
    if let Some(upstream) = upstream {
        here.ensure_copy(&current, upstream, &anchor).await?;
    }
    here.retain(&current, &anchor).await
}

/// The watched state of `namespace` once every watch there has listed;
/// before that, why not (a refused or failed list), or Connecting.
fn first_listed(
    link: &Arc<Link>,
    namespace: &str,
    ctx: &Arc<Context>,
) -> Result<Arc<Downstream>, ClusterError> {
    let down = link.namespace(namespace, ctx);
    if down.listed() {
        return Ok(down);
    }
    Err(down.failure().unwrap_or_else(|| {
        ClusterError::Connecting(format!(
            "cluster {}: reading namespace {namespace} for the first time",
            link.name
        ))
    }))
}

/// The RandomSecret is being deleted, and this target's copies go (the
/// dispatcher decided, `deletes_copies`): a last retention pass makes every
/// downstream holder an owner, then the anchor is deleted, so the collector
/// there removes what nothing references. In this cluster's runner, so no
/// sync of the same RandomSecret runs meanwhile.
async fn cleanup(
    key: &Key,
    rs: &RandomSecret,
    target: &ClusterPush,
    link: &Arc<Link>,
    ctx: &Arc<Context>,
) -> Next {
    if ctx.is_cleaned(key, &link.name) {
        return Next::AwaitChange;
    }
    let done = match super::deletes_copies(&ctx.client, rs, target).await {
        Ok(false) => Ok(false),
        Ok(true) => release(key, rs, target, link, ctx).await,
        Err(e) => Err(ClusterError::retry(
            format!(
                "reading the current version upstream: {}",
                crate::push::vault::brief(&e)
            ),
            Some(e),
        )),
    };
    if let Some(next) = ctx.standby() {
        return next;
    }
    match done {
        Ok(found) => {
            info!(randomsecret = %key, connection = %link.name, found, "cluster push: cleanup done (the anchor deleted, if there was one of ours); that cluster's collector removes the copies nothing there references");
            ctx.mark_cleaned(key, &link.name);
            let _ = ctx.dispatches.send(key.clone());
            Next::AwaitChange
        }
        Err(e) if super::gives_up(rs, &e) => {
            // Nothing changed in ten minutes and no retry can: let the
            // RandomSecret go, keep the copies (never lost), say so.
            let why = format!(
                "the deletion waited {} minutes on a state only a person can fix ({e})",
                crate::push::CLEANUP_DEADLINE.as_secs() / 60
            );
            let namespace = report::target_namespace(target, key);
            super::copies_kept(ctx, key, rs, &link.name, &namespace, why);
            let _ = ctx.dispatches.send(key.clone());
            Next::AwaitChange
        }
        Err(e) => {
            let message = super::waits_message(&link.name, &e);
            warn!(randomsecret = %key, connection = %link.name, reason = e.reason(), "cluster push cleanup: {message}");
            let mut status = report::failed(&link.name, target, key, &e);
            status.message = Some(message);
            ctx.record(key, status);
            Next::RequeueAfter(crate::push::cleanup_recheck(crate::push::waited(rs)))
        }
    }
}

/// The last retention pass and the anchor's deletion; whether an anchor of
/// ours was found. Nothing is done while a watch there is catching up.
async fn release(
    key: &Key,
    rs: &RandomSecret,
    target: &ClusterPush,
    link: &Arc<Link>,
    ctx: &Arc<Context>,
) -> Result<bool, ClusterError> {
    let namespace = report::target_namespace(target, key);
    let down = first_listed(link, &namespace, ctx)?;
    if !down.interruptions.which().is_empty() {
        return Err(ClusterError::Connecting(format!(
            "cluster {}: a watch of namespace {namespace} is catching up",
            link.name
        )));
    }
    let base = rs
        .spec
        .secret_name
        .clone()
        .unwrap_or_else(|| key.name.to_string());
    let name = copy::anchor_name(&base);
    let Some(anchor) = down
        .copy(&name)
        .filter(|c| c.anchor && c.proven_anchor && c.origin == *key)
    else {
        return Ok(false);
    };
    if let Some(current) = rs.status.as_ref().and_then(|s| s.secret_name.clone()) {
        let owner = copy::anchor_owner(&name, &anchor.uid);
        let here = SyncScope {
            key,
            rs,
            namespace: &namespace,
            down: &down,
            link,
            ctx,
        };
        here.retain(&current, &owner).await?;
    }
    ctx.may_write()?;
    link.delete_anchor(key, &base, &namespace, ctx.caches.secrets.key())
        .await
}

/// One RandomSecret in one namespace of one cluster: what each step reads.
struct SyncScope<'a> {
    key: &'a Key,
    rs: &'a RandomSecret,
    namespace: &'a str,
    down: &'a Downstream,
    link: &'a Link,
    ctx: &'a Context,
}

impl SyncScope<'_> {
    /// The anchor as the copies' owner: found and proven, or created.
    async fn ensure_anchor(&self, base: &str) -> Result<OwnerReference, ClusterError> {
        let SyncScope {
            key,
            namespace,
            down,
            link,
            ctx,
            ..
        } = *self;
        let name = copy::anchor_name(base);
        let origin = Origin {
            namespace: key.ns(),
            randomsecret: &key.name,
        };
        let conflict = || {
            ClusterError::SecretNameConflict(format!(
                "cluster {}: Secret {name} in namespace {namespace} was not made by randomsecret for {key}: it is left untouched; remove it, or give this RandomSecret another spec.secretName",
                link.name
            ))
        };
        if let Some(c) = down.copy(&name) {
            return if c.anchor && c.proven_anchor && c.origin == *key {
                Ok(copy::anchor_owner(&name, &c.uid))
            } else {
                Err(conflict())
            };
        }
        let anchor = copy::anchor(ctx.caches.secrets.key(), &origin, base, namespace);
        let api = link.secrets(namespace);
        ctx.may_write()?;
        let what = "creating the anchor";
        let created = match link
            .bounded_raw(what, api.create(&PostParams::default(), &anchor))
            .await?
        {
            Ok(s) => s,
            Err(kube::Error::Api(s)) if s.already_exists() => {
                // Made meanwhile (by us, or by someone else): read and prove it.
                let found = link
                    .bounded("reading the anchor", api.get_metadata(&name))
                    .await?;
                if !copy::proven_anchor(ctx.caches.secrets.key(), &found.metadata, &origin) {
                    return Err(conflict());
                }
                down.write_through(&found.metadata, ctx.caches.secrets.key());
                return Ok(copy::anchor_owner(
                    &name,
                    found.metadata.uid.as_deref().unwrap_or_default(),
                ));
            }
            Err(e) => return Err(ClusterError::downstream(&link.name, what, e)),
        };
        down.write_through(&created.metadata, ctx.caches.secrets.key());
        Ok(copy::anchor_owner(
            &name,
            created.metadata.uid.as_deref().unwrap_or_default(),
        ))
    }

    /// The upstream version to copy (read whole), or None when its copy is
    /// there already and proven the same. Refused before anything is
    /// written downstream: a version this controller cannot prove it made,
    /// one not made for this target, one outside the connection's policy.
    async fn version_to_copy(
        &self,
        current: &str,
        target: &ClusterPush,
    ) -> Result<Option<Secret>, ClusterError> {
        let SyncScope {
            key,
            rs,
            namespace,
            down,
            link,
            ctx,
        } = *self;
        let cached_uid = ctx
            .caches
            .secrets
            .get(&key.sibling(current))
            .map(|v| v.uid.to_string());
        let existing = down.copy(current);
        if let (Some(c), Some(up)) = (&existing, &cached_uid)
            && link.is_proven(&c.uid, Some(up))
        {
            return Ok(None);
        }
        // The values pass through here once, from the upstream version to the
        // copy (or to compare with one found); they are never kept.
        let upstream = Api::<Secret>::namespaced(ctx.client.clone(), key.ns())
            .get(current)
            .await
            .map_err(|e| {
                ClusterError::retry(
                    format!(
                        "reading Secret {current} upstream: {}",
                        crate::push::vault::brief(&e)
                    ),
                    Some(e),
                )
            })?;
        if upstream.metadata.uid.is_none() || upstream.metadata.uid != cached_uid {
            return Err(ClusterError::Waiting(format!(
                "waiting for Secret {current} upstream to be seen by the controller's cache"
            )));
        }
        let rs_uid = rs.metadata.uid.as_deref().unwrap_or_default();
        if let Some(why) = copy::unproven_version(
            ctx.caches.secrets.key(),
            &upstream,
            &key.name,
            rs_uid,
            cached_uid.as_deref(),
        ) {
            return Err(ClusterError::UnprovenVersion(why));
        }
        let up_uid = upstream.metadata.uid.clone().unwrap_or_default();
        if let Some(c) = &existing {
            // Something of ours (by its labels) is there under that name.
            if link.is_foreign(&c.uid, &c.resource_version) {
                return Err(self.foreign(current));
            }
            let found = link
                .bounded(
                    &format!("reading Secret {current}"),
                    link.secrets(namespace).get(current),
                )
                .await?;
            return self
                .classified(current, &found, &upstream, &up_uid)
                .map(|_| None);
        }
        if !targets::made_for(
            upstream.metadata.annotations.as_ref(),
            &targets::cluster(target),
        ) {
            return Err(ClusterError::NotMadeForTarget(format!(
                "spec.push.clusters names ClusterConnection {}, which Secret {current} was not made for (the target was added or changed after it was made): values already in use are never sent to a new place by an edit of spec.push; the next version is copied: rotate (change spec.rotation, or run `randomsecret rotate {}`)",
                link.name, key.name
            )));
        }
        let policy = ctx.links.policy(&ctx.settings, &link.name);
        if let Some(why) = admit::refuses(&policy, &link.name, &upstream) {
            return Err(ClusterError::NotAllowed(format!("Secret {current}: {why}")));
        }
        Ok(Some(upstream))
    }

    /// A Secret found downstream under the version's name, read whole: our
    /// copy of it (remembered), or never touched.
    fn classified(
        &self,
        current: &str,
        found: &Secret,
        upstream: &Secret,
        up_uid: &str,
    ) -> Result<(), ClusterError> {
        let SyncScope {
            namespace,
            down,
            link,
            ctx,
            ..
        } = *self;
        match copy::classify(ctx.caches.secrets.key(), found, upstream) {
            Found::Ours => {
                down.write_through(&found.metadata, ctx.caches.secrets.key());
                if let Some(uid) = &found.metadata.uid {
                    link.mark_proven(uid, Some(up_uid));
                }
                Ok(())
            }
            Found::Mismatch => Err(ClusterError::ValueMismatch(format!(
                "cluster {}: Secret {current} in namespace {namespace} is our copy of an earlier version of that name, with other values (the version was re-created upstream since): it is never overwritten; change spec.rotation to move to a new name, or delete that copy downstream once nothing there uses it, to have it copied again",
                link.name
            ))),
            Found::Foreign => {
                if let (Some(uid), Some(rv)) =
                    (&found.metadata.uid, &found.metadata.resource_version)
                {
                    link.mark_foreign(uid, rv);
                }
                Err(self.foreign(current))
            }
        }
    }

    fn foreign(&self, current: &str) -> ClusterError {
        ClusterError::SecretNameConflict(format!(
            "cluster {}: Secret {current} in namespace {} was not made by randomsecret: it is left untouched; delete or rename it there, or change spec.rotation to move to a new name",
            self.link.name, self.namespace
        ))
    }

    /// The current version's copy, created from `upstream` (checked by
    /// [`Self::version_to_copy`]); a Secret found under its name is proven
    /// the same, or never touched.
    async fn ensure_copy(
        &self,
        current: &str,
        upstream: Secret,
        anchor: &OwnerReference,
    ) -> Result<(), ClusterError> {
        let SyncScope {
            key,
            rs,
            namespace,
            down,
            link,
            ctx,
        } = *self;
        let up_uid = upstream.metadata.uid.clone().unwrap_or_default();
        let api = link.secrets(namespace);
        let holders = down.holders_of(&Key::new(namespace, current));
        let owners = std::iter::once(anchor.clone())
            .chain(
                holders
                    .iter()
                    .filter(|h| !h.covered)
                    .take(retention::MAX_HOLDER_OWNERS)
                    .map(|h| h.owner_reference()),
            )
            .collect();
        let copy = copy::copy_of(&upstream, namespace, owners);
        ctx.may_write()?;
        let what = format!("creating Secret {current}");
        match link
            .bounded_raw(&what, api.create(&PostParams::default(), &copy))
            .await?
        {
            Ok(made) => {
                down.write_through(&made.metadata, ctx.caches.secrets.key());
                if let Some(uid) = &made.metadata.uid {
                    link.mark_proven(uid, Some(&up_uid));
                }
                ctx.metrics.copies_created.inc();
                info!(randomsecret = %key, connection = %link.name, secret = current, namespace, "cluster push: copied the version");
                ctx.events.publish(
                    crate::push::reference(rs),
                    EventType::Normal,
                    "ClusterVersionCopied",
                    "PushCluster",
                    format!(
                        "Copied Secret {current} to namespace {namespace} of cluster {}",
                        link.name
                    ),
                );
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.already_exists() => {
                // There already (not labelled as ours): its metadata first, so
                // a look-alike proven foreign is not read whole again.
                let meta = link
                    .bounded(
                        &format!("reading Secret {current}"),
                        api.get_metadata(current),
                    )
                    .await?
                    .metadata;
                if let (Some(uid), Some(rv)) = (&meta.uid, &meta.resource_version)
                    && link.is_foreign(uid, rv)
                {
                    return Err(self.foreign(current));
                }
                let found = link
                    .bounded(&format!("reading Secret {current}"), api.get(current))
                    .await?;
                self.classified(current, &found, &upstream, &up_uid)
            }
            Err(e) => Err(ClusterError::downstream(&link.name, &what, e)),
        }
    }

    /// Sets each copy's owners from the retention plan, and deletes the copies
    /// it releases. Copies not proven ours (read whole once) are left alone.
    async fn retain(
        &self,
        current: &str,
        anchor: &OwnerReference,
    ) -> Result<Vec<String>, ClusterError> {
        let SyncScope {
            key,
            rs,
            namespace,
            down,
            link,
            ctx,
        } = *self;
        let api = link.secrets(namespace);
        let mut copies = Vec::new();
        for (name, c) in down.copies_of(key) {
            if !link.is_proven(&c.uid, None) {
                if link.is_foreign(&c.uid, &c.resource_version) {
                    continue;
                }
                let whole = link
                    .bounded(&format!("reading Secret {name}"), api.get(&name))
                    .await?;
                if !copy::proven_copy(ctx.caches.secrets.key(), &whole, key.ns()) {
                    let rv = whole.metadata.resource_version.as_deref();
                    link.mark_foreign(&c.uid, rv.unwrap_or(&c.resource_version));
                    continue;
                }
                link.mark_proven(&c.uid, None);
            }
            copies.push((name, c));
        }
        let observed: Vec<Observed> = copies
            .iter()
            .map(|(name, c)| Observed {
                name: name.clone(),
                hash: c.hash.clone(),
                created: c.created.clone(),
                owners: c.owners.clone(),
            })
            .collect();
        // While a watch here is interrupted, a copy may look unreferenced only
        // because its ReplicaSet came during the gap: nothing is released.
        let history = if down.interruptions.which().is_empty() {
            rs.spec.history.unwrap_or(0).max(0) as usize
        } else {
            usize::MAX
        };
        let planned = retention::plan(
            current,
            anchor,
            &observed,
            |n| down.holders_of(&Key::new(namespace, n)),
            history,
        );
        let mut kept = Vec::new();
        for p in planned {
            let c = &copies
                .iter()
                .find(|(n, _)| *n == p.name)
                .expect("planned from observed")
                .1;
            if p.change != Change::None {
                ctx.may_write()?;
            }
            match p.change {
                Change::None => {}
                Change::SetOwners => {
                    let patch = json!({"metadata": {
                        "resourceVersion": c.resource_version,
                        "ownerReferences": p.owners,
                    }});
                    let done = link
                        .bounded(
                            &format!("setting the owners of Secret {}", p.name),
                            api.patch(&p.name, &PatchParams::default(), &Patch::Merge(patch)),
                        )
                        .await?;
                    down.write_through(&done.metadata, ctx.caches.secrets.key());
                }
                Change::Delete => {
                    let params = crate::reconciler::retain::planned_delete(
                        c.uid.clone(),
                        c.resource_version.clone(),
                    );
                    let what = format!("deleting Secret {}", p.name);
                    match link
                        .bounded_raw(&what, api.delete(&p.name, &params))
                        .await?
                    {
                        // Gone meanwhile, or another incarnation: the watch says which.
                        Ok(_) => down.forget(&p.name),
                        Err(kube::Error::Api(s)) if s.not_found() || s.conflict() => {}
                        Err(e) => return Err(ClusterError::downstream(&link.name, &what, e)),
                    }
                    info!(randomsecret = %key, connection = %link.name, secret = %p.name, namespace, "cluster push: released a copy nothing there references");
                    continue;
                }
            }
            kept.push(p.name);
        }
        Ok(kept)
    }
}
