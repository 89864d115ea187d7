//! The controller process, top to bottom: client and CRD check, admin
//! servers, the watches that feed the caches, leader election, and the runner
//! that reconciles (and a second one that fills annotated Secrets, see
//! `crate::annotated`), until SIGTERM.
//!
//! - [`client`]: the Kubernetes client and the CRD check.
//! - [`watches`]: one function per watch, feeding `crate::cache`.
//! - [`runner`]: runs reconciles (per-key exclusivity, backoff, shutdown).
//! - [`leader`]: Lease-based leader election.
//! - [`proofkey`]: the key that signs the Secrets we create.
//! - [`shutdown`]: the signal and the deadline after it.
//! - [`logging`]: the log filter (kube's client muted below errors).
//! - [`admin`], [`metrics`], [`events`]: health and metrics servers, the
//!   Prometheus registry, Kubernetes Events.

pub mod admin;
pub mod allocator;
pub mod client;
pub mod events;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod proofkey;
pub mod runner;
pub mod shutdown;
pub mod watches;

use crate::annotated::fill::Filler;
use crate::annotated::tracked::Tracked;
use crate::cache::Caches;
use crate::cli::ControllerArgs;
use crate::reconciler::{self, Context};
use admin::Readiness;
use events::{Events, Reporter};
use metrics::Metrics;
use prometheus_client::registry::Registry;
use runner::Runner;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    args.annotation
        .check(&args.webhook)
        .map_err(anyhow::Error::msg)?;
    let lease = args
        .leader_elect
        .then(|| leader::config(&args))
        .transpose()?;
    let client = client::client(&args).await?;
    client::check_crd(&client).await?;
    let (key_ns, key_name) = proofkey::location(&args);
    let proof_key = proofkey::load(&client, &key_ns, &key_name).await?;
    let shutdown = shutdown::signal();

    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let webhook_metrics = crate::webhook::metrics::WebhookMetrics::register(&mut registry);
    let cluster_metrics = crate::push::clusters::Metrics::register(&mut registry);
    let readiness = Readiness::default();
    let servers = admin::spawn(&args, registry, readiness.clone(), shutdown.clone()).await?;

    // Watches feed the caches and send the keys of the RandomSecrets to reconcile.
    let caches = Arc::new(Caches::new(proof_key.clone()));
    let (triggers, keys) = mpsc::unbounded_channel();
    let sources = watches::Watch {
        client: client.clone(),
        scope: args.namespace.clone(),
        caches: caches.clone(),
        triggers: triggers.clone(),
    };
    // The push's index and runner (spec.push), apart from the reconcile.
    let push_index = Arc::new(crate::push::index::Index::default());
    let (pushes, push_keys) = mpsc::unbounded_channel();
    // The cluster push (spec.push.clusters): the same keys, its own runner.
    let (cluster_pushes, cluster_keys) = mpsc::unbounded_channel();
    let push_triggers = vec![pushes.clone(), cluster_pushes.clone()];
    for watch in watches::all(&sources, args.tracking, push_index.clone(), push_triggers) {
        tokio::spawn(watch);
    }
    // Annotation mode (unless --annotation-mode=off): its own watch, cache
    // and runner; off, nothing is watched and its runner waits for shutdown.
    let annotation_on = args.annotation.annotation_mode == crate::cli::AnnotationMode::On;
    let tracked = Arc::new(Tracked::excluding(
        args.annotation.annotation_exclude_namespaces.clone(),
    ));
    let (fills, fill_keys) = mpsc::unbounded_channel();
    if annotation_on {
        tokio::spawn(watches::annotated_secrets(
            sources.clone(),
            tracked.clone(),
            fills.clone(),
        ));
    } else {
        info!("annotation mode is off: annotated Secrets are not filled");
    }

    // Leader election: only the leader reconciles; on taking over it
    // reconciles everything, since a standby skipped what changed meanwhile.
    let (leadership, elector) = match lease {
        None => (leader::Leadership::always(), None),
        Some(config) => {
            info!(lease = %format!("{}/{}", config.namespace, config.name), identity = %config.identity, "leader election on");
            let (tx, rx) = watch::channel(false);
            let (elector, leadership) = leader::Elector::new(client.clone(), config, rx);
            (
                leadership,
                Some(tokio::spawn(elector.run(tx, shutdown.clone()))),
            )
        }
    };
    tokio::spawn(leader::follow(leadership.flag(), metrics.leader.clone(), {
        let (caches, triggers, tracked) = (caches.clone(), triggers.clone(), tracked.clone());
        let (push_index, pushes) = (push_index.clone(), pushes.clone());
        let cluster_pushes = cluster_pushes.clone();
        move || {
            caches
                .randomsecrets
                .keys()
                .into_iter()
                .for_each(|k| drop(triggers.send(k)));
            for k in push_index.keys() {
                let _ = pushes.send(k.clone());
                let _ = cluster_pushes.send(k);
            }
            tracked
                .unsettled()
                .into_iter()
                .for_each(|k| drop(fills.send(k)));
        }
    }));

    // The webhook serves on every replica; only the leader manages its certificates.
    if let Some(certs) = crate::webhook::spawn(
        &args,
        client.clone(),
        leadership.clone(),
        webhook_metrics,
        metrics.annotated_fills.clone(),
        shutdown.clone(),
    )
    .await?
    {
        readiness.gate(Arc::new(move || {
            (!certs.ready()).then_some("no valid webhook serving certificate loaded yet")
        }));
    }

    let (events, poster) = Events::new(client.clone(), reporter(), metrics.events_dropped.clone());
    tokio::spawn(poster);
    let filler = Arc::new(Filler {
        client: client.clone(),
        tracked: tracked.clone(),
        events: events.clone(),
        metrics: metrics.clone(),
        leader: leadership.clone(),
    });
    let push_ctx = Arc::new(crate::push::Context {
        client: client.clone(),
        leader: leadership.clone(),
        events: events.clone(),
        metrics: metrics.clone(),
        tokens: Default::default(),
        identity: args.service_account_name.clone().map(|name| {
            crate::push::vault::connection::Identity {
                namespace: args
                    .service_account_namespace
                    .clone()
                    .or_else(|| std::env::var("POD_NAMESPACE").ok())
                    .unwrap_or_else(|| "default".into()),
                name,
                pod: std::env::var("POD_NAME")
                    .ok()
                    .filter(|n| !n.is_empty())
                    .map(|n| (n, std::env::var("POD_UID").ok().filter(|u| !u.is_empty()))),
                api_audiences: crate::push::vault::audience::own(args.kubeconfig.as_deref()),
            }
        }),
        proof_key,
        vault_policy: crate::push::vault::address::Policy {
            allow_http: args.allow_http_vault,
            allowed_networks: args.vault_allowed_networks.clone(),
        },
        out_of_sync: Default::default(),
        connections: Default::default(),
        down: Default::default(),
    });
    let (reports, report_keys) = mpsc::unbounded_channel();
    let cluster_ctx = Arc::new(crate::push::clusters::Context {
        client: client.clone(),
        leader: leadership.clone(),
        events: events.clone(),
        metrics: cluster_metrics,
        caches: caches.clone(),
        links: Default::default(),
        results: Default::default(),
        cleaned: Default::default(),
        reports,
        dispatches: cluster_pushes.clone(),
        index: push_index.clone(),
        shutdown: shutdown.clone(),
        settings: crate::push::clusters::admit::Settings::new(
            reconciler::policy::Policy {
                types: args.allow_secret_types.clone(),
                label_prefixes: args.allow_label_prefixes.clone(),
                annotation_prefixes: args.allow_annotation_prefixes.clone(),
            },
            &[
                std::env::var("POD_NAMESPACE").unwrap_or_default(),
                crate::runtime::proofkey::location(&args).0,
            ],
            args.clusters.allow_insecure_downstream_tls,
        ),
    });
    let ctx = Arc::new(Context {
        client,
        caches: caches.clone(),
        events,
        metrics,
        leader: leadership,
        policy: reconciler::policy::Policy {
            types: args.allow_secret_types.clone(),
            label_prefixes: args.allow_label_prefixes.clone(),
            annotation_prefixes: args.allow_annotation_prefixes.clone(),
        },
    });
    info!(namespace = ?args.namespace, concurrency = args.concurrency, tracking = args.tracking, "starting controller");
    let runner = Runner::new(usize::from(args.concurrency.max(1)));
    let run = runner.run(
        keys,
        listed(&caches, &readiness),
        || caches.randomsecrets.keys(),
        |key| reconciler::reconcile(key, ctx.clone()),
        shutdown.clone(),
    );
    // Few Secrets are annotated, and a fill is one GET and one patch.
    let annotated = Runner::new(4).run(
        fill_keys,
        async {
            while !tracked.listed() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
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
    // RandomSecret; a slow target delays nothing above, and the slots are
    // shared between namespaces, so one tenant's slow server cannot keep
    // another tenant's push waiting for more than one deadline.
    let pushing = Runner::fair(crate::push::CONCURRENCY).run(
        push_keys,
        until_listed(&caches),
        || push_index.keys(),
        |key| crate::push::push(key, push_ctx.clone()),
        shutdown.clone(),
    );
    // Downstream clusters: this routes each RandomSecret to its clusters'
    // runners (one per connection, `push::clusters::link`) and carries out
    // deletions; a second runner writes their status.
    let clusters = async {
        futures::future::join(
            Runner::new(crate::push::CONCURRENCY).run(
                cluster_keys,
                until_listed(&caches),
                || push_index.keys(),
                |key| crate::push::clusters::dispatch(key, cluster_ctx.clone()),
                shutdown.clone(),
            ),
            Runner::new(2).run(
                report_keys,
                until_listed(&caches),
                Vec::new,
                |key| crate::push::clusters::report::write(key, cluster_ctx.clone()),
                shutdown.clone(),
            ),
        )
        .await
    };
    tokio::select! {
        _ = futures::future::join4(run, annotated, pushing, clusters) => info!("controller stopped"),
        _ = shutdown::deadline(shutdown.clone()) => warn!(
            grace_seconds = shutdown::GRACE.as_secs(),
            "in-flight reconciles did not finish in time after the shutdown signal; stopping anyway"
        ),
    }
    // The Vault tokens of Kubernetes-auth logins are revoked, not left to
    // expire (a copy of the process's memory holds nothing usable).
    push_ctx.tokens.revoke_all(Duration::from_secs(2)).await;
    if let Some(e) = elector {
        // Releases the lease (if held) so a standby takes over at once.
        let _ = e.await;
    }
    readiness.set(false);
    shutdown.await;
    servers.await?
}

/// Resolves once every cache has listed, then marks the process ready
/// (before that nothing is created or released). Says what it waits for every 10 s.
async fn listed(caches: &Caches, readiness: &Readiness) {
    let started = Instant::now();
    let mut said = 0;
    while !caches.listed() {
        let waited = started.elapsed().as_secs();
        if waited / 10 > said {
            said = waited / 10;
            warn!(waiting_for = ?caches.waiting_for(), "still waiting for the first list of every watch");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
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

/// Resolves once every cache has listed (the pushes' gate; the reconcile's
/// is [`listed`], which also marks the process ready).
async fn until_listed(caches: &Caches) {
    while !caches.listed() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Who reports Events: this replica (the pod name), else the controller.
fn reporter() -> Reporter {
    let controller = "randomsecret".to_string();
    Reporter {
        instance: std::env::var("POD_NAME").unwrap_or_else(|_| controller.clone()),
        controller,
    }
}
