//! The peer: External Secrets Operator's Password generator, built from its
//! Go module by `e2e/build-peer.sh` (mittwald/kubernetes-secret-generator is
//! refused by the module proxy). The same N-object workload: one generated
//! Secret per object, timed from the first create to the last Ready.

use crate::args::Args;
use crate::figures::PeerResult;
use crate::workload::{self, LIMIT, RUN_LABEL, ReadyWatch, place, run_concurrently};
use crate::{apimetrics, fresh, procstat};
use anyhow::{Context, Result, bail};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const EXTERNAL_SECRET: (&str, &str, &str) = ("external-secrets.io", "v1", "ExternalSecret");
const PASSWORD: (&str, &str, &str) = ("generators.external-secrets.io", "v1alpha1", "Password");

pub struct Peer {
    dir: PathBuf,
}

fn resource((group, version, kind): (&str, &str, &str)) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

/// Ready=True, as ESO reports it.
fn external_secret_ready(o: &DynamicObject) -> bool {
    o.data
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// Kills the peer when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Peer {
    /// `PEER_DIR` (from `e2e/build-peer.sh`): the binary and its CRDs.
    pub fn from_env() -> Result<Option<Self>> {
        let Some(dir) = std::env::var_os("PEER_DIR") else {
            return Ok(None);
        };
        let dir = PathBuf::from(dir);
        if !dir.join("external-secrets").is_file() {
            bail!(
                "PEER_DIR={} has no external-secrets binary: run e2e/build-peer.sh",
                dir.display()
            );
        }
        Ok(Some(Peer { dir }))
    }

    pub fn name(&self) -> &'static str {
        "external-secrets v0.16.2 (Password generator)"
    }

    /// Installs its CRDs (at the start of the run, so that the garbage
    /// collector knows the kinds long before the peer runs).
    pub fn install_crds(&self) -> Result<()> {
        let out = Command::new("kubectl")
            .args(["apply", "--server-side", "--force-conflicts", "-k"])
            .arg(self.dir.join("crds"))
            .output()?;
        if !out.status.success() {
            bail!(
                "applying the peer's CRDs: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let out = Command::new("kubectl")
            .args([
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd",
                "externalsecrets.external-secrets.io",
                "passwords.generators.external-secrets.io",
            ])
            .output()?;
        if !out.status.success() {
            bail!(
                "the peer's CRDs are not established: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    fn spawn(&self, args: &Args) -> Result<Running> {
        let log = std::fs::File::create(args.out.join("peer.log"))?;
        // KUBECONFIG from the environment (it has no --kubeconfig flag).
        let child = Command::new(self.dir.join("external-secrets"))
            .args([
                "--metrics-addr=127.0.0.1:19990",
                "--enable-leader-election=false",
                // Reconcilers for kinds whose CRDs are not installed.
                "--enable-cluster-store-reconciler=false",
                "--enable-cluster-external-secret-reconciler=false",
                "--enable-push-secret-reconciler=false",
                "--enable-cluster-push-secret-reconciler=false",
                &format!("--concurrent={}", args.concurrency),
                // Its 50 QPS / 100 burst default would make this a rate-limiter benchmark.
                "--client-qps=10000",
                "--client-burst=10000",
            ])
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("starting the peer")?;
        Ok(Running(child))
    }

    pub async fn converge(&self, client: &Client, args: &Args, n: usize) -> Result<PeerResult> {
        std::fs::create_dir_all(&args.out)?;
        fresh::start(client, args, "peer").await?;
        let pre = format!("bench-peer-{n}");
        workload::create_namespaces(client, &pre, args.namespaces).await?;
        let passwords = resource(PASSWORD);
        for k in 0..args.namespaces {
            let pw: DynamicObject = serde_json::from_value(json!({
                "apiVersion": format!("{}/{}", PASSWORD.0, PASSWORD.1), "kind": PASSWORD.2,
                "metadata": {"name": "password"},
                "spec": {"length": 32, "symbols": 0, "digits": 8, "noUpper": false, "allowRepeat": true},
            }))?;
            Api::<DynamicObject>::namespaced_with(
                client.clone(),
                &format!("{pre}-{k}"),
                &passwords,
            )
            .create(&PostParams::default(), &pw)
            .await?;
        }
        let peer = self.spawn(args)?;
        tokio::time::sleep(Duration::from_secs(3)).await; // its caches
        let es = resource(EXTERNAL_SECRET);
        let run = format!("peer-{n}");
        let watch = ReadyWatch::start(
            Api::<DynamicObject>::all_with(client.clone(), &es),
            &format!("{RUN_LABEL}={run}"),
            n,
            external_secret_ready,
        )
        .await?;
        let before = apimetrics::scrape(client).await?;
        let start = Instant::now();
        run_concurrently(n, args.concurrency, |i| {
            let (ns, name) = place(&pre, args.namespaces, i);
            let es = es.clone();
            let run = run.clone();
            async move {
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": format!("{}/{}", EXTERNAL_SECRET.0, EXTERNAL_SECRET.1), "kind": EXTERNAL_SECRET.2,
                    "metadata": {"name": name, "labels": {RUN_LABEL: run}},
                    "spec": {
                        // Generate once, never refresh (v0.16.2).
                        "refreshInterval": "0s",
                        "target": {"name": name, "creationPolicy": "Owner"},
                        "dataFrom": [{"sourceRef": {"generatorRef": {"apiVersion": format!("{}/{}", PASSWORD.0, PASSWORD.1), "kind": PASSWORD.2, "name": "password"}}}],
                    },
                }))?;
                Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &es)
                    .create(&PostParams::default(), &obj)
                    .await?;
                Ok(())
            }
        })
        .await?;
        let (took, ready) = watch.wait_since(start, LIMIT).await.context("the peer")?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut requests = apimetrics::delta(&before, &apimetrics::scrape(client).await?);
        apimetrics::subtract(&mut requests, "POST", "externalsecrets", n as f64);
        let pid = peer.0.id();
        let rss = procstat::steady(pid, args.api_port, Duration::from_secs(5))?.rss_kib;
        let peak = procstat::memory(pid)?.peak_kib;
        drop(peer);
        workload::delete_namespaces(client, &pre, args.namespaces).await?;
        Ok(PeerResult {
            took,
            ready,
            rss_kib: rss,
            peak_kib: peak,
            requests,
        })
    }
}
