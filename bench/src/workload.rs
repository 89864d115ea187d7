//! The objects the benchmark writes, the writes themselves (with a fixed
//! concurrency), and watches that time when objects become ready.

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use randomsecret::api::{
    ANNOTATION_CREATED, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, RandomSecret,
    VersionState, VersionStatus,
};
use randomsecret::cache::previous::Previous;
use randomsecret::reconciler::status::{self, Outcome, Versions};
use randomsecret::shard::SHARD_KEY;
use randomsecret::version::Version;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Label on everything the benchmark creates, valued by run.
pub const RUN_LABEL: &str = "bench.randomsecret.io/run";

/// The longest any phase waits for a set to converge.
pub const LIMIT: Duration = Duration::from_secs(1800);

/// One generated 32-character password and a static user name: a typical credential.
pub fn spec(rotation: &str) -> Value {
    json!({"keys": {"password": {"length": 32}}, "static": {"username": "app"}, "rotation": rotation})
}

pub fn random_secret(name: &str, run: &str, rotation: &str) -> Result<RandomSecret> {
    random_secret_with(name, run, &spec(rotation))
}

/// A RandomSecret `name` of `spec`, labelled `run`.
pub fn random_secret_with(name: &str, run: &str, spec: &Value) -> Result<RandomSecret> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": name, "labels": {RUN_LABEL: run}},
        "spec": spec,
    }))?)
}

/// Namespace and name of object `i` of a run spread over `namespaces`.
pub fn place(prefix: &str, namespaces: usize, i: usize) -> (String, String) {
    (format!("{prefix}-{}", i % namespaces), format!("rs-{i:05}"))
}

