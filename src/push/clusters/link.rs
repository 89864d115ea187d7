//! One downstream cluster: its client, a runner of its own (so a cluster
//! that does not answer delays no other), and per target namespace the
//! watches retention needs there: our copies and anchors (metadata only,
//! by label) and the ReplicaSets, ControllerRevisions and Pods that
//! reference them (only the names are kept, as upstream).
//!
//! Watches are per namespace, started when a RandomSecret first targets
//! it, so the connection's credentials need rights only in the target
//! namespaces (docs/src/clusters.md).

use super::copy::{self, LABEL_ANCHOR, LABEL_COPY_OF, Origin};
use super::{ClusterError, Context};
use crate::api::{ANNOTATION_CREATED, LABEL_HASH, LABEL_NAME};
use crate::cache::Key;
use crate::cache::feed::{Watched, feed};
use crate::cache::holders::HOLDER_STREAMS;
use crate::cache::holders::Holder;
use crate::cache::index::{MultiIndex, Stream};
use crate::cache::interruptions::Interruptions;
use crate::cache::slim::{ControllerRevisionRefs, PodRefs, ReplicaSetRefs};
use crate::references::{self, Held};
use crate::runtime::runner::{Next, Runner, Triggers};
use crate::runtime::shutdown::Signal;
use crate::runtime::status::Answer as _;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::Api;
use kube::api::{DeleteParams, Preconditions, PropagationPolicy};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// Syncs at once per cluster (each is a few calls to that cluster).
const CONCURRENCY: usize = 2;
/// After a call got no answer, calls fail at once for this long (with the
/// same reason), so a dead cluster holds each of its syncs for moments, not
/// for its timeout every time.
pub const HOLD_DOWN: Duration = Duration::from_secs(10);
/// Each list of a downstream watch asks for pages of this many objects, so
/// that a page of full ReplicaSets or Pods stays well within the reply cap
/// (`capped::MAX_REPLY`).
const PAGE: u32 = 100;
/// Look-alikes remembered as foreign per link at most; then forgotten all
/// at once (each is read whole again once).
const MAX_FOREIGN: usize = 4096;

pub struct Link {
    pub name: String,
    pub client: kube::Client,
    /// Bound of each call to this cluster.
    pub timeout: Duration,
    triggers: Triggers,
    namespaces: Mutex<HashMap<String, Arc<Downstream>>>,
    /// Copies read whole and proven ours: `copy-uid/upstream-uid` (the same
    /// values as that upstream version), or `copy-uid/` (proven ours). Never data.
    proven: Mutex<HashSet<String>>,
    /// Secrets read whole and proven not ours: `uid/resourceVersion`, so a
    /// look-alike is not read whole again on every sync (until it changes).
    foreign: Mutex<HashSet<String>>,
    /// The RandomSecrets sent here (a link that replaces this one gets them).
    served: Mutex<HashSet<Key>>,
    /// Calls fail at once until then (`HOLD_DOWN`).
    down_until: Mutex<Option<std::time::Instant>>,
    tasks: Mutex<JoinSet<()>>,
}

impl Link {
    /// Links cluster `name` and starts its runner, which has `work` done for
    /// each RandomSecret sent here (the cluster push's sync: given by the
    /// caller, so that a link knows nothing of what a sync does).
    pub fn start<W, F>(
        name: &str,
        client: kube::Client,
        timeout: Duration,
        shutdown: Signal,
        work: W,
    ) -> Arc<Link>
    where
        W: Fn(Key, Arc<Link>) -> F + Send + Sync + 'static,
        F: Future<Output = Next> + Send + 'static,
    {
        let (triggers, keys) = mpsc::unbounded_channel();
        let link = Arc::new(Link {
            name: name.to_string(),
            client,
            timeout,
            triggers,
            namespaces: Mutex::default(),
            proven: Mutex::default(),
            foreign: Mutex::default(),
            served: Mutex::default(),
            down_until: Mutex::default(),
            tasks: Mutex::default(),
        });
        let runner = {
            let link = link.clone();
            async move {
                Runner::new(CONCURRENCY)
                    .run(
                        keys,
                        async {},
                        Vec::new,
                        |key| work(key, link.clone()),
                        shutdown,
                    )
                    .await
            }
        };
        link.tasks.lock().expect("tasks lock").spawn(runner);
        link
    }

