//! Proof that this controller created a Secret.
//!
//! Anyone who can create a Secret can give it our labels, and a future
//! version's name is computable from git. So a Secret is a version only if
//! it carries `randomsecret.io/proof`: an HMAC-SHA256, under a key only the
//! controller holds (`runtime::proofkey`), over its namespace, name,
//! RandomSecret, hash and a second HMAC over its type and data:
//!
//! `v1.<hex HMAC(namespace, name, randomsecret, hash, data-mac)>.<hex data-mac>`
//!
//! The metadata part can be checked from the metadata-only cache; the data
//! part when the whole Secret is read (after AlreadyExists, or to confirm a
//! version the cache does not show). The data MAC is keyed, so the
//! annotation tells nothing about the values.

use crate::api::{LABEL_HASH, LABEL_NAME};
use hmac::{Hmac, KeyInit, Mac};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::TryRng;
use sha2::Sha256;
use std::collections::BTreeMap;

pub const ANNOTATION_PROOF: &str = crate::api::key!("proof");
/// Bytes of key.
pub const KEY_LEN: usize = 32;
const PREFIX: &str = "v1.";

/// What a Secret's proof annotation says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// Made by this controller (under the key it holds).
    Valid,
    /// No proof annotation: made by someone else, or by a release before proofs.
    Missing,
    /// An annotation that does not verify: made or changed by someone else.
    Invalid,
}

/// The controller's key. Never logged (Debug prints nothing of it).
#[derive(Clone)]
pub struct ProofKey([u8; KEY_LEN]);

impl std::fmt::Debug for ProofKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProofKey(..)")
    }
}

type HmacSha256 = Hmac<Sha256>;

