//! The reconciler: one immutable Secret per version of a RandomSecret.
//!
//! Per reconcile: compute the version (pure), look it up in the metadata-only
//! Secret cache, create it if missing (AlreadyExists of our own Secret is
//! success), set every version's owner references from the retention plan
//! (deleting released versions), then write status by server-side apply only
//! when it changed. Secret data is written once and never read back.

use crate::api::{
    ANNOTATION_CREATED, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, RandomSecret,
    RandomSecretStatus, VersionStatus,
};
use crate::events::{EventType, Events};
use crate::index::Indexes;
use crate::metrics::Metrics;
use crate::retention::{self, Change, Observed};
use crate::status::{self, Outcome};
use crate::tracking;
use crate::version::Version;
use crate::{Error, Result, generate};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Field manager of every write (status by server-side apply).
pub const MANAGER: &str = "randomsecret";
/// How often a RandomSecret whose Secret name is taken is checked again.
const CONFLICT_RECHECK: Duration = Duration::from_secs(60);
/// Delay before retrying a transient failure.
pub const RETRY: Duration = Duration::from_secs(5);

pub struct Context {
    pub client: Client,
    /// Our Secrets (by label), metadata only.
    pub secrets: Store<PartialObjectMeta<Secret>>,
    /// Who references which Secret, and which Secrets are whose versions.
    pub indexes: Arc<Indexes>,
    pub events: Events,
    pub metrics: Metrics,
    /// Versions released by this process, per RandomSecret, until the cached
    /// status shows them (the cache may lag behind our own status write).
    pub released: std::sync::Mutex<std::collections::HashMap<(String, String), Vec<String>>>,
    /// Whether the Secret cache has applied its first list.
    pub secrets_listed: Arc<std::sync::atomic::AtomicBool>,
    /// Statuses written and not yet in the cache (no second identical write).
    pub written: Arc<status::Written>,
    /// Whether this replica leads (always true without leader election).
    pub leader: tokio::sync::watch::Receiver<bool>,
}

/// How an existing Secret with the version's name relates to a RandomSecret.
#[derive(Debug, PartialEq, Eq)]
pub enum Existing {
    /// Ours, and owned by this RandomSecret.
    Owned,
    /// Ours (labels match) but not owned by this RandomSecret object: it was
    /// deleted with its versions orphaned and created again.
    Adoptable,
    /// Not ours to touch; the message says whose it is.
    Foreign(String),
}

/// Decides whether the Secret `meta` is the version `hash` of RandomSecret `rs_name` (uid `rs_uid`).
pub fn classify(meta: &ObjectMeta, rs_name: &str, rs_uid: &str, hash: &str) -> Existing {
    let name = meta.name.as_deref().unwrap_or_default();
    let labels = meta.labels.clone().unwrap_or_default();
    let label = |k: &str| labels.get(k).map(String::as_str);
    if label(LABEL_MANAGED_BY) != Some(MANAGED_BY) || label(LABEL_NAME).is_none() {
        return Existing::Foreign(format!(
            "Secret {name} already exists and was not created by randomsecret; it is left untouched: rename or delete it, or set spec.secretName to another base name"
        ));
    }
    if label(LABEL_NAME) != Some(rs_name) || label(LABEL_HASH) != Some(hash) {
        return Existing::Foreign(format!(
            "Secret {name} belongs to RandomSecret {}: give this RandomSecret another spec.secretName",
            label(LABEL_NAME).unwrap_or_default()
        ));
    }
    let owned = meta
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == rs_uid);
    if owned {
        Existing::Owned
    } else {
        Existing::Adoptable
    }
}

fn owner_ref(rs: &RandomSecret) -> OwnerReference {
    let mut o = rs
        .controller_owner_ref(&())
        .expect("a stored RandomSecret has a name and uid");
    // blockOwnerDeletion would need update on randomsecrets/finalizers; not needed.
    o.block_owner_deletion = None;
    o
}

