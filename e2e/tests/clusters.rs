//! The cluster push (`spec.push.clusters`) between two real control planes:
//! this suite's upstream one and a downstream one it starts itself
//! (`e2e/cluster.sh` with its own state, ports and CA). Each test runs a
//! controller of its own (with the chart's RBAC), so it can stop it; the
//! downstream side runs with exactly the RBAC the README documents.
//!
//! Ignored by default: `e2e/run.sh` runs it after the shared controller has
//! stopped, one test at a time (they share the downstream ports).

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret::push::api::ClusterConnection;
use randomsecret_e2e::downstream::DownstreamCluster;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Where the upstream kubeconfig Secrets live (the chart's namespace).
const SYSTEM: &str = "randomsecret-system";

/// A namespace of the same name in the downstream cluster.
async fn downstream_namespace(down: &Client, name: &str) -> Result<()> {
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
    }))?;
    Api::<Namespace>::all(down.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

/// A kubeconfig Secret upstream and a ClusterConnection `name` to it, for
/// RandomSecrets of `allowed`, into their own namespace's name or `targets`.
async fn connection(
    client: &Client,
    name: &str,
    kubeconfig: &str,
    allowed: &str,
    targets: &[&str],
) -> Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("kubeconfig-{name}"), "namespace": SYSTEM},
        "stringData": {"value": kubeconfig},
    }))?;
    Api::<Secret>::namespaced(client.clone(), SYSTEM)
        .patch(
            &format!("kubeconfig-{name}"),
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&secret),
        )
        .await?;
    let c: ClusterConnection = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "ClusterConnection",
        "metadata": {"name": name},
        "spec": {"kubeconfigSecretRef": {"name": format!("kubeconfig-{name}"), "namespace": SYSTEM},
                 "allowedNamespaces": [allowed], "targetNamespaces": targets, "timeoutSeconds": 3},
    }))?;
    Api::<ClusterConnection>::all(client.clone())
        .patch(name, &PatchParams::apply("e2e").force(), &Patch::Apply(&c))
        .await?;
    Ok(())
}

async fn delete_connection(client: &Client, name: &str) -> Result<()> {
    Api::<ClusterConnection>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await?;
    Api::<Secret>::namespaced(client.clone(), SYSTEM)
        .delete(&format!("kubeconfig-{name}"), &DeleteParams::default())
        .await?;
    Ok(())
}

/// ClustersSynced with `status` and `reason` for the current generation.
fn clusters_synced(
    status: &'static str,
    reason: &'static str,
) -> impl Fn(Option<&RandomSecret>) -> bool {
    move |rs| {
        rs.and_then(|rs| condition(rs, "ClustersSynced").map(|c| (rs, c)))
            .is_some_and(|(rs, c)| {
                c.status == status
                    && c.reason == reason
                    && c.observed_generation == rs.metadata.generation
            })
    }
}

/// The status entry of connection `name`.
fn entry(rs: &RandomSecret, name: &str) -> Option<randomsecret::push::api::ClusterPushStatus> {
    rs.status
        .as_ref()?
        .push
        .as_ref()?
        .clusters
        .as_ref()?
        .iter()
        .find(|e| e.connection == name)
        .cloned()
}

