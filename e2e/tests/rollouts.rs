//! How workloads roll (issue 30): several RandomSecrets that one workload
//! tracks, rotated together, give it one rollout, not one each; Argo
//! Rollouts' Rollouts, rolled by the real Argo Rollouts controller, are
//! resolved, tracked and keep their versions through their ReplicaSets.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret::api::VersionState;
use randomsecret_e2e::*;
use serde_json::json;

const NAMES: [&str; 3] = ["db", "api", "cache"];

/// The ReplicaSets Deployment `web` owns.
async fn replicasets(client: &kube::Client, ns: &str) -> Result<Vec<String>> {
    let rs: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    Ok(rs
        .list(&ListParams::default().labels("app=web"))
        .await?
        .items
        .iter()
        .map(|r| r.name_any())
        .collect())
}

#[tokio::test]
async fn three_randomsecrets_rotated_together_give_one_rollout() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "track-batch").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "");
    let mut first = Vec::new();
    for n in NAMES {
        let body = json!({"length": 16, "rotation": "1"});
        let v = first_version(&api, &secrets, n, body).await?;
        api.patch(
            n,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"batch": "yes"}}})),
        )
        .await?;
        first.push(v.name_any());
    }
    // A Deployment reading all three at their first versions (the
    // ReplicaSet checker sees no base name), tracking them.
    let mut d = deployment("web", "db")?;
    let mut template = pod_template("web", "db");
    template["spec"]["containers"][0]["envFrom"] = json!(
        first
            .iter()
            .map(|n| json!({"secretRef": {"name": n}}))
            .collect::<Vec<_>>()
    );
    d.spec.as_mut().context("spec")?.template = serde_json::from_value(template)?;
    d.spec.as_mut().context("spec")?.revision_history_limit = Some(10);
    d.metadata.annotations = Some([("randomsecret.io/track".into(), NAMES.join(","))].into());
    deploys.create(&PostParams::default(), &d).await?;
    let on_first: Vec<&str> = first.iter().map(String::as_str).collect();
    wait_for(
        &deploys,
        "web",
        "rolled out on the first versions",
        rolled_out_on_all(&on_first),
    )
    .await?;
    let before = replicasets(&client, &ns.name).await?;
    ensure!(
        before.len() == 1,
        "one ReplicaSet after the first rollout: {before:?}"
    );

    // All three rotated by one command, as an operator would.
    let bin = randomsecret_bin();
    let out = run(
        bin.to_str().context("binary path")?,
        &["rotate", "-n", &ns.name, "-l", "batch=yes", "--to", "2"],
        None,
    )?;
    ensure!(out.contains("rotated 3"), "{out}");
    let mut second = Vec::new();
    for n in NAMES {
        let rs = wait_for(
            &api,
            n,
            "Ready on rotation 2",
            move |rs: Option<&RandomSecret>| {
                is_ready(rs) && rs.is_some_and(|r| r.spec.rotation.as_deref() == Some("2"))
            },
        )
        .await?;
        let name = rs
            .status
            .and_then(|s| s.secret_name)
            .context("secretName")?;
        ensure!(!first.contains(&name), "{n} has a new version");
        second.push(name);
    }
    let on_second: Vec<&str> = second.iter().map(String::as_str).collect();
    wait_for(
        &deploys,
        "web",
        "rolled out on the second versions",
        rolled_out_on_all(&on_second),
    )
    .await?;
    let after = replicasets(&client, &ns.name).await?;
    ensure!(
        after.len() == 2 && before.iter().all(|r| after.contains(r)),
        "one new ReplicaSet for three rotations, not one each: {after:?} (before {before:?})"
    );
    let d = deploys.get("web").await?;
    ensure!(
        d.metadata.generation == Some(2),
        "the template was changed once: generation {:?}",
        d.metadata.generation
    );
    for (n, v) in NAMES.iter().zip(&second) {
        let record = d.labels().get(&format!("tracked.randomsecret.io/{n}"));
        ensure!(
            record.map(String::as_str) == v.rsplit('-').next(),
            "{n}'s record is its new version: {record:?}"
        );
    }
    // Each RandomSecret says it was pointed, with the others.
    let items = wait_events(
        &client,
        &ns.name,
        "a WorkloadUpdated per RandomSecret",
        |items| updated_with_others(items) >= 3,
    )
    .await?;
    ensure!(
        updated_with_others(&items) == 3,
        "one WorkloadUpdated naming the others per RandomSecret: {:?}",
        items.iter().map(|e| e.note.clone()).collect::<Vec<_>>()
    );
    // The first versions stay with the old ReplicaSet.
    for v in &first {
        ensure!(secrets.get_opt(v).await?.is_some(), "{v} is gone");
    }
    checker.finish().await?;
    ns.delete().await
}