/// Feeds one field, length-prefixed so that no two field lists read alike.
fn field(mac: &mut HmacSha256, bytes: &[u8]) {
    mac.update(&(bytes.len() as u64).to_be_bytes());
    mac.update(bytes);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

impl ProofKey {
    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> Result<Self, rand::rngs::SysError> {
        let mut key = [0u8; KEY_LEN];
        rand::rngs::SysRng.try_fill_bytes(&mut key)?;
        Ok(ProofKey(key))
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Some(ProofKey(bytes.try_into().ok()?))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    fn mac(&self, domain: &str) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        field(&mut mac, domain.as_bytes());
        mac
    }

    // The domains below are spelled out, not built from crate::api: they
    // are part of every proof ever written, and must outlive any rename.

    /// Keyed digest of a Secret's type and data.
    fn data_mac(&self, type_: &str, data: &BTreeMap<String, ByteString>) -> Vec<u8> {
        let mut mac = self.mac("randomsecret.io/proof/v1/data");
        field(&mut mac, type_.as_bytes());
        mac.update(&(data.len() as u64).to_be_bytes());
        for (k, v) in data {
            field(&mut mac, k.as_bytes());
            field(&mut mac, &v.0);
        }
        mac.finalize().into_bytes().to_vec()
    }

    fn meta_mac(&self, meta: &Identity, data_mac: &[u8]) -> HmacSha256 {
        let mut mac = self.mac("randomsecret.io/proof/v1/meta");
        for f in [meta.namespace, meta.name, meta.randomsecret, meta.hash] {
            field(&mut mac, f.as_bytes());
        }
        field(&mut mac, data_mac);
        mac
    }

    /// The proof annotation for a Secret about to be created.
    pub fn sign(&self, secret: &Secret) -> String {
        let id = Identity::of(&secret.metadata);
        let data_mac = self.data_mac(
            secret.type_.as_deref().unwrap_or("Opaque"),
            secret.data.as_ref().unwrap_or(&BTreeMap::new()),
        );
        let meta_mac = self.meta_mac(&id, &data_mac).finalize().into_bytes();
        format!("{PREFIX}{}.{}", hex(&meta_mac), hex(&data_mac))
    }

    /// Checks the proof against the metadata alone (what the cache holds).
    pub fn check_metadata(&self, meta: &ObjectMeta) -> Proof {
        self.parsed(meta)
            .map_or_else(|p| p, |(_, valid)| bool_proof(valid))
    }

    /// Checks the proof against the whole Secret: metadata, type and data,
    /// and that it is immutable (so what was checked stays true).
    pub fn check_secret(&self, secret: &Secret) -> Proof {
        match self.parsed(&secret.metadata) {
            Err(p) => p,
            Ok((data_mac, valid)) => bool_proof(
                valid
                    && secret.immutable == Some(true)
                    && data_mac
                        == self.data_mac(
                            secret.type_.as_deref().unwrap_or("Opaque"),
                            secret.data.as_ref().unwrap_or(&BTreeMap::new()),
                        ),
            ),
        }
    }

    /// A proof over named fields, for an object of ours that is not a
    /// version (a downstream cluster's anchor, `push::clusters`): `v1.<hex HMAC>`.
    pub fn sign_fields(&self, domain: &str, fields: &[&str]) -> String {
        format!(
            "{PREFIX}{}",
            hex(&self.fields_mac(domain, fields).finalize().into_bytes())
        )
    }

    /// Whether `text` is [`Self::sign_fields`] of the same domain and fields.
    pub fn check_fields(&self, domain: &str, fields: &[&str], text: Option<&str>) -> Proof {
        let Some(text) = text else {
            return Proof::Missing;
        };
        match text.strip_prefix(PREFIX).and_then(unhex) {
            Some(mac) => bool_proof(self.fields_mac(domain, fields).verify_slice(&mac).is_ok()),
            None => Proof::Invalid,
        }
    }

    fn fields_mac(&self, domain: &str, fields: &[&str]) -> HmacSha256 {
        let mut mac = self.mac(&format!("randomsecret.io/proof/v1/fields/{domain}"));
        mac.update(&(fields.len() as u64).to_be_bytes());
        for f in fields {
            field(&mut mac, f.as_bytes());
        }
        mac
    }

    /// The annotation's data MAC, and whether its metadata MAC verifies.
    fn parsed(&self, meta: &ObjectMeta) -> Result<(Vec<u8>, bool), Proof> {
        let text = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_PROOF))
            .ok_or(Proof::Missing)?;
        let (meta_hex, data_hex) = text
            .strip_prefix(PREFIX)
            .and_then(|t| t.split_once('.'))
            .ok_or(Proof::Invalid)?;
        let (Some(meta_mac), Some(data_mac)) = (unhex(meta_hex), unhex(data_hex)) else {
            return Err(Proof::Invalid);
        };
        let valid = self
            .meta_mac(&Identity::of(meta), &data_mac)
            .verify_slice(&meta_mac)
            .is_ok();
        Ok((data_mac, valid))
    }
}

fn bool_proof(valid: bool) -> Proof {
    if valid { Proof::Valid } else { Proof::Invalid }
}

/// What the metadata MAC covers.
struct Identity<'a> {
    namespace: &'a str,
    name: &'a str,
    randomsecret: &'a str,
    hash: &'a str,
}