/// The Secret for a new version (values freshly generated), owned by the
/// RandomSecret and by whatever already references the name.
fn build_secret(rs: &RandomSecret, v: &Version, ctx: &Context) -> Result<Secret> {
    let mut data = BTreeMap::new();
    for (key, g) in &v.spec.generated {
        let value = generate::value(g).map_err(|e| Error::Random(e.to_string()))?;
        data.insert(key.clone(), ByteString(value.into_bytes()));
    }
    for (key, value) in &v.spec.statics {
        data.insert(key.clone(), ByteString(value.clone().into_bytes()));
    }
    let mut labels = rs.spec.secret_labels.clone().unwrap_or_default();
    labels.insert(LABEL_NAME.into(), rs.name_any());
    labels.insert(LABEL_HASH.into(), v.hash.clone());
    labels.insert(LABEL_MANAGED_BY.into(), MANAGED_BY.into());
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(v.secret_name.clone()),
            namespace: rs.namespace(),
            labels: Some(labels),
            annotations: Some({
                let mut a = rs.spec.secret_annotations.clone().unwrap_or_default();
                a.insert(
                    ANNOTATION_CREATED.into(),
                    k8s_openapi::jiff::Timestamp::now().to_string(),
                );
                a
            }),
            owner_references: Some(
                std::iter::once(owner_ref(rs))
                    .chain(
                        ctx.indexes
                            .holders(&rs.namespace().unwrap_or_default(), &v.secret_name)
                            .iter()
                            .map(|h| h.owner_reference()),
                    )
                    .collect(),
            ),
            ..Default::default()
        },
        immutable: Some(true),
        type_: Some(v.spec.secret_type.clone()),
        data: Some(data),
        ..Default::default()
    })
}

/// What ensuring the current version found or did.
enum Ensured {
    Created,
    Existed,
    /// Ours, left by an earlier RandomSecret of the same name: retention adopts it.
    Adoptable,
    Conflict(String),
}

/// Makes sure the current version exists; returns what happened and its metadata.
async fn ensure_version(
    rs: &RandomSecret,
    v: &Version,
    ctx: &Context,
) -> Result<(Ensured, ObjectMeta)> {
    let ns = rs.namespace().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let meta = match ctx.secrets.get(&ObjectRef::new(&v.secret_name).within(&ns)) {
        Some(m) => m.metadata.clone(),
        None => {
            let pp = PostParams {
                field_manager: Some(MANAGER.into()),
                ..Default::default()
            };
            match api.create(&pp, &build_secret(rs, v, ctx)?).await {
                Ok(s) => return Ok((Ensured::Created, s.metadata)),
                // Cache lag, a retry, a second leader, or someone else's Secret.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    api.get_metadata(&v.secret_name).await?.metadata
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let ensured = match classify(
        &meta,
        &rs.name_any(),
        &rs.uid().unwrap_or_default(),
        &v.hash,
    ) {
        Existing::Owned => Ensured::Existed,
        Existing::Adoptable => Ensured::Adoptable,
        Existing::Foreign(why) => Ensured::Conflict(why),
    };
    Ok((ensured, meta))
}

fn observed(name: &str, meta: &ObjectMeta) -> Observed {
    Observed {
        name: name.to_string(),
        hash: meta
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_HASH))
            .cloned()
            .unwrap_or_default(),
        created: meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_CREATED)?.parse().ok())
            .map(Time)
            .or_else(|| meta.creation_timestamp.clone()),
        owners: meta.owner_references.clone().unwrap_or_default(),
    }
}

/// Every version of `rs` in the cache, with the current one as just seen.
fn observed_versions(
    rs: &RandomSecret,
    current: &str,
    current_meta: &ObjectMeta,
    ctx: &Context,
) -> Vec<(Observed, ObjectMeta)> {
    let ns = rs.namespace().unwrap_or_default();
    let mut out = vec![(observed(current, current_meta), current_meta.clone())];
    for name in ctx.indexes.versions_of(&ns, &rs.name_any()) {
        if name == current {
            continue;
        }
        if let Some(m) = ctx.secrets.get(&ObjectRef::new(&name).within(&ns)) {
            out.push((observed(&name, &m.metadata), m.metadata.clone()));
        }
    }
    out
}

