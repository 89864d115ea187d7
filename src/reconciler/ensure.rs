//! Makes sure the current version's Secret exists: created when missing
//! (with the values `super::carry` takes over and fresh ones for the rest,
//! signed, `crate::proof`, with its record, `crate::version::record`), and
//! otherwise proven ours.

use super::carry::Carried;
use super::{Context, MANAGER, ReconcileError, Subject, proven};
use crate::api::{ANNOTATION_CREATED, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY};
use crate::cache::Uid;
use crate::cache::secrets::Version as Cached;
use crate::generate;
use crate::phase;
use crate::proof::ANNOTATION_PROOF;
use crate::runtime::status::Answer as _;
use crate::version::Kind;
use crate::version::Version;
use crate::version::record::{ANNOTATION_LINEAGE, Record};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use std::collections::BTreeMap;
use tracing::Instrument as _;

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

/// Decides whether the Secret `s` (named `name`) is the version `hash` of
/// RandomSecret `rs_name` (uid `rs_uid`). `proven`: its proof of creation
/// held (`proven::ours`).
pub fn classify(
    name: &str,
    s: &Cached,
    proven: bool,
    rs_name: &str,
    rs_uid: Uid,
    hash: &str,
) -> Existing {
    let Some(owner) = s.randomsecret.as_deref().filter(|_| s.managed) else {
        return Existing::Foreign(format!(
            "Secret {name} already exists and was not created by randomsecret; it is left untouched: rename or delete it, or set spec.secretName to another base name"
        ));
    };
    if !proven {
        return Existing::Foreign(format!(
            "Secret {name} carries randomsecret's labels but not a valid proof that randomsecret created it ({ANNOTATION_PROOF}): someone else made it, so it is left untouched and never used as a version. Find out who created it and delete it, or change spec.rotation to move to a new name"
        ));
    }
    if owner != rs_name || !s.has_hash(hash) {
        return Existing::Foreign(format!(
            "Secret {name} belongs to RandomSecret {owner}: give this RandomSecret another spec.secretName"
        ));
    }
    let owned = s.owners.iter().any(
        |o| matches!(o, crate::cache::secrets::Owner::RandomSecret { uid, .. } if *uid == rs_uid),
    );
    if owned {
        Existing::Owned
    } else {
        Existing::Adoptable
    }
}

/// What ensuring the current version found or did.
#[derive(Debug, PartialEq, Eq)]
pub enum Ensured {
    /// Created now, and how it came to hold its values.
    Created(Carried),
    Existed,
    /// Ours, left by an earlier RandomSecret of the same name: retention adopts it.
    Adopted,
}

/// Fresh values for the generated keys of `v` that `data` (the values
/// carried over) lacks. A costly one (an RSA key) is made in the
/// key-generation lane (`ctx.keygen`), without holding a runner slot.
pub async fn generate_missing(
    v: &Version,
    data: &mut BTreeMap<String, ByteString>,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    let failed =
        |key: &str, e: &dyn std::fmt::Display| ReconcileError::Random(format!("keys.{key}: {e}"));
    // Certificates a CA signs come last: their CA's (kept or new) is there.
    let mut keys: Vec<_> = v.spec.generated.iter().collect();
    keys.sort_by_key(|(_, g)| matches!(&g.kind, Kind::Certificate(c) if c.issuer.is_some()));
    for (key, g) in keys {
        if data.contains_key(key) || g.kind.is_derived() {
            continue;
        }
        let kind = g.kind.clone();
        let signer = match &kind {
            Kind::Certificate(c) => c.issuer.as_ref().map(|i| signer_of(&v.spec, data, i)),
            _ => None,
        };
        let signer = signer.transpose().map_err(|e| failed(key, &e))?;
        let now = k8s_openapi::jiff::Timestamp::now().as_second();
        let name = key.clone();
        let make = move || -> Result<Vec<(String, Vec<u8>)>, String> {
            match &kind {
                Kind::Certificate(c) => {
                    let s = signer
                        .as_ref()
                        .map(|(cert, key)| generate::cert::Signer { cert, key });
                    let issued =
                        generate::cert::issue(&name, c, s, now).map_err(|e| e.to_string())?;
                    Ok(vec![
                        (name, issued.cert.into_bytes()),
                        (c.private_key.clone(), issued.key.into_bytes()),
                    ])
                }
                kind => Ok(vec![(
                    name,
                    generate::key_value(kind).map_err(|e| e.to_string())?,
                )]),
            }
        };
        let values = if generate::costly(&g.kind) {
            ctx.keygen.run(make).await.map_err(|e| failed(key, &e))?
        } else {
            make()
        }
        .map_err(|e| failed(key, &e))?;
        for (name, value) in values {
            data.insert(name, ByteString(value));
        }
    }
    Ok(())
}

