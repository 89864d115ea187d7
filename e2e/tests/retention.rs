//! Rollout safety: each version lives exactly as long as ReplicaSet,
//! ControllerRevision or Pod history references it, with Ready pods on the
//! simulated node and the real garbage collector.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState};
use randomsecret_e2e::*;
use serde_json::json;

/// Waits until the status lists `secret` in `state`, referenced by `kind/...` when given.
async fn wait_version(
    api: &Api<RandomSecret>,
    name: &str,
    secret: &str,
    state: VersionState,
    by: Option<&str>,
) -> Result<RandomSecret> {
    let (secret, by) = (secret.to_string(), by.map(String::from));
    wait_for(
        api,
        name,
        &format!("{secret} {state:?} by {by:?}"),
        move |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| version_status(rs, &secret))
                .is_some_and(|v| {
                    v.state == state
                        && by.as_ref().is_none_or(|b| {
                            v.referenced_by.iter().any(|r| r.starts_with(b.as_str()))
                        })
                })
        },
    )
    .await
}

#[tokio::test]
async fn deployment_history_keeps_versions_until_pruned() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-deploy").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");

    let rs = create_ready(
        &api,
        "db",
        json!({"keys": {"password": {"length": 24}}, "rotation": "1"}),
    )
    .await?;
    let v1 = current_secret(&secrets, &rs).await?;
    let v1n = v1.name_any();
    deploys
        .create(&PostParams::default(), &deployment("web", &v1n)?)
        .await?;
    wait_for(&deploys, "web", "rolled out on v1", rollout_complete).await?;
    wait_version(
        &api,
        "db",
        &v1n,
        VersionState::Current,
        Some("ReplicaSet/web-"),
    )
    .await?;

    // Rotate: v2 is created; v1 stays, held by the running ReplicaSet.
    let v2n = rotate(&api, "db", "2").await?;
    let rs = wait_version(
        &api,
        "db",
        &v1n,
        VersionState::Retained,
        Some("ReplicaSet/web-"),
    )
    .await?;
    ensure!(rs.status.as_ref().unwrap().secret_name.as_deref() == Some(v2n.as_str()));
    // Owned by its ReplicaSet and that ReplicaSet's running pods (which keep
    // it if the ReplicaSet is pruned while they terminate), not the RandomSecret.
    let owners = owner_kinds(&secrets, &v1n).await?;
    ensure!(
        owners == ["ReplicaSet", "Pod", "Pod"],
        "v1 should be owned by its ReplicaSet and its 2 pods, got {owners:?}"
    );

    // Roll out v2: both ReplicaSets exist, so both versions do; v1's pods are gone.
    point_at(&deploys, "web", &v2n, "2").await?;
    wait_for(&deploys, "web", "rolled out on v2", rollout_complete).await?;
    ensure!(secrets.get_opt(&v1n).await?.is_some() && secrets.get_opt(&v2n).await?.is_some());
    let mut owners = Vec::new();
    for _ in 0..100 {
        owners = owner_kinds(&secrets, &v1n).await?;
        if owners == ["ReplicaSet"] {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    ensure!(
        owners == ["ReplicaSet"],
        "v1 should be owned by its ReplicaSet alone once its pods are gone, got {owners:?}"
    );
    let owners = owner_kinds(&secrets, &v2n).await?;
    ensure!(
        owners == ["RandomSecret", "ReplicaSet"],
        "the current version's owners do not follow its pods, got {owners:?}"
    );
    let rss: Api<ReplicaSet> = ns.api();
    ensure!(rss.list(&ListParams::default()).await?.items.len() == 2);

    // kubectl rollout undo: pods of the old template find v1, values unchanged.
    kubectl(&["rollout", "undo", "-n", &ns.name, "deployment/web"])?;
    wait_for(
        &deploys,
        "web",
        "rolled back to v1",
        |d: Option<&Deployment>| {
            rollout_complete(d)
                && d.is_some_and(|d| {
                    serde_json::to_string(&d.spec)
                        .unwrap_or_default()
                        .contains(&v1n)
                })
        },
    )
    .await?;
    ensure!(
        secrets.get(&v1n).await?.data == v1.data,
        "v1's values changed"
    );
    let pods: Api<Pod> = ns.api();
    let running = pods.list(&ListParams::default().labels("app=web")).await?;
    ensure!(
        running.items.iter().any(|p| serde_json::to_string(&p.spec)
            .unwrap_or_default()
            .contains(&v1n)),
        "no pod uses v1 after undo"
    );

    // Further rotations with revisionHistoryLimit 1: a version whose ReplicaSets
    // were pruned is deleted by the garbage collector.
    let v3n = rotate(&api, "db", "3").await?;
    point_at(&deploys, "web", &v3n, "3").await?;
    wait_for(&deploys, "web", "rolled out on v3", rollout_complete).await?;
    // History now: v3's ReplicaSet and the newest old one (v1's, after the undo); v2's is pruned.
    wait_deleted(&secrets, &v2n)
        .await
        .context("v2 is deleted once its ReplicaSet is pruned")?;
    let v4n = rotate(&api, "db", "4").await?;
    point_at(&deploys, "web", &v4n, "4").await?;
    wait_for(&deploys, "web", "rolled out on v4", rollout_complete).await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 is deleted once its ReplicaSet is pruned")?;
    wait_version(
        &api,
        "db",
        &v3n,
        VersionState::Retained,
        Some("ReplicaSet/web-"),
    )
    .await?;
    wait_for(
        &api,
        "db",
        "2 live versions",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| rs.status.as_ref())
                .is_some_and(|s| s.live_versions == 2 && s.versions.len() == 2)
        },
    )
    .await?;
    ensure!(secrets.get_opt(&v3n).await?.is_some() && secrets.get_opt(&v4n).await?.is_some());

    let checked = checker.finish().await?;
    eprintln!("reference checker: {checked} pod checks");
    ns.delete().await
}