/// Applies the retention plan: owner references, and deletion of released versions.
/// Returns the versions for the status (live ones, and the names released now).
async fn retain(
    rs: &RandomSecret,
    v: &Version,
    current_meta: &ObjectMeta,
    ctx: &Context,
) -> Result<status::Versions> {
    let ns = rs.namespace().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let versions = observed_versions(rs, &v.secret_name, current_meta, ctx);
    let obs: Vec<Observed> = versions.iter().map(|(o, _)| o.clone()).collect();
    let history = rs.spec.history.unwrap_or(0).max(0) as usize;
    let planned = retention::plan(
        &v.secret_name,
        &owner_ref(rs),
        &obs,
        |n| ctx.indexes.holders(&ns, n),
        history,
    );
    let mut status = status::Versions::default();
    for p in planned {
        let meta = &versions
            .iter()
            .find(|(o, _)| o.name == p.name)
            .expect("planned from observed")
            .1;
        match p.change {
            Change::None => {}
            Change::SetOwners => {
                // resourceVersion: an optimistic, conflict-checked update of the owners only.
                let patch = json!({"metadata": {"resourceVersion": meta.resource_version, "ownerReferences": p.owners}});
                let pp = PatchParams {
                    field_manager: Some(MANAGER.into()),
                    ..Default::default()
                };
                api.patch_metadata(&p.name, &pp, &Patch::Merge(patch))
                    .await?;
            }
            Change::Delete => {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: meta.uid.clone(),
                        resource_version: meta.resource_version.clone(),
                    }),
                    ..Default::default()
                };
                match api.delete(&p.name, &dp).await {
                    Ok(_) => {
                        ctx.metrics.versions_released.inc();
                        status.released.push(p.name.clone());
                        info!(namespace = %ns, name = %rs.name_any(), secret = %p.name, "released version");
                        let note = format!(
                            "Deleted Secret {}: superseded, unreferenced and beyond spec.history",
                            p.name
                        );
                        publish(
                            ctx,
                            rs,
                            EventType::Normal,
                            "VersionReleased",
                            "ReleaseVersion",
                            note,
                        );
                    }
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
                continue;
            }
        }
        status.live.push(VersionStatus {
            name: p.name,
            hash: p.hash,
            // As stored (whole seconds), not the precise time used for ordering.
            created: meta.creation_timestamp.clone(),
            state: p.state,
            referenced_by: p.referenced_by,
        });
    }
    Ok(status)
}

/// Tracking mode: points the templates of workloads annotated
/// `randomsecret.io/track: <this RandomSecret>` at the current version.
async fn retarget_tracking_workloads(rs: &RandomSecret, v: &Version, ctx: &Context) -> Result<()> {
    let ns = rs.namespace().unwrap_or_default();
    let name = rs.name_any();
    for w in ctx.indexes.tracking(&ns, &name) {
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &ns, &w.kind.api_resource());
        let Some(obj) = api.get_opt(&w.name).await? else {
            continue;
        };
        let Some(mut pod_spec) = obj.data.pointer("/spec/template/spec").cloned() else {
            continue;
        };
        if tracking::retarget(&mut pod_spec, &v.base, &v.secret_name) == 0 {
            continue;
        }
        // resourceVersion: an optimistic update; a concurrent change means a retry.
        let patch = json!({"metadata": {"resourceVersion": obj.metadata.resource_version}, "spec": {"template": {"spec": pod_spec}}});
        let pp = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..Default::default()
        };
        api.patch(&w.name, &pp, &Patch::Merge(patch)).await?;
        info!(namespace = %ns, name = %name, workload = %format!("{}/{}", w.kind.as_str(), w.name), secret = %v.secret_name, "pointed tracking workload at the current version");
        let note = format!(
            "Pointed {} {} at Secret {}",
            w.kind.as_str(),
            w.name,
            v.secret_name
        );
        publish(
            ctx,
            rs,
            EventType::Normal,
            "WorkloadUpdated",
            "TrackVersion",
            note,
        );
    }
    Ok(())
}

