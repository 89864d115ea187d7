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
use anyhow::{Context as _, bail};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Which RandomSecrets to show.
#[derive(Clone, Debug)]
pub struct Scope {
    /// None: all namespaces.
    pub namespace: Option<String>,
    pub name: Option<String>,
}

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

fn forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 403)
}

/// Lists a kind of holder; a kind the credentials may not list is a note, not an error.
async fn holders<K>(
    client: &Client,
    namespace: Option<&str>,
    plural: &str,
    held: fn(&K) -> Held,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<(Held, Option<String>)>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug,
{
    match api::<K>(client, namespace)
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Ok(list
            .items
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
pub async fn read(client: &Client, scope: &Scope) -> anyhow::Result<Read> {
    let ns = scope.namespace.as_deref();
    let randomsecrets: Vec<RandomSecretObject> = match &scope.name {
        Some(name) => {
            let Some(ns) = ns else {
                bail!("a RandomSecret name needs a namespace: drop --all-namespaces or give -n");
            };
            match api::<RandomSecretObject>(client, Some(ns))
                .get_opt(name)
                .await
            {
                Ok(Some(rs)) => vec![rs],
                Ok(None) => bail!("RandomSecret {name} not found in namespace {ns}"),
                Err(e) => return Err(e).context("reading the RandomSecret"),
            }
        }
        None => {
            api::<RandomSecretObject>(client, ns)
                .list(&ListParams::default())
                .await
                .context("listing RandomSecrets")?
                .items
        }
    };
    let mut selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    if let Some(name) = &scope.name {
        selector.push_str(&format!(",{LABEL_NAME}={name}"));
    }
    // Metadata only: the Secrets' data never reaches this process.
    let secrets = api::<Secret>(client, ns)
        .list_metadata(&ListParams::default().labels(&selector))
        .await
        .context("listing the version Secrets' metadata")?
        .items
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
    )
    .await?;
    held.extend(
        holders::<ControllerRevisionRefs>(
            client,
            ns,
            "ControllerRevisions",
            references::controller_revision,
            &mut notes,
        )
        .await?,
    );
    held.extend(holders::<PodRefs>(client, ns, "Pods", references::pod, &mut notes).await?);
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

/// The view now.
pub async fn status(client: &Client, scope: &Scope) -> anyhow::Result<StatusList> {
    Ok(assemble(&read(client, scope).await?))
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
        let view = status(client, scope).await?;
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