#[tokio::test]
async fn statefulset_revision_history_keeps_versions() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-sts").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let sts: Api<StatefulSet> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");

    let v1n = first_version(&api, &secrets, "db", json!({"length": 16, "rotation": "1"}))
        .await?
        .name_any();
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "store"},
        "spec": {"replicas": 1, "revisionHistoryLimit": 1, "serviceName": "store",
                 "selector": {"matchLabels": {"app": "store"}}, "template": pod_template("store", &v1n)},
    }))?;
    sts.create(&PostParams::default(), &set).await?;
    let rolled = |d: Option<&StatefulSet>| {
        d.and_then(|d| Some((d.metadata.generation?, d.status.as_ref()?)))
            .is_some_and(|(g, s)| {
                s.observed_generation == Some(g)
                    && s.ready_replicas == Some(1)
                    && s.current_revision == s.update_revision
            })
    };
    wait_for(&sts, "store", "ready on v1", rolled).await?;
    wait_version(
        &api,
        "db",
        &v1n,
        VersionState::Current,
        Some("ControllerRevision/store-"),
    )
    .await?;

    let v2n = rotate(&api, "db", "2").await?;
    point_at(&sts, "store", &v2n, "2").await?;
    wait_for(&sts, "store", "rolled out on v2", rolled).await?;
    // The old revision is kept (revisionHistoryLimit 1), and with it v1.
    wait_version(
        &api,
        "db",
        &v1n,
        VersionState::Retained,
        Some("ControllerRevision/store-"),
    )
    .await?;

    let v3n = rotate(&api, "db", "3").await?;
    point_at(&sts, "store", &v3n, "3").await?;
    wait_for(&sts, "store", "rolled out on v3", rolled).await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 is deleted once its revision is pruned")?;
    wait_version(
        &api,
        "db",
        &v2n,
        VersionState::Retained,
        Some("ControllerRevision/store-"),
    )
    .await?;
    checker.finish().await?;
    ns.delete().await
}

#[tokio::test]
async fn history_keeps_unreferenced_versions_then_releases_them() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-history").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = json!({"length": 16, "history": 1, "rotation": "1"});
    let v1 = first_version(&api, &secrets, "db", spec).await?;
    let v1n = v1.name_any();
    let v2n = rotate(&api, "db", "2").await?;
    wait_version(&api, "db", &v1n, VersionState::Retained, None).await?;
    let v3n = rotate(&api, "db", "3").await?;
    // Only the newest superseded version (v2) is within history 1: v1 is released.
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 is released beyond history")?;
    let rs = wait_version(&api, "db", &v2n, VersionState::Retained, None).await?;
    ensure!(
        version_status(&rs, &v1n).is_none()
            && version_status(&rs, &v3n).is_some_and(|v| v.state == VersionState::Current)
    );
    wait_event(&client, &ns.name, "VersionReleased", |e| {
        e.reason.as_deref() == Some("VersionReleased")
    })
    .await?;
    ensure!(
        rs.status.as_ref().unwrap().released.contains(&v1n),
        "status.released lacks {v1n}"
    );

    // Reverting to the released rotation creates that name again, with new values, and says so.
    ensure!(rotate(&api, "db", "1").await? == v1n);
    let again = secrets.get(&v1n).await?;
    record_values(again.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    ensure!(
        again.data != v1.data,
        "a re-created version must have new values"
    );
    wait_event(&client, &ns.name, "VersionRecreated", |e| {
        e.reason.as_deref() == Some("VersionRecreated")
            && e.note.as_deref().is_some_and(|n| n.contains(&v1n))
    })
    .await?;
    ns.delete().await
}