/// Runs `f(0..n)` with at most `concurrency` calls in flight.
pub async fn run_concurrently<F, Fut>(n: usize, concurrency: usize, f: F) -> Result<()>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    futures::stream::iter(0..n)
        .map(f)
        .buffer_unordered(concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// How long after a namespace's DELETE the apiserver's NamespaceLifecycle
/// admission looks a namespace of that name up live (a GET through the
/// apiserver) on every write into it (`forceLiveLookupTTL`). A set made
/// again under the same names sooner pays one more request per write: the
/// first run of each interleaved pair did, as it follows its own side's
/// run of the pair before, and at 1,000 it ran some 20 % slower for it.
const LIVE_LOOKUP: Duration = Duration::from_secs(30);

/// When the namespaces of each prefix were last deleted.
static DELETED: Mutex<BTreeMap<String, Instant>> = Mutex::new(BTreeMap::new());

/// What is left at `now` of the live lookups of namespaces deleted at `deleted`
/// (a second more than the apiserver's, for its clock).
fn live_lookup_left(deleted: Option<Instant>, now: Instant) -> Option<Duration> {
    let until = deleted? + LIVE_LOOKUP + Duration::from_secs(1);
    until.checked_duration_since(now).filter(|d| !d.is_zero())
}

/// The apiserver was restarted: its list of namespaces deleted in the last
/// 30 s (the NamespaceLifecycle admission plugin's, in memory) is empty, so
/// no namespace needs waiting out.
pub fn apiserver_restarted() {
    DELETED.lock().expect("deleted lock").clear();
}

/// Creates the namespaces `<prefix>-0..count`; when they were deleted less
/// than [`LIVE_LOOKUP`] ago, first waits that out, so that no timed run
/// pays the apiserver's live lookups.
pub async fn create_namespaces(client: &Client, prefix: &str, count: usize) -> Result<()> {
    let deleted = DELETED.lock().expect("deleted lock").get(prefix).copied();
    if let Some(left) = live_lookup_left(deleted, Instant::now()) {
        eprintln!(
            "bench: {prefix}: waiting {:.1} s (the apiserver looks up namespaces deleted in the last 30 s live on every write)",
            left.as_secs_f64()
        );
        tokio::time::sleep(left).await;
    }
    let api: Api<Namespace> = Api::all(client.clone());
    for k in 0..count {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": format!("{prefix}-{k}")}}))?;
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Deletes the namespaces `<prefix>-0..count` and waits until they are gone.
pub async fn delete_namespaces(client: &Client, prefix: &str, count: usize) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    // The controller may be stopped by now: deletion protection's
    // finalizers would hold the versions, and the namespaces, for good.
    for k in 0..count {
        let ns = format!("{prefix}-{k}");
        if api.get_opt(&ns).await?.is_some() {
            randomsecret::release::release(client, Some(&ns), false).await?;
        }
    }
    for k in 0..count {
        let _ = api
            .delete(&format!("{prefix}-{k}"), &DeleteParams::default())
            .await;
    }
    DELETED
        .lock()
        .expect("deleted lock")
        .insert(prefix.to_string(), Instant::now());
    let deadline = Instant::now() + Duration::from_secs(600);
    for k in 0..count {
        while api.get_opt(&format!("{prefix}-{k}")).await?.is_some() {
            if Instant::now() > deadline {
                bail!("namespace {prefix}-{k} was not deleted within 10 minutes");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// The floor's writes for object `i` of `spec`, as a tight client does them:
/// create the RandomSecret, create a Secret like the controller's (same
/// labels, annotation, owner and values, computed as the controller computes
/// them), then apply the same status and post the same Event at once.
/// With `shard`, the RandomSecret and its Secrets carry the shard label
/// [`SHARD_KEY`] of that value, as a sharded controller's versions do.
pub async fn floor_object(
    client: &Client,
    prefix: &str,
    namespaces: usize,
    run: &str,
    spec: &Value,
    shard: Option<&str>,
    i: usize,
) -> Result<()> {
    let (ns, name) = place(prefix, namespaces, i);
    let mut rs = random_secret_with(&name, run, spec)?;
    if let Some(shard) = shard {
        rs.labels_mut().insert(SHARD_KEY.into(), shard.into());
    }
    let rs = Api::<RandomSecret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &rs)
        .await?;
    floor_version(client, &rs, None).await
}

/// The floor of a rotation of object `i` (made by `floor_object`): set
/// `spec.rotation`, then do the controller's writes for the new version at
/// once, with no watch in between: create its Secret, change the owners of
/// the one before (as retention does when a ReplicaSet holds it), apply the
/// status that lists both and post the Event.
pub async fn floor_rotation(
    client: &Client,
    prefix: &str,
    namespaces: usize,
    i: usize,
    rotation: &str,
) -> Result<()> {
    let (ns, name) = place(prefix, namespaces, i);
    let api = Api::<RandomSecret>::namespaced(client.clone(), &ns);
    let before = api.get(&name).await?;
    let previous = before
        .status
        .as_ref()
        .and_then(|s| s.versions.first().cloned())
        .context("the floor object has no version")?;
    let rs = rotate(client, &ns, &name, rotation).await?;
    floor_version(client, &rs, Some(previous)).await
}

/// Rotates RandomSecret `ns/name` to the token `rotation` (a merge patch of
/// `spec.rotation`, as a user's `kubectl patch` is).
pub async fn rotate(client: &Client, ns: &str, name: &str, rotation: &str) -> Result<RandomSecret> {
    Ok(Api::<RandomSecret>::namespaced(client.clone(), ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rotation": rotation}})),
        )
        .await?)
}

/// An edit that rotates nothing: `static.username` := `username`.
pub async fn edit_static(client: &Client, ns: &str, name: &str, username: &str) -> Result<()> {
    Api::<RandomSecret>::namespaced(client.clone(), ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"static": {"username": username}}})),
        )
        .await?;
    Ok(())
}

/// The controller's writes for the current version of `rs`: its Secret,
/// the owners of the `previous` version (if any), the status.
async fn floor_version(
    client: &Client,
    rs: &RandomSecret,
    previous: Option<VersionStatus>,
) -> Result<()> {
    let (ns, name) = (rs.namespace().context("namespace")?, rs.name_any());
    let pp = PostParams::default();
    let v = Version::of(&rs.spec, &name)?;
    // As the controller makes a first version's values: each generated key
    // (inline: the floor has no costly kind), then the keys derived from
    // them (public keys, htpasswd lines, templates).
    let mut data = BTreeMap::new();
    for (key, g) in &v.spec.generated {
        if g.kind.is_derived() {
            continue;
        }
        data.insert(
            key.clone(),
            ByteString(randomsecret::generate::key_value(&g.kind)?),
        );
    }
    randomsecret::generate::derive::all(&v.spec, &mut data, &BTreeMap::new())?;
    for (key, value) in &v.spec.statics {
        data.insert(key.clone(), ByteString(value.clone().into_bytes()));
    }
    let owner = rs.controller_owner_ref(&()).context("owner")?;
    let mut labels = BTreeMap::from([
        (LABEL_NAME.to_string(), name.clone()),
        (LABEL_HASH.to_string(), v.hash.clone()),
        (LABEL_MANAGED_BY.to_string(), MANAGED_BY.to_string()),
    ]);
    if let Some(shard) = rs.labels().get(SHARD_KEY) {
        labels.insert(SHARD_KEY.to_string(), shard.clone());
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(v.secret_name.clone()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([(
                ANNOTATION_CREATED.to_string(),
                k8s_openapi::jiff::Timestamp::now().to_string(),
            )])),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        immutable: Some(true),
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Default::default()
    };
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns);
    let created = secrets.create(&pp, &secret).await?;
    let mut live = vec![VersionStatus {
        name: v.secret_name.clone(),
        hash: v.hash.clone(),
        created: created.metadata.creation_timestamp.clone(),
        uid: created.metadata.uid.clone(),
        state: VersionState::Current,
        referenced_by: vec![],
        // As the controller lists it: every key of a new or rotated version.
        rotated_keys: v.spec.generated.keys().cloned().collect(),
        not_after: None,
        deleting: false,
    }];
    if let Some(mut old) = previous {
        // A real change of the owners (not the controller any more), as
        // retention's conditional merge patch makes it.
        let mut demoted = owner;
        demoted.controller = Some(false);
        let patch = json!({"metadata": {"ownerReferences": [demoted]}});
        secrets
            .patch_metadata(&old.name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        old.state = VersionState::Retained;
        live.push(old);
    }
    let note = format!("Created Secret {} (version {})", v.secret_name, v.hash);
    let status = status::desired(
        &Previous::of(rs.status.as_ref()),
        rs.metadata.generation,
        &Outcome::Ready {
            secret_name: v.secret_name,
            uncarried: false,
            next_rotation: None,
        },
        Versions {
            live,
            released: vec![],
        },
        &Time(k8s_openapi::jiff::Timestamp::now()),
    );
    let patch =
        json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "status": status});
    // The controller's Event for a new version, built as it builds it; the
    // controller posts it off the reconcile path, so here it goes alongside
    // the status apply.
    let event = randomsecret::runtime::events::build(
        &randomsecret::runtime::events::Reporter {
            controller: "bench-floor".into(),
            instance: "bench-floor".into(),
        },
        k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("randomsecret.io/v1".into()),
            kind: Some("RandomSecret".into()),
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            uid: rs.metadata.uid.clone(),
            ..Default::default()
        },
        randomsecret::runtime::events::EventType::Normal,
        "VersionCreated",
        "CreateVersion",
        note,
    );
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), &ns);
    let rss = Api::<RandomSecret>::namespaced(client.clone(), &ns);
    let apply = PatchParams::apply("bench-floor").force();
    let patch = Patch::Apply(patch);
    let (status, event) = tokio::join!(
        rss.patch_status(&name, &apply, &patch),
        events.create(&pp, &event),
    );
    status?;
    event?;
    Ok(())
}

