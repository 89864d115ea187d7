//! ClusterRandomSecrets (`api::cluster`): one RandomSecret, made from the
//! template, kept in each namespace a ClusterRandomSecret selects. Its
//! runner's keys are ClusterRandomSecret names (keys without a namespace);
//! each run reads the caches ([`cache`]), decides ([`plan`]) and writes:
//! creates, updates, deletes, then the status.
//!
//! Trust: a RandomSecret is a stamped one of ours only when its proof
//! annotation verifies (an HMAC under the controller's key over the
//! ClusterRandomSecret, the namespace and the template digest). A
//! RandomSecret of the same name without it, whatever its labels, is never
//! written or deleted (`NameConflict`). A new one is created (never
//! applied over), so a name taken meanwhile fails instead of being taken.

pub mod cache;
pub mod claim;
pub mod plan;

use crate::api::RandomSecret;
use crate::api::cluster::ClusterRandomSecret;
use crate::cache::{Caches, Key};
use crate::proof::ProofKey;
use crate::runtime::leader::Leadership;
use crate::runtime::runner::Next;
use crate::runtime::status::Answer;
use cache::Stamps;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use plan::{Failure, Here, Step};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// The field manager of the stamped RandomSecrets and of the status.
pub const MANAGER: &str = concat!(crate::api::project!(), "-stamp");
/// A namespace in conflict is looked at again this often: the foreign
/// RandomSecret's removal is no event of ours.
const CONFLICT_RECHECK: Duration = Duration::from_secs(10);

/// What every run shares.
pub struct Context {
    pub client: Client,
    pub stamps: Arc<Stamps>,
    /// Every RandomSecret (the controller's cache): whether a name is taken.
    pub caches: Arc<Caches>,
    pub key: ProofKey,
    /// Namespaces never stamped into (`--cluster-exclude-namespaces` and
    /// the controller's own).
    pub excluded: Vec<String>,
    pub leader: Leadership,
}

/// One run for ClusterRandomSecret `key.name`.
pub async fn reconcile(key: Key, ctx: Arc<Context>) -> Next {
    if let Some(next) = ctx.leader.standby() {
        return next;
    }
    let name = key.name.to_string();
    let Some(crs) = ctx.stamps.clusters.get(&name) else {
        // Deleted: its owned RandomSecrets go with it (the garbage
        // collector), the others stay.
        return Next::AwaitChange;
    };
    if crs.metadata.deletion_timestamp.is_some() {
        return Next::AwaitChange;
    }
    match run(&crs, &ctx).await {
        Ok(next) => next,
        Err(e) => {
            warn!(clusterrandomsecret = %name, error = %e, "stamp failed; retrying with backoff");
            Next::Retry
        }
    }
}

async fn run(crs: &ClusterRandomSecret, ctx: &Context) -> Result<Next, kube::Error> {
    let name = crs.metadata.name.clone().unwrap_or_default();
    let namespaces = ctx.stamps.namespaces.filter(|_, _| true);
    let selected = match plan::selected(crs, &namespaces, &ctx.excluded) {
        Ok(s) => s,
        Err(message) => {
            write_status(ctx, crs, plan::invalid(crs, message, now())).await?;
            return Ok(Next::AwaitChange);
        }
    };
    let digest = plan::digest(crs);
    let here: Vec<(String, Here)> = selected
        .iter()
        .map(|ns| (ns.clone(), look(ctx, &name, ns, &digest)))
        .collect();
    // Ours in namespaces no longer selected (for deletionPolicy: Delete).
    let unselected: Vec<(String, String)> = ctx
        .stamps
        .stamped
        .filter(|k, e| e.claim.cluster == name && !selected.iter().any(|s| k.ns() == s))
        .into_iter()
        .filter(|(k, e)| proven(ctx, &name, k.ns(), e))
        .map(|(k, e)| (k.ns().to_string(), e.uid))
        .collect();
    let mut failures: BTreeMap<String, Failure> = here
        .iter()
        .filter(|(_, h)| *h == Here::Foreign)
        .map(|(ns, _)| (ns.clone(), Failure::NameConflict))
        .collect();
    let proof = |ns: &str| claim::sign(&ctx.key, &name, ns, &digest, crs.spec.values);
    for step in plan::steps(&here, &unselected, crs.spec.deletion_policy) {
        if let Err(failure) = write(ctx, crs, &step, &digest, &proof).await {
            let (Step::Create(ns) | Step::Update(ns, _) | Step::Delete(ns, _)) = step;
            failures.insert(ns, failure);
        }
    }
    // Read again: the writes' answers are in the cache.
    let here: Vec<(String, Here)> = selected
        .iter()
        .map(|ns| (ns.clone(), look(ctx, &name, ns, &digest)))
        .collect();
    let status = plan::status(crs, &here, &failures, now());
    let retry = failures
        .values()
        .any(|f| matches!(f, Failure::WriteFailed(_)));
    let conflict = failures.values().any(|f| *f == Failure::NameConflict);
    if crs.status.as_ref() != Some(&status) {
        write_status(ctx, crs, status).await?;
    }
    Ok(if retry {
        Next::Retry
    } else if conflict {
        Next::RequeueAfter(CONFLICT_RECHECK)
    } else {
        Next::AwaitChange
    })
}

