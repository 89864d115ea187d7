//! `randomsecret release-finalizers`: removes deletion protection's
//! finalizer (`randomsecret.io/in-use`) from every version Secret, for an
//! uninstall (docs/src/operate.md) or a controller that
//! will not come back. Without the controller nothing removes it, and a
//! version deleted later would stay Terminating. Only our own finalizer is
//! removed, each by a JSON patch that first tests it is still at that
//! place, so a concurrent change to the list is never overwritten.

use crate::api::{FINALIZER_IN_USE, LABEL_MANAGED_BY, MANAGED_BY};
use anyhow::Context as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Patches in flight at once.
const CONCURRENCY: usize = 16;

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
    let api: Api<Secret> = crate::runtime::client::scoped(client, namespace);
    let lp = ListParams::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGED_BY}"));
    let listed = api
        .list_metadata(&lp)
        .await
        .context("listing randomsecret's Secrets")?;
    let pp = PatchParams {
        field_manager: Some(crate::rotate::MANAGER.into()),
        ..Default::default()
    };
    let held: Vec<(String, String, Value)> = listed
        .into_iter()
        .filter_map(|s| {
            let m = s.metadata;
            let patch = patch(m.finalizers.as_deref().unwrap_or_default())?;
            Some((m.namespace?, m.name?, patch))
        })
        .collect();
    if dry_run {
        return Ok(held
            .into_iter()
            .map(|(ns, n, _)| format!("{ns}/{n}"))
            .collect());
    }
    // A few at once: an uninstall may meet thousands of versions.
    let results: Vec<anyhow::Result<Option<String>>> = futures::stream::iter(held)
        .map(|(ns, name, patch)| {
            let (client, pp) = (client.clone(), &pp);
            async move {
                let api: Api<Secret> = Api::namespaced(client, &ns);
                let json_patch: json_patch::Patch =
                    serde_json::from_value(patch).expect("a JSON patch");
                match api
                    .patch_metadata(&name, pp, &Patch::<()>::Json(json_patch))
                    .await
                {
                    Ok(_) => Ok(Some(format!("{ns}/{name}"))),
                    // Gone meanwhile, or the list changed (the test failed): not ours now.
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 422 => Ok(None),
                    Err(e) => Err(e).with_context(|| format!("releasing Secret {ns}/{name}")),
                }
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut released = Vec::new();
    for r in results {
        released.extend(r?);
    }
    released.sort();
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
