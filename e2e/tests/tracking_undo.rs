//! Tracking mode and `kubectl rollout undo` (issue 32, item 5): a rollback
//! to an older, still existing version is a person's intent. The controller
//! leaves the workload there, says so (WorkloadsPinned, a Warning Event on
//! the RandomSecret and on the workload, once), and points it at a version
//! again on the next rotation, or when its record label is removed.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use randomsecret::api::{PinnedWorkload, RandomSecret};
use randomsecret_e2e::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// A Deployment `web` tracking `db` and `api`, its container reading both
/// by their base names.
fn tracked_deployment() -> Result<Deployment> {
    let mut d = deployment("web", "db")?;
    let mut template = pod_template("web", "db");
    template["spec"]["containers"][0]["envFrom"] =
        json!([{"secretRef": {"name": "db"}}, {"secretRef": {"name": "api"}}]);
    d.spec.as_mut().context("spec")?.template = serde_json::from_value(template)?;
    d.metadata.annotations = Some([("randomsecret.io/track".into(), "db,api".into())].into());
    Ok(d)
}

/// The record label tracking keeps for RandomSecret `rs` on `web`.
async fn record(deploys: &Api<Deployment>, rs: &str) -> Result<Option<String>> {
    Ok(deploys
        .get("web")
        .await?
        .labels()
        .get(&format!("tracked.randomsecret.io/{rs}"))
        .cloned())
}

fn hash(version: &str) -> String {
    version.rsplit('-').next().unwrap_or_default().to_string()
}

fn pinned(rs: &RandomSecret) -> &[PinnedWorkload] {
    rs.status
        .as_ref()
        .map_or(&[], |s| s.pinned_workloads.as_slice())
}

/// Ready (the version is fine) and WorkloadsPinned=True listing Deployment `web` on `secret`.
fn pinned_on(secret: String) -> impl Fn(Option<&RandomSecret>) -> bool {
    pinned_as("Deployment", "web", secret)
}

/// Ready and WorkloadsPinned=True listing exactly `kind` `name` on `secret`.
fn pinned_as(kind: &str, name: &str, secret: String) -> impl Fn(Option<&RandomSecret>) -> bool {
    let (kind, name) = (kind.to_string(), name.to_string());
    move |rs| {
        is_ready(rs)
            && rs.is_some_and(|rs| {
                condition(rs, "WorkloadsPinned")
                    .is_some_and(|c| c.status == "True" && c.reason == "RolledBack")
                    && pinned(rs)
                        == [PinnedWorkload {
                            kind: kind.clone(),
                            name: name.clone(),
                            secret_name: secret.clone(),
                        }]
            })
    }
}

/// Ready, with neither the condition nor the list.
fn nothing_pinned(rs: Option<&RandomSecret>) -> bool {
    is_ready(rs)
        && rs.is_some_and(|rs| condition(rs, "WorkloadsPinned").is_none() && pinned(rs).is_empty())
}

/// WorkloadPinned Events regarding a `kind`.
fn pinned_events(items: &[Event], kind: &str) -> usize {
    items
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some("WorkloadPinned")
                && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some(kind)
        })
        .count()
}

