//! ClusterRandomSecrets (issue 31): one RandomSecret kept in every selected
//! namespace, by the shared controller on the real control plane.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::Condition;
use kube::{Api, Client, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret::api::cluster::{ClusterRandomSecret, LABEL_CLUSTER};
use randomsecret_e2e::workloads::{deployment, point_at, rolled_out_on_all};
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A label value of this test run alone, so that no other test's
/// namespace is selected.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{nanos:x}")
}

async fn labelled(client: &Client, prefix: &str, labels: Value) -> Result<TestNamespace> {
    let ns = TestNamespace::new(client, prefix).await?;
    relabel(client, &ns.name, labels).await?;
    Ok(ns)
}

async fn relabel(client: &Client, ns: &str, labels: Value) -> Result<()> {
    Api::<Namespace>::all(client.clone())
        .patch(
            ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": labels}})),
        )
        .await?;
    Ok(())
}

fn cluster_rs(name: &str, spec: Value) -> Result<ClusterRandomSecret> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "ClusterRandomSecret",
        "metadata": {"name": name}, "spec": spec,
    }))?)
}

fn ready_reason(c: &ClusterRandomSecret) -> Option<(String, String)> {
    let s = c.status.as_ref()?;
    (s.observed_generation == c.metadata.generation).then_some(())?;
    let r = s.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some((r.status.clone(), r.reason.clone()))
}

/// The ClusterRandomSecret's status says `reason` and provisions exactly `namespaces`.
fn provisions(
    reason: &'static str,
    namespaces: Vec<String>,
) -> impl Condition<ClusterRandomSecret> {
    move |c: Option<&ClusterRandomSecret>| {
        c.is_some_and(|c| {
            ready_reason(c).is_some_and(|(_, r)| r == reason)
                && c.status.as_ref().is_some_and(|s| {
                    s.provisioned_namespaces.iter().collect::<BTreeSet<_>>()
                        == namespaces.iter().collect::<BTreeSet<_>>()
                })
        })
    }
}

async fn password(client: &Client, ns: &str, name: &str) -> Result<String> {
    let api: Api<RandomSecret> = Api::namespaced(client.clone(), ns);
    let rs = wait_for(&api, name, "Ready", is_ready).await?;
    let secret = current_secret(&Api::<Secret>::namespaced(client.clone(), ns), &rs).await?;
    value(&secret, "password")
}