/// An Event about `rs` (posted in the background).
fn publish(
    ctx: &Context,
    rs: &RandomSecret,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    ctx.events
        .publish(rs.object_ref(&()), type_, reason, action, note);
}

/// Writes `desired` by server-side apply when it differs from the stored status.
async fn write_status(
    rs: &RandomSecret,
    desired: &RandomSecretStatus,
    ctx: &Context,
) -> Result<bool> {
    if rs.status.as_ref() == Some(desired) {
        return Ok(false);
    }
    let key = (rs.namespace().unwrap_or_default(), rs.name_any());
    let cached_rv = rs.resource_version().unwrap_or_default();
    let fingerprint = status::Written::fingerprint(desired);
    if ctx.written.already(&key, &cached_rv, fingerprint) {
        return Ok(false);
    }
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), &key.0);
    let patch =
        json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "status": desired});
    api.patch_status(
        &rs.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(patch),
    )
    .await?;
    ctx.written.record(key, cached_rv, fingerprint);
    Ok(true)
}

/// Writes the status for `outcome`; `versions` None keeps the listed versions.
async fn set_outcome(
    rs: &RandomSecret,
    outcome: &Outcome,
    versions: Option<status::Versions>,
    ctx: &Context,
) -> Result<bool> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let desired = status::desired(
        rs.status.as_ref(),
        rs.meta().generation,
        outcome,
        versions,
        &now,
    );
    write_status(rs, &desired, ctx).await
}

pub async fn reconcile(rs: Arc<RandomSecret>, ctx: Arc<Context>) -> Result<Action> {
    let start = Instant::now();
    ctx.metrics.in_flight.inc();
    let result = reconcile_inner(&rs, &ctx).await;
    ctx.metrics.in_flight.dec();
    ctx.metrics.duration.observe(start.elapsed().as_secs_f64());
    let label = match &result {
        Ok((_, label)) => *label,
        Err(_) => "error",
    };
    ctx.metrics
        .reconciles
        .get_or_create(&crate::metrics::ResultLabel { result: label })
        .inc();
    result.map(|(action, _)| action)
}

