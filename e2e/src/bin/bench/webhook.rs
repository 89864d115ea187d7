//! The webhook phase: annotated Secrets created at a steady rate through
//! the controller's mutating webhook, and its latency as the apiserver
//! measures it (`apiserver_admission_webhook_admission_duration_seconds`,
//! the delta of the histogram over the phase), beside the webhook's own
//! (`randomsecret_webhook_request_duration_seconds`).

use crate::Args;
use crate::report::Report;
use anyhow::{Context, Result, ensure};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use randomsecret_e2e::ControllerProcess;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const NAME: &str = "bench-randomsecret";
const HOOK: &str = "secrets.randomsecret.io";
const NAMESPACE: &str = "bench-webhook";

/// Cumulative buckets (upper bound, count) of one histogram.
pub type Buckets = BTreeMap<u64, f64>;

fn key(le: f64) -> u64 {
    (le * 1e9) as u64
}

/// The apiserver's admission-duration buckets for our webhook (CREATE, admitted).
pub fn parse(text: &str, metric: &str, must: &[&str]) -> Buckets {
    let mut out = Buckets::new();
    let prefix = format!("{metric}_bucket{{");
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&prefix) else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        if !must.iter().all(|m| labels.contains(m)) {
            continue;
        }
        let le = labels
            .split("le=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .map(|s| {
                if s == "+Inf" {
                    f64::INFINITY
                } else {
                    s.parse().unwrap_or(f64::NAN)
                }
            });
        if let (Some(le), Ok(v)) = (le, value.trim().parse::<f64>()) {
            *out.entry(if le.is_infinite() { u64::MAX } else { key(le) })
                .or_default() += v;
        }
    }
    out
}

/// The `q` quantile (seconds) of the delta `after - before`, interpolated
/// within a bucket as Prometheus' histogram_quantile does.
pub fn quantile(before: &Buckets, after: &Buckets, q: f64) -> Option<f64> {
    let delta: Vec<(u64, f64)> = after
        .iter()
        .map(|(le, v)| (*le, v - before.get(le).copied().unwrap_or(0.0)))
        .collect();
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for (le, count) in delta {
        let upper = le as f64 / 1e9;
        if count >= rank {
            if le == u64::MAX {
                return Some(lower);
            }
            return Some(
                lower + (upper - lower) * (rank - below) / (count - below).max(f64::MIN_POSITIVE),
            );
        }
        (lower, below) = (upper, count);
    }
    None
}

/// The share (0..=1) of the delta's observations at or under `le` seconds
/// (a bucket bound): exact, where a quantile inside a bucket is interpolated.
pub fn share_within(before: &Buckets, after: &Buckets, le: f64) -> Option<f64> {
    let delta = |k: u64| Some(after.get(&k)? - before.get(&k).copied().unwrap_or(0.0));
    let total = delta(u64::MAX).filter(|t| *t > 0.0)?;
    Some(delta(key(le))? / total)
}

async fn apiserver_metrics(client: &Client) -> Result<String> {
    let req = http::Request::get("/metrics").body(Vec::new())?;
    Ok(client.request_text(req).await?)
}

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
    crate::workload::create_namespaces(client, NAMESPACE, 1).await?;
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
    let before = parse(&apiserver_metrics(client).await?, metric, &must);
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
    let after = parse(&apiserver_metrics(client).await?, metric, &must);
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
    crate::workload::delete_namespaces(client, NAMESPACE, 1).await
}

fn flood(ctl: &ControllerProcess, port: u16, clients: usize, report: &mut Report) -> Result<()> {
    use randomsecret_e2e::admission::{big_review, body_file, flood, peak_rss};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_histogram_delta() {
        let text = "m_bucket{name=\"h\",le=\"0.005\"} 90\nm_bucket{name=\"h\",le=\"0.025\"} 100\nm_bucket{name=\"h\",le=\"+Inf\"} 100\nm_bucket{name=\"x\",le=\"+Inf\"} 7\n";
        let after = parse(text, "m", &["name=\"h\""]);
        let before = Buckets::new();
        assert!((quantile(&before, &after, 0.5).unwrap() - 0.005 * 50.0 / 90.0).abs() < 1e-9);
        assert!(
            (quantile(&before, &after, 0.99).unwrap() - (0.005 + 0.02 * 9.0 / 10.0)).abs() < 1e-9
        );
        assert_eq!(share_within(&before, &after, 0.005), Some(0.9));
        assert_eq!(share_within(&after, &after, 0.005), None, "no calls");
    }
}