#[tokio::test]
async fn a_bare_pod_holds_its_version_and_deletion_keeps_referenced_versions() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-pod").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let pods: Api<Pod> = ns.api();
    let v1n = first_version(&api, &secrets, "db", json!({"length": 16}))
        .await?
        .name_any();
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "debug"}, "spec": pod_template("debug", &v1n)["spec"]}),
    )?;
    pods.create(&PostParams::default(), &pod).await?;
    wait_version(&api, "db", &v1n, VersionState::Current, Some("Pod/debug")).await?;

    // Deleting the RandomSecret keeps the version the pod still uses; an
    // unreferenced current version goes with it.
    let other = first_version(&api, &secrets, "other", json!({"length": 16}))
        .await?
        .name_any();
    api.delete("db", &DeleteParams::background()).await?;
    api.delete("other", &DeleteParams::background()).await?;
    wait_deleted(&api, "db").await?;
    wait_deleted(&secrets, &other)
        .await
        .context("the unreferenced current version goes with its RandomSecret")?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let kept = secrets
        .get_opt(&v1n)
        .await?
        .context("a version a pod uses was deleted with its RandomSecret")?;
    ensure!(
        kept.owner_references().iter().all(|o| o.kind == "Pod"),
        "{:?}",
        kept.owner_references()
    );

    // When the pod goes, so does the version.
    pods.delete("debug", &DeleteParams::default().grace_period(0))
        .await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("the version goes with its last pod")?;
    ns.delete().await
}

