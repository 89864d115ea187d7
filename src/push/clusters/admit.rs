//! Who may copy what where through a ClusterConnection. Pure: no IO.
//!
//! A connection is an administrator's grant: RandomSecrets of the namespaces
//! it lists (none until listed, `"*"` for all) copy into the downstream
//! namespace of their own namespace's name, or one it lists in
//! `targetNamespaces`. Downstream namespaces where Secrets configure the
//! cluster's own tools ([`PROTECTED`], and the controller's own namespace)
//! are refused unless the connection names them in
//! `allowProtectedNamespaces`: otherwise a tenant whose namespace is called
//! `argocd` would plant an Argo CD repository Secret through a
//! cluster-admin connection. What a copy may be (type, label and annotation
//! keys) is the connection's `copyPolicy`, else the controller's `--allow-*`.

use super::ClusterError;
use crate::api::connections::{ClusterConnectionSpec, CopyPolicy};
use crate::reconciler::policy::Policy;
use k8s_openapi::api::core::v1::Secret;

/// Downstream namespaces refused by default (`*` ends a prefix).
pub const PROTECTED: [&str; 4] = ["kube-*", "argocd", "flux-system", "cattle-*"];

/// What the controller's flags say of every connection.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `--allow-secret-types`, `--allow-label-prefixes`, `--allow-annotation-prefixes`.
    pub policy: Policy,
    /// [`PROTECTED`] and the controller's own namespace(s).
    pub protected: Vec<String>,
    /// `--allow-insecure-downstream-tls`.
    pub allow_insecure_tls: bool,
}

impl Settings {
    /// The defaults, with `own` (the controller's namespaces) protected too.
    pub fn new(policy: Policy, own: &[String], allow_insecure_tls: bool) -> Self {
        let mut protected: Vec<String> = PROTECTED.iter().map(|p| p.to_string()).collect();
        for ns in own {
            if !ns.is_empty() && !protected.contains(ns) {
                protected.push(ns.clone());
            }
        }
        Settings {
            policy,
            protected,
            allow_insecure_tls,
        }
    }

    /// Whether downstream namespace `ns` is protected.
    pub fn is_protected(&self, ns: &str) -> bool {
        self.protected.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => ns.starts_with(prefix),
            None => ns == p,
        })
    }
}

/// One connection's grant, as read from its spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grant {
    pub allowed: Option<Vec<String>>,
    pub targets: Vec<String>,
    pub protected_ok: Vec<String>,
    pub copy_policy: Option<CopyPolicy>,
}

impl Grant {
    pub fn of(spec: &ClusterConnectionSpec) -> Self {
        Grant {
            allowed: spec.allowed_namespaces.clone(),
            targets: spec.target_namespaces.clone().unwrap_or_default(),
            protected_ok: spec.allow_protected_namespaces.clone().unwrap_or_default(),
            copy_policy: spec.copy_policy.clone(),
        }
    }

    /// Whether a RandomSecret of `namespace` may copy into downstream
    /// `target` through connection `name`.
    pub fn permits(
        &self,
        settings: &Settings,
        name: &str,
        namespace: &str,
        target: &str,
    ) -> Result<(), ClusterError> {
        let allowed = match self.allowed.as_deref() {
            None | Some([]) => {
                return Err(ClusterError::AllowedNamespacesUnset(format!(
                    "ClusterConnection {name} lists no allowedNamespaces, and a connection allows no namespace until listed: set spec.allowedNamespaces to the namespaces whose RandomSecrets may copy through it (or [\"*\"] for every namespace)"
                )));
            }
            Some(a) => a,
        };
        if !allowed.iter().any(|n| n == "*" || n == namespace) {
            return Err(ClusterError::NamespaceNotAllowed(format!(
                "ClusterConnection {name} does not list namespace {namespace} in allowedNamespaces"
            )));
        }
        if target != namespace && !self.targets.iter().any(|t| t == target) {
            return Err(ClusterError::NamespaceNotAllowed(format!(
                "ClusterConnection {name} does not list the downstream namespace {target} in targetNamespaces (without it, a RandomSecret copies only into the namespace of its own namespace's name)"
            )));
        }
        if settings.is_protected(target) && !self.protected_ok.iter().any(|t| t == target) {
            return Err(ClusterError::NamespaceNotAllowed(format!(
                "the downstream namespace {target} is protected ({}): Secrets there configure the cluster's own tools, so nothing is copied there unless ClusterConnection {name} lists it in allowProtectedNamespaces",
                settings.protected.join(", ")
            )));
        }
        Ok(())
    }

