//! The composition root: the controller process, top to bottom. Imported by
//! `main.rs` only; it may import every module, and no module imports it.
//!
//! It reads the flags (each wing's settings from [`config`]), makes what
//! every wing shares ([`Shared`]), starts the watches ([`watches`]) and the
//! wings, each as a runner of its own keys:
//!
//! | runner | keys | work |
//! |---|---|---|
//! | reconcile | RandomSecrets | `reconciler::reconcile` |
//! | annotated | annotated Secrets | `annotated::fill` |
//! | Vault push | RandomSecrets with `spec.push.vault` | `push::push` |
//! | cluster dispatch | RandomSecrets with `spec.push.clusters` | `push::clusters::dispatch` |
//! | cluster status | the same | `push::clusters::report::write` |
//! | stamp | ClusterRandomSecrets | `stamp::reconcile` |
//!
//! and the webhook (every replica serves; the leader manages certificates),
//! until SIGTERM and the grace period after it.

pub mod config;
pub mod watches;

use crate::annotated::fill::Filler;
use crate::annotated::tracked::Tracked;
use crate::cache::lists::Lists;
use crate::cache::{Caches, Key};
use crate::cli::{AnnotationMode, ControllerArgs};
use crate::push::clusters;
use crate::runtime::admin::{self, Readiness};
use crate::runtime::events::Events;
use crate::runtime::keygen::KeyGeneration;
use crate::runtime::leader::{self, Leadership};
use crate::runtime::metrics::Metrics;
use crate::runtime::runner::{Runner, Triggers};
use crate::runtime::{Shared, client, proofkey, shutdown};
use crate::{push, reconciler, stamp};
use futures::FutureExt;
use futures::future::BoxFuture;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{self, UnboundedReceiver};
use tracing::{info, warn};

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    args.annotation
        .check(&args.webhook)
        .map_err(anyhow::Error::msg)?;
    let shard = config::shard(&args).map_err(anyhow::Error::msg)?;
    if let Some(s) = &shard {
        crate::shard::register(s).map_err(anyhow::Error::msg)?;
        info!(selector = s.selector(), labels = ?s.keys(), "sharded: reconciling only what the selector matches");
    }
    let mut registry = Registry::default();
    let (shared, elector) = connect(&args, shard, &mut registry).await?;
    let shutdown = shared.shutdown.clone();
    let webhook_metrics = crate::webhook::metrics::WebhookMetrics::register(&mut registry);
    let cluster_metrics = clusters::Metrics::register(&mut registry);
    let readiness = Readiness::default();
    let at = config::admin(&args);
    let servers = admin::spawn(at, registry, readiness.clone(), shutdown.clone()).await?;
    // Only once the admin ports are bound: a replica that fails to start
    // never holds the lease.
    let elector = elector.map(tokio::spawn);

    // The keys of each runner; the watches and a take-over send to them.
    let (queues, keys) = Queues::new();
    let push_index = Arc::new(push::index::Index::default());
    let tracked = Arc::new(Tracked::excluding(config::excluded(&args)));
    let stamps = Arc::new(stamp::cache::Stamps::default());
    start_watches(&args, &shared, &queues, &push_index, &tracked);
    let stamping_on = stamping(&args, &shared.client).await?;
    if stamping_on {
        for watch in watches::stamps(
            &shared.client,
            shared.shard.as_deref(),
            shared.lists,
            stamps.clone(),
            queues.stamps.clone(),
        ) {
            tokio::spawn(watch);
        }
    }
    tokio::spawn(leader::follow(
        shared.leader.clone(),
        shared.metrics.leader.clone(),
        queues.on_takeover(&shared.caches, &push_index, &tracked, &stamps),
    ));
    if let Some(certs) = crate::webhook::spawn(
        config::webhook(&args),
        shared.client.clone(),
        shared.leader.clone(),
        webhook_metrics,
        shared.metrics.annotated_fills.clone(),
        shutdown.clone(),
    )
    .await?
    {
        readiness.gate(Arc::new(move || {
            (!certs.ready()).then_some("no valid webhook serving certificate loaded yet")
        }));
    }

    // The wings.
    let keygen = Arc::new(
        KeyGeneration::new(args.key_generation_concurrency.map(usize::from))
            .map_err(|e| anyhow::anyhow!("starting the key generation threads: {e}"))?,
    );
    let reconciler = Arc::new(reconciler::Context::new(
        &shared,
        config::policy(&args),
        args.deletion_protection,
        keygen.clone(),
        args.tracking_window,
    ));
    let filler = Arc::new(Filler::new(&shared, tracked.clone(), keygen));
    let vault = Arc::new(push::Context::new(&shared, config::vault(&args)));
    let clusters = Arc::new(clusters::Context::new(
        &shared,
        cluster_metrics,
        config::clusters(&args),
        push_index.clone(),
        queues.clusters.clone(),
        queues.reports.clone(),
    ));

    info!(namespace = ?args.namespace, concurrency = args.concurrency, tracking = args.tracking, "starting controller");
    let caches = &shared.caches;
    let Keys {
        reconcile,
        fills,
        vault: vault_keys,
        clusters: cluster_keys,
        reports,
        stamps: stamp_keys,
    } = keys;
    let reconciling = Runner::new(usize::from(args.concurrency.max(1)))
        .timing_queue("queued")
        .run(
            reconcile,
            ready(caches, &readiness),
            || caches.to_reconcile(),
            |key| reconciler::reconcile(key, reconciler.clone()),
            shutdown.clone(),
        );
    // Few Secrets are annotated, and a fill is one GET and one patch.
    let filling = Runner::new(4).run(
        fills,
        async {
            tracked.listed.wait().await;
            info!(secrets = tracked.len(), "annotated Secrets listed");
        },
        || tracked.unsettled(),
        |key| {
            let filler = filler.clone();
            async move { filler.fill(key).await }
        },
        shutdown.clone(),
    );
    // Pushes: a few at once, each bounded by a deadline, with backoff per
    // RandomSecret; the slots are shared fairly between namespaces, so one
    // tenant's slow server cannot keep another's push waiting for more than
    // one deadline.
    let pushing = Runner::fair(push::CONCURRENCY).run(
        vault_keys,
        caches.ready.wait(),
        || push_index.keys(),
        |key| push::push(key, vault.clone()),
        shutdown.clone(),
    );
    // Downstream clusters: routes each RandomSecret to its clusters' runners
    // (one per connection, `push::clusters::link`) and carries out deletions.
    let dispatching = Runner::new(push::CONCURRENCY).run(
        cluster_keys,
        caches.ready.wait(),
        || push_index.keys(),
        |key| clusters::dispatch(key, clusters.clone()),
        shutdown.clone(),
    );
    let reporting = Runner::new(2).run(
        reports,
        caches.ready.wait(),
        Vec::new,
        |key| clusters::report::write(key, clusters.clone()),
        shutdown.clone(),
    );

    let stamper = Arc::new(stamp::Context {
        client: shared.client.clone(),
        stamps: stamps.clone(),
        caches: shared.caches.clone(),
        key: shared.proof_key.clone(),
        excluded: config::stamp_excluded(&args),
        leader: shared.leader.clone(),
    });
    // Few ClusterRandomSecrets, each run a pass over its namespaces.
    let stamping = async {
        if stamping_on {
            Runner::new(2)
                .run(
                    stamp_keys,
                    async {
                        stamps.wait_listed().await;
                        caches.ready.wait().await;
                    },
                    || stamps.cluster_keys(),
                    |key| stamp::reconcile(key, stamper.clone()),
                    shutdown.clone(),
                )
                .await
        }
    };

    tokio::select! {
        _ = futures::future::join(
            futures::future::join5(reconciling, filling, pushing, dispatching, reporting),
            stamping,
        ) => info!("controller stopped"),
        _ = shutdown::deadline(shutdown.clone()) => warn!(
            grace_seconds = shutdown::GRACE.as_secs(),
            "in-flight reconciles did not finish in time after the shutdown signal; stopping anyway"
        ),
    }
    // The Vault tokens of Kubernetes-auth logins are revoked, not left to
    // expire (a copy of the process's memory holds nothing usable).
    vault.tokens.revoke_all(Duration::from_secs(2)).await;
    if let Some(e) = elector {
        // Releases the lease (if held) so a standby takes over at once.
        let _ = e.await;
    }
    readiness.set(false);
    shutdown.await;
    servers.await?
}