/// Polls `f` every 200 ms until it is true; fails after `within`.
async fn eventually<F, Fut>(what: &str, within: Duration, mut f: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + within;
    loop {
        if f().await? {
            return Ok(());
        }
        ensure!(Instant::now() < deadline, "not {what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn pushing(connections: &[(&str, Option<&str>)], extra: Value) -> Value {
    let clusters: Vec<Value> = connections
        .iter()
        .map(|(c, ns)| match ns {
            Some(ns) => json!({"connectionRef": {"name": c}, "namespace": ns}),
            None => json!({"connectionRef": {"name": c}}),
        })
        .collect();
    let mut spec = json!({
        "keys": {"password": {"length": 24}},
        "push": {"clusters": clusters},
    });
    if let (Some(s), Value::Object(e)) = (spec.as_object_mut(), extra) {
        s.extend(e);
    }
    spec
}

/// The copy downstream has the upstream version's name, values, type and
/// labels (plus where it came from), and is immutable.
fn assert_same(copy: &Secret, up: &Secret, upstream_ns: &str) -> Result<()> {
    ensure!(
        copy.data == up.data,
        "{}: other values downstream",
        up.name_any()
    );
    ensure!(
        copy.type_ == up.type_,
        "{}: another type downstream",
        up.name_any()
    );
    ensure!(copy.immutable == Some(true), "the copy is not immutable");
    let labels = copy.labels();
    for (k, v) in up.labels() {
        ensure!(labels.get(k) == Some(v), "label {k} differs downstream");
    }
    let annotations = copy.annotations();
    for (k, v) in up.annotations() {
        ensure!(
            annotations.get(k) == Some(v),
            "annotation {k} differs downstream"
        );
    }
    ensure!(
        labels.get("randomsecret.io/copy-of").map(String::as_str) == Some(upstream_ns),
        "the copy does not say where it came from: {labels:?}"
    );
    Ok(())
}

/// Create, the Deployment downstream, a rotation, and retention by the
/// downstream ReplicaSet history, which goes on while the upstream
/// controller is stopped.
#[tokio::test]
#[ignore = "own controller and a second control plane: run by e2e/run.sh after the shared controller"]
async fn versions_are_copied_and_kept_by_the_downstream_history() -> Result<()> {
    let down = DownstreamCluster::up()?;
    let dc = down.client().await?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "clusters").await?;
    downstream_namespace(&dc, &ns.name).await?;
    let conn = format!("down-{}", ns.name);
    connection(
        &client,
        &conn,
        &down.connection_kubeconfig(&[&ns.name])?,
        &ns.name,
        &[],
    )
    .await?;
    let controller = ControllerProcess::start("clusters", 18240, &[])?;

    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let dsecrets: Api<Secret> = Api::namespaced(dc.clone(), &ns.name);
    let extra = json!({"secretLabels": {"team": "a"}, "secretAnnotations": {"owner": "team-a@example.com"}});
    let v1 = first_version(&api, &secrets, "db", pushing(&[(&conn, None)], extra)).await?;
    let rs = wait_for(
        &api,
        "db",
        "ClustersSynced",
        clusters_synced("True", "Synced"),
    )
    .await?;
    let e = entry(&rs, &conn).context("no status entry for the connection")?;
    ensure!(e.synced && e.namespace == ns.name, "{e:?}");
    ensure!(e.secret_names == [v1.name_any()], "{e:?}");
    let copy1 = dsecrets.get(&v1.name_any()).await?;
    assert_same(&copy1, &v1, &ns.name)?;
    ensure!(
        owner_kinds(&dsecrets, &v1.name_any()).await? == ["Secret"],
        "the current copy is owned by its anchor"
    );
    let anchor = dsecrets.get("db-anchor").await?;
    ensure!(anchor.data.is_none(), "an anchor holds no data");
    let conn_api = Api::<ClusterConnection>::all(client.clone());
    wait_for(
        &conn_api,
        &conn,
        "Ready",
        |c: Option<&ClusterConnection>| {
            c.and_then(|c| c.status.as_ref()).is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
        },
    )
    .await?;

    // A Deployment downstream that reads the versioned name becomes available.
    let deployments: Api<Deployment> = Api::namespaced(dc.clone(), &ns.name);
    let mut web = deployment("web", &v1.name_any())?;
    web.spec.as_mut().unwrap().revision_history_limit = Some(5);
    deployments.create(&PostParams::default(), &web).await?;
    wait_for(&deployments, "web", "available", rollout_complete).await?;

    // Rotation: the new version is copied; the old copy stays, held by the
    // old ReplicaSet downstream once the Deployment moves on.
    let v2 = rotate(&api, "db", "2").await?;
    let up2 = current_secret(&secrets, &api.get("db").await?).await?;
    wait_for(
        &api,
        "db",
        "ClustersSynced after the rotation",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| entry(rs, &conn))
                .is_some_and(|e| e.synced && e.secret_names.first() == Some(&v2))
        },
    )
    .await?;
    assert_same(&dsecrets.get(&v2).await?, &up2, &ns.name)?;
    point_at(&deployments, "web", &v2, "2").await?;
    wait_for(&deployments, "web", "rolled out", rollout_complete).await?;
    let v1_name = v1.name_any();
    eventually(
        "the old copy held by the old ReplicaSet only",
        WAIT,
        || async {
            let kinds = owner_kinds(&dsecrets, &v1_name).await?;
            Ok(kinds.iter().all(|k| k == "ReplicaSet" || k == "Pod")
                && kinds.iter().any(|k| k == "ReplicaSet"))
        },
    )
    .await?;
    ensure!(
        dsecrets.get(&v1_name).await?.data == v1.data,
        "the old copy kept its values"
    );

    // With the upstream controller stopped, the downstream collector still
    // deletes the old copy once its last ReplicaSet is pruned.
    controller.terminate()?;
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"revisionHistoryLimit": 0}})),
        )
        .await?;
    let replicasets: Api<ReplicaSet> = Api::namespaced(dc.clone(), &ns.name);
    eventually("the old ReplicaSet pruned", WAIT, || async {
        let list = replicasets.list(&ListParams::default()).await?;
        Ok(list.items.len() == 1)
    })
    .await?;
    wait_deleted(&dsecrets, &v1_name).await?;
    ensure!(
        dsecrets.get(&v2).await?.data == up2.data,
        "the current copy stays, with its values"
    );
    ensure!(
        secrets.get_opt(&v1_name).await?.is_none(),
        "upstream released it too (no upstream holder, history 0)"
    );
    // A controller again, for the finalizer of the deletion.
    let controller = ControllerProcess::start("clusters", 18240, &[])?;
    api.delete("db", &DeleteParams::default()).await?;
    wait_deleted(&api, "db").await?;
    ensure!(
        dsecrets.get(&v2).await?.data == up2.data,
        "Retain (the default) keeps the copy downstream"
    );
    controller.terminate()?;
    delete_connection(&client, &conn).await?;
    ns.delete().await?;
    Ok(())
}