    /// Stops its runner and watches (the connection changed or went).
    pub fn stop(&self) {
        self.tasks.lock().expect("tasks lock").abort_all();
    }

    /// Has RandomSecret `key` synced with this cluster.
    pub fn trigger(&self, key: &Key) {
        self.served.lock().expect("served lock").insert(key.clone());
        let _ = self.triggers.send(key.clone());
    }

    /// Every RandomSecret sent here.
    pub fn served(&self) -> Vec<Key> {
        self.served
            .lock()
            .expect("served lock")
            .iter()
            .cloned()
            .collect()
    }

    /// RandomSecret `key` has no more business here (its target went).
    pub fn forget(&self, key: &Key) {
        self.served.lock().expect("served lock").remove(key);
    }

    /// One call to this cluster, bounded by its timeout.
    pub async fn bounded<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ClusterError> {
        self.bounded_raw(what, call)
            .await?
            .map_err(|e| ClusterError::downstream(&self.name, what, e))
    }

    /// The same, with the apiserver's answer kept for the caller to read
    /// (AlreadyExists, NotFound); only no answer is an error here.
    pub async fn bounded_raw<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<Result<T, kube::Error>, ClusterError> {
        let now = std::time::Instant::now();
        if self
            .down_until
            .lock()
            .expect("down lock")
            .is_some_and(|t| now < t)
        {
            return Err(ClusterError::unreachable(format!(
                "cluster {}: {what}: not tried, the cluster did not answer moments ago",
                self.name
            )));
        }
        let result = tokio::time::timeout(self.timeout, call).await;
        // No answer at all (a timeout, no connection): hold the cluster down.
        let unanswered = match &result {
            Err(_) => true,
            Ok(Err(e)) => !matches!(e, kube::Error::Api(_)),
            Ok(Ok(_)) => false,
        };
        if unanswered {
            *self.down_until.lock().expect("down lock") = Some(now + HOLD_DOWN);
        }
        result.map_err(|_| {
            ClusterError::unreachable(format!(
                "cluster {}: {what}: no answer within {:?}",
                self.name, self.timeout
            ))
        })
    }

    pub fn secrets(&self, namespace: &str) -> Api<Secret> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The watched state of `namespace`, its watches started on first use.
    pub fn namespace(self: &Arc<Self>, namespace: &str, ctx: &Arc<Context>) -> Arc<Downstream> {
        let mut map = self.namespaces.lock().expect("namespaces lock");
        if let Some(d) = map.get(namespace) {
            return d.clone();
        }
        let d = Arc::new(Downstream::default());
        map.insert(namespace.to_string(), d.clone());
        let mut tasks = self.tasks.lock().expect("tasks lock");
        // Their log lines name the cluster and the namespace.
        let span = tracing::info_span!("downstream", connection = %self.name, namespace);
        let (client, ns) = (self.client.clone(), namespace);
        let key = ctx.caches.secrets.key().clone();
        tasks.spawn(tracing::Instrument::instrument(
            copies(
                Api::namespaced(client.clone(), ns),
                d.clone(),
                key,
                self.triggers.clone(),
                self.name.clone(),
            ),
            span.clone(),
        ));
        tasks.spawn(tracing::Instrument::instrument(
            holders::<ReplicaSetRefs>(
                Api::namespaced(client.clone(), ns),
                "replicasets",
                Stream::ReplicaSets,
                references::replica_set,
                d.clone(),
                self.triggers.clone(),
                self.name.clone(),
            ),
            span.clone(),
        ));
        tasks.spawn(tracing::Instrument::instrument(
            holders::<ControllerRevisionRefs>(
                Api::namespaced(client.clone(), ns),
                "controllerrevisions",
                Stream::ControllerRevisions,
                references::controller_revision,
                d.clone(),
                self.triggers.clone(),
                self.name.clone(),
            ),
            span.clone(),
        ));
        tasks.spawn(tracing::Instrument::instrument(
            holders::<PodRefs>(
                Api::namespaced(client, ns),
                "pods",
                Stream::Pods,
                references::pod,
                d.clone(),
                self.triggers.clone(),
                self.name.clone(),
            ),
            span.clone(),
        ));
        d
    }

