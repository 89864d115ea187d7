//! Fields the apiserver would refuse, found before anything reaches it: each
//! document of our API group is walked against the schema its CRD is
//! generated from ([`crate::api::crds`]), so this check cannot drift from the
//! CRD. An unknown field (`rotaton:` for `rotation:`) is refused with its
//! path and the nearest valid name; so is a value of the wrong shape (a list
//! where a mapping belongs), a missing required field and a value outside an
//! enum, each named by its path. Ranges, patterns and CEL rules are left to
//! [`crate::version`] (which says what to fix) and to the apiserver.
//!
//! Errors name paths and field names, never a value: a static value may be
//! a credential.

use serde_json::{Map, Value};
use std::fmt;
use std::sync::LazyLock;

/// One kind of our API group, with the schema a whole document of it is
/// checked against.
#[derive(Debug)]
pub struct Kind {
    /// `randomsecret.io/v1`.
    pub api_version: String,
    pub kind: String,
    /// The CRD's openAPIV3Schema, with `apiVersion`, `kind` and `metadata`
    /// (ObjectMeta) added as the apiserver adds them, and `status` open.
    pub schema: Value,
}

/// Every kind of our API group, from [`crate::api::crds`]: each served
/// version of each CRD.
pub fn kinds() -> &'static [Kind] {
    static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
        let meta = object_meta_schema();
        let mut out = vec![];
        for (_, crd) in crate::api::crds() {
            for version in crd.spec.versions.iter().filter(|v| v.served) {
                let Some(schema) = version
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                else {
                    continue;
                };
                let schema = serde_json::to_value(schema).expect("a CRD schema serializes");
                out.push(Kind {
                    api_version: format!("{}/{}", crd.spec.group, version.name),
                    kind: crd.spec.names.kind.clone(),
                    schema: document_schema(schema, &meta),
                });
            }
        }
        out
    });
    &KINDS
}

/// The kind of our group with this apiVersion and kind, if there is one.
pub fn kind(api_version: &str, kind: &str) -> Option<&'static Kind> {
    kinds()
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
}

/// ObjectMeta's schema as k8s-openapi has it (the Kubernetes version this
/// crate is built for), with its definitions under `$defs`.
fn object_meta_schema() -> Value {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let schema =
        k8s_openapi::schemars::SchemaGenerator::default().into_root_schema_for::<ObjectMeta>();
    serde_json::to_value(schema).expect("ObjectMeta's schema serializes")
}

/// A CRD's openAPIV3Schema as the apiserver applies it to a whole object.
fn document_schema(mut schema: Value, meta: &Value) -> Value {
    let mut meta = meta.clone();
    let defs = meta
        .as_object_mut()
        .and_then(|m| m.remove("$defs"))
        .unwrap_or_default();
    let root = schema.as_object_mut().expect("a CRD schema is an object");
    // ObjectMeta's references (`#/$defs/...`) resolve from the document's root.
    root.insert("$defs".into(), defs);
    let properties = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("properties is an object");
    properties.insert("apiVersion".into(), serde_json::json!({"type": "string"}));
    properties.insert("kind".into(), serde_json::json!({"type": "string"}));
    properties.insert("metadata".into(), meta);
    // The status is not checked, and accepted as it is: the status
    // subresource is on, so the apiserver never writes a status sent to the
    // main resource (a field there cannot be a typo that changes a name or
    // drops a setting in silence: strict validation refuses an unknown one
    // loudly, --validate=false drops it with the rest of the status); this
    // CLI never reads it; and a dump (`kubectl get -o yaml`) carries the
    // status written by whichever controller version runs, which may know
    // fields this CLI does not.
    if properties.contains_key("status") {
        properties.insert(
            "status".into(),
            serde_json::json!({"x-kubernetes-preserve-unknown-fields": true}),
        );
    }
    schema
}

/// One step of a path: a field or map key, or a list index.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Name(String),
    Index(usize),
}

