//! One function per watch: each runs a watcher, feeds its cache or index and
//! sends the keys of the RandomSecrets concerned to the runner.
//! Each runs through [`crate::cache::feed`] (paginated, with backoff).

use crate::annotated::rules::MANAGED_LABEL;
use crate::annotated::tracked::Tracked;
use crate::api::{LABEL_MANAGED_BY, MANAGED_BY};
use crate::cache::feed::{Watched, feed};
use crate::cache::holders::WorkloadKind;
use crate::cache::index::Stream;
use crate::cache::lists::Lists;
use crate::cache::slim::{ControllerRevisionRefs, PodRefs, RandomSecretObject, ReplicaSetRefs};
use crate::cache::{Caches, Key};
use crate::references::{self, Held};
use crate::runtime::runner::Triggers;
use crate::shard::Shard;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use std::fmt::Debug;
use std::sync::Arc;
use tracing::{info, warn};

/// What every watch needs: where to watch, what to feed, whom to tell.
#[derive(Clone)]
pub struct Watch {
    pub client: Client,
    /// One namespace, or all.
    pub scope: Option<String>,
    pub caches: Arc<Caches>,
    pub triggers: Triggers,
    /// This replica's shard: the watches of what it reconciles are narrowed to it.
    pub shard: Option<Arc<Shard>>,
    /// How every watch reads its initial state.
    pub lists: Lists,
}

/// Every watch of the controller, ready to spawn.
pub fn all(
    w: &Watch,
    tracking: bool,
    push: Arc<crate::push::index::Index>,
    pushes: Vec<Triggers>,
) -> Vec<BoxFuture<'static, ()>> {
    let mut all = vec![
        randomsecrets(w.clone(), push, pushes).boxed(),
        secrets(w.clone()).boxed(),
        replicasets(w.clone()).boxed(),
        controller_revisions(w.clone()).boxed(),
        pods(w.clone()).boxed(),
    ];
    // The kinds the user listed (`--reference`), registered at start.
    for i in crate::references::custom::indexes() {
        all.push(custom_holders(w.clone(), i).boxed());
    }
    // Tracking mode only: without it the controller neither reads nor may
    // patch workloads.
    if tracking {
        all.extend([
            deployments(w.clone()).boxed(),
            statefulsets(w.clone()).boxed(),
            daemonsets(w.clone()).boxed(),
            rollouts(w.clone()).boxed(),
        ]);
    }
    all
}

impl Watch {
    /// `base` (a label selector, may be empty) narrowed to the shard.
    fn selector(&self, base: &str) -> String {
        narrowed(self.shard.as_deref(), base)
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        crate::runtime::client::scoped(&self.client, self.scope.as_deref())
    }

    /// Runs the watch `K` (with backoff), handing each event to `apply`,
    /// which feeds a cache and returns the RandomSecrets to reconcile.
    async fn feed<K>(
        &self,
        what: &'static str,
        config: watcher::Config,
        apply: impl FnMut(&watcher::Event<K>) -> Vec<Key>,
    ) where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + Debug
            + serde::de::DeserializeOwned
            + Send
            + 'static,
        K::DynamicType: Default,
    {
        self.feed_api(self.api::<K>(), what, config, apply).await
    }

    /// [`Watch::feed`] of the watch of `api` (a dynamic kind's, say).
    async fn feed_api<K>(
        &self,
        api: Api<K>,
        what: &'static str,
        config: watcher::Config,
        mut apply: impl FnMut(&watcher::Event<K>) -> Vec<Key>,
    ) where
        K: Resource + Clone + Debug + serde::de::DeserializeOwned + Send + 'static,
    {
        feed(
            api,
            what,
            self.lists.config(config),
            &self.caches.interruptions,
            &self.triggers,
            |ev| {
                let keys = apply(ev);
                self.caches.note_listed();
                keys
            },
            |e| warn!(watch = what, error = %e, "watch failed; retrying with backoff (no version is released until every watch flows again)"),
            || {
                // Decisions deferred meanwhile are taken now, on current caches.
                info!(
                    watch = what,
                    "every watch flows again: reconciling every RandomSecret"
                );
                for key in self.caches.to_reconcile() {
                    let _ = self.triggers.send(key);
                }
            },
        )
        .await
    }
}

