//! Finding the RandomSecrets in a multi-document YAML stream and computing
//! their versioned names. Every document of our API group is checked here,
//! in one place, against its CRD's schema ([`fields`]): what the apiserver
//! would refuse, or prune in silence, is an error before a name is printed.
//!
//! Every error about a document has one shape: `document N: <Kind> <name>:
//! <what is wrong, naming the field>`; the KRM function also reports the
//! object and the field's path in its results.

use super::{fields, yaml};
use crate::api::{GROUP, RandomSecret};
use crate::version::{SpecError, Version};
use serde_json::Value;
use std::fmt;

/// The apiVersion of every kind of ours.
const API_VERSION: &str = crate::api::API_VERSION;

/// The kind of the KRM function's config (`randomsecret kustomize`), in our
/// group but not a resource: a stream that holds it passes it by.
const FUNCTION_CONFIG_KIND: &str = "ResolveNames";

/// The original RandomSecret operator's API group. Its manifests apply here
/// with only the apiVersion changed, but under another Secret name.
const LEGACY_GROUP: &str = "secret.a-cup-of.coffee";

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("invalid YAML: {0}")]
    Yaml(#[from] yaml::Error),
    /// A problem with one document (numbered from 1, empty documents not
    /// counted; in a ResourceList, the items).
    #[error("document {doc}: {}{message}", object.as_ref().map(|o| format!("{o}: ")).unwrap_or_default())]
    Document {
        doc: usize,
        /// The object the document holds, as written.
        object: Option<Box<Object>>,
        /// The path of the field at fault, when one is (`spec.rotaton`).
        field: Option<String>,
        /// What is wrong and what to do, naming the field.
        message: String,
    },
    /// From `resolve` and the KRM function only: see [`yaml::check_plain_scalars`].
    #[error("{0}")]
    Ambiguous(#[from] yaml::Ambiguous),
    /// Input that is not what the command reads (the KRM function's, not a ResourceList).
    #[error("{0}")]
    Input(String),
}

impl ManifestError {
    /// A problem with the object of document `doc`, about `field` if one.
    pub fn of(
        doc: usize,
        value: &Value,
        field: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        ManifestError::Document {
            doc,
            object: Some(Box::new(Object::of(value))),
            field,
            message: message.into(),
        }
    }
}

/// The object a document holds, as written (errors name it, the KRM
/// function's results refer to it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Object {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

impl Object {
    pub fn of(doc: &Value) -> Self {
        let text = |p: &str| doc.pointer(p).and_then(Value::as_str).map(String::from);
        Object {
            api_version: text("/apiVersion"),
            kind: text("/kind"),
            name: text("/metadata/name").filter(|n| !n.is_empty()),
            namespace: namespace(doc),
        }
    }
}

/// `RandomSecret db`, `RandomSecret prod/db`, `RandomSecret without
/// metadata.name`; names that are not plain are quoted and cut short.
impl fmt::Display for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Some(k) if !k.is_empty() => f.write_str(&fields::shown(k))?,
            _ => f.write_str("object")?,
        }
        match (&self.namespace, &self.name) {
            (_, None) => f.write_str(" without metadata.name"),
            (Some(ns), Some(n)) => write!(f, " {}/{}", fields::shown(ns), fields::shown(n)),
            (None, Some(n)) => write!(f, " {}", fields::shown(n)),
        }
    }
}

/// Every document of a YAML stream, in order (empty documents skipped), as JSON values.
pub fn documents(input: &str) -> Result<Vec<Value>, ManifestError> {
    Ok(yaml::read_stream(input)?)
}

/// A value as error messages show it: quoted, at most 64 characters, or `none`.
fn show(v: Option<&str>) -> String {
    v.map_or("none".to_string(), fields::quoted)
}

