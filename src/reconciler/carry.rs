//! The values a new version starts from (`crate::version::carry`): the
//! previous version's, for every generated key that nothing rotated, read
//! with one GET when the version is created and never kept.
//!
//! "Previous" is the version that is current until the new one is created
//! (`status.secretName`), and only that very object (the uid the status
//! recorded), proven ours (`crate::proof`) and carrying a record that
//! verifies (`crate::version::record`). If it is gone, is another object
//! under its name, or proves nothing, every generated value is new, and the
//! new version says so (its record, an Event and the `CarriedOver`
//! condition): never silently.
//!
//! Overlap keys (`keys.<k>.previous: true`) take `<k>.previous` from the
//! same read: a rotated key's old value, or a kept key's own pair, so apps
//! that accept a list of keys (session cookies, token signatures) keep what
//! was issued with the old key valid across a rotation. From the previous
//! version only: if it cannot be used, there is no `<k>.previous`, never an
//! older value.
//!
//! A signing key's JWKS starts from the previous version's (its public
//! keys after the current one), read the same way, and only when that
//! version is proven and its record names the JWKS.
//!
//! The read is skipped when it cannot matter: the first version, a version
//! without generated keys, and a rotation of every key that the cached
//! record already shows (a new `spec.rotation` or period), unless an overlap
//! key or a signing key that keeps old public keys wants the previous values.

use super::{Context, ReconcileError, Subject};
use crate::proof::Proof;
use crate::version::carry::{self, Change, GeneratorLineage, Lineage, Rotated};
use crate::version::record::{ANNOTATION_LINEAGE, Record, Unusable};
use crate::version::{Kind, Version, VersionSpec, previous_key};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use std::collections::BTreeMap;

/// Whether any key of the version wants the previous version's values even
/// when it rotates: overlap's `<k>.previous`, a signing key's JWKS.
pub fn previous_wanted(spec: &VersionSpec) -> bool {
    spec.generated
        .values()
        .any(|g| g.previous || g.signing_key().is_some_and(|s| s.keep > 0))
}

/// What is known of the version a new one supersedes.
#[derive(Debug, Default)]
pub struct Previous {
    /// Its data, when it is the object the status recorded (for overlap keys).
    pub data: Option<BTreeMap<String, ByteString>>,
    /// Its lineage, when it is also proven ours and its record verifies.
    pub lineage: Option<Lineage>,
    /// Why its values cannot be carried over, when it existed but cannot be used.
    pub unavailable: Option<String>,
    /// The cached record shows a new `spec.rotation` or period: every key rotates.
    pub every_key_rotates: bool,
}

/// How a new version came to hold its values: for its record, its Event
/// and the status.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Carried {
    /// Per generated key, what the new version did with it.
    pub changes: BTreeMap<String, Change>,
    /// The previous version existed but could not be used: why.
    pub unavailable: Option<String>,
    /// The first version: every key is new, and none of them "rotated".
    pub first: bool,
    /// Per signing key, the previous version's JWKS, which the new one
    /// starts from (`crate::generate::jwks`): only from a proven previous
    /// version whose record says it is that key's.
    pub previous_jwks: BTreeMap<String, ByteString>,
    /// Copied from another namespace: the ClusterRandomSecret whose
    /// values are shared (`super::shared`).
    pub shared: Option<String>,
}

impl Carried {
    /// The record the new version's Secret carries.
    pub fn record(&self, spec: &VersionSpec) -> Record {
        Record {
            lineage: Lineage::of(spec),
            rotated: if self.first {
                Vec::new()
            } else {
                carry::rotated(&self.changes)
            },
            uncarried: self.unavailable.is_some(),
            not_after: None,
        }
    }