/// One cluster that never answers delays no other; a kubeconfig with `exec`
/// is refused and never run; a foreign Secret downstream is reported and
/// left alone; the downstream apiserver stopped and started again; then the
/// deletion policies.
#[tokio::test]
#[ignore = "own controller and a second control plane: run by e2e/run.sh after the shared controller"]
async fn isolation_refusals_outage_and_deletion() -> Result<()> {
    let down = DownstreamCluster::up()?;
    let dc = down.client().await?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "clusters").await?;
    let (a, b) = (format!("{}-a", ns.name), format!("{}-b", ns.name));
    downstream_namespace(&dc, &a).await?;
    downstream_namespace(&dc, &b).await?;
    let kubeconfig = down.connection_kubeconfig(&[&a, &b])?;
    let (good_a, good_b) = (format!("a-{}", ns.name), format!("b-{}", ns.name));
    connection(&client, &good_a, &kubeconfig, &ns.name, &[&a]).await?;
    connection(&client, &good_b, &kubeconfig, &ns.name, &[&b]).await?;
    // A server that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0")?;
    let silent_port = silent.local_addr()?.port();
    let _held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for s in silent.incoming().take(64).flatten() {
            open.push(s);
        }
    });
    let dead = format!("dead-{}", ns.name);
    let dead_kubeconfig = kubeconfig.replace(
        &format!(
            "https://127.0.0.1:{}",
            randomsecret_e2e::downstream::API_PORT
        ),
        &format!("https://127.0.0.1:{silent_port}"),
    );
    ensure!(
        dead_kubeconfig != kubeconfig,
        "the kubeconfig names the downstream server"
    );
    connection(&client, &dead, &dead_kubeconfig, &ns.name, &[&a]).await?;
    // A kubeconfig that would run a command.
    let marker = log_dir().join(format!("exec-ran-{}", ns.name));
    let exec = format!("exec-{}", ns.name);
    let exec_kubeconfig = kubeconfig.replace(
        &kubeconfig[kubeconfig.find("user: {token").context("token")?..].lines().next().unwrap().to_string(),
        &format!(
            "user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: /bin/touch, args: [\"{}\"]}}}}",
            marker.display()
        ),
    );
    ensure!(
        exec_kubeconfig.contains("command: /bin/touch"),
        "{exec_kubeconfig}"
    );
    connection(&client, &exec, &exec_kubeconfig, &ns.name, &[&a]).await?;
    let controller = ControllerProcess::start("clusters", 18240, &[])?;

    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let (da, db): (Api<Secret>, Api<Secret>) = (
        Api::namespaced(dc.clone(), &a),
        Api::namespaced(dc.clone(), &b),
    );

    // The dead cluster first in the list: the other two do not wait on it.
    let started = Instant::now();
    let spec = pushing(
        &[(&dead, Some(&a)), (&good_a, Some(&a)), (&good_b, Some(&b))],
        json!({"history": 0}),
    );
    let v1 = first_version(&api, &secrets, "shared", spec).await?;
    wait_for(
        &api,
        "shared",
        "synced to the two live clusters",
        |rs: Option<&RandomSecret>| {
            rs.is_some_and(|rs| {
                [&good_a, &good_b]
                    .iter()
                    .all(|c| entry(rs, c).is_some_and(|e| e.synced))
            })
        },
    )
    .await?;
    let took = started.elapsed();
    ensure!(
        took < Duration::from_secs(20),
        "the live clusters took {took:?} (the dead one's timeout is 3 s)"
    );
    assert_same(&da.get(&v1.name_any()).await?, &v1, &ns.name)?;
    assert_same(&db.get(&v1.name_any()).await?, &v1, &ns.name)?;
    let rs = wait_for(
        &api,
        "shared",
        "ClustersSynced False",
        clusters_synced("False", "Unreachable"),
    )
    .await?;
    ensure!(
        is_ready(Some(&rs)),
        "Ready stays about the upstream version"
    );
    let e = entry(&rs, &dead).context("dead entry")?;
    ensure!(!e.synced && e.reason == "Unreachable", "{e:?}");

    // exec is refused, and never run.
    let refused = first_version(
        &api,
        &secrets,
        "refused",
        pushing(&[(&exec, Some(&a))], json!({})),
    )
    .await?;
    let rs = wait_for(
        &api,
        "refused",
        "InvalidConnection",
        clusters_synced("False", "InvalidConnection"),
    )
    .await?;
    let message = condition(&rs, "ClustersSynced")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(message.contains("exec is refused"), "{message}");
    let conn_api = Api::<ClusterConnection>::all(client.clone());
    wait_for(
        &conn_api,
        &exec,
        "Ready False",
        |c: Option<&ClusterConnection>| {
            c.and_then(|c| c.status.as_ref()).is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "Ready" && c.status == "False" && c.reason == "KubeconfigRefused"
                })
            })
        },
    )
    .await?;
    ensure!(
        !marker.exists(),
        "the exec command ran: {}",
        marker.display()
    );
    ensure!(
        da.get_opt(&refused.name_any()).await?.is_none(),
        "nothing was copied through it"
    );

    // A target namespace the connection does not list is refused: a tenant
    // cannot place copies in another's namespace.
    let elsewhere = first_version(
        &api,
        &secrets,
        "elsewhere",
        pushing(&[(&good_b, Some(&a))], json!({})),
    )
    .await?;
    let rs = wait_for(
        &api,
        "elsewhere",
        "NamespaceNotAllowed",
        clusters_synced("False", "NamespaceNotAllowed"),
    )
    .await?;
    let message = condition(&rs, "ClustersSynced")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(message.contains("targetNamespaces"), "{message}");
    ensure!(
        da.get_opt(&elsewhere.name_any()).await?.is_none(),
        "copied into an unlisted namespace"
    );
    ensure!(
        da.get_opt("elsewhere-anchor").await?.is_none(),
        "an anchor in an unlisted namespace"
    );

    // A foreign Secret downstream under the next name: reported, untouched.
    let foreign_spec = pushing(&[(&good_a, Some(&a))], json!({"rotation": "f"}));
    let manifest = serde_json::to_string(&json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": "planted", "namespace": ns.name}, "spec": foreign_spec,
    }))?;
    let name = run("randomsecret", &["name"], Some(&manifest))?
        .trim()
        .to_string();
    let planted: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
        "stringData": {"password": "not-ours"},
    }))?;
    let planted = da.create(&PostParams::default(), &planted).await?;
    api.create(
        &PostParams::default(),
        &random_secret("planted", foreign_spec)?,
    )
    .await?;
    wait_for(
        &api,
        "planted",
        "SecretNameConflict",
        clusters_synced("False", "SecretNameConflict"),
    )
    .await?;
    let after = da.get(&name).await?;
    ensure!(
        after.resource_version() == planted.resource_version()
            && after.owner_references().is_empty(),
        "the foreign Secret was changed"
    );

    // The downstream apiserver stops: a rotation upstream is Ready at once,
    // and reaches the cluster once it is back.
    down.stop("kube-apiserver")?;
    let v2 = rotate(&api, "shared", "2").await?;
    wait_for(
        &api,
        "shared",
        "a live cluster unreachable",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| entry(rs, &good_a))
                .is_some_and(|e| e.reason == "Unreachable")
        },
    )
    .await?;
    down.start()?;
    wait_for(
        &api,
        "shared",
        "synced again after the outage",
        |rs: Option<&RandomSecret>| {
            rs.is_some_and(|rs| {
                [&good_a, &good_b].iter().all(|c| {
                    entry(rs, c).is_some_and(|e| e.synced && e.secret_names.first() == Some(&v2))
                })
            })
        },
    )
    .await?;
    let up2 = current_secret(&secrets, &api.get("shared").await?).await?;
    assert_same(&da.get(&v2).await?, &up2, &ns.name)?;
    // Nothing there references v1 and history is 0: released downstream too.
    wait_deleted(&da, &v1.name_any()).await?;

    // Deletion: Delete removes the anchor, and with it the copies nothing
    // downstream references; Retain (the default) keeps them.
    let kept = first_version(
        &api,
        &secrets,
        "kept",
        pushing(&[(&good_b, Some(&b))], json!({})),
    )
    .await?;
    let gone_spec = json!({
        "keys": {"password": {"length": 24}},
        "push": {"clusters": [{"connectionRef": {"name": good_a}, "namespace": a, "deletionPolicy": "Delete"}]},
    });
    let gone = first_version(&api, &secrets, "gone", gone_spec).await?;
    for (n, c) in [("kept", &good_b), ("gone", &good_a)] {
        wait_for(&api, n, "synced", |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| entry(rs, c)).is_some_and(|e| e.synced)
        })
        .await?;
    }
    api.delete("kept", &DeleteParams::default()).await?;
    api.delete("gone", &DeleteParams::default()).await?;
    wait_deleted(&api, "gone").await?;
    wait_deleted(&api, "kept").await?;
    wait_deleted(&da, "gone-anchor").await?;
    wait_deleted(&da, &gone.name_any()).await?;
    ensure!(
        db.get_opt("kept-anchor").await?.is_some(),
        "Retain keeps the anchor"
    );
    ensure!(
        db.get(&kept.name_any()).await?.data == kept.data,
        "Retain keeps the copy, with its values"
    );
    ensure!(!marker.exists(), "the exec command ran");

    // The rest, with their finalizers, while the controller runs; a
    // deletion through the dead connection (Retain) does not wait on it.
    for n in ["shared", "refused", "planted", "elsewhere"] {
        api.delete(n, &DeleteParams::default()).await?;
    }
    for n in ["shared", "refused", "planted", "elsewhere"] {
        wait_deleted(&api, n).await?;
    }
    controller.terminate()?;
    for c in [&good_a, &good_b, &dead, &exec] {
        delete_connection(&client, c).await?;
    }
    ns.delete().await?;
    Ok(())
}
