//! The cluster push (`spec.push.clusters`) between two real control planes:
//! this suite's upstream one and a downstream one it starts itself
//! (`e2e/cluster.sh` with its own state, ports and CA). Each test runs a
//! controller of its own (with the chart's RBAC), so it can stop it; the
//! downstream side runs with exactly the RBAC docs/src/clusters.md documents.
//!
//! Ignored by default: `e2e/run.sh` runs it after the shared controller has
//! stopped, one test at a time (they share the downstream ports).

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret::api::connections::ClusterConnection;
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
    kubeconfig_secret(client, name, kubeconfig).await?;
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

/// The upstream Secret `kubeconfig-<name>` with `kubeconfig` under key `value`.
async fn kubeconfig_secret(client: &Client, name: &str, kubeconfig: &str) -> Result<()> {
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
    Ok(())
}

/// A ClusterConnection `name` with `spec` besides its kubeconfig Secret
/// (for specs the tests' usual [`connection`] does not write).
async fn connection_with(client: &Client, name: &str, kubeconfig: &str, spec: Value) -> Result<()> {
    kubeconfig_secret(client, name, kubeconfig).await?;
    let mut full = json!({"kubeconfigSecretRef": {"name": format!("kubeconfig-{name}"), "namespace": SYSTEM},
                          "timeoutSeconds": 3});
    if let (Some(f), Value::Object(extra)) = (full.as_object_mut(), spec) {
        f.extend(extra);
    }
    // As JSON, not the typed object, which would drop fields it lacks;
    // created (not applied), so a field the CRD lacks is dropped, not refused.
    let c: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "ClusterConnection",
        "metadata": {"name": name}, "spec": full,
    }))?;
    let resource = kube::api::ApiResource::erase::<ClusterConnection>(&());
    Api::<kube::api::DynamicObject>::all_with(client.clone(), &resource)
        .create(&PostParams::default(), &c)
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
fn entry(rs: &RandomSecret, name: &str) -> Option<randomsecret::api::push::ClusterPushStatus> {
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

/// Nothing of RandomSecret `base` downstream in `namespace` (no copy, no
/// anchor), and no Secret named `version` there.
async fn nothing_copied(dc: &Client, namespace: &str, base: &str, version: &str) -> Result<()> {
    let api: Api<Secret> = Api::namespaced(dc.clone(), namespace);
    let selector = format!("randomsecret.io/copy-of,randomsecret.io/name={base}");
    let ours = api
        .list_metadata(&ListParams::default().labels(&selector))
        .await?;
    let names: Vec<String> = ours.items.iter().map(|s| s.name_any()).collect();
    ensure!(
        names.is_empty(),
        "copies or anchors of {base} downstream in {namespace}: {names:?}"
    );
    ensure!(
        api.get_opt(version).await?.is_none(),
        "{version} was copied into {namespace}"
    );
    Ok(())
}

/// The message of ClustersSynced's entry for connection `name`, once it is
/// not synced with `reason` (within `within`).
async fn refused_with(
    api: &Api<RandomSecret>,
    rs: &str,
    name: &str,
    reason: &'static str,
    within: Duration,
) -> Result<String> {
    let deadline = Instant::now() + within;
    loop {
        let got = api.get(rs).await?;
        let e = entry(&got, name);
        if let Some(e) = &e
            && !e.synced
            && e.reason == reason
        {
            return Ok(e.message.clone().unwrap_or_default());
        }
        ensure!(
            Instant::now() < deadline,
            "{rs} via {name}: not {reason} within {within:?} (now {e:?})"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Finding #7 and the tenant rules, as attacks against a real downstream
/// cluster. Each attack is checked on its own and all are reported, so a
/// run shows every one that gets through:
/// - a tenant namespace named `argocd` with a RandomSecret shaped like an
///   Argo CD repository Secret, through a connection written before
///   allowedNamespaces had to be set (it allowed every namespace) and
///   through one open to `"*"`: refused, nothing created downstream (the
///   downstream `argocd` namespace is protected by default);
/// - a connection's own copy policy (labelPrefixes) refuses a version with
///   another label, nothing created downstream;
/// - a cluster target added to an existing RandomSecret copies nothing until
///   the next version (AwaitingNextVersion), then copies that one;
/// - a kubeconfig with insecure-skip-tls-verify is refused without
///   --allow-insecure-downstream-tls.
#[tokio::test]
#[ignore = "own controller and a second control plane: run by e2e/run.sh after the shared controller"]
async fn tenants_cannot_plant_secrets_or_widen_where_versions_go() -> Result<()> {
    let down = DownstreamCluster::up()?;
    let dc = down.client().await?;
    let client = client().await?;
    let namespaces = Api::<Namespace>::all(client.clone());
    let argocd: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"},
    }))?;
    match namespaces.create(&PostParams::default(), &argocd).await {
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        r => drop(r?),
    }
    let ns = TestNamespace::new(&client, "clusters").await?;
    downstream_namespace(&dc, "argocd").await?;
    downstream_namespace(&dc, &ns.name).await?;
    let kubeconfig = down.connection_kubeconfig(&["argocd", &ns.name])?;
    let (unset, star) = (format!("unset-{}", ns.name), format!("star-{}", ns.name));
    connection_with(&client, &unset, &kubeconfig, json!({})).await?;
    connection_with(
        &client,
        &star,
        &kubeconfig,
        json!({"allowedNamespaces": ["*"]}),
    )
    .await?;
    let narrow = format!("narrow-{}", ns.name);
    connection_with(
        &client,
        &narrow,
        &kubeconfig,
        json!({"allowedNamespaces": [ns.name], "copyPolicy": {"labelPrefixes": ["team.example.com/"]}}),
    )
    .await?;
    let insecure = format!("insecure-{}", ns.name);
    let insecure_kubeconfig = kubeconfig.replace(
        "certificate-authority-data:",
        "insecure-skip-tls-verify: true, x-certificate-authority-data:",
    );
    ensure!(insecure_kubeconfig != kubeconfig, "{kubeconfig}");
    connection_with(
        &client,
        &insecure,
        &insecure_kubeconfig,
        json!({"allowedNamespaces": [ns.name]}),
    )
    .await?;
    let controller = ControllerProcess::start("clusters", 18240, &[])?;
    let within = Duration::from_secs(45);
    let mut failures: Vec<String> = Vec::new();
    let mut check = |what: &str, r: Result<()>| {
        if let Err(e) = r {
            failures.push(format!("{what}: {e:#}"));
        }
    };

    // An Argo CD repository Secret, from a tenant namespace named argocd.
    let repo_api: Api<RandomSecret> = Api::namespaced(client.clone(), "argocd");
    let repo_secrets: Api<Secret> = Api::namespaced(client.clone(), "argocd");
    let repo = first_version(
        &repo_api,
        &repo_secrets,
        "repo",
        json!({
            "keys": {"password": {"length": 24}},
            "static": {"type": "git", "url": "https://git.example.com/platform.git", "username": "tenant"},
            "secretLabels": {"argocd.argoproj.io/secret-type": "repository"},
            "push": {"clusters": [{"connectionRef": {"name": unset}}, {"connectionRef": {"name": star}}]},
        }),
    )
    .await?;
    let repo_name = repo.name_any();
    check(
        "a connection without allowedNamespaces",
        refused_with(&repo_api, "repo", &unset, "AllowedNamespacesUnset", within)
            .await
            .and_then(|m| {
                ensure!(m.contains("allowedNamespaces"), "{m}");
                Ok(())
            }),
    );
    check(
        "a connection open to every namespace, into argocd",
        refused_with(&repo_api, "repo", &star, "NamespaceNotAllowed", within)
            .await
            .and_then(|m| {
                ensure!(m.contains("protected"), "{m}");
                Ok(())
            }),
    );
    check(
        "nothing in argocd downstream",
        nothing_copied(&dc, "argocd", "repo", &repo_name).await,
    );

    // The connection's own policy: only team.example.com/ labels go there.
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let labelled = first_version(
        &api,
        &secrets,
        "labelled",
        json!({
            "keys": {"password": {"length": 24}},
            "secretLabels": {"argocd.argoproj.io/secret-type": "cluster"},
            "push": {"clusters": [{"connectionRef": {"name": narrow}}]},
        }),
    )
    .await?;
    check(
        "the connection's copy policy",
        refused_with(&api, "labelled", &narrow, "NotAllowed", within)
            .await
            .and_then(|m| {
                ensure!(m.contains("argocd.argoproj.io/secret-type"), "{m}");
                Ok(())
            }),
    );
    check(
        "nothing copied against the policy",
        nothing_copied(&dc, &ns.name, "labelled", &labelled.name_any()).await,
    );
    api.delete("labelled", &DeleteParams::default()).await?;
    wait_deleted(&api, "labelled").await?;

    // A target added to an existing RandomSecret: nothing until the next version.
    let late = first_version(
        &api,
        &secrets,
        "late",
        json!({"keys": {"password": {"length": 24}}, "secretLabels": {"team.example.com/app": "db"}}),
    )
    .await?;
    patch_spec(
        &api,
        "late",
        json!({"push": {"clusters": [{"connectionRef": {"name": narrow}}]}}),
    )
    .await?;
    check(
        "a target added later",
        refused_with(&api, "late", &narrow, "AwaitingNextVersion", within)
            .await
            .map(drop),
    );
    check(
        "nothing copied before the next version",
        nothing_copied(&dc, &ns.name, "late", &late.name_any()).await,
    );
    let next = rotate(&api, "late", "2").await?;
    check(
        "the next version is copied",
        wait_for(&api, "late", "synced", |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| entry(rs, &narrow))
                .is_some_and(|e| e.synced && e.secret_names.first() == Some(&next))
        })
        .await
        .map(drop),
    );

    // insecure-skip-tls-verify, without the controller flag.
    let checked = first_version(
        &api,
        &secrets,
        "checked",
        json!({"keys": {"password": {"length": 24}}, "push": {"clusters": [{"connectionRef": {"name": insecure}}]}}),
    )
    .await?;
    check(
        "insecure-skip-tls-verify",
        refused_with(&api, "checked", &insecure, "InvalidConnection", within)
            .await
            .and_then(|m| {
                ensure!(m.contains("insecure-skip-tls-verify"), "{m}");
                Ok(())
            }),
    );
    check(
        "nothing copied through the insecure connection",
        nothing_copied(&dc, &ns.name, "checked", &checked.name_any()).await,
    );
    ensure!(
        failures.is_empty(),
        "attacks that got through:\n{}",
        failures.join("\n")
    );

    for n in ["late", "checked"] {
        api.delete(n, &DeleteParams::default()).await?;
    }
    repo_api.delete("repo", &DeleteParams::default()).await?;
    for n in ["late", "checked"] {
        wait_deleted(&api, n).await?;
    }
    wait_deleted(&repo_api, "repo").await?;
    controller.terminate()?;
    for c in [&unset, &star, &narrow, &insecure] {
        delete_connection(&client, c).await?;
    }
    namespaces
        .delete("argocd", &DeleteParams::background())
        .await?;
    ns.delete().await?;
    Ok(())
}

