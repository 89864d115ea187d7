//! The CRD field reference: every field of each CRD's `openAPIV3Schema`, as
//! `randomsecret crd` generates it, with its type, default, description and
//! validations (those the apiserver enforces when an object is applied).

use super::{banner, cell, code, prose};
use serde_json::Value;
use std::fmt::Write;

/// The page `docs/src/reference/crd.md`.
pub fn page() -> String {
    let mut out = String::from("# CRD field reference\n\n");
    out += &banner("the CRDs that `randomsecret crd` prints (the Rust types of `src/api/`)");
    out += "\nEvery field of the four CRDs, as the apiserver validates them: a `<key>` \
            is any key of a map, `[]` any item of a list. `kubectl explain` gives the same \
            descriptions. Validations marked *rule* are CEL rules (`x-kubernetes-validations`), \
            with the message the apiserver answers.\n";
    for (_, crd) in crate::api::crds() {
        let crd = serde_json::to_value(crd).expect("the CRD serializes");
        kind(&mut out, &crd);
    }
    out
}

fn kind(out: &mut String, crd: &Value) {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let _ = write!(out, "\n## {}\n\n", s(&names["kind"]));
    for version in spec["versions"].as_array().into_iter().flatten() {
        let short: Vec<String> = names["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| code(s(n)))
            .collect();
        let _ = writeln!(
            out,
            "`apiVersion: {}/{}`, {}, plural `{}`{}.",
            s(&spec["group"]),
            s(&version["name"]),
            if s(&spec["scope"]) == "Namespaced" {
                "namespaced"
            } else {
                "cluster-scoped"
            },
            s(&names["plural"]),
            if short.is_empty() {
                String::new()
            } else {
                format!(", short names {}", short.join(", "))
            }
        );
        let schema = &version["schema"]["openAPIV3Schema"];
        if let Some(d) = schema["description"].as_str() {
            let _ = write!(
                out,
                "\n{}\n",
                prose(&d.split_whitespace().collect::<Vec<_>>().join(" "))
            );
        }
        if let Some(columns) = version["additionalPrinterColumns"].as_array() {
            let list: Vec<String> = columns
                .iter()
                .map(|c| {
                    let wide = if c["priority"].as_i64().unwrap_or(0) > 0 {
                        " (`-o wide`)"
                    } else {
                        ""
                    };
                    format!("{} {}{wide}", s(&c["name"]), code(s(&c["jsonPath"])))
                })
                .collect();
            let _ = write!(out, "\n`kubectl get` columns: {}.\n", list.join(", "));
        }
        out.push_str("\n| field | type | meaning |\n|---|---|---|\n");
        let mut rows = Vec::new();
        walk(&mut rows, "", schema);
        for (path, ty, meaning) in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code(&path),
                cell(&ty),
                cell(&meaning)
            );
        }
    }
}

/// One row per field under `schema`, depth first in the schema's order.
fn walk(rows: &mut Vec<(String, String, String)>, path: &str, schema: &Value) {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, child) in schema["properties"].as_object().into_iter().flatten() {
        if path.is_empty() && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let child_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        field(rows, child_path, child, required.contains(&name.as_str()));
    }
}

fn field(rows: &mut Vec<(String, String, String)>, path: String, schema: &Value, required: bool) {
    let mut meaning = prose(schema["description"].as_str().unwrap_or("").trim());
    if required {
        meaning = format!("**Required.** {meaning}");
    }
    let checks = validations(schema);
    if !checks.is_empty() {
        if !meaning.is_empty() && !meaning.ends_with('.') {
            meaning.push('.');
        }
        meaning = format!("{meaning} {}", checks.join(" "));
    }
    rows.push((path.clone(), type_of(schema), meaning.trim().to_string()));
    match (&schema["items"], &schema["additionalProperties"]) {
        (items @ Value::Object(_), _) => nested(rows, format!("{path}[]"), items),
        (_, values @ Value::Object(_)) => nested(rows, format!("{path}.<key>"), values),
        _ => walk(rows, &path, schema),
    }
}

