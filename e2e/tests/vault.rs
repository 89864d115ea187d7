//! The Vault push (`spec.push.vault`) against a real OpenBao (a dev server
//! with TLS of each test's own, Kubernetes auth against the local
//! kube-apiserver, a policy limited to the controller's prefix) and the
//! shared controller, which runs with the chart's RBAC.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret::api::connections::ClusterVaultConnection;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::time::Duration;

/// A ClusterVaultConnection to `bao` for namespace `ns`, with Kubernetes
/// auth and the CA from a ConfigMap in `ns`.
async fn connection(
    client: &Client,
    ns: &TestNamespace,
    bao: &OpenBao,
    name: &str,
    extra: Value,
) -> Result<()> {
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "openbao-ca"}, "data": {"ca.crt": bao.ca_pem},
    }))?;
    let cms: Api<ConfigMap> = ns.api();
    if cms.get_opt("openbao-ca").await?.is_none() {
        cms.create(&PostParams::default(), &cm).await?;
    }
    let mut spec = json!({
        "address": bao.address,
        "ca": {"configMapRef": {"name": "openbao-ca", "namespace": ns.name, "key": "ca.crt"}},
        "auth": {"kubernetes": {"role": openbao::ROLE}},
        "allowedNamespaces": [ns.name],
        "timeoutSeconds": 3,
    });
    if let (Some(s), Value::Object(e)) = (spec.as_object_mut(), extra) {
        s.extend(e);
    }
    let c: ClusterVaultConnection = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "ClusterVaultConnection",
        "metadata": {"name": name}, "spec": spec,
    }))?;
    Api::<ClusterVaultConnection>::all(client.clone())
        .patch(name, &PatchParams::apply("e2e").force(), &Patch::Apply(&c))
        .await?;
    Ok(())
}

async fn delete_connection(client: &Client, name: &str) -> Result<()> {
    Api::<ClusterVaultConnection>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await?;
    Ok(())
}

/// VaultSynced with `status` and `reason` for the current generation.
fn vault_synced(
    status: &'static str,
    reason: &'static str,
) -> impl Fn(Option<&RandomSecret>) -> bool {
    move |rs| {
        rs.and_then(|rs| condition(rs, "VaultSynced").map(|c| (rs, c)))
            .is_some_and(|(rs, c)| {
                c.status == status
                    && c.reason == reason
                    && c.observed_generation == rs.metadata.generation
            })
    }
}

/// The connection's Ready condition has `status` and `reason`.
fn connection_ready(
    status: &'static str,
    reason: &'static str,
) -> impl Fn(Option<&ClusterVaultConnection>) -> bool {
    move |c| {
        c.and_then(|c| c.status.as_ref())
            .into_iter()
            .flat_map(|s| &s.conditions)
            .any(|c| c.type_ == "Ready" && c.status == status && c.reason == reason)
    }
}

/// Synced, holding `secret` (the mapping's newest entry).
fn synced_with(secret: String) -> impl Fn(Option<&RandomSecret>) -> bool {
    move |rs| {
        vault_synced("True", "Synced")(rs)
            && rs
                .and_then(|rs| {
                    rs.status
                        .as_ref()?
                        .push
                        .as_ref()?
                        .vault
                        .as_ref()?
                        .versions
                        .first()
                })
                .is_some_and(|v| v.secret_name == secret)
    }
}

fn kv_version_of(rs: &RandomSecret, secret: &str) -> Option<u64> {
    rs.status
        .as_ref()?
        .push
        .as_ref()?
        .vault
        .as_ref()?
        .versions
        .iter()
        .find(|v| v.secret_name == secret)
        .map(|v| v.kv_version)
}

fn secret_name(rs: &RandomSecret) -> Result<String> {
    rs.status
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .context("status.secretName")
}

/// Reads a KV path and records its values for the log check.
fn kv(bao: &OpenBao, path: &str) -> Result<(u64, Value)> {
    let (v, data) = bao
        .kv_get(path)?
        .with_context(|| format!("{path} in OpenBao"))?;
    record(&data)?;
    Ok((v, data))
}

fn record(data: &Value) -> Result<()> {
    let values: Vec<Vec<u8>> = data
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, v)| v.as_str().map(|s| s.as_bytes().to_vec()))
        .collect();
    record_values(values.iter().map(Vec::as_slice))
}

fn metric(name_and_labels: &str) -> Result<f64> {
    let url = std::env::var("E2E_METRICS_URL").context("E2E_METRICS_URL")?;
    let text = run("curl", &["-fsS", &url], None)?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.trim().parse().ok())
        .unwrap_or(0.0))
}

