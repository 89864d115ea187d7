//! The reconciler: one immutable Secret per version of a RandomSecret.
//!
//! Per reconcile: compute the version (pure), look it up in the metadata-only
//! Secret cache, create it if missing (AlreadyExists of our own Secret is
//! success), then write status by server-side apply only when it changed.
//! Secret data is written once and never read back.

use crate::api::{
    LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, RandomSecret, RandomSecretStatus,
    VersionState, VersionStatus,
};
use crate::metrics::Metrics;
use crate::status::{self, Outcome};
use crate::version::Version;
use crate::{Error, Result, generate};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
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
    pub recorder: Recorder,
    pub metrics: Metrics,
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

/// The owner references of an adopted Secret: every stale RandomSecret owner
/// is replaced by `ours`; other owners (ReplicaSets) stay.
pub fn adopted_owners(existing: &[OwnerReference], ours: OwnerReference) -> Vec<OwnerReference> {
    let mut out: Vec<OwnerReference> = existing
        .iter()
        .filter(|o| !(o.kind == "RandomSecret" && o.api_version.starts_with("randomsecret.io/")))
        .cloned()
        .collect();
    out.insert(0, ours);
    out
}

fn owner_ref(rs: &RandomSecret) -> OwnerReference {
    let mut o = rs
        .controller_owner_ref(&())
        .expect("a stored RandomSecret has a name and uid");
    // blockOwnerDeletion would need update on randomsecrets/finalizers; not needed.
    o.block_owner_deletion = None;
    o
}

/// The Secret for a new version (values freshly generated).
fn build_secret(rs: &RandomSecret, v: &Version) -> Result<Secret> {
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
            annotations: rs.spec.secret_annotations.clone(),
            owner_references: Some(vec![owner_ref(rs)]),
            ..Default::default()
        },
        immutable: Some(true),
        type_: Some(v.spec.secret_type.clone()),
        data: Some(data),
        ..Default::default()
    })
}

/// What ensuring the current version did.
enum Ensured {
    Created(Time),
    Existed(Option<Time>),
    Adopted(Option<Time>),
    Conflict(String),
}

async fn ensure_version(rs: &RandomSecret, v: &Version, ctx: &Context) -> Result<Ensured> {
    let ns = rs.namespace().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let uid = rs.uid().unwrap_or_default();
    let cached = ctx.secrets.get(&ObjectRef::new(&v.secret_name).within(&ns));
    let meta = match cached {
        Some(m) => m.metadata.clone(),
        None => match api
            .create(
                &PostParams {
                    field_manager: Some(MANAGER.into()),
                    ..Default::default()
                },
                &build_secret(rs, v)?,
            )
            .await
        {
            Ok(s) => {
                return Ok(Ensured::Created(
                    s.metadata
                        .creation_timestamp
                        .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now())),
                ));
            }
            // Cache lag, a retry, a second leader, or someone else's Secret.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                api.get_metadata(&v.secret_name).await?.metadata
            }
            Err(e) => return Err(e.into()),
        },
    };
    let created = meta.creation_timestamp.clone();
    match classify(&meta, &rs.name_any(), &uid, &v.hash) {
        Existing::Owned => Ok(Ensured::Existed(created)),
        Existing::Foreign(why) => Ok(Ensured::Conflict(why)),
        Existing::Adoptable => {
            let owners = adopted_owners(
                meta.owner_references.as_deref().unwrap_or_default(),
                owner_ref(rs),
            );
            // resourceVersion makes this an optimistic, conflict-checked update of metadata only.
            let patch = json!({"metadata": {"resourceVersion": meta.resource_version, "ownerReferences": owners}});
            api.patch_metadata(
                &v.secret_name,
                &PatchParams {
                    field_manager: Some(MANAGER.into()),
                    ..Default::default()
                },
                &Patch::Merge(patch),
            )
            .await?;
            Ok(Ensured::Adopted(created))
        }
    }
}

/// Versions for the status: the current one first, then those listed before that still exist.
fn versions(
    rs: &RandomSecret,
    v: &Version,
    created: Option<Time>,
    ctx: &Context,
) -> Vec<VersionStatus> {
    let ns = rs.namespace().unwrap_or_default();
    let mut out = vec![VersionStatus {
        name: v.secret_name.clone(),
        hash: v.hash.clone(),
        created,
        state: VersionState::Current,
        referenced_by: vec![],
    }];
    for old in rs.status.iter().flat_map(|s| &s.versions) {
        if old.name == v.secret_name {
            continue;
        }
        if let Some(meta) = ctx.secrets.get(&ObjectRef::new(&old.name).within(&ns)) {
            out.push(VersionStatus {
                created: meta
                    .metadata
                    .creation_timestamp
                    .clone()
                    .or(old.created.clone()),
                state: VersionState::Retained,
                ..old.clone()
            });
        }
    }
    out
}

async fn publish(
    ctx: &Context,
    rs: &RandomSecret,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let ev = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: action.into(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&ev, &rs.object_ref(&())).await {
        warn!(error = %e, "publishing event");
    }
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
    let api: Api<RandomSecret> =
        Api::namespaced(ctx.client.clone(), &rs.namespace().unwrap_or_default());
    let patch =
        json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "status": desired});
    api.patch_status(
        &rs.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(patch),
    )
    .await?;
    Ok(true)
}