    /// Whether copy `copy_uid` was proven ours; with `upstream_uid`, proven
    /// to hold that upstream version's values too.
    pub fn is_proven(&self, copy_uid: &dyn std::fmt::Display, upstream_uid: Option<&str>) -> bool {
        let proof = format!("{copy_uid}/{}", upstream_uid.unwrap_or_default());
        self.proven.lock().expect("proven lock").contains(&proof)
    }

    /// Records copy `copy_uid` as proven ours; with `upstream_uid`, as holding
    /// that upstream version's values too (which proves it ours as well).
    pub fn mark_proven(&self, copy_uid: &dyn std::fmt::Display, upstream_uid: Option<&str>) {
        let mut proven = self.proven.lock().expect("proven lock");
        proven.insert(format!("{copy_uid}/"));
        if let Some(up) = upstream_uid {
            proven.insert(format!("{copy_uid}/{up}"));
        }
    }

    /// Whether the Secret `uid` at `resource_version` was read whole and
    /// found not ours (a change of it is read again).
    pub fn is_foreign(&self, uid: &str, resource_version: &str) -> bool {
        self.foreign
            .lock()
            .expect("foreign lock")
            .contains(&format!("{uid}/{resource_version}"))
    }

    /// Remembers the Secret `uid` at `resource_version` as not ours.
    pub fn mark_foreign(&self, uid: &str, resource_version: &str) {
        let mut foreign = self.foreign.lock().expect("foreign lock");
        if foreign.len() >= MAX_FOREIGN {
            foreign.clear();
        }
        foreign.insert(format!("{uid}/{resource_version}"));
    }

    /// Deletes the anchor of `origin`'s copies in `namespace` if it is ours
    /// (the collector there then removes what only it held). Whether one was
    /// found.
    pub async fn delete_anchor(
        &self,
        origin: &Key,
        base: &str,
        namespace: &str,
        key: &crate::proof::ProofKey,
    ) -> Result<bool, ClusterError> {
        let name = copy::anchor_name(base);
        let api = self.secrets(namespace);
        let Some(found) = self
            .bounded("reading the anchor", api.get_metadata_opt(&name))
            .await?
        else {
            return Ok(false);
        };
        let who = Origin {
            namespace: origin.ns(),
            randomsecret: &origin.name,
        };
        if !copy::proven_anchor(key, &found.metadata, &who) {
            return Ok(false);
        }
        let params = DeleteParams {
            preconditions: found.metadata.uid.clone().map(|uid| Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        let what = "deleting the anchor";
        match self.bounded_raw(what, api.delete(&name, &params)).await? {
            Ok(_) => Ok(true),
            // Gone meanwhile, or another incarnation (not the one proven).
            Err(kube::Error::Api(s)) if s.not_found() || s.conflict() => Ok(false),
            Err(e) => Err(ClusterError::downstream(&self.name, what, e)),
        }
    }
}

/// A copy or anchor in a downstream namespace, as watched (metadata only).
#[derive(Clone, Debug)]
pub struct WatchedCopy {
    pub uid: String,
    pub resource_version: String,
    /// The RandomSecret upstream it belongs to (labels).
    pub origin: Key,
    pub hash: String,
    /// Our creation annotation, else creationTimestamp (to order versions).
    pub created: Option<Time>,
    pub owners: Vec<OwnerReference>,
    /// An anchor (not a version), and whether its proof verifies.
    pub anchor: bool,
    pub proven_anchor: bool,
}

impl WatchedCopy {
    /// Whether `other` is an older state of the same object.
    fn newer_than(&self, other: &WatchedCopy) -> bool {
        let rv = |c: &WatchedCopy| c.resource_version.parse::<u64>().ok();
        self.uid == other.uid && matches!((rv(self), rv(other)), (Some(a), Some(b)) if a > b)
    }

    fn of(meta: &ObjectMeta, key: &crate::proof::ProofKey) -> Option<(String, WatchedCopy)> {
        let labels = meta.labels.as_ref()?;
        let origin = Key::new(labels.get(LABEL_COPY_OF)?, labels.get(LABEL_NAME)?);
        let anchor = labels.get(LABEL_ANCHOR).is_some_and(|v| v == "true");
        let proven_anchor = anchor
            && copy::proven_anchor(
                key,
                meta,
                &Origin {
                    namespace: origin.ns(),
                    randomsecret: &origin.name,
                },
            );
        let created = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_CREATED)?.parse().ok())
            .map(Time)
            .or_else(|| meta.creation_timestamp.clone());
        Some((
            meta.name.clone()?,
            WatchedCopy {
                uid: meta.uid.clone()?,
                resource_version: meta.resource_version.clone().unwrap_or_default(),
                origin,
                hash: labels.get(LABEL_HASH).cloned().unwrap_or_default(),
                created,
                owners: meta.owner_references.clone().unwrap_or_default(),
                anchor,
                proven_anchor,
            },
        ))
    }
}