/// Create (the name does not change when push is added), rotate (a new KV
/// version, mapped in the status), a resync (no new KV version), revert (the
/// old values as a new KV version), both status writers side by side, and
/// deletion with `Delete` (the path is gone).
#[tokio::test]
async fn push_create_rotate_resync_revert_and_delete() -> Result<()> {
    let client = client().await?;
    let bao = OpenBao::start(28200)?;
    let ns = TestNamespace::new(&client, "vault-push").await?;
    let conn = format!("{}-a", ns.name);
    connection(&client, &ns, &bao, &conn, json!({})).await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();

    // Without push first: adding push must keep the name (push is not hashed).
    let spec = json!({"keys": {"password": {"length": 24}}, "static": {"user": "app-user-static"}, "history": 3, "rotation": "1"});
    let rs = create_ready(&api, "db", spec).await?;
    let v0 = secret_name(&rs)?;
    let gen_before = rs.metadata.generation;
    patch_spec(&api, "db", json!({"push": {"vault": {
        "connectionRef": {"name": conn}, "keyPrefix": "DB_", "keys": ["password"], "deletionPolicy": "Delete"}}}))
    .await?;
    // The version made before the target was added is never sent there
    // (values in use do not go to a new place by an edit of spec.push).
    let rs = wait_for(
        &api,
        "db",
        "VaultSynced=False AwaitingNextVersion",
        vault_synced("False", "AwaitingNextVersion"),
    )
    .await?;
    ensure!(
        rs.metadata.generation != gen_before,
        "adding push is a spec change"
    );
    ensure!(
        secret_name(&rs)? == v0,
        "adding push changed the version name"
    );
    let path = format!("secret/{}/{}/db", openbao::PREFIX, ns.name);
    ensure!(
        bao.kv_metadata(&path)?.is_none(),
        "{v0}, made before the target was added, was pushed"
    );
    // The next version is.
    let v1 = rotate(&api, "db", "1b").await?;
    let rs = wait_for(&api, "db", "VaultSynced", synced_with(v1.clone())).await?;
    ensure!(
        is_ready(Some(&rs)),
        "Ready must stay True beside VaultSynced: {:?}",
        rs.status
    );
    ensure!(
        rs.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "randomsecret.io/push"),
        "the push's finalizer is set"
    );
    let cvc = Api::<ClusterVaultConnection>::all(client.clone())
        .get(&conn)
        .await?;
    ensure!(
        cvc.status
            .iter()
            .flat_map(|s| &s.conditions)
            .any(|c| c.type_ == "Ready" && c.status == "True" && c.reason == "Authenticated"),
        "the connection is Ready after a login: {:?}",
        cvc.status
    );
    let s1 = current_secret(&secrets, &rs).await?;
    let (kv1, data1) = kv(&bao, &path)?;
    ensure!(kv1 == 1, "first KV version: {kv1}");
    ensure!(
        data1 == json!({"DB_password": value(&s1, "password")?}),
        "the KV data must be the selected, prefixed keys of the Secret"
    );
    ensure!(
        kv_version_of(&rs, &v1) == Some(1),
        "status maps {v1} to KV 1: {:?}",
        rs.status
    );
    let meta = bao.kv_metadata(&path)?.context("metadata")?;
    ensure!(
        meta["custom_metadata"]["managed-by"] == "randomsecret"
            && meta["custom_metadata"]["source-namespace"] == ns.name.as_str()
            && meta["custom_metadata"]["secret-name"] == v1.as_str(),
        "custom metadata marks the path as ours: {}",
        meta["custom_metadata"]
    );

    // Rotate: one new KV version, mapped in the status; Ready and VaultSynced both there.
    let v2 = rotate(&api, "db", "2").await?;
    ensure!(v2 != v1);
    let rs = wait_for(&api, "db", "VaultSynced with v2", synced_with(v2.clone())).await?;
    ensure!(
        is_ready(Some(&rs)),
        "Ready after the push wrote: {:?}",
        rs.status
    );
    let s2 = current_secret(&secrets, &rs).await?;
    let (kv2, data2) = kv(&bao, &path)?;
    ensure!(kv2 == 2, "rotation: KV version 2, got {kv2}");
    ensure!(data2 == json!({"DB_password": value(&s2, "password")?}));
    ensure!(kv_version_of(&rs, &v2) == Some(2) && kv_version_of(&rs, &v1) == Some(1));

    // A resync (a spec change that keeps the version: the push runs and
    // compares) writes nothing.
    let unchanged = metric("randomsecret_pushes_total{result=\"unchanged\"}")?;
    patch_spec(
        &api,
        "db",
        json!({"push": {"vault": {"deletionPolicy": "Retain"}}}),
    )
    .await?;
    wait_for(
        &api,
        "db",
        "VaultSynced after the resync",
        vault_synced("True", "Synced"),
    )
    .await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while metric("randomsecret_pushes_total{result=\"unchanged\"}")? <= unchanged {
        ensure!(
            std::time::Instant::now() < deadline,
            "no push compared after the spec change"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(kv(&bao, &path)?.0 == 2, "a resync wrote a KV version");

    // A value changed by hand in Vault (KV 3) is written back (KV 4) at the
    // next comparison, with a Warning Event.
    bao.cli(&["kv", "put", &path, "DB_password=changed-by-hand-in-vault"])?;
    patch_spec(
        &api,
        "db",
        json!({"push": {"vault": {"deletionPolicy": "Delete"}}}),
    )
    .await?;
    wait_for(
        &api,
        "db",
        "VaultSynced after the drift",
        vault_synced("True", "Synced"),
    )
    .await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while kv(&bao, &path)?.0 < 4 {
        ensure!(
            std::time::Instant::now() < deadline,
            "the hand-changed value was not written back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(
        kv(&bao, &path)? == (4, data2.clone()),
        "the version's values are back as KV 4"
    );
    wait_event(&client, &ns.name, "a VaultValueRestored Warning", |e| {
        e.reason.as_deref() == Some("VaultValueRestored") && e.type_.as_deref() == Some("Warning")
    })
    .await?;

    // Revert to rotation 1b: the old version (retained) is current again and
    // its values are written as a new KV version.
    let back = rotate(&api, "db", "1b").await?;
    ensure!(back == v1, "a revert brings the old name back");
    let rs = wait_for(
        &api,
        "db",
        "VaultSynced with v1 again",
        synced_with(v1.clone()),
    )
    .await?;
    let (kv5, data5) = kv(&bao, &path)?;
    ensure!(kv5 == 5, "revert: KV version 5, got {kv5}");
    ensure!(data5 == data1, "revert writes the old values again");
    ensure!(
        kv_version_of(&rs, &v1) == Some(5),
        "status maps {v1} to KV 5 now: {:?}",
        rs.status
    );

    // Delete with deletionPolicy Delete: the path (all versions) is gone.
    api.delete("db", &DeleteParams::default()).await?;
    wait_deleted(&api, "db").await?;
    ensure!(bao.kv_metadata(&path)?.is_none(), "Delete removes the path");

    delete_connection(&client, &conn).await?;
    ns.delete().await?;
    Ok(())
}

/// Retain and --cascade=orphan keep the path; a path written by someone
/// else is never touched (PathNotManaged); a missing connection, a namespace
/// not allowed, a denied path, a Kubernetes-auth role that does not exist and
/// a wrong token give their reasons while Ready stays True (the connection's
/// own Ready is False for the last two, and for a server that is gone);
/// a deletion that cannot reach the server waits with a reason until the
/// escape annotation; one whose connection is gone keeps the path and says
/// so; one that never wrote anything waits on nothing (the namespace goes).
#[tokio::test]
async fn push_retain_orphan_foreign_and_refusals() -> Result<()> {
    let client = client().await?;
    let bao = OpenBao::start(28202)?;
    let ns = TestNamespace::new(&client, "vault-keep").await?;
    let conn = format!("{}-b", ns.name);
    let denied = format!("{}-denied", ns.name);
    let elsewhere = format!("{}-other-ns", ns.name);
    let unreachable = format!("{}-unreachable", ns.name);
    let removed = format!("{}-removed", ns.name);
    let no_role = format!("{}-no-role", ns.name);
    let bad_token = format!("{}-bad-token", ns.name);
    connection(&client, &ns, &bao, &conn, json!({})).await?;
    connection(
        &client,
        &ns,
        &bao,
        &no_role,
        json!({"auth": {"kubernetes": {"role": "no-such-role"}}}),
    )
    .await?;
    // A token OpenBao never issued (recorded: the log check proves it is never logged).
    let wrong_token = format!("s.not-issued-{}", ns.name);
    record_values([wrong_token.as_bytes()])?;
    let token_secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrong-token"},
        "stringData": {"token": wrong_token},
    }))?;
    ns.api::<Secret>()
        .create(&PostParams::default(), &token_secret)
        .await?;
    connection(
        &client,
        &ns,
        &bao,
        &bad_token,
        json!({"auth": {"tokenSecretRef": {"name": "wrong-token", "namespace": ns.name, "key": "token"}}}),
    )
    .await?;
    connection(&client, &ns, &bao, &unreachable, json!({})).await?;
    connection(&client, &ns, &bao, &removed, json!({})).await?;
    connection(
        &client,
        &ns,
        &bao,
        &denied,
        json!({"pathPrefix": "elsewhere/{namespace}"}),
    )
    .await?;
    connection(
        &client,
        &ns,
        &bao,
        &elsewhere,
        json!({"allowedNamespaces": ["not-this-one"]}),
    )
    .await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let push = |name: &str, policy: &str| {
        json!({"keys": {"token": {"length": 20}}, "push": {"vault": {
            "connectionRef": {"name": name}, "deletionPolicy": policy}}})
    };
    let path = |n: &str| format!("secret/{}/{}/{n}", openbao::PREFIX, ns.name);

    // A path someone else wrote first.
    bao.cli(&["kv", "put", &path("foreign"), "owner=ci-pipeline-value"])?;

    for (name, spec) in [
        ("keep", push(&conn, "Retain")),
        ("forget", push(&conn, "Delete")),
        ("orphan", push(&conn, "Delete")),
        ("foreign", push(&conn, "Delete")),
        ("missing", push("no-such-connection", "Delete")),
        ("lost", push(&unreachable, "Delete")),
        ("gone", push(&removed, "Delete")),
        ("denied", push(&denied, "Delete")),
        ("elsewhere", push(&elsewhere, "Delete")),
        ("no-role", push(&no_role, "Delete")),
        ("bad-token", push(&bad_token, "Delete")),
    ] {
        api.create(&PostParams::default(), &random_secret(name, spec)?)
            .await?;
    }
    let mut versions = std::collections::BTreeMap::new();
    for (name, status, reason) in [
        ("keep", "True", "Synced"),
        ("forget", "True", "Synced"),
        ("orphan", "True", "Synced"),
        ("foreign", "False", "PathNotManaged"),
        ("missing", "False", "ConnectionNotFound"),
        ("lost", "True", "Synced"),
        ("gone", "True", "Synced"),
        ("denied", "False", "PermissionDenied"),
        ("elsewhere", "False", "NamespaceNotAllowed"),
        ("no-role", "False", "AuthFailed"),
        ("bad-token", "False", "AuthFailed"),
    ] {
        let rs = wait_for(&api, name, reason, vault_synced(status, reason)).await?;
        ensure!(
            is_ready(Some(&rs)),
            "{name}: Ready stays True with VaultSynced {reason}: {:?}",
            rs.status
        );
        let s = current_secret(&secrets, &rs).await?;
        versions.insert(name, (secret_name(&rs)?, value(&s, "token")?));
    }
    ensure!(kv(&bao, &path("keep"))?.1 == json!({"token": versions["keep"].1}));
    // Only a deletion that removes the path waits for the controller: with
    // Retain there is no finalizer (an uninstalled controller never holds a
    // namespace in deletion); with Delete there is.
    for (name, finalizer) in [("keep", false), ("forget", true)] {
        let held = api
            .get(name)
            .await?
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "randomsecret.io/push");
        ensure!(
            held == finalizer,
            "{name}: push finalizer {held}, want {finalizer}"
        );
    }
    // A refused login or token: the connection is not Ready; a denied path
    // is a policy matter of a connection that works.
    let connections = Api::<ClusterVaultConnection>::all(client.clone());
    for c in [&no_role, &bad_token] {
        wait_for(
            &connections,
            c,
            "Ready=False AuthFailed",
            connection_ready("False", "AuthFailed"),
        )
        .await?;
    }
    wait_for(
        &connections,
        &denied,
        "Ready=True",
        connection_ready("True", "Authenticated"),
    )
    .await?;
    for name in ["no-role", "bad-token"] {
        ensure!(
            bao.kv_metadata(&path(name))?.is_none(),
            "{name}: nothing written"
        );
    }
    ensure!(
        kv(&bao, &path("foreign"))? == (1, json!({"owner": "ci-pipeline-value"})),
        "a path of someone else is never written"
    );
    wait_event(&client, &ns.name, "a PathNotManaged Warning", |e| {
        e.reason.as_deref() == Some("PathNotManaged") && e.type_.as_deref() == Some("Warning")
    })
    .await?;

    // Retain: deleted, the path stays.
    api.delete("keep", &DeleteParams::default()).await?;
    wait_deleted(&api, "keep").await?;
    ensure!(
        kv(&bao, &path("keep"))?.1 == json!({"token": versions["keep"].1}),
        "Retain keeps the path"
    );

    // --cascade=orphan: the path and the version Secret stay, even with Delete.
    kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "randomsecret",
        "orphan",
        "--cascade=orphan",
    ])?;
    wait_deleted(&api, "orphan").await?;
    ensure!(
        bao.kv_metadata(&path("orphan"))?.is_some(),
        "an orphaning delete keeps the path"
    );
    ensure!(
        secrets.get_opt(&versions["orphan"].0).await?.is_some(),
        "and the version"
    );

    // Someone else's path: the RandomSecret goes, the path stays untouched.
    api.delete("foreign", &DeleteParams::default()).await?;
    wait_deleted(&api, "foreign").await?;
    ensure!(kv(&bao, &path("foreign"))? == (1, json!({"owner": "ci-pipeline-value"})));

    // A server that no longer answers (nothing listens at the connection's
    // new address): the deletion waits, says why and how to skip; the
    // annotation lets it go, and the path stays.
    connection(
        &client,
        &ns,
        &bao,
        &unreachable,
        json!({"address": "https://127.0.0.1:28229"}),
    )
    .await?;
    api.delete("lost", &DeleteParams::default()).await?;
    let rs = wait_for(
        &api,
        "lost",
        "a waiting deletion",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| condition(rs, "VaultSynced"))
                .is_some_and(|c| c.message.contains("randomsecret.io/skip-push-cleanup"))
        },
    )
    .await?;
    ensure!(rs.metadata.deletion_timestamp.is_some());
    wait_for(
        &connections,
        &unreachable,
        "Ready=False Unreachable",
        connection_ready("False", "Unreachable"),
    )
    .await?;
    api.patch(
        "lost",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"randomsecret.io/skip-push-cleanup": "true"}}}),
        ),
    )
    .await?;
    wait_deleted(&api, "lost").await?;
    ensure!(
        bao.kv_metadata(&path("lost"))?.is_some(),
        "skipping the cleanup keeps the path"
    );

    // The connection is gone: no one can remove the path any more. The
    // deletion goes on, keeps the path and says so.
    delete_connection(&client, &removed).await?;
    api.delete("gone", &DeleteParams::default()).await?;
    wait_deleted(&api, "gone").await?;
    ensure!(
        bao.kv_metadata(&path("gone"))?.is_some(),
        "a path whose connection is gone is kept"
    );
    wait_event(&client, &ns.name, "a VaultPathKept Warning", |e| {
        e.reason.as_deref() == Some("VaultPathKept") && e.type_.as_deref() == Some("Warning")
    })
    .await?;

    // Push removed from the spec: forgotten (finalizer gone), never deleted.
    patch_spec(&api, "forget", json!({"push": null})).await?;
    // The push runner drops the finalizer and VaultSynced; the reconciler
    // observes the new generation: two writers, in either order.
    let rs = wait_for(
        &api,
        "forget",
        "no finalizer, and Ready for the new generation",
        |rs: Option<&RandomSecret>| {
            is_ready(rs)
                && rs.is_some_and(|rs| {
                    rs.metadata
                        .finalizers
                        .iter()
                        .flatten()
                        .all(|f| f != "randomsecret.io/push")
                        && condition(rs, "VaultSynced").is_none()
                })
        },
    )
    .await?;
    ensure!(is_ready(Some(&rs)));
    ensure!(
        bao.kv_metadata(&path("forget"))?.is_some(),
        "a target removed from the spec is forgotten, not deleted"
    );

    // `missing`, `denied`, `elsewhere`, `no-role` and `bad-token` never
    // wrote anything: the namespace's deletion takes them without waiting
    // on a server.
    for c in [
        &conn,
        &denied,
        &elsewhere,
        &unreachable,
        &no_role,
        &bad_token,
    ] {
        delete_connection(&client, c).await?;
    }
    for name in ["missing", "denied", "elsewhere", "no-role", "bad-token"] {
        api.delete(name, &DeleteParams::default()).await?;
        wait_deleted(&api, name).await?;
    }
    ns.delete().await?;
    Ok(())
}