async fn set_outcome(
    rs: &RandomSecret,
    outcome: &Outcome,
    versions: Vec<VersionStatus>,
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
    let result = reconcile_inner(&rs, &ctx).await;
    ctx.metrics.duration.observe(start.elapsed().as_secs_f64());
    let label = match &result {
        Ok((_, true)) => "ok",
        Ok((_, false)) => "stalled",
        Err(_) => "error",
    };
    ctx.metrics
        .reconciles
        .get_or_create(&crate::metrics::ResultLabel { result: label })
        .inc();
    result.map(|(action, _)| action)
}

/// Returns the next action and whether the RandomSecret is Ready.
async fn reconcile_inner(rs: &RandomSecret, ctx: &Context) -> Result<(Action, bool)> {
    if rs.meta().deletion_timestamp.is_some() {
        // The garbage collector removes what is owned; nothing to do.
        return Ok((Action::await_change(), false));
    }
    let name = rs.name_any();
    let ns = rs.namespace().unwrap_or_default();
    let previous_reason = status::ready_reason(rs.status.as_ref()).map(str::to_string);

    let v = match Version::of(&rs.spec, &name) {
        Ok(v) => v,
        Err(e) => {
            // A permanent error: report it and wait for the spec to change (no retry storm).
            ctx.metrics.error(e.reason());
            let outcome = Outcome::Stalled {
                reason: e.reason().into(),
                message: e.to_string(),
            };
            let keep = rs
                .status
                .as_ref()
                .map(|s| s.versions.clone())
                .unwrap_or_default();
            set_outcome(rs, &outcome, keep, ctx).await?;
            if previous_reason.as_deref() != Some(e.reason()) {
                warn!(namespace = %ns, name = %name, reason = e.reason(), "invalid spec");
                publish(
                    ctx,
                    rs,
                    EventType::Warning,
                    e.reason(),
                    "Validate",
                    e.to_string(),
                )
                .await;
            }
            return Ok((Action::await_change(), false));
        }
    };

    let ensured = match ensure_version(rs, &v, ctx).await {
        Ok(e) => e,
        // The namespace is going away, and this RandomSecret with it: nothing to retry.
        Err(err) if namespace_terminating(&err) => return Ok((Action::await_change(), false)),
        Err(err) => {
            ctx.metrics.error(err.metric_label());
            let outcome = Outcome::Retrying {
                reason: "ApiError".into(),
                message: format!("creating Secret {}: {err}", v.secret_name),
            };
            let keep = rs
                .status
                .as_ref()
                .map(|s| s.versions.clone())
                .unwrap_or_default();
            let _ = set_outcome(rs, &outcome, keep, ctx).await;
            return Err(err);
        }
    };
    let created = match ensured {
        Ensured::Conflict(why) => {
            ctx.metrics.error("SecretNameConflict");
            let outcome = Outcome::Stalled {
                reason: "SecretNameConflict".into(),
                message: why.clone(),
            };
            let keep = rs
                .status
                .as_ref()
                .map(|s| s.versions.clone())
                .unwrap_or_default();
            set_outcome(rs, &outcome, keep, ctx).await?;
            if previous_reason.as_deref() != Some("SecretNameConflict") {
                warn!(namespace = %ns, name = %name, secret = %v.secret_name, "Secret name taken");
                publish(
                    ctx,
                    rs,
                    EventType::Warning,
                    "SecretNameConflict",
                    "CreateVersion",
                    why,
                )
                .await;
            }
            return Ok((Action::requeue(CONFLICT_RECHECK), false));
        }
        Ensured::Created(t) => {
            ctx.metrics.versions_created.inc();
            info!(namespace = %ns, name = %name, secret = %v.secret_name, "created version");
            let note = format!("Created Secret {} (version {})", v.secret_name, v.hash);
            publish(
                ctx,
                rs,
                EventType::Normal,
                "VersionCreated",
                "CreateVersion",
                note,
            )
            .await;
            Some(t)
        }
        Ensured::Adopted(t) => {
            ctx.metrics.versions_adopted.inc();
            info!(namespace = %ns, name = %name, secret = %v.secret_name, "adopted existing version");
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
            )
            .await;
            t
        }
        Ensured::Existed(t) => t,
    };
    let outcome = Outcome::Ready {
        secret_name: v.secret_name.clone(),
    };
    set_outcome(rs, &outcome, versions(rs, &v, created, ctx), ctx).await?;
    Ok((Action::await_change(), true))
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

    #[test]
    fn adoption_replaces_stale_randomsecret_owners_only() {
        let rs_old = OwnerReference {
            uid: "old".into(),
            kind: "RandomSecret".into(),
            api_version: "randomsecret.io/v1".into(),
            ..Default::default()
        };
        let replicaset = OwnerReference {
            uid: "rs1".into(),
            kind: "ReplicaSet".into(),
            api_version: "apps/v1".into(),
            ..Default::default()
        };
        let ours = OwnerReference {
            uid: "new".into(),
            ..rs_old.clone()
        };
        let out = adopted_owners(&[rs_old, replicaset.clone()], ours.clone());
        assert_eq!(out, vec![ours, replicaset]);
    }
}
