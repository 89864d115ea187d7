//! The reads behind `randomsecret status`, and `--watch`.
//!
//! Secrets are read as metadata only (`list_metadata`: the apiserver sends
//! no data), selected by the managed-by label. Holders are read with the
//! slim types of the caches and the project's pod-spec walkers
//! (`references`). Only RandomSecrets, Secrets and ReplicaSets are needed:
//! ControllerRevisions and Pods the credentials may not list are skipped
//! with a note.

use super::model::{HeldRefs, Read, StatusList, assemble};
use crate::api::{LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY};
use crate::cache::slim::{ControllerRevisionRefs, PodRefs, RandomSecretObject, ReplicaSetRefs};
use crate::references::{self, Held};
use crate::runtime::client::scoped;
use crate::runtime::status::Answer as _;
use anyhow::{Context as _, bail};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Which RandomSecrets to show.
#[derive(Clone, Debug)]
pub struct Scope {
    /// None: all namespaces.
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// Objects per page: a namespace with 50,000 Pods is read in pieces, not
/// in one reply the apiserver must build whole.
const PAGE: u32 = 500;

/// How a read lists: a one-off read is consistent (etcd); each poll of
/// `--watch` reads the apiserver's watch cache (`resourceVersion=0`), so
/// polling every few seconds costs etcd nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    Consistent,
    Cached,
}

fn list_params(freshness: Freshness) -> ListParams {
    let lp = ListParams::default().limit(PAGE);
    match freshness {
        Freshness::Consistent => lp,
        Freshness::Cached => lp.match_any(),
    }
}

/// Every page of a list (`page` lists one, from its `continue` token).
async fn paged<T, F, Fut>(lp: ListParams, mut page: F) -> kube::Result<Vec<T>>
where
    T: Clone,
    F: FnMut(ListParams) -> Fut,
    Fut: std::future::Future<Output = kube::Result<kube::api::ObjectList<T>>>,
{
    let mut items = Vec::new();
    let mut lp = lp;
    loop {
        let list = page(lp.clone()).await?;
        items.extend(list.items);
        match list.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok(items),
        }
    }
}

fn forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.forbidden())
}

/// Lists a kind of holder; a kind the credentials may not list is a note, not an error.
async fn holders<K>(
    client: &Client,
    namespace: Option<&str>,
    plural: &str,
    held: fn(&K) -> Held,
    notes: &mut Vec<String>,
    freshness: Freshness,
) -> anyhow::Result<Vec<(Held, Option<String>)>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let api = scoped::<K>(client, namespace);
    match paged(list_params(freshness), |lp| {
        let api = api.clone();
        async move { api.list(&lp).await }
    })
    .await
    {
        Ok(items) => Ok(items
            .iter()
            .map(|o| {
                let rs = o.meta().owner_references.iter().flatten().find_map(|r| {
                    (r.controller == Some(true) && r.kind == "ReplicaSet").then(|| r.name.clone())
                });
                (held(o), rs)
            })
            .collect()),
        Err(e) if forbidden(&e) => {
            notes.push(format!(
                "{plural} are not shown: these credentials may not list them"
            ));
            Ok(Vec::new())
        }
        Err(e) => Err(e).with_context(|| format!("listing {plural}")),
    }
}

/// Reads everything the view needs.
pub async fn read(client: &Client, scope: &Scope, freshness: Freshness) -> anyhow::Result<Read> {
    let ns = scope.namespace.as_deref();
    let randomsecrets: Vec<RandomSecretObject> = match &scope.name {
        Some(name) => {
            let Some(ns) = ns else {
                bail!("a RandomSecret name needs a namespace: drop --all-namespaces or give -n");
            };
            match scoped::<RandomSecretObject>(client, Some(ns))
                .get_opt(name)
                .await
            {
                Ok(Some(rs)) => vec![rs],
                Ok(None) => bail!("RandomSecret {name} not found in namespace {ns}"),
                Err(e) => return Err(e).context("reading the RandomSecret"),
            }
        }
        None => {
            let api = scoped::<RandomSecretObject>(client, ns);
            paged(list_params(freshness), |lp| {
                let api = api.clone();
                async move { api.list(&lp).await }
            })
            .await
            .context("listing RandomSecrets")?
        }
    };
    let mut selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    if let Some(name) = &scope.name {
        selector.push_str(&format!(",{LABEL_NAME}={name}"));
    }
    // Metadata only: the Secrets' data never reaches this process.
    let secret_api = scoped::<Secret>(client, ns);
    let secrets = paged(list_params(freshness).labels(&selector), |lp| {
        let api = secret_api.clone();
        async move { api.list_metadata(&lp).await }
    })
    .await
    .context("listing the version Secrets' metadata")?
    .into_iter()
    .map(|m| m.metadata)
    .collect();
    let mut notes = Vec::new();
    let mut held = holders::<ReplicaSetRefs>(
        client,
        ns,
        "ReplicaSets",
        references::replica_set,
        &mut notes,
        freshness,
    )
    .await?;
    held.extend(
        holders::<ControllerRevisionRefs>(
            client,
            ns,
            "ControllerRevisions",
            references::controller_revision,
            &mut notes,
            freshness,
        )
        .await?,
    );
    held.extend(
        holders::<PodRefs>(client, ns, "Pods", references::pod, &mut notes, freshness).await?,
    );
    let holders = held
        .into_iter()
        .filter_map(|(h, rs)| {
            let (holder, keys) = h?;
            Some(HeldRefs {
                names: keys.into_iter().map(|k| k.name.to_string()).collect(),
                replica_set: rs,
                holder,
            })
        })
        .filter(|h| !h.names.is_empty())
        .collect();
    Ok(Read {
        randomsecrets,
        secrets,
        holders,
        notes,
    })
}

