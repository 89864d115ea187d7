//! Wires the controller process: client, CRD check, watches and caches, the
//! reconciler, admin servers and graceful shutdown.

use crate::admin::{self, Readiness};
use crate::api::{
    ANNOTATION_CREATED, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, RandomSecret,
};
use crate::cli::ControllerArgs;
use crate::controller::{self, Context};
use crate::index::{Indexes, StreamId};
use crate::leader::{Elector, LeaseConfig};
use crate::metrics::Metrics;
use crate::references::{self, Holder};
use crate::tracking::{self, WorkloadKind};
use anyhow::{Context as _, bail};
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Controller, WatchStreamExt, predicates, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
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

/// The watched scope: one namespace, or all.
fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Sets `flag` when a watch's first list is done (placed after `reflect`,
/// so the store has applied it).
fn mark_listed<K>(flag: &Arc<AtomicBool>) -> impl Fn(&watcher::Event<K>) + Send + Sync + 'static {
    let flag = flag.clone();
    move |ev| {
        if matches!(ev, watcher::Event::InitDone) {
            flag.store(true, Ordering::Release);
        }
    }
}

/// How long in-flight reconciles may run after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// The labels and annotations of our Secrets that the reconciler reads.
const KEPT_SECRET_METADATA: &[&str] =
    &[LABEL_NAME, LABEL_HASH, LABEL_MANAGED_BY, ANNOTATION_CREATED];

// Stream ids of the indexes' watches (see `index::MultiIndex`).
const REPLICASETS: StreamId = 0;
const REVISIONS: StreamId = 1;
const PODS: StreamId = 2;
const SECRETS: StreamId = 3;
const DEPLOYMENTS: StreamId = 4;
const STATEFULSETS: StreamId = 5;
const DAEMONSETS: StreamId = 6;

/// Feeds the tracking index from one workload kind's watch events, and maps
/// each workload to the RandomSecrets it tracks.
fn track<K>(
    client: &Client,
    scope: Option<&str>,
    indexes: &Arc<Indexes>,
    stream: StreamId,
    kind: WorkloadKind,
) -> impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let ix = indexes.clone();
    watcher(api::<K>(client, scope), watcher::Config::default())
        .default_backoff()
        .inspect_ok(move |ev| {
            ix.tracking
                .write()
                .expect("index lock")
                .handle(stream, ev, |o| {
                    let (w, names) = tracking::workload(kind, o);
                    let keys = names
                        .into_iter()
                        .map(|n| (w.namespace.clone(), n))
                        .collect();
                    (w, keys)
                })
        })
        .touched_objects()
}

fn tracked_randomsecrets<K: ResourceExt>(obj: K) -> Vec<ObjectRef<RandomSecret>> {
    let ns = obj.namespace().unwrap_or_default();
    tracking::tracked_names(obj.annotations())
        .iter()
        .map(|n| ObjectRef::new(n).within(&ns))
        .collect()
}

/// Feeds the reference index from one holder kind's watch events.
fn index_holders<K>(
    indexes: &Arc<Indexes>,
    stream: StreamId,
    extract: fn(&K) -> (Holder, BTreeSet<String>),
) -> impl Fn(&watcher::Event<K>) + Send + Sync + 'static
where
    K: Send + Sync + 'static,
{
    let indexes = indexes.clone();
    move |ev| {
        indexes
            .refs
            .write()
            .expect("index lock")
            .handle(stream, ev, |o| {
                let (h, names) = extract(o);
                let keys = names
                    .into_iter()
                    .map(|n| (h.namespace.clone(), n))
                    .collect();
                (h, keys)
            })
    }
}

/// Maps a holder to the RandomSecrets whose versions it references.
fn holder_to_randomsecrets<K>(
    indexes: &Arc<Indexes>,
    extract: fn(&K) -> (Holder, BTreeSet<String>),
) -> impl Fn(K) -> Vec<ObjectRef<RandomSecret>> + Send + Sync + 'static
where
    K: Send + Sync + 'static,
{
    let indexes = indexes.clone();
    move |obj| {
        let (h, names) = extract(&obj);
        names
            .iter()
            .filter_map(|n| indexes.owner_of(&h.namespace, n))
            .map(|rs| ObjectRef::new(&rs).within(&h.namespace))
            .collect()
    }
}

fn secret_version(s: &PartialObjectMeta<Secret>) -> ((String, String), Option<(String, String)>) {
    let ns = s.namespace().unwrap_or_default();
    let owner = s
        .labels()
        .get(LABEL_NAME)
        .map(|rs| (ns.clone(), rs.clone()));
    ((ns, s.name_any()), owner)
}