    /// A sentence for the Event: which values were kept and which rotated,
    /// and why (none for the first version).
    pub fn summary(&self) -> String {
        if let Some(cluster) = &self.shared {
            return format!("with the values ClusterRandomSecret {cluster} shares");
        }
        if self.first {
            return String::new();
        }
        let kept: Vec<&str> = self
            .changes
            .iter()
            .filter(|(_, c)| **c == Change::Kept)
            .map(|(k, _)| k.as_str())
            .collect();
        let rotated: Vec<String> = self
            .changes
            .iter()
            .filter(|(_, c)| **c != Change::Kept)
            .map(|(k, c)| format!("{k} ({})", c.why(k)))
            .collect();
        let mut parts = Vec::new();
        if !kept.is_empty() {
            parts.push(format!("kept {}", kept.join(", ")));
        }
        if !rotated.is_empty() {
            parts.push(format!("new values for {}", rotated.join(", ")));
        }
        parts.join("; ")
    }
}

/// The values of the new version `spec` taken from `previous` (kept keys,
/// and overlap's `<k>.previous`), and how each generated key came to be.
/// Pure: the caller generates the keys it does not return.
pub fn values(spec: &VersionSpec, previous: &Previous) -> (BTreeMap<String, ByteString>, Carried) {
    let new = Lineage::of(spec);
    let mut changes = if previous.every_key_rotates {
        // Known to rotate from the cache: the exact tokens were not read.
        new.keys
            .keys()
            .map(|k| (k.clone(), Change::Rotated(Rotated::Every)))
            .collect()
    } else {
        carry::plan(previous.lineage.as_ref(), &new)
    };
    let data = previous.data.as_ref();
    let mut out = BTreeMap::new();
    for (k, change) in changes.iter_mut() {
        let old = |key: &str| data.and_then(|d| d.get(key)).cloned();
        if *change == Change::Kept {
            // Its value, and what is kept with it: a certificate's private
            // key, read where the previous record says it is.
            let mut own = vec![(k.clone(), k.clone())];
            if let (
                Some(Kind::Certificate(c)),
                Some(GeneratorLineage::Certificate { certificate }),
            ) = (
                spec.generated.get(k).map(|g| &g.kind),
                previous
                    .lineage
                    .as_ref()
                    .and_then(|l| l.keys.get(k))
                    .map(|l| &l.generator),
            ) {
                own.push((certificate.private_key.clone(), c.private_key.clone()));
            }
            let values: Option<Vec<_>> = own
                .iter()
                .map(|(from, to)| Some((to.clone(), old(from)?)))
                .collect();
            match values {
                Some(values) => out.extend(values),
                // A record that names a key its data lacks: nothing to keep.
                None => *change = Change::Rotated(Rotated::New),
            }
        }
        if spec.generated.get(k).is_some_and(|g| g.previous) {
            // A kept key keeps its pair; a rotated one moves its value there.
            let from = if *change == Change::Kept {
                previous_key(k)
            } else {
                k.clone()
            };
            if let Some(v) = old(&from) {
                out.insert(previous_key(k), v);
            }
        }
    }
    // A certificate kept while its CA could not be (its data was missing)
    // is signed again, like one whose CA rotated.
    for (k, g) in &spec.generated {
        let Kind::Certificate(c) = &g.kind else {
            continue;
        };
        let Some(issuer) = &c.issuer else { continue };
        let ca_rotated = matches!(changes.get(issuer), Some(Change::Rotated(_)));
        if ca_rotated && changes.get(k) == Some(&Change::Kept) {
            out.remove(k);
            out.remove(&c.private_key);
            changes.insert(
                k.clone(),
                Change::Rotated(Rotated::Issuer {
                    issuer: issuer.clone(),
                }),
            );
        }
    }
    let previous_jwks = spec
        .generated
        .iter()
        .filter(|(_, g)| g.signing_key().is_some())
        .filter_map(|(k, _)| {
            let jwks_key = match &previous.lineage.as_ref()?.keys.get(k)?.generator {
                GeneratorLineage::SigningKey { signing_key } => &signing_key.jwks_key,
                _ => return None,
            };
            Some((k.clone(), data?.get(jwks_key)?.clone()))
        })
        .collect();
    let carried = Carried {
        changes,
        previous_jwks,
        unavailable: previous.unavailable.clone(),
        // Nothing was read and nothing said every key rotates: no predecessor.
        first: previous.lineage.is_none()
            && previous.unavailable.is_none()
            && !previous.every_key_rotates,
        shared: None,
    };
    (out, carried)
}

