//! The Grafana dashboard and the alerts cannot rot: every metric the
//! dashboard queries is exported by the controller, scraped from `/metrics`
//! of a live controller (the webhook on, so its metrics are registered too);
//! the chart's alert rules pass their `promtool` tests, whose series have the
//! labels a live controller exports.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The metric names a PromQL text refers to (`randomsecret_...`).
fn queried(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("randomsecret_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// Every sample name a `/metrics` text can hold: each family's name (from
/// `# TYPE`), with the suffixes of its type.
fn exported(metrics: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in metrics.lines() {
        let mut w = line.split_whitespace();
        if (w.next(), w.next()) != (Some("#"), Some("TYPE")) {
            continue;
        }
        let (Some(name), Some(kind)) = (w.next(), w.next()) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_sum", "_count", "_created"],
            "summary" => &["_sum", "_count", "_created"],
            _ => &[""],
        };
        out.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    out
}

fn scrape(url: &str) -> Result<String> {
    run("curl", &["-fsS", "--max-time", "5", url], None)
}

/// This test's controller: metrics (and health on the next port), webhook.
/// Below the kernel's ephemeral ports, apart from the other suites' ranges.
const METRICS_PORT: u16 = 18230;
const WEBHOOK_PORT: u16 = 18232;

/// A controller process that is killed however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn every_metric_the_dashboard_queries_is_exported() -> Result<()> {
    let root = repo_root();
    let dashboard =
        std::fs::read_to_string(root.join("config/grafana/randomsecret-dashboard.json"))?;
    // (That the chart's copy is the same file is a unit test: runtime::metrics.)
    let json: serde_json::Value = serde_json::from_str(&dashboard)?;
    let exprs: Vec<String> = json["panels"]
        .as_array()
        .context("panels")?
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(String::from))
        .chain(
            json["templating"]["list"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v["definition"].as_str().map(String::from)),
        )
        .collect();
    let wanted: BTreeSet<String> = exprs.iter().flat_map(|e| queried(e)).collect();
    ensure!(wanted.len() >= 12, "the dashboard queries {wanted:?}");

    // A controller of this test's own, with the webhook on, in a namespace of its own.
    let client = client().await?;
    let ns = TestNamespace::new(&client, "dashboard").await?;
    // Admin credentials (the chart's RBAC pins the webhook's certificate
    // Secret to the webhook suite's); the run's proof key (inherited from
    // run.sh), since the shared controller reconciles this namespace too.
    let log = log_dir().join("controller-dashboard.log");
    let file = std::fs::File::create(&log)?;
    let mut child = KillOnDrop(
        std::process::Command::new(randomsecret_bin())
            .args([
                "controller",
                "--namespace",
                &ns.name,
                &format!("--metrics-bind-address=127.0.0.1:{METRICS_PORT}"),
                &format!("--health-probe-bind-address=127.0.0.1:{}", METRICS_PORT + 1),
                &format!("--webhook-bind-address=127.0.0.1:{WEBHOOK_PORT}"),
                "--webhook-cert-namespace",
                &ns.name,
                "--webhook-configuration",
                &format!("{}-none", ns.name),
                // The per-object families the dashboard's last row queries.
                "--per-object-metrics",
            ])
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()?,
    );
    // A family with labels is exported once it has a series: give each one
    // (a real admission review to the webhook, a Secret left unchanged, a
    // RandomSecret whose name is taken, a push to a connection that does not
    // exist) before scraping.
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Secret"},
            "resource": {"group": "", "version": "v1", "resource": "secrets"}, "namespace": &ns.name,
            "operation": "CREATE", "userInfo": {"username": "e2e"},
            "object": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "filled", "namespace": &ns.name,
                    "labels": {"randomsecret.io/managed": "true"}, "annotations": {"randomsecret.io/generate": "k"}}}}});
    let secrets: Api<Secret> = ns.api();
    let refused: Secret = serde_json::from_value(json!({"metadata": {"name": "refused",
        "labels": {"randomsecret.io/managed": "true"},
        "annotations": {"randomsecret.io/generate": "k", "randomsecret.io/length": "many"}}}))?;
    secrets.create(&PostParams::default(), &refused).await?;
    let spec = json!({"keys": {"k": {"length": 8}}});
    let taken =
        randomsecret::version::Version::of(&serde_json::from_value(spec.clone())?, "taken")?
            .secret_name;
    let foreign: Secret =
        serde_json::from_value(json!({"metadata": {"name": taken}, "stringData": {"a": "b"}}))?;
    secrets.create(&PostParams::default(), &foreign).await?;
    let randomsecrets: Api<RandomSecret> = ns.api();
    randomsecrets
        .create(&PostParams::default(), &random_secret("taken", spec)?)
        .await?;
    let pushed = json!({"keys": {"k": {"length": 8}},
        "push": {"vault": {"connectionRef": {"name": format!("{}-none", ns.name)}}}});
    randomsecrets
        .create(&PostParams::default(), &random_secret("pushed", pushed)?)
        .await?;
    let copied = json!({"keys": {"k": {"length": 8}},
        "push": {"clusters": [{"connectionRef": {"name": format!("{}-none", ns.name)}}]}});
    randomsecrets
        .create(&PostParams::default(), &random_secret("copied", copied)?)
        .await?;

    let families = [
        "randomsecret_webhook_requests",
        "randomsecret_annotated_fills",
        "randomsecret_annotated_refused",
        "randomsecret_reconcile_errors",
        "randomsecret_webhook_certificate_changes",
        "randomsecret_pushes",
        "randomsecret_push_errors",
        "randomsecret_cluster_syncs",
        "randomsecret_cluster_sync_errors",
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut metrics = String::new();
    while Instant::now() < deadline {
        if let Some(status) = child.0.try_wait()? {
            anyhow::bail!("the controller exited ({status}); see {}", log.display());
        }
        // The webhook serves once its certificate is loaded.
        let _ = run(
            "curl",
            &[
                "-ksS",
                "--max-time",
                "5",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
                &format!("https://127.0.0.1:{WEBHOOK_PORT}/mutate"),
            ],
            Some(&review.to_string()),
        );
        if let Ok(m) = scrape(&format!("http://127.0.0.1:{METRICS_PORT}/metrics")) {
            let done = families.iter().all(|f| m.contains(&format!("# TYPE {f} ")));
            metrics = m;
            if done {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    drop(child);
    let have = exported(&metrics);
    let missing: Vec<&String> = wanted.iter().filter(|m| !have.contains(*m)).collect();
    ensure!(
        missing.is_empty(),
        "the dashboard queries metrics the controller does not export: {missing:?}\n/metrics:\n{metrics}"
    );
    ns.delete().await
}

#[test]
fn the_parsers_find_names_and_suffixes() {
    assert_eq!(
        queried(
            "histogram_quantile(0.9, sum by (le) (rate(randomsecret_x_bucket{a=\"b\"}[5m]))) / randomsecret_y"
        ),
        BTreeSet::from([
            "randomsecret_x_bucket".to_string(),
            "randomsecret_y".to_string()
        ])
    );
    let have = exported(
        "# HELP randomsecret_c x\n# TYPE randomsecret_c counter\nrandomsecret_c_total 1\n# TYPE randomsecret_h histogram\n# TYPE randomsecret_g gauge\n",
    );
    for m in [
        "randomsecret_c_total",
        "randomsecret_h_bucket",
        "randomsecret_h_count",
        "randomsecret_g",
    ] {
        assert!(have.contains(m), "{m}");
    }
    assert!(!have.contains("randomsecret_c") && !have.contains("randomsecret_g_total"));
}

/// The per-object series (issue 30), scraped from the shared controller:
/// they appear with a RandomSecret, change with its rotation, and go with it.
#[tokio::test]
async fn per_object_series_follow_their_randomsecret() -> Result<()> {
    let url =
        std::env::var("E2E_METRICS_URL").context("E2E_METRICS_URL (run through e2e/run.sh)")?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "object-metrics").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let n = ns.name.clone();
    let series = |metric: &str, extra: &str| {
        format!("randomsecret_{metric}{{namespace=\"{n}\",name=\"db\"{extra}}}")
    };
    let value = |text: &str, s: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(s)?.strip_prefix(' ')?.parse::<f64>().ok())
    };
    // Scrapes until `want` holds of the text (the cache follows the watch).
    let until = |what: &'static str, want: &dyn Fn(&str) -> bool| -> Result<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = run("curl", &["-fsS", &url], None)?;
            if want(&text) {
                return Ok(text);
            }
            ensure!(Instant::now() < deadline, "{what}: not seen in /metrics");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let rs = create_ready(
        &api,
        "db",
        json!({"keys": {"k": {"length": 8}}, "rotateEvery": "24h", "rotation": "1"}),
    )
    .await?;
    let status = rs.status.clone().context("status")?;
    let v1 = secrets
        .get(status.secret_name.as_deref().context("secretName")?)
        .await?;
    let created = |s: &Secret| {
        s.metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second() as f64)
    };
    let ready = series("ready", ",condition=\"Ready\",reason=\"VersionReady\"");
    let text = until("Ready", &|t| value(t, &ready) == Some(1.0))?;
    let stalled = series("ready", ",condition=\"Stalled\",reason=\"VersionReady\"");
    ensure!(value(&text, &stalled) == Some(0.0), "{stalled}");
    let current = series("versions", ",state=\"current\"");
    let retained = series("versions", ",state=\"retained\"");
    let released = series("versions", ",state=\"released\"");
    ensure!(value(&text, &current) == Some(1.0) && value(&text, &retained) == Some(0.0));
    let last = series("last_rotation_timestamp_seconds", "");
    ensure!(value(&text, &last) == created(&v1), "{last}: v1's creation");
    let next = series("next_rotation_timestamp_seconds", "");
    let due = status.next_rotation.context("nextRotation")?.0.as_second() as f64;
    ensure!(
        value(&text, &next) == Some(due),
        "{next}: status.nextRotation"
    );
    ensure!(
        value(&text, &series("push_synced", ",target=\"vault\"")).is_none(),
        "no push: no push_synced series"
    );
    // The alert tests' series are as a controller exports them (push_synced
    // needs a push: its labels are the collector's unit test's).
    let scraped: BTreeSet<(String, BTreeSet<String>)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| labelled(l.split_whitespace().next()?))
        .collect();
    for (name, labels) in alert_test_series()? {
        if name.ends_with("push_synced") {
            continue;
        }
        ensure!(
            scraped.contains(&(name.clone(), labels.clone())),
            "test/alerts: {name} with labels {labels:?} is not what /metrics has"
        );
    }

    // A rotation: the new version's creation, the old one released (history 0).
    patch_spec(&api, "db", json!({"rotation": "2"})).await?;
    let rs = wait_for(
        &api,
        "db",
        "Ready after the rotation",
        |r: Option<&RandomSecret>| {
            is_ready(r)
                && r.and_then(|r| r.status.as_ref()?.secret_name.clone())
                    .is_some_and(|name| name != v1.metadata.name.clone().unwrap_or_default())
        },
    )
    .await?;
    let v2 = secrets
        .get(
            rs.status
                .as_ref()
                .and_then(|s| s.secret_name.as_deref())
                .context("secretName")?,
        )
        .await?;
    let text = until("the rotation", &|t| {
        value(t, &last) == created(&v2) && value(t, &released) == Some(1.0)
    })?;
    ensure!(value(&text, &current) == Some(1.0), "{text}");

    // Deleted: every series of it goes.
    api.delete("db", &Default::default()).await?;
    let prefix = format!("namespace=\"{n}\",name=\"db\"");
    until("the delete", &|t| !t.contains(&prefix))?;
    ns.delete().await
}