#[tokio::test]
async fn a_clusterrandomsecret_keeps_a_randomsecret_in_each_selected_namespace() -> Result<()> {
    let client = client().await?;
    let tenant = unique("tenant");
    let name = unique("crs");
    let sel = json!({"e2e.randomsecret.io/tenant": tenant});
    let a = labelled(&client, "crs-a", sel.clone()).await?;
    let b = labelled(&client, "crs-b", sel.clone()).await?;
    let c = labelled(&client, "crs-c", sel.clone()).await?;
    // A namespace with a RandomSecret of that name that is not ours, and
    // one with a forgery: our label on someone else's RandomSecret.
    let foreign = labelled(&client, "crs-foreign", sel.clone()).await?;
    let forged = labelled(&client, "crs-forged", sel.clone()).await?;
    let theirs = json!({"keys": {"password": {"length": 12}}});
    foreign
        .api::<RandomSecret>()
        .create(
            &PostParams::default(),
            &random_secret(&name, theirs.clone())?,
        )
        .await?;
    let mut fake = random_secret(&name, theirs.clone())?;
    fake.labels_mut().insert(LABEL_CLUSTER.into(), name.clone());
    fake.annotations_mut()
        .insert("randomsecret.io/proof".into(), "v1.00ff".into());
    fake.annotations_mut()
        .insert("randomsecret.io/template".into(), "00".into());
    forged
        .api::<RandomSecret>()
        .create(&PostParams::default(), &fake)
        .await?;

    let crs_api = Api::<ClusterRandomSecret>::all(client.clone());
    let spec = json!({
        "namespaceSelector": {"matchLabels": sel},
        "template": {
            "metadata": {"labels": {"team": "payments"}},
            "spec": {"keys": {"password": {"length": 24}}},
        },
    });
    crs_api
        .create(&PostParams::default(), &cluster_rs(&name, spec.clone())?)
        .await?;
    let three = vec![a.name.clone(), b.name.clone(), c.name.clone()];
    let got = wait_for(
        &crs_api,
        &name,
        "provisioning a, b, c with two name conflicts",
        provisions("NameConflict", three.clone()),
    )
    .await?;
    let failed: BTreeSet<_> = got
        .status
        .as_ref()
        .context("status")?
        .failed_namespaces
        .iter()
        .map(|f| (f.namespace.clone(), f.reason.clone()))
        .collect();
    ensure!(
        failed
            == BTreeSet::from([
                (foreign.name.clone(), "NameConflict".to_string()),
                (forged.name.clone(), "NameConflict".to_string()),
            ]),
        "{failed:?}"
    );
    // Each selected namespace: its own RandomSecret, labelled, Ready, with
    // values of its own (values: PerNamespace).
    let mut values = BTreeSet::new();
    for ns in &three {
        let api: Api<RandomSecret> = Api::namespaced(client.clone(), ns);
        let rs = api.get(&name).await?;
        ensure!(
            rs.labels().get(LABEL_CLUSTER) == Some(&name),
            "{ns}: {:?}",
            rs.labels()
        );
        ensure!(rs.labels().get("team").map(String::as_str) == Some("payments"));
        values.insert(password(&client, ns, &name).await?);
    }
    ensure!(values.len() == 3, "each namespace has values of its own");
    wait_for(
        &crs_api,
        &name,
        "Ready=False NameConflict with a, b, c Ready",
        |c: Option<&ClusterRandomSecret>| {
            c.and_then(ready_reason) == Some(("False".into(), "NameConflict".into()))
                && c.and_then(|c| c.status.as_ref())
                    .is_some_and(|s| s.failed_namespaces.len() == 2)
        },
    )
    .await?;
    // Neither the foreign RandomSecret nor the forgery was touched.
    for ns in [&foreign, &forged] {
        let rs = ns.api::<RandomSecret>().get(&name).await?;
        ensure!(
            rs.metadata.generation == Some(1) && !rs.labels().contains_key("team"),
            "{}: left alone: {rs:?}",
            ns.name
        );
    }
    let theirs_now = foreign.api::<RandomSecret>().get(&name).await?;
    ensure!(
        !theirs_now.labels().contains_key(LABEL_CLUSTER),
        "{:?}",
        theirs_now.labels()
    );
    let forgery = forged.api::<RandomSecret>().get(&name).await?;
    let note = |k: &str| forgery.annotations().get(k).cloned();
    ensure!(
        note("randomsecret.io/proof").as_deref() == Some("v1.00ff")
            && note("randomsecret.io/template").as_deref() == Some("00"),
        "the forgery keeps its own annotations: {:?}",
        forgery.annotations()
    );

    // A namespace made later is provisioned within seconds.
    let later = labelled(&client, "crs-later", sel.clone()).await?;
    let mut four = three.clone();
    four.push(later.name.clone());
    wait_for(
        &crs_api,
        &name,
        "provisioning the later namespace",
        provisions("NameConflict", four.clone()),
    )
    .await?;
    password(&client, &later.name, &name).await?;

    // Someone edits a stamped RandomSecret (a field that makes no new
    // version): it is put back to the template.
    let a_api: Api<RandomSecret> = a.api();
    let before = password(&client, &a.name, &name).await?;
    patch_spec(&a_api, &name, json!({"history": 3})).await?;
    wait_for(
        &a_api,
        &name,
        "put back to the template",
        |rs: Option<&RandomSecret>| {
            rs.is_some_and(|rs| rs.spec.history.is_none() && rs.metadata.generation >= Some(3))
        },
    )
    .await?;
    ensure!(
        password(&client, &a.name, &name).await? == before,
        "put back to the same version"
    );

    // A template change reaches every namespace.
    let mut changed = spec.clone();
    changed["template"]["metadata"]["labels"]["team"] = "billing".into();
    crs_api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": changed})),
        )
        .await?;
    for ns in &four {
        let api: Api<RandomSecret> = Api::namespaced(client.clone(), ns);
        wait_for(
            &api,
            &name,
            "the new template label",
            |rs: Option<&RandomSecret>| {
                rs.is_some_and(|rs| rs.labels().get("team").map(String::as_str) == Some("billing"))
            },
        )
        .await?;
    }

    // Relabelled away under deletionPolicy: Orphan (the default): left in
    // place, no longer provisioned.
    relabel(
        &client,
        &b.name,
        json!({"e2e.randomsecret.io/tenant": null}),
    )
    .await?;
    let without_b: Vec<String> = four.iter().filter(|n| **n != b.name).cloned().collect();
    wait_for(
        &crs_api,
        &name,
        "b no longer provisioned",
        provisions("NameConflict", without_b.clone()),
    )
    .await?;
    ensure!(
        b.api::<RandomSecret>().get_opt(&name).await?.is_some(),
        "b's RandomSecret stays"
    );

    // Deleted under Orphan: every stamped RandomSecret stays.
    crs_api.delete(&name, &DeleteParams::default()).await?;
    wait_deleted(&crs_api, &name).await?;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    for ns in &four {
        let api: Api<RandomSecret> = Api::namespaced(client.clone(), ns);
        ensure!(
            api.get_opt(&name).await?.is_some(),
            "{ns}: orphaned, not deleted"
        );
    }
    for ns in [a, b, c, foreign, forged, later] {
        ns.delete().await?;
    }
    Ok(())
}