    /// The policy copies through this connection follow.
    pub fn policy(&self, settings: &Settings) -> Policy {
        let own = &settings.policy;
        let Some(c) = &self.copy_policy else {
            return own.clone();
        };
        Policy {
            types: c.secret_types.clone().unwrap_or_else(|| own.types.clone()),
            label_prefixes: c
                .label_prefixes
                .clone()
                .unwrap_or_else(|| own.label_prefixes.clone()),
            annotation_prefixes: c
                .annotation_prefixes
                .clone()
                .unwrap_or_else(|| own.annotation_prefixes.clone()),
        }
    }
}

/// The controller's own metadata on a version, always allowed.
fn ours(key: &str) -> bool {
    key.starts_with(crate::api::PREFIX) || key == crate::api::LABEL_MANAGED_BY
}

/// Why `version` may not be copied under `policy`, if it may not. Names
/// only keys and types (metadata the RandomSecret's author chose), never values.
pub fn refuses(policy: &Policy, connection: &str, version: &Secret) -> Option<String> {
    let type_ = version.type_.as_deref().unwrap_or("Opaque");
    let why = |what: String, allowed: &[String]| {
        Some(format!(
            "{what} may not be copied through ClusterConnection {connection} (allowed: {}): change the RandomSecret, or the connection's copyPolicy",
            allowed.join(", ")
        ))
    };
    if !policy.types.is_empty() && !policy.types.iter().any(|t| t == type_) {
        return why(format!("type {type_}"), &policy.types);
    }
    let outside = |keys: Option<&std::collections::BTreeMap<String, String>>,
                   prefixes: &[String]| {
        if prefixes.is_empty() {
            return None;
        }
        keys.into_iter()
            .flatten()
            .map(|(k, _)| k)
            .find(|k| !ours(k) && !prefixes.iter().any(|p| k.starts_with(p.as_str())))
            .cloned()
    };
    let m = &version.metadata;
    if let Some(k) = outside(m.labels.as_ref(), &policy.label_prefixes) {
        return why(format!("label {k}"), &policy.label_prefixes);
    }
    if let Some(k) = outside(m.annotations.as_ref(), &policy.annotation_prefixes) {
        return why(format!("annotation {k}"), &policy.annotation_prefixes);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::outcome::Outcome as _;

    fn grant(allowed: Option<&[&str]>) -> Grant {
        Grant {
            allowed: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }
    }

    fn settings() -> Settings {
        Settings::new(Policy::default(), &["randomsecret-system".into()], false)
    }

    #[test]
    fn no_namespace_is_allowed_until_listed() {
        let s = settings();
        for g in [grant(None), grant(Some(&[]))] {
            let e = g.permits(&s, "east", "team-a", "team-a").unwrap_err();
            assert_eq!(e.reason(), "AllowedNamespacesUnset");
            assert!(e.to_string().contains("spec.allowedNamespaces"), "{e}");
        }
        let g = grant(Some(&["team-a"]));
        assert!(g.permits(&s, "east", "team-a", "team-a").is_ok());
        let e = g.permits(&s, "east", "team-b", "team-b").unwrap_err();
        assert_eq!(e.reason(), "NamespaceNotAllowed");
        let star = grant(Some(&["*"]));
        assert!(star.permits(&s, "east", "team-b", "team-b").is_ok());
        // A target namespace of another name needs targetNamespaces.
        let e = star.permits(&s, "east", "team-b", "team-a").unwrap_err();
        assert!(e.to_string().contains("targetNamespaces"), "{e}");
    }

    /// The attack: a tenant namespace named argocd (or kube-system, ...),
    /// through a connection open to every namespace.
    #[test]
    fn protected_downstream_namespaces_are_refused_unless_the_connection_names_them() {
        let s = settings();
        let star = grant(Some(&["*"]));
        for ns in [
            "argocd",
            "kube-system",
            "kube-public",
            "flux-system",
            "cattle-system",
            "cattle-fleet-system",
            "randomsecret-system",
        ] {
            let e = star.permits(&s, "east", ns, ns).unwrap_err();
            assert_eq!(e.reason(), "NamespaceNotAllowed", "{ns}");
            assert!(e.to_string().contains("protected"), "{ns}: {e}");
        }
        // Also as a listed target of another namespace.
        let mut into = grant(Some(&["team-a"]));
        into.targets = vec!["argocd".into()];
        assert!(into.permits(&s, "east", "team-a", "argocd").is_err());
        into.protected_ok = vec!["argocd".into()];
        assert!(into.permits(&s, "east", "team-a", "argocd").is_ok());
        // Names that only look alike are not protected.
        assert!(
            star.permits(&s, "east", "argocd-apps", "argocd-apps")
                .is_ok()
        );
        assert!(star.permits(&s, "east", "kube", "kube").is_ok());
    }

    fn version(type_: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Secret {
        let map = |kv: &[(&str, &str)]| {
            Some(
                kv.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let mut s = Secret {
            type_: Some(type_.into()),
            ..Default::default()
        };
        s.metadata.labels = map(labels);
        s.metadata.annotations = map(annotations);
        s
    }

    #[test]
    fn the_connections_policy_or_else_the_controllers_decides_what_is_copied() {
        let controller = Policy {
            types: vec!["Opaque".into()],
            label_prefixes: vec![],
            annotation_prefixes: vec!["team.example.com/".into()],
        };
        let s = Settings::new(controller, &[], false);
        let ours = [
            ("randomsecret.io/name", "db"),
            ("randomsecret.io/hash", "abc"),
            ("app.kubernetes.io/managed-by", "randomsecret"),
        ];
        let plain = grant(Some(&["*"]));
        let p = plain.policy(&s);
        assert_eq!(refuses(&p, "east", &version("Opaque", &ours, &[])), None);
        let why = refuses(
            &p,
            "east",
            &version("kubernetes.io/dockerconfigjson", &ours, &[]),
        )
        .unwrap();
        assert!(why.contains("type kubernetes.io/dockerconfigjson"), "{why}");
        let why = refuses(
            &p,
            "east",
            &version("Opaque", &ours, &[("argocd.argoproj.io/sync-options", "x")]),
        )
        .unwrap();
        assert!(
            why.contains("annotation argocd.argoproj.io/sync-options"),
            "{why}"
        );
        // Our own annotations (the proof) pass any prefix list.
        assert_eq!(
            refuses(
                &p,
                "east",
                &version("Opaque", &ours, &[("randomsecret.io/proof", "v1.x")])
            ),
            None
        );
        // The connection narrows labels and keeps the controller's types.
        let mut narrow = plain.clone();
        narrow.copy_policy = Some(CopyPolicy {
            label_prefixes: Some(vec!["team.example.com/".into()]),
            ..Default::default()
        });
        let p = narrow.policy(&s);
        assert_eq!(p.types, ["Opaque"]);
        let mut argo = ours.to_vec();
        argo.push(("argocd.argoproj.io/secret-type", "repository"));
        let why = refuses(&p, "east", &version("Opaque", &argo, &[])).unwrap();
        assert!(
            why.contains("label argocd.argoproj.io/secret-type"),
            "{why}"
        );
        assert!(why.contains("east"), "{why}");
        // Empty lists allow anything.
        let mut open = plain;
        open.copy_policy = Some(CopyPolicy {
            secret_types: Some(vec![]),
            label_prefixes: Some(vec![]),
            annotation_prefixes: Some(vec![]),
        });
        assert_eq!(
            refuses(
                &open.policy(&s),
                "east",
                &version("kubernetes.io/tls", &argo, &[("x", "y")])
            ),
            None
        );
    }
}