/// The certificate and private key of CA `issuer` in `data` (kept or new).
fn signer_of(
    spec: &crate::version::VersionSpec,
    data: &BTreeMap<String, ByteString>,
    issuer: &str,
) -> Result<(String, String), String> {
    let Some(Kind::Certificate(ca)) = spec.generated.get(issuer).map(|g| &g.kind) else {
        return Err(format!("issuer keys.{issuer} is not a certificate"));
    };
    let text = |k: &str| {
        data.get(k)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
            .ok_or_else(|| format!("issuer keys.{issuer} has no {k} yet"))
    };
    Ok((text(issuer)?, text(&ca.private_key)?))
}

/// Adds the keys `v` derives from its own values (JWKS, public keys,
/// htpasswd lines, templates) to `data`, in the key-generation lane when
/// bcrypt is among them. A template that fails on these values is the spec's to
/// fix (`InvalidTemplate`).
pub async fn derive(
    v: &Version,
    data: &mut BTreeMap<String, ByteString>,
    how: &Carried,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    let failed = |e: generate::derive::DeriveError| match e {
        generate::derive::DeriveError::Template(t) => ReconcileError::Spec(t.into()),
        e => ReconcileError::Random(e.to_string()),
    };
    if !generate::derive::costly(&v.spec) {
        return generate::derive::all(&v.spec, data, &how.previous_jwks).map_err(failed);
    }
    let (spec, previous) = (v.spec.clone(), how.previous_jwks.clone());
    let mut values = std::mem::take(data);
    let (values, result) = ctx
        .keygen
        .run(move || {
            let result = generate::derive::all(&spec, &mut values, &previous);
            (values, result)
        })
        .await
        .map_err(|e| ReconcileError::Random(format!("deriving keys: {e}")))?;
    *data = values;
    result.map_err(failed)
}

/// The Secret for a new version, owned by the RandomSecret and by whatever
/// already references the name. `values`: every key's value (generated or
/// carried over by [`generate_missing`], derived by [`derive`]). `how`: how
/// it came to hold them, for its record.
pub fn build_secret(
    rs: &Subject,
    v: &Version,
    values: BTreeMap<String, ByteString>,
    mut record: Record,
    ctx: &Context,
) -> Result<Secret, ReconcileError> {
    let mut data = values;
    record.not_after = v
        .spec
        .generated
        .iter()
        .filter(|(_, g)| matches!(g.kind, Kind::Certificate(_)))
        .filter_map(|(k, _)| {
            let pem = std::str::from_utf8(&data.get(k)?.0).ok()?;
            generate::cert::not_after_of(pem)
        })
        .min();
    for (key, value) in &v.spec.statics {
        data.insert(key.clone(), ByteString(value.clone().into_bytes()));
    }
    let mut labels = rs.spec.secret_labels.clone().unwrap_or_default();
    if let Some(shard) = &ctx.shard {
        shard.label(&mut labels, &rs.shard);
    }
    labels.insert(LABEL_NAME.into(), rs.key.name.to_string());
    labels.insert(LABEL_HASH.into(), v.hash.clone());
    labels.insert(LABEL_MANAGED_BY.into(), MANAGED_BY.into());
    let mut annotations = rs.spec.secret_annotations.clone().unwrap_or_default();
    // The controller's own keys are its to write (the schema refuses them;
    // an object admitted before that rule may still hold one).
    annotations.retain(|k, _| !k.starts_with(crate::api::PREFIX));
    annotations.insert(
        ANNOTATION_CREATED.into(),
        k8s_openapi::jiff::Timestamp::now().to_string(),
    );
    let key = ctx.caches.secrets.key();
    annotations.insert(
        ANNOTATION_LINEAGE.into(),
        record.sign(key, rs.key.ns(), &v.secret_name),
    );
    // The push targets it is made for: one added later starts with the next.
    if let Some(targets) = crate::push::targets::of_spec(rs.spec.push.as_ref()) {
        annotations.insert(crate::push::targets::ANNOTATION.into(), targets);
    }
    let holders = ctx.caches.holders.of(&rs.key.sibling(&v.secret_name));
    let mut secret = Secret {
        metadata: ObjectMeta {
            name: Some(v.secret_name.clone()),
            namespace: Some(rs.key.ns().to_string()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(
                std::iter::once(rs.owner_reference())
                    .chain(
                        holders
                            .iter()
                            .filter(|h| !h.covered)
                            .take(super::retention::MAX_HOLDER_OWNERS)
                            .map(|h| h.owner_reference()),
                    )
                    .collect(),
            ),
            // Deletion protection (`super::protection`): in the create
            // body, so it costs no request.
            finalizers: ctx
                .protect
                .then(|| vec![crate::api::FINALIZER_IN_USE.to_string()]),
            ..Default::default()
        },
        immutable: Some(true),
        type_: Some(v.spec.secret_type.clone()),
        data: Some(data),
        ..Default::default()
    };
    let proof = key.sign(&secret);
    if let Some(a) = secret.metadata.annotations.as_mut() {
        a.insert(ANNOTATION_PROOF.into(), proof);
    }
    Ok(secret)
}

/// A live version is missing. When its namespace is being deleted, that is
/// why (the namespace's Secrets go before its RandomSecrets): a dry-run
/// create, which the apiserver refuses in a terminating namespace, tells it
/// without reading namespaces, so no false alarm is raised. Anything else is
/// a lost version.
async fn lost(api: &Api<Secret>, name: &str) -> ReconcileError {
    let probe = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        immutable: Some(true),
        ..Default::default()
    };
    let pp = PostParams {
        dry_run: true,
        field_manager: Some(MANAGER.into()),
    };
    match api.create(&pp, &probe).await {
        Err(e) => {
            let err = ReconcileError::api(format!("creating Secret {name} (dry run)"))(e);
            if err.namespace_terminating() {
                err
            } else {
                ReconcileError::VersionLost(name.to_string())
            }
        }
        Ok(_) => ReconcileError::VersionLost(name.to_string()),
    }
}