/// Issue 12, point 1: a ReplicaSet deleted (or pruned by its Deployment)
/// while its pods are still terminating. The pods keep their version until
/// the last of them is gone: the garbage collector must not delete it with
/// the ReplicaSet. The pod is bound to a node of its own that no kubelet (nor
/// the node simulator) runs, so once deleted it stays Terminating, as a pod
/// does while its containers stop, until it is force-deleted.
#[tokio::test]
async fn terminating_pods_of_a_deleted_replicaset_keep_their_version() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-terminating").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let rss: Api<ReplicaSet> = ns.api();
    let pods: Api<Pod> = ns.api();
    let nodes: Api<Node> = Api::all(client.clone());
    let node = format!("ghost-{}", ns.name);
    let ghost: Node = serde_json::from_value(json!({"metadata": {"name": node}}))?;
    nodes.create(&PostParams::default(), &ghost).await?;
    // Cluster-scoped: removed even when the test fails (the namespace is not).
    let _ghost = DeleteOnDrop(&["node", &node]);

    let v1 = first_version(&api, &secrets, "db", json!({"length": 16, "rotation": "1"})).await?;
    let v1n = v1.name_any();
    let mut template = pod_template("old", &v1n);
    template["spec"]["nodeName"] = json!(node);
    let replicaset: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "old"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "old"}}, "template": template},
    }))?;
    rss.create(&PostParams::default(), &replicaset).await?;
    let pod_name = {
        let mut found = None;
        for _ in 0..150 {
            if let Some(p) = pods
                .list(&ListParams::default().labels("app=old"))
                .await?
                .items
                .first()
            {
                found = Some(p.name_any());
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        found.context("the ReplicaSet made no pod")?
    };
    let v2n = rotate(&api, "db", "2").await?;
    ensure!(v2n != v1n);
    wait_version(
        &api,
        "db",
        &v1n,
        VersionState::Retained,
        Some("ReplicaSet/old"),
    )
    .await?;
    let owners = owner_kinds(&secrets, &v1n).await?;
    ensure!(owners == ["ReplicaSet", "Pod"], "v1 owners: {owners:?}");

    // The ReplicaSet goes; its pod is terminating.
    rss.delete("old", &DeleteParams::background()).await?;
    wait_deleted(&rss, "old").await?;
    wait_for(
        &pods,
        &pod_name,
        "the pod terminating",
        |p: Option<&Pod>| p.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
    )
    .await?;
    let rs = wait_version(&api, "db", &v1n, VersionState::Retained, Some("Pod/old-")).await?;
    ensure!(
        version_status(&rs, &v1n).is_some_and(|v| v.referenced_by == [format!("Pod/{pod_name}")])
    );
    // Long enough for the garbage collector to have acted on the ReplicaSet.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let kept = secrets
        .get_opt(&v1n)
        .await?
        .context("v1 was deleted while a pod of its ReplicaSet was still terminating")?;
    ensure!(kept.data == v1.data, "v1's values changed");
    let owners: Vec<String> = kept
        .owner_references()
        .iter()
        .map(|o| o.kind.clone())
        .collect();
    ensure!(
        owners == ["Pod"],
        "v1 owners once its ReplicaSet is gone: {owners:?}"
    );

    // The pod is gone: so is v1.
    pods.delete(&pod_name, &DeleteParams::default().grace_period(0))
        .await?;
    wait_deleted(&pods, &pod_name).await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 goes once its last pod is gone")?;
    ensure!(secrets.get_opt(&v2n).await?.is_some());
    ns.delete().await
}

/// Deletes a cluster-scoped object with kubectl when dropped (a test's end,
/// passing or not).
struct DeleteOnDrop<'a>(&'a [&'a str]);

impl Drop for DeleteOnDrop<'_> {
    fn drop(&mut self) {
        let mut args = vec!["delete", "--wait=false", "--ignore-not-found"];
        args.extend_from_slice(self.0);
        let _ = kubectl(&args);
    }
}

fn template_secret(d: &Deployment) -> Option<String> {
    d.spec.as_ref()?.template.spec.as_ref()?.containers[0]
        .env_from
        .as_ref()?[0]
        .secret_ref
        .as_ref()
        .map(|r| r.name.clone())
}

/// Rolled out, with the template on `secret`.
fn rolled_out_on(secret: String) -> impl Fn(Option<&Deployment>) -> bool {
    move |d| rollout_complete(d) && d.and_then(template_secret).as_deref() == Some(secret.as_str())
}

#[tokio::test]
async fn tracking_mode_rolls_workloads_to_each_new_version() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-track").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");
    let v1n = first_version(&api, &secrets, "db", json!({"length": 16, "rotation": "1"}))
        .await?
        .name_any();

    // The manifest names the base name; the controller points it at the current version.
    let mut d = deployment("web", "db")?;
    d.metadata.annotations = Some([("randomsecret.io/track".to_string(), "db".to_string())].into());
    deploys.create(&PostParams::default(), &d).await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v1",
        rolled_out_on(v1n.clone()),
    )
    .await?;

    // A rotation rolls the Deployment to v2; the old ReplicaSet keeps v1.
    let v2n = rotate(&api, "db", "2").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v2",
        rolled_out_on(v2n.clone()),
    )
    .await?;
    wait_version(
        &api,
        "db",
        &v1n,
        VersionState::Retained,
        Some("ReplicaSet/web-"),
    )
    .await?;
    // One WorkloadUpdated Event per version the workload was pointed at.
    let count = |items: &[k8s_openapi::api::events::v1::Event]| -> i32 {
        items
            .iter()
            .filter(|e| e.reason.as_deref() == Some("WorkloadUpdated"))
            .map(|e| e.series.as_ref().map_or(1, |s| s.count))
            .sum()
    };
    let items = wait_events(&client, &ns.name, "second WorkloadUpdated", |items| {
        count(items) >= 2
    })
    .await
    .context("expected a WorkloadUpdated event per version")?;
    ensure!(
        count(&items) >= 2,
        "expected a WorkloadUpdated event per version"
    );

    // Time-based rotation: with rotateEvery 1m a new version comes within a minute, and rolls out.
    patch_spec(&api, "db", json!({"rotateEvery": "1m"})).await?;
    let v3 = wait_for(&api, "db", "Ready with rotateEvery", is_ready).await?;
    let v3n = v3
        .status
        .and_then(|s| s.secret_name)
        .context("secretName")?;
    wait_for(
        &deploys,
        "web",
        "rolled out on the rotateEvery version",
        rolled_out_on(v3n.clone()),
    )
    .await?;
    let v3n_ = v3n.clone();
    let rotated = wait_for(
        &api,
        "db",
        "rotated by time",
        move |rs: Option<&RandomSecret>| {
            is_ready(rs)
                && rs
                    .and_then(|r| r.status.as_ref()?.secret_name.clone())
                    .is_some_and(|n| n != v3n_)
        },
    )
    .await?;
    let v4n = rotated
        .status
        .and_then(|s| s.secret_name)
        .context("secretName")?;
    wait_for(
        &deploys,
        "web",
        "rolled out on the time-rotated version",
        rolled_out_on(v4n),
    )
    .await?;
    wait_version(
        &api,
        "db",
        &v3n,
        VersionState::Retained,
        Some("ReplicaSet/web-"),
    )
    .await?;
    checker.finish().await?;
    ns.delete().await
}

