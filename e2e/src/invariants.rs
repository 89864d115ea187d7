//! The global invariants the fault suite (`tests/chaos.rs`) checks after each
//! fault, for one namespace:
//!
//! 1. every RandomSecret converges: `observedGeneration == generation` and
//!    `Ready=True` (or `Ready=False` with the reason a scenario expects);
//! 2. each live version in `status.versions` is exactly one Secret (the
//!    object the status recorded, with its name and hash labels), no two
//!    Secrets carry one RandomSecret's hash, and a Ready RandomSecret's
//!    current version is the name its spec hashes to, with no superseded
//!    version kept that nothing references (retention caught up);
//! 3. no Secret name is ever seen with two different contents
//!    ([`DigestWatch`], a watch kept over the whole test: a delete and
//!    re-create with other values counts too);
//! 4. no pod that is not being deleted, and no ReplicaSet (live or in
//!    history), references a missing Secret ([`RefWatch`], which rides out
//!    API outages);
//! 5. the controller reports ready (checked by the test, per process).
//!
//! Every helper tolerates the control plane being down for a while: the
//! faults are the point.

use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::ListParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// SHA-256 of a Secret's type and data (the part a version must never change).
pub fn digest(s: &Secret) -> String {
    let bytes = serde_json::to_vec(&(&s.type_, &s.data)).expect("a Secret serializes");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Default)]
struct Seen {
    /// name -> the digest first seen under it.
    digests: BTreeMap<String, String>,
    /// name -> every uid seen under it.
    uids: BTreeMap<String, BTreeSet<String>>,
    violations: Vec<String>,
    events: usize,
}

impl Seen {
    fn observe(&mut self, s: &Secret) {
        let (name, d) = (s.name_any(), digest(s));
        self.events += 1;
        self.uids
            .entry(name.clone())
            .or_default()
            .insert(s.uid().unwrap_or_default());
        match self.digests.get(&name) {
            None => {
                self.digests.insert(name, d);
            }
            Some(first) if *first != d => self.violations.push(format!(
                "Secret {name} changed contents: digest {first} then {d} (uids {:?})",
                self.uids[&name]
            )),
            Some(_) => {}
        }
    }
}

/// Watches every Secret of a namespace for a whole test and records the
/// SHA-256 of each name's contents: a name seen with two digests is a
/// violation. The watch relists after an outage (any change made meanwhile
/// shows up as a different digest then), and [`DigestWatch::finish`] checks a
/// last full list too.
pub struct DigestWatch {
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl DigestWatch {
    pub fn start(client: &Client, namespace: &str) -> Self {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        let task = tokio::spawn(async move {
            let mut events =
                std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            while let Some(ev) = events.next().await {
                match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        let _ = crate::record_values(
                            o.data.iter().flatten().map(|(_, v)| v.0.as_slice()),
                        );
                        s.lock().unwrap().observe(&o)
                    }
                    // A deletion carries the last state: it must match too.
                    Ok(watcher::Event::Delete(o)) => s.lock().unwrap().observe(&o),
                    Ok(_) | Err(_) => {}
                }
            }
        });
        Self { seen, task }
    }

    /// Every uid seen under `name` so far.
    pub fn uids(&self, name: &str) -> BTreeSet<String> {
        self.seen
            .lock()
            .unwrap()
            .uids
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether `name` has been seen at all.
    pub fn has_seen(&self, name: &str) -> bool {
        self.seen.lock().unwrap().digests.contains_key(name)
    }

    /// Checks a last full list, stops watching, and fails on any violation;
    /// returns how many Secret names were seen.
    pub async fn finish(self, secrets: &Api<Secret>) -> Result<usize> {
        let all = secrets.list(&ListParams::default()).await?.items;
        let mut seen = self.seen.lock().unwrap();
        for s in &all {
            seen.observe(s);
        }
        self.task.abort();
        ensure!(
            seen.violations.is_empty(),
            "version contents changed:\n{}",
            seen.violations.join("\n")
        );
        ensure!(seen.events > 0, "the digest watch saw no Secret");
        Ok(seen.digests.len())
    }
}