#[tokio::test]
async fn a_rollback_stays_until_the_next_rotation_or_its_record_is_removed() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "track-undo").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");
    let v1 = first_version(&api, &secrets, "db", json!({"length": 16, "rotation": "1"}))
        .await?
        .name_any();
    // A second RandomSecret tracked by the same Deployment: its record is
    // another label, kept through everything below.
    let other = first_version(&api, &secrets, "api", json!({"length": 16}))
        .await?
        .name_any();
    deploys
        .create(&PostParams::default(), &tracked_deployment()?)
        .await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v1",
        rolled_out_on_all(&[&v1, &other]),
    )
    .await?;
    ensure!(record(&deploys, "db").await? == Some(hash(&v1)));
    ensure!(record(&deploys, "api").await? == Some(hash(&other)));

    // A rotation: pointed at v2, rolled out.
    let v2 = rotate(&api, "db", "2").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v2",
        rolled_out_on_all(&[&v2, &other]),
    )
    .await?;
    ensure!(record(&deploys, "db").await? == Some(hash(&v2)));

    // A person rolls it back: kubectl restores v1's ReplicaSet's template
    // (and its annotations), not the Deployment's labels.
    rollout_undo(&ns.name, "deployment/web")?;
    wait_for(&api, "db", "pinned on v1", pinned_on(v1.clone())).await?;
    // Reconciles meanwhile (the rollback's own, and one for a spec change
    // that makes no new version) leave it on v1.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut reconciled = false;
    while Instant::now() < deadline {
        let d = deploys.get("web").await?;
        ensure!(
            template_secrets(&d) == sorted(&[&v1, &other]),
            "the rollback was undone: {:?}",
            template_secrets(&d)
        );
        if !reconciled && Instant::now() + Duration::from_secs(12) < deadline {
            patch_spec(&api, "db", json!({"history": 2})).await?;
            wait_for(
                &api,
                "db",
                "reconciled, still pinned",
                pinned_on(v1.clone()),
            )
            .await?;
            reconciled = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    ensure!(reconciled, "no reconcile within the window");
    wait_for(
        &deploys,
        "web",
        "rolled back to v1",
        rolled_out_on_all(&[&v1, &other]),
    )
    .await?;
    ensure!(secrets.get_opt(&v1).await?.is_some(), "v1 is gone");
    ensure!(record(&deploys, "db").await? == Some(hash(&v2)));
    ensure!(record(&deploys, "api").await? == Some(hash(&other)));
    // One Warning on the RandomSecret and one on the Deployment, not one per reconcile.
    let items = wait_events(&client, &ns.name, "WorkloadPinned", |items| {
        pinned_events(items, "RandomSecret") >= 1 && pinned_events(items, "Deployment") >= 1
    })
    .await?;
    ensure!(
        pinned_events(&items, "RandomSecret") == 1 && pinned_events(&items, "Deployment") == 1,
        "WorkloadPinned Events: {} on the RandomSecret, {} on the Deployment",
        pinned_events(&items, "RandomSecret"),
        pinned_events(&items, "Deployment")
    );
    let note = items
        .iter()
        .find(|e| e.reason.as_deref() == Some("WorkloadPinned"))
        .and_then(|e| e.note.clone())
        .unwrap_or_default();
    ensure!(
        note.contains(&v1)
            && note.contains("kubectl label")
            && note.contains("tracked.randomsecret.io/db-"),
        "the Event says what and how to unpin: {note}"
    );

    // A new rotation is a new intent: pointed at v3, nothing pinned.
    let v3 = rotate(&api, "db", "3").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v3",
        rolled_out_on_all(&[&v3, &other]),
    )
    .await?;
    wait_for(&api, "db", "nothing pinned after v3", nothing_pinned).await?;
    ensure!(record(&deploys, "db").await? == Some(hash(&v3)));

    // Rolled back again, then its record removed by hand: pointed at v3.
    rollout_undo(&ns.name, "deployment/web")?;
    wait_for(&api, "db", "pinned on v1 again", pinned_on(v1.clone())).await?;
    kubectl(&[
        "label",
        "-n",
        &ns.name,
        "deployment/web",
        "tracked.randomsecret.io/db-",
    ])?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v3 after the record was removed",
        rolled_out_on_all(&[&v3, &other]),
    )
    .await?;
    wait_for(&api, "db", "nothing pinned after unpinning", nothing_pinned).await?;
    ensure!(record(&deploys, "db").await? == Some(hash(&v3)));
    ensure!(record(&deploys, "api").await? == Some(hash(&other)));
    checker.finish().await?;
    ns.delete().await
}

/// A StatefulSet's rollback (kubectl applies a ControllerRevision's
/// template) is kept the same way, and moved on by the next rotation.
#[tokio::test]
async fn a_statefulset_rollback_stays_until_the_next_rotation() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "track-undo-sts").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let sts: Api<StatefulSet> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");
    let v1 = first_version(&api, &secrets, "db", json!({"length": 16, "rotation": "1"}))
        .await?
        .name_any();
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "store", "annotations": {"randomsecret.io/track": "db"}},
        "spec": {"replicas": 1, "revisionHistoryLimit": 3, "serviceName": "store",
                 "selector": {"matchLabels": {"app": "store"}}, "template": pod_template("store", "db")},
    }))?;
    sts.create(&PostParams::default(), &set).await?;
    let rolled_on = |secret: String| {
        move |s: Option<&StatefulSet>| {
            s.and_then(|s| Some((s, s.metadata.generation?, s.status.as_ref()?)))
                .is_some_and(|(s, g, st)| {
                    st.observed_generation == Some(g)
                        && st.ready_replicas == Some(1)
                        && st.current_revision == st.update_revision
                        && s.spec
                            .as_ref()
                            .and_then(|sp| sp.template.spec.as_ref())
                            .map(randomsecret::references::pod_spec_secret_names)
                            .is_some_and(|n| n.len() == 1 && n.contains(&secret))
                })
        }
    };
    wait_for(&sts, "store", "rolled out on v1", rolled_on(v1.clone())).await?;
    let v2 = rotate(&api, "db", "2").await?;
    wait_for(&sts, "store", "rolled out on v2", rolled_on(v2.clone())).await?;

    rollout_undo(&ns.name, "statefulset/store")?;
    wait_for(
        &api,
        "db",
        "StatefulSet pinned on v1",
        pinned_as("StatefulSet", "store", v1.clone()),
    )
    .await?;
    wait_for(&sts, "store", "rolled back to v1", rolled_on(v1.clone())).await?;
    // A spec change that makes no new version: reconciled, still on v1.
    patch_spec(&api, "db", json!({"history": 2})).await?;
    wait_for(
        &api,
        "db",
        "reconciled, still pinned",
        pinned_as("StatefulSet", "store", v1.clone()),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    ensure!(
        rolled_on(v1.clone())(Some(&sts.get("store").await?)),
        "the StatefulSet's rollback was undone"
    );

    let v3 = rotate(&api, "db", "3").await?;
    wait_for(&sts, "store", "rolled out on v3", rolled_on(v3)).await?;
    wait_for(&api, "db", "nothing pinned after v3", nothing_pinned).await?;
    checker.finish().await?;
    ns.delete().await
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}
