//! Finding the RandomSecrets in a multi-document YAML stream and computing
//! their versioned names.

use super::yaml;
use crate::api::{GROUP, RandomSecret};
use crate::version::Version;

/// The one apiVersion of RandomSecret.
const API_VERSION: &str = "randomsecret.io/v1";

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("invalid YAML: {0}")]
    Yaml(#[from] yaml::Error),
    #[error("document {doc}: {message}")]
    Document { doc: usize, message: String },
    /// From `resolve` and the KRM function only: see [`yaml::check_plain_scalars`].
    #[error("{0}")]
    Ambiguous(#[from] yaml::Ambiguous),
}

/// Every document of a YAML stream, in order (empty documents skipped), as JSON values.
pub fn documents(input: &str) -> Result<Vec<serde_json::Value>, ManifestError> {
    Ok(yaml::read_stream(input)?)
}

/// Whether document number `doc` (from 1) is a RandomSecret (`randomsecret.io/v1`).
///
/// Never silent about a near miss: anything else in the `randomsecret.io`
/// group (another version such as `randomsecret.io/v2`, a misspelled kind such
/// as `Randomsecret`), and a kind `RandomSecret` (in any case) without an
/// apiVersion, is an error that says what to write. A `RandomSecret` of
/// another group (such as the original operator's) is not ours, and skipped.
pub fn is_random_secret(doc: usize, value: &serde_json::Value) -> Result<bool, ManifestError> {
    let api = value.get("apiVersion").and_then(|v| v.as_str());
    let kind = value.get("kind").and_then(|v| v.as_str());
    let ours = api.is_some_and(|a| a == GROUP || a.split('/').next() == Some(GROUP));
    let like_ours = kind.is_some_and(|k| k.eq_ignore_ascii_case("RandomSecret"));
    if ours && api == Some(API_VERSION) && kind == Some("RandomSecret") {
        return Ok(true);
    }
    if ours || (like_ours && api.is_none_or(str::is_empty)) {
        let show = |v: Option<&str>| {
            v.map_or("none".to_string(), |v| {
                let short: String = v.chars().take(64).collect();
                format!("{short:?}{}", if short.len() < v.len() { "…" } else { "" })
            })
        };
        return Err(ManifestError::Document {
            doc,
            message: format!(
                "apiVersion {} and kind {} is not a RandomSecret this version knows: write apiVersion {API_VERSION:?} and kind \"RandomSecret\"",
                show(api),
                show(kind)
            ),
        });
    }
    Ok(false)
}

/// The version a RandomSecret document (number `doc`, from 1) names.
pub fn version_of(doc: usize, value: &serde_json::Value) -> Result<Version, ManifestError> {
    let err = |message: String| ManifestError::Document { doc, message };
    if let Some(spec) = value.get("spec").filter(|s| !s.is_object()) {
        let what = match spec {
            serde_json::Value::Array(_) => "a list",
            serde_json::Value::Null => "null",
            serde_json::Value::String(_) => "a string",
            _ => "a scalar",
        };
        return Err(err(format!(
            "RandomSecret: spec must be a mapping (keys, static, ...), not {what}"
        )));
    }
    let rs: RandomSecret = serde_json::from_value(value.clone())
        .map_err(|e| err(format!("RandomSecret: {}", without_values(&e))))?;
    let name = rs
        .metadata
        .name
        .clone()
        .ok_or_else(|| err("RandomSecret without metadata.name".into()))?;
    let keys = rs.spec.keys.iter().flat_map(|m| m.keys());
    let mut keys = keys.chain(rs.spec.r#static.iter().flat_map(|m| m.keys()));
    if let Some(k) = keys.find(|k| yaml::is_yaml11_special(k)) {
        return Err(err(format!(
            "RandomSecret {name}: data key {k:?} is read as a boolean or null by kubectl and Helm (YAML 1.1), so the cluster would compute another name: rename the key"
        )));
    }
    Version::of(&rs.spec, &name).map_err(|e| err(format!("RandomSecret {name}: {e}")))
}

/// A document's `metadata.namespace` (None: not set, or empty).
pub fn namespace(doc: &serde_json::Value) -> Option<String> {
    doc.pointer("/metadata/namespace")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// One RandomSecret of a stream.
#[derive(Debug)]
pub struct Found {
    /// Its namespace as written (None: none in the manifest).
    pub namespace: Option<String>,
    pub version: Version,
}

/// Every RandomSecret among `docs`, in order, with its version. Two with the
/// same namespace and base name are an error naming both: the cluster would
/// keep one version for both, and which one a workload gets would depend on
/// the order they are applied in.
pub fn random_secrets(docs: &[serde_json::Value]) -> Result<Vec<Found>, ManifestError> {
    let mut seen = std::collections::HashMap::new();
    let mut found = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        if !is_random_secret(i + 1, doc)? {
            continue;
        }
        let version = version_of(i + 1, doc)?;
        let namespace = namespace(doc);
        let name = doc
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or_default();
        let key = (namespace.clone(), version.base.clone());
        if let Some((first_doc, first_name)) = seen.insert(key, (i + 1, name.to_string())) {
            let ns = namespace
                .as_deref()
                .map_or("no namespace".to_string(), |n| format!("namespace {n}"));
            return Err(ManifestError::Document {
                doc: i + 1,
                message: format!(
                    "RandomSecret {name} has the same base name {:?} ({ns}) as RandomSecret {first_name} in document {first_doc}: the cluster would keep one for both; give one another secretName",
                    version.base
                ),
            });
        }
        found.push(Found { namespace, version });
    }
    Ok(found)
}

/// A reading error without the value it quotes (`invalid type: integer
/// \`98765\``, say): a static value may be a credential, and the KRM
/// function's errors end up in CI logs.
fn without_values(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if !(text.starts_with("invalid type: ") || text.starts_with("invalid value: ")) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    for c in text.chars() {
        if c == '`' {
            if !quoted {
                out.push_str("(value not shown)");
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(c);
        }
    }
    out
}

/// The versioned Secret name of each RandomSecret in the stream, in order.
/// A RandomSecret with a scalar that kubectl reads otherwise than this
/// reader ([`yaml::check_plain_scalars`]) is an error: the cluster would
/// compute another name.
pub fn versioned_names(input: &str) -> Result<Vec<String>, ManifestError> {
    let stream = yaml::read_documents(input)?;
    let numbered = stream.docs.iter().filter(|d| d.value.is_some()).enumerate();
    for (i, doc) in numbered {
        if is_random_secret(i + 1, doc.value.as_ref().expect("filtered"))? {
            stream.check(doc)?;
        }
    }
    let docs: Vec<_> = stream.docs.into_iter().filter_map(|d| d.value).collect();
    let found = random_secrets(&docs)?;
    Ok(found.into_iter().map(|f| f.version.secret_name).collect())
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

    /// Two RandomSecrets with one namespace and base name: an error naming both.
    #[test]
    fn the_same_base_name_twice_in_a_namespace_is_an_error() {
        let rs = |name: &str, ns: &str, spec: &str| {
            format!(
                "---\napiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {{name: {name}{ns}}}\nspec: {spec}\n"
            )
        };
        let input = rs("db", ", namespace: a", "{keys: {k: {length: 8}}}")
            + &rs(
                "other",
                ", namespace: a",
                "{secretName: db, keys: {k: {length: 9}}}",
            );
        let e = versioned_names(&input).unwrap_err().to_string();
        assert!(
            e.contains("document 2")
                && e.contains("RandomSecret other")
                && e.contains("RandomSecret db in document 1")
                && e.contains("\"db\" (namespace a)"),
            "{e}"
        );
        // Same spec, no namespace twice: still two objects for one name.
        let twice = rs("db", "", "{length: 9}") + &rs("db", "", "{length: 9}");
        assert!(
            versioned_names(&twice)
                .unwrap_err()
                .to_string()
                .contains("no namespace")
        );
        // Other namespaces, or no namespace beside one: fine.
        let ok = rs("db", ", namespace: a", "{length: 9}")
            + &rs("db", ", namespace: b", "{length: 9}")
            + &rs("db", "", "{length: 9}");
        assert_eq!(versioned_names(&ok).unwrap().len(), 3);
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

    fn name_of(spec: &str) -> Result<String, ManifestError> {
        let doc = format!(
            "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {{name: a}}\nspec: {spec}\n"
        );
        versioned_names(&doc).map(|mut names| names.remove(0))
    }

    /// Scalars mean what kubectl (Go, YAML 1.1) sends the apiserver, so the
    /// name is the one the controller computes.
    #[test]
    fn scalars_are_read_as_kubectl_reads_them() {
        let symbols = name_of("{keys: {k: {length: 16, symbols: true}}}").unwrap();
        for same in ["yes", "on", "y", "Yes", "ON"] {
            let spec = format!("{{keys: {{k: {{length: 16, symbols: {same}}}}}}}");
            assert_eq!(name_of(&spec).unwrap(), symbols, "symbols: {same}");
        }
        assert!(name_of("{keys: {k: {length: 16, symbols: 'yes'}}}").is_err());
        let sixteen = name_of("{keys: {k: {length: 16}}}").unwrap();
        for same in ["020", "0o20", "0x10", "1_6", "+16"] {
            let spec = format!("{{keys: {{k: {{length: {same}}}}}}}");
            assert_eq!(name_of(&spec).unwrap(), sixteen, "length: {same}");
        }
        // A quoted look-alike is the string; plain, kubectl sends a boolean or
        // a number, which the apiserver refuses for rotation.
        let quoted = name_of("{keys: {k: {length: 16}}, rotation: 'on'}").unwrap();
        assert_eq!(
            name_of("{keys: {k: {length: 16}}, rotation: \"on\"}").unwrap(),
            quoted
        );
        assert_ne!(quoted, sixteen);
        for plain in ["on", "yes", "017", "1_000"] {
            let spec = format!("{{keys: {{k: {{length: 16}}}}, rotation: {plain}}}");
            assert!(name_of(&spec).is_err(), "rotation: {plain}");
        }
        let date = name_of("{keys: {k: {length: 16}}, rotation: '2024-01-01'}").unwrap();
        assert_eq!(
            name_of("{keys: {k: {length: 16}}, rotation: 2024-01-01}").unwrap(),
            date
        );
        // Keys: plain TRUE reads as "true" (as kubectl and serde_yaml read it), quoted as written.
        let t = name_of("{static: {'true': x}}").unwrap();
        assert_eq!(name_of("{static: {TRUE: x}}").unwrap(), t);
        assert_ne!(name_of("{static: {'TRUE': x}}").unwrap(), t);
        assert!(name_of("{keys: {k: {length: .inf}}}").is_err());
    }

    /// Issue 12, point 10: a near miss of our apiVersion or kind is an error
    /// (never silently skipped, never read as v1).
    #[test]
    fn near_misses_of_our_api_version_and_kind_are_errors() {
        let doc = |api: &str, kind: &str| {
            format!("{api}{kind}metadata: {{name: a}}\nspec: {{length: 9}}\n")
        };
        for (api, kind) in [
            ("apiVersion: randomsecret.io/v2\n", "kind: RandomSecret\n"),
            (
                "apiVersion: randomsecret.io/v1beta1\n",
                "kind: RandomSecret\n",
            ),
            ("apiVersion: randomsecret.io\n", "kind: RandomSecret\n"),
            ("apiVersion: randomsecret.io/v1\n", "kind: Randomsecret\n"),
            ("apiVersion: randomsecret.io/v1\n", "kind: RandomSecrets\n"),
            ("apiVersion: randomsecret.io/v1\n", ""),
            ("", "kind: RandomSecret\n"),
            ("apiVersion: ''\n", "kind: randomsecret\n"),
        ] {
            let input = doc(api, kind);
            let e = versioned_names(&input).expect_err(&input).to_string();
            assert!(
                e.contains("document 1") && e.contains("randomsecret.io/v1"),
                "{input}: {e}"
            );
        }
        // The good one, and other groups' RandomSecrets, still as before.
        let ok = doc("apiVersion: randomsecret.io/v1\n", "kind: RandomSecret\n");
        assert_eq!(versioned_names(&ok).unwrap().len(), 1);
        let other = doc(
            "apiVersion: secret.a-cup-of.coffee/v1\n",
            "kind: RandomSecret\n",
        );
        assert!(versioned_names(&other).unwrap().is_empty());
    }

    /// A value of the wrong type is named by its type, never quoted (a
    /// static value may be a credential); a long apiVersion is cut short.
    #[test]
    fn errors_do_not_quote_values() {
        let input = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {static: {password: 98765432123}}\n";
        let e = versioned_names(input).unwrap_err().to_string();
        assert!(
            !e.contains("98765432123") && e.contains("invalid type: integer"),
            "{e}"
        );
        let long = format!(
            "apiVersion: randomsecret.io/{}\nkind: RandomSecret\n",
            "x".repeat(5000)
        );
        let e = versioned_names(&long).unwrap_err().to_string();
        assert!(e.len() < 400, "{}", e.len());
    }

    /// A spec that is not a mapping gets an error that says so (not serde's
    /// "expected a string" from reading a list as the struct's fields).
    #[test]
    fn a_spec_that_is_not_a_mapping_says_so() {
        for spec in ["[{keys: {k: {length: 8}}}]", "null", "'keys'", "8"] {
            let input = format!(
                "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {{name: a}}\nspec: {spec}\n"
            );
            let e = versioned_names(&input).expect_err(&input).to_string();
            assert!(e.contains("spec must be a mapping"), "{spec}: {e}");
        }
    }

    /// Where kubectl would send another value than this reader, `name` is an
    /// error, not another name: plain float keys, tags over numbers. Only the
    /// RandomSecrets are held to it.
    #[test]
    fn scalars_kubectl_reads_otherwise_in_a_random_secret_are_errors() {
        for (spec, says) in [
            ("{static: {1.0: x}}", "plain key 1.0"),
            ("{static: {1e3: x}}", "plain key 1e3"),
            ("{static: {!foo 017: x}}", "tagged !foo"),
            ("{static: {k: !foo 017}}", "tagged !foo"),
            ("{keys: {k: {length: !!float 017}}}", "tagged !!float"),
            ("{keys: {k: {length: !foo 16}}}", "tagged !foo"),
            (
                "{keys: {k: {length: 16, symbols: !foo yes}}}",
                "tagged !foo",
            ),
            (
                "{keys: {k: {length: 16}}, rotation: \"\\ud83d\\ude00\"}",
                "surrogate",
            ),
        ] {
            let e = name_of(spec).unwrap_err().to_string();
            assert!(e.contains(says), "{spec}: {e}");
            assert!(e.contains("line 4"), "{spec}: {e}");
        }
        for same in [
            "{static: {k: !!str 017}}",
            "{static: {k: !foo bar}}",
            "{static: {k: !foo '017'}}",
        ] {
            assert!(name_of(same).is_ok(), "{same}");
        }
        let elsewhere = "kind: ConfigMap\ndata: {a: 0X1F}\n---\napiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {length: 9}\n";
        assert_eq!(versioned_names(elsewhere).unwrap().len(), 1);
    }
}
