//! The push phase: RandomSecrets pushed to a real OpenBao (a dev server with
//! TLS and the Kubernetes auth method, as in the Vault suite), created and
//! then rotated at a steady rate. Each is timed from its write to the
//! RandomSecret's `VaultSynced=True` naming the expected version, beside the
//! controller's own time per push (`randomsecret_push_duration_seconds`).
//! Last, a restart of the controller: a resync must write no KV version.

use crate::args::Args;
use crate::figures::Pushed;
use crate::report::Report;
use crate::stats::{Buckets, parse, quantile};
use crate::workload::{self, RUN_LABEL};
use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret::api::connections::ClusterVaultConnection;
use randomsecret::version::Version;
use randomsecret_e2e::{ControllerProcess, OpenBao, condition, openbao};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NAMESPACE: &str = "bench-push";
const NAMESPACES: usize = 2;
const CONNECTION: &str = "bench";
/// The OpenBao dev server's port (and the next, its cluster port): apart
/// from the Vault suite's 28200-28211.
const BAO_PORT: u16 = 28220;
const RUN: &str = "push";

/// VaultSynced=True for the current generation, holding `secret` (the
/// status mapping's newest entry).
fn synced_with(rs: &RandomSecret, secret: &str) -> bool {
    condition(rs, "VaultSynced")
        .is_some_and(|c| c.status == "True" && c.observed_generation == rs.metadata.generation)
        && rs
            .status
            .as_ref()
            .and_then(|s| s.push.as_ref()?.vault.as_ref()?.versions.first())
            .is_some_and(|v| v.secret_name == secret)
}

fn random_secret(name: &str, rotation: &str) -> Result<RandomSecret> {
    let mut spec = workload::spec(rotation);
    spec["push"] = json!({"vault": {"connectionRef": {"name": CONNECTION}}});
    Ok(serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": name, "labels": {RUN_LABEL: RUN}},
        "spec": spec,
    }))?)
}

/// `count` writes (`send(i)`), one every 1/`rate` s, each timed until object
/// `i` is synced with the version of rotation token `rotation`.
async fn timed<F, Fut>(
    client: &Client,
    count: usize,
    rate: f64,
    rotation: &str,
    send: F,
) -> Result<Vec<Duration>>
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let pending: workload::Pending = Arc::default();
    let latencies: workload::Latencies = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let mut watch = workload::watch_pending(
        Api::all(client.clone()),
        &format!("{RUN_LABEL}={RUN}"),
        pending.clone(),
        latencies.clone(),
        synced_with,
    );
    watch.first_list().await?;
    let spec: randomsecret::api::RandomSecretSpec =
        serde_json::from_value(workload::spec(rotation))?;
    let start = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / rate);
    let mut sends = Vec::with_capacity(count);
    for i in 0..count {
        tokio::time::sleep_until((start + interval * i as u32).into()).await;
        let (ns, name) = workload::place(NAMESPACE, NAMESPACES, i);
        let expected = Version::of(&spec, &name)?.secret_name;
        workload::mark_sent(&pending, &ns, &name, expected);
        sends.push(tokio::spawn(send(ns, name)));
    }
    for s in sends {
        s.await??;
    }
    let done = workload::seen_all(&pending, &latencies, Duration::from_secs(300))
        .await
        .with_context(|| format!("push: of {count}, not all synced"))?;
    Ok(workload::times(&done))
}

/// The sum of a counter's series with `labels` in a metrics text.
fn counter(text: &str, name_and_labels: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name_and_labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>()
        + 0.0 // an empty sum is -0.0
}

/// OpenBao and its connection: the Kubernetes auth method against this
/// control plane, for the ServiceAccount the controller asks a token for.
async fn set_up(client: &Client) -> Result<OpenBao> {
    let (sa_ns, sa) = openbao::CONTROLLER_SA;
    randomsecret_e2e::run(
        "kubectl",
        &["apply", "--server-side", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {sa_ns}}}\n---\n\
             apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {sa}, namespace: {sa_ns}}}\n"
        )),
    )?;
    let bao = OpenBao::start(BAO_PORT)?;
    workload::create_namespaces(client, NAMESPACE, NAMESPACES).await?;
    let ca_ns = format!("{NAMESPACE}-0");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "openbao-ca"}, "data": {"ca.crt": bao.ca_pem},
    }))?;
    Api::<ConfigMap>::namespaced(client.clone(), &ca_ns)
        .create(&PostParams::default(), &cm)
        .await?;
    let allowed: Vec<String> = (0..NAMESPACES)
        .map(|i| format!("{NAMESPACE}-{i}"))
        .collect();
    let c: ClusterVaultConnection = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "ClusterVaultConnection",
        "metadata": {"name": CONNECTION},
        "spec": {"address": bao.address,
            "ca": {"configMapRef": {"name": "openbao-ca", "namespace": ca_ns, "key": "ca.crt"}},
            "auth": {"kubernetes": {"role": openbao::ROLE}},
            "allowedNamespaces": allowed, "timeoutSeconds": 5},
    }))?;
    Api::<ClusterVaultConnection>::all(client.clone())
        .patch(
            CONNECTION,
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&c),
        )
        .await?;
    Ok(bao)
}