/// Issue 12, point 7: many holders (a Job's or a script's bare pods) give a
/// version at most 128 owner references, the RandomSecret holding it for the
/// rest, and a bounded `referencedBy`; when they are gone, it is released.
#[tokio::test]
async fn many_pods_give_a_bounded_number_of_owners() -> Result<()> {
    const PODS: usize = 140;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-many").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let pods: Api<Pod> = ns.api();
    let v1n = first_version(&api, &secrets, "db", json!({"length": 16, "rotation": "1"}))
        .await?
        .name_any();
    let spec = pod_template("batch", &v1n)["spec"].clone();
    let creates = (0..PODS).map(|i| {
        let pods = pods.clone();
        let spec = spec.clone();
        async move {
            let pod: Pod = serde_json::from_value(
                json!({"metadata": {"name": format!("batch-{i:03}"), "labels": {"app": "batch"}}, "spec": spec}),
            )?;
            pods.create(&PostParams::default(), &pod).await?;
            anyhow::Ok(())
        }
    });
    for r in futures::future::join_all(creates).await {
        r?;
    }
    let v2n = rotate(&api, "db", "2").await?;
    let more = format!("+{} more", PODS - 10);
    let rs = wait_for(
        &api,
        "db",
        "v1 retained by every pod",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| version_status(rs, &v1n)).is_some_and(|v| {
                v.state == VersionState::Retained && v.referenced_by.last() == Some(&more)
            })
        },
    )
    .await?;
    ensure!(version_status(&rs, &v1n).unwrap().referenced_by.len() == 11);
    let owners = owner_kinds(&secrets, &v1n).await?;
    ensure!(
        owners.len() == 129
            && owners.iter().filter(|k| *k == "Pod").count() == 128
            && owners.contains(&"RandomSecret".to_string()),
        "v1 owners: {} ({} pods)",
        owners.len(),
        owners.iter().filter(|k| *k == "Pod").count()
    );

    // The pods go: v1 is released.
    pods.delete_collection(
        &DeleteParams::default().grace_period(0),
        &ListParams::default().labels("app=batch"),
    )
    .await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 goes with its last pod")?;
    ensure!(secrets.get_opt(&v2n).await?.is_some());
    ns.delete().await
}