/// Every value of the version a namespace's RandomSecret is Ready on, and its name.
async fn version_data(client: &Client, ns: &str, name: &str) -> Result<(String, Value)> {
    let api: Api<RandomSecret> = Api::namespaced(client.clone(), ns);
    let rs = wait_for(&api, name, "Ready", is_ready).await?;
    let secret = current_secret(&Api::<Secret>::namespaced(client.clone(), ns), &rs).await?;
    let secret_name = secret.metadata.name.clone().context("name")?;
    Ok((secret_name, serde_json::to_value(&secret.data)?))
}

/// Waits until each namespace's RandomSecret is Ready on a version other
/// than `not`, and returns the version name and data of each.
async fn versions_past(
    client: &Client,
    namespaces: &[String],
    name: &str,
    not: Option<&str>,
) -> Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for ns in namespaces {
        let api: Api<RandomSecret> = Api::namespaced(client.clone(), ns);
        let not = not.map(str::to_string);
        wait_for(
            &api,
            name,
            "Ready on a new version",
            move |rs: Option<&RandomSecret>| {
                is_ready(rs)
                    && rs
                        .and_then(|r| r.status.as_ref())
                        .and_then(|s| s.secret_name.as_deref())
                        .is_some_and(|n| Some(n) != not.as_deref())
            },
        )
        .await?;
        out.push(version_data(client, ns, name).await?);
    }
    Ok(out)
}