/// The RandomSecrets: into their compact cache (reconciled on a new spec,
/// generation), and into the push's index, whose keys go to the push
/// runners (`pushes`: Vault, clusters).
pub async fn randomsecrets(w: Watch, push: Arc<crate::push::index::Index>, pushes: Vec<Triggers>) {
    let config = match w.selector("") {
        s if s.is_empty() => watcher::Config::default(),
        s => watcher::Config::default().labels(&s),
    };
    w.feed::<RandomSecretObject>("randomsecrets", config, |ev| {
        for key in push.handle(ev) {
            for p in &pushes {
                let _ = p.send(key.clone());
            }
        }
        w.caches.randomsecrets.handle(ev)
    })
    .await
}

/// Our Secrets: metadata only (never data), selected by label (and by the
/// shard labels versions copy from their RandomSecret).
pub async fn secrets(w: Watch) {
    let selector = w.selector(&format!("{LABEL_MANAGED_BY}={MANAGED_BY}"));
    w.feed::<PartialObjectMeta<Secret>>(
        "secrets",
        watcher::Config::default().labels(&selector),
        |ev| w.caches.secrets.handle(ev),
    )
    .await
}

/// Annotation mode: Secrets labelled `randomsecret.io/managed=true`,
/// metadata only (never data), into their compact cache; one that may lack
/// keys goes to the filler (`fills`). Apart from the caches retention reads,
/// so a failure of it never holds back a release.
pub async fn annotated_secrets(w: Watch, tracked: Arc<Tracked>, fills: Triggers) {
    let selector = w.selector(&format!("{MANAGED_LABEL}=true"));
    let config = w.lists.config(watcher::Config::default().labels(&selector));
    apart(
        w.api::<PartialObjectMeta<Secret>>(),
        "annotated secrets",
        config,
        |ev| {
            for key in tracked.handle(ev) {
                let _ = fills.send(key);
            }
        },
    )
    .await
}