/// Whether stamped entry `e` in `namespace` proves it was made by us for
/// ClusterRandomSecret `name` (with whatever template it carries).
fn proven(ctx: &Context, name: &str, namespace: &str, e: &cache::StampedEntry) -> bool {
    e.claim.cluster == name && e.claim.proven(&ctx.key, namespace)
}

/// What is in `namespace` under the name `name`.
fn look(ctx: &Context, name: &str, namespace: &str, digest: &str) -> Here {
    let key = Key::new(namespace, name);
    match ctx.stamps.stamped.get(&key) {
        Some(e) if proven(ctx, name, namespace, &e) => Here::Ours {
            current: e.claim.template.as_deref() == Some(digest),
            drifted: ctx.stamps.drifted(&key, e.generation),
            readiness: e.readiness.clone(),
            uid: e.uid,
        },
        Some(_) => Here::Foreign,
        None if ctx.caches.randomsecrets.get(&key).is_some() => Here::Foreign,
        None => Here::Absent,
    }
}

/// One step; a failure in the words the status gives it.
async fn write(
    ctx: &Context,
    crs: &ClusterRandomSecret,
    step: &Step,
    digest: &str,
    proof: &impl Fn(&str) -> String,
) -> Result<(), Failure> {
    let name = crs.metadata.name.clone().unwrap_or_default();
    let api = |ns: &str| Api::<RandomSecret>::namespaced(ctx.client.clone(), ns);
    let failed = |what: &str, e: kube::Error| {
        warn!(clusterrandomsecret = %name, error = %e, "{what}");
        Failure::WriteFailed(format!("{what}: {e}"))
    };
    match step {
        Step::Create(ns) => {
            let object: RandomSecret =
                serde_json::from_value(plan::stamped(crs, ns, digest, &proof(ns)))
                    .expect("a stamped RandomSecret is a RandomSecret");
            let pp = PostParams {
                field_manager: Some(MANAGER.into()),
                ..Default::default()
            };
            match api(ns).create(&pp, &object).await {
                Ok(made) => {
                    info!(clusterrandomsecret = %name, namespace = %ns, "created RandomSecret");
                    remember(ctx, &made);
                    Ok(())
                }
                Err(kube::Error::Api(s)) if s.already_exists() => Err(Failure::NameConflict),
                Err(e) => Err(failed(&format!("creating RandomSecret {ns}/{name}"), e)),
            }
        }
        Step::Update(ns, uid) => {
            let owners = ctx
                .stamps
                .stamped
                .get(&Key::new(ns, &name))
                .map(|e| e.owners)
                .unwrap_or_default();
            let patch = plan::update(crs, digest, &proof(ns), uid, &owners);
            let pp = PatchParams {
                field_manager: Some(MANAGER.into()),
                ..Default::default()
            };
            match api(ns).patch(&name, &pp, &Patch::<()>::Json(patch)).await {
                Ok(made) => {
                    info!(clusterrandomsecret = %name, namespace = %ns, "updated RandomSecret to the template");
                    remember(ctx, &made);
                    Ok(())
                }
                // The uid test failed (422) or it is gone: another object,
                // or none; the next run decides on what is there.
                Err(kube::Error::Api(s)) if s.invalid() || s.not_found() || s.conflict() => {
                    Err(Failure::WriteFailed(format!(
                        "RandomSecret {ns}/{name} changed while it was updated; looking again"
                    )))
                }
                Err(e) => Err(failed(&format!("updating RandomSecret {ns}/{name}"), e)),
            }
        }
        Step::Delete(ns, uid) => {
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..Default::default()
            };
            match api(ns).delete(&name, &dp).await {
                Ok(_) => {
                    info!(clusterrandomsecret = %name, namespace = %ns, "deleted RandomSecret: its namespace is no longer selected (deletionPolicy: Delete)");
                    Ok(())
                }
                Err(kube::Error::Api(s)) if s.not_found() => Ok(()),
                Err(e) => Err(failed(&format!("deleting RandomSecret {ns}/{name}"), e)),
            }
        }
    }
}

/// Our write's answer into the cache, and the generation it left.
fn remember(ctx: &Context, made: &RandomSecret) {
    if let Some((key, entry)) = cache::StampedEntry::of(made) {
        ctx.stamps.wrote(key.clone(), entry.generation);
        ctx.stamps.stamped.put(key, entry);
    }
}

async fn write_status(
    ctx: &Context,
    crs: &ClusterRandomSecret,
    status: crate::api::cluster::ClusterRandomSecretStatus,
) -> Result<(), kube::Error> {
    let name = crs.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({
        "apiVersion": crate::api::API_VERSION,
        "kind": "ClusterRandomSecret",
        "status": status,
    });
    Api::<ClusterRandomSecret>::all(ctx.client.clone())
        .patch_status(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(())
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}