/// Makes sure the current version exists; returns what happened and its
/// metadata as cached.
pub async fn version(
    rs: &Subject,
    v: &Version,
    ctx: &Context,
) -> Result<(Ensured, Cached), ReconcileError> {
    let key = rs.key.sibling(&v.secret_name);
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), rs.key.ns());
    let existing = match ctx.caches.secrets.get(&key) {
        Some(s) => s,
        // A name that was live is never created again with new values (a
        // released one may be: nothing referenced it when it went).
        None if rs.status.was_live(&v.secret_name) && !rs.status.released(&v.secret_name) => {
            // The cache may not show yet what another replica created: ask.
            let read = api
                .get_opt(&v.secret_name)
                .await
                .map_err(ReconcileError::api(format!(
                    "reading Secret {}",
                    v.secret_name
                )))?;
            let Some(secret) = read else {
                return Err(lost(&api, &v.secret_name).await);
            };
            fetched(rs, &secret, &api, ctx).await?
        }
        None => {
            let pp = PostParams {
                field_manager: Some(MANAGER.into()),
                ..Default::default()
            };
            let doing = || format!("creating Secret {}", v.secret_name);
            ctx.may_write()?;
            // Shared values: held until this version is created, so no
            // other namespace makes values of its own meanwhile.
            let mut _made_once = None;
            let copied = match super::shared::cluster_of(rs, ctx) {
                None => None,
                Some(cluster) => {
                    let mut c = super::shared::copy(rs, v, &cluster, ctx).await?;
                    if c.is_none() {
                        _made_once = Some(ctx.shared_locks.hold(&cluster, &v.secret_name).await);
                        c = super::shared::copy(rs, v, &cluster, ctx).await?;
                    }
                    c.map(|c| (c, cluster))
                }
            };
            let (values, how, record) = match copied {
                Some((c, cluster)) => {
                    let how = Carried {
                        shared: Some(cluster),
                        ..Default::default()
                    };
                    (c.data, how, c.record)
                }
                None => {
                    let previous = super::carry::previous(rs, v, &api, ctx)
                        .instrument(phase!("carry_read"))
                        .await?;
                    let (mut values, how) = super::carry::values(&v.spec, &previous);
                    async {
                        generate_missing(v, &mut values, ctx).await?;
                        derive(v, &mut values, &how, ctx).await
                    }
                    .instrument(phase!("generate"))
                    .await?;
                    let record = how.record(&v.spec);
                    (values, how, record)
                }
            };
            let secret = build_secret(rs, v, values, record, ctx)?;
            match api.create(&pp, &secret).instrument(phase!("create")).await {
                Ok(created) => {
                    // Only the metadata is kept; the values are never cached.
                    ctx.caches.secrets.write_through(&created.metadata, true);
                    let cached = ctx.caches.secrets.get(&key).ok_or_else(|| {
                        ReconcileError::NameConflict(format!(
                            "Secret {} came back without a uid",
                            v.secret_name
                        ))
                    })?;
                    return Ok((Ensured::Created(how), cached));
                }
                // Cache lag, a retry, a second leader, or someone else's
                // Secret: AlreadyExists (or a 409 of a reason this client does
                // not know, read as before: the Secret found decides).
                Err(kube::Error::Api(s)) if s.conflict_or_exists() => {
                    let secret = api
                        .get(&v.secret_name)
                        .await
                        .map_err(ReconcileError::api(doing()))?;
                    fetched(rs, &secret, &api, ctx).await?
                }
                // The apiserver refused the Secret itself (a Secret type's rules, say): retrying cannot help.
                Err(kube::Error::Api(s)) if s.invalid() => {
                    return Err(ReconcileError::SecretRejected {
                        name: v.secret_name.clone(),
                        message: s.message.clone(),
                    });
                }
                Err(e) => return Err(ReconcileError::api(doing())(e)),
            }
        }
    };
    let name = &v.secret_name;
    let (existing, proven) = match proven::ours(rs, name, existing.clone(), ctx).await? {
        Some(c) => (c, true),
        None => (existing, false),
    };
    match classify(name, &existing, proven, &rs.key.name, rs.uid, &v.hash) {
        Existing::Owned => Ok((Ensured::Existed, existing)),
        Existing::Adoptable => Ok((Ensured::Adopted, existing)),
        Existing::Foreign(why) => Err(ReconcileError::NameConflict(why)),
    }
}