#[tokio::test]
async fn shared_values_are_the_same_in_every_namespace_and_each_rolls_out_onto_them() -> Result<()>
{
    let client = client().await?;
    let tenant = unique("tenant");
    let name = unique("crss");
    let sel = json!({"e2e.randomsecret.io/tenant": tenant});
    let a = labelled(&client, "crss-a", sel.clone()).await?;
    let b = labelled(&client, "crss-b", sel.clone()).await?;
    let c = labelled(&client, "crss-c", sel.clone()).await?;
    let crs_api = Api::<ClusterRandomSecret>::all(client.clone());
    let template = json!({
        "keys": {"password": {"length": 32}, "apiKey": {"length": 48, "charset": "hex"}},
        "static": {"username": "app"},
    });
    let spec = json!({
        "namespaceSelector": {"matchLabels": sel},
        "values": "Shared",
        "template": {"spec": template},
    });
    crs_api
        .create(&PostParams::default(), &cluster_rs(&name, spec.clone())?)
        .await?;
    let three = vec![a.name.clone(), b.name.clone(), c.name.clone()];
    wait_for(
        &crs_api,
        &name,
        "Ready with a, b and c",
        provisions("Provisioned", three.clone()),
    )
    .await?;
    let first = versions_past(&client, &three, &name, None).await?;
    // The same name everywhere, and the same values: made once, copied.
    ensure!(
        first.iter().all(|v| v == &first[0]),
        "every namespace holds the same version, with the same values: {:?}",
        first.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    let (version, _) = first[0].clone();
    // The name the CLI, the KRM function and the Helm helper compute offline.
    let manifest = serde_json::to_string(&cluster_rs(&name, spec.clone())?)?;
    let offline = randomsecret::gitops::manifests::versioned_names(&manifest)?;
    ensure!(
        offline == [version.clone()],
        "offline {offline:?}, in the cluster {version}"
    );
    for ns in &three {
        let stamped = Api::<RandomSecret>::namespaced(client.clone(), ns)
            .get(&name)
            .await?;
        ensure!(
            stamped
                .annotations()
                .get("randomsecret.io/values")
                .map(String::as_str)
                == Some("Shared"),
            "{ns}: {:?}",
            stamped.annotations()
        );
    }

    // A pod in each namespace reads it, through a Deployment rollout.
    for ns in &three {
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), ns);
        deployments
            .create(&PostParams::default(), &deployment("app", &version)?)
            .await?;
        wait_for(
            &deployments,
            "app",
            "rolled out",
            rolled_out_on_all(&[&version]),
        )
        .await?;
    }

    // A forgery outside the selection: a RandomSecret of the same name and
    // spec carrying a's stamp label and annotations (the proof of a) gets
    // values of its own, never the shared ones.
    let outsider = TestNamespace::new(&client, "crss-outsider").await?;
    let a_rs = a.api::<RandomSecret>().get(&name).await?;
    let mut fake = random_secret(&name, template.clone())?;
    fake.labels_mut().insert(LABEL_CLUSTER.into(), name.clone());
    for k in [
        "randomsecret.io/template",
        "randomsecret.io/values",
        "randomsecret.io/proof",
    ] {
        let v = a_rs
            .annotations()
            .get(k)
            .context("stamp annotation")?
            .clone();
        fake.annotations_mut().insert(k.into(), v);
    }
    outsider
        .api::<RandomSecret>()
        .create(&PostParams::default(), &fake)
        .await?;
    let (outsider_version, outsider_data) = version_data(&client, &outsider.name, &name).await?;
    ensure!(outsider_version == version, "same spec, same name");
    ensure!(
        outsider_data["password"] != first[0].1["password"]
            && outsider_data["apiKey"] != first[0].1["apiKey"],
        "a forged claim gets no shared values"
    );

    // A rotation: one new version, the same in every namespace, new values.
    let mut rotated = spec.clone();
    rotated["template"]["spec"]["rotation"] = "2".into();
    crs_api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": rotated})),
        )
        .await?;
    let second = versions_past(&client, &three, &name, Some(&version)).await?;
    ensure!(
        second.iter().all(|v| v == &second[0]),
        "rotated alike everywhere"
    );
    let (next, next_data) = second[0].clone();
    ensure!(
        next_data["password"] != first[0].1["password"]
            && next_data["apiKey"] != first[0].1["apiKey"],
        "a rotation makes new values"
    );
    for ns in &three {
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(client.clone(), ns);
        point_at(&deployments, "app", &next, "2").await?;
        wait_for(
            &deployments,
            "app",
            "rolled out again",
            rolled_out_on_all(&[&next]),
        )
        .await?;
        // The version the old ReplicaSet still references stays.
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        ensure!(
            secrets.get_opt(&version).await?.is_some(),
            "{ns}: the previous version stays for a rollback"
        );
    }

    // A namespace selected later copies the current version.
    let later = labelled(&client, "crss-later", sel.clone()).await?;
    let mut four = three.clone();
    four.push(later.name.clone());
    wait_for(
        &crs_api,
        &name,
        "Ready with the later namespace",
        provisions("Provisioned", four),
    )
    .await?;
    ensure!(
        version_data(&client, &later.name, &name).await? == second[0],
        "the later namespace holds the shared version"
    );

    crs_api.delete(&name, &DeleteParams::default()).await?;
    wait_deleted(&crs_api, &name).await?;
    for ns in [a, b, c, later, outsider] {
        ns.delete().await?;
    }
    Ok(())
}

