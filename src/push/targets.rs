//! Which push targets a version was made for. No IO.
//!
//! Push targets are outside the version hash, so editing `spec.push` keeps
//! the version's name. Were a target added to an existing RandomSecret to
//! receive the current version, whoever may patch RandomSecrets (but not
//! read Secrets) could send values already in use to a place of their
//! choosing. So each version records, when it is created, the targets its
//! RandomSecret had then ([`ANNOTATION`]); a target pushes a version only
//! if it was one of them, or if it already holds that version (pushed
//! before this record existed). A target added later starts with the next
//! version: a rotation.

use crate::api::push::{ClusterPush, ConnectionKind, PushSpec, VaultPush, VaultPushStatus};
use std::collections::BTreeMap;

/// On each version: the push targets of its RandomSecret when it was made,
/// comma-separated (`vault:<Kind>/<name>`, `cluster:<name>`).
pub const ANNOTATION: &str = crate::api::key!("push-targets");

/// A Vault target, by its connection.
pub fn vault(target: &VaultPush) -> String {
    let kind = match target.connection_ref.kind.unwrap_or_default() {
        ConnectionKind::ClusterVaultConnection => "ClusterVaultConnection",
        ConnectionKind::VaultConnection => "VaultConnection",
    };
    format!("vault:{kind}/{}", target.connection_ref.name)
}

/// A downstream cluster, by its connection.
pub fn cluster(target: &ClusterPush) -> String {
    format!("cluster:{}", target.connection_ref.name)
}

/// The annotation's value for a version made now; None without targets.
pub fn of_spec(push: Option<&PushSpec>) -> Option<String> {
    let push = push?;
    let ids: Vec<String> = push
        .vault
        .iter()
        .map(vault)
        .chain(push.clusters.iter().flatten().map(cluster))
        .collect();
    (!ids.is_empty()).then(|| ids.join(","))
}

/// Whether the Vault target `target` of a RandomSecret in `namespace` may
/// push the version `secret_name`, whose annotations are `annotations`:
/// made for it, or already pushed through the same connection (a version
/// made before versions recorded their targets).
pub fn vault_may_push(
    target: &VaultPush,
    namespace: &str,
    pushed: Option<&VaultPushStatus>,
    secret_name: &str,
    annotations: Option<&BTreeMap<String, String>>,
) -> bool {
    let connection = crate::push::vault::connection::id_of(
        target.connection_ref.kind.unwrap_or_default(),
        &target.connection_ref.name,
        Some(namespace),
    );
    let already = pushed.is_some_and(|p| {
        p.connection == connection && p.versions.iter().any(|v| v.secret_name == secret_name)
    });
    already || made_for(annotations, &vault(target))
}

/// Whether a version with `annotations` was made for the target `id`.
pub fn made_for(annotations: Option<&BTreeMap<String, String>>, id: &str) -> bool {
    annotations
        .and_then(|a| a.get(ANNOTATION))
        .is_some_and(|v| v.split(',').any(|t| t == id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::push::{ClusterConnectionRef, ConnectionRef};

    fn spec(vault_kind: Option<ConnectionKind>, clusters: &[&str]) -> PushSpec {
        PushSpec {
            vault: Some(VaultPush {
                connection_ref: ConnectionRef {
                    kind: vault_kind,
                    name: "team".into(),
                },
                ..Default::default()
            }),
            clusters: (!clusters.is_empty()).then(|| {
                clusters
                    .iter()
                    .map(|n| ClusterPush {
                        connection_ref: ClusterConnectionRef {
                            name: n.to_string(),
                        },
                        ..Default::default()
                    })
                    .collect()
            }),
        }
    }

    #[test]
    fn a_version_records_its_targets_and_only_those_may_push_it() {
        let s = spec(Some(ConnectionKind::VaultConnection), &["eu", "us"]);
        let value = of_spec(Some(&s)).unwrap();
        assert_eq!(value, "vault:VaultConnection/team,cluster:eu,cluster:us");
        let a = BTreeMap::from([(ANNOTATION.to_string(), value)]);
        assert!(made_for(Some(&a), &vault(s.vault.as_ref().unwrap())));
        assert!(made_for(Some(&a), "cluster:us"));
        // Another connection of the same name and another kind are not it,
        // nor is a prefix of a listed one.
        assert!(!made_for(Some(&a), "vault:ClusterVaultConnection/team"));
        assert!(!made_for(Some(&a), "cluster:e"));
        // A version made before any target, or before this record: none.
        assert!(!made_for(None, "cluster:eu"));
        assert!(!made_for(Some(&BTreeMap::new()), "cluster:eu"));
        assert_eq!(of_spec(None), None);
        assert_eq!(of_spec(Some(&PushSpec::default())), None);
        assert_eq!(
            of_spec(Some(&spec(None, &[]))).unwrap(),
            "vault:ClusterVaultConnection/team"
        );
    }

    #[test]
    fn a_vault_target_pushes_versions_made_for_it_or_already_pushed_through_it() {
        use crate::api::push::VaultVersion;
        let s = spec(Some(ConnectionKind::VaultConnection), &[]);
        let target = s.vault.as_ref().unwrap();
        let made = BTreeMap::from([(ANNOTATION.to_string(), of_spec(Some(&s)).unwrap())]);
        let pushed = |connection: &str| VaultPushStatus {
            connection: connection.into(),
            path: "secret/x".into(),
            versions: vec![VaultVersion {
                secret_name: "db-1".into(),
                kv_version: 1,
            }],
        };
        assert!(vault_may_push(target, "ns", None, "db-1", Some(&made)));
        // Added after db-1 was made: not until the next version.
        assert!(!vault_may_push(target, "ns", None, "db-1", None));
        // Pushed through this connection before versions recorded targets.
        let ours = pushed("VaultConnection/ns/team");
        assert!(vault_may_push(target, "ns", Some(&ours), "db-1", None));
        assert!(!vault_may_push(target, "ns", Some(&ours), "db-2", None));
        // Pushed through another connection: the target was changed since.
        let other = pushed("ClusterVaultConnection/team");
        assert!(!vault_may_push(target, "ns", Some(&other), "db-1", None));
        assert!(!vault_may_push(target, "other", Some(&ours), "db-1", None));
    }
}
