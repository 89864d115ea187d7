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

fn parse_report(log: &str) -> ConsumerReport {
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