/// The client (and the CRD check), the proof key, the shutdown signal, the
/// core metrics, Events and leader election: what every wing shares.
async fn connect(
    args: &ControllerArgs,
    shard: Option<crate::shard::Shard>,
    registry: &mut Registry,
) -> anyhow::Result<(Shared, Option<BoxFuture<'static, ()>>)> {
    let lease = config::lease(args, shard.as_ref())
        .map(leader::config)
        .transpose()?;
    let agent = config::user_agent(shard.as_ref());
    let client = client::client_as(args.kubeconfig.as_deref(), Some(&agent)).await?;
    client::check_crd(&client).await?;
    client::custom_references(&client, &args.references).await?;
    let lists = Lists::decide(
        args.initial_lists,
        client::scoped(&client, args.namespace.as_deref()),
    )
    .await;
    let (key_ns, key_name) = config::proof_key(args);
    let proof_key = proofkey::load(&client, &key_ns, &key_name).await?;
    let shutdown = shutdown::signal();
    let metrics = Metrics::register(registry);
    let (leader, elector) = elect(&client, lease, &shutdown);
    let (events, poster) = Events::new(
        client.clone(),
        crate::runtime::reporter(),
        metrics.events_dropped.clone(),
    );
    tokio::spawn(poster);
    let caches = Arc::new(Caches::new(proof_key.clone()));
    registry.register_collector(Box::new(crate::runtime::metrics::CertificateExpiry(
        caches.clone(),
    )));
    if args.per_object_metrics {
        registry.register_collector(Box::new(crate::runtime::object_metrics::ObjectMetrics(
            caches.clone(),
        )));
    }
    let shared = Shared {
        caches,
        client,
        events,
        metrics,
        leader,
        shutdown,
        proof_key,
        shard: shard.map(Arc::new),
        lists,
    };
    Ok((shared, elector))
}