impl<'a> Identity<'a> {
    fn of(meta: &'a ObjectMeta) -> Self {
        let label = |k: &str| {
            meta.labels
                .as_ref()
                .and_then(|l| l.get(k))
                .map_or("", String::as_str)
        };
        Identity {
            namespace: meta.namespace.as_deref().unwrap_or_default(),
            name: meta.name.as_deref().unwrap_or_default(),
            randomsecret: label(LABEL_NAME),
            hash: label(LABEL_HASH),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_fields_proof_binds_its_domain_and_every_field() {
        let key = ProofKey::generate().unwrap();
        let other = ProofKey::generate().unwrap();
        let p = key.sign_fields("anchor", &["ns", "db", "down"]);
        assert_eq!(
            key.check_fields("anchor", &["ns", "db", "down"], Some(&p)),
            Proof::Valid
        );
        for (domain, fields) in [
            ("anchor", &["ns", "db", "dow"][..]),
            ("anchor", &["nsd", "b", "down"][..]),
            ("anchor", &["ns", "db"][..]),
            ("other", &["ns", "db", "down"][..]),
        ] {
            assert_eq!(
                key.check_fields(domain, fields, Some(&p)),
                Proof::Invalid,
                "{domain} {fields:?}"
            );
        }
        assert_eq!(
            other.check_fields("anchor", &["ns", "db", "down"], Some(&p)),
            Proof::Invalid
        );
        assert_eq!(key.check_fields("anchor", &[], None), Proof::Missing);
        assert_eq!(
            key.check_fields("anchor", &[], Some("v1.zz")),
            Proof::Invalid
        );
    }
    use super::*;
    use serde_json::json;

    fn secret() -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": "db-abc", "namespace": "n",
                "labels": {LABEL_NAME: "db", LABEL_HASH: "abc"}},
            "type": "Opaque", "immutable": true,
            "data": {"password": "c2VjcmV0"},
        }))
        .unwrap()
    }

    fn signed(key: &ProofKey) -> Secret {
        let mut s = secret();
        let proof = key.sign(&s);
        s.metadata
            .annotations
            .get_or_insert_default()
            .insert(ANNOTATION_PROOF.into(), proof);
        s
    }

    #[test]
    fn a_signed_secret_verifies_and_any_change_breaks_it() {
        let key = ProofKey::generate().unwrap();
        let s = signed(&key);
        assert_eq!(key.check_metadata(&s.metadata), Proof::Valid);
        assert_eq!(key.check_secret(&s), Proof::Valid);

        let other = ProofKey::generate().unwrap();
        assert_eq!(other.check_metadata(&s.metadata), Proof::Invalid);

        type Change = (&'static str, fn(&mut Secret));
        let changes: [Change; 7] = [
            ("name", |s| s.metadata.name = Some("db-abd".into())),
            ("namespace", |s| s.metadata.namespace = Some("m".into())),
            ("hash label", |s| {
                s.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert(LABEL_HASH.into(), "abd".into());
            }),
            ("randomsecret label", |s| {
                s.metadata
                    .labels
                    .as_mut()
                    .unwrap()
                    .insert(LABEL_NAME.into(), "dc".into());
            }),
            ("data", |s| {
                s.data
                    .as_mut()
                    .unwrap()
                    .insert("password".into(), ByteString(b"other".to_vec()));
            }),
            ("type", |s| {
                s.type_ = Some("kubernetes.io/basic-auth".into())
            }),
            ("mutable", |s| s.immutable = None),
        ];
        for (what, change) in changes {
            let mut t = s.clone();
            change(&mut t);
            assert_eq!(key.check_secret(&t), Proof::Invalid, "changed {what}");
        }
    }

    #[test]
    fn missing_and_malformed_annotations() {
        let key = ProofKey::generate().unwrap();
        assert_eq!(key.check_metadata(&secret().metadata), Proof::Missing);
        for bad in ["", "v1.", "v1.zz.zz", "v2.00.00", "v1.0", "v1.é.00"] {
            let mut s = secret();
            s.metadata
                .annotations
                .get_or_insert_default()
                .insert(ANNOTATION_PROOF.into(), bad.into());
            assert_eq!(key.check_metadata(&s.metadata), Proof::Invalid, "{bad:?}");
        }
    }

    #[test]
    fn the_annotation_holds_no_value() {
        let key = ProofKey::generate().unwrap();
        let s = signed(&key);
        let proof = &s.metadata.annotations.unwrap()[ANNOTATION_PROOF];
        assert!(!proof.contains("c2VjcmV0") && !proof.contains("secret"));
        assert_eq!(format!("{key:?}"), "ProofKey(..)");
    }
}