/// Which kind of ours document number `doc` (from 1) is: None for a
/// document of another group, which these commands pass by.
///
/// Never silent about a near miss: anything else in the `randomsecret.io`
/// group (another version such as `randomsecret.io/v2`, a misspelled kind
/// such as `Randomsecret`), and a kind `RandomSecret` (in any case) without
/// an apiVersion, is an error that says what to write. So is a RandomSecret
/// of the original operator (see [`legacy`]).
fn identify(doc: usize, value: &Value) -> Result<Option<&'static fields::Kind>, ManifestError> {
    let api = value.get("apiVersion").and_then(Value::as_str);
    let kind = value.get("kind").and_then(Value::as_str);
    let group = api.map(|a| a.split('/').next().unwrap_or(a));
    let like_ours = kind.is_some_and(|k| k.eq_ignore_ascii_case("RandomSecret"));
    if group == Some(LEGACY_GROUP) && like_ours {
        return Err(legacy(doc, value));
    }
    if group != Some(GROUP) && !(like_ours && api.is_none_or(str::is_empty)) {
        return Ok(None);
    }
    if let (Some(api), Some(kind)) = (api, kind)
        && let Some(known) = fields::kind(api, kind)
    {
        return Ok(Some(known));
    }
    if api == Some(API_VERSION) && kind == Some(FUNCTION_CONFIG_KIND) {
        return Ok(None);
    }
    let kinds: Vec<&str> = fields::kinds().iter().map(|k| k.kind.as_str()).collect();
    let write = match kind.and_then(|k| fields::nearest(k, kinds.iter().copied())) {
        Some(k) => format!("write apiVersion {API_VERSION:?} and kind {k:?}"),
        None => format!(
            "write apiVersion {API_VERSION:?} and one of the kinds {}",
            kinds.join(", ")
        ),
    };
    let field = if api == Some(API_VERSION) {
        "kind"
    } else {
        "apiVersion"
    };
    Err(ManifestError::of(
        doc,
        value,
        Some(field.into()),
        format!(
            "apiVersion {} and kind {} is not a kind this version knows: {write}",
            show(api),
            show(kind)
        ),
    ))
}

/// A RandomSecret of the original operator (`secret.a-cup-of.coffee/v1`) is
/// an error, not a document to pass by: `name` would print nothing for it,
/// and `resolve` and the KRM function would leave references to its base
/// name as they are, while the manifest is almost surely one being migrated
/// whose apiVersion was left behind (once it is ours, its Secret is
/// `<base>-<hash>` and a workload that references `<base>` finds nothing).
/// The error says what to change and the name it will then have.
fn legacy(doc: usize, value: &Value) -> ManifestError {
    let mut ours = value.clone();
    ours["apiVersion"] = Value::from(API_VERSION);
    let base = value
        .pointer("/spec/secretName")
        .or_else(|| value.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map_or("<secretName>".to_string(), fields::shown);
    let versioned = version_of(doc, &ours).map_or(format!("{base}-<hash>"), |v| v.secret_name);
    let api = value.get("apiVersion").and_then(Value::as_str);
    ManifestError::of(
        doc,
        value,
        Some("apiVersion".into()),
        format!(
            "apiVersion {} is the original operator's: change it to {API_VERSION} (the spec applies as it is); its Secret will be named {versioned}, not {base}: see docs/src/annotation-mode.md#migrating-from-the-original-operator",
            show(api)
        ),
    )
}

/// The one place a document of ours is held to its CRD's schema: an
/// unknown field, a value of the wrong shape, a missing required field.
fn check_fields(doc: usize, value: &Value, kind: &fields::Kind) -> Result<(), ManifestError> {
    // A RandomSecret's spec that is not a mapping says what belongs there.
    if kind.kind == "RandomSecret"
        && let Some(spec) = value.get("spec").filter(|s| !s.is_object())
    {
        let what = match spec {
            Value::Array(_) => "a list",
            Value::Null => "null",
            Value::String(_) => "a string",
            _ => "a scalar",
        };
        return Err(ManifestError::of(
            doc,
            value,
            Some("spec".into()),
            format!("spec must be a mapping (keys, static, ...), not {what}"),
        ));
    }
    fields::check(&kind.schema, value)
        .map_err(|e| ManifestError::of(doc, value, Some(e.path.clone()), e.to_string()))
}

/// The version a RandomSecret document (number `doc`, from 1) names. Its
/// fields are checked first ([`check_fields`]), so what is left to find here
/// is what the name itself depends on.
fn version_of(doc: usize, value: &Value) -> Result<Version, ManifestError> {
    let err =
        |field: Option<String>, message: String| ManifestError::of(doc, value, field, message);
    // The status is accepted as it is (see fields::document_schema): not read.
    let mut without_status = value.clone();
    if let Some(o) = without_status.as_object_mut() {
        o.remove("status");
    }
    let rs: RandomSecret =
        serde_json::from_value(without_status).map_err(|e| err(None, without_values(&e)))?;
    let name = rs
        .metadata
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            err(
                Some("metadata.name".into()),
                "metadata.name is required".into(),
            )
        })?;
    let keys = rs
        .spec
        .keys
        .iter()
        .flat_map(|m| m.keys().map(|k| ("keys", k)));
    let mut keys = keys.chain(
        rs.spec
            .r#static
            .iter()
            .flat_map(|m| m.keys().map(|k| ("static", k))),
    );
    if let Some((map, k)) = keys.find(|(_, k)| yaml::is_yaml11_special(k)) {
        let path = fields::path(&["spec", map, k]);
        return Err(err(
            Some(path.clone()),
            format!(
                "{path}: the data key {k:?} is read as a boolean or null by kubectl and Helm (YAML 1.1), so the cluster would compute another name: rename the key"
            ),
        ));
    }
    Version::of(&rs.spec, &name).map_err(|e| err(Some(field_of(&e, &rs)), e.to_string()))
}