fn start_controller(args: &Args) -> Result<ControllerProcess> {
    let (sa_ns, sa) = openbao::CONTROLLER_SA;
    let conc = args.concurrency.to_string();
    let mut p = ControllerProcess::spawn(
        "bench-push",
        args.port + 20,
        &[
            "--log-level=info",
            "--concurrency",
            &conc,
            crate::controller::WITHOUT_PER_OBJECT,
            "--service-account-name",
            sa,
            "--service-account-namespace",
            sa_ns,
        ],
    )?;
    p.wait_ready(Duration::from_secs(300))?;
    Ok(p)
}

/// `count` RandomSecrets with a push, created at `rate` per second, then each
/// rotated at the same rate; then a restart with all of them synced.
pub async fn phase(
    client: &Client,
    args: &Args,
    count: usize,
    rate: f64,
    report: &mut Report,
) -> Result<()> {
    let bao = set_up(client).await?;
    let ctl = start_controller(args)?;
    let histogram = "randomsecret_push_duration_seconds";
    let empty = Buckets::new();

    eprintln!("bench: push: {count} creates at {rate}/s");
    let create = timed(client, count, rate, "1", |ns, name| {
        let client = client.clone();
        async move {
            Api::<RandomSecret>::namespaced(client, &ns)
                .create(&PostParams::default(), &random_secret(&name, "1")?)
                .await?;
            Ok(())
        }
    })
    .await?;
    eprintln!("bench: push: {count} rotations at {rate}/s");
    let rotate = timed(client, count, rate, "2", |ns, name| {
        let client = client.clone();
        async move {
            workload::rotate(&client, &ns, &name, "2").await?;
            Ok(())
        }
    })
    .await?;
    let after = parse(&ctl.metrics()?, histogram, &[]);
    let ms = |q| {
        quantile(&empty, &after, q)
            .map(|s| s * 1000.0)
            .context("no push measured")
    };
    let push_ms = (ms(0.5)?, ms(0.99)?);
    // One KV version per change, and each value in OpenBao is the Secret's.
    let (ns, name) = workload::place(NAMESPACE, NAMESPACES, 0);
    let rs = Api::<RandomSecret>::namespaced(client.clone(), &ns)
        .get(&name)
        .await?;
    let secret_name = rs
        .status
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .context("status.secretName")?;
    let secret = Api::<Secret>::namespaced(client.clone(), &ns)
        .get(&secret_name)
        .await?;
    let path = format!("secret/{}/{ns}/{name}", openbao::PREFIX);
    let (kv_version, data) = bao.kv_get(&path)?.context("the pushed path")?;
    let password = secret
        .data
        .as_ref()
        .and_then(|d| d.get("password"))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned());
    ensure!(
        kv_version == 2 && data["password"].as_str() == password.as_deref(),
        "push: {path} is not the Secret's values at KV version 2 (KV version {kv_version})"
    );

    eprintln!("bench: push: restart with {count} pushed");
    ctl.terminate()?;
    let ctl = start_controller(args)?;
    // The restarted controller compares every target once (unchanged).
    let deadline = Instant::now() + Duration::from_secs(300);
    let metrics = loop {
        let m = ctl.metrics()?;
        let compared = counter(&m, "randomsecret_pushes_total{");
        if compared >= count as f64 {
            break m;
        }
        ensure!(
            Instant::now() < deadline,
            "push: the restarted controller compared {compared} of {count}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    report.vault_push(&Pushed {
        count,
        rate,
        create,
        rotate,
        push_ms,
        restart_written: counter(&metrics, "randomsecret_pushes_total{result=\"written\"}"),
        restart_unchanged: counter(&metrics, "randomsecret_pushes_total{result=\"unchanged\"}"),
    });
    // The default deletionPolicy (Retain) keeps the paths: the finalizer goes
    // without a call to OpenBao, while this controller runs.
    workload::delete_namespaces(client, NAMESPACE, NAMESPACES).await?;
    ctl.terminate()?;
    Api::<ClusterVaultConnection>::all(client.clone())
        .delete(CONNECTION, &DeleteParams::default())
        .await?;
    drop(bao);
    Ok(())
}