/// A holder kind into the reference index: a change of what it references
/// reconciles the RandomSecrets whose versions gained or lost it.
async fn holders<K>(w: Watch, what: &'static str, stream: Stream, extract: fn(&K) -> Held)
where
    K: Watched,
{
    w.feed::<K>(what, watcher::Config::default(), |ev| {
        let changed = w
            .caches
            .holders
            .0
            .write()
            .expect("holders lock")
            .handle(stream, ev, extract);
        changed
            .iter()
            .filter_map(|secret| w.caches.secrets.randomsecret_of(secret))
            .collect()
    })
    .await
}

pub async fn replicasets(w: Watch) {
    holders::<ReplicaSetRefs>(
        w,
        "replicasets",
        Stream::ReplicaSets,
        references::replica_set,
    )
    .await
}

pub async fn controller_revisions(w: Watch) {
    let extract = references::controller_revision;
    holders::<ControllerRevisionRefs>(
        w,
        "controllerrevisions",
        Stream::ControllerRevisions,
        extract,
    )
    .await
}

pub async fn pods(w: Watch) {
    holders::<PodRefs>(w, "pods", Stream::Pods, references::pod).await
}

/// A custom holder kind (`--reference`): whole objects (the paths may be
/// anywhere in them), into the reference index as the built-in holders
/// are, its failures retention's interruptions as theirs.
async fn custom_holders(w: Watch, index: u16) {
    let kind = &crate::references::custom::registered()[usize::from(index)];
    let resource = kind.api_resource();
    let api: Api<kube::api::DynamicObject> = match &w.scope {
        Some(ns) => Api::namespaced_with(w.client.clone(), ns, &resource),
        None => Api::all_with(w.client.clone(), &resource),
    };
    // The interruptions are keyed by a static name: one per kind, leaked once.
    let what: &'static str =
        Box::leak(format!("{} ({})", kind.plural, kind.group).into_boxed_str());
    w.feed_api(api, what, watcher::Config::default(), |ev| {
        let changed = w.caches.holders.0.write().expect("holders lock").handle(
            Stream::Custom(index),
            ev,
            |o| references::custom(index, kind, o),
        );
        changed
            .iter()
            .filter_map(|secret| w.caches.secrets.randomsecret_of(secret))
            .collect()
    })
    .await
}

/// Tracking mode: workloads of one kind (metadata only) annotated
/// randomsecret.io/track; a change of what they track reconciles those RandomSecrets.
async fn workloads<K>(w: Watch, kind: WorkloadKind, stream: Stream)
where
    K: Watched + Sync,
{
    w.feed::<PartialObjectMeta<K>>(kind.as_str(), watcher::Config::default(), |ev| {
        track(&w, kind, stream, ev)
    })
    .await
}

/// A workload watch's event into the tracking index.
fn track<K: Watched>(
    w: &Watch,
    kind: WorkloadKind,
    stream: Stream,
    ev: &watcher::Event<PartialObjectMeta<K>>,
) -> Vec<Key> {
    w.caches
        .tracking
        .0
        .write()
        .expect("tracking lock")
        .handle(stream, ev, |o| crate::tracking::workload(kind, &o.metadata))
}

/// How often tracking looks for Argo Rollouts' CRD until it is served.
const ROLLOUTS_LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Tracking mode: Argo Rollouts, once their CRD is served (looked for every
/// minute until then: installing Argo Rollouts after the controller needs
/// no restart). Its failures are its own, not retention's interruptions: a
/// Rollout holds versions through its ReplicaSets, which the reference index
/// watches; this watch only tells which Rollouts track what, and a cluster
/// without Argo Rollouts (or one that removes it) must not hold back every
/// release.
pub async fn rollouts(w: Watch) {
    let kind = WorkloadKind::Rollout;
    let mut told = false;
    loop {
        let resource = kind.api_resource();
        match crate::runtime::client::served(&w.client, &resource.api_version, &resource.kind).await
        {
            Ok(Some(_)) => break,
            Ok(None) if !told => {
                info!(
                    "tracking: Argo Rollouts is not installed (no argoproj.io/v1alpha1 rollouts); looking again every minute"
                );
                told = true;
            }
            Ok(None) => {}
            Err(e) => {
                warn!(error = %e, "tracking: looking for Argo Rollouts' CRD; again in a minute")
            }
        }
        tokio::time::sleep(ROLLOUTS_LOOK_EVERY).await;
    }
    info!("tracking: watching Argo Rollouts");
    let own = crate::cache::interruptions::Interruptions::default();
    feed(
        w.api::<PartialObjectMeta<crate::cache::slim::RolloutObject>>(),
        "rollouts",
        w.lists.config(watcher::Config::default()),
        &own,
        &w.triggers,
        |ev| track(&w, kind, Stream::Rollouts, ev),
        |e| warn!(watch = "rollouts", error = %e, "watch failed; retrying with backoff"),
        || {},
    )
    .await
}

pub async fn deployments(w: Watch) {
    workloads::<Deployment>(w, WorkloadKind::Deployment, Stream::Deployments).await
}

pub async fn statefulsets(w: Watch) {
    workloads::<StatefulSet>(w, WorkloadKind::StatefulSet, Stream::StatefulSets).await
}

pub async fn daemonsets(w: Watch) {
    workloads::<DaemonSet>(w, WorkloadKind::DaemonSet, Stream::DaemonSets).await
}

/// The stamp wing's three watches (`stamp::cache`): ClusterRandomSecrets,
/// then, once one exists, namespaces (metadata only) and stamped
/// RandomSecrets (by label). Apart
/// from the caches retention reads, so a failure of one never holds back a
/// release. Each sends the ClusterRandomSecrets concerned to `triggers`.
pub fn stamps(
    client: &Client,
    shard: Option<&Shard>,
    lists: Lists,
    stamps: Arc<crate::stamp::cache::Stamps>,
    triggers: Triggers,
) -> Vec<BoxFuture<'static, ()>> {
    use crate::api::RandomSecret;
    use crate::api::cluster::{ClusterRandomSecret, LABEL_CLUSTER};
    use crate::stamp::cache::{StampedEntry, Stamps};
    use k8s_openapi::api::core::v1::Namespace;
    let cluster = |name: &str| Key::new("", name);
    let (s1, t1) = (stamps.clone(), triggers.clone());
    // A shard stamps the ClusterRandomSecrets it matches; the stamped
    // RandomSecrets are the shard's of their own labels (the template's).
    let config = lists.config(match narrowed(shard, "") {
        s if s.is_empty() => watcher::Config::default(),
        s => watcher::Config::default().labels(&s),
    });
    let clusters = apart(
        Api::<ClusterRandomSecret>::all(client.clone()),
        "clusterrandomsecrets",
        config,
        move |ev| {
            if let Some(name) = s1.clusters.handle(ev, Stamps::cluster_of) {
                s1.wanted.raise_if(true);
                let _ = t1.send(cluster(&name));
            }
        },
    );
    let (s2, t2) = (stamps.clone(), triggers.clone());
    let wanted = stamps.clone();
    let namespaces = apart(
        Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
        "namespaces",
        lists.config(watcher::Config::default()),
        move |ev| {
            // A namespace made, relabelled or deleted may change what any
            // ClusterRandomSecret selects (they are few); the initial list
            // is covered by the runner's first look at each.
            let live = matches!(ev, watcher::Event::Apply(_) | watcher::Event::Delete(_));
            s2.namespaces.handle(ev, Stamps::namespace_of);
            if live {
                for k in s2.cluster_keys() {
                    let _ = t2.send(k);
                }
            }
        },
    );
    let namespaces = async move {
        wanted.wanted.wait().await;
        namespaces.await
    };
    let (s3, t3) = (stamps.clone(), triggers);
    let stamped = apart(
        Api::<RandomSecret>::all(client.clone()),
        "stamped randomsecrets",
        lists.config(watcher::Config::default().labels(LABEL_CLUSTER)),
        move |ev| {
            let claimed = match ev {
                watcher::Event::Apply(rs) | watcher::Event::Delete(rs) => {
                    StampedEntry::of(rs).map(|(_, e)| e.claim.cluster)
                }
                _ => None,
            };
            let key = s3.stamped.handle(ev, StampedEntry::of);
            if let (watcher::Event::Delete(_), Some(key)) = (ev, key) {
                s3.forget(&key);
            }
            if let Some(name) = claimed {
                let _ = t3.send(cluster(&name));
            }
        },
    );
    let stamped = async move {
        stamps.wanted.wait().await;
        stamped.await
    };
    vec![clusters.boxed(), namespaces.boxed(), stamped.boxed()]
}

/// `base` (a label selector, may be empty) narrowed to `shard`.
fn narrowed(shard: Option<&Shard>, base: &str) -> String {
    shard.map_or_else(|| base.to_string(), |s| s.narrow(base))
}

/// Runs a watch apart from the caches retention reads (annotation mode's,
/// the stamp wing's), with backoff, handing each event to `apply`.
async fn apart<K>(
    api: Api<K>,
    what: &'static str,
    config: watcher::Config,
    mut apply: impl FnMut(&watcher::Event<K>),
) where
    K: Resource + Clone + Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    while let Some(ev) = events.next().await {
        match ev {
            Ok(ev) => apply(&ev),
            Err(e) => warn!(watch = what, error = %e, "watch failed; retrying with backoff"),
        }
    }
}