/// Returns the next action and a metrics label for the outcome
/// (ok, stalled, waiting, deleting, standby).
async fn reconcile_inner(rs: &RandomSecret, ctx: &Context) -> Result<(Action, &'static str)> {
    if !*ctx.leader.borrow() {
        // A standby: caches stay warm; everything is reconciled on taking over.
        return Ok((Action::await_change(), "standby"));
    }
    // Until our Secrets are listed, every version would look missing (and be
    // created in vain, meeting AlreadyExists).
    if !ctx
        .secrets_listed
        .load(std::sync::atomic::Ordering::Acquire)
    {
        return Ok((Action::requeue(Duration::from_millis(200)), "waiting"));
    }
    if rs.meta().deletion_timestamp.is_some() {
        // The garbage collector removes what is owned; nothing to do.
        return Ok((Action::await_change(), "deleting"));
    }
    let name = rs.name_any();
    let ns = rs.namespace().unwrap_or_default();

    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let created = rs
        .meta()
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0.as_second());
    let (v, next_epoch) = match Version::at(&rs.spec, &name, created, now) {
        Ok(v) => v,
        Err(e) => {
            // A permanent error: report it and wait for the spec to change (no retry storm).
            stall(rs, ctx, e.reason(), e.to_string(), "Validate").await?;
            return Ok((Action::await_change(), "stalled"));
        }
    };

    let ensured = match ensure_version(rs, &v, ctx).await {
        Ok(e) => e,
        // The namespace is going away, and this RandomSecret with it: nothing to retry.
        Err(err) if namespace_terminating(&err) => return Ok((Action::await_change(), "deleting")),
        // The apiserver refused the Secret itself (a Secret type's rules, say): retrying cannot help.
        Err(Error::Kube(kube::Error::Api(status))) if status.code == 422 => {
            let message = format!(
                "the apiserver rejected Secret {}: {}: fix the spec",
                v.secret_name, status.message
            );
            stall(rs, ctx, "SecretRejected", message, "CreateVersion").await?;
            return Ok((Action::await_change(), "stalled"));
        }
        Err(err) => {
            ctx.metrics.error(err.metric_label());
            let outcome = Outcome::Retrying {
                reason: "ApiError".into(),
                message: format!("creating Secret {}: {err}", v.secret_name),
            };
            let _ = set_outcome(rs, &outcome, None, ctx).await;
            return Err(err);
        }
    };
    let (ensured, meta) = ensured;
    match ensured {
        Ensured::Conflict(why) => {
            stall(rs, ctx, "SecretNameConflict", why, "CreateVersion").await?;
            return Ok((Action::requeue(CONFLICT_RECHECK), "stalled"));
        }
        Ensured::Created => {
            ctx.metrics.versions_created.inc();
            info!(namespace = %ns, name = %name, secret = %v.secret_name, "created version");
            // A revert to a rotation whose version was already released.
            let (reason, note) = if was_released(rs, &v.secret_name, ctx) {
                let note = format!(
                    "Created Secret {} again, with new values: this version was released earlier, after no pod referenced it",
                    v.secret_name
                );
                ("VersionRecreated", note)
            } else {
                (
                    "VersionCreated",
                    format!("Created Secret {} (version {})", v.secret_name, v.hash),
                )
            };
            publish(ctx, rs, EventType::Normal, reason, "CreateVersion", note);
        }
        Ensured::Adoptable => {
            ctx.metrics.versions_adopted.inc();
            info!(namespace = %ns, name = %name, secret = %v.secret_name, "adopting existing version");
            let note = format!(
                "Adopted existing Secret {}; its values are unchanged",
                v.secret_name
            );
            publish(
                ctx,
                rs,
                EventType::Normal,
                "VersionAdopted",
                "AdoptVersion",
                note,
            );
        }
        Ensured::Existed => {}
    }
    if !ctx.indexes.synced() {
        // Never decide what to release before every reference has been listed.
        return Ok((Action::requeue(Duration::from_secs(1)), "waiting"));
    }
    let versions = match retain(rs, &v, &meta, ctx).await {
        Ok(versions) => versions,
        Err(err) if namespace_terminating(&err) => return Ok((Action::await_change(), "deleting")),
        Err(err) => {
            ctx.metrics.error(err.metric_label());
            return Err(err);
        }
    };
    if let Err(err) = retarget_tracking_workloads(rs, &v, ctx).await {
        ctx.metrics.error(err.metric_label());
        return Err(err);
    }
    let outcome = Outcome::Ready {
        secret_name: v.secret_name.clone(),
    };
    // Remember recently released names (newest first), to tell a re-creation apart.
    let mut versions = versions;
    versions.released = remember_released(rs, &v.secret_name, versions.released, ctx);
    set_outcome(rs, &outcome, Some(versions), ctx).await?;
    // With rotateEvery, come back when the next version is due.
    let next = match next_epoch {
        Some(at) => Action::requeue(Duration::from_secs(
            at.saturating_sub(now).max(1).unsigned_abs(),
        )),
        None => Action::await_change(),
    };
    Ok((next, "ok"))
}

/// Reports a permanent problem: `Ready=False`, `Stalled=True` with `reason`,
/// counted, and a Warning Event when the reason is new (not on every retry).
async fn stall(
    rs: &RandomSecret,
    ctx: &Context,
    reason: &str,
    message: String,
    action: &str,
) -> Result<()> {
    ctx.metrics.error(reason);
    let previous = status::ready_reason(rs.status.as_ref()).map(str::to_string);
    let outcome = Outcome::Stalled {
        reason: reason.into(),
        message: message.clone(),
    };
    set_outcome(rs, &outcome, None, ctx).await?;
    if previous.as_deref() != Some(reason) {
        warn!(namespace = %rs.namespace().unwrap_or_default(), name = %rs.name_any(), reason, "stalled: {message}");
        publish(ctx, rs, EventType::Warning, reason, action, message);
    }
    Ok(())
}

