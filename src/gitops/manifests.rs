//! Reading multi-document YAML streams and finding the RandomSecrets in them.

use crate::api::{GROUP, RandomSecret};
use crate::version::Version;
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("invalid YAML: {0}")]
    Yaml(#[from] serde_yaml::Error),
    #[error("document {doc}: {message}")]
    Document { doc: usize, message: String },
}

/// Every document of a YAML stream, in order (empty documents skipped), as JSON values.
pub fn documents(input: &str) -> Result<Vec<serde_json::Value>, ManifestError> {
    let mut out = Vec::new();
    for (i, de) in serde_yaml::Deserializer::from_str(input).enumerate() {
        let v = serde_yaml::Value::deserialize(de)?;
        if !v.is_null() {
            let json = serde_json::to_value(v).map_err(|e| ManifestError::Document {
                doc: i + 1,
                message: format!("not a Kubernetes object: {e}"),
            })?;
            out.push(json);
        }
    }
    Ok(out)
}

/// Whether a document is a `randomsecret.io` RandomSecret.
pub fn is_random_secret(doc: &serde_json::Value) -> bool {
    let api = doc
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(|v| v.as_str()).unwrap_or_default();
    kind == "RandomSecret" && api.split('/').next() == Some(GROUP)
}

/// Plain YAML scalars that YAML 1.1 parsers (kubectl, Helm, kustomize's
/// sigs.k8s.io/yaml) read as booleans or null, where this YAML 1.2 parser reads
/// strings. As a map key, kubectl silently turns `n:` into `"false":`.
const YAML11_SPECIAL: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
    "OFF", "~", "null", "Null", "NULL",
];

/// The version a RandomSecret document (number `doc`, from 1) names.
pub fn version_of(doc: usize, value: &serde_json::Value) -> Result<Version, ManifestError> {
    let err = |message: String| ManifestError::Document { doc, message };
    let rs: RandomSecret =
        serde_json::from_value(value.clone()).map_err(|e| err(format!("RandomSecret: {e}")))?;
    let name = rs
        .metadata
        .name
        .clone()
        .ok_or_else(|| err("RandomSecret without metadata.name".into()))?;
    let keys = rs.spec.keys.iter().flat_map(|m| m.keys());
    let mut keys = keys.chain(rs.spec.r#static.iter().flat_map(|m| m.keys()));
    if let Some(k) = keys.find(|k| YAML11_SPECIAL.contains(&k.as_str())) {
        return Err(err(format!(
            "RandomSecret {name}: data key {k:?} is read as a boolean or null by kubectl and Helm (YAML 1.1), so the cluster would compute another name: rename the key"
        )));
    }
    Version::of(&rs.spec, &name).map_err(|e| err(format!("RandomSecret {name}: {e}")))
}

/// The versioned Secret name of each RandomSecret in the stream, in order.
pub fn versioned_names(input: &str) -> Result<Vec<String>, ManifestError> {
    let docs = documents(input)?;
    let versions = docs
        .iter()
        .enumerate()
        .filter(|(_, d)| is_random_secret(d))
        .map(|(i, d)| version_of(i + 1, d));
    versions.map(|v| v.map(|v| v.secret_name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_order_and_other_kinds_skipped() {
        let input = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n\
            apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: b}\nspec: {keys: {k: {length: 4}}}\n---\n\
            ---\napiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {length: 9}\n";
        let names = versioned_names(input).unwrap();
        assert_eq!(names.len(), 2);
        assert!(
            names[0].starts_with("b-") && names[1].starts_with("a-"),
            "{names:?}"
        );
    }

    #[test]
    fn other_groups_are_not_ours() {
        let input = "apiVersion: secret.a-cup-of.coffee/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {length: 9}\n";
        assert!(versioned_names(input).unwrap().is_empty());
    }

    #[test]
    fn keys_that_yaml_1_1_reads_as_booleans_are_refused() {
        let doc = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {static: {n: x}}\n";
        let e = versioned_names(doc).unwrap_err().to_string();
        assert!(e.contains("YAML 1.1") && e.contains("\"n\""), "{e}");
        let ok = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {static: {num: x}}\n";
        assert!(versioned_names(ok).is_ok());
    }

    #[test]
    fn malformed_and_invalid_documents_are_errors() {
        assert!(matches!(
            versioned_names("a: [unclosed"),
            Err(ManifestError::Yaml(_))
        ));
        let bad = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {keys: {k: {length: 0}}}\n";
        let e = versioned_names(bad).unwrap_err().to_string();
        assert!(e.contains("document 1") && e.contains("length 0"), "{e}");
        let float = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {keys: {k: {length: 4.5}}}\n";
        assert!(versioned_names(float).is_err());
    }
}