/// Reads what the new version `v` needs of the previous one (one GET at
/// most; none when it cannot matter).
pub async fn previous(
    rs: &Subject,
    v: &Version,
    api: &Api<Secret>,
    ctx: &Context,
) -> Result<Previous, ReconcileError> {
    let Some(name) = rs
        .status
        .secret_name
        .as_deref()
        .filter(|n| *n != v.secret_name)
    else {
        return Ok(Previous::default());
    };
    if v.spec.generated.is_empty() {
        return Ok(Previous::default());
    }
    let seed = ctx
        .caches
        .secrets
        .get(&rs.key.sibling(name))
        .map_or(0, |c| c.record.seed);
    if seed != 0 && seed != Lineage::of(&v.spec).seed() && !previous_wanted(&v.spec) {
        return Ok(Previous {
            every_key_rotates: true,
            ..Default::default()
        });
    }
    let read = api
        .get_opt(name)
        .await
        .map_err(ReconcileError::api(format!(
            "reading Secret {name} (the previous version, to carry its values over)"
        )))?;
    Ok(judge(rs, name, read, ctx))
}

/// What the Secret read under the previous version's name can be used for.
fn judge(rs: &Subject, name: &str, read: Option<Secret>, ctx: &Context) -> Previous {
    let unavailable = |why: String| Previous {
        unavailable: Some(why),
        ..Default::default()
    };
    let Some(secret) = read else {
        return unavailable(format!(
            "the previous version, Secret {name}, is gone (deleted by hand?)"
        ));
    };
    let m = &secret.metadata;
    let recorded = m.uid.as_deref().is_some_and(|uid| rs.status.recorded(name, uid))
        // A status from before uids were recorded (an upgrade).
        || rs.status.recorded_before_uids(name, m.creation_timestamp.as_ref());
    if !recorded {
        return unavailable(format!(
            "Secret {name} is not the previous version the status recorded: another object was made under its name"
        ));
    }
    let key = ctx.caches.secrets.key();
    let lineage = if key.check_secret(&secret) != Proof::Valid {
        Err(format!(
            "Secret {name} does not prove that randomsecret created it with these values"
        ))
    } else {
        let text = m
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_LINEAGE));
        match Record::read(key, rs.key.ns(), name, text.map(String::as_str)) {
            Ok(r) => Ok(r.lineage),
            Err(Unusable::Missing) => Err(format!(
                "the previous version, Secret {name}, was made before carry-over existed: it does not record how its values were generated"
            )),
            Err(Unusable::Invalid) => Err(format!(
                "the record on Secret {name} of how its values were generated ({ANNOTATION_LINEAGE}) does not verify"
            )),
        }
    };
    let (lineage, unavailable) = match lineage {
        Ok(l) => (Some(l), None),
        Err(why) => (None, Some(why)),
    };
    Previous {
        data: secret.data,
        lineage,
        unavailable,
        every_key_rotates: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RandomSecretSpec;

    fn spec(yaml: &str) -> VersionSpec {
        VersionSpec::from_spec(&crate::gitops::yaml::read::<RandomSecretSpec>(yaml).unwrap())
            .unwrap()
    }

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, ByteString> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
            .collect()
    }

    const OLD: &str =
        "keys: {password: {length: 8}, session: {length: 8, previous: true}, pin: {length: 4}}";

    fn read_from(old: &str, d: &[(&str, &str)]) -> Previous {
        Previous {
            data: Some(data(d)),
            lineage: Some(Lineage::of(&spec(old))),
            ..Default::default()
        }
    }

    /// A signing key's JWKS starts from the previous version's, named by its
    /// record: kept or rotated alike; never from an unproven version, nor
    /// from a key that was a string before.
    #[test]
    fn signing_keys_start_from_the_previous_jwks_their_record_names() {
        let old = "keys: {sig: {signingKey: {algorithm: EdDSA, jwksKey: old.jwks}}}";
        let d = [("sig", "PEM"), ("old.jwks", "JWKS")];
        let new = "keys: {sig: {signingKey: {algorithm: EdDSA}}}";
        let (out, c) = values(&spec(new), &read_from(old, &d));
        assert_eq!(out, data(&[("sig", "PEM")]));
        assert_eq!(c.previous_jwks, data(&[("sig", "JWKS")]));
        // Rotated: a new key, but the old public keys still come along.
        let (out, c) = values(&spec(&format!("{new}\nrotation: '2'")), &read_from(old, &d));
        assert!(out.is_empty());
        assert_eq!(c.previous_jwks, data(&[("sig", "JWKS")]));
        // Unproven: the data was read, but nothing is taken from it.
        let unproven = Previous {
            data: Some(data(&d)),
            unavailable: Some("no proof".into()),
            ..Default::default()
        };
        let (out, c) = values(&spec(new), &unproven);
        assert!(out.is_empty() && c.previous_jwks.is_empty());
        // A string before: whatever sits under jwks.json is not a JWKS of ours.
        let was_string = read_from(
            "keys: {sig: {length: 8}}",
            &[("sig", "x"), ("jwks.json", "J")],
        );
        let (_, c) = values(&spec(new), &was_string);
        assert!(c.previous_jwks.is_empty());
        assert!(previous_wanted(&spec(new)));
        assert!(!previous_wanted(&spec(
            "keys: {sig: {signingKey: {algorithm: EdDSA, keep: 0}}}"
        )));
    }

    /// A kept certificate keeps its private key (read where the record
    /// says, written where the spec now says); a new CA signs its leaves
    /// again; a CA whose data is gone counts as new, and so do its leaves.
    #[test]
    fn certificates_keep_their_keys_and_follow_their_ca() {
        let old = "keys: {ca.crt: {certificate: {isCA: true}}, tls.crt: {certificate: {issuer: ca.crt, commonName: db, privateKey: old.key}}, pw: {length: 8}}";
        let d = [
            ("ca.crt", "CA"),
            ("ca.key", "CAKEY"),
            ("tls.crt", "LEAF"),
            ("old.key", "LEAFKEY"),
            ("pw", "p"),
        ];
        let new = "keys: {ca.crt: {certificate: {isCA: true}}, tls.crt: {certificate: {issuer: ca.crt, commonName: db}}, pw: {length: 8}}";
        let (out, c) = values(&spec(new), &read_from(old, &d));
        assert_eq!(
            out,
            data(&[
                ("ca.crt", "CA"),
                ("ca.key", "CAKEY"),
                ("tls.crt", "LEAF"),
                ("tls.key", "LEAFKEY"),
                ("pw", "p")
            ])
        );
        assert!(c.changes.values().all(|c| *c == Change::Kept));
        // The CA's own rotation token: the leaf is signed again, pw kept.
        let rotated = new.replace("isCA: true}", "isCA: true}, rotation: '2'");
        let (out, c) = values(&spec(&rotated), &read_from(old, &d));
        assert_eq!(out, data(&[("pw", "p")]));
        assert_eq!(
            c.changes["tls.crt"].why("tls.crt"),
            "rotated: signed again by the new certificate of keys.ca.crt"
        );
        // The CA's key is missing from the data: nothing of the chain is kept.
        let partial: Vec<_> = d.iter().copied().filter(|(k, _)| *k != "ca.key").collect();
        let (out, c) = values(&spec(new), &read_from(old, &partial));
        assert_eq!(out, data(&[("pw", "p")]));
        assert!(matches!(
            c.changes["tls.crt"],
            Change::Rotated(Rotated::Issuer { .. })
        ));
    }

    #[test]
    fn kept_keys_take_the_previous_values_and_overlap_pairs_follow() {
        let prev = read_from(
            OLD,
            &[
                ("password", "p1"),
                ("session", "s2"),
                ("session.previous", "s1"),
                ("pin", "1234"),
            ],
        );
        // An edit that rotates nothing: every value and the pair carried.
        let (out, c) = values(&spec(&format!("{OLD}\nstatic: {{u: x}}")), &prev);
        assert_eq!(
            out,
            data(&[
                ("password", "p1"),
                ("session", "s2"),
                ("session.previous", "s1"),
                ("pin", "1234")
            ])
        );
        assert!(c.unavailable.is_none() && carry::rotated(&c.changes).is_empty());
        assert_eq!(c.summary(), "kept password, pin, session");
        // The session key rotated alone: its old value moves to .previous.
        let (out, c) = values(
            &spec(&OLD.replace(
                "{length: 8, previous: true}",
                "{length: 8, previous: true, rotation: '2'}",
            )),
            &prev,
        );
        assert_eq!(
            out,
            data(&[
                ("password", "p1"),
                ("session.previous", "s2"),
                ("pin", "1234")
            ])
        );
        assert_eq!(carry::rotated(&c.changes), ["session"]);
        assert_eq!(
            c.summary(),
            "kept password, pin; new values for session (rotated: keys.session.rotation (unset) -> 2)"
        );
        assert_eq!(c.record(&spec(OLD)).rotated, ["session"]);
    }

    #[test]
    fn nothing_is_carried_without_a_proven_lineage() {
        let s = spec(OLD);
        // Unavailable (gone, unproven, no record): fresh, and said so.
        let gone = Previous {
            unavailable: Some("gone".into()),
            ..Default::default()
        };
        let (out, c) = values(&s, &gone);
        assert!(out.is_empty());
        assert_eq!(carry::rotated(&c.changes), ["password", "pin", "session"]);
        assert!(c.record(&s).uncarried);
        // Data without a lineage (a version from before records): overlap only.
        let legacy = Previous {
            data: Some(data(&[("password", "p1"), ("session", "s1")])),
            unavailable: Some("no record".into()),
            ..Default::default()
        };
        let (out, _) = values(&s, &legacy);
        assert_eq!(out, data(&[("session.previous", "s1")]));
        // The first version: nothing read, nothing unavailable.
        let (out, c) = values(&s, &Previous::default());
        assert!(out.is_empty() && !c.record(&s).uncarried);
        // Every key is new, and none is listed as rotated, nor in the Event.
        assert_eq!(c.changes.len(), 3);
        assert!(c.record(&s).rotated.is_empty() && c.summary().is_empty());
        // A record naming a key its data lacks: that key is new.
        let odd = read_from(OLD, &[("password", "p1")]);
        let (out, c) = values(&s, &odd);
        assert_eq!(out, data(&[("password", "p1")]));
        assert_eq!(carry::rotated(&c.changes), ["pin", "session"]);
    }

    #[test]
    fn a_rotation_seen_in_the_cache_rotates_every_key() {
        let every = Previous {
            every_key_rotates: true,
            ..Default::default()
        };
        let (out, c) = values(&spec(OLD), &every);
        assert!(out.is_empty());
        assert!(
            c.changes
                .values()
                .all(|c| *c == Change::Rotated(Rotated::Every))
        );
        assert!(
            c.summary()
                .contains("rotated: spec.rotation or the rotateEvery period changed")
        );
    }

    #[test]
    fn the_flag_is_part_of_the_name_and_the_previous_key_must_be_free() {
        let on = spec("keys: {k: {length: 8, previous: true}}");
        let off = spec("keys: {k: {length: 8, previous: false}}");
        let absent = spec("keys: {k: {length: 8}}");
        assert_eq!(off.hash(), absent.hash(), "false is the default");
        assert_ne!(on.hash(), absent.hash());
        assert!(
            on.canonical()
                .contains("generate:1:k:8:alphanumeric:0::previous\n")
        );
        let clash = crate::gitops::yaml::read::<RandomSecretSpec>(
            "keys: {k: {length: 8, previous: true}}\nstatic: {k.previous: x}",
        )
        .unwrap();
        assert_eq!(
            VersionSpec::from_spec(&clash),
            Err(crate::version::SpecError::DerivedKeyConflict {
                key: "k.previous".into(),
                by: "k".into(),
                what: "previous value"
            })
        );
    }
}
