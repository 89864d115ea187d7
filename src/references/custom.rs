//! Custom references: kinds beyond the built-in ones whose objects hold
//! Secret names, listed by the user (`--reference`, the kustomize
//! `configurations` idea, kustomize#1262), so that a custom workload keeps
//! the versions it uses and `resolve` rewrites its references.
//!
//! A reference is `GROUP/VERSION/KIND=PATH[,PATH...]`, for example
//! `example.com/v1/Worker=spec/template/spec,spec/credentials/secretName`.
//! A path is field names joined by `/`; a list on the way is walked item by
//! item. What a path ends on decides what it is: a string is a Secret name,
//! a mapping is a pod spec (its env, envFrom, volumes and imagePullSecrets,
//! as a Deployment's template).
//!
//! The controller learns the kinds once, at start ([`register`]), so a
//! holder's kind stays a small copyable index ([`crate::cache::holders::HolderKind::Custom`]).

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// One custom kind and where its objects name Secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomKind {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// `group/version`.
    pub api_version: String,
    /// Each path's field names.
    pub paths: Vec<Vec<String>>,
    /// The resource's plural name, from API discovery (the controller's
    /// watch); empty where only manifests are read (`resolve`).
    pub plural: String,
}

impl CustomKind {
    /// Parses `GROUP/VERSION/KIND=PATH[,PATH...]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let example =
            "such as example.com/v1/Worker=spec/template/spec,spec/credentials/secretName";
        let (kind, paths) = text
            .split_once('=')
            .ok_or_else(|| format!("reference {text:?}: no '=' before the paths; write GROUP/VERSION/KIND=PATH[,PATH...], {example}"))?;
        let parts: Vec<&str> = kind.trim().split('/').collect();
        let [group, version, kind] = parts[..] else {
            return Err(format!(
                "reference {text:?}: {kind:?} is not GROUP/VERSION/KIND ({example}); a built-in kind needs no reference"
            ));
        };
        if group.is_empty() || version.is_empty() || kind.is_empty() || !group.contains('.') {
            return Err(format!(
                "reference {text:?}: GROUP/VERSION/KIND needs a group with a dot (a custom resource's), a version and a kind ({example})"
            ));
        }
        let paths: Vec<Vec<String>> = paths
            .split(',')
            .map(|p| {
                p.trim()
                    .trim_matches('/')
                    .split('/')
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect();
        if paths.iter().any(|p| p.iter().any(String::is_empty)) {
            return Err(format!(
                "reference {text:?}: an empty path or field name ({example})"
            ));
        }
        Ok(CustomKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            api_version: format!("{group}/{version}"),
            paths,
            plural: String::new(),
        })
    }

    /// The API resource the controller watches (`plural` from discovery).
    pub fn api_resource(&self) -> kube::core::ApiResource {
        kube::core::ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    /// Whether a manifest is of this kind (its group and kind; any version).
    pub fn matches(&self, doc: &Value) -> bool {
        let group = doc
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.split_once('/'))
            .map(|(g, _)| g);
        group == Some(self.group.as_str()) && doc["kind"] == self.kind.as_str()
    }

    /// Renames the Secret references at this kind's paths in `obj` for which
    /// `map` returns a new name; returns how many changed.
    pub fn rewrite(&self, obj: &mut Value, map: &dyn Fn(&str) -> Option<String>) -> usize {
        let mut changed = 0;
        for path in &self.paths {
            walk(obj, path, &mut |end| match end {
                Value::String(name) => {
                    if let Some(new) = map(name)
                        && new != *name
                    {
                        *name = new;
                        changed += 1;
                    }
                }
                Value::Object(_) => changed += super::rewrite_pod_spec(end, map),
                _ => {}
            });
        }
        changed
    }

    /// The Secret names at this kind's paths in `obj`.
    pub fn names(&self, obj: &Value) -> BTreeSet<String> {
        let found = std::cell::RefCell::new(BTreeSet::new());
        self.rewrite(&mut obj.clone(), &|name| {
            found.borrow_mut().insert(name.to_string());
            None
        });
        found.into_inner()
    }
}

