//! Deletion protection (issue 28): every version Secret holds the finalizer
//! `randomsecret.io/in-use` while retention keeps it, so a delete by hand
//! only makes it Terminating. Suites that want a version really gone (a lost
//! version, `VersionLost`, a previous version unavailable) force it with
//! [`force_delete_secret`]; the protection suite reads the finalizers with
//! [`finalizers`] and [`in_use`].

use crate::cluster::wait_deleted;
use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Resource};
use serde_json::json;

pub use randomsecret::api::FINALIZER_IN_USE;

/// The finalizers of an object (none: empty).
pub fn finalizers<K: Resource>(o: &K) -> Vec<String> {
    o.meta().finalizers.clone().unwrap_or_default()
}

/// Whether an object holds deletion protection's finalizer.
pub fn in_use<K: Resource>(o: &K) -> bool {
    finalizers(o).iter().any(|f| f == FINALIZER_IN_USE)
}

/// Whether an object is being deleted (Terminating).
pub fn terminating<K: Resource>(o: &K) -> bool {
    o.meta().deletion_timestamp.is_some()
}

/// Removes `finalizer` from Secret `name`, keeping every other one: a merge
/// patch of `metadata.finalizers` conditional on the resourceVersion it was
/// computed from (read again and retried on a conflict). Returns whether the
/// Secret held it; gone is `false`.
pub async fn remove_finalizer(secrets: &Api<Secret>, name: &str, finalizer: &str) -> Result<bool> {
    for _ in 0..20 {
        let Some(s) = secrets.get_metadata_opt(name).await? else {
            return Ok(false);
        };
        let present = s.metadata.finalizers.clone().unwrap_or_default();
        if !present.iter().any(|f| f == finalizer) {
            return Ok(false);
        }
        let rest: Vec<&String> = present.iter().filter(|f| *f != finalizer).collect();
        let patch = json!({"metadata": {
            "resourceVersion": s.metadata.resource_version,
            "finalizers": if rest.is_empty() { json!(null) } else { json!(rest) },
        }});
        match secrets
            .patch_metadata(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(false),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("removing {finalizer} from Secret {name}"));
            }
        }
    }
    bail!("Secret {name}: removing {finalizer} kept conflicting")
}

/// Deletes Secret `name` for good, past deletion protection, and waits until
/// it is gone: what a test does that wants a version really lost (deleted by
/// hand and then its finalizer removed, as `randomsecret release-finalizers`
/// does). The delete comes first: a version being deleted takes no new
/// finalizer (the apiserver refuses one, and the controller adds none), so
/// the controller cannot protect it again between the two steps. Other
/// finalizers are left alone (a Secret holding one stays Terminating and
/// this fails: nothing a suite plants does).
pub async fn force_delete_secret(secrets: &Api<Secret>, name: &str) -> Result<()> {
    match secrets.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("deleting Secret {name}")),
    }
    remove_finalizer(secrets, name, FINALIZER_IN_USE).await?;
    wait_deleted(secrets, name)
        .await
        .with_context(|| format!("Secret {name} forced past deletion protection"))
}