/// The version each RandomSecret a ClusterRandomSecret document stamps
/// names: its template's spec under its own name, the same in every
/// namespace. Errors name the template's fields.
fn stamped_version_of(doc: usize, value: &Value) -> Result<Version, ManifestError> {
    let stamped = serde_json::json!({
        "apiVersion": crate::api::API_VERSION,
        "kind": "RandomSecret",
        "metadata": {"name": value.pointer("/metadata/name")},
        "spec": value.pointer("/spec/template/spec"),
    });
    version_of(doc, &stamped).map_err(|e| match e {
        ManifestError::Document { field, message, .. } => {
            let within = |text: &str| text.replacen("spec.", "spec.template.spec.", 1);
            let message = match &field {
                Some(f) if f.starts_with("spec.") => message.replace(f.as_str(), &within(f)),
                _ => message,
            };
            let field = field.map(|f| {
                if f.starts_with("spec.") {
                    within(&f)
                } else {
                    f
                }
            });
            ManifestError::of(doc, value, field, message)
        }
        e => e,
    })
}

/// Where a ClusterRandomSecret document says it stamps.
fn stamps_of(value: &Value) -> Stamps {
    Stamps {
        namespaces: value
            .pointer("/spec/namespaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(String::from))
            .collect(),
        by_selector: value.pointer("/spec/namespaceSelector").is_some(),
    }
}

/// The field a [`SpecError`] is about, as a path.
fn field_of(e: &SpecError, rs: &RandomSecret) -> String {
    let spec = &rs.spec;
    let generated = |k: &str| spec.keys.as_ref().is_some_and(|m| m.contains_key(k));
    let key = |k: &str, field: &str| {
        if generated(k) {
            fields::path(&["spec", "keys", k, field])
        } else {
            format!("spec.{field}")
        }
    };
    match e {
        SpecError::NoKeys | SpecError::BothForms | SpecError::TooLarge(_) => "spec".into(),
        SpecError::KeyConflict(k) => fields::path(&["spec", "static", k]),
        SpecError::InvalidKey(k) if generated(k) => fields::path(&["spec", "keys", k]),
        SpecError::InvalidKey(k) if spec.r#static.as_ref().is_some_and(|m| m.contains_key(k)) => {
            fields::path(&["spec", "static", k])
        }
        SpecError::InvalidKey(k) => match spec.keys.iter().flatten().find_map(|(by, g)| {
            let names = |field: Option<&String>| field.is_some_and(|f| f == k);
            if names(g.signing_key.as_ref().and_then(|s| s.jwks_key.as_ref())) {
                Some((by, "signingKey", "jwksKey"))
            } else if names(g.ssh_key_pair.as_ref().and_then(|p| p.public_key.as_ref())) {
                Some((by, "sshKeyPair", "publicKey"))
            } else if names(g.private_key.as_ref().and_then(|p| p.public_key.as_ref())) {
                Some((by, "privateKey", "publicKey"))
            } else {
                None
            }
        }) {
            Some((by, kind, field)) => fields::path(&["spec", "keys", by, kind, field]),
            None => "spec.key".into(),
        },
        SpecError::InvalidTemplate(t) => fields::path(&["spec", "keys", t.key(), "template"]),
        SpecError::DerivedKeyConflict { by, .. } => fields::path(&["spec", "keys", by]),
        SpecError::InvalidSigningKey { key: k, .. }
        | SpecError::InvalidGenerator { key: k, .. } => fields::path(&["spec", "keys", k]),
        SpecError::InvalidLength { key: k, .. } => key(k, "length"),
        SpecError::InvalidSymbols { key: k, .. } => key(k, "symbolCharacters"),
        SpecError::TooManyKeys(_) => "spec.keys".into(),
        SpecError::NameTooLong(_) => "metadata.name".into(),
        SpecError::InvalidBaseName { .. } if spec.secret_name.is_some() => "spec.secretName".into(),
        SpecError::InvalidBaseName { .. } => "metadata.name".into(),
        SpecError::InvalidType(_) | SpecError::TypeRequiresKeys { .. } => "spec.type".into(),
        SpecError::InvalidRotation(_) => "spec.rotation".into(),
        SpecError::InvalidKeyRotation { key: k, .. } => key(k, "rotation"),
        SpecError::InvalidKeyRotateEvery { key: k, .. } => key(k, "rotateEvery"),
        SpecError::TimeBased(field) => format!("spec.{field}"),
        SpecError::InvalidRotateEvery(_) => "spec.rotateEvery".into(),
    }
}