/// A sealed server (`bao operator seal`) and a stopped one (SIGSTOP): the
/// push says Sealed / Unreachable while Ready stays True and other
/// RandomSecrets keep converging, and recovers when the server is back.
#[tokio::test]
async fn push_recovers_from_sealed_and_stopped_server() -> Result<()> {
    let client = client().await?;
    let bao = OpenBao::start(28204)?;
    let ns = TestNamespace::new(&client, "vault-outage").await?;
    let conn = format!("{}-c", ns.name);
    connection(&client, &ns, &bao, &conn, json!({})).await?;
    let api: Api<RandomSecret> = ns.api();
    let spec = json!({"keys": {"k": {"length": 16}}, "rotation": "1",
        "push": {"vault": {"connectionRef": {"name": conn}, "deletionPolicy": "Delete"}}});
    let rs = create_ready(&api, "app", spec).await?;
    wait_for(&api, "app", "VaultSynced", synced_with(secret_name(&rs)?)).await?;
    let path = format!("secret/{}/{}/app", openbao::PREFIX, ns.name);

    for (outage, reason) in [("seal", "Sealed"), ("SIGSTOP", "Unreachable")] {
        match outage {
            "seal" => drop(bao.cli(&["operator", "seal"])?),
            _ => bao.signal("STOP")?,
        }
        let rotation = format!("{outage}-1");
        let v = rotate(&api, "app", &rotation).await?;
        let rs = wait_for(&api, "app", reason, vault_synced("False", reason)).await?;
        ensure!(
            is_ready(Some(&rs)),
            "{outage}: Ready stays True: {:?}",
            rs.status
        );
        // Others keep converging meanwhile.
        let other = format!("other-{}", outage.to_lowercase());
        create_ready(&api, &other, json!({"keys": {"k": {"length": 16}}})).await?;
        match outage {
            "seal" => drop(bao.cli(&["operator", "unseal", &bao.unseal_key()?])?),
            _ => bao.signal("CONT")?,
        }
        let rs = wait_for(&api, "app", "VaultSynced again", synced_with(v.clone())).await?;
        let secrets: Api<Secret> = ns.api();
        let s = current_secret(&secrets, &rs).await?;
        ensure!(
            kv(&bao, &path)?.1 == json!({"k": value(&s, "k")?}),
            "{outage}: the push caught up"
        );
    }
    api.delete("app", &DeleteParams::default()).await?;
    wait_deleted(&api, "app").await?;
    delete_connection(&client, &conn).await?;
    ns.delete().await?;
    Ok(())
}