/// A path as errors write it: `spec.keys.password.length`,
/// `spec.push.clusters[0].namespace`; a name that is not plain (spaces,
/// quotes, control characters, very long) is quoted and cut short:
/// `spec.static["a b"]`.
fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Name(n) if is_plain(n) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Step::Name(n) => {
                out.push('[');
                out.push_str(&quoted(n));
                out.push(']');
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A path from field names and keys: `spec.keys.password.length`.
pub fn path(names: &[&str]) -> String {
    let steps: Vec<Step> = names.iter().map(|n| Step::Name(n.to_string())).collect();
    render(&steps)
}

/// A name (a field, a key, an object's name or kind) as errors show it: as
/// it is when plain, else quoted and cut short.
pub fn shown(name: &str) -> String {
    if is_plain(name) {
        name.to_string()
    } else {
        quoted(name)
    }
}

/// A name written as it is: what Kubernetes allows in field names, data
/// keys, label keys and object names.
fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
}

/// A name quoted with its special characters escaped, at most 64 characters of it.
pub fn quoted(name: &str) -> String {
    let short: String = name.chars().take(64).collect();
    let more = if short.len() < name.len() { "…" } else { "" };
    format!("{short:?}{more}")
}

/// What is wrong with one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Not in the schema; `suggestion`: the nearest valid field's path.
    Unknown { suggestion: Option<String> },
    /// A value of another JSON type than the schema's.
    WrongType {
        want: &'static str,
        got: &'static str,
    },
    /// A required field is absent (or null, which the apiserver prunes).
    Required,
    /// A value outside the schema's enum; `suggestion`: the nearest allowed value.
    NotOneOf {
        allowed: Vec<String>,
        suggestion: Option<String>,
    },
    /// An integer beyond its format (`int32`, `int64`).
    TooLarge { bits: u32 },
}

/// A field the apiserver would refuse, by its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path: `spec.keys.password.lenght`.
    pub path: String,
    pub problem: Problem,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        let did_you_mean = |f: &mut fmt::Formatter<'_>, s: &Option<String>| match s {
            Some(s) => write!(f, ": did you mean {s}?"),
            None => Ok(()),
        };
        match &self.problem {
            Problem::Unknown { suggestion } => {
                write!(f, "unknown field {path}")?;
                did_you_mean(f, suggestion)
            }
            Problem::WrongType { want, got } => write!(f, "{path} must be {want}, not {got}"),
            Problem::Required => write!(f, "{path} is required"),
            Problem::NotOneOf {
                allowed,
                suggestion,
            } => {
                write!(f, "{path} must be one of {}", allowed.join(", "))?;
                did_you_mean(f, suggestion)
            }
            Problem::TooLarge { bits } => write!(f, "{path} must be a {bits}-bit integer"),
        }
    }
}

impl std::error::Error for FieldError {}