/// A document's `metadata.namespace` (None: not set, or empty).
pub fn namespace(doc: &Value) -> Option<String> {
    doc.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// One RandomSecret of a stream, or a ClusterRandomSecret (whose
/// RandomSecrets, one per namespace it selects, all name the same version).
#[derive(Debug)]
pub struct Found {
    /// Its namespace as written (None: none in the manifest, or a
    /// ClusterRandomSecret).
    pub namespace: Option<String>,
    /// Its metadata.name.
    pub name: String,
    /// Its document's number in the stream (from 1, empty documents not counted).
    pub doc: usize,
    pub version: Version,
    /// A ClusterRandomSecret's: where it stamps, as far as a manifest can tell.
    pub stamps: Option<Stamps>,
}

/// The namespaces a ClusterRandomSecret's manifest says it stamps into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamps {
    /// `spec.namespaces`.
    pub namespaces: Vec<String>,
    /// It has a `namespaceSelector`, which only the cluster can evaluate:
    /// any namespace may be selected.
    pub by_selector: bool,
}

impl Found {
    pub fn kind(&self) -> &'static str {
        if self.stamps.is_some() {
            "ClusterRandomSecret"
        } else {
            "RandomSecret"
        }
    }

    /// What two of a stream must not share: the kind's scope, the
    /// namespace and the base name.
    fn identity(&self) -> (bool, Option<String>, String) {
        (
            self.stamps.is_some(),
            self.namespace.clone(),
            self.version.base.clone(),
        )
    }
}

/// Every RandomSecret among `docs`, in order, with its version; every
/// document of ours checked ([`identify`], [`check_fields`]). Two with the
/// same namespace and base name are an error naming both: the cluster would
/// keep one version for both, and which one a workload gets would depend on
/// the order they are applied in.
pub fn random_secrets(docs: &[Value]) -> Result<Vec<Found>, ManifestError> {
    let docs: Vec<&Value> = docs.iter().collect();
    found(&docs, |_| Ok(()))
}

/// Every RandomSecret of a stream, as [`random_secrets`], and each held to
/// [`yaml::check_plain_scalars`]: a scalar that kubectl reads otherwise than
/// this reader would make the cluster compute another name.
pub fn random_secrets_in(stream: &yaml::Stream) -> Result<Vec<Found>, ManifestError> {
    let docs: Vec<&yaml::Document> = stream.docs.iter().filter(|d| d.value.is_some()).collect();
    let values: Vec<&Value> = docs.iter().filter_map(|d| d.value.as_ref()).collect();
    found(&values, |i| stream.check(docs[i]))
}