/// A namespaced VaultConnection: a token from a Secret of its namespace (the
/// token is recorded, so the log check proves it never reaches the log), the
/// CA from a Secret; Kubernetes auth (the controller's identity) is refused
/// by the CRD for a namespaced connection.
#[tokio::test]
async fn namespaced_connection_with_a_token_secret() -> Result<()> {
    let client = client().await?;
    let bao = OpenBao::start(28206)?;
    let ns = TestNamespace::new(&client, "vault-token").await?;
    let token = bao.policy_token()?;
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vault"},
        "stringData": {"token": token, "ca.crt": bao.ca_pem},
    }))?;
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
    let vc = |auth: Value| -> Result<randomsecret::api::connections::VaultConnection> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "VaultConnection",
            "metadata": {"name": "team-vault"},
            "spec": {"address": bao.address, "auth": auth,
                     "ca": {"secretRef": {"name": "vault", "key": "ca.crt"}}},
        }))?)
    };
    let vcs: Api<randomsecret::api::connections::VaultConnection> = ns.api();
    let refused = vcs
        .create(
            &PostParams::default(),
            &vc(json!({"kubernetes": {"role": openbao::ROLE}}))?,
        )
        .await;
    ensure!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("ClusterVaultConnection")),
        "a VaultConnection with Kubernetes auth must be refused: {refused:?}"
    );
    vcs.create(
        &PostParams::default(),
        &vc(json!({"tokenSecretRef": {"name": "vault", "key": "token"}}))?,
    )
    .await?;
    let api: Api<RandomSecret> = ns.api();
    let spec = json!({"keys": {"k": {"length": 16}}, "push": {"vault": {
        "connectionRef": {"kind": "VaultConnection", "name": "team-vault"}, "path": "apps/{name}"}}});
    let rs = create_ready(&api, "svc", spec).await?;
    let rs = wait_for(&api, "svc", "VaultSynced", synced_with(secret_name(&rs)?)).await?;
    let s = current_secret(&ns.api(), &rs).await?;
    let path = format!("secret/{}/{}/apps/svc", openbao::PREFIX, ns.name);
    ensure!(kv(&bao, &path)?.1 == json!({"k": value(&s, "k")?}));
    api.delete("svc", &DeleteParams::default()).await?;
    wait_deleted(&api, "svc").await?;
    ensure!(bao.kv_metadata(&path)?.is_some(), "Retain is the default");
    ns.delete().await?;
    Ok(())
}