/// [`found`], relabelled into this shard if another shard's labels are on
/// it (made there before the RandomSecret moved here, `super::handover`).
async fn fetched(
    rs: &Subject,
    secret: &Secret,
    api: &Api<Secret>,
    ctx: &Context,
) -> Result<Cached, ReconcileError> {
    let cached = found(secret, ctx)?;
    if super::handover::relabel(rs, &secret.metadata, api, ctx).await? {
        let key = rs
            .key
            .sibling(secret.metadata.name.as_deref().unwrap_or_default());
        return Ok(ctx.caches.secrets.get(&key).unwrap_or(cached));
    }
    Ok(cached)
}

/// A Secret read whole (its name was taken, or the cache did not show it).
fn found(secret: &Secret, ctx: &Context) -> Result<Cached, ReconcileError> {
    proven::found(secret, ctx).ok_or_else(|| {
        ReconcileError::NameConflict(format!(
            "Secret {} exists without a uid",
            secret.metadata.name.as_deref().unwrap_or_default()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RS_UID: &str = "0f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
    const OTHER_UID: &str = "1f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn cached(labels: serde_json::Value, owner_uids: &[&str]) -> Cached {
        let owners: Vec<_> = owner_uids
            .iter()
            .map(|u| json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "name": "db", "uid": u, "controller": true}))
            .collect();
        let meta: ObjectMeta = serde_json::from_value(json!({
            "name": "db-abc", "uid": "2f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b",
            "labels": labels, "ownerReferences": owners,
        }))
        .unwrap();
        Cached::of(&meta, &crate::proof::ProofKey::generate().unwrap()).unwrap()
    }

    fn ours() -> serde_json::Value {
        json!({LABEL_MANAGED_BY: MANAGED_BY, LABEL_NAME: "db", LABEL_HASH: "abc"})
    }

    #[test]
    fn labels_without_a_proof_are_foreign() {
        let uid = Uid::parse(RS_UID).unwrap();
        let s = cached(ours(), &[RS_UID]);
        assert!(
            matches!(classify("db-abc", &s, false, "db", uid, "abc"), Existing::Foreign(m) if m.contains("not a valid proof"))
        );
    }

    #[test]
    fn classifies_owned_adoptable_and_foreign() {
        let uid = Uid::parse(RS_UID).unwrap();
        assert_eq!(
            classify("db-abc", &cached(ours(), &[RS_UID]), true, "db", uid, "abc"),
            Existing::Owned
        );
        assert_eq!(
            classify(
                "db-abc",
                &cached(ours(), &[OTHER_UID]),
                true,
                "db",
                uid,
                "abc"
            ),
            Existing::Adoptable
        );
        assert_eq!(
            classify("db-abc", &cached(ours(), &[]), true, "db", uid, "abc"),
            Existing::Adoptable
        );
        assert!(
            matches!(classify("db-abc", &cached(json!({}), &[]), true, "db", uid, "abc"), Existing::Foreign(m) if m.contains("not created by randomsecret"))
        );
        assert!(
            matches!(classify("db-abc", &cached(ours(), &[OTHER_UID]), true, "other", uid, "abc"), Existing::Foreign(m) if m.contains("belongs to RandomSecret db"))
        );
        assert!(matches!(
            classify("db-abc", &cached(ours(), &[RS_UID]), true, "db", uid, "xyz"),
            Existing::Foreign(_)
        ));
    }
}
