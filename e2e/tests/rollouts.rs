//! How tracked workloads roll (issue 30): several RandomSecrets that one
//! workload tracks, rotated together, give it one rollout, not one each.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
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