/// A custom workload kind listed as a holder (issue 30): the shared
/// controller runs with `--reference` for the `Worker` kind of
/// e2e/manifests/worker-crd.yaml ($E2E_WORKER_REFERENCE): a Worker that names
/// a version at a listed path (a Secret name, or a pod spec) keeps it, one
/// that names it elsewhere does not; `resolve --reference` rewrites the same
/// paths.
#[tokio::test]
async fn a_custom_kind_listed_as_a_holder_keeps_its_version() -> Result<()> {
    use kube::api::DynamicObject;
    let reference =
        std::env::var("E2E_WORKER_REFERENCE").context("E2E_WORKER_REFERENCE (run.sh)")?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "ret-custom").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let mut kind = randomsecret::references::custom::CustomKind::parse(&reference)
        .map_err(anyhow::Error::msg)?;
    kind.plural = "workers".into();
    let resource = kind.api_resource();
    let workers: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &resource);
    let rs = create_ready(
        &api,
        "db",
        json!({"keys": {"password": {"length": 24}}, "rotation": "1"}),
    )
    .await?;
    let v1 = current_secret(&secrets, &rs).await?.name_any();
    let worker = |name: &str, spec: serde_json::Value| -> Result<DynamicObject> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "e2e.randomsecret.io/v1", "kind": "Worker",
            "metadata": {"name": name}, "spec": spec,
        }))?)
    };
    let pp = PostParams::default();
    workers
        .create(
            &pp,
            &worker("by-name", json!({"credentials": {"secretName": v1}}))?,
        )
        .await?;
    workers
        .create(
            &pp,
            &worker("by-pod", json!({"template": pod_template("w", &v1)}))?,
        )
        .await?;
    // Not a listed path: holds nothing.
    workers
        .create(
            &pp,
            &worker("elsewhere", json!({"other": {"secretName": v1}}))?,
        )
        .await?;

    let v2 = rotate(&api, "db", "2").await?;
    ensure!(v2 != v1);
    wait_version(
        &api,
        "db",
        &v1,
        VersionState::Retained,
        Some("Worker/by-name"),
    )
    .await?;
    let rs = wait_version(
        &api,
        "db",
        &v1,
        VersionState::Retained,
        Some("Worker/by-pod"),
    )
    .await?;
    let held = version_status(&rs, &v1).context("v1 listed")?;
    ensure!(
        !held.referenced_by.iter().any(|r| r.contains("elsewhere")),
        "an unlisted path holds nothing: {:?}",
        held.referenced_by
    );
    // The Workers own v1 as a ReplicaSet would.
    let owners: Vec<(String, String)> = secrets
        .get(&v1)
        .await?
        .owner_references()
        .iter()
        .map(|o| (o.api_version.clone(), o.kind.clone()))
        .collect();
    ensure!(
        owners
            .iter()
            .filter(|o| *o == &("e2e.randomsecret.io/v1".to_string(), "Worker".to_string()))
            .count()
            == 2,
        "v1's owners: {owners:?}"
    );

    // One gone: still held by the other. Both gone: released.
    workers.delete("by-name", &Default::default()).await?;
    wait_for(&api, "db", "v1 held by the pod-spec Worker alone", {
        let v1 = v1.clone();
        move |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| version_status(rs, &v1)).is_some_and(|v| {
                v.state == VersionState::Retained
                    && v.referenced_by == ["Worker/by-pod".to_string()]
            })
        }
    })
    .await?;
    ensure!(secrets.get_opt(&v1).await?.is_some(), "v1 went too soon");
    workers.delete("by-pod", &Default::default()).await?;
    wait_deleted(&secrets, &v1)
        .await
        .context("v1 released once no listed Worker names it")?;

    // resolve rewrites the same paths, with the same reference.
    let stream = format!(
        "{}\n---\n{}\n",
        json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "metadata": {"name": "db"},
               "spec": {"keys": {"password": {"length": 24}}, "rotation": "2"}}),
        json!({"apiVersion": "e2e.randomsecret.io/v1", "kind": "Worker", "metadata": {"name": "w"},
               "spec": {"credentials": {"secretName": "db"}, "template": pod_template("w", "db")}})
    );
    let bin = randomsecret_bin();
    let bin = bin.to_str().context("binary path")?;
    let plain = run(bin, &["resolve"], Some(&stream))?;
    ensure!(
        !plain.contains(&v2),
        "without --reference a Worker is left alone"
    );
    let resolved = run(bin, &["resolve", "--reference", &reference], Some(&stream))?;
    ensure!(
        resolved.matches(&v2).count() == 2,
        "both paths rewritten to {v2}:\n{resolved}"
    );
    run(
        "kubectl",
        &["apply", "-n", &ns.name, "-f", "-"],
        Some(&resolved),
    )?;
    wait_version(&api, "db", &v2, VersionState::Current, Some("Worker/w")).await?;
    ns.delete().await
}

/// A `--reference` to a kind the apiserver does not serve stops the
/// controller at start, saying what to do (its watch could never list, and
/// no version would ever be released), before it binds a port or leads.
#[tokio::test]
async fn an_unserved_custom_reference_stops_the_start_with_what_to_do() -> Result<()> {
    let kubeconfig = std::env::var("KUBECONFIG").context("KUBECONFIG")?;
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(randomsecret_bin())
            .args([
                "controller",
                "--kubeconfig",
                &kubeconfig,
                "--reference",
                "nothing.e2e.randomsecret.io/v1/Nothing=spec/secretName",
            ])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("the controller did not stop")??;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success(), "it started: {stderr}");
    ensure!(
        stderr.contains("serves no kind Nothing") && stderr.contains("install its CRD first"),
        "{stderr}"
    );
    Ok(())
}