/// How a hostile apiserver answers every request.
#[derive(Clone, Copy)]
enum Hostile {
    /// 200 with a chunked body it never ends (1 MiB every 50 ms).
    Endless,
    /// 200 with a Content-Length of 2 GiB, then the same trickle.
    Claims2GiB,
    /// 403 with a Status whose message is text of the server's choosing.
    Words,
}

/// What the hostile apiserver's Status says (never to reach a status or an Event).
const INJECTED: &str =
    "INJECTED-downstream-words \u{1b}]0;pwned\u{7} <a href=https://evil.example>";

/// A hostile "apiserver" on loopback, over TLS with a self-signed
/// certificate for 127.0.0.1, and a kubeconfig to it (with a token that
/// must never be echoed).
async fn hostile_apiserver(how: Hostile) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(signing_key.serialize_der().into()),
        )?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let mib = vec![b' '; 1 << 20];
                match how {
                    Hostile::Words => {
                        let body =
                            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                            "message": INJECTED, "reason": "Forbidden", "code": 403})
                            .to_string();
                        let reply = format!(
                            "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = s.write_all(reply.as_bytes()).await;
                        let _ = s.flush().await;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Hostile::Endless => {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\na\r\n{\"items\":[\r\n").await;
                        let chunk = [&b"100000\r\n"[..], &mib[..], b"\r\n"].concat();
                        while s.write_all(&chunk).await.is_ok() {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                    Hostile::Claims2GiB => {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n{\"items\":[").await;
                        while s.write_all(&mib).await.is_ok() {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            });
        }
    });
    let ca = cert.pem();
    let ca = base64_std(ca.as_bytes());
    Ok(format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: hostile\n  cluster: {{server: \"https://127.0.0.1:{port}\", certificate-authority-data: \"{ca}\"}}\nusers:\n- name: u\n  user: {{token: \"hostile-test-token-never-echoed\"}}\ncontexts:\n- name: hostile\n  context: {{cluster: hostile, user: u}}\ncurrent-context: hostile\n"
    ))
}

