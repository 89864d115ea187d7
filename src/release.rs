//! `randomsecret release-finalizers`: removes deletion protection's
//! finalizer (`randomsecret.io/in-use`) from every version Secret, for an
//! uninstall (docs/src/operate.md) or a controller that
//! will not come back. Without the controller nothing removes it, and a
//! version deleted later would stay Terminating. Only our own finalizer is
//! removed, each by a JSON patch that first tests it is still at that
//! place, so a concurrent change to the list is never overwritten.

use crate::api::{FINALIZER_IN_USE, LABEL_MANAGED_BY, MANAGED_BY};
use anyhow::Context as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// The JSON patch removing our finalizer, at `index` of `finalizers`, or
/// `None` when it holds none.
pub fn patch(finalizers: &[String]) -> Option<Value> {
    let index = finalizers.iter().position(|f| f == FINALIZER_IN_USE)?;
    let path = format!("/metadata/finalizers/{index}");
    Some(json!([
        {"op": "test", "path": path, "value": FINALIZER_IN_USE},
        {"op": "remove", "path": path},
    ]))
}

/// Removes our finalizer from every Secret labelled as ours in `namespace`
/// (every namespace: `None`); returns the `namespace/name` of each. With
/// `dry_run`, only lists them.
pub async fn release(
    client: &Client,
    namespace: Option<&str>,
    dry_run: bool,
) -> anyhow::Result<Vec<String>> {
    let api: Api<Secret> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let lp = ListParams::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGED_BY}"));
    let listed = api
        .list_metadata(&lp)
        .await
        .context("listing randomsecret's Secrets")?;
    let mut released = Vec::new();
    for s in listed {
        let (Some(ns), Some(name)) = (s.metadata.namespace.as_deref(), s.metadata.name.as_deref())
        else {
            continue;
        };
        let Some(patch) = patch(s.metadata.finalizers.as_deref().unwrap_or_default()) else {
            continue;
        };
        if !dry_run {
            let pp = PatchParams {
                field_manager: Some(crate::rotate::MANAGER.into()),
                ..Default::default()
            };
            let api: Api<Secret> = Api::namespaced(client.clone(), ns);
            let json_patch: json_patch::Patch =
                serde_json::from_value(patch).expect("a JSON patch");
            match api
                .patch_metadata(name, &pp, &Patch::<()>::Json(json_patch))
                .await
            {
                Ok(_) => {}
                // Gone meanwhile, or the list changed (the test failed): not ours now.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 422 => continue,
                Err(e) => return Err(e).with_context(|| format!("releasing Secret {ns}/{name}")),
            }
        }
        released.push(format!("{ns}/{name}"));
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_tests_and_removes_ours_alone() {
        let list = vec!["a/b".to_string(), FINALIZER_IN_USE.to_string()];
        assert_eq!(
            patch(&list),
            Some(json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": FINALIZER_IN_USE},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ]))
        );
        assert_eq!(patch(&["a/b".to_string()]), None);
        assert_eq!(patch(&[]), None);
    }
}