/// WorkloadUpdated Events that say the rollout carried other RandomSecrets.
fn updated_with_others(items: &[Event]) -> usize {
    items
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some("WorkloadUpdated")
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains("in one rollout with RandomSecrets"))
        })
        .count()
}

/// Argo Rollouts' controller (built by e2e/build-tools.sh), run against the
/// test cluster for one namespace; killed however the test ends.
struct ArgoRollouts(std::process::Child);

impl ArgoRollouts {
    fn start(namespace: &str) -> Result<Self> {
        let tools = std::env::var("TOOLS_DIR").context("TOOLS_DIR (run through e2e/run.sh)")?;
        let bin = std::fs::read_dir(&tools)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("rollouts-controller-v"))
            })
            .max()
            .context("no rollouts-controller-v* in TOOLS_DIR")?;
        let kubeconfig = std::env::var("KUBECONFIG").context("KUBECONFIG")?;
        let dir =
            std::env::var("E2E_DIR").unwrap_or_else(|_| std::env::temp_dir().display().to_string());
        let log = std::fs::File::create(format!("{dir}/argo-rollouts-{namespace}.log"))?;
        // Its metrics and health ports: loopback-bound ports of this suite's
        // range would be better, but it binds every interface; nothing is sent to them.
        let child = std::process::Command::new(bin)
            .args([
                "--kubeconfig",
                &kubeconfig,
                "--namespaced",
                "--namespace",
                namespace,
                "--leader-elect=false",
                "--metricsport",
                "18250",
                "--healthzPort",
                "18251",
                "--loglevel",
                "info",
            ])
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        Ok(ArgoRollouts(child))
    }
}

impl Drop for ArgoRollouts {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rollouts_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = randomsecret::cache::holders::WorkloadKind::Rollout.api_resource();
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// The Secret names a pod template (`spec.template`) references.
fn secrets_of(template: Option<&serde_json::Value>) -> Vec<String> {
    template
        .and_then(|t| t.get("spec").cloned())
        .and_then(|s| serde_json::from_value(s).ok())
        .map(|spec: k8s_openapi::api::core::v1::PodSpec| {
            randomsecret::references::pod_spec_secret_names(&spec)
                .into_iter()
                .collect()
        })
        .unwrap_or_default()
}

/// A Rollout that Argo Rollouts has rolled out (Healthy, on its latest
/// spec), with its template on `secret`.
fn rollout_on(secret: String) -> impl Fn(Option<&DynamicObject>) -> bool {
    move |r| {
        let Some(r) = r else { return false };
        let status = &r.data["status"];
        let observed = status["observedGeneration"]
            .as_str()
            .and_then(|g| g.parse::<i64>().ok());
        secrets_of(r.data.pointer("/spec/template")) == [secret.clone()]
            && observed == r.metadata.generation
            && status["phase"] == "Healthy"
            && status["stableRS"].is_string()
            && status["stableRS"] == status["currentPodHash"]
    }
}

/// The ReplicaSets Rollout `name` owns, with the Secrets each one's template references.
async fn rollout_replicasets(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Vec<(String, Vec<String>)>> {
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|r| {
            r.owner_references()
                .iter()
                .any(|o| o.kind == "Rollout" && o.name == name)
        })
        .map(|r| {
            let template = r
                .spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .and_then(|t| serde_json::to_value(t).ok());
            (r.name_any(), secrets_of(template.as_ref()))
        })
        .collect())
}

/// The RandomSecret of examples/argo-rollouts/rollout.yaml.
const DB: &str = "checkout-db";

/// A Rollout `name` reading and tracking [`DB`] by its base name.
fn tracked_rollout(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
        "metadata": {"name": name, "annotations": {"randomsecret.io/track": DB}},
        "spec": {"replicas": 2, "revisionHistoryLimit": 10,
                 "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name, DB),
                 "strategy": {"canary": {}}},
    })
}