/// [`random_secrets`], with `scalars(i)` the scalar check of document `i`
/// (from 0) when it is a RandomSecret, run before its fields are checked
/// (it explains what kubectl would read).
fn found(
    docs: &[&Value],
    scalars: impl Fn(usize) -> Result<(), yaml::Ambiguous>,
) -> Result<Vec<Found>, ManifestError> {
    let mut seen = std::collections::HashMap::new();
    let mut found = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let Some(kind) = identify(i + 1, doc)? else {
            continue;
        };
        let cluster = kind.kind == "ClusterRandomSecret";
        if kind.kind != "RandomSecret" && !cluster {
            check_fields(i + 1, doc, kind)?;
            continue;
        }
        scalars(i).map_err(|e| ManifestError::of(i + 1, doc, None, e.to_string()))?;
        check_fields(i + 1, doc, kind)?;
        let (version, stamps) = if cluster {
            (stamped_version_of(i + 1, doc)?, Some(stamps_of(doc)))
        } else {
            (version_of(i + 1, doc)?, None)
        };
        let name = doc
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_string();
        let f = Found {
            namespace: namespace(doc).filter(|_| !cluster),
            name,
            doc: i + 1,
            version,
            stamps,
        };
        if let Some((first_doc, first_name)) = seen.insert(f.identity(), (i + 1, f.name.clone())) {
            let first = format!("{} {first_name} in document {first_doc}", f.kind());
            return Err(same_base(i + 1, doc, &f.version.base, &first));
        }
        found.push(f);
    }
    Ok(found)
}

/// Two RandomSecrets with one namespace and base name: the second one's
/// error, naming the `first`.
fn same_base(doc: usize, value: &Value, base: &str, first: &str) -> ManifestError {
    let ns = namespace(value).map_or("no namespace".to_string(), |n| format!("namespace {n}"));
    let field = if value.pointer("/spec/secretName").is_some() {
        "spec.secretName"
    } else {
        "metadata.name"
    };
    ManifestError::of(
        doc,
        value,
        Some(field.into()),
        format!(
            "the same base name {base:?} ({ns}) as {first}: the cluster would keep one version for both; give one another secretName"
        ),
    )
}

