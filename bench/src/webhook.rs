//! The webhook phase: annotated Secrets created at a steady rate through
//! the controller's mutating webhook, and its latency as the apiserver
//! measures it (`apiserver_admission_webhook_admission_duration_seconds`,
//! the delta of the histogram over the phase), beside the webhook's own
//! (`randomsecret_webhook_request_duration_seconds`).

use crate::args::Args;
use crate::report::Report;
use crate::stats::{Buckets, parse, quantile, share_within};
use crate::workload;
use anyhow::{Context, Result, ensure};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use randomsecret_e2e::ControllerProcess;
use serde_json::json;
use std::time::{Duration, Instant};

const NAME: &str = "bench-randomsecret";
const HOOK: &str = "secrets.randomsecret.io";
const NAMESPACE: &str = "bench-webhook";

fn annotated(name: &str) -> Result<Secret> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"randomsecret.io/managed": "true"},
            "annotations": {"randomsecret.io/generate": "password"}},
    }))?)
}

/// `count` creates at `rate` per second through the webhook.
pub async fn phase(
    client: &Client,
    args: &Args,
    count: usize,
    rate: f64,
    report: &mut Report,
) -> Result<()> {
    let port = args.port + 10;
    let configs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let _ = configs.delete(NAME, &DeleteParams::default()).await;
    workload::create_namespaces(client, NAMESPACE, 1).await?;
    let ns = format!("{NAMESPACE}-0");
    let config = serde_json::from_value(json!({
        "metadata": {"name": NAME},
        "webhooks": [{
            "name": HOOK, "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("https://127.0.0.1:{}/mutate", port + 2)},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["secrets"]}],
            "objectSelector": {"matchLabels": {"randomsecret.io/managed": "true"}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "failurePolicy": "Ignore", "sideEffects": "None", "timeoutSeconds": 3,
        }]
    }))?;
    configs.create(&PostParams::default(), &config).await?;
    let conc = args.concurrency.to_string();
    let addr = format!("--webhook-bind-address=127.0.0.1:{}", port + 2);
    let config_flag = format!("--webhook-configuration={NAME}");
    let mut ctl = ControllerProcess::spawn(
        "bench-webhook",
        port,
        &[
            "--log-level=info",
            "--concurrency",
            &conc,
            crate::controller::WITHOUT_PER_OBJECT,
            &addr,
            &config_flag,
            "--webhook-cert-secret=bench-randomsecret-webhook-tls",
            "--webhook-ca-secret=bench-randomsecret-webhook-ca",
            "--webhook-cert-namespace=default",
        ],
    )?;
    ctl.wait_ready(Duration::from_secs(300))?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    // Served once a dry-run create comes back with the key.
    let deadline = Instant::now() + Duration::from_secs(60);
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    while !secrets
        .create(&dry, &annotated("probe")?)
        .await
        .is_ok_and(|s| s.data.is_some_and(|d| d.contains_key("password")))
    {
        ensure!(
            Instant::now() < deadline,
            "the apiserver never got keys from the webhook"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let metric = "apiserver_admission_webhook_admission_duration_seconds";
    let must = [
        &format!("name=\"{HOOK}\"")[..],
        "operation=\"CREATE\"",
        "type=\"admit\"",
    ];
    let ours = "randomsecret_webhook_request_duration_seconds";
    let before = parse(&crate::apimetrics::text(client).await?, metric, &must);
    let ours_before = parse(&ctl.metrics()?, ours, &[]);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut inflight = futures::stream::FuturesUnordered::new();
    let mut filled = 0;
    for i in 0..count {
        tick.tick().await;
        let (secrets, s) = (secrets.clone(), annotated(&format!("s-{i:05}"))?);
        inflight.push(async move { secrets.create(&PostParams::default(), &s).await });
        while let Some(Some(r)) =
            futures::FutureExt::now_or_never(futures::StreamExt::next(&mut inflight))
        {
            filled += usize::from(r?.data.is_some());
        }
    }
    while let Some(r) = futures::StreamExt::next(&mut inflight).await {
        filled += usize::from(r?.data.is_some());
    }
    let after = parse(&crate::apimetrics::text(client).await?, metric, &must);
    let ours_after = parse(&ctl.metrics()?, ours, &[]);
    let ms = |b: &Buckets, a: &Buckets, q| {
        quantile(b, a, q)
            .map(|s| s * 1000.0)
            .context("no webhook calls measured")
    };
    // The apiserver's first bucket is 5 ms: its quantiles below that are
    // interpolated, the share within it is exact.
    let within = share_within(&before, &after, 0.005).context("no 5 ms bucket")?;
    report.webhook(
        count,
        rate,
        filled,
        within,
        (ms(&before, &after, 0.5)?, ms(&before, &after, 0.99)?),
        (
            ms(&ours_before, &ours_after, 0.5)?,
            ms(&ours_before, &ours_after, 0.99)?,
        ),
    );
    // The flood (issue 26 #2): maximal reviews from many clients straight to
    // the port, as any pod could send them; the peak RSS against the chart's limit.
    if !args.no_webhook_flood {
        flood(&ctl, port + 2, args.webhook_flood_clients, report)?;
    }
    ctl.terminate()?;
    let _ = configs.delete(NAME, &DeleteParams::default()).await;
    workload::delete_namespaces(client, NAMESPACE, 1).await
}

fn flood(ctl: &ControllerProcess, port: u16, clients: usize, report: &mut Report) -> Result<()> {
    use randomsecret_e2e::admission::{big_review, body_file, flood};
    use randomsecret_e2e::process::peak_rss;
    let pid = ctl.child.id();
    let dir = std::env::temp_dir().join(format!("bench-flood-{}", std::process::id()));
    let bodies = [
        body_file(&dir, "8mib.json", &big_review("huge", (8 << 20) - 8192))?,
        body_file(&dir, "3mib.json", &big_review("max", (3 << 20) - 8192))?,
    ];
    let before = peak_rss(pid)?;
    let rounds = 3;
    let result = flood(port, &bodies, clients, rounds)?;
    let peak = peak_rss(pid)?;
    let alive = ctl.is_ready();
    let statuses = bodies
        .iter()
        .zip(["8 MiB", "3 MiB"])
        .map(|(b, what)| format!("{what}: {:?}", result.of(b)))
        .collect::<Vec<_>>()
        .join("; ");
    let _ = std::fs::remove_dir_all(&dir);
    report.webhook_flood(
        clients,
        clients * rounds * bodies.len(),
        before,
        peak,
        &statuses,
        alive,
    );
    Ok(())
}