/// A real Argo Rollouts controller (issue 30): a Rollout whose manifest went
/// through `resolve` applies on the versioned name; a Rollout in tracking
/// mode is pointed at each new version and rolled by Argo; the ReplicaSets
/// Argo keeps hold the versions they use.
#[tokio::test]
async fn argo_rollouts_are_resolved_tracked_and_keep_their_versions() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "argo").await?;
    let api: Api<RandomSecret> = ns.api();
    let rollouts = rollouts_api(&client, &ns.name);
    let checker = ReferenceChecker::start(&client, &ns.name, "checkout-db-");
    let _argo = ArgoRollouts::start(&ns.name)?;

    // GitOps: examples/argo-rollouts/rollout.yaml (a RandomSecret and a
    // Rollout reading its base name) through `resolve`, applied as it comes out.
    let example = std::fs::read_to_string(repo_root().join("examples/argo-rollouts/rollout.yaml"))?;
    let bin = randomsecret_bin();
    let bin = bin.to_str().context("binary path")?;
    let resolved = run(bin, &["resolve"], Some(&example))?;
    let v1 = run(bin, &["name"], Some(&example))?.trim().to_string();
    ensure!(
        v1.starts_with("checkout-db-") && resolved.contains(&v1),
        "resolve wrote the versioned name {v1}:\n{resolved}"
    );
    run(
        "kubectl",
        &["apply", "-n", &ns.name, "-f", "-"],
        Some(&resolved),
    )?;
    let ready = wait_for(&api, DB, "Ready", is_ready).await?;
    ensure!(
        ready.status.and_then(|s| s.secret_name).as_deref() == Some(v1.as_str()),
        "the controller made the version resolve named"
    );
    wait_for(
        &rollouts,
        "checkout",
        "rolled out on v1 by Argo",
        rollout_on(v1.clone()),
    )
    .await?;

    // Tracking: a Rollout reading the base name is pointed at v1, then at v2.
    let tracked: DynamicObject = serde_json::from_value(tracked_rollout("tracked"))?;
    rollouts.create(&PostParams::default(), &tracked).await?;
    wait_for(
        &rollouts,
        "tracked",
        "pointed at v1 and rolled out",
        rollout_on(v1.clone()),
    )
    .await?;
    let v2 = rotate(&api, DB, "2").await?;
    ensure!(v2 != v1, "a new version");
    wait_for(
        &rollouts,
        "tracked",
        "pointed at v2 and rolled out",
        rollout_on(v2.clone()),
    )
    .await?;
    let gitops = wait_for(&rollouts, "checkout", "still on v1", rollout_on(v1.clone())).await?;
    let managers: Vec<_> = gitops
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    ensure!(
        !managers.iter().any(|m| m == "randomsecret"),
        "the GitOps Rollout is not written by the controller: {managers:?}"
    );

    // Argo keeps the tracked Rollout's old ReplicaSet (revisionHistoryLimit
    // 10): it holds v1, as the GitOps Rollout's does.
    let replicasets = rollout_replicasets(&client, &ns.name, "tracked").await?;
    ensure!(
        replicasets
            .iter()
            .any(|(_, s)| s == std::slice::from_ref(&v1))
            && replicasets
                .iter()
                .any(|(_, s)| s == std::slice::from_ref(&v2)),
        "the tracked Rollout's ReplicaSets: {replicasets:?}"
    );
    let db = wait_for(&api, DB, "v1 retained by both Rollouts' ReplicaSets", {
        let v1 = v1.clone();
        move |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| version_status(rs, &v1)).is_some_and(|v| {
                v.state == VersionState::Retained
                    && v.referenced_by
                        .iter()
                        .any(|r| r.starts_with("ReplicaSet/checkout-"))
                    && v.referenced_by
                        .iter()
                        .any(|r| r.starts_with("ReplicaSet/tracked-"))
            })
        }
    })
    .await?;
    ensure!(db.status.is_some());
    // The tracked Rollout gone (its ReplicaSets collected): v1 is still the
    // GitOps one's.
    rollouts.delete("tracked", &Default::default()).await?;
    wait_for(&api, DB, "v1 held by the GitOps Rollout alone", {
        let v1 = v1.clone();
        move |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| version_status(rs, &v1)).is_some_and(|v| {
                v.state == VersionState::Retained
                    && v.referenced_by
                        .iter()
                        .all(|r| !r.starts_with("ReplicaSet/tracked-"))
                    && v.referenced_by
                        .iter()
                        .any(|r| r.starts_with("ReplicaSet/checkout-"))
            })
        }
    })
    .await?;
    let secrets: Api<Secret> = ns.api();
    ensure!(secrets.get_opt(&v1).await?.is_some(), "v1 is gone");
    checker.finish().await?;
    ns.delete().await
}