/// Ready=True for the current generation.
pub fn randomsecret_ready(rs: &RandomSecret) -> bool {
    let Some(s) = rs.status.as_ref() else {
        return false;
    };
    s.observed_generation == rs.metadata.generation
        && s.conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// A watch (started before the writes) that resolves when `n` distinct
/// objects have been seen ready.
pub struct ReadyWatch {
    /// When each object was first seen ready, in that order.
    done: tokio::sync::oneshot::Receiver<Vec<Instant>>,
}

impl ReadyWatch {
    pub async fn start<K>(
        api: Api<K>,
        selector: &str,
        n: usize,
        ready: fn(&K) -> bool,
    ) -> Result<Self>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let (init_tx, init_rx) = tokio::sync::oneshot::channel();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let config = watcher::Config::default().labels(selector);
        tokio::spawn(async move {
            let mut init_tx = Some(init_tx);
            let mut done_tx = Some(done_tx);
            let mut seen = HashSet::new();
            let mut times = Vec::with_capacity(n);
            let mut stream = watcher::watcher(api, config).boxed();
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(Event::InitDone) => {
                        if let Some(t) = init_tx.take() {
                            let _ = t.send(());
                        }
                    }
                    Ok(Event::Apply(o) | Event::InitApply(o)) if ready(&o) => {
                        if seen.insert((o.namespace(), o.name_any())) {
                            times.push(Instant::now());
                        }
                        if seen.len() >= n {
                            if let Some(t) = done_tx.take() {
                                let _ = t.send(std::mem::take(&mut times));
                            }
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => eprintln!("bench: watch error (retrying): {e}"),
                }
            }
        });
        init_rx
            .await
            .context("the readiness watch ended before its first list")?;
        Ok(ReadyWatch { done: done_rx })
    }

    /// When the last of the `n` objects was seen ready.
    pub async fn wait(self, timeout: Duration) -> Result<Instant> {
        self.wait_each(timeout)
            .await?
            .last()
            .copied()
            .context("no object became ready")
    }

    /// How long after `start` the last of the `n` objects was seen ready,
    /// and when each was, in that order (for the charts).
    pub async fn wait_since(
        self,
        start: Instant,
        timeout: Duration,
    ) -> Result<(Duration, Vec<Duration>)> {
        let each: Vec<Duration> = self
            .wait_each(timeout)
            .await?
            .iter()
            .map(|t| t.saturating_duration_since(start))
            .collect();
        let took = *each.last().context("no object became ready")?;
        Ok((took, each))
    }

    /// When each of the `n` objects was first seen ready, in that order.
    pub async fn wait_each(self, timeout: Duration) -> Result<Vec<Instant>> {
        tokio::time::timeout(timeout, self.done)
            .await
            .context("timed out waiting for the objects to become ready")?
            .context("the readiness watch ended")
    }
}