/// One downstream namespace: who references which name, and our objects.
#[derive(Default)]
pub struct Downstream {
    holders: RwLock<MultiIndex<Holder, Key>>,
    copies: RwLock<HashMap<String, (u32, WatchedCopy)>>,
    copies_epoch: Mutex<u32>,
    copies_listed: AtomicBool,
    /// Failing or relisting watches here: nothing is released meanwhile.
    pub interruptions: Interruptions,
    /// Each watch's last failure, until its next event (for the status,
    /// while a first list has not come).
    failures: Mutex<HashMap<&'static str, ClusterError>>,
}

impl Downstream {
    /// Why a watch here fails now (while it has not listed once).
    pub fn failure(&self) -> Option<ClusterError> {
        self.failures
            .lock()
            .expect("failures lock")
            .values()
            .next()
            .cloned()
    }

    fn failed(&self, what: &'static str, cluster: &str, e: watcher::Error) {
        let err = match e {
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => {
                ClusterError::downstream(cluster, &format!("watching {what}"), e)
            }
            // The apiserver's own words stay out of the status.
            watcher::Error::WatchError(s) => ClusterError::retry(
                format!(
                    "cluster {cluster}: watching {what}: the watch ended with an error ({})",
                    s.code
                ),
                None,
            ),
            watcher::Error::NoResourceVersion => ClusterError::unreachable(format!(
                "cluster {cluster}: watching {what}: an answer without a resourceVersion (is the kubeconfig's server an apiserver?)"
            )),
        };
        // The fixed text only: the kube::Error may quote the downstream.
        tracing::warn!(cluster, watch = what, error = %err, "downstream watch failed; retrying with backoff");
        self.failures
            .lock()
            .expect("failures lock")
            .insert(what, err);
    }

    fn flowing(&self, what: &'static str) {
        self.failures.lock().expect("failures lock").remove(what);
    }

    /// Whether every watch here has listed once.
    pub fn listed(&self) -> bool {
        self.copies_listed.load(Ordering::Acquire)
            && self
                .holders
                .read()
                .expect("holders lock")
                .listed(&HOLDER_STREAMS)
    }

    pub fn copy(&self, name: &str) -> Option<WatchedCopy> {
        self.copies
            .read()
            .expect("copies lock")
            .get(name)
            .map(|(_, c)| c.clone())
    }

    /// The version copies of `origin` here (not its anchor).
    pub fn copies_of(&self, origin: &Key) -> Vec<(String, WatchedCopy)> {
        self.copies
            .read()
            .expect("copies lock")
            .iter()
            .filter(|(_, (_, c))| !c.anchor && &c.origin == origin)
            .map(|(n, (_, c))| (n.clone(), c.clone()))
            .collect()
    }

    /// What a write's response says, before the watch does (never older
    /// than what is known).
    pub fn write_through(&self, meta: &ObjectMeta, key: &crate::proof::ProofKey) {
        if let Some((name, c)) = WatchedCopy::of(meta, key) {
            let epoch = *self.copies_epoch.lock().expect("epoch lock");
            let mut copies = self.copies.write().expect("copies lock");
            if !copies.get(&name).is_some_and(|(_, k)| k.newer_than(&c)) {
                copies.insert(name, (epoch, c));
            }
        }
    }

    pub fn forget(&self, name: &str) {
        self.copies.write().expect("copies lock").remove(name);
    }

    pub fn holders_of(&self, secret: &Key) -> Vec<Holder> {
        self.holders
            .read()
            .expect("holders lock")
            .get(secret)
            .cloned()
            .collect()
    }