/// A controller restart writes nothing: the new process compares every
/// pushed path once and finds it up to date. Needs a controller of its own
/// (run.sh runs it after the shared one stopped).
#[tokio::test]
#[ignore]
async fn push_writes_nothing_after_a_controller_restart() -> Result<()> {
    let client = client().await?;
    let bao = OpenBao::start(28208)?;
    let ns = TestNamespace::new(&client, "vault-restart").await?;
    let conn = format!("{}-r", ns.name);
    connection(&client, &ns, &bao, &conn, json!({})).await?;
    let args = [
        "--service-account-namespace",
        openbao::CONTROLLER_SA.0,
        "--service-account-name",
        openbao::CONTROLLER_SA.1,
    ];
    let controller = ControllerProcess::start("vault", 28210, &args)?;
    let api: Api<RandomSecret> = ns.api();
    let spec = json!({"keys": {"k": {"length": 16}},
        "push": {"vault": {"connectionRef": {"name": conn}, "deletionPolicy": "Delete"}}});
    let rs = create_ready(&api, "app", spec).await?;
    let rs = wait_for(&api, "app", "VaultSynced", synced_with(secret_name(&rs)?)).await?;
    current_secret(&ns.api(), &rs).await?;
    let path = format!("secret/{}/{}/app", openbao::PREFIX, ns.name);
    ensure!(kv(&bao, &path)?.0 == 1);
    controller.terminate()?;

    let controller = ControllerProcess::start("vault", 28210, &args)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let unchanged = "randomsecret_pushes_total{result=\"unchanged\"}";
    while controller.metric(unchanged)?.unwrap_or(0.0) < 1.0 {
        ensure!(
            std::time::Instant::now() < deadline,
            "the restarted controller compared nothing"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let written = controller.metric("randomsecret_pushes_total{result=\"written\"}")?;
    ensure!(
        written.unwrap_or(0.0) == 0.0,
        "a restart wrote: {written:?}"
    );
    ensure!(kv(&bao, &path)?.0 == 1, "a restart wrote a KV version");
    api.delete("app", &DeleteParams::default()).await?;
    wait_deleted(&api, "app").await?;
    ensure!(bao.kv_metadata(&path)?.is_none());
    controller.terminate()?;
    delete_connection(&client, &conn).await?;
    ns.delete().await?;
    Ok(())
}

/// A namespaced VaultConnection (a tenant's input) cannot send the
/// controller anywhere the administrator did not open: an address with a
/// path or '#' is refused by the CRD; one on a loopback address outside
/// --vault-allowed-networks (the shared controller lists 127.0.0.1/32 only)
/// is refused before any connection (a listener there sees none). A
/// ClusterVaultConnection cannot obtain an apiserver credential of the
/// controller (audience of the apiserver: InvalidConnection), nor send its
/// token over http, nor let namespaces share a prefix without saying so.
#[tokio::test]
async fn tenant_addresses_and_the_controllers_identity_are_refused() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "vault-ssrf").await?;
    // A listener on another loopback address: it must never see a connection.
    let listener = std::net::TcpListener::bind("127.0.0.2:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let token: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vault"},
        "stringData": {"token": "s.tenant-token"},
    }))?;
    ns.api::<Secret>()
        .create(&PostParams::default(), &token)
        .await?;
    let vcs: Api<randomsecret::api::connections::VaultConnection> = ns.api();
    let vc = |name: &str,
              address: &str|
     -> Result<randomsecret::api::connections::VaultConnection> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "VaultConnection",
            "metadata": {"name": name},
            "spec": {"address": address, "auth": {"tokenSecretRef": {"name": "vault", "key": "token"}}},
        }))?)
    };
    for address in [
        format!("https://127.0.0.2:{port}/v1/sys/seal#"),
        format!("https://127.0.0.2:{port}?"),
        format!("https://user@127.0.0.2:{port}"),
    ] {
        let refused = vcs
            .create(&PostParams::default(), &vc("bad", &address)?)
            .await;
        ensure!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("no path, query, fragment")),
            "{address} must be refused by the CRD: {refused:?}"
        );
    }
    vcs.create(
        &PostParams::default(),
        &vc("loopback", &format!("https://127.0.0.2:{port}"))?,
    )
    .await?;
    let cvcs = Api::<ClusterVaultConnection>::all(client.clone());
    let cluster = |name: &str, spec: Value| -> Result<ClusterVaultConnection> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "ClusterVaultConnection",
            "metadata": {"name": name}, "spec": spec,
        }))?)
    };
    let apiserver_audience = format!("{}-apiserver-audience", ns.name);
    let http_kubernetes = format!("{}-http-kubernetes", ns.name);
    for (name, spec) in [
        (
            &apiserver_audience,
            json!({"address": format!("https://127.0.0.2:{port}"), "allowedNamespaces": [ns.name],
                   "auth": {"kubernetes": {"role": "r", "audience": "https://kubernetes.default.svc"}}}),
        ),
        (
            &http_kubernetes,
            json!({"address": format!("http://127.0.0.2:{port}"), "allowedNamespaces": [ns.name],
                   "auth": {"kubernetes": {"role": "r"}}}),
        ),
    ] {
        cvcs.patch(
            name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&cluster(name, spec)?),
        )
        .await?;
    }
    let shared = cvcs
        .create(
            &PostParams::default(),
            &cluster(
                "shared-prefix",
                json!({"address": format!("https://127.0.0.2:{port}"), "pathPrefix": "shared",
                       "auth": {"kubernetes": {"role": "r"}}}),
            )?,
        )
        .await;
    ensure!(
        shared
            .as_ref()
            .is_err_and(|e| e.to_string().contains("sharedPrefix")),
        "a prefix without {{namespace}} for every namespace must be refused: {shared:?}"
    );

    let api: Api<RandomSecret> = ns.api();
    for (name, kind, conn) in [
        ("ssrf", "VaultConnection", "loopback".to_string()),
        (
            "audience",
            "ClusterVaultConnection",
            apiserver_audience.clone(),
        ),
        (
            "cleartext",
            "ClusterVaultConnection",
            http_kubernetes.clone(),
        ),
    ] {
        let spec = json!({"keys": {"k": {"length": 16}}, "push": {"vault": {
            "connectionRef": {"kind": kind, "name": conn}}}});
        api.create(&PostParams::default(), &random_secret(name, spec)?)
            .await?;
    }
    for (name, words) in [
        ("ssrf", "may not reach"),
        ("audience", "apiserver"),
        ("cleartext", "https"),
    ] {
        let rs = wait_for(
            &api,
            name,
            "InvalidConnection",
            vault_synced("False", "InvalidConnection"),
        )
        .await?;
        let c = condition(&rs, "VaultSynced").context("VaultSynced")?;
        ensure!(c.message.contains(words), "{name}: {}", c.message);
        ensure!(
            !c.message.contains("127.0.0.2"),
            "{name}: the message names the address: {}",
            c.message
        );
    }
    // Pushes retried meanwhile: still no connection reached the listener.
    tokio::time::sleep(Duration::from_secs(2)).await;
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => anyhow::bail!("the controller connected to 127.0.0.2: {other:?}"),
    }
    for name in ["ssrf", "audience", "cleartext"] {
        api.delete(name, &DeleteParams::default()).await?;
        wait_deleted(&api, name).await?;
    }
    for c in [&apiserver_audience, &http_kubernetes] {
        delete_connection(&client, c).await?;
    }
    ns.delete().await?;
    Ok(())
}