/// Where each runner's keys go in (`Triggers`, cloned by the watches) ...
struct Queues {
    reconcile: Triggers,
    fills: Triggers,
    vault: Triggers,
    clusters: Triggers,
    reports: Triggers,
    stamps: Triggers,
}

/// ... and where each runner reads them.
struct Keys {
    reconcile: UnboundedReceiver<Key>,
    fills: UnboundedReceiver<Key>,
    vault: UnboundedReceiver<Key>,
    clusters: UnboundedReceiver<Key>,
    reports: UnboundedReceiver<Key>,
    stamps: UnboundedReceiver<Key>,
}

impl Queues {
    fn new() -> (Self, Keys) {
        let (reconcile, reconcile_keys) = mpsc::unbounded_channel();
        let (fills, fill_keys) = mpsc::unbounded_channel();
        let (vault, vault_keys) = mpsc::unbounded_channel();
        let (clusters, cluster_keys) = mpsc::unbounded_channel();
        let (reports, report_keys) = mpsc::unbounded_channel();
        let (stamps, stamp_keys) = mpsc::unbounded_channel();
        (
            Queues {
                reconcile,
                fills,
                vault,
                clusters,
                reports,
                stamps,
            },
            Keys {
                reconcile: reconcile_keys,
                fills: fill_keys,
                vault: vault_keys,
                clusters: cluster_keys,
                reports: report_keys,
                stamps: stamp_keys,
            },
        )
    }