    /// Applies one event of the copies' watch; returns the RandomSecrets concerned.
    fn handle_copy(
        &self,
        ev: &Event<PartialObjectMeta<Secret>>,
        key: &crate::proof::ProofKey,
    ) -> Vec<Key> {
        let mut copies = self.copies.write().expect("copies lock");
        let mut epoch = self.copies_epoch.lock().expect("epoch lock");
        match ev {
            Event::Init => {
                *epoch += 1;
                Vec::new()
            }
            Event::InitApply(o) | Event::Apply(o) => match WatchedCopy::of(&o.metadata, key) {
                Some((name, c)) => {
                    let origin = c.origin.clone();
                    match copies.get_mut(&name) {
                        // An event older than our own write's response.
                        Some((e, known)) if known.newer_than(&c) => *e = *epoch,
                        _ => {
                            copies.insert(name, (*epoch, c));
                        }
                    }
                    vec![origin]
                }
                None => Vec::new(),
            },
            Event::Delete(o) => o
                .metadata
                .name
                .as_ref()
                .and_then(|n| copies.remove(n))
                .map(|(_, c)| vec![c.origin])
                .unwrap_or_default(),
            Event::InitDone => {
                let current = *epoch;
                let mut gone = Vec::new();
                copies.retain(|_, (e, c)| {
                    let keep = *e == current;
                    if !keep {
                        gone.push(c.origin.clone());
                    }
                    keep
                });
                self.copies_listed.store(true, Ordering::Release);
                gone
            }
        }
    }
}

/// Our copies and anchors in one namespace (metadata only, by label).
async fn copies(
    api: Api<PartialObjectMeta<Secret>>,
    d: Arc<Downstream>,
    key: crate::proof::ProofKey,
    triggers: Triggers,
    cluster: String,
) {
    let config = watcher::Config::default()
        .labels(LABEL_COPY_OF)
        .page_size(PAGE);
    let (down, interruptions) = (d.clone(), &d.interruptions);
    feed(
        api,
        "secrets",
        config,
        interruptions,
        &triggers,
        |ev| {
            down.flowing("secrets");
            down.handle_copy(ev, &key)
        },
        |e| down.failed("secrets", &cluster, e),
        || resync(&down, &triggers),
    )
    .await
}

/// A holder kind in one namespace; a change of what it references syncs the
/// RandomSecrets whose copies gained or lost it.
async fn holders<K: Watched>(
    api: Api<K>,
    what: &'static str,
    stream: Stream,
    extract: fn(&K) -> Held,
    d: Arc<Downstream>,
    triggers: Triggers,
    cluster: String,
) {
    let (down, interruptions) = (d.clone(), &d.interruptions);
    feed(
        api,
        what,
        watcher::Config::default().page_size(PAGE),
        interruptions,
        &triggers,
        |ev| {
            down.flowing(what);
            let changed = down
                .holders
                .write()
                .expect("holders lock")
                .handle(stream, ev, extract);
            let copies = down.copies.read().expect("copies lock");
            changed
                .iter()
                .filter_map(|secret| copies.get(&*secret.name).map(|(_, c)| c.origin.clone()))
                .collect()
        },
        |e| down.failed(what, &cluster, e),
        || resync(&down, &triggers),
    )
    .await
}

/// Every watch here flows again: what was deferred is decided now.
fn resync(d: &Downstream, triggers: &Triggers) {
    let origins: HashSet<Key> = d
        .copies
        .read()
        .expect("copies lock")
        .values()
        .map(|(_, c)| c.origin.clone())
        .collect();
    for k in origins {
        let _ = triggers.send(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile downstream answers a watch with a Status that echoes the
    /// copy it was sent: the log says which watch failed, in our words only.
    #[test]
    fn a_failed_downstream_watch_is_logged_in_fixed_words() {
        let echoed = "echoed-copy-c2VjcmV0";
        let d = Downstream::default();
        let written = crate::testing::logs::written(None, || {
            for code in [403, 500] {
                let status = kube::core::Status::failure(echoed, "Forbidden").with_code(code);
                let e = kube::Error::Api(Box::new(status));
                d.failed("secrets", "east", watcher::Error::WatchFailed(e));
            }
            let status = kube::core::Status::failure(echoed, "InternalError").with_code(500);
            d.failed(
                "secrets",
                "east",
                watcher::Error::WatchError(Box::new(status)),
            );
        });
        assert_eq!(
            written.matches("downstream watch failed").count(),
            3,
            "{written}"
        );
        assert!(
            written.contains("cluster east: watching secrets"),
            "{written}"
        );
        assert!(!written.contains(echoed), "{written}");
        assert!(d.failure().is_some());
    }
}
