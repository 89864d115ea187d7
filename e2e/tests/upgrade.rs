//! Upgrading from a release before proofs of creation: its versions carry no
//! `randomsecret.io/proof` annotation. The first reconcile signs the one the
//! status records as live (values unchanged, no new version), and leaves a
//! look-alike the status does not record untouched, and records how the live
//! one's values were generated, so the first edit after the upgrade carries
//! them over. Runs its own controller
//! (the state must be set up while no controller runs), so `e2e/run.sh` runs
//! it (`--ignored`) after stopping the shared one.

use anyhow::{Context, Result, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;

const PROOF: &str = "randomsecret.io/proof";
const LINEAGE: &str = "randomsecret.io/lineage";

/// A version Secret as a release before proofs made it (no proof annotation).
fn unsigned(name: &str, owner: &str, hash: &str, value: &str) -> Result<Secret> {
    let mut s: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {
            "randomsecret.io/name": owner, "randomsecret.io/hash": hash,
            "app.kubernetes.io/managed-by": "randomsecret"}},
        "immutable": true,
    }))?;
    s.data = Some(
        [(
            "password".to_string(),
            ByteString(value.as_bytes().to_vec()),
        )]
        .into(),
    );
    Ok(s)
}

#[tokio::test]
#[ignore = "runs its own controller: e2e/run.sh runs it after stopping the shared one"]
async fn versions_from_before_proofs_are_signed_once_and_look_alikes_left_alone() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "upgrade").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();

    // The old release's state: a RandomSecret, its current version, and the
    // status it wrote (before status.versions[].uid existed).
    let spec = json!({"length": 20, "rotation": "1"});
    let manifest = serde_json::to_string(&random_secret("db", spec.clone())?)?;
    let name = run("randomsecret", &["name"], Some(&manifest))?
        .trim()
        .to_string();
    let hash = name.rsplit('-').next().context("hash")?.to_string();
    api.create(&PostParams::default(), &random_secret("db", spec)?)
        .await?;
    let old_value = "from-the-old-release-0123456789";
    let live = secrets
        .create(
            &PostParams::default(),
            &unsigned(&name, "db", &hash, old_value)?,
        )
        .await?;
    let created = live.creation_timestamp().context("creationTimestamp")?;
    let status = json!({"status": {"secretName": name, "versions": [
        {"name": name, "hash": hash, "created": created, "state": "current", "referencedBy": []}]}});
    api.patch_status("db", &PatchParams::default(), &Patch::Merge(status))
        .await?;
    // A look-alike: labelled as a version of db, never recorded by it.
    let look_alike_name = format!("db-{}", "b".repeat(10));
    secrets
        .create(
            &PostParams::default(),
            &unsigned(
                &look_alike_name,
                "db",
                &"b".repeat(10),
                "planted-value-0123456789",
            )?,
        )
        .await?;

    let controller = ControllerProcess::start("upgrade", 18140, &[])?;
    let rs = wait_for(&api, "db", "Ready", is_ready).await?;
    ensure!(
        rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(name.as_str()),
        "a new version was made instead of keeping {name}"
    );
    let signed = wait_for(&secrets, &name, "signed", |s: Option<&Secret>| {
        s.is_some_and(|s| s.annotations().contains_key(PROOF))
    })
    .await?;
    ensure!(signed.uid() == live.uid(), "not the same Secret");
    ensure!(signed.data == live.data, "values changed while signing");
    // The status now records it by uid.
    let rs = wait_for(&api, "db", "uid recorded", |r: Option<&RandomSecret>| {
        r.and_then(|r| r.status.as_ref())
            .is_some_and(|s| s.versions.iter().any(|v| v.name == name && v.uid.is_some()))
    })
    .await?;
    ensure!(
        rs.status.as_ref().unwrap().versions.len() == 1,
        "{:?}",
        rs.status
    );

    let planted = secrets.get(&look_alike_name).await?;
    ensure!(
        !planted.annotations().contains_key(PROOF) && planted.owner_references().is_empty(),
        "the look-alike was signed or adopted"
    );
    wait_event(&client, &ns.name, "UnprovenSecret", |e| {
        e.reason.as_deref() == Some("UnprovenSecret")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains(&look_alike_name))
    })
    .await?;

    // It also gets what this release adds to every version: the record of
    // how its values were generated, and deletion protection's finalizer.
    let stamped = wait_for(
        &secrets,
        &name,
        "record and finalizer",
        |s: Option<&Secret>| {
            s.is_some_and(|s| {
                s.annotations().contains_key(LINEAGE)
                    && s.finalizers().iter().any(|f| f == "randomsecret.io/in-use")
            })
        },
    )
    .await?;
    ensure!(stamped.data == live.data, "values changed while recording");
    // So the first edit after the upgrade carries the old release's value
    // over instead of generating a new one.
    let edit = json!({"spec": {"static": {"user": "app"}}});
    api.patch("db", &PatchParams::default(), &Patch::Merge(edit))
        .await?;
    let rs = wait_for(&api, "db", "a new version", |r: Option<&RandomSecret>| {
        is_ready(r)
            && r.and_then(|r| r.status.as_ref())
                .and_then(|s| s.secret_name.as_deref())
                .is_some_and(|n| n != name)
    })
    .await?;
    let next = rs.status.as_ref().unwrap().secret_name.clone().unwrap();
    let next = secrets.get(&next).await?;
    let value = next.data.as_ref().and_then(|d| d.get("password"));
    ensure!(
        value.map(|v| v.0.as_slice()) == Some(old_value.as_bytes()),
        "the first edit after the upgrade gave the password a new value"
    );
    ensure!(
        !rs.status
            .as_ref()
            .unwrap()
            .conditions
            .iter()
            .any(|c| c.type_ == "CarriedOver"),
        "{:?}",
        rs.status
    );

    // Deleted while the controller runs, so it lets go of the finalizers.
    ns.delete().await?;
    controller.terminate()
}