    /// On taking over the lease, everything is looked at again: a standby
    /// skipped what changed meanwhile.
    fn on_takeover(
        &self,
        caches: &Arc<Caches>,
        push_index: &Arc<push::index::Index>,
        tracked: &Arc<Tracked>,
        stamps: &Arc<stamp::cache::Stamps>,
    ) -> impl Fn() + use<> {
        let (reconcile, fills) = (self.reconcile.clone(), self.fills.clone());
        let (vault, clusters) = (self.vault.clone(), self.clusters.clone());
        let (caches, push_index, tracked) = (caches.clone(), push_index.clone(), tracked.clone());
        let (stamp_keys, stamps) = (self.stamps.clone(), stamps.clone());
        move || {
            for k in stamps.cluster_keys() {
                let _ = stamp_keys.send(k);
            }
            for k in caches.to_reconcile() {
                let _ = reconcile.send(k);
            }
            for k in push_index.keys() {
                let _ = vault.send(k.clone());
                let _ = clusters.send(k);
            }
            for k in tracked.unsettled() {
                let _ = fills.send(k);
            }
        }
    }
}

/// Every watch, feeding the caches and the runners' keys; annotation mode's
/// own watch unless `--annotation-mode=off`.
fn start_watches(
    args: &ControllerArgs,
    shared: &Shared,
    queues: &Queues,
    push_index: &Arc<push::index::Index>,
    tracked: &Arc<Tracked>,
) {
    let sources = watches::Watch {
        client: shared.client.clone(),
        scope: args.namespace.clone(),
        caches: shared.caches.clone(),
        triggers: queues.reconcile.clone(),
        shard: shared.shard.clone(),
        lists: shared.lists,
    };
    let pushes = vec![queues.vault.clone(), queues.clusters.clone()];
    for watch in watches::all(&sources, args.tracking, push_index.clone(), pushes) {
        tokio::spawn(watch);
    }
    if args.annotation.annotation_mode == AnnotationMode::On {
        tokio::spawn(watches::annotated_secrets(
            sources,
            tracked.clone(),
            queues.fills.clone(),
        ));
    } else {
        info!("annotation mode is off: annotated Secrets are not filled");
    }
}

/// Whether ClusterRandomSecrets are stamped: not by a controller of one
/// namespace (`--namespace`), and not before their CRD is installed (then
/// a restart turns them on; nothing else waits for them).
async fn stamping(args: &ControllerArgs, client: &kube::Client) -> anyhow::Result<bool> {
    if args.namespace.is_some() {
        info!("ClusterRandomSecrets are off: this controller watches one namespace (--namespace)");
        return Ok(false);
    }
    let served = client::served(client, crate::api::API_VERSION, "ClusterRandomSecret")
        .await
        .map_err(|e| anyhow::anyhow!("looking up ClusterRandomSecret in API discovery: {e}"))?;
    if served.is_none() {
        warn!(
            "ClusterRandomSecrets are off: their CRD (clusterrandomsecrets.randomsecret.io) is not installed; install it and restart the controller"
        );
    }
    Ok(served.is_some())
}

/// Leader election (`--leader-elect`): only the leader writes; without it
/// this replica always leads. The elector is returned to be spawned.
fn elect(
    client: &kube::Client,
    lease: Option<leader::LeaseConfig>,
    shutdown: &shutdown::Signal,
) -> (Leadership, Option<BoxFuture<'static, ()>>) {
    let Some(config) = lease else {
        return (Leadership::always(), None);
    };
    info!(lease = %format!("{}/{}", config.namespace, config.name), identity = %config.identity, "leader election on");
    let (tx, rx) = tokio::sync::watch::channel(false);
    let (elector, leadership) = leader::Elector::new(client.clone(), config, rx);
    (leadership, Some(elector.run(tx, shutdown.clone()).boxed()))
}

/// Resolves once every cache has listed, then marks the process ready
/// (before that nothing is created or released). Says what it waits for
/// every 10 s.
async fn ready(caches: &Caches, readiness: &Readiness) {
    while tokio::time::timeout(Duration::from_secs(10), caches.ready.wait())
        .await
        .is_err()
    {
        warn!(waiting_for = ?caches.waiting_for(), "still waiting for the first list of every watch");
    }
    info!(
        randomsecrets = caches.randomsecrets.len(),
        secrets = caches.secrets.len(),
        holders = caches.holders.len(),
        "caches listed; ready"
    );
    crate::runtime::allocator::release_free_memory();
    readiness.set(true);
}