/// The client for `--kubeconfig` / `--context` (else `KUBECONFIG`, ~/.kube/config,
/// in-cluster), and its default namespace.
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> anyhow::Result<Client> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(Into::into),
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options).await?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options).await?,
        None => kube::Config::infer()
            .await
            .context("no kubeconfig and not in a cluster")?,
    };
    Ok(Client::try_from(config)?)
}

/// The view now (`Freshness::Consistent`), or as the watch cache has it.
pub async fn status(
    client: &Client,
    scope: &Scope,
    freshness: Freshness,
) -> anyhow::Result<StatusList> {
    Ok(assemble(&read(client, scope, freshness).await?))
}

/// `--watch`: reads every `interval` and calls `draw` with the view each
/// time it changed (the first time included). Polls with list, so read RBAC
/// without `watch` is enough. Returns when `draw` fails (the reader went away).
pub async fn watch(
    client: &Client,
    scope: &Scope,
    interval: std::time::Duration,
    mut draw: impl FnMut(&StatusList) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut last: Option<StatusList> = None;
    loop {
        // The first view is consistent, each later one from the watch cache.
        let freshness = if last.is_none() {
            Freshness::Consistent
        } else {
            Freshness::Cached
        };
        let view = status(client, scope, freshness).await?;
        if last.as_ref() != Some(&view) {
            if let Err(e) = draw(&view) {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(());
                }
                return Err(e.into());
            }
            last = Some(view);
        }
        tokio::time::sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectList;

    /// A kind the credentials may not list is told by the answer's reason
    /// (Forbidden), as the apiserver sends it; a missing kind is not that.
    #[test]
    fn a_forbidden_list_is_told_by_its_reason() {
        let answer = |code: u16, reason: &str| {
            kube::Error::Api(Box::new(
                kube::core::Status::failure("m", reason).with_code(code),
            ))
        };
        assert!(forbidden(&answer(403, "Forbidden")));
        assert!(!forbidden(&answer(404, "NotFound")));
        assert!(!forbidden(&answer(401, "Unauthorized")));
    }

    /// Pages are followed by their continue token until the last, and each
    /// request carries the page size and the freshness asked for.
    #[tokio::test]
    async fn every_page_is_read_in_order() {
        let seen = std::sync::Mutex::new(Vec::new());
        let items = paged(list_params(Freshness::Cached), |lp| {
            seen.lock().unwrap().push((
                lp.continue_token.clone(),
                lp.limit,
                lp.resource_version.clone(),
            ));
            let page = match lp.continue_token.as_deref() {
                None => (vec![1, 2], Some("a")),
                Some("a") => (vec![3], Some("b")),
                Some(_) => (vec![4], Some("")),
            };
            async move {
                let mut list: ObjectList<i32> = serde_json::from_value(serde_json::json!({
                    "metadata": {}, "items": page.0,
                }))
                .unwrap();
                list.metadata.continue_ = page.1.map(String::from);
                Ok(list)
            }
        })
        .await
        .unwrap();
        assert_eq!(items, [1, 2, 3, 4]);
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[1].0.as_deref(), Some("a"));
        assert!(seen.iter().all(|s| s.1 == Some(PAGE)));
        assert!(seen.iter().all(|s| s.2.as_deref() == Some("0")), "{seen:?}");
        assert_eq!(list_params(Freshness::Consistent).resource_version, None);
    }
}
