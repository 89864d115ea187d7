//! Workloads that reference versions: pod templates, Deployments, rollouts,
//! and the check that no running pod ever misses a Secret it references.

use anyhow::{Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The Secrets that objects not being deleted (pods, or ReplicaSets through
/// `pod_spec`) reference and `existing` lacks, as (object name, uid, Secret),
/// and how many objects were looked at.
pub fn missing_secrets<'a, K: kube::ResourceExt + 'a>(
    objects: impl IntoIterator<Item = &'a K>,
    pod_spec: impl Fn(&K) -> Option<&k8s_openapi::api::core::v1::PodSpec>,
    existing: &std::collections::BTreeSet<String>,
) -> (usize, Vec<(String, Option<String>, String)>) {
    let (mut checked, mut missing) = (0, Vec::new());
    for o in objects
        .into_iter()
        .filter(|o| o.meta().deletion_timestamp.is_none())
    {
        checked += 1;
        let refs = pod_spec(o)
            .map(randomsecret::references::pod_spec_secret_names)
            .unwrap_or_default();
        for r in refs.into_iter().filter(|r| !existing.contains(r)) {
            missing.push((o.name_any(), o.uid(), r));
        }
    }
    (checked, missing)
}

/// Watches over a namespace for the whole of a test: every `interval` it
/// checks that each running pod finds every Secret named `<prefix>...` it
/// references. `finish` returns the violations and how many pods were checked.
pub struct ReferenceChecker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<Result<(Vec<String>, usize)>>,
}

impl ReferenceChecker {
    pub fn start(client: &Client, namespace: &str, prefix: &str) -> Self {
        use k8s_openapi::api::core::v1::Pod;
        use kube::api::ListParams;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (pods, secrets): (Api<Pod>, Api<Secret>) = (
            Api::namespaced(client.clone(), namespace),
            Api::namespaced(client.clone(), namespace),
        );
        let (prefix, flag) = (prefix.to_string(), stop.clone());
        let task = tokio::spawn(async move {
            let (mut violations, mut checked) = (Vec::new(), 0);
            loop {
                // Read the flag first, so that one last check runs after finish().
                let last = flag.load(Ordering::Relaxed);
                let pod_list = pods.list(&ListParams::default()).await?;
                let existing: std::collections::BTreeSet<String> = secrets
                    .list_metadata(&ListParams::default())
                    .await?
                    .items
                    .iter()
                    .map(|s| s.name_any())
                    .collect();
                let (seen, missing) =
                    missing_secrets(&pod_list.items, |p| p.spec.as_ref(), &existing);
                checked += seen;
                for (pod, _, r) in missing
                    .into_iter()
                    .filter(|(_, _, r)| r.starts_with(&prefix))
                {
                    violations.push(format!("pod {pod} references missing Secret {r}"));
                }
                if last {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok((violations, checked))
        });
        Self { stop, task }
    }

    /// Stops checking; fails if any pod ever missed a Secret, or nothing was checked.
    pub async fn finish(self) -> Result<usize> {
        self.stop.store(true, Ordering::Relaxed);
        let (violations, checked) = self.task.await??;
        ensure!(
            violations.is_empty(),
            "pods referenced missing Secrets:\n{}",
            violations.join("\n")
        );
        ensure!(checked > 0, "the reference checker saw no pods");
        Ok(checked)
    }
}

/// kubectl's notion of a completed rollout: the controller saw the latest
/// spec and every replica is updated and available.
pub fn rollout_complete(d: Option<&k8s_openapi::api::apps::v1::Deployment>) -> bool {
    let Some(d) = d else { return false };
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(s) = d.status.as_ref() else {
        return false;
    };
    s.observed_generation >= d.metadata.generation
        && s.updated_replicas == Some(want)
        && s.replicas == Some(want)
        && s.available_replicas == Some(want)
}

/// A pod template whose container reads `secret` with `envFrom`.
pub fn pod_template(app: &str, secret: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                 "envFrom": [{"secretRef": {"name": secret}}]}]},
    })
}

/// A Deployment of 2 replicas (revisionHistoryLimit 1) reading `secret`.
pub fn deployment(name: &str, secret: &str) -> Result<k8s_openapi::api::apps::v1::Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 2, "revisionHistoryLimit": 1, "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name, secret)},
    }))?)
}

/// Points a workload's template at `secret` (the `rev` annotation forces a new template).
pub async fn point_at<K>(api: &Api<K>, name: &str, secret: &str, rev: &str) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"rev": rev}}, "spec": {"containers": [
        {"name": "app", "envFrom": [{"secretRef": {"name": secret}}]}]}}}});
    api.patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Strategic(patch),
    )
    .await?;
    Ok(())
}

/// The Secret names a Deployment's pod template references.
pub fn template_secrets(d: &k8s_openapi::api::apps::v1::Deployment) -> Vec<String> {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(randomsecret::references::pod_spec_secret_names)
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Rolled out, with the pod template referencing exactly `secrets`.
pub fn rolled_out_on_all(
    secrets: &[&str],
) -> impl Fn(Option<&k8s_openapi::api::apps::v1::Deployment>) -> bool + use<> {
    let mut want: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
    want.sort();
    move |d| rollout_complete(d) && d.map(template_secrets).as_ref() == Some(&want)
}

/// `kubectl rollout undo <kind>/<name> -n <namespace>`: what a person does
/// (for a Deployment it restores the template and the annotations of the
/// ReplicaSet it goes back to).
pub fn rollout_undo(namespace: &str, workload: &str) -> Result<String> {
    crate::tools::kubectl(&["rollout", "undo", workload, "-n", namespace])
}
