//! `randomsecret rotate NAME`: a new `spec.rotation` token, sent to the
//! cluster as a merge patch, or printed (`--print`) as the change to commit
//! for GitOps users (a YAML fragment that is also a merge patch).

use crate::api::RandomSecret;
use crate::version::Version;
use anyhow::{Context as _, bail};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Field manager of the CLI's writes.
pub const MANAGER: &str = concat!(crate::api::project!(), "-cli");

/// A new token: the time, to the second (readable in a diff, and new unless
/// two rotations happen in one second; `--to` sets one by hand). Compact
/// ISO 8601, which no YAML reader takes for a timestamp or a number.
pub fn token(now: Timestamp) -> String {
    now.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// The merge patch that rotates.
pub fn patch(token: &str) -> Value {
    json!({ "spec": { "rotation": token } })
}

/// `--print`: the patch as YAML, to commit in the manifest or give to
/// `kubectl patch --type merge --patch-file`.
pub fn print(token: &str) -> String {
    crate::gitops::yaml::write(&patch(token)).expect("a patch serializes")
}

/// Rotates `name` in `namespace` to `token`. Returns the old token and the
/// new version's name (None with rotateEvery: the controller names it).
pub async fn rotate(
    client: &Client,
    namespace: &str,
    name: &str,
    token: &str,
) -> anyhow::Result<(Option<String>, Option<String>)> {
    let api: Api<RandomSecret> = Api::namespaced(client.clone(), namespace);
    let before = api
        .get_opt(name)
        .await
        .context("reading the RandomSecret")?
        .with_context(|| format!("RandomSecret {name} not found in namespace {namespace}"))?;
    let old = before.spec.rotation.clone();
    if old.as_deref() == Some(token) {
        bail!("spec.rotation of {name} is already {token:?}: give another token with --to");
    }
    let after = api
        .patch(
            name,
            &PatchParams::apply(MANAGER).validation_strict(),
            &Patch::Merge(patch(token)),
        )
        .await
        .with_context(|| format!("patching spec.rotation of {name}"))?;
    Ok((
        old,
        Version::of(&after.spec, name).ok().map(|v| v.secret_name),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_the_time_and_the_patch_sets_only_rotation() {
        let t = token("2026-12-01T07:08:21.5Z".parse().unwrap());
        assert_eq!(t, "20261201T070821Z");
        assert_eq!(print(&t), "spec:\n  rotation: 20261201T070821Z\n");
        // The printed YAML reads back as the patch: the token stays a string.
        let back: Value = crate::gitops::yaml::read(&print(&t)).unwrap();
        assert_eq!(back, patch(&t));
        assert_eq!(back["spec"]["rotation"], "20261201T070821Z");
    }

    #[test]
    fn a_numeric_token_stays_a_string_in_the_printed_yaml() {
        let back: Value = crate::gitops::yaml::read(&print("2")).unwrap();
        assert_eq!(back["spec"]["rotation"], "2");
    }
}
