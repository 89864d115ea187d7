//! The real node of `e2e/realnode.sh`: real pods on a kubelet, containerd and
//! runc, for the suites that need a real container (`make realnode-test`).
//!
//! - [`require_real_node`]: fails unless `REALNODE` names a node that is up.
//! - [`consumer_pod`]: a pod of the node's consumer image, restricted profile.
//! - [`wait_running`], [`consumer_report`]: its start, and what it read.
//! - [`container_memory`]: a container's memory as the kubelet measures it.

use crate::cluster::WAIT;
use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The consumer image that `realnode.sh up` imports (e2e/images/consumer):
/// it prints SHA-256 digests of what it read, never the values.
pub const CONSUMER_IMAGE: &str = "randomsecret.test/e2e/consumer:1";

/// The running real node's folder (`$REALNODE`, set by `realnode.sh env` and
/// `realnode.sh exec`); fails unless `realnode.sh up` finished there.
pub fn require_real_node() -> Result<PathBuf> {
    let dir = std::env::var_os("REALNODE").map(PathBuf::from).context(
        "REALNODE is not set: run `make realnode-test`, or `e2e/realnode.sh up` and then \
         `e2e/realnode.sh exec cargo test -p randomsecret-e2e --test realnode -- --ignored`",
    )?;
    ensure!(
        dir.join("up.done").exists(),
        "{}: no real node is up there (e2e/realnode.sh up)",
        dir.display()
    );
    Ok(dir)
}

/// `sha256:HEX` of `value`, as the consumer prints it.
pub fn digest(value: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(value)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A pod running the consumer with `args`, as the restricted Pod Security
/// profile requires (non-root 65532, no privilege escalation, no
/// capabilities, RuntimeDefault seccomp, read-only root). `containers` and
/// `volumes` entries are merged in: `env`/`envFrom`/`volumeMounts` of the one
/// container (`extra_container`), and the pod's `volumes`.
pub fn consumer_pod(
    name: &str,
    args: &[&str],
    extra_container: Value,
    volumes: Value,
) -> Result<Pod> {
    let mut container = json!({
        "name": "consumer",
        "image": CONSUMER_IMAGE,
        "imagePullPolicy": "Never",
        "args": args,
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"]},
        },
    });
    if let (Some(c), Some(extra)) = (container.as_object_mut(), extra_container.as_object()) {
        c.extend(extra.clone());
    }
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
            "volumes": volumes,
        },
    }))?)
}