/// Standard base64 with padding (a CA in a kubeconfig).
fn base64_std(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The process's resident memory now, in MiB (e2e::process reads /proc).
fn rss_mib(pid: u32) -> Result<u64> {
    Ok(randomsecret_e2e::process::rss(pid)? >> 20)
}

/// Finding #1, downstream side, as the attack: a downstream "apiserver"
/// (a kubeconfig Secret's server, on loopback) answers with a body without
/// end, or says it is 2 GiB long: the controller reads at most 8 MiB of
/// any reply (ReplyTooLarge) and its memory stays flat. And one that
/// answers 403 with words of its own: they never reach the status or an
/// Event, nor does the kubeconfig's token. A controller of its own, no
/// downstream control plane.
#[tokio::test]
#[ignore = "own controller: run by e2e/run.sh after the shared controller"]
async fn a_hostile_downstream_apiserver_cannot_exhaust_memory_or_speak_to_tenants() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "clusters-hostile").await?;
    // Words first: the memory attacks stop a controller that reads them whole.
    let names = ["words", "endless", "claims"].map(|n| format!("{n}-{}", ns.name));
    for (name, how) in names
        .iter()
        .zip([Hostile::Words, Hostile::Endless, Hostile::Claims2GiB])
    {
        let kubeconfig = hostile_apiserver(how).await?;
        connection(&client, name, &kubeconfig, &ns.name, &[]).await?;
    }
    let mut controller = ControllerProcess::start("clusters", 18240, &[])?;
    let pid = controller.child.id();
    let before = rss_mib(pid)?;
    let api: Api<RandomSecret> = ns.api();
    let mut grew = 0;
    let mut failures: Vec<String> = Vec::new();
    for (rs, name, reason) in [
        ("words", &names[0], "Forbidden"),
        ("endless", &names[1], "ReplyTooLarge"),
        ("claims", &names[2], "ReplyTooLarge"),
    ] {
        api.create(
            &PostParams::default(),
            &random_secret(rs, pushing(&[(name, None)], json!({})))?,
        )
        .await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let message = loop {
            let now = rss_mib(pid)?;
            grew = grew.max(now.saturating_sub(before));
            if grew > 96 {
                // Before the fix: stop it before it takes the machine's memory.
                let _ = controller.child.kill();
                failures.push(format!(
                    "the controller's RSS grew from {before} MiB to {now} MiB reading {rs}'s reply"
                ));
                anyhow::bail!("{}", failures.join("\n"));
            }
            let got = api.get(rs).await?;
            let e = entry(&got, name);
            if let Some(e) = &e
                && !e.synced
                && (e.reason == reason || Instant::now() > deadline)
            {
                if e.reason != reason {
                    failures.push(format!("{rs}: {} instead of {reason}", e.reason));
                }
                break e.message.clone().unwrap_or_default();
            }
            ensure!(
                Instant::now() < deadline,
                "{rs}: not {reason} within 60 s: {e:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        for bad in ["INJECTED", "hostile-test-token"] {
            if message.contains(bad) {
                failures.push(format!("{rs}: the status quotes {bad:?}: {message}"));
            }
        }
        let rs_now = api.get(rs).await?;
        let cond = condition(&rs_now, "ClustersSynced")
            .map(|c| c.message.clone())
            .unwrap_or_default();
        if cond.contains("INJECTED") {
            failures.push(format!("{rs}: ClustersSynced quotes the server: {cond}"));
        }
        ensure!(
            is_ready(Some(&rs_now)),
            "Ready stays about the upstream version"
        );
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    // A few more rounds of retries, then once more.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = rss_mib(pid)?;
    eprintln!(
        "the controller's RSS: {before} MiB before the hostile replies, {after} MiB after (at most {grew} MiB more meanwhile)"
    );
    ensure!(
        after < before + 96,
        "the controller's RSS grew from {before} MiB to {after} MiB"
    );
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await?;
    for e in &events.items {
        let note = e.note.clone().unwrap_or_default();
        ensure!(
            !note.contains("INJECTED") && !note.contains("hostile-test-token"),
            "an Event quotes the server or the token: {note}"
        );
    }
    for rs in ["endless", "claims", "words"] {
        api.delete(rs, &DeleteParams::default()).await?;
        wait_deleted(&api, rs).await?;
    }
    controller.terminate()?;
    for c in &names {
        delete_connection(&client, c).await?;
    }
    ns.delete().await?;
    Ok(())
}