/// When a change was sent: for its latency, and on the wall clock (to find
/// the controller's log lines about it).
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub at: Instant,
    pub wall: SystemTime,
}

impl Sent {
    pub fn now() -> Self {
        Sent {
            at: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}

/// Expected `status.secretName` per RandomSecret, with when the change was sent.
pub type Pending = Arc<Mutex<HashMap<(String, String), (String, Sent)>>>;

/// Puts the change of `ns/name` in `pending`, sent now: done once the
/// watch sees `expected`.
pub fn mark_sent(pending: &Pending, ns: &str, name: &str, expected: String) {
    pending
        .lock()
        .expect("pending lock")
        .insert((ns.to_string(), name.to_string()), (expected, Sent::now()));
}

/// A change seen done: its object (namespace, name), when it was sent, how
/// long it took; when its request was answered, where the sender recorded it.
#[derive(Clone, Debug)]
pub struct Done {
    pub object: (String, String),
    pub sent: Sent,
    pub took: Duration,
    pub answered: Option<SystemTime>,
}

/// Each change seen done.
pub type Latencies = Arc<Mutex<Vec<Done>>>;

/// Once every change is sent and answered: waits until the watch has seen
/// each pending one done (`limit` at most), and takes what it recorded.
pub async fn seen_all(
    pending: &Pending,
    latencies: &Latencies,
    limit: Duration,
) -> Result<Vec<Done>> {
    let deadline = Instant::now() + limit;
    loop {
        let left = pending.lock().expect("pending lock").len();
        if left == 0 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "{left} changes still pending {limit:?} after the last was sent"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(std::mem::take(
        &mut *latencies.lock().expect("latency lock"),
    ))
}

/// The times of `done`, sorted.
pub fn times(done: &[Done]) -> Vec<Duration> {
    let mut l: Vec<Duration> = done.iter().map(|d| d.took).collect();
    l.sort();
    l
}

/// Each change's send time and latency, in the order they were sent: what
/// puts a slow one beside what else the machine did then (the apiserver's
/// GC, another phase's writes).
pub fn timeline(done: &[Done]) -> Vec<(SystemTime, Duration)> {
    let mut l: Vec<(SystemTime, Duration)> = done.iter().map(|d| (d.sent.wall, d.took)).collect();
    l.sort();
    l
}

/// Each change's latency, in the order they were sent (the warm-up's).
pub fn in_order_sent(done: &[Done]) -> Vec<Duration> {
    timeline(done).into_iter().map(|(_, took)| took).collect()
}

/// A watch of run `run`'s RandomSecrets that records, for each change put
/// in `pending`, the time from sending it to the status naming the
/// expected Secret (Ready), in `latencies`; aborted when dropped.
pub struct RotationWatch {
    pub pending: Pending,
    pub latencies: Latencies,
    /// Held only: the watch stops when this is dropped.
    _watch: PendingWatch,
}

impl RotationWatch {
    /// Once every change is sent and answered: each seen done within 2
    /// minutes ([`seen_all`]).
    pub async fn seen_all(&self) -> Result<Vec<Done>> {
        seen_all(&self.pending, &self.latencies, Duration::from_secs(120)).await
    }
}

/// Starts a [`RotationWatch`] and waits for its first list.
pub async fn watch_rotations(client: &Client, run: &str) -> Result<RotationWatch> {
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let latencies: Latencies = Arc::default();
    let mut watch = watch_pending(
        Api::all(client.clone()),
        &format!("{RUN_LABEL}={run}"),
        pending.clone(),
        latencies.clone(),
        |rs, expected| {
            rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(expected)
                && randomsecret_ready(rs)
        },
    );
    watch.first_list().await?;
    Ok(RotationWatch {
        pending,
        latencies,
        _watch: watch,
    })
}

/// How long the first list of a pending watch may take.
const FIRST_LIST_LIMIT: Duration = Duration::from_secs(60);
/// After the first list, before the first change is sent: the apiserver
/// and this process are still busy with what the list was.
const AFTER_FIRST_LIST: Duration = Duration::from_secs(1);

/// A watch timing pending changes ([`watch_pending`]); aborted when dropped.
pub struct PendingWatch {
    task: tokio::task::JoinHandle<()>,
    first_list: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl PendingWatch {
    /// Until the watch's first list is in, and a moment after. That list is
    /// the whole set (10,000 RandomSecrets at the largest size): sent while
    /// the apiserver still serves it and this process still decodes it, the
    /// first changes would be timed with that work, which a fixed wait
    /// (2 s until 2026-12-06) does not bound on a loaded machine. (It was
    /// not what made the first rotations slow: see `phases::WARM_UP`.)
    pub async fn first_list(&mut self) -> Result<()> {
        if let Some(listed) = self.first_list.take() {
            tokio::time::timeout(FIRST_LIST_LIMIT, listed)
                .await
                .context("the watch's first list, within 60 s")?
                .context("the watch ended before its first list")?;
        }
        tokio::time::sleep(AFTER_FIRST_LIST).await;
        Ok(())
    }
}

impl Drop for PendingWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches RandomSecrets and records, for each pending change, the time
/// from sending it to the first state of its object that `done` accepts
/// with the expected value.
pub fn watch_pending(
    api: Api<RandomSecret>,
    selector: &str,
    pending: Pending,
    latencies: Latencies,
    done: fn(&RandomSecret, &str) -> bool,
) -> PendingWatch {
    let config = watcher::Config::default().labels(selector);
    let (listed, first_list) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut stream = watcher::watcher(api, config).boxed();
        while let Some(ev) = stream.next().await {
            let rs = match ev {
                Ok(Event::Apply(rs) | Event::InitApply(rs)) => rs,
                Ok(Event::InitDone) => {
                    if let Some(l) = listed.take() {
                        let _ = l.send(()); // the receiver may have given up
                    }
                    continue;
                }
                _ => continue,
            };
            let key = (rs.namespace().unwrap_or_default(), rs.name_any());
            let mut p = pending.lock().expect("pending lock");
            if let Some((expected, sent)) = p.get(&key)
                && done(&rs, expected)
            {
                let sent = *sent;
                latencies.lock().expect("latency lock").push(Done {
                    took: sent.at.elapsed(),
                    object: key.clone(),
                    sent,
                    answered: None,
                });
                p.remove(&key);
            }
        }
    });
    PendingWatch {
        task,
        first_list: Some(first_list),
    }
}

/// A ReplicaSet (0 replicas: no pods) whose template reads `secret`.
pub fn replica_set(
    name: &str,
    run: &str,
    secret: &str,
) -> Result<k8s_openapi::api::apps::v1::ReplicaSet> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {RUN_LABEL: run}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "example.invalid/app:1", "envFrom": [{"secretRef": {"name": secret}}]}]}
            }
        }
    }))?)
}