/// Like [`crate::ReferenceChecker`], for tests that break the control plane:
/// every 200 ms it lists the pods, ReplicaSets and Secrets of a namespace
/// and checks that no pod that is not being deleted, and no ReplicaSet (live
/// or kept in a Deployment's history for `kubectl rollout undo`), references
/// a missing Secret. A failed list (the apiserver is down) skips that round.
/// A miss is confirmed by reading the pod or ReplicaSet and the Secret again
/// (one deleted between the lists, with its Secret, is no miss); a real one
/// lasts, as a version never comes back.
pub struct RefWatch {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(Vec<String>, usize, usize)>,
}

impl RefWatch {
    pub fn start(client: &Client, namespace: &str) -> Self {
        let (pods, replicasets, secrets): (Api<Pod>, Api<ReplicaSet>, Api<Secret>) = (
            Api::namespaced(client.clone(), namespace),
            Api::namespaced(client.clone(), namespace),
            Api::namespaced(client.clone(), namespace),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let (mut violations, mut rounds, mut checked) = (Vec::new(), 0, 0);
            loop {
                let last = flag.load(Ordering::Relaxed);
                if let Some((v, n)) = Self::round(&pods, &replicasets, &secrets).await {
                    rounds += 1;
                    checked += n;
                    for v in v {
                        if !violations.contains(&v) {
                            violations.push(v);
                        }
                    }
                } else if last {
                    // The final round must succeed: try again.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                if last {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            (violations, rounds, checked)
        });
        Self { stop, task }
    }

    async fn round(
        pods: &Api<Pod>,
        replicasets: &Api<ReplicaSet>,
        secrets: &Api<Secret>,
    ) -> Option<(Vec<String>, usize)> {
        // Holders first: a Secret listed after them exists at least as long.
        let pod_list = pods.list(&ListParams::default()).await.ok()?;
        let rs_list = replicasets.list(&ListParams::default()).await.ok()?;
        let existing: BTreeSet<String> = secrets
            .list_metadata(&ListParams::default())
            .await
            .ok()?
            .items
            .iter()
            .map(|s| s.name_any())
            .collect();
        let (pods_seen, pod_misses) =
            crate::missing_secrets(&pod_list.items, |p| p.spec.as_ref(), &existing);
        let (rs_seen, rs_misses) = crate::missing_secrets(
            &rs_list.items,
            |r| r.spec.as_ref()?.template.as_ref()?.spec.as_ref(),
            &existing,
        );
        let checked = pods_seen + rs_seen;
        let misses = pod_misses
            .into_iter()
            .map(|(n, u, s)| ("Pod", n, u, s))
            .chain(
                rs_misses
                    .into_iter()
                    .map(|(n, u, s)| ("ReplicaSet", n, u, s)),
            );
        let mut violations = Vec::new();
        for (kind, name, uid, secret) in misses {
            // Confirm: the holder still there (same object, not being deleted)
            // and the Secret still missing.
            let meta = if kind == "Pod" {
                pods.get_metadata_opt(&name).await.ok()?.map(|p| p.metadata)
            } else {
                replicasets
                    .get_metadata_opt(&name)
                    .await
                    .ok()?
                    .map(|r| r.metadata)
            };
            let holder_live = meta.is_some_and(|m| m.uid == uid && m.deletion_timestamp.is_none());
            if holder_live && secrets.get_metadata_opt(&secret).await.ok()?.is_none() {
                violations.push(format!("{kind} {name} references missing Secret {secret}"));
            }
        }
        Some((violations, checked))
    }

    /// Stops after one last successful round; fails if a pod or ReplicaSet
    /// ever missed a Secret or nothing was ever checked. Returns how many
    /// pod and ReplicaSet checks were made.
    pub async fn finish(self) -> Result<usize> {
        self.stop.store(true, Ordering::Relaxed);
        let (violations, rounds, checked) =
            tokio::time::timeout(Duration::from_secs(120), self.task)
                .await
                .context("the reference watch did not finish")??;
        ensure!(
            violations.is_empty(),
            "missing Secrets referenced:\n{}",
            violations.join("\n")
        );
        ensure!(
            rounds > 0 && checked > 0,
            "the reference watch checked nothing"
        );
        Ok(checked)
    }
}

/// The Secret name a RandomSecret's spec hashes to (what the CLI computes).
pub fn expected_name(rs: &RandomSecret) -> Result<String> {
    Ok(randomsecret::version::Version::of(&rs.spec, &rs.name_any())?.secret_name)
}

/// The reason of a RandomSecret's Ready condition when it is current
/// (`observedGeneration == generation`): `Some("")` for Ready=True.
fn readiness(rs: &RandomSecret) -> Option<String> {
    let status = rs.status.as_ref()?;
    if status.observed_generation != rs.metadata.generation {
        return None;
    }
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some(if ready.status == "True" {
        String::new()
    } else {
        ready.reason.clone()
    })
}

/// Waits until every RandomSecret in `api` has converged (invariant 1):
/// Ready=True for its current generation, or, for those named in `stalled`,
/// Ready=False with that reason. API errors meanwhile are retried. Returns
/// the converged list.
pub async fn converge(
    api: &Api<RandomSecret>,
    stalled: &BTreeMap<String, &str>,
    timeout: Duration,
) -> Result<Vec<RandomSecret>> {
    let deadline = Instant::now() + timeout;
    loop {
        let last_err = match api.list(&ListParams::default()).await {
            Ok(list) => {
                let pending: Vec<String> = list
                    .items
                    .iter()
                    .filter_map(|rs| {
                        let want = stalled.get(&rs.name_any()).copied().unwrap_or("");
                        let got = readiness(rs);
                        (got.as_deref() != Some(want)).then(|| {
                            let c = rs
                                .status
                                .as_ref()
                                .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
                            format!(
                                "{} (generation {:?}, observed {:?}, Ready {:?}: {:?}; want {})",
                                rs.name_any(),
                                rs.metadata.generation,
                                rs.status.as_ref().and_then(|s| s.observed_generation),
                                c.map(|c| &c.reason),
                                c.map(|c| &c.message),
                                if want.is_empty() { "Ready" } else { want }
                            )
                        })
                    })
                    .collect();
                if pending.is_empty() {
                    return Ok(list.items);
                }
                format!(
                    "{} of {} not converged, e.g.:\n{}",
                    pending.len(),
                    list.items.len(),
                    pending
                        .iter()
                        .take(10)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            }
            Err(e) => format!("listing RandomSecrets: {e}"),
        };
        if Instant::now() > deadline {
            bail!("not converged within {timeout:?}: {last_err}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Invariant 2 over converged RandomSecrets and the namespace's Secrets:
/// each live version is the one Secret the status recorded (name, uid, name
/// and hash labels), no two Secrets carry one RandomSecret's hash (Secrets
/// named in `foreign`, planted by a test, aside), and each RandomSecret not
/// in `stalled` is current on the name its spec hashes to. Versions named in
/// `lost` (deleted by a test, reported as lost) must have no Secret instead.
/// Returns how many live versions were checked.
pub async fn check_versions(
    items: &[RandomSecret],
    secrets: &Api<Secret>,
    stalled: &BTreeMap<String, &str>,
    foreign: &BTreeSet<String>,
    lost: &BTreeSet<String>,
) -> Result<usize> {
    let all = secrets.list_metadata(&ListParams::default()).await?.items;
    let by_name: BTreeMap<String, _> = all.iter().map(|s| (s.name_any(), s)).collect();
    let mut per_hash: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for s in all.iter().filter(|s| !foreign.contains(&s.name_any())) {
        let l = s.labels();
        if let (Some(n), Some(h)) = (l.get("randomsecret.io/name"), l.get("randomsecret.io/hash")) {
            per_hash
                .entry((n.clone(), h.clone()))
                .or_default()
                .push(s.name_any());
        }
    }
    let dups: Vec<_> = per_hash.iter().filter(|(_, v)| v.len() > 1).collect();
    ensure!(dups.is_empty(), "duplicate versions: {dups:?}");

    let mut checked = 0;
    let mut problems = Vec::new();
    for rs in items {
        let name = rs.name_any();
        let status = rs.status.as_ref().context("status")?;
        if !stalled.contains_key(&name) {
            let want = expected_name(rs)?;
            if status.secret_name.as_deref() != Some(want.as_str()) {
                problems.push(format!(
                    "{name}: status.secretName {:?}, its spec hashes to {want}",
                    status.secret_name
                ));
            }
            let current: Vec<_> = status
                .versions
                .iter()
                .filter(|v| v.state == VersionState::Current)
                .map(|v| v.name.as_str())
                .collect();
            if current != [want.as_str()] {
                problems.push(format!(
                    "{name}: current versions {current:?}, want [{want}]"
                ));
            }
            // Retention caught up: with no history, a superseded version is
            // live only while something references it.
            if rs.spec.history.unwrap_or(0) == 0 {
                for v in status
                    .versions
                    .iter()
                    .filter(|v| v.state != VersionState::Current && v.referenced_by.is_empty())
                {
                    problems.push(format!(
                        "{name}: superseded version {} is kept with nothing referencing it",
                        v.name
                    ));
                }
            }
        }
        for v in &status.versions {
            checked += 1;
            if lost.contains(&v.name) {
                if by_name.contains_key(&v.name) {
                    problems.push(format!("{name}: lost version {} exists again", v.name));
                }
                continue;
            }
            let Some(s) = by_name.get(&v.name) else {
                problems.push(format!("{name}: live version {} has no Secret", v.name));
                continue;
            };
            let l = s.labels();
            if v.uid.is_some() && s.uid() != v.uid {
                problems.push(format!(
                    "{name}: version {} is uid {:?}, the status recorded {:?}",
                    v.name,
                    s.uid(),
                    v.uid
                ));
            }
            if l.get("randomsecret.io/name") != Some(&name)
                || l.get("randomsecret.io/hash") != Some(&v.hash)
            {
                problems.push(format!("{name}: version {} has labels {l:?}", v.name));
            }
        }
    }
    ensure!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(checked)
}

/// Waits until each tracked Deployment (`deployment -> RandomSecrets`)
/// references the current version of every RandomSecret it tracks and has
/// completed its rollout. API errors meanwhile are retried.
pub async fn converge_workloads(
    deploys: &Api<Deployment>,
    api: &Api<RandomSecret>,
    tracked: &BTreeMap<String, Vec<String>>,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut pending = Vec::new();
        'workloads: for (d, names) in tracked {
            let dep = match deploys.get(d).await {
                Ok(dep) => dep,
                Err(e) => {
                    pending.push(format!("{d}: {e}"));
                    continue;
                }
            };
            let mut current = Vec::new();
            for rs in names {
                match api.get(rs).await {
                    Ok(r) => current.push(r.status.and_then(|s| s.secret_name).unwrap_or_default()),
                    Err(e) => {
                        pending.push(format!("{d}: {rs}: {e}"));
                        continue 'workloads;
                    }
                }
            }
            let refs = dep
                .spec
                .as_ref()
                .and_then(|s| s.template.spec.as_ref())
                .map(randomsecret::references::pod_spec_secret_names)
                .unwrap_or_default();
            let uses_current = current.iter().all(|c| refs.contains(c));
            if !uses_current || !crate::rollout_complete(Some(&dep)) {
                pending.push(format!(
                    "{d}: references {refs:?}, current {current:?}, rollout complete: {}",
                    crate::rollout_complete(Some(&dep))
                ));
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "workloads not converged within {timeout:?}:\n{}",
                pending.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
