//! What a stamped RandomSecret says of itself (the ClusterRandomSecret it
//! was stamped from, the template digest, whose values its versions hold)
//! and the proof that this controller said it: an HMAC under the proof key
//! over the ClusterRandomSecret, the namespace, the digest and, when the
//! values are shared, the word `Shared`.
//!
//! Labels and annotations are anyone's to write; only a claim whose proof
//! verifies is acted on: by the stamp wing before it updates or deletes a
//! RandomSecret, by the reconciler before it copies another namespace's
//! values into a version (`reconciler::shared`).

use crate::api::cluster::{ANNOTATION_TEMPLATE, ANNOTATION_VALUES, LABEL_CLUSTER, Values};
use crate::proof::{ANNOTATION_PROOF, Proof, ProofKey};
use std::collections::BTreeMap;

/// The proof domain of stamped RandomSecrets (`ProofKey::sign_fields`).
/// Spelled out: part of every proof ever written.
pub const PROOF_DOMAIN: &str = "stamp";

/// A RandomSecret's claim to be stamped, as its labels and annotations say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The ClusterRandomSecret (the label's value).
    pub cluster: String,
    /// The template digest and the proof, as annotated.
    pub template: Option<String>,
    pub proof: Option<String>,
    pub values: Values,
}

impl Claim {
    /// The claim in `labels` and `annotations`; None without the label.
    pub fn of(
        labels: Option<&BTreeMap<String, String>>,
        annotations: Option<&BTreeMap<String, String>>,
    ) -> Option<Claim> {
        let cluster = labels?.get(LABEL_CLUSTER)?.clone();
        let annotation = |k: &str| annotations.and_then(|a| a.get(k)).cloned();
        Some(Claim {
            cluster,
            template: annotation(ANNOTATION_TEMPLATE),
            proof: annotation(ANNOTATION_PROOF),
            values: match annotation(ANNOTATION_VALUES).as_deref() {
                Some("Shared") => Values::Shared,
                _ => Values::PerNamespace,
            },
        })
    }

    /// Whether this controller made the claim for a RandomSecret in `namespace`.
    pub fn proven(&self, key: &ProofKey, namespace: &str) -> bool {
        let Some(template) = self.template.as_deref() else {
            return false;
        };
        key.check_fields(
            PROOF_DOMAIN,
            &fields(&self.cluster, namespace, template, self.values),
            self.proof.as_deref(),
        ) == Proof::Valid
    }
}

/// The proof of a stamped RandomSecret.
pub fn sign(
    key: &ProofKey,
    cluster: &str,
    namespace: &str,
    digest: &str,
    values: Values,
) -> String {
    key.sign_fields(PROOF_DOMAIN, &fields(cluster, namespace, digest, values))
}

/// The fields a proof covers. PerNamespace's are the three every stamp
/// had before values could be shared, so those proofs still verify;
/// Shared adds a fourth (fields are counted, so no proof of one reads as
/// the other's).
fn fields<'a>(
    cluster: &'a str,
    namespace: &'a str,
    digest: &'a str,
    values: Values,
) -> Vec<&'a str> {
    let mut f = vec![cluster, namespace, digest];
    if values == Values::Shared {
        f.push(Values::Shared.as_str());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(key: &ProofKey, ns: &str, values: Values) -> Claim {
        let labels = BTreeMap::from([(LABEL_CLUSTER.to_string(), "db".to_string())]);
        let annotations = BTreeMap::from([
            (ANNOTATION_TEMPLATE.to_string(), "d1".to_string()),
            (ANNOTATION_VALUES.to_string(), values.as_str().to_string()),
            (
                ANNOTATION_PROOF.to_string(),
                sign(key, "db", ns, "d1", values),
            ),
        ]);
        Claim::of(Some(&labels), Some(&annotations)).unwrap()
    }

    #[test]
    fn a_claim_holds_only_where_and_as_it_was_made() {
        let key = ProofKey::generate().unwrap();
        let shared = claimed(&key, "team-a", Values::Shared);
        assert_eq!(shared.values, Values::Shared);
        assert!(shared.proven(&key, "team-a"));
        // Copied into another namespace, or read under another key.
        assert!(!shared.proven(&key, "team-b"));
        assert!(!shared.proven(&ProofKey::generate().unwrap(), "team-a"));
        // A PerNamespace proof with the annotation turned to Shared.
        let mut forged = claimed(&key, "team-a", Values::PerNamespace);
        assert!(forged.proven(&key, "team-a"));
        forged.values = Values::Shared;
        assert!(!forged.proven(&key, "team-a"));
        // Another ClusterRandomSecret's name on the same proof.
        let mut other = claimed(&key, "team-a", Values::Shared);
        other.cluster = "registry".into();
        assert!(!other.proven(&key, "team-a"));
    }

    #[test]
    fn no_label_no_claim_and_an_unknown_word_is_per_namespace() {
        let annotations = BTreeMap::from([(ANNOTATION_VALUES.to_string(), "Shared".to_string())]);
        assert_eq!(Claim::of(None, Some(&annotations)), None);
        let labels = BTreeMap::from([(LABEL_CLUSTER.to_string(), "db".to_string())]);
        let odd = BTreeMap::from([(ANNOTATION_VALUES.to_string(), "shared".to_string())]);
        let c = Claim::of(Some(&labels), Some(&odd)).unwrap();
        assert_eq!(
            (c.values, c.template, c.proof),
            (Values::PerNamespace, None, None)
        );
    }
}