/// Waits until the pod runs (its containers started), failing at once on a
/// waiting reason that never resolves by itself (ErrImageNeverPull,
/// CreateContainerConfigError, ...), with the reason and message.
pub async fn wait_running(pods: &Api<Pod>, name: &str) -> Result<Pod> {
    let deadline = Instant::now() + WAIT;
    loop {
        let pod = pods.get(name).await?;
        let status = pod.status.clone().unwrap_or_default();
        if status.phase.as_deref() == Some("Running") {
            return Ok(pod);
        }
        for cs in status.container_statuses.iter().flatten() {
            if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) {
                let reason = w.reason.as_deref().unwrap_or_default();
                if matches!(
                    reason,
                    "ErrImageNeverPull"
                        | "CreateContainerConfigError"
                        | "CreateContainerError"
                        | "InvalidImageName"
                ) {
                    bail!(
                        "pod {name}: {reason}: {}",
                        w.message.as_deref().unwrap_or_default()
                    );
                }
            }
        }
        if Instant::now() > deadline {
            bail!(
                "pod {name}: not Running within {WAIT:?} (phase {:?}, status {status:?})",
                status.phase
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What a consumer pod read, from its log (through the apiserver and the
/// kubelet: `kubectl logs`), once it printed `ready`: its `env` and `file`
/// lines as name -> digest, its apiserver line, and errors it reported.
#[derive(Debug, Default)]
pub struct ConsumerReport {
    pub env: BTreeMap<String, String>,
    pub files: BTreeMap<String, String>,
    pub apiserver: Option<String>,
    /// `fetch URL LINE` (with `-fetch URL`): the first line of the body.
    pub fetched: BTreeMap<String, String>,
    /// `resolve NAME ADDR...` (with `-resolve NAME`): the addresses found.
    pub resolved: BTreeMap<String, Vec<String>>,
    pub errors: Vec<String>,
    /// `changed file PATH DIGEST` lines printed after `ready`.
    pub changed: Vec<(String, String)>,
}

pub async fn consumer_report(pods: &Api<Pod>, name: &str) -> Result<ConsumerReport> {
    let deadline = Instant::now() + WAIT;
    loop {
        let log = pods
            .logs(name, &LogParams::default())
            .await
            .with_context(|| format!("reading the log of pod {name}"))?;
        if log.lines().any(|l| l == "ready") {
            return Ok(parse_report(&log));
        }
        if Instant::now() > deadline {
            bail!("pod {name}: no `ready` in its log within {WAIT:?}; log:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub fn parse_report(log: &str) -> ConsumerReport {
    let mut r = ConsumerReport::default();
    for line in log.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["env", name, d] => {
                r.env.insert(name.to_string(), d.to_string());
            }
            ["file", path, d] => {
                r.files.insert(path.to_string(), d.to_string());
            }
            ["changed", "file", path, d] => r.changed.push((path.to_string(), d.to_string())),
            ["apiserver", v] => r.apiserver = Some(v.to_string()),
            ["fetch", url, body @ ..] => {
                r.fetched.insert(url.to_string(), body.join(" "));
            }
            ["resolve", name, addrs @ ..] => {
                r.resolved.insert(
                    name.to_string(),
                    addrs.iter().map(|a| a.to_string()).collect(),
                );
            }
            ["error", ..] => r.errors.push(line.to_string()),
            _ => {}
        }
    }
    r
}

/// A container's memory as the kubelet reports it (its cgroup, read by
/// cAdvisor: the Summary API, `/api/v1/nodes/NODE/proxy/stats/summary`):
/// `(workingSetBytes, rssBytes)`.
pub async fn container_memory(
    client: &kube::Client,
    node: &str,
    namespace: &str,
    pod: &str,
    container: &str,
) -> Result<(u64, u64)> {
    let req =
        http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary")).body(Vec::new())?;
    let summary: Value = client
        .request(req)
        .await
        .context("the kubelet's stats/summary")?;
    let found = summary["pods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["podRef"]["namespace"] == namespace && p["podRef"]["name"] == pod)
        .flat_map(|p| p["containers"].as_array().into_iter().flatten())
        .find(|c| c["name"] == container)
        .with_context(|| {
            format!("no container {namespace}/{pod}/{container} in the kubelet's summary (yet)")
        })?;
    let memory = &found["memory"];
    match (
        memory["workingSetBytes"].as_u64(),
        memory["rssBytes"].as_u64(),
    ) {
        (Some(ws), Some(rss)) => Ok((ws, rss)),
        _ => bail!("{namespace}/{pod}/{container}: no memory figures yet: {memory}"),
    }
}

/// A pod template (for a Deployment) of the consumer with `args`: the pod of
/// [`consumer_pod`] with the label `app: <app>`.
pub fn consumer_template(
    app: &str,
    args: &[&str],
    extra_container: Value,
    volumes: Value,
) -> Result<Value> {
    let pod = serde_json::to_value(consumer_pod(app, args, extra_container, volumes)?)?;
    Ok(json!({"metadata": pod["metadata"], "spec": pod["spec"]}))
}

/// The kubelet's own cache of a newly referenced Secret gets one second to
/// sync before it retries ("failed to sync secret cache: timed out waiting
/// for the condition", seen on a loaded node with every Secret present, in
/// Events and in a waiting container's message alike): not a missing Secret.
/// A Secret that never arrives still shows, as the retry's own error.
pub fn kubelet_cache_sync_retried(message: &str) -> bool {
    message.contains("failed to sync secret cache")
}

/// Watches a namespace for the whole of a test for pods that cannot start for
/// want of a Secret: a container waiting in `CreateContainerConfigError` (or
/// `CreateContainerError`), seen by polling the pods every 200 ms, and, at
/// `finish`, every Event of the namespace with reason `FailedMount` or
/// `Failed` about a Secret (Events outlive the pods), but for the kubelet's
/// one-second cache sync that it retries ([`kubelet_cache_sync_retried`]).
pub struct PodTrouble {
    namespace: String,
    client: kube::Client,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<Result<(Vec<String>, usize)>>,
}

impl PodTrouble {
    pub fn start(client: &kube::Client, namespace: &str) -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let (mut seen, mut looks) = (Vec::<String>::new(), 0);
            loop {
                let last = flag.load(Ordering::Relaxed);
                for pod in pods.list(&Default::default()).await?.items {
                    looks += 1;
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let status = pod.status.unwrap_or_default();
                    for cs in status.container_statuses.iter().flatten() {
                        if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) {
                            let reason = w.reason.as_deref().unwrap_or_default();
                            let message = w.message.as_deref().unwrap_or_default();
                            if matches!(
                                reason,
                                "CreateContainerConfigError" | "CreateContainerError"
                            ) && !kubelet_cache_sync_retried(message)
                            {
                                let line = format!("pod {name}: {reason}: {message}");
                                if !seen.contains(&line) {
                                    seen.push(line);
                                }
                            }
                        }
                    }
                }
                if last {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok((seen, looks))
        });
        Self {
            namespace: namespace.to_string(),
            client: client.clone(),
            stop,
            task,
        }
    }

    /// Stops watching: what was seen (empty when every pod found its Secrets).
    pub async fn finish(self) -> Result<Vec<String>> {
        use k8s_openapi::api::core::v1::Event;
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (mut seen, looks) = self.task.await??;
        ensure!(looks > 0, "the pod watch of {} saw no pod", self.namespace);
        let events: Api<Event> = Api::namespaced(self.client, &self.namespace);
        for e in events.list(&Default::default()).await?.items {
            let reason = e.reason.as_deref().unwrap_or_default();
            let message = e.message.as_deref().unwrap_or_default();
            let obj = e.involved_object.name.as_deref().unwrap_or_default();
            let about_a_secret = message.to_lowercase().contains("secret");
            if !matches!(reason, "FailedMount" | "Failed") || !about_a_secret {
                continue;
            }
            // A mount that never succeeds still fails the test, whose pods
            // must read their versions.
            if kubelet_cache_sync_retried(message) {
                eprintln!(
                    "a kubelet cache sync retried (not a missing Secret): {reason} on {obj}: {message}"
                );
                continue;
            }
            seen.push(format!("Event {reason} on {obj}: {message}"));
        }
        Ok(seen)
    }
}

/// A container's memory, measured three ways: the kubelet's Summary API
/// (cAdvisor over the container's cgroup), the cgroup's own `memory.stat`
/// (cgroup v1: `total_rss`, and the working set as usage minus
/// `total_inactive_file`), and the process's `VmRSS`/`VmHWM` from
/// `/proc/PID/status` (the cgroup's RSS counts only anonymous pages charged
/// to it, the process's RSS also its mapped file pages: the binary's code,
/// whose page cache is charged to the cgroup that first touched it, such as
/// containerd's when it unpacked the image).
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub summary_working_set: u64,
    pub summary_rss: u64,
    pub cgroup_working_set: u64,
    pub cgroup_rss: u64,
    pub vm_rss: u64,
    /// Of VmRSS: anonymous memory (`RssAnon`) and mapped files (`RssFile`).
    pub rss_anon: u64,
    pub rss_file: u64,
    pub vm_hwm: u64,
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        write!(
            f,
            "cgroup working set {:.1} MiB, cgroup RSS {:.1} MiB (Summary API: working set {:.1} MiB, RSS {:.1} MiB); process VmRSS {:.1} MiB = anonymous {:.1} + mapped files {:.1} (peak VmHWM {:.1} MiB)",
            mib(self.cgroup_working_set),
            mib(self.cgroup_rss),
            mib(self.summary_working_set),
            mib(self.summary_rss),
            mib(self.vm_rss),
            mib(self.rss_anon),
            mib(self.rss_file),
            mib(self.vm_hwm)
        )
    }
}

/// [`Memory`] of the container `container` of a running pod on the real node
/// whose kubelet runs with cgroup root `/$REALNODE_NETNS` (cgroupfs driver).
pub async fn pod_memory(client: &kube::Client, pod: &Pod, container: &str) -> Result<Memory> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let id = pod
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .find(|c| c.name == container)
        .and_then(|c| c.container_id.clone())
        .with_context(|| format!("{namespace}/{name}: no container id for {container}"))?;
    let id = id.rsplit("://").next().unwrap_or_default().to_string();
    let netns = std::env::var("REALNODE_NETNS").unwrap_or_else(|_| "randomsecret-rn".into());
    // kubepods/<qos>/pod<uid>/<id>, or kubepods/pod<uid>/<id> for Guaranteed pods.
    let base = PathBuf::from(format!("/sys/fs/cgroup/memory/{netns}/kubepods"));
    let dir = ["burstable", "besteffort", ""]
        .iter()
        .map(|qos| base.join(qos).join(format!("pod{uid}")).join(&id))
        .find(|d| d.is_dir())
        .with_context(|| {
            format!("no memory cgroup for {namespace}/{name}/{container} under {base:?}")
        })?;
    let stat = std::fs::read_to_string(dir.join("memory.stat"))?;
    let field = |key: &str| -> u64 {
        stat.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0)
    };
    let usage: u64 = std::fs::read_to_string(dir.join("memory.usage_in_bytes"))?
        .trim()
        .parse()?;
    let procs = std::fs::read_to_string(dir.join("cgroup.procs"))?;
    let pids: Vec<&str> = procs.split_whitespace().collect();
    ensure!(
        pids.len() == 1,
        "{namespace}/{name}/{container}: expected one process in {dir:?}, found {pids:?}"
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", pids[0]))?;
    let kib = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| {
                l.strip_prefix(key)?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or(0)
            * 1024
    };
    let (summary_working_set, summary_rss) =
        container_memory(client, "realnode-0", namespace, name, container).await?;
    Ok(Memory {
        summary_working_set,
        summary_rss,
        cgroup_working_set: usage.saturating_sub(field("total_inactive_file")),
        cgroup_rss: field("total_rss"),
        vm_rss: kib("VmRSS:"),
        rss_anon: kib("RssAnon:"),
        rss_file: kib("RssFile:"),
        vm_hwm: kib("VmHWM:"),
    })
}

/// [`values_in_node_logs`] with every value of `secrets`.
pub fn secret_values_in_node_logs(
    node_dir: &std::path::Path,
    secrets: &[&k8s_openapi::api::core::v1::Secret],
) -> Result<Vec<String>> {
    let values: Vec<&[u8]> = secrets
        .iter()
        .flat_map(|s| s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))
        .collect();
    values_in_node_logs(node_dir, &values)
}

/// The files under the real node's logs (`$REALNODE/logs`: the control
/// plane, containerd, the kubelet, kube-proxy, CoreDNS; `$REALNODE/pod-logs`:
/// every container's output, the controller's included) that contain any of
/// `values` (those of 12 bytes or more: shorter ones could occur by chance).
/// Names the files and never the values.
pub fn values_in_node_logs(node_dir: &std::path::Path, values: &[&[u8]]) -> Result<Vec<String>> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) -> Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                walk(&e.path(), out)?;
            } else if t.is_file() {
                out.push(e.path());
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for sub in ["logs", "pod-logs"] {
        walk(&node_dir.join(sub), &mut files)?;
    }
    ensure!(!files.is_empty(), "no log files under {node_dir:?}");
    let values: Vec<&[u8]> = values.iter().copied().filter(|v| v.len() >= 12).collect();
    ensure!(!values.is_empty(), "no value long enough to look for");
    let mut found = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f)?;
        if values
            .iter()
            .any(|v| bytes.windows(v.len()).any(|w| w == *v))
        {
            found.push(f.display().to_string());
        }
    }
    Ok(found)
}
