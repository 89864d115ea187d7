//! RandomSecrets: building, creating, patching and rotating them, and their
//! status conditions.

use crate::cluster::wait_for;
use crate::values::record_values;
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as MetaCondition;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use serde_json::{Value, json};

pub fn random_secret(name: &str, spec: Value) -> Result<RandomSecret> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": name}, "spec": spec,
    }))?)
}

pub fn condition<'a>(rs: &'a RandomSecret, type_: &str) -> Option<&'a MetaCondition> {
    rs.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// Ready=True for the current generation.
/// The entry of `status.versions` for Secret `secret`, if listed.
pub fn version_status<'a>(
    rs: &'a RandomSecret,
    secret: &str,
) -> Option<&'a randomsecret::api::VersionStatus> {
    rs.status
        .as_ref()?
        .versions
        .iter()
        .find(|v| v.name == secret)
}

pub fn is_ready(rs: Option<&RandomSecret>) -> bool {
    rs.is_some_and(|rs| {
        rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation
            && condition(rs, "Ready").is_some_and(|c| c.status == "True")
    })
}

/// Ready=False with `reason` for the current generation.
pub fn not_ready_because(reason: &'static str) -> impl Fn(Option<&RandomSecret>) -> bool {
    move |rs| {
        rs.is_some_and(|rs| {
            rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation
                && condition(rs, "Ready").is_some_and(|c| c.status == "False" && c.reason == reason)
        })
    }
}

pub async fn create_ready(
    api: &Api<RandomSecret>,
    name: &str,
    spec: Value,
) -> Result<RandomSecret> {
    api.create(&PostParams::default(), &random_secret(name, spec)?)
        .await?;
    wait_for(api, name, "Ready", is_ready).await
}

/// The Secret of the current version, its values recorded for the log check.
pub async fn current_secret(secrets: &Api<Secret>, rs: &RandomSecret) -> Result<Secret> {
    let name = rs
        .status
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .context("status.secretName")?;
    let s = secrets.get(&name).await?;
    record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    Ok(s)
}

/// Merge-patches a RandomSecret's spec (without waiting for anything).
pub async fn patch_spec(api: &Api<RandomSecret>, name: &str, spec: Value) -> Result<()> {
    let patch = kube::api::Patch::Merge(json!({ "spec": spec }));
    api.patch(name, &kube::api::PatchParams::default(), &patch)
        .await?;
    Ok(())
}

/// Creates a RandomSecret, waits until Ready and returns its current version's Secret.
pub async fn first_version(
    api: &Api<RandomSecret>,
    secrets: &Api<Secret>,
    name: &str,
    spec: Value,
) -> Result<Secret> {
    current_secret(secrets, &create_ready(api, name, spec).await?).await
}

/// Sets `spec.rotation`, waits until Ready and returns the new current Secret name.
pub async fn rotate(api: &Api<RandomSecret>, name: &str, rotation: &str) -> Result<String> {
    patch_spec(api, name, json!({ "rotation": rotation })).await?;
    let rs = wait_for(api, name, "Ready after rotation", is_ready).await?;
    rs.status
        .and_then(|s| s.secret_name)
        .context("status.secretName")
}

/// The kinds of a Secret's owners, in order.
pub async fn owner_kinds(secrets: &Api<Secret>, name: &str) -> Result<Vec<String>> {
    Ok(secrets
        .get(name)
        .await?
        .owner_references()
        .iter()
        .map(|o| o.kind.clone())
        .collect())
}