#[tokio::test]
async fn under_deletion_policy_delete_unselected_and_deleted_mean_gone() -> Result<()> {
    let client = client().await?;
    let tenant = unique("tenant");
    let name = unique("crsd");
    let sel = json!({"e2e.randomsecret.io/tenant": tenant});
    let a = labelled(&client, "crsd-a", sel.clone()).await?;
    let b = TestNamespace::new(&client, "crsd-b").await?;
    let crs_api = Api::<ClusterRandomSecret>::all(client.clone());
    let spec = json!({
        "namespaceSelector": {"matchLabels": sel},
        "namespaces": [b.name],
        "deletionPolicy": "Delete",
        "template": {"spec": {"keys": {"password": {"length": 20}}}},
    });
    crs_api
        .create(&PostParams::default(), &cluster_rs(&name, spec)?)
        .await?;
    let both = vec![a.name.clone(), b.name.clone()];
    wait_for(
        &crs_api,
        &name,
        "Ready with a and b",
        provisions("Provisioned", both),
    )
    .await?;
    let owned = a.api::<RandomSecret>().get(&name).await?;
    ensure!(
        owned
            .owner_references()
            .iter()
            .any(|o| o.kind == "ClusterRandomSecret" && o.controller == Some(true)),
        "owned by its ClusterRandomSecret under Delete: {:?}",
        owned.owner_references()
    );
    // Unselected: deleted.
    relabel(
        &client,
        &a.name,
        json!({"e2e.randomsecret.io/tenant": null}),
    )
    .await?;
    wait_deleted(&a.api::<RandomSecret>(), &name).await?;
    wait_for(
        &crs_api,
        &name,
        "Ready with b",
        provisions("Provisioned", vec![b.name.clone()]),
    )
    .await?;
    // Deleted: the garbage collector deletes what it owns.
    crs_api.delete(&name, &DeleteParams::default()).await?;
    wait_deleted(&b.api::<RandomSecret>(), &name).await?;
    a.delete().await?;
    b.delete().await?;
    Ok(())
}

#[tokio::test]
async fn the_schema_refuses_a_clusterrandomsecret_that_selects_nothing() -> Result<()> {
    let client = client().await?;
    let crs_api = Api::<ClusterRandomSecret>::all(client.clone());
    let e = crs_api
        .create(
            &PostParams::default(),
            &cluster_rs(
                &unique("crsx"),
                json!({"template": {"spec": {"keys": {"p": {"length": 8}}}}}),
            )?,
        )
        .await
        .expect_err("refused");
    ensure!(e.to_string().contains("select namespaces"), "{e}");
    // The example is valid (a server-side dry run: nothing is created).
    let example = repo_root().join("examples/cluster/cluster-randomsecret.yaml");
    let out = kubectl(&[
        "apply",
        "--dry-run=server",
        "-f",
        example.to_str().context("path")?,
    ])?;
    ensure!(
        out.contains("clusterrandomsecret.randomsecret.io/db-password created"),
        "{out}"
    );
    Ok(())
}

#[tokio::test]
async fn a_selector_the_apiserver_takes_but_no_one_can_read_is_reported() -> Result<()> {
    let client = client().await?;
    let crs_api = Api::<ClusterRandomSecret>::all(client.clone());
    let name = unique("crsbad");
    let spec = json!({
        "namespaceSelector": {"matchExpressions": [{"key": "tenant", "operator": "Near"}]},
        "template": {"spec": {"keys": {"p": {"length": 8}}}},
    });
    crs_api
        .create(&PostParams::default(), &cluster_rs(&name, spec)?)
        .await?;
    let got = wait_for(
        &crs_api,
        &name,
        "Ready=False InvalidSelector",
        |c: Option<&ClusterRandomSecret>| {
            c.and_then(ready_reason) == Some(("False".into(), "InvalidSelector".into()))
        },
    )
    .await?;
    let ready = got
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .context("Ready")?;
    ensure!(
        ready.message.starts_with("spec.namespaceSelector: "),
        "{}",
        ready.message
    );
    crs_api.delete(&name, &DeleteParams::default()).await?;
    Ok(())
}
