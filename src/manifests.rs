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

/// Every document of a YAML stream, in order (empty documents skipped).
pub fn documents(input: &str) -> Result<Vec<serde_yaml::Value>, ManifestError> {
    let mut out = Vec::new();
    for de in serde_yaml::Deserializer::from_str(input) {
        let v = serde_yaml::Value::deserialize(de)?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// Whether a document is a `randomsecret.io` RandomSecret.
pub fn is_random_secret(doc: &serde_yaml::Value) -> bool {
    let api = doc
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(|v| v.as_str()).unwrap_or_default();
    kind == "RandomSecret" && api.split('/').next() == Some(GROUP)
}

/// The versioned Secret name of each RandomSecret in the stream, in order.
pub fn versioned_names(input: &str) -> Result<Vec<String>, ManifestError> {
    let mut names = Vec::new();
    for (i, doc) in documents(input)?.into_iter().enumerate() {
        if !is_random_secret(&doc) {
            continue;
        }
        let err = |message: String| ManifestError::Document {
            doc: i + 1,
            message,
        };
        let rs: RandomSecret =
            serde_yaml::from_value(doc).map_err(|e| err(format!("RandomSecret: {e}")))?;
        let name = rs
            .metadata
            .name
            .clone()
            .ok_or_else(|| err("RandomSecret without metadata.name".into()))?;
        let v =
            Version::of(&rs.spec, &name).map_err(|e| err(format!("RandomSecret {name}: {e}")))?;
        names.push(v.secret_name);
    }
    Ok(names)
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