/// The chart's PrometheusRule, rendered with `sets`: its rule groups, as a
/// Prometheus rule file (JSON is YAML).
fn rendered_rules(sets: &[&str]) -> Result<String> {
    let chart = repo_root().join("charts/randomsecret");
    let mut args = vec!["template", "x", chart.to_str().context("chart path")?];
    for s in sets {
        args.extend(["--set", s]);
    }
    let out = run("helm", &args, None)?;
    let stream = randomsecret::gitops::yaml::read_documents(&out)?;
    let rule = stream
        .docs
        .iter()
        .filter_map(|d| d.value.as_ref())
        .find(|v| v["kind"] == "PrometheusRule")
        .context("no PrometheusRule rendered")?;
    Ok(serde_json::to_string_pretty(&rule["spec"])?)
}

/// The series of the alert tests (test/alerts/alerts.test.yaml): name and
/// label names (without `pod`, the scrape's own).
fn alert_test_series() -> Result<BTreeSet<(String, BTreeSet<String>)>> {
    let text = std::fs::read_to_string(repo_root().join("test/alerts/alerts.test.yaml"))?;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(s) = line.trim().strip_prefix("- series: '") else {
            continue;
        };
        out.insert(labelled(s.trim_end_matches('\'')).context(line.to_string())?);
    }
    ensure!(out.len() >= 4, "too few series read: {out:?}");
    Ok(out)
}