fn lease_config(args: &ControllerArgs) -> anyhow::Result<LeaseConfig> {
    // As client-go requires: the leader gives up (renew deadline) before a standby may take over.
    if !(args.lease_duration_seconds > args.renew_deadline_seconds
        && args.renew_deadline_seconds > args.retry_period_seconds)
    {
        bail!(
            "leader election needs --lease-duration-seconds > --renew-deadline-seconds > --retry-period-seconds (got {} > {} > {})",
            args.lease_duration_seconds,
            args.renew_deadline_seconds,
            args.retry_period_seconds
        );
    }
    let namespace = args
        .leader_election_namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| "default".into());
    // The pod name where there is one; a random suffix keeps two processes on one host apart.
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "randomsecret".into());
    let suffix: String = crate::generate::value(&crate::version::Generated {
        length: 6,
        charset: crate::api::Charset::Lower,
        symbols: String::new(),
    })
    .unwrap_or_default();
    Ok(LeaseConfig {
        namespace,
        name: args.leader_election_id.clone(),
        identity: format!("{host}-{suffix}"),
        lease_duration: Duration::from_secs(args.lease_duration_seconds),
        renew_deadline: Duration::from_secs(args.renew_deadline_seconds),
        retry_period: Duration::from_secs(args.retry_period_seconds),
    })
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
    let lease = if args.leader_elect {
        Some(lease_config(&args)?)
    } else {
        None
    };
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

    let scope = args.namespace.as_deref();
    let indexes = Arc::new(Indexes {
        ref_streams: vec![REPLICASETS, REVISIONS, PODS],
        version_streams: vec![SECRETS],
        ..Default::default()
    });

    // RandomSecrets: cached (without managedFields), reconciled on spec changes only.
    let written = Arc::new(crate::status::Written::default());
    // Set once a store has applied its first list. Flags, not polls of
    // `Store::wait_until_ready()`: that future keeps one waker, so a second
    // poller (such as `now_or_never`) can steal the wake-up of a task awaiting it.
    let (rs_listed, secrets_listed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let seen = written.clone();
    let (rs_store, rs_writer) = reflector::store::<RandomSecret>();
    let rs_stream = watcher(
        api::<RandomSecret>(&client, scope),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(|rs| {
        // Cached only for the reconciler, which reads name, uid, generation,
        // creation time, spec and status: the rest (managedFields, kubectl's
        // last-applied annotation, labels) would be held 10,000 times over.
        let m = &mut rs.metadata;
        (m.managed_fields, m.annotations, m.labels) = (None, None, None);
    })
    .inspect_ok(move |ev| {
        let key = |rs: &RandomSecret| (rs.namespace().unwrap_or_default(), rs.name_any());
        match ev {
            watcher::Event::Apply(rs) | watcher::Event::InitApply(rs) => {
                seen.seen(&key(rs), &rs.resource_version().unwrap_or_default())
            }
            watcher::Event::Delete(rs) => seen.forget(&key(rs)),
            _ => {}
        }
    })
    .reflect(rs_writer)
    .inspect_ok(mark_listed(&rs_listed))
    .applied_objects()
    .predicate_filter(predicates::generation, Default::default());

    // Our Secrets: metadata only (never data), selected by label, indexed by RandomSecret.
    let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY}");
    let (secret_store, secret_writer) = reflector::store::<PartialObjectMeta<Secret>>();
    let version_index = indexes.clone();
    let secret_stream = watcher(
        api::<PartialObjectMeta<Secret>>(&client, scope),
        watcher::Config::default().labels(&selector),
    )
    .default_backoff()
    .modify(|s| {
        // Only what the reconciler reads: our labels and creation annotation.
        s.metadata.managed_fields = None;
        let maps = [&mut s.metadata.labels, &mut s.metadata.annotations];
        for m in maps.into_iter().flatten() {
            m.retain(|k, _| KEPT_SECRET_METADATA.contains(&k.as_str()));
        }
    })
    .inspect_ok(move |ev| {
        version_index
            .versions
            .write()
            .expect("index lock")
            .handle(SECRETS, ev, |s| {
                let (key, owner) = secret_version(s);
                (key, owner.into_iter().collect())
            })
    })
    .reflect(secret_writer)
    .inspect_ok(mark_listed(&secrets_listed))
    .touched_objects();
    let secret_to_randomsecret = |s: PartialObjectMeta<Secret>| {
        let ns = s.namespace().unwrap_or_default();
        s.labels()
            .get(LABEL_NAME)
            .map(|rs| ObjectRef::new(rs).within(&ns))
    };

    // What references Secrets: only the names are kept, in the reference index.
    let replicasets = watcher(
        api::<ReplicaSet>(&client, scope),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect_ok(index_holders(
        &indexes,
        REPLICASETS,
        references::replica_set,
    ))
    .touched_objects();
    let revisions = watcher(
        api::<ControllerRevision>(&client, scope),
        watcher::Config::default(),
    )
    .default_backoff()
    .inspect_ok(index_holders(
        &indexes,
        REVISIONS,
        references::controller_revision,
    ))
    .touched_objects();
    let pods = watcher(api::<Pod>(&client, scope), watcher::Config::default())
        .default_backoff()
        .inspect_ok(index_holders(&indexes, PODS, references::pod))
        .touched_objects();

    // Tracking mode: workloads annotated randomsecret.io/track.
    let deployments = track::<Deployment>(
        &client,
        scope,
        &indexes,
        DEPLOYMENTS,
        WorkloadKind::Deployment,
    );
    let statefulsets = track::<StatefulSet>(
        &client,
        scope,
        &indexes,
        STATEFULSETS,
        WorkloadKind::StatefulSet,
    );
    let daemonsets = track::<DaemonSet>(
        &client,
        scope,
        &indexes,
        DAEMONSETS,
        WorkloadKind::DaemonSet,
    );

    tokio::spawn(wait_ready(
        rs_listed.clone(),
        secrets_listed.clone(),
        indexes.clone(),
        readiness.clone(),
    ));

    // Leader election: only the leader reconciles; on taking over it
    // reconciles everything, since a standby skipped what changed meanwhile.
    let (leader_tx, leader_rx) = tokio::sync::watch::channel(!args.leader_elect);
    let elector = if let Some(config) = lease {
        info!(lease = %format!("{}/{}", config.namespace, config.name), identity = %config.identity, "leader election on");
        Some(tokio::spawn(
            Elector::new(client.clone(), config).run(leader_tx, shutdown.clone()),
        ))
    } else {
        None
    };
    // One item per take-over (false -> true), for reconcile_all_on.
    metrics.leader.set(i64::from(!args.leader_elect));
    let gauge = metrics.leader.clone();
    let takeovers = futures::stream::unfold(
        (leader_rx.clone(), !args.leader_elect),
        move |(mut rx, mut was)| {
            let gauge = gauge.clone();
            async move {
                loop {
                    rx.changed().await.ok()?;
                    let leading = *rx.borrow_and_update();
                    gauge.set(i64::from(leading));
                    if leading && !was {
                        return Some(((), (rx, leading)));
                    }
                    was = leading;
                }
            }
        },
    );

    let ctx = Arc::new(Context {
        client: client.clone(),
        secrets: secret_store,
        indexes: indexes.clone(),
        events: crate::events::Events::new(
            client.clone(),
            "randomsecret",
            std::env::var("POD_NAME").ok(),
        ),
        metrics,
        released: Default::default(),
        written,
        secrets_listed,
        leader: leader_rx.clone(),
    });
    info!(namespace = ?args.namespace, concurrency = args.concurrency, "starting controller");
    let controller = Controller::for_stream(rs_stream, rs_store)
        .watches_stream(secret_stream, secret_to_randomsecret)
        .watches_stream(
            replicasets,
            holder_to_randomsecrets(&indexes, references::replica_set),
        )
        .watches_stream(
            revisions,
            holder_to_randomsecrets(&indexes, references::controller_revision),
        )
        .watches_stream(pods, holder_to_randomsecrets(&indexes, references::pod))
        .watches_stream(deployments, tracked_randomsecrets::<Deployment>)
        .watches_stream(statefulsets, tracked_randomsecrets::<StatefulSet>)
        .watches_stream(daemonsets, tracked_randomsecrets::<DaemonSet>)
        .with_config(kube::runtime::controller::Config::default().concurrency(args.concurrency))
        .reconcile_all_on(takeovers)
        .graceful_shutdown_on(shutdown.clone())
        .run(controller::reconcile, controller::error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "controller event");
            }
        });
    // In-flight reconciles get SHUTDOWN_GRACE after SIGTERM, then the process
    // stops anyway (within a pod's default 30 s grace period): every step of a
    // reconcile is safe to cut short and repeat.
    let deadline = {
        let shutdown = shutdown.clone();
        async move {
            shutdown.await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        }
    };
    tokio::select! {
        _ = controller => info!("controller stopped"),
        _ = deadline => warn!(
            grace_seconds = SHUTDOWN_GRACE.as_secs(),
            "in-flight reconciles did not finish in time after the shutdown signal; stopping anyway"
        ),
    }
    if let Some(e) = elector {
        // Releases the lease (if held) so a standby takes over at once.
        let _ = e.await;
    }
    readiness.set(false);
    shutdown.await;
    match servers.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(e.into()),
    }
}

/// Ready once every cache and index has listed (before that nothing is released).
async fn wait_ready(
    rs_listed: Arc<AtomicBool>,
    secrets_listed: Arc<AtomicBool>,
    indexes: Arc<Indexes>,
    readiness: Readiness,
) {
    let started = std::time::Instant::now();
    let mut said = 0;
    loop {
        let (rs_ready, secrets_ready) = (
            rs_listed.load(Ordering::Acquire),
            secrets_listed.load(Ordering::Acquire),
        );
        let synced = indexes.synced();
        if rs_ready && secrets_ready && synced {
            info!("caches synced; ready");
            readiness.set(true);
            return;
        }
        let waited = started.elapsed().as_secs();
        if waited / 10 > said {
            said = waited / 10;
            warn!(
                rs_ready,
                secrets_ready,
                indexes_synced = synced,
                "still waiting for the first list of every watch"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