/// Calls `at` on what `path` ends on in `v`, through every list on the way.
fn walk(v: &mut Value, path: &[String], at: &mut dyn FnMut(&mut Value)) {
    match (v, path.split_first()) {
        (Value::Array(items), _) => {
            for item in items {
                walk(item, path, at);
            }
        }
        (v, None) => at(v),
        (Value::Object(map), Some((field, rest))) => {
            if let Some(next) = map.get_mut(field) {
                walk(next, rest, at);
            }
        }
        _ => {}
    }
}

/// Parses every `--reference`; two for one kind are an error.
pub fn parse_all(texts: &[String]) -> Result<Vec<CustomKind>, String> {
    let mut kinds: Vec<CustomKind> = Vec::new();
    for t in texts {
        let k = CustomKind::parse(t)?;
        if kinds.iter().any(|o| o.group == k.group && o.kind == k.kind) {
            return Err(format!(
                "reference {t:?}: {} of {} is listed twice; give all its paths in one reference",
                k.kind, k.group
            ));
        }
        kinds.push(k);
    }
    Ok(kinds)
}

static REGISTERED: OnceLock<Vec<CustomKind>> = OnceLock::new();

/// The controller's custom kinds, set once at start (before any watch).
/// A second call is refused: kinds are indexes into this list.
pub fn register(kinds: Vec<CustomKind>) -> Result<(), String> {
    REGISTERED
        .set(kinds)
        .map_err(|_| "custom reference kinds are registered once".to_string())
}

/// The registered kinds (none before [`register`]).
pub fn registered() -> &'static [CustomKind] {
    REGISTERED.get().map_or(&[], Vec::as_slice)
}

/// The indexes of the registered kinds (a holder kind's and a stream's).
pub fn indexes() -> impl Iterator<Item = u16> {
    (0..registered().len()).map(|i| i as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn worker() -> CustomKind {
        CustomKind::parse("example.com/v1/Worker=spec/template/spec, spec/credentials/secretName,spec/jobs/secret").unwrap()
    }

    #[test]
    fn a_reference_is_parsed_with_its_paths() {
        let k = worker();
        assert_eq!(
            (k.group.as_str(), k.version.as_str(), k.kind.as_str()),
            ("example.com", "v1", "Worker")
        );
        assert_eq!(k.api_version, "example.com/v1");
        assert_eq!(k.paths[1], ["spec", "credentials", "secretName"]);
    }

    #[test]
    fn bad_references_say_what_to_write() {
        for (bad, says) in [
            ("example.com/v1/Worker", "no '='"),
            ("Worker=spec", "not GROUP/VERSION/KIND"),
            ("apps/v1/Deployment=spec/template/spec", "group with a dot"),
            ("example.com/v1/Worker=spec//x", "empty path"),
            ("example.com/v1/Worker=", "empty path"),
        ] {
            let e = CustomKind::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let twice = parse_all(&[
            "example.com/v1/Worker=spec/a".into(),
            "example.com/v2/Worker=spec/b".into(),
        ])
        .unwrap_err();
        assert!(twice.contains("listed twice"), "{twice}");
    }

    #[test]
    fn strings_are_names_mappings_are_pod_specs_lists_are_walked() {
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Worker", "spec": {
            "template": {"spec": {"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": "db"}}]}]}},
            "credentials": {"secretName": "db"},
            "jobs": [{"secret": "db"}, {"secret": "other"}, {"secret": 3}],
            "unlisted": {"secretName": "db"},
        }});
        let k = worker();
        assert!(k.matches(&obj));
        assert_eq!(
            k.names(&obj).into_iter().collect::<Vec<_>>(),
            ["db", "other"]
        );
        let n = k.rewrite(&mut obj, &|s| (s == "db").then(|| "db-v2".to_string()));
        assert_eq!(n, 3);
        assert_eq!(obj["spec"]["credentials"]["secretName"], "db-v2");
        assert_eq!(obj["spec"]["jobs"][0]["secret"], "db-v2");
        assert_eq!(obj["spec"]["jobs"][1]["secret"], "other");
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "db-v2"
        );
        assert_eq!(
            obj["spec"]["unlisted"]["secretName"], "db",
            "only the listed paths"
        );
        let other_group = json!({"apiVersion": "other.io/v1", "kind": "Worker"});
        assert!(!k.matches(&other_group));
    }
}