/// The items of a list or the values of a map: a row of their own only when
/// they carry validations of their own, then their fields.
fn nested(rows: &mut Vec<(String, String, String)>, path: String, schema: &Value) {
    if schema["properties"].is_object() || !validations(schema).is_empty() {
        field(rows, path, schema, false);
    } else {
        walk(rows, &path, schema);
    }
}

fn type_of(schema: &Value) -> String {
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        return "integer or string".into();
    }
    let base = s(&schema["type"]);
    let ty = match base {
        "array" => format!("list of {}", type_of(&schema["items"])),
        "object" if schema["additionalProperties"].is_object() => {
            format!(
                "map of string to {}",
                type_of(&schema["additionalProperties"])
            )
        }
        "" => "any".into(),
        other => other.into(),
    };
    match schema["format"].as_str() {
        Some(f) if base != "array" => format!("{ty} ({f})"),
        _ => ty,
    }
}

/// Default, allowed values, bounds and rules, in words.
fn validations(schema: &Value) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(d) = schema.get("default") {
        v.push(format!("Default: {}.", code(&d.to_string())));
    }
    if let Some(e) = schema["enum"].as_array() {
        let values: Vec<String> = e
            .iter()
            .map(|x| code(x.as_str().map_or(x.to_string(), String::from).as_str()))
            .collect();
        v.push(format!("One of {}.", values.join(", ")));
    }
    let bound = |lo: &str, hi: &str, what: &str| -> Option<String> {
        let (lo, hi) = (num(&schema[lo]), num(&schema[hi]));
        match (lo, hi) {
            (Some(l), Some(h)) => Some(format!("{what} {l} to {h}.")),
            (Some(l), None) => Some(format!("{what} at least {l}.")),
            (None, Some(h)) => Some(format!("{what} at most {h}.")),
            (None, None) => None,
        }
    };
    v.extend(bound("minimum", "maximum", "Value"));
    v.extend(bound("minLength", "maxLength", "Length"));
    v.extend(bound("minItems", "maxItems", "Items"));
    v.extend(bound("minProperties", "maxProperties", "Keys"));
    if let Some(p) = schema["pattern"].as_str() {
        v.push(format!("Pattern {}.", code(p)));
    }
    if let Some(t) = schema["x-kubernetes-list-type"].as_str() {
        let keys: Vec<String> = schema["x-kubernetes-list-map-keys"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|k| code(s(k)))
            .collect();
        v.push(if keys.is_empty() {
            format!("List type {}.", code(t))
        } else {
            format!("List type {}, keyed by {}.", code(t), keys.join(", "))
        });
    }
    for rule in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let message = rule["message"]
            .as_str()
            .map(|m| format!(": \"{}\"", prose(m)))
            .unwrap_or_default();
        v.push(format!(
            "*Rule* {}{message}.",
            code(
                s(&rule["rule"])
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .as_str()
            )
        ));
    }
    v
}

fn num(v: &Value) -> Option<String> {
    let f = v.as_f64()?;
    Some(if f.fract() == 0.0 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    })
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_carry_their_types_defaults_and_rules() {
        let page = super::page();
        for needle in [
            "## RandomSecret",
            "## ClusterConnection",
            "| `spec.keys.<key>.length` | integer (int64) | Number of characters to generate (1 to 1048576): a random string. Exactly one of length, bytes, uuid, signingKey, sshKeyPair, privateKey, htpasswd, template and certificate. Value 1 to 1048576. |",
            "| `spec.keys.<key>.signingKey.algorithm` | string | **Required.**",
            "| `spec.push.clusters[].connectionRef.name` |",
            "*Rule* `!has(self.symbolCharacters) || !has(self.symbols) || self.symbols`",
        ] {
            let escaped = needle.replace("|| ", "\\|\\| ");
            assert!(
                page.contains(needle) || page.contains(&escaped),
                "{needle} missing from:\n{page}"
            );
        }
    }
}