/// Whether this process or the cached status says `name` was released before.
fn was_released(rs: &RandomSecret, name: &str, ctx: &Context) -> bool {
    let key = (rs.namespace().unwrap_or_default(), rs.name_any());
    let in_status = rs
        .status
        .as_ref()
        .is_some_and(|s| s.released.iter().any(|n| n == name));
    let memory = ctx.released.lock().expect("released lock");
    in_status
        || memory
            .get(&key)
            .is_some_and(|m| m.iter().any(|n| n == name))
}

/// Released names for the status: `now` (just released), then what this
/// process released earlier (the cached status may not show it yet), then the
/// cached status; without the current name, at most `RELEASED_KEPT`.
fn remember_released(
    rs: &RandomSecret,
    current: &str,
    now: Vec<String>,
    ctx: &Context,
) -> Vec<String> {
    let key = (rs.namespace().unwrap_or_default(), rs.name_any());
    let cached = rs
        .status
        .as_ref()
        .map(|s| s.released.clone())
        .unwrap_or_default();
    let mut memory = ctx.released.lock().expect("released lock");
    let mine = memory.entry(key.clone()).or_default();
    mine.splice(0..0, now);
    let mut out: Vec<String> = Vec::new();
    for n in mine.iter().chain(cached.iter()) {
        if n != current && !out.contains(n) {
            out.push(n.clone());
        }
    }
    out.truncate(status::RELEASED_KEPT);
    // Once the cache shows everything this process released, it remembers for us.
    if mine.iter().all(|n| cached.contains(n) || n == current) {
        memory.remove(&key);
    } else {
        mine.truncate(status::RELEASED_KEPT);
    }
    out
}

/// Whether the apiserver refused a create because the namespace is being deleted.
fn namespace_terminating(err: &Error) -> bool {
    matches!(err, Error::Kube(kube::Error::Api(s)) if s.code == 403 && s.message.contains("because it is being terminated"))
}

pub fn error_policy(rs: Arc<RandomSecret>, err: &Error, _ctx: Arc<Context>) -> Action {
    warn!(namespace = %rs.namespace().unwrap_or_default(), name = %rs.name_any(), error = %err, "reconcile failed; retrying");
    Action::requeue(RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(labels: &[(&str, &str)], owners: &[&str]) -> ObjectMeta {
        ObjectMeta {
            name: Some("db-abc".into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            owner_references: Some(
                owners
                    .iter()
                    .map(|uid| OwnerReference {
                        uid: uid.to_string(),
                        kind: "RandomSecret".into(),
                        api_version: "randomsecret.io/v1".into(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    const OURS: [(&str, &str); 3] = [
        (LABEL_MANAGED_BY, MANAGED_BY),
        (LABEL_NAME, "db"),
        (LABEL_HASH, "abc"),
    ];

    #[test]
    fn classifies_owned_adoptable_and_foreign() {
        assert_eq!(
            classify(&meta(&OURS, &["u1"]), "db", "u1", "abc"),
            Existing::Owned
        );
        assert_eq!(
            classify(&meta(&OURS, &["old"]), "db", "u1", "abc"),
            Existing::Adoptable
        );
        assert_eq!(
            classify(&meta(&OURS, &[]), "db", "u1", "abc"),
            Existing::Adoptable
        );
        assert!(
            matches!(classify(&meta(&[], &[]), "db", "u1", "abc"), Existing::Foreign(m) if m.contains("not created by randomsecret"))
        );
        assert!(
            matches!(classify(&meta(&OURS, &["u9"]), "other", "u1", "abc"), Existing::Foreign(m) if m.contains("belongs to RandomSecret db"))
        );
        assert!(matches!(
            classify(&meta(&OURS, &["u1"]), "db", "u1", "xyz"),
            Existing::Foreign(_)
        ));
    }
}