/// The RandomSecrets of several streams read together (`-f a.yaml -f
/// dir/`): each stream checked alone ([`random_secrets_in`]), then a base
/// name used in two of them refused as within one. `names[i]` names stream
/// `i` in that error; an error comes with the index of its stream.
pub fn random_secrets_across(
    streams: &[yaml::Stream],
    names: &[String],
) -> Result<Vec<Vec<Found>>, (usize, ManifestError)> {
    let mut seen = std::collections::HashMap::new();
    let mut all = Vec::with_capacity(streams.len());
    for (s, stream) in streams.iter().enumerate() {
        let found = random_secrets_in(stream).map_err(|e| (s, e))?;
        for f in &found {
            if let Some((first_s, first_doc, first_name)) =
                seen.insert(f.identity(), (s, f.doc, f.name.clone()))
            {
                let first = format!(
                    "{} {first_name} in document {first_doc} of {}",
                    f.kind(),
                    names[first_s]
                );
                // Found's numbering: the stream's documents that hold a value.
                let mut values = stream.docs.iter().filter_map(|d| d.value.as_ref());
                let value = values
                    .nth(f.doc - 1)
                    .expect("a found RandomSecret's document");
                return Err((s, same_base(f.doc, value, &f.version.base, &first)));
            }
        }
        all.push(found);
    }
    Ok(all)
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

/// The versioned Secret name of each RandomSecret in the stream, in order
/// ([`random_secrets_in`]).
pub fn versioned_names(input: &str) -> Result<Vec<String>, ManifestError> {
    let stream = yaml::read_documents(input)?;
    let found = random_secrets_in(&stream)?;
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
                && e.contains("RandomSecret a/other")
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

    /// Issue 32: a RandomSecret of the original operator is no longer passed
    /// by in silence (`name` printed nothing, `resolve` left its references
    /// alone): the error says what to change and the name it will then have.
    #[test]
    fn the_original_operators_random_secrets_say_what_to_change() {
        let legacy = "apiVersion: secret.a-cup-of.coffee/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {secretName: db, length: 9}\n";
        let ours = legacy.replace("secret.a-cup-of.coffee/v1", "randomsecret.io/v1");
        let name = versioned_names(&ours).unwrap().remove(0);
        assert!(name.starts_with("db-"), "{name}");
        let e = versioned_names(legacy).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "document 1: RandomSecret a: apiVersion \"secret.a-cup-of.coffee/v1\" is the original operator's: change it to randomsecret.io/v1 (the spec applies as it is); its Secret will be named {name}, not db: see docs/src/annotation-mode.md#migrating-from-the-original-operator"
            )
        );
        assert!(matches!(e, ManifestError::Document { field: Some(f), .. } if f == "apiVersion"));
        // Without secretName the base is metadata.name; a spec that names no
        // version still says what to change.
        let bad = "apiVersion: secret.a-cup-of.coffee/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {length: 0}\n";
        let e = versioned_names(bad).unwrap_err().to_string();
        assert!(e.contains("will be named a-<hash>, not a:"), "{e}");
        // A status of any shape (a dump) is accepted as it is.
        let dump = format!("{ours}status: {{conditions: odd, newer: {{a: 1}}}}\n");
        assert_eq!(versioned_names(&dump).unwrap().join(" "), name);
        // Other groups' RandomSecrets, and other kinds of that group, are not ours.
        for other in [
            "apiVersion: example.com/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {length: 9}\n",
            "apiVersion: secret.a-cup-of.coffee/v1\nkind: Other\nmetadata: {name: a}\n",
        ] {
            assert!(versioned_names(other).unwrap().is_empty(), "{other}");
        }
    }

    /// Issue 32: an unknown field is refused with its path and the nearest
    /// valid name, in the one shape every document error has.
    #[test]
    fn unknown_fields_are_refused_with_the_nearest_name() {
        let input = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {rotaton: x}\n---\n\
            apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: db}\nspec: {keys: {k: {length: 8}}, rotaton: \"2\"}\n";
        let e = versioned_names(input).unwrap_err();
        assert_eq!(
            e.to_string(),
            "document 2: RandomSecret db: unknown field spec.rotaton: did you mean spec.rotation?"
        );
        let ManifestError::Document {
            doc, object, field, ..
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!((doc, field.as_deref()), (2, Some("spec.rotaton")));
        let object = object.unwrap();
        assert_eq!(
            (
                object.kind.as_deref(),
                object.name.as_deref(),
                object.api_version.as_deref()
            ),
            (Some("RandomSecret"), Some("db"), Some("randomsecret.io/v1"))
        );
        // Without a suggestion when nothing is near; in metadata; in a namespace.
        let e = name_of("{keys: {k: {length: 8}}, colour: blue}")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "document 1: RandomSecret a: unknown field spec.colour");
        let meta = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a, namespace: prod, lables: {a: b}}\nspec: {length: 9}\n";
        assert_eq!(
            versioned_names(meta).unwrap_err().to_string(),
            "document 1: RandomSecret prod/a: unknown field metadata.lables: did you mean metadata.labels?"
        );
    }

    /// The connection kinds are ours too: passed by (they were an error, "not
    /// a RandomSecret"), and held to their own schemas.
    #[test]
    fn connection_kinds_are_checked_and_passed_by() {
        let connection = "apiVersion: randomsecret.io/v1\nkind: ClusterVaultConnection\nmetadata: {name: v}\n\
            spec: {address: 'https://vault:8200', auth: {kubernetes: {role: r}}}\n---\n\
            apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\n\
            spec: {length: 9, push: {vault: {connectionRef: {name: v}}}}\n";
        assert_eq!(versioned_names(connection).unwrap().len(), 1);
        let typo = connection.replace("role: r", "role: r, mout: m");
        assert_eq!(
            versioned_names(&typo).unwrap_err().to_string(),
            "document 1: ClusterVaultConnection v: unknown field spec.auth.kubernetes.mout: did you mean spec.auth.kubernetes.mount?"
        );
    }

    /// Every error about a document names it, its object and the field, in
    /// one shape; the field's path is also carried for the KRM results.
    #[test]
    fn document_errors_name_the_object_and_the_field() {
        for (spec, says, field) in [
            (
                "{keys: {k: {length: 0}}}",
                "document 1: RandomSecret a: key \"k\": length 0 is out of range",
                "spec.keys.k.length",
            ),
            (
                "{length: 0}",
                "document 1: RandomSecret a: key \"password\": length 0",
                "spec.length",
            ),
            (
                "{keys: {k: {length: 8}}, rotation: \"a\\u0007\"}",
                "document 1: RandomSecret a: rotation must not contain",
                "spec.rotation",
            ),
            (
                "{keys: {k: {length: 8}}, type: 'a b'}",
                "document 1: RandomSecret a: type \"a b\" is not a valid",
                "spec.type",
            ),
            (
                "{keys: {k: {length: 8}}, static: {k: x}}",
                "document 1: RandomSecret a: key \"k\" is both generated and static",
                "spec.static.k",
            ),
            (
                "{keys: {k: {length: 8}}, rotateEvery: 1h}",
                "document 1: RandomSecret a: rotateEvery makes the name depend on time",
                "spec.rotateEvery",
            ),
            (
                "[]",
                "document 1: RandomSecret a: spec must be a mapping",
                "spec",
            ),
        ] {
            let e = name_of(spec).unwrap_err();
            assert!(e.to_string().starts_with(says), "{spec}: {e}");
            assert!(
                matches!(&e, ManifestError::Document { field: Some(f), .. } if f == field),
                "{spec}: {e:?}"
            );
        }
        // Where the stream's scalar check does not run first (the KRM function's items).
        let n = serde_json::json!({"apiVersion": API_VERSION, "kind": "RandomSecret",
                                   "metadata": {"name": "a"}, "spec": {"static": {"n": "x"}}});
        let e = random_secrets(&[n]).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "document 1: RandomSecret a: spec.static.n: the data key \"n\" is read as a boolean"
            ),
            "{e}"
        );
        assert!(
            matches!(&e, ManifestError::Document { field: Some(f), .. } if f == "spec.static.n")
        );
        let nameless = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {namespace: prod}\nspec: {length: 9}\n";
        assert_eq!(
            versioned_names(nameless).unwrap_err().to_string(),
            "document 1: RandomSecret without metadata.name: metadata.name is required"
        );
        // A name that is not plain is quoted, never printed raw.
        let odd = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: \"a\\e[31m b\"}\nspec: {length: 9, x: 1}\n";
        let e = versioned_names(odd).unwrap_err().to_string();
        assert!(
            e.starts_with("document 1: RandomSecret \"a\\u{1b}[31m b\": unknown field spec.x"),
            "{e}"
        );
    }

    /// Every manifest this repository ships (examples/, testdata/cli) and
    /// every spec of the name vectors passes the check.
    #[test]
    fn every_shipped_manifest_passes() {
        fn yaml_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    yaml_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![];
        yaml_files(&root.join("examples"), &mut files);
        yaml_files(&root.join("testdata/cli"), &mut files);
        let mut ours = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            // Helm templates are not YAML until rendered (a template value
            // of keys.<k>.template is, and is checked).
            if file.components().any(|c| c.as_os_str() == "templates") {
                continue;
            }
            let docs = documents(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            // Every document of ours is checked, the connections too.
            random_secrets(&docs).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for (i, doc) in docs.iter().enumerate() {
                ours += usize::from(identify(i + 1, doc).unwrap().is_some());
            }
        }
        assert!(ours >= 10, "{ours} documents of ours");
        let vectors: Vec<Value> =
            yaml::read(&std::fs::read_to_string(root.join("testdata/name-vectors.yaml")).unwrap())
                .unwrap();
        let schema = &fields::kind(API_VERSION, "RandomSecret").unwrap().schema;
        for v in &vectors {
            let doc = serde_json::json!({"apiVersion": API_VERSION, "kind": "RandomSecret",
                                         "metadata": {"name": v["name"]}, "spec": v["spec"]});
            assert_eq!(fields::check(schema, &doc), Ok(()), "{}", v["description"]);
        }
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
        let other = doc("apiVersion: example.com/v1\n", "kind: RandomSecret\n");
        assert!(versioned_names(&other).unwrap().is_empty());
        // The nearest kind of ours, else the list of them.
        let e = versioned_names(&doc(
            "apiVersion: randomsecret.io/v1\n",
            "kind: VaultConection\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.ends_with("write apiVersion \"randomsecret.io/v1\" and kind \"VaultConnection\""),
            "{e}"
        );
        let e = versioned_names(&doc("apiVersion: randomsecret.io/v1\n", "kind: Secret\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("and one of the kinds RandomSecret, ClusterVaultConnection, VaultConnection, ClusterConnection, ClusterRandomSecret"),
            "{e}"
        );
    }

    /// A value of the wrong type is named by its type, never quoted (a
    /// static value may be a credential); a long apiVersion is cut short.
    #[test]
    fn errors_do_not_quote_values() {
        let input = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: a}\nspec: {static: {password: 98765432123}}\n";
        let e = versioned_names(input).unwrap_err().to_string();
        assert!(
            !e.contains("98765432123")
                && e.ends_with("spec.static.password must be a string, not an integer"),
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
