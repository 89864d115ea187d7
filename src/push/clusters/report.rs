//! `status.push.clusters` and the `ClustersSynced` condition, from one
//! writer per RandomSecret (the clusters' runners only record results), by
//! server-side apply under this push's own field manager: the version's
//! writer keeps Ready, the Vault push keeps VaultSynced.

use super::{CLUSTERS_SYNCED, ClusterError, Context, MANAGER};
use crate::api::RandomSecret;
use crate::api::push::{ClusterPush, ClusterPushStatus};
use crate::cache::Key;
use crate::runtime::outcome::Outcome as _;
use crate::runtime::runner::Next;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use tracing::warn;

/// At most this many copies are listed per cluster.
const MAX_LISTED: usize = 10;

/// The namespace a target writes to.
pub fn target_namespace(t: &ClusterPush, key: &Key) -> String {
    t.namespace.clone().unwrap_or_else(|| key.ns().to_string())
}

pub fn synced(
    connection: &str,
    t: &ClusterPush,
    key: &Key,
    mut kept: Vec<String>,
) -> ClusterPushStatus {
    kept.truncate(MAX_LISTED);
    ClusterPushStatus {
        connection: connection.into(),
        namespace: target_namespace(t, key),
        synced: true,
        reason: "Synced".into(),
        message: None,
        secret_names: kept,
    }
}

pub fn failed(connection: &str, t: &ClusterPush, key: &Key, e: &ClusterError) -> ClusterPushStatus {
    ClusterPushStatus {
        connection: connection.into(),
        namespace: target_namespace(t, key),
        synced: false,
        reason: e.reason().into(),
        message: Some(e.to_string()),
        secret_names: Vec::new(),
    }
}

/// What the status says of `targets` given the recorded `results`: one
/// entry per target (in the spec's order; a failure keeps the copies last
/// seen), and the condition's status, reason and message.
pub fn desired(
    targets: &[ClusterPush],
    key: &Key,
    results: &BTreeMap<String, ClusterPushStatus>,
    last: &[ClusterPushStatus],
) -> (Vec<ClusterPushStatus>, bool, String, String) {
    let entries: Vec<ClusterPushStatus> = targets
        .iter()
        .map(|t| {
            let name = &t.connection_ref.name;
            let mut s = results.get(name).cloned().unwrap_or(ClusterPushStatus {
                connection: name.clone(),
                namespace: target_namespace(t, key),
                synced: false,
                reason: "Pending".into(),
                message: Some("not synced yet".into()),
                secret_names: Vec::new(),
            });
            if !s.synced
                && s.secret_names.is_empty()
                && let Some(before) = last.iter().find(|l| &l.connection == name)
            {
                s.secret_names = before.secret_names.clone();
            }
            s
        })
        .collect();
    let failing: Vec<&ClusterPushStatus> = entries.iter().filter(|e| !e.synced).collect();
    match failing.first() {
        None => {
            let names: Vec<&str> = entries.iter().map(|e| e.connection.as_str()).collect();
            let message = format!(
                "the current version is in every cluster: {}",
                names.join(", ")
            );
            (entries, true, "Synced".into(), message)
        }
        Some(first) => {
            let message = failing
                .iter()
                .map(|e| {
                    format!(
                        "{}: {}{}",
                        e.connection,
                        e.reason,
                        e.message
                            .as_deref()
                            .map(|m| format!(" ({m})"))
                            .unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            let reason = first.reason.clone();
            (entries, false, reason, message)
        }
    }
}

/// Writes the clusters' status of `key` when it differs from what is stored.
pub async fn write(key: Key, ctx: Arc<Context>) -> Next {
    if ctx.standby().is_some() {
        // The new leader writes from its own results.
        return Next::AwaitChange;
    }
    let api: Api<RandomSecret> = Api::namespaced(ctx.client.clone(), key.ns());
    let rs = match api.get_opt(&key.name).await {
        Ok(Some(rs)) => rs,
        Ok(None) => return Next::AwaitChange,
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "cluster push: reading the RandomSecret for its status failed; retrying");
            return Next::Retry;
        }
    };
    let status = rs.status.as_ref();
    let stored_entries = status
        .and_then(|s| s.push.as_ref())
        .and_then(|p| p.clusters.clone());
    let stored_cond = status.and_then(|s| s.conditions.iter().find(|c| c.type_ == CLUSTERS_SYNCED));
    let targets = super::targets(&rs);
    let body = if targets.is_empty() {
        if stored_entries.is_none() && stored_cond.is_none() {
            return Next::AwaitChange;
        }
        json!({})
    } else {
        let results = ctx
            .results
            .lock()
            .expect("results lock")
            .get(&key)
            .cloned()
            .unwrap_or_default();
        let (entries, ok, reason, message) = desired(
            targets,
            &key,
            &results,
            stored_entries.as_deref().unwrap_or_default(),
        );
        let status_text = if ok { "True" } else { "False" };
        let cond = Condition {
            type_: CLUSTERS_SYNCED.into(),
            status: status_text.into(),
            reason,
            message,
            observed_generation: rs.metadata.generation,
            last_transition_time: stored_cond
                .filter(|c| c.status == status_text)
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now())),
        };
        if stored_cond == Some(&cond) && stored_entries.as_ref() == Some(&entries) {
            return Next::AwaitChange;
        }
        json!({"conditions": [cond], "push": {"clusters": entries}})
    };
    let patch =
        json!({"apiVersion": crate::api::API_VERSION, "kind": "RandomSecret", "status": body});
    match api
        .patch_status(
            &key.name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await
    {
        Ok(_) => Next::AwaitChange,
        Err(e) => {
            warn!(randomsecret = %key, error = %e, "cluster push: writing the status failed; retrying");
            Next::Retry
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::push::ClusterConnectionRef;

    fn target(name: &str) -> ClusterPush {
        ClusterPush {
            connection_ref: ClusterConnectionRef { name: name.into() },
            ..Default::default()
        }
    }

    #[test]
    fn the_condition_is_true_only_when_every_cluster_is_synced() {
        let key = Key::new("team-a", "db");
        let targets = [target("east"), target("west")];
        let mut results = BTreeMap::new();
        results.insert(
            "east".to_string(),
            synced("east", &targets[0], &key, vec!["db-1".into()]),
        );
        let (entries, ok, reason, message) = desired(&targets, &key, &results, &[]);
        assert!(!ok);
        assert_eq!(reason, "Pending");
        assert_eq!(
            entries[1].namespace, "team-a",
            "a pending entry names its namespace"
        );
        assert!(message.starts_with("west: Pending"), "{message}");
        assert_eq!(entries[0].namespace, "team-a");
        results.insert(
            "west".to_string(),
            failed(
                "west",
                &targets[1],
                &key,
                &ClusterError::unreachable("cluster west: no answer".into()),
            ),
        );
        let last = vec![synced("west", &targets[1], &key, vec!["db-0".into()])];
        let (entries, ok, reason, message) = desired(&targets, &key, &results, &last);
        assert!(!ok);
        assert_eq!(reason, "Unreachable");
        assert_eq!(message, "west: Unreachable (cluster west: no answer)");
        // A failure keeps the copies last seen there.
        assert_eq!(entries[1].secret_names, ["db-0"]);
        results.insert(
            "west".to_string(),
            synced("west", &targets[1], &key, vec!["db-1".into()]),
        );
        let (_, ok, reason, message) = desired(&targets, &key, &results, &[]);
        assert!(ok);
        assert_eq!(reason, "Synced");
        assert!(message.ends_with("east, west"), "{message}");
    }
}
