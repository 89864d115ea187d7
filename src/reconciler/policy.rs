//! What the cluster's operators let RandomSecrets produce (`--allow-*`
//! flags): creating a RandomSecret makes the controller create Secrets of
//! its type with its labels and annotations, so an operator may narrow that
//! (SECURITY.md). Pure; empty lists allow anything.

use crate::version::Version;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Secret types a RandomSecret may ask for (empty: any).
    pub types: Vec<String>,
    /// Prefixes every `secretLabels` key must start with (empty: any).
    pub label_prefixes: Vec<String>,
    /// Prefixes every `secretAnnotations` key must start with (empty: any).
    pub annotation_prefixes: Vec<String>,
}

impl Policy {
    /// Why `v` (with these labels and annotations) is not allowed, if it is not.
    pub fn refuses<'a>(
        &self,
        v: &Version,
        labels: impl IntoIterator<Item = &'a String>,
        annotations: impl IntoIterator<Item = &'a String>,
    ) -> Option<String> {
        if !self.types.is_empty() && !self.types.contains(&v.spec.secret_type) {
            return Some(format!(
                "type {} is not allowed here (allowed: {}): use one of those, or ask the cluster's operators",
                v.spec.secret_type,
                self.types.join(", ")
            ));
        }
        if let Some(k) = outside(labels, &self.label_prefixes) {
            return Some(format!(
                "secretLabels key {k} is not allowed here (allowed prefixes: {}): remove it, or ask the cluster's operators",
                self.label_prefixes.join(", ")
            ));
        }
        if let Some(k) = outside(annotations, &self.annotation_prefixes) {
            return Some(format!(
                "secretAnnotations key {k} is not allowed here (allowed prefixes: {}): remove it, or ask the cluster's operators",
                self.annotation_prefixes.join(", ")
            ));
        }
        None
    }
}

/// The first key that starts with none of `prefixes` (none when the list is empty).
fn outside<'a>(keys: impl IntoIterator<Item = &'a String>, prefixes: &[String]) -> Option<String> {
    if prefixes.is_empty() {
        return None;
    }
    keys.into_iter()
        .find(|k| !prefixes.iter().any(|p| k.starts_with(p.as_str())))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RandomSecretSpec;

    fn version(spec: serde_json::Value) -> Version {
        let spec: RandomSecretSpec = serde_json::from_value(spec).unwrap();
        Version::of(&spec, "db").unwrap()
    }

    #[test]
    fn empty_lists_allow_anything() {
        let v = version(
            serde_json::json!({"length": 8, "type": "kubernetes.io/tls", "static": {"tls.crt": "x", "tls.key": "y"}}),
        );
        let l = ["anything/at-all".to_string()];
        assert_eq!(Policy::default().refuses(&v, &l, &l), None);
    }

    #[test]
    fn types_and_prefixes_outside_the_lists_are_refused_with_what_is_allowed() {
        let p = Policy {
            types: vec!["Opaque".into()],
            label_prefixes: vec!["app.kubernetes.io/".into(), "team/".into()],
            annotation_prefixes: vec!["example.com/".into()],
        };
        let opaque = version(serde_json::json!({"length": 8}));
        let ok = ["team/x".to_string()];
        let ann = ["example.com/y".to_string()];
        assert_eq!(p.refuses(&opaque, &ok, &ann), None);
        let docker = version(
            serde_json::json!({"type": "kubernetes.io/basic-auth", "keys": {"password": {"length": 8}}, "static": {"username": "u"}}),
        );
        let why = p.refuses(&docker, &ok, &ann).unwrap();
        assert!(
            why.contains("kubernetes.io/basic-auth") && why.contains("Opaque"),
            "{why}"
        );
        let bad = ["kubernetes.io/service-account.name".to_string()];
        let why = p.refuses(&opaque, &bad, &ann).unwrap();
        assert!(
            why.contains("secretLabels") && why.contains("team/"),
            "{why}"
        );
        let why = p.refuses(&opaque, &ok, &bad).unwrap();
        assert!(why.contains("secretAnnotations"), "{why}");
    }
}
