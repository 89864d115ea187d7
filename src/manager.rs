//! Wires the controller process: client, CRD check, watches and caches, the
//! reconciler, admin servers and graceful shutdown.

use crate::admin::{self, Readiness};
use crate::api::{LABEL_MANAGED_BY, MANAGED_BY, RandomSecret};
use crate::cli::ControllerArgs;
use crate::controller::{self, Context};
use crate::metrics::Metrics;
use anyhow::{Context as _, bail};
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{Controller, WatchStreamExt, predicates, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use tracing::{info, warn};

/// Builds the client from `--kubeconfig`, else `KUBECONFIG`/~/.kube/config, else in-cluster.
pub async fn client(args: &ControllerArgs) -> anyhow::Result<Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig and not in a cluster")?,
    };
    Ok(Client::try_from(config)?)
}

/// Fails with instructions when the CRD is not installed (discovery needs no extra RBAC).
pub async fn check_crd(client: &Client) -> anyhow::Result<()> {
    let how = "install it with `randomsecret crd | kubectl apply --server-side -f -` (or the Helm chart / config/crd)";
    match client.list_api_group_resources("randomsecret.io/v1").await {
        Ok(list) if list.resources.iter().any(|r| r.name == "randomsecrets") => Ok(()),
        Ok(_) => bail!("the RandomSecret CRD (randomsecrets.randomsecret.io) is not served: {how}"),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            bail!("the RandomSecret CRD (randomsecrets.randomsecret.io) is not installed: {how}")
        }
        Err(e) => Err(e).context("checking that the RandomSecret CRD is installed"),
    }
}

/// One watch per namespace (or one cluster-wide), merged.
fn watch_namespaces<K, S>(
    client: &Client,
    namespaces: &[String],
    make: impl Fn(Api<K>) -> S,
) -> futures::stream::SelectAll<S>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
    S: Stream + Unpin,
{
    let apis: Vec<Api<K>> = if namespaces.is_empty() {
        vec![Api::all(client.clone())]
    } else {
        namespaces
            .iter()
            .map(|ns| Api::namespaced(client.clone(), ns))
            .collect()
    };
    futures::stream::select_all(apis.into_iter().map(make))
}

fn shutdown_signal() -> Shared<BoxFuture<'static, ()>> {
    async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => info!("SIGTERM: finishing in-flight reconciles"),
            _ = tokio::signal::ctrl_c() => info!("interrupted: finishing in-flight reconciles"),
        }
    }
    .boxed()
    .shared()
}

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    let client = client(&args).await?;
    check_crd(&client).await?;
    let shutdown = shutdown_signal();

    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let readiness = Readiness::default();
    let metrics_listener = admin::bind(args.metrics_bind_address, "metrics").await?;
    let health_listener = admin::bind(args.health_probe_bind_address, "health probes").await?;
    let servers = tokio::spawn({
        let (s1, s2) = (shutdown.clone(), shutdown.clone());
        let metrics_srv = admin::serve(
            metrics_listener,
            admin::metrics_router(Arc::new(registry)),
            s1,
        );
        let health_srv = admin::serve(health_listener, admin::health_router(readiness.clone()), s2);
        async move { tokio::try_join!(metrics_srv, health_srv) }
    });

    // RandomSecrets: cached (without managedFields), reconciled on spec changes only.
    let (rs_store, rs_writer) = reflector::store::<RandomSecret>();
    let rs_stream = watch_namespaces(&client, &args.namespaces, |api| {
        watcher(api, watcher::Config::default()).boxed()
    })
    .default_backoff()
    .modify(|rs: &mut RandomSecret| rs.managed_fields_mut().clear())
    .reflect(rs_writer)
    .applied_objects()
    .predicate_filter(predicates::generation, Default::default());

    // Our Secrets: metadata only (never data), selected by label.
    let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    let (secret_store, secret_writer) = reflector::store::<PartialObjectMeta<Secret>>();
    let secret_stream = watch_namespaces(
        &client,
        &args.namespaces,
        |api: Api<PartialObjectMeta<Secret>>| {
            watcher(api, watcher::Config::default().labels(&selector)).boxed()
        },
    )
    .default_backoff()
    .modify(|s: &mut PartialObjectMeta<Secret>| s.managed_fields_mut().clear())
    .reflect(secret_writer)
    .touched_objects();

    tokio::spawn(wait_ready(
        rs_store.clone(),
        secret_store.clone(),
        readiness.clone(),
    ));

    let reporter = Reporter {
        controller: "randomsecret".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let ctx = Arc::new(Context {
        client: client.clone(),
        secrets: secret_store,
        recorder: Recorder::new(client.clone(), reporter),
        metrics,
    });
    info!(namespaces = ?args.namespaces, concurrency = args.concurrency, "starting controller");
    Controller::for_stream(rs_stream, rs_store)
        .owns_stream(secret_stream)
        .with_config(kube::runtime::controller::Config::default().concurrency(args.concurrency))
        .graceful_shutdown_on(shutdown.clone())
        .run(controller::reconcile, controller::error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
    info!("controller stopped");
    readiness.set(false);
    shutdown.await;
    match servers.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(e.into()),
    }
}

async fn wait_ready(
    rs: Store<RandomSecret>,
    secrets: Store<PartialObjectMeta<Secret>>,
    readiness: Readiness,
) {
    match tokio::try_join!(rs.wait_until_ready(), secrets.wait_until_ready()) {
        Ok(_) => {
            info!("caches synced; ready");
            readiness.set(true);
        }
        Err(e) => warn!(error = %e, "cache never became ready"),
    }
}
