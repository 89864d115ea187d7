//! Values a ClusterRandomSecret shares (`values: Shared`): every selected
//! namespace's version of the same spec holds the same values. The first
//! namespace to need a version makes it as any version is made; every
//! other copies it, as the cluster push does: from a version proven ours,
//! read whole, never kept.
//!
//! Trust: the RandomSecret being reconciled copies only when its own
//! stamp claim, shared, is proven for its namespace (`stamp::claim`); and
//! it copies only from another namespace's RandomSecret of the same name
//! whose claim, for the same ClusterRandomSecret, is proven too, and only
//! that RandomSecret's own version (it owns it) whose proof verifies over
//! its data. A look-alike RandomSecret or Secret in a namespace the
//! ClusterRandomSecret does not stamp is never a source.
//!
//! One leader makes versions, so a lock per version name (striped) keeps
//! two namespaces from both making new values for the same version: the
//! second waits, then finds the first's in the cache and copies it.

use super::{Context, ReconcileError, Subject};
use crate::api::{LABEL_HASH, LABEL_NAME};
use crate::cache::secrets::Owner;
use crate::cache::{Key, Uid};
use crate::proof::Proof;
use crate::version::Version;
use crate::version::carry::Lineage;
use crate::version::record::{ANNOTATION_LINEAGE, Record};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// How many locks versions are striped over: two names sharing one only
/// wait for each other's first creation.
const STRIPES: usize = 32;

/// The locks that make each shared version's values once.
pub struct Locks([tokio::sync::Mutex<()>; STRIPES]);

impl Default for Locks {
    fn default() -> Self {
        Locks(std::array::from_fn(|_| tokio::sync::Mutex::new(())))
    }
}

impl Locks {
    /// Held while the values of version `secret` of `cluster` are looked
    /// for and, if none are found, made.
    pub async fn hold(&self, cluster: &str, secret: &str) -> tokio::sync::MutexGuard<'_, ()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (cluster, secret).hash(&mut h);
        self.0[(h.finish() as usize) % STRIPES].lock().await
    }
}

/// The ClusterRandomSecret whose values `rs`'s versions share: when its
/// claim is proven for its own namespace. None for every other RandomSecret.
pub fn cluster_of(rs: &Subject, ctx: &Context) -> Option<String> {
    let claim = rs.shared.as_deref()?;
    let key = ctx.caches.secrets.key();
    (claim.cluster == rs.key.name.as_str() && claim.proven(key, rs.key.ns()))
        .then(|| claim.cluster.clone())
}

/// A version's values, copied from another namespace's.
pub struct Copied {
    pub data: BTreeMap<String, ByteString>,
    /// The source's record (what rotated, whether it carried), signed
    /// anew for this namespace by `ensure::build_secret`.
    pub record: Record,
}

/// Version `v` as another namespace stamped by `cluster` holds it, if one
/// does: the first proven one, by namespace. A read that fails is an error
/// (retried): taking new values instead would break the sharing.
pub async fn copy(
    rs: &Subject,
    v: &Version,
    cluster: &str,
    ctx: &Context,
) -> Result<Option<Copied>, ReconcileError> {
    let key = ctx.caches.secrets.key();
    let sources = ctx
        .caches
        .randomsecrets
        .shared_named(&rs.key.name)
        .into_iter()
        .filter(|(k, _, claim)| {
            k.ns() != rs.key.ns() && claim.cluster == cluster && claim.proven(key, k.ns())
        })
        .filter(|(k, uid, _)| holds(ctx, &k.sibling(&v.secret_name), *uid, &rs.key.name, &v.hash));
    for (source, _, _) in sources {
        let api: Api<Secret> = Api::namespaced(ctx.client.clone(), source.ns());
        let read = api.get_opt(&v.secret_name).await.map_err(ReconcileError::api(format!(
            "reading Secret {} of another namespace ClusterRandomSecret {cluster} shares values with",
            v.secret_name
        )))?;
        let Some(secret) = read.filter(|s| proven(s, ctx, &rs.key.name, &v.hash)) else {
            continue;
        };
        let annotation = secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_LINEAGE));
        let record = Record::read(
            key,
            source.ns(),
            &v.secret_name,
            annotation.map(|s| s.as_str()),
        )
        .unwrap_or_else(|_| Record::made_before_carry_over(&v.spec));
        return Ok(Some(Copied {
            data: secret.data.unwrap_or_default(),
            record: Record {
                lineage: Lineage::of(&v.spec),
                not_after: None,
                ..record
            },
        }));
    }
    Ok(None)
}

/// Whether the cache shows `secret` as a version of RandomSecret `name`
/// (hash `hash`) that RandomSecret `uid` owns, with a proof over its metadata.
fn holds(ctx: &Context, secret: &Key, uid: Uid, name: &str, hash: &str) -> bool {
    ctx.caches.secrets.get(secret).is_some_and(|s| {
        s.proof == Proof::Valid
            && s.randomsecret.as_deref() == Some(name)
            && s.has_hash(hash)
            && s.owners
                .iter()
                .any(|o| matches!(o, Owner::RandomSecret { uid: u, .. } if *u == uid))
    })
}

/// Whether `secret`, read whole, is our version `hash` of RandomSecret
/// `name`: its labels as named and a proof over its data.
fn proven(secret: &Secret, ctx: &Context, name: &str, hash: &str) -> bool {
    let label = |k: &str| {
        secret
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(k))
            .map(|s| s.as_str())
    };
    label(LABEL_NAME) == Some(name)
        && label(LABEL_HASH) == Some(hash)
        && ctx.caches.secrets.key().check_secret(secret) == Proof::Valid
}