/// `name{a="x",b="y"} ...` -> (name, {a, b}), without `pod`.
fn labelled(series: &str) -> Option<(String, BTreeSet<String>)> {
    let (name, rest) = match series.split_once('{') {
        Some((n, r)) => (n, r.split_once('}')?.0),
        None => (series.split_whitespace().next()?, ""),
    };
    let labels = rest
        .split(',')
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.trim().to_string()))
        .filter(|k| k != "pod")
        .collect();
    Some((name.trim().to_string(), labels))
}

/// The alerts (issue 30) fire as their tests say: `promtool test rules`
/// over the rules the chart renders. A rule that reads a wrong label, or
/// fires sooner or later than its test expects, fails here.
#[test]
fn the_charts_alerts_pass_their_promtool_tests() -> Result<()> {
    // The alerts read the per-object series: without them, a clear refusal.
    let err = rendered_rules(&["metrics.prometheusRule.enabled=true"])
        .err()
        .context("rendered without per-object metrics")?;
    ensure!(
        format!("{err:#}").contains("needs metrics.perObject=true"),
        "{err:#}"
    );
    let rules = rendered_rules(&[
        "metrics.prometheusRule.enabled=true",
        "metrics.perObject=true",
    ])?;
    let dir = std::env::temp_dir().join(format!("randomsecret-alerts-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("rules.yaml"), &rules)?;
    std::fs::copy(
        repo_root().join("test/alerts/alerts.test.yaml"),
        dir.join("alerts.test.yaml"),
    )?;
    let rules_path = dir.join("rules.yaml");
    let tests_path = dir.join("alerts.test.yaml");
    let checked = run(
        "promtool",
        &["check", "rules", rules_path.to_str().context("path")?],
        None,
    )?;
    ensure!(checked.contains("SUCCESS: 5 rules found"), "{checked}");
    let tested = run(
        "promtool",
        &["test", "rules", tests_path.to_str().context("path")?],
        None,
    );
    std::fs::remove_dir_all(&dir)?;
    let tested = tested?;
    ensure!(tested.contains("SUCCESS"), "{tested}");
    Ok(())
}

#[test]
fn alert_test_series_are_read_with_their_label_names() {
    let (name, labels) =
        labelled(r#"randomsecret_ready{namespace="shop",name="db",condition="Ready",pod="a"}"#)
            .unwrap();
    assert_eq!(name, "randomsecret_ready");
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        ["condition", "name", "namespace"]
    );
    assert_eq!(
        labelled("randomsecret_leader").unwrap(),
        ("randomsecret_leader".into(), BTreeSet::new())
    );
}