/// The nearest of `candidates` to `name`, if one is near: the smallest
/// optimal-string-alignment distance (an edit, or two neighbours swapped,
/// counts 1), ignoring case, of at most a third of the candidate's length
/// (at least 1); the first in alphabetical order among equals. The Helm
/// helper (charts/randomsecret-lib) computes the same, on bytes, and the
/// annotations' suggestions (src/annotated/rules.rs) follow the same rule.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let length = name.chars().count();
    let lower = name.to_lowercase();
    let mut candidates: Vec<&str> = candidates.into_iter().collect();
    candidates.sort_unstable();
    candidates
        .into_iter()
        .filter_map(|c| {
            let most = (c.chars().count() / 3).max(1);
            // The lengths first: a long name (the input may hold one of
            // megabytes) costs no distance.
            if length.abs_diff(c.chars().count()) > most {
                return None;
            }
            let d = strsim::osa_distance(&lower, &c.to_lowercase());
            (d <= most).then_some((d, c))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Checks `doc` against `schema` (an OpenAPI v3 schema as a CRD holds it;
/// `$ref`s resolve from its root); the first problem, in document order.
///
/// - `properties` are the fields an object may have; another field is
///   unknown, unless `additionalProperties` (a map: each value is checked
///   against it) or `x-kubernetes-preserve-unknown-fields` allows it. An
///   object schema with neither properties nor additionalProperties is free
///   form (ObjectMeta's `managedFields[].fieldsV1`; a structural CRD schema
///   has none, a test checks it), unless `maxProperties: 0` says it has no
///   field at all (`uuid: {}`).
/// - `items`: each element of a list.
/// - `type`, `format` (int32, int64), `enum` and `required`.
/// - A null is accepted wherever it is: the apiserver prunes it like an
///   absent field (the CRDs have no `nullable`).
/// - `allOf`, `anyOf`, `oneOf` and `not` are not read: in a structural
///   schema they only validate, and the apiserver reports them.
pub fn check(schema: &Value, doc: &Value) -> Result<(), FieldError> {
    let mut path = vec![];
    walk(schema, schema, doc, &mut path)
}

fn error(path: &[Step], problem: Problem) -> FieldError {
    FieldError {
        path: render(path),
        problem,
    }
}

/// `schema`, or what its `$ref` points to (within `root`).
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    // A few hops at most: a cycle of references is not followed for ever.
    for _ in 0..8 {
        match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// How a JSON value is named in errors (its type, never its content).
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a decimal number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Whether `value` is of the schema's `type`; the name of that type.
fn of_type(want: &str, value: &Value) -> (bool, &'static str) {
    match want {
        "object" => (value.is_object(), "a mapping"),
        "array" => (value.is_array(), "a list"),
        "string" => (value.is_string(), "a string"),
        "boolean" => (value.is_boolean(), "a boolean"),
        "integer" => (value.is_i64() || value.is_u64(), "an integer"),
        "number" => (value.is_number(), "a number"),
        // A type this check does not know: the apiserver judges it.
        _ => (true, "any"),
    }
}

fn walk(
    root: &Value,
    schema: &Value,
    value: &Value,
    path: &mut Vec<Step>,
) -> Result<(), FieldError> {
    let schema = resolve(root, schema);
    if value.is_null() {
        return Ok(());
    }
    if let Some(want) = schema.get("type").and_then(Value::as_str) {
        // An integer beyond 64 bits reaches here as a float: too large, not fractional.
        if want == "integer"
            && value.as_f64().is_some_and(|f| {
                !value.is_i64() && !value.is_u64() && f.fract() == 0.0 && f.abs() >= 9.2e18
            })
        {
            let bits = if schema.get("format") == Some(&Value::from("int32")) {
                32
            } else {
                64
            };
            return Err(error(path, Problem::TooLarge { bits }));
        }
        let (ok, want) = of_type(want, value);
        if !ok {
            let got = type_of(value);
            return Err(error(path, Problem::WrongType { want, got }));
        }
    }
    if let Some(n) = value.as_number() {
        let fits = match schema.get("format").and_then(Value::as_str) {
            Some("int32") => Some((n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()), 32)),
            Some("int64") => Some((n.is_i64(), 64)),
            _ => None,
        };
        if let Some((false, bits)) = fits {
            return Err(error(path, Problem::TooLarge { bits }));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        let suggestion = value
            .as_str()
            .and_then(|v| nearest(v, names.iter().copied()))
            .map(String::from);
        let allowed = names.into_iter().map(String::from).collect();
        return Err(error(
            path,
            Problem::NotOneOf {
                allowed,
                suggestion,
            },
        ));
    }
    match value {
        Value::Object(map) => walk_object(root, schema, map, path),
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    walk(root, item, v, path)?;
                    path.pop();
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn walk_object(
    root: &Value,
    schema: &Value,
    map: &Map<String, Value>,
    path: &mut Vec<Step>,
) -> Result<(), FieldError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    // `maxProperties: 0`: an object with no fields at all (`uuid: {}`).
    let closed = schema.get("maxProperties") == Some(&Value::from(0));
    let free_form = properties.is_none() && additional.is_none() && !closed;
    for (k, v) in map {
        path.push(Step::Name(k.clone()));
        match (properties.and_then(|p| p.get(k)), additional) {
            (Some(field), _) => walk(root, field, v, path)?,
            (None, Some(each @ Value::Object(_))) => walk(root, each, v, path)?,
            (None, Some(Value::Bool(true))) => {}
            _ if preserve || free_form => {}
            _ => {
                path.pop();
                let suggestion = properties
                    .and_then(|p| nearest(k, p.keys().map(String::as_str)))
                    .map(|s| {
                        let mut near = path.clone();
                        near.push(Step::Name(s.to_string()));
                        render(&near)
                    });
                path.push(Step::Name(k.clone()));
                return Err(error(path, Problem::Unknown { suggestion }));
            }
        }
        path.pop();
    }
    for field in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if map.get(field).is_none_or(Value::is_null) {
            path.push(Step::Name(field.to_string()));
            return Err(error(path, Problem::Required));
        }
    }
    Ok(())
}

/// The fields a RandomSecret's spec may have, as the Helm helper
/// (charts/randomsecret-lib/templates/_name.tpl, `randomsecret.specFields`)
/// holds them: YAML, each node with `fields` (an object's fields, each a
/// node), `values` (a map: each value's node) or `items` (a list: each
/// item's node); a node with none of them is not looked into. Helm cannot
/// read this schema, so the list is generated here and a test checks that
/// the template holds exactly this.
pub fn helm_spec_fields() -> String {
    let rs = kind(crate::api::API_VERSION, "RandomSecret").expect("RandomSecret is a kind");
    let spec = &rs.schema["properties"]["spec"];
    crate::gitops::yaml::write(&helm_node(&rs.schema, spec)).expect("the list serializes")
}

fn helm_node(root: &Value, schema: &Value) -> Value {
    let schema = resolve(root, schema);
    assert!(
        schema.get("x-kubernetes-preserve-unknown-fields").is_none(),
        "the Helm helper's field list cannot say x-kubernetes-preserve-unknown-fields: teach it"
    );
    let mut node = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort();
        let fields = names
            .into_iter()
            .map(|n| (n.clone(), helm_node(root, &properties[n])))
            .collect();
        node.insert("fields".into(), Value::Object(fields));
    } else if schema.get("maxProperties") == Some(&Value::from(0)) {
        // No field at all (`uuid: {}`): every field is unknown.
        node.insert("fields".into(), Value::Object(Map::new()));
    }
    for (key, inner) in [("values", "additionalProperties"), ("items", "items")] {
        if let Some(each @ Value::Object(_)) = schema.get(inner) {
            let each = helm_node(root, each);
            if each.as_object().is_some_and(|m| !m.is_empty()) {
                node.insert(key.into(), each);
            }
        }
    }
    Value::Object(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn random_secret() -> &'static Value {
        &kind("randomsecret.io/v1", "RandomSecret").unwrap().schema
    }

    fn rs(spec: Value) -> Value {
        json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
               "metadata": {"name": "db", "namespace": "a", "labels": {"app": "x"}}, "spec": spec})
    }

    fn problem(doc: &Value) -> String {
        check(random_secret(), doc).unwrap_err().to_string()
    }

    #[test]
    fn every_crd_kind_is_known() {
        let names: Vec<(&str, &str)> = kinds()
            .iter()
            .map(|k| (k.api_version.as_str(), k.kind.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("randomsecret.io/v1", "RandomSecret"),
                ("randomsecret.io/v1", "ClusterVaultConnection"),
                ("randomsecret.io/v1", "VaultConnection"),
                ("randomsecret.io/v1", "ClusterConnection"),
                ("randomsecret.io/v1", "ClusterRandomSecret"),
            ]
        );
    }

    #[test]
    fn a_valid_random_secret_passes() {
        let doc = rs(json!({
            "secretName": "db-creds", "rotation": "1", "type": "Opaque", "history": 2,
            "keys": {"password": {"length": 32, "charset": "alphanumeric", "symbols": true,
                                  "symbolCharacters": "!#", "previous": false},
                     "tls.crt": {"length": 8}},
            "static": {"user": "admin", "any key at all": "x"},
            "secretLabels": {"a": "b"}, "secretAnnotations": {"example.com/x": "y"},
            "push": {"vault": {"connectionRef": {"name": "v", "kind": "VaultConnection"},
                               "path": "{namespace}/{name}", "keys": ["password"], "keyPrefix": "DB_",
                               "deletionPolicy": "Retain"},
                     "clusters": [{"connectionRef": {"name": "c"}, "namespace": "n", "deletionPolicy": "Delete"}]},
            "rotateEvery": null
        }));
        assert_eq!(check(random_secret(), &doc), Ok(()));
    }

    #[test]
    fn an_unknown_field_is_named_with_the_nearest_valid_one() {
        assert_eq!(
            problem(&rs(json!({"keys": {"k": {"length": 8}}, "rotaton": "2"}))),
            "unknown field spec.rotaton: did you mean spec.rotation?"
        );
        // Case, a swap of neighbours, a letter too many.
        for (typo, near) in [
            ("secretname", "secretName"),
            ("kyes", "keys"),
            ("statics", "static"),
            ("special_char", "specialChar"),
        ] {
            let mut spec = json!({"keys": {"k": {"length": 8}}});
            spec[typo] = json!({});
            assert_eq!(
                problem(&rs(spec)),
                format!("unknown field spec.{typo}: did you mean spec.{near}?")
            );
        }
    }

    #[test]
    fn nothing_near_means_no_suggestion() {
        assert_eq!(
            problem(&rs(json!({"keys": {"k": {"length": 8}}, "colour": "blue"}))),
            "unknown field spec.colour"
        );
        assert_eq!(nearest("x", ["key", "keys"]), None);
        assert_eq!(nearest("ky", ["keys", "key"]), Some("key"));
        // Equally near: the first alphabetically.
        assert_eq!(nearest("ab", ["ac", "aa"]), Some("aa"));
        // A name of megabytes is measured by its length only, at once.
        let started = std::time::Instant::now();
        let long = "rotation".repeat(1 << 17);
        assert_eq!(nearest(&long, ["rotation", "rotateEvery"]), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn nested_unknown_fields_are_found_with_their_paths() {
        for (spec, want) in [
            (
                json!({"keys": {"password": {"length": 8, "symbol": true}}}),
                "unknown field spec.keys.password.symbol: did you mean spec.keys.password.symbols?",
            ),
            (
                json!({"keys": {"tls.crt": {"lenght": 8}}}),
                "unknown field spec.keys.tls.crt.lenght: did you mean spec.keys.tls.crt.length?",
            ),
            (
                json!({"length": 9, "push": {"vault": {"connectionRef": {"name": "v"}, "pathh": "x"}}}),
                "unknown field spec.push.vault.pathh: did you mean spec.push.vault.path?",
            ),
            (
                json!({"length": 9, "push": {"vault": {"connectionRef": {"name": "v", "knd": "VaultConnection"}}}}),
                "unknown field spec.push.vault.connectionRef.knd: did you mean spec.push.vault.connectionRef.kind?",
            ),
            (
                json!({"length": 9, "push": {"clusters": [{"connectionRef": {"name": "a"}}, {"connectionRef": {"name": "b"}, "namespce": "x"}]}}),
                "unknown field spec.push.clusters[1].namespce: did you mean spec.push.clusters[1].namespace?",
            ),
            (
                json!({"length": 9, "push": {"valt": {}}}),
                "unknown field spec.push.valt: did you mean spec.push.vault?",
            ),
        ] {
            assert_eq!(problem(&rs(spec)), want);
        }
    }

    /// static, secretLabels and secretAnnotations are maps: any key is a
    /// key, not a field; only their values are held to the schema.
    #[test]
    fn map_keys_are_not_fields() {
        let spec = json!({"static": {"rotaton": "x", "keys": "y"}, "secretLabels": {"lenght": "z"},
                          "secretAnnotations": {"symbol": "w"}});
        assert_eq!(check(random_secret(), &rs(spec)), Ok(()));
        let e = problem(&rs(json!({"static": {"password": 98765432123_i64}})));
        assert_eq!(e, "spec.static.password must be a string, not an integer");
    }

    #[test]
    fn metadata_is_object_meta() {
        let mut doc = rs(json!({"length": 9}));
        doc["metadata"]["lables"] = json!({"a": "b"});
        assert_eq!(
            problem(&doc),
            "unknown field metadata.lables: did you mean metadata.labels?"
        );
        // What a dump carries is fine, null timestamps (kubectl create -o yaml) included.
        let mut dump = rs(json!({"length": 9}));
        dump["metadata"] = json!({
            "name": "db", "namespace": "a", "uid": "u", "resourceVersion": "1", "generation": 1,
            "creationTimestamp": null, "annotations": {"a/b": "c"}, "finalizers": ["x"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "randomsecret.io/v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:length": {}}},
                               "time": "2024-01-01T00:00:00Z"}]
        });
        dump["status"] =
            json!({"secretName": "db-x", "somethingNewer": {"a": 1}, "conditions": "odd"});
        assert_eq!(check(random_secret(), &dump), Ok(()));
        // ObjectMeta's own types, through its references.
        let mut owner = dump.clone();
        owner["metadata"]["ownerReferences"][0]["controler"] = json!(true);
        assert_eq!(
            problem(&owner),
            "unknown field metadata.ownerReferences[0].controler: did you mean metadata.ownerReferences[0].controller?"
        );
        owner["metadata"]["ownerReferences"][0] =
            json!({"apiVersion": "v1", "kind": "K", "name": "n"});
        assert_eq!(
            problem(&owner),
            "metadata.ownerReferences[0].uid is required"
        );
        let mut label = dump;
        label["metadata"]["labels"] = json!({"a": 1});
        assert_eq!(
            problem(&label),
            "metadata.labels.a must be a string, not an integer"
        );
    }

    #[test]
    fn the_top_level_is_checked_too() {
        let mut doc = rs(json!({"length": 9}));
        doc["sepc"] = doc["spec"].take();
        let e = problem(&doc);
        assert_eq!(e, "unknown field sepc: did you mean spec?");
        doc.as_object_mut().unwrap().remove("sepc");
        doc["spec"] = json!({"length": 9});
        doc["data"] = json!({});
        assert_eq!(problem(&doc), "unknown field data");
    }

    #[test]
    fn types_enums_formats_and_required_fields() {
        for (spec, want) in [
            (
                json!({"keys": {"k": {"length": "8"}}}),
                "spec.keys.k.length must be an integer, not a string",
            ),
            (
                json!({"keys": {"k": {"length": 4.5}}}),
                "spec.keys.k.length must be an integer, not a decimal number",
            ),
            (
                json!({"keys": {"k": {"length": u64::MAX}}}),
                "spec.keys.k.length must be a 64-bit integer",
            ),
            (
                json!({"keys": {"k": {"length": 1.8e19}}}),
                "spec.keys.k.length must be a 64-bit integer",
            ),
            (
                json!({"length": 9, "history": 1_i64 << 40}),
                "spec.history must be a 32-bit integer",
            ),
            (
                json!({"keys": {"k": {"signingKey": {"keep": 1}}}}),
                "spec.keys.k.signingKey.algorithm is required",
            ),
            (
                json!({"keys": {"k": {"signingKey": {"algorithm": "es256"}}}}),
                "spec.keys.k.signingKey.algorithm must be one of ES256, EdDSA, RS256: did you mean ES256?",
            ),
            (
                json!({"keys": ["k"]}),
                "spec.keys must be a mapping, not a list",
            ),
            (
                json!({"length": 9, "rotation": 2}),
                "spec.rotation must be a string, not an integer",
            ),
            (
                json!({"length": 9, "specialChar": "yes"}),
                "spec.specialChar must be a boolean, not a string",
            ),
            (
                json!({"keys": {"k": {"length": 8, "charset": "Numeric"}}}),
                "spec.keys.k.charset must be one of alphanumeric, alpha, lower, upper, numeric, hex, base64, base64url, ascii: did you mean numeric?",
            ),
            (
                json!({"keys": {"k": {"length": 8, "charset": "emoji"}}}),
                "spec.keys.k.charset must be one of alphanumeric, alpha, lower, upper, numeric, hex, base64, base64url, ascii",
            ),
            (
                json!({"length": 9, "push": {"vault": {"path": "x"}}}),
                "spec.push.vault.connectionRef is required",
            ),
        ] {
            assert_eq!(problem(&rs(spec.clone())), want, "{spec}");
        }
        // An unknown field is named before a missing one: `lenght` says more than "length is required".
        assert_eq!(
            problem(&rs(json!({"keys": {"k": {"lenght": 8}}}))),
            "unknown field spec.keys.k.lenght: did you mean spec.keys.k.length?"
        );
    }

    /// No value is ever quoted: only paths, field names and enum values.
    #[test]
    fn errors_never_quote_values() {
        for spec in [
            json!({"static": {"password": 98765432123_i64}}),
            json!({"static": {"password": ["hunter2-secret"]}}),
            json!({"keys": {"k": {"length": 8, "charset": "hunter2-secret"}}}),
            json!({"length": 9, "rotation": {"hunter2-secret": 1}}),
        ] {
            let e = problem(&rs(spec.clone()));
            assert!(!e.contains("98765432123") && !e.contains("hunter2"), "{e}");
        }
        // Odd names are quoted and cut short, never printed raw.
        let odd = format!("a\u{1b}[31m{}", "x".repeat(500));
        let mut spec = json!({"length": 9});
        spec[odd.as_str()] = json!(1);
        let e = problem(&rs(spec));
        assert!(e.starts_with("unknown field spec[\"a\\u{1b}[31m"), "{e}");
        assert!(e.len() < 120 && !e.contains('\u{1b}'), "{e}");
    }

    #[test]
    fn connection_kinds_are_checked_against_their_own_schemas() {
        let vault = &kind("randomsecret.io/v1", "ClusterVaultConnection")
            .unwrap()
            .schema;
        let doc = json!({"apiVersion": "randomsecret.io/v1", "kind": "ClusterVaultConnection",
                         "metadata": {"name": "v"},
                         "spec": {"address": "https://vault:8200", "auth": {"kubernetes": {"role": "r", "mout": "m"}}}});
        assert_eq!(
            check(vault, &doc).unwrap_err().to_string(),
            "unknown field spec.auth.kubernetes.mout: did you mean spec.auth.kubernetes.mount?"
        );
        let cluster = &kind("randomsecret.io/v1", "ClusterConnection")
            .unwrap()
            .schema;
        let doc = json!({"apiVersion": "randomsecret.io/v1", "kind": "ClusterConnection",
                         "metadata": {"name": "c"},
                         "spec": {"kubeconfigSecretRef": {"name": "k", "namespace": "n"}, "targetNamespace": ["a"]}});
        assert_eq!(
            check(cluster, &doc).unwrap_err().to_string(),
            "unknown field spec.targetNamespace: did you mean spec.targetNamespaces?"
        );
    }

    /// The free-form rule (an object with neither properties nor
    /// additionalProperties, nor `maxProperties: 0`) is for ObjectMeta's fieldsV1: in our CRDs (a
    /// structural schema prunes such an object empty) there is none, so it
    /// never lets an unknown field of ours through.
    #[test]
    fn our_schemas_have_no_free_form_objects() {
        fn visit(v: &Value, path: &str, out: &mut Vec<String>) {
            if let Some(m) = v.as_object() {
                let object = m.get("type") == Some(&json!("object"));
                let open = m.contains_key("properties")
                    || m.contains_key("additionalProperties")
                    || m.get("maxProperties") == Some(&json!(0))
                    || m.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
                if object && !open {
                    out.push(path.to_string());
                }
                for (k, v) in m {
                    visit(v, &format!("{path}/{k}"), out);
                }
            }
        }
        for (_, crd) in crate::api::crds() {
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
            let mut free = vec![];
            visit(
                &schema["openAPIV3Schema"]["properties"]["spec"],
                "spec",
                &mut free,
            );
            assert!(free.is_empty(), "{}: {free:?}", crd.spec.names.kind);
        }
    }

    /// The Helm helper's list of fields is the schema's (regenerate it from
    /// this test's message when the API changes).
    #[test]
    fn the_helm_helpers_field_list_is_the_schemas() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/charts/randomsecret-lib/templates/_name.tpl"
        );
        let template = std::fs::read_to_string(path).unwrap();
        let start = "{{- define \"randomsecret.specFields\" -}}\n";
        let held = template
            .split_once(start)
            .and_then(|(_, rest)| rest.split_once("{{- end -}}"))
            .map(|(list, _)| list)
            .expect("the template defines randomsecret.specFields");
        let want = helm_spec_fields();
        assert!(
            held == want,
            "charts/randomsecret-lib/templates/_name.tpl: randomsecret.specFields is not the CRD's: replace it with\n{want}"
        );
        // And the list is what the walker knows: every field it names is in the schema.
        assert!(want.contains("symbolCharacters") && want.contains("deletionPolicy"));
    }
}
