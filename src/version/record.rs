//! A version's record of how its values came to be, written on the version
//! Secret at creation as the annotation `randomsecret.io/lineage`: its
//! [`Lineage`] (what the next version is planned from, `super::carry`),
//! which keys it rotated, and whether it could not carry over values it
//! should have.
//!
//! An annotation can be edited on an immutable Secret, and the proof of
//! creation (`crate::proof`) covers the data, not the annotations: so the
//! record carries its own HMAC under the controller's key, over the
//! namespace, the Secret's name and the record itself. An edited or copied
//! record does not verify and is never used.
//!
//! `v1.<hex HMAC>.<record as JSON>`

use super::carry::Lineage;
use crate::proof::{Proof, ProofKey};
use serde::{Deserialize, Serialize};

pub const ANNOTATION_LINEAGE: &str = crate::api::key!("lineage");
/// Spelled out: part of every record ever written.
const DOMAIN: &str = "randomsecret.io/lineage/v1";

/// What a version records about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    #[serde(flatten)]
    pub lineage: Lineage,
    /// The generated keys that got new values in this version (every key in
    /// the first one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rotated: Vec<String>,
    /// A version superseded by this one existed, but its values could not
    /// be read and proven: every generated value is new.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncarried: bool,
    /// When the first of its certificates ends (unix seconds), if it holds any.
    #[serde(default, rename = "notAfter", skip_serializing_if = "Option::is_none")]
    pub not_after: Option<i64>,
}

/// Why a record could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// No annotation: a version made before records existed (or not by us).
    Missing,
    /// An annotation that does not verify, or does not parse.
    Invalid,
}

impl Record {
    /// The record of a version made before carry-over, written on it later:
    /// how the spec its name is the hash of generates values. What it rotated
    /// and whether it carried values is not known, so neither is claimed.
    pub fn made_before_carry_over(spec: &crate::version::VersionSpec) -> Self {
        Record {
            lineage: crate::version::carry::Lineage::of(spec),
            rotated: Vec::new(),
            uncarried: false,
            not_after: None,
        }
    }

    /// The annotation's value for the Secret `name` in `namespace`.
    pub fn sign(&self, key: &ProofKey, namespace: &str, name: &str) -> String {
        let json = serde_json::to_string(self).expect("a record serializes");
        let mac = key.sign_fields(DOMAIN, &[namespace, name, &json]);
        format!("{mac}.{json}")
    }

    /// The record an annotation holds, if it verifies for that Secret.
    pub fn read(
        key: &ProofKey,
        namespace: &str,
        name: &str,
        text: Option<&str>,
    ) -> Result<Self, Unusable> {
        let text = text.ok_or(Unusable::Missing)?;
        // `v1.<hex>` then the JSON, which may hold dots of its own.
        let split = text
            .match_indices('.')
            .nth(1)
            .map(|(i, _)| i)
            .ok_or(Unusable::Invalid)?;
        let (mac, json) = (&text[..split], &text[split + 1..]);
        if key.check_fields(DOMAIN, &[namespace, name, json], Some(mac)) != Proof::Valid {
            return Err(Unusable::Invalid);
        }
        serde_json::from_str(json).map_err(|_| Unusable::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::VersionSpec;

    fn record() -> Record {
        let spec = crate::gitops::yaml::read(
            "keys: {a.b: {length: 4, symbolCharacters: '.'}}\nrotation: '1.2'",
        )
        .unwrap();
        Record {
            lineage: Lineage::of(&VersionSpec::from_spec(&spec).unwrap()),
            rotated: vec!["a.b".into()],
            uncarried: true,
            not_after: Some(1_800_000_000),
        }
    }

    #[test]
    fn a_record_reads_back_only_where_it_was_signed() {
        let key = ProofKey::generate().unwrap();
        let r = record();
        let text = r.sign(&key, "ns", "db-abc");
        assert!(text.starts_with("v1."), "{text}");
        assert_eq!(
            Record::read(&key, "ns", "db-abc", Some(&text)),
            Ok(r.clone())
        );
        // Another Secret, another namespace, another key: not its record.
        assert_eq!(
            Record::read(&key, "ns", "db-xyz", Some(&text)),
            Err(Unusable::Invalid)
        );
        assert_eq!(
            Record::read(&key, "other", "db-abc", Some(&text)),
            Err(Unusable::Invalid)
        );
        let other = ProofKey::generate().unwrap();
        assert_eq!(
            Record::read(&other, "ns", "db-abc", Some(&text)),
            Err(Unusable::Invalid)
        );
        assert_eq!(
            Record::read(&key, "ns", "db-abc", None),
            Err(Unusable::Missing)
        );
        // An edited record (a rotation token rewritten to keep a value) fails.
        let edited = text.replace("\"1.2\"", "\"1.3\"");
        assert_ne!(edited, text);
        assert_eq!(
            Record::read(&key, "ns", "db-abc", Some(&edited)),
            Err(Unusable::Invalid)
        );
        for junk in ["", "v1.", "v1.zz.{}", "v1.00.", "nonsense"] {
            assert_eq!(
                Record::read(&key, "ns", "db-abc", Some(junk)),
                Err(Unusable::Invalid),
                "{junk}"
            );
        }
    }

    #[test]
    fn defaults_are_left_out_of_the_json() {
        let key = ProofKey::generate().unwrap();
        let plain = Record::default();
        let text = plain.sign(&key, "ns", "n");
        assert!(text.ends_with(".{\"rotation\":\"\",\"keys\":{}}"), "{text}");
        assert_eq!(Record::read(&key, "ns", "n", Some(&text)), Ok(plain));
    }
}