/// A hostile Vault on loopback (plain HTTP, a token from a Secret), one
/// request per connection: `answer` gives the status line and body for a
/// request line, or None for an endless chunked 200.
async fn hostile_vault(
    answer: fn(&str) -> Option<(&'static str, String)>,
) -> Result<(String, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let text = String::from_utf8_lossy(&head).to_string();
                let line = text.lines().next().unwrap_or_default().to_string();
                match answer(&line) {
                    Some((status, body)) => {
                        let reply = format!(
                            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = s.write_all(reply.as_bytes()).await;
                    }
                    None => {
                        let _ = s
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                            .await;
                        let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                        while s.write_all(chunk.as_bytes()).await.is_ok() {}
                    }
                }
            });
        }
    });
    Ok((format!("http://{addr}"), served))
}

/// The process's resident memory now, in MiB (e2e::process reads /proc).
fn rss_mib(pid: u32) -> Result<u64> {
    Ok(randomsecret_e2e::process::rss(pid)? >> 20)
}

/// Hostile servers: one answers with a body without end (the controller
/// reads at most 4 MiB: ReplyTooLarge, its memory stays small); a shared
/// ClusterVaultConnection answers tenant A's paths with 500 (A gets
/// UnexpectedStatus) and must not hold the connection down for tenant B,
/// whose push goes through at once. A controller of its own, with
/// --allow-http-vault and 127.0.0.1/32 open to namespaced connections
/// (run.sh runs it after the shared one stopped).
#[tokio::test]
#[ignore]
async fn hostile_servers_cannot_exhaust_memory_or_hold_a_shared_connection_down() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "vault-hostile").await?;
    let (endless, _) = hostile_vault(|line| {
        line.contains("lookup-self")
            .then(|| ("200 OK", "{}".to_string()))
    })
    .await?;
    let (shared, served) = hostile_vault(|line| {
        if line.contains("/tenant-a/") {
            return Some((
                "500 Internal Server Error",
                "<html>tenant-a-body</html>".into(),
            ));
        }
        Some(match line.split(' ').next() {
            Some("GET") => ("404 Not Found", String::new()),
            Some("POST") if line.contains("/v1/secret/data/") => {
                ("200 OK", r#"{"data":{"version":1}}"#.into())
            }
            _ => ("204 No Content", String::new()),
        })
    })
    .await?;
    let token: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vault"},
        "stringData": {"token": "s.hostile-test-token"},
    }))?;
    ns.api::<Secret>()
        .create(&PostParams::default(), &token)
        .await?;
    let vc: randomsecret::api::connections::VaultConnection = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "VaultConnection",
        "metadata": {"name": "endless"},
        "spec": {"address": endless, "timeoutSeconds": 30,
                 "auth": {"tokenSecretRef": {"name": "vault", "key": "token"}}},
    }))?;
    ns.api::<randomsecret::api::connections::VaultConnection>()
        .create(&PostParams::default(), &vc)
        .await?;
    let conn = format!("{}-shared", ns.name);
    let c: ClusterVaultConnection = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "ClusterVaultConnection",
        "metadata": {"name": conn},
        "spec": {"address": shared, "timeoutSeconds": 3, "pathPrefix": "{namespace}",
                 "auth": {"tokenSecretRef": {"name": "vault", "namespace": ns.name, "key": "token"}}},
    }))?;
    Api::<ClusterVaultConnection>::all(client.clone())
        .patch(&conn, &PatchParams::apply("e2e").force(), &Patch::Apply(&c))
        .await?;
    let controller = ControllerProcess::start(
        "vault",
        28212,
        &[
            "--allow-http-vault",
            "--vault-allowed-networks",
            "127.0.0.1/32",
        ],
    )?;
    let pid = controller.child.id();
    let before = rss_mib(pid)?;
    let api: Api<RandomSecret> = ns.api();
    let push = |kind: &str, name: &str, path: &str| {
        json!({"keys": {"k": {"length": 16}}, "push": {"vault": {
            "connectionRef": {"kind": kind, "name": name}, "path": path}}})
    };
    api.create(
        &PostParams::default(),
        &random_secret("huge", push("VaultConnection", "endless", "{name}"))?,
    )
    .await?;
    let rs = wait_for(
        &api,
        "huge",
        "ReplyTooLarge",
        vault_synced("False", "ReplyTooLarge"),
    )
    .await?;
    let after = rss_mib(pid)?;
    eprintln!("the controller's RSS: {before} MiB before the endless reply, {after} MiB after");
    ensure!(
        after < before + 64,
        "the controller's RSS grew from {before} MiB to {after} MiB"
    );
    ensure!(is_ready(Some(&rs)));

    // Tenant A's refused write, then tenant B's push through the same
    // connection at once (the hold-down lasted 10 s).
    api.create(
        &PostParams::default(),
        &random_secret(
            "a",
            push("ClusterVaultConnection", &conn, "tenant-a/{name}"),
        )?,
    )
    .await?;
    let rs = wait_for(
        &api,
        "a",
        "UnexpectedStatus",
        vault_synced("False", "UnexpectedStatus"),
    )
    .await?;
    let message = &condition(&rs, "VaultSynced")
        .context("VaultSynced")?
        .message;
    ensure!(!message.contains("tenant-a-body"), "{message}");
    let served_before_b = served.load(std::sync::atomic::Ordering::SeqCst);
    let started = std::time::Instant::now();
    api.create(
        &PostParams::default(),
        &random_secret(
            "b",
            push("ClusterVaultConnection", &conn, "tenant-b/{name}"),
        )?,
    )
    .await?;
    wait_for(&api, "b", "Synced", vault_synced("True", "Synced")).await?;
    ensure!(
        started.elapsed() < Duration::from_secs(8),
        "tenant B waited {:?}: tenant A's failure held the shared connection down",
        started.elapsed()
    );
    ensure!(served.load(std::sync::atomic::Ordering::SeqCst) > served_before_b);
    let after = rss_mib(pid)?;
    ensure!(
        after < before + 64,
        "the controller's RSS grew from {before} MiB to {after} MiB"
    );
    for name in ["huge", "a", "b"] {
        api.delete(name, &DeleteParams::default()).await?;
        wait_deleted(&api, name).await?;
    }
    controller.terminate()?;
    delete_connection(&client, &conn).await?;
    ns.delete().await?;
    Ok(())
}