/// An unrelated Secret of `bytes` bytes of data (which the controller must not cache).
pub fn bulk_secret(name: &str, run: &str, bytes: usize) -> Result<Secret> {
    let blob = "x".repeat(bytes);
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {RUN_LABEL: run}},
        "stringData": {"blob": blob}
    }))?)
}

/// The watches a controller holds open while it converges, drained and
/// dropped: RandomSecrets whole, and our Secrets metadata-only by label
/// (as `runtime::watches` opens them). For the floor's diagnostic run.
pub fn controller_watches(client: &Client) -> Vec<tokio::task::JoinHandle<()>> {
    let randomsecrets: Api<RandomSecret> = Api::all(client.clone());
    let secrets: Api<kube::core::PartialObjectMeta<Secret>> = Api::all(client.clone());
    let selector = format!(
        "{}={}",
        randomsecret::api::LABEL_MANAGED_BY,
        randomsecret::api::MANAGED_BY
    );
    vec![
        tokio::spawn(async move {
            watcher::watcher(randomsecrets, watcher::Config::default())
                .for_each(|_| async {})
                .await
        }),
        tokio::spawn(async move {
            watcher::watcher(secrets, watcher::Config::default().labels(&selector))
                .for_each(|_| async {})
                .await
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_is_in_the_order_sent_and_keeps_each_latency() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let done = |object: &str, after_ms: u64, took_ms: u64| Done {
            object: ("ns".into(), object.into()),
            sent: Sent {
                at: Instant::now(),
                wall: t0 + Duration::from_millis(after_ms),
            },
            took: Duration::from_millis(took_ms),
            answered: None,
        };
        // Seen done in another order than sent: the slow first one last.
        let all = [done("b", 50, 20), done("c", 100, 30), done("a", 0, 400)];
        assert_eq!(
            timeline(&all),
            vec![
                (t0, Duration::from_millis(400)),
                (t0 + Duration::from_millis(50), Duration::from_millis(20)),
                (t0 + Duration::from_millis(100), Duration::from_millis(30)),
            ]
        );
    }

    #[test]
    fn namespaces_deleted_lately_wait_out_the_live_lookups() {
        let now = Instant::now();
        assert_eq!(live_lookup_left(None, now), None);
        assert_eq!(
            live_lookup_left(Some(now), now),
            Some(LIVE_LOOKUP + Duration::from_secs(1))
        );
        let ten_ago = now - Duration::from_secs(10);
        assert_eq!(
            live_lookup_left(Some(ten_ago), now),
            Some(Duration::from_secs(21))
        );
        let long_ago = now - Duration::from_secs(31);
        assert_eq!(live_lookup_left(Some(long_ago), now), None);
    }
}
