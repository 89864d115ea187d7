//! Installing: the Helm chart and the kustomize config render, pass the
//! apiserver's dry run and apply; they grant the same RBAC; and the
//! controller's ServiceAccount is refused what its rules do not allow.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ListParams;
use kube::{Api, Client};
use randomsecret_e2e::*;
use serde_json::Value;

fn cluster_role_rules(rendered: &[Value]) -> Result<Value> {
    rendered
        .iter()
        .find(|d| d["kind"] == "ClusterRole")
        .map(|d| d["rules"].clone())
        .context("no ClusterRole")
}

/// `yaml` past the apiserver's validation, not applied.
fn server_dry_run(yaml: &str) -> Result<()> {
    run(
        "kubectl",
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--dry-run=server",
            "-f",
            "-",
        ],
        Some(yaml),
    )
    .map(drop)
}

fn apply_twice(yaml: &str) -> Result<()> {
    server_dry_run(yaml)?;
    run(
        "kubectl",
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(yaml),
    )?;
    Ok(())
}

#[tokio::test]
async fn helm_chart_and_kustomize_config_install() -> Result<()> {
    let root = repo_root();
    let chart = root.join("charts/randomsecret");
    let chart = chart.to_str().unwrap();
    let lint = run("helm", &["lint", "--strict", chart], None)?;
    ensure!(lint.contains("0 chart(s) failed"), "{lint}");
    run("kubectl", &["create", "namespace", "rs-install-helm"], None).ok();
    let helm = run(
        "helm",
        &[
            "template",
            "rs-helm-test",
            chart,
            "--namespace",
            "rs-install-helm",
            "--include-crds",
            "--set",
            "replicaCount=2",
        ],
        None,
    )?;
    apply_twice(&helm)?;
    let kustomize = run("kubectl", &["kustomize", root.to_str().unwrap()], None)?;
    apply_twice(&kustomize)?;

    // The two installs are equivalent: same kinds, same RBAC rules.
    let (h, k) = (docs(&helm)?, docs(&kustomize)?);
    ensure!(
        cluster_role_rules(&h)? == cluster_role_rules(&k)?,
        "the chart and config/rbac grant different rules"
    );
    for kind in [
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
    ] {
        ensure!(
            h.iter().any(|d| d["kind"] == kind) && k.iter().any(|d| d["kind"] == kind),
            "{kind} missing from one install"
        );
    }
    // The restricted Pod Security profile is what the Deployment asks for.
    let dep = h.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    ensure!(
        c["securityContext"]["readOnlyRootFilesystem"] == true
            && c["securityContext"]["capabilities"]["drop"][0] == "ALL"
    );
    ensure!(dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] == true);
    // The applied Deployment passes the namespace's restricted Pod Security admission.
    run(
        "kubectl",
        &[
            "label",
            "--overwrite",
            "namespace",
            "rs-install-helm",
            "pod-security.kubernetes.io/enforce=restricted",
        ],
        None,
    )?;
    apply_twice(&helm)?;

    // Workloads only with tracking mode: no rule on them by default; with
    // tracking.enabled, the rule and the flag.
    let workloads = |rules: &Value| {
        rules.as_array().is_some_and(|r| {
            r.iter()
                .any(|r| r["resources"].to_string().contains("deployments"))
        })
    };
    ensure!(!workloads(&cluster_role_rules(&h)?));
    ensure!(!c["args"].to_string().contains("--tracking"));
    let tracking = run(
        "helm",
        &[
            "template",
            "rs-helm-test",
            chart,
            "--set",
            "tracking.enabled=true",
        ],
        None,
    )?;
    let t = docs(&tracking)?;
    ensure!(workloads(&cluster_role_rules(&t)?));
    let dep = t.iter().find(|d| d["kind"] == "Deployment").unwrap();
    ensure!(
        dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .to_string()
            .contains("\"--tracking\"")
    );
    // The lease rules name the chart's own Lease for get and update.
    let lease_role = h
        .iter()
        .find(|d| {
            d["kind"] == "Role"
                && d["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("-leader-election"))
        })
        .context("leader election Role")?;
    ensure!(
        lease_role["rules"][0]["resourceNames"] == serde_json::json!(["rs-helm-test-randomsecret"]),
        "{}",
        lease_role["rules"]
    );
    Ok(())
}

#[tokio::test]
async fn the_controller_service_account_is_refused_outside_its_rules() -> Result<()> {
    let Some(kc) = std::env::var_os("E2E_CONTROLLER_KUBECONFIG") else {
        anyhow::bail!("E2E_CONTROLLER_KUBECONFIG is not set: run through e2e/run.sh");
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(kc)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let sa = Client::try_from(config)?;
    let cms: Api<ConfigMap> = Api::all(sa.clone());
    match cms.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => anyhow::bail!(
            "listing configmaps must be forbidden, got {:?}",
            other.map(|l| l.items.len())
        ),
    }
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(sa);
    match nss.delete("default", &Default::default()).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => anyhow::bail!(
            "deleting a namespace must be forbidden, got {:?}",
            other.map(|_| ())
        ),
    }
    Ok(())
}

/// The webhook's values: the configuration's scope (selectors, match
/// conditions, Ignore, no side effects, a short timeout, no caBundle), its
/// RBAC by name, the flags; and the cert-manager mode's Certificate and CA
/// injection. The self mode passes the apiserver's dry run.
#[tokio::test]
async fn the_chart_renders_the_webhook() -> Result<()> {
    let chart = repo_root().join("charts/randomsecret");
    let chart = chart.to_str().unwrap();
    let template = |extra: &[&str]| -> Result<String> {
        let mut args = vec![
            "template",
            "rs-hook",
            chart,
            "--namespace",
            "rs-install-hook",
            "--set",
            "webhook.enabled=true",
        ];
        args.extend_from_slice(extra);
        run("helm", &args, None)
    };
    let render = |extra: &[&str]| -> Result<Vec<Value>> { docs(&template(extra)?) };
    let find = |d: &[Value], kind: &str, suffix: &str| -> Result<Value> {
        d.iter()
            .find(|d| {
                d["kind"] == kind
                    && d["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.ends_with(suffix))
            })
            .cloned()
            .with_context(|| format!("no {kind} *{suffix}"))
    };
    let d = render(&[])?;
    let config = find(&d, "MutatingWebhookConfiguration", "rs-hook-randomsecret")?;
    let hook = &config["webhooks"][0];
    ensure!(
        hook["failurePolicy"] == "Ignore" && hook["sideEffects"] == "None",
        "{hook}"
    );
    ensure!(hook["timeoutSeconds"].as_i64().is_some_and(|t| t <= 5));
    ensure!(
        hook["clientConfig"].get("caBundle").is_none(),
        "a rendered caBundle would be reset by every upgrade"
    );
    ensure!(hook["rules"][0]["operations"] == serde_json::json!(["CREATE", "UPDATE"]));
    ensure!(hook["rules"][0]["resources"] == serde_json::json!(["secrets"]));
    let selector = hook["objectSelector"]["matchExpressions"].to_string();
    ensure!(
        selector.contains("randomsecret.io/managed") && selector.contains("DoesNotExist"),
        "{selector}"
    );
    let namespaces = hook["namespaceSelector"]["matchExpressions"][0].clone();
    ensure!(
        namespaces["operator"] == "NotIn"
            && namespaces["values"] == serde_json::json!(["kube-system", "rs-install-hook"]),
        "{namespaces}"
    );
    ensure!(
        hook["matchConditions"][0]["expression"]
            .as_str()
            .is_some_and(|e| [
                "'randomsecret.io/generate'",
                "'randomsecret.io/type'",
                "'secret.a-cup-of.coffee/enable'",
                "'secret-generator.v1.mittwald.de/autogenerate'",
                "'secret-generator.v1.mittwald.de/type'"
            ]
            .iter()
            .all(|a| e.contains(&format!("{a} in object.metadata.annotations"))))
    );
    let role = find(&d, "Role", "-webhook")?;
    ensure!(
        role["rules"][0]["resourceNames"]
            == serde_json::json!(["rs-hook-randomsecret-webhook-tls"]),
        "{}",
        role["rules"]
    );
    // The CA keys' Secret, by name (self mode: only the leader reads it).
    ensure!(
        role["rules"][1]["resourceNames"] == serde_json::json!(["rs-hook-randomsecret-webhook-ca"])
            && role["rules"][1]["verbs"] == serde_json::json!(["get", "list", "watch", "update"]),
        "{}",
        role["rules"]
    );
    let cluster_role = find(&d, "ClusterRole", "-webhook")?;
    ensure!(
        cluster_role["rules"][0]["resourceNames"] == serde_json::json!(["rs-hook-randomsecret"])
    );
    ensure!(
        cluster_role["rules"][0]["verbs"] == serde_json::json!(["get", "list", "watch", "patch"])
    );
    let dep = find(&d, "Deployment", "randomsecret")?;
    let args = dep["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    for flag in [
        "--webhook-bind-address=0.0.0.0:9443",
        "--webhook-cert-mode=self",
        "--webhook-configuration=rs-hook-randomsecret",
        "--webhook-ca-secret=rs-hook-randomsecret-webhook-ca",
        "--webhook-dns-names=rs-hook-randomsecret-webhook.rs-install-hook.svc,",
    ] {
        ensure!(args.contains(flag), "{flag} missing: {args}");
    }
    find(&d, "Service", "-webhook")?;
    run("kubectl", &["create", "namespace", "rs-install-hook"], None).ok();
    run(
        "kubectl",
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        Some(&template(&[])?),
    )?;

    // cert-manager: a Certificate and the CA injection; the controller only reads its Secret.
    let d = render(&["--set", "webhook.certMode=cert-manager"])?;
    let config = find(&d, "MutatingWebhookConfiguration", "rs-hook-randomsecret")?;
    ensure!(
        config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            == "rs-install-hook/rs-hook-randomsecret-webhook"
    );
    let cert = find(&d, "Certificate", "-webhook")?;
    ensure!(cert["spec"]["secretName"] == "rs-hook-randomsecret-webhook-tls");
    // No CA keys of the controller's: no grant for them.
    let role = find(&d, "Role", "-webhook")?;
    ensure!(
        role["rules"].as_array().map(Vec::len) == Some(1),
        "{}",
        role["rules"]
    );
    // The chart's own CA: the serving certificate's Issuer signs with a CA
    // certificate (so renewals keep the injected bundle), which a
    // self-signed Issuer makes.
    let issuer = find(&d, "Issuer", "-webhook")?;
    ensure!(
        cert["spec"]["issuerRef"]["name"] == issuer["metadata"]["name"],
        "{}",
        cert["spec"]["issuerRef"]
    );
    let ca = find(&d, "Certificate", "-webhook-ca")?;
    ensure!(
        ca["spec"]["isCA"] == true
            && issuer["spec"]["ca"]["secretName"] == ca["spec"]["secretName"],
        "{issuer} / {ca}"
    );
    let root = find(&d, "Issuer", "-webhook-selfsigned")?;
    ensure!(
        root["spec"]["selfSigned"].is_object()
            && ca["spec"]["issuerRef"]["name"] == root["metadata"]["name"]
    );
    ensure!(
        find(&d, "ClusterRole", "-webhook").is_err(),
        "cert-manager mode needs no access to the configuration"
    );
    ensure!(
        find(&d, "Role", "-webhook")?["rules"][0]["verbs"]
            == serde_json::json!(["get", "list", "watch"])
    );
    let dep = find(&d, "Deployment", "randomsecret")?;
    ensure!(
        dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .to_string()
            .contains("--webhook-cert-mode=external")
    );
    // A namespaced install: the webhook sees only the watched namespace.
    let d = render(&["--set", "watchNamespace=apps"])?;
    let config = find(&d, "MutatingWebhookConfiguration", "rs-hook-randomsecret")?;
    ensure!(
        config["webhooks"][0]["namespaceSelector"]["matchExpressions"][1]
            == serde_json::json!(
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["apps"]})
    );
    // Off by default.
    let plain = docs(&run("helm", &["template", "rs-hook", chart], None)?)?;
    ensure!(
        !plain
            .iter()
            .any(|d| d["kind"] == "MutatingWebhookConfiguration")
    );
    Ok(())
}

/// config/webhook as docs/src/annotation-mode.md#webhook says to use it (an overlay of the root with
/// the Component) builds, and every namespaced object lands in the install's
/// namespace: a Component's resources do not take the base's namespace, so
/// a Service or Role without one would go to the kubectl context's.
#[tokio::test]
async fn the_kustomize_webhook_component_builds_in_the_install_namespace() -> Result<()> {
    let root = repo_root().canonicalize()?;
    // Outside the repository (kustomize refuses an overlay inside the root
    // it includes), and by relative paths only (it refuses absolute ones).
    let overlay = std::env::temp_dir().canonicalize()?.join(format!(
        "randomsecret-webhook-overlay-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&overlay)?;
    let up = "../".repeat(overlay.components().count() - 1);
    let root_rel = format!("{up}{}", root.strip_prefix("/")?.display());
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!("resources: [{root_rel}]\ncomponents: [{root_rel}/config/webhook]\n"),
    )?;
    let built = docs(&run(
        "kubectl",
        &["kustomize", overlay.to_str().unwrap()],
        None,
    )?)?;
    const CLUSTER_SCOPED: [&str; 5] = [
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
    ];
    for d in &built {
        let kind = d["kind"].as_str().unwrap_or_default();
        if !CLUSTER_SCOPED.contains(&kind) {
            ensure!(
                d["metadata"]["namespace"] == "randomsecret-system",
                "{kind} {} is not in randomsecret-system",
                d["metadata"]["name"]
            );
        }
    }
    for kind in [
        "Service",
        "Role",
        "RoleBinding",
        "MutatingWebhookConfiguration",
    ] {
        ensure!(
            built.iter().any(|d| d["kind"] == kind
                && d["metadata"]["name"].as_str().is_some_and(
                    |n| n.ends_with("-webhook") || kind == "MutatingWebhookConfiguration"
                )),
            "no webhook {kind} in the build"
        );
    }
    let hook = &built
        .iter()
        .find(|d| d["kind"] == "MutatingWebhookConfiguration")
        .context("no MutatingWebhookConfiguration")?["webhooks"][0];
    ensure!(
        hook["failurePolicy"] == "Ignore" && hook["sideEffects"] == "None",
        "{hook}"
    );
    // Annotation mode leaves the webhook's excluded namespaces alone on the
    // controller's path too, with or without the webhook: the plain install
    // passes the flag once, naming what the webhook configuration excludes.
    let excluded = hook["namespaceSelector"]["matchExpressions"][0]["values"]
        .as_array()
        .context("the webhook excludes no namespaces")?
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(",");
    let plain = docs(&run(
        "kubectl",
        &["kustomize", root.to_str().unwrap()],
        None,
    )?)?;
    for (what, build) in [
        ("the plain install", &plain),
        ("the webhook overlay", &built),
    ] {
        let dep = build
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .with_context(|| format!("no Deployment in {what}"))?;
        let flags: Vec<&str> = dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .context("no args")?
            .iter()
            .filter_map(Value::as_str)
            .filter(|a| a.starts_with("--annotation-exclude-namespaces="))
            .collect();
        ensure!(
            flags == [format!("--annotation-exclude-namespaces={excluded}")],
            "{what}: {flags:?} (the webhook excludes {excluded})"
        );
    }
    std::fs::remove_dir_all(&overlay).ok();
    Ok(())
}

/// The Grafana dashboard: with `metrics.grafanaDashboard.enabled=true` the
/// chart renders a ConfigMap with the sidecar's label (and the folder
/// annotation, in the namespace asked for) whose data is the dashboard JSON
/// with its panels; it is off by default; and `kubectl kustomize
/// config/grafana` builds a ConfigMap with the same label and the same JSON.
#[tokio::test]
async fn the_chart_and_kustomize_render_the_grafana_dashboard() -> Result<()> {
    let root = repo_root();
    let chart = root.join("charts/randomsecret");
    let chart = chart.to_str().unwrap();
    let dashboards = |d: &[Value]| -> Vec<Value> {
        d.iter()
            .filter(|d| {
                d["kind"] == "ConfigMap"
                    && d["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.ends_with("-dashboard"))
            })
            .cloned()
            .collect()
    };
    let dashboard_json = |cm: &Value| -> Result<Value> {
        let text = cm["data"]["randomsecret.json"]
            .as_str()
            .with_context(|| format!("no data randomsecret.json: {cm}"))?;
        let json: Value = serde_json::from_str(text).context("the dashboard is not JSON")?;
        let panels = json["panels"].as_array().context("no panels")?;
        ensure!(!panels.is_empty(), "the dashboard has no panels");
        ensure!(
            panels.iter().all(|p| p["type"].is_string()),
            "a panel without a type"
        );
        Ok(json)
    };
    let on_disk: Value = serde_json::from_str(&std::fs::read_to_string(
        root.join("charts/randomsecret/dashboards/randomsecret.json"),
    )?)?;

    let template = |extra: &[&str]| -> Result<Vec<Value>> {
        let mut args = vec![
            "template",
            "rs-dash",
            chart,
            "--namespace",
            "rs-install-dash",
        ];
        args.extend_from_slice(extra);
        docs(&run("helm", &args, None)?)
    };
    ensure!(
        dashboards(&template(&[])?).is_empty(),
        "the dashboard is off by default"
    );
    let found = dashboards(&template(&[
        "--set",
        "metrics.grafanaDashboard.enabled=true",
    ])?);
    ensure!(found.len() == 1, "one dashboard ConfigMap: {found:?}");
    let cm = &found[0];
    ensure!(
        cm["metadata"]["labels"]["grafana_dashboard"] == "1",
        "the sidecar's default label: {}",
        cm["metadata"]
    );
    ensure!(cm["metadata"]["namespace"] == "rs-install-dash");
    ensure!(cm["metadata"]["annotations"]["grafana_folder"].is_null());
    let from_chart = dashboard_json(cm)?;
    ensure!(
        from_chart == on_disk,
        "the chart's ConfigMap holds dashboards/randomsecret.json whole"
    );
    let found = dashboards(&template(&[
        "--set",
        "metrics.grafanaDashboard.enabled=true",
        "--set",
        "metrics.grafanaDashboard.sidecarLabel=team_dashboard",
        "--set",
        "metrics.grafanaDashboard.sidecarLabelValue=yes",
        "--set",
        "metrics.grafanaDashboard.namespace=monitoring",
        "--set",
        "metrics.grafanaDashboard.folder=Platform",
    ])?);
    let cm = found.first().context("no dashboard ConfigMap")?;
    ensure!(
        cm["metadata"]["labels"]["team_dashboard"] == "yes"
            && cm["metadata"]["labels"]["grafana_dashboard"].is_null(),
        "the sidecar label asked for: {}",
        cm["metadata"]
    );
    ensure!(cm["metadata"]["namespace"] == "monitoring");
    ensure!(cm["metadata"]["annotations"]["grafana_folder"] == "Platform");
    ensure!(dashboard_json(cm)? == from_chart);

    let built = docs(&run(
        "kubectl",
        &["kustomize", root.join("config/grafana").to_str().unwrap()],
        None,
    )?)?;
    ensure!(
        built.len() == 1,
        "config/grafana builds one object: {built:?}"
    );
    let cm = &built[0];
    ensure!(
        cm["kind"] == "ConfigMap"
            && cm["metadata"]["name"] == "randomsecret-dashboard"
            && cm["metadata"]["labels"]["grafana_dashboard"] == "1",
        "config/grafana's ConfigMap: {}",
        cm["metadata"]
    );
    ensure!(
        dashboard_json(cm)? == from_chart,
        "config/grafana and the chart hold the same dashboard"
    );
    Ok(())
}

/// A namespaced install (`watchNamespace`) gets a Role, and a Role cannot
/// grant cluster-scoped kinds: it lists only the namespaced connection kind.
/// A cluster-wide install's ClusterRole lists all three.
#[tokio::test]
async fn a_namespaced_install_puts_no_cluster_scoped_kind_in_its_role() -> Result<()> {
    let chart = repo_root().join("charts/randomsecret");
    let chart = chart.to_str().unwrap();
    let kinds_in = |extra: &[&str], kind: &str| -> Result<Vec<String>> {
        let mut args = vec!["template", "rs-ns", chart, "--namespace", "rs-ns"];
        args.extend_from_slice(extra);
        let d = docs(&run("helm", &args, None)?)?;
        let role = d
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == "rs-ns-randomsecret")
            .with_context(|| format!("no {kind} rs-ns-randomsecret"))?;
        Ok(role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["apiGroups"][0] == "randomsecret.io")
            .flat_map(|r| r["resources"].as_array().cloned().unwrap_or_default())
            .filter_map(|r| r.as_str().map(String::from))
            .collect())
    };
    let namespaced = kinds_in(&["--set", "watchNamespace=apps"], "Role")?;
    ensure!(
        !namespaced.iter().any(|r| r.starts_with("cluster")),
        "a Role cannot grant cluster-scoped kinds: {namespaced:?}"
    );
    ensure!(
        namespaced.iter().any(|r| r == "vaultconnections"),
        "{namespaced:?}"
    );
    let cluster = kinds_in(&[], "ClusterRole")?;
    for kind in [
        "clustervaultconnections",
        "clusterconnections",
        "vaultconnections",
    ] {
        ensure!(cluster.iter().any(|r| r == kind), "{kind}: {cluster:?}");
    }
    Ok(())
}

/// `initialLists`: the controller decides (auto) unless a value says
/// otherwise; the schema takes only what the flag takes.
#[tokio::test]
async fn the_chart_passes_initial_lists_only_when_chosen() -> Result<()> {
    let chart = repo_root().join("charts/randomsecret");
    let chart = chart.to_str().unwrap();
    let args_of = |extra: &[&str]| -> Result<Vec<String>> {
        let mut args = vec!["template", "rs", chart, "--namespace", "rs"];
        args.extend_from_slice(extra);
        let d = docs(&run("helm", &args, None)?)?;
        let dep = d
            .iter()
            .find(|x| x["kind"] == "Deployment")
            .context("no Deployment")?;
        Ok(dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .context("args")?
            .iter()
            .filter_map(|a| a.as_str().map(String::from))
            .collect())
    };
    let default = args_of(&[])?;
    ensure!(
        !default.iter().any(|a| a.starts_with("--initial-lists")),
        "auto passes nothing: {default:?}"
    );
    for way in ["stream", "pages"] {
        let set = format!("initialLists={way}");
        let args = args_of(&["--set", &set])?;
        let flag = format!("--initial-lists={way}");
        ensure!(args.contains(&flag), "{set}: {args:?} lacks {flag}");
    }
    let refused = args_of(&["--set", "initialLists=sometimes"]);
    ensure!(
        refused
            .as_ref()
            .is_err_and(|e| format!("{e:#}").contains("initialLists")),
        "a value the flag does not take is refused by the schema: {refused:?}"
    );
    Ok(())
}

/// `shards`: one Deployment and PodDisruptionBudget per shard and the
/// default shard, each with its --shard-selector; the Role lets each hold
/// exactly its Lease (the controller's `Shard::lease` of its selector); the
/// webhook is the default shard's alone. A bad shard name is refused, and
/// without shards nothing of it is rendered. The apiserver's dry run takes it.
#[tokio::test]
async fn the_chart_renders_a_deployment_and_lease_per_shard() -> Result<()> {
    use randomsecret::shard::Shard;
    let chart = repo_root().join("charts/randomsecret");
    let chart = chart.to_str().unwrap();
    let template = |extra: &[&str]| -> Result<String> {
        let mut args = vec![
            "template",
            "rs",
            chart,
            "--namespace",
            "rs-shards",
            "--set",
            "webhook.enabled=true",
        ];
        args.extend_from_slice(extra);
        run("helm", &args, None)
    };
    // The shipped example's values: shards shard1 and shard2.
    let example = repo_root().join("examples/sharding/values.yaml");
    let yaml = template(&["-f", example.to_str().unwrap()])?;
    let d = docs(&yaml)?;
    let of_kind = |kind: &str| -> Vec<&Value> { d.iter().filter(|x| x["kind"] == kind).collect() };
    let deployments = of_kind("Deployment");
    let mut selectors = Vec::new();
    for (name, selector, webhook) in [
        ("rs-randomsecret", "!sharding.randomsecret.io/key", true),
        (
            "rs-randomsecret-shard1",
            "sharding.randomsecret.io/key=shard1",
            false,
        ),
        (
            "rs-randomsecret-shard2",
            "sharding.randomsecret.io/key=shard2",
            false,
        ),
    ] {
        let dep = deployments
            .iter()
            .find(|x| x["metadata"]["name"] == name)
            .with_context(|| format!("no Deployment {name}"))?;
        let args: Vec<&str> = dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .context("args")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let flag = format!("--shard-selector={selector}");
        ensure!(
            args.contains(&flag.as_str()),
            "{name}: {args:?} lacks {flag}"
        );
        ensure!(
            args.iter().any(|a| a.starts_with("--webhook-bind-address")) == webhook,
            "{name}: the webhook is the default shard's alone: {args:?}"
        );
        ensure!(
            d.iter()
                .any(|x| x["kind"] == "PodDisruptionBudget" && x["metadata"]["name"] == name),
            "no PodDisruptionBudget {name}"
        );
        selectors.push(selector);
    }
    ensure!(deployments.len() == 3, "{} Deployments", deployments.len());
    let role = d
        .iter()
        .find(|x| x["kind"] == "Role" && x["metadata"]["name"] == "rs-randomsecret-leader-election")
        .context("the leader election Role")?;
    let mut granted: Vec<&str> = role["rules"][0]["resourceNames"]
        .as_array()
        .context("resourceNames")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut leases: Vec<String> = selectors
        .iter()
        .map(|s| {
            Ok(Shard::parse(s)
                .map_err(anyhow::Error::msg)?
                .lease("rs-randomsecret"))
        })
        .collect::<Result<_>>()?;
    granted.sort_unstable();
    leases.sort_unstable();
    ensure!(
        granted == leases,
        "the Role grants {granted:?}, the shards lead on {leases:?}"
    );
    let webhook_service = d
        .iter()
        .find(|x| x["kind"] == "Service" && x["metadata"]["name"] == "rs-randomsecret-webhook")
        .context("the webhook Service")?;
    ensure!(
        webhook_service["spec"]["selector"]["randomsecret.io/shard"] == "default",
        "the webhook Service selects the default shard's pods: {}",
        webhook_service["spec"]["selector"]
    );
    // Past the apiserver's validation (Deployments, PDBs, Role), not applied.
    kubectl_dry_run(&yaml)?;
    let bad = template(&["--set", "shards={default}"]);
    ensure!(bad.is_err(), "the shard name default was taken");
    ensure!(
        !template(&[])?.contains("--shard-selector")
            && !template(&[])?.contains("randomsecret.io/shard"),
        "without shards, nothing of them is rendered"
    );
    Ok(())
}

/// examples/sharding/kustomize (docs/src/sharding.md#with-kustomize) builds
/// the chart's sharded install (examples/sharding/values.yaml): the same
/// Deployments, each with the same --shard-selector and randomsecret.io/shard
/// pod label, selector and anti-affinity; the same PodDisruptionBudgets,
/// selecting the same shard; and a leader election Role granting the same
/// Leases, which are those the Deployments' shards lead on. The apiserver's
/// dry run takes the build.
#[tokio::test]
async fn the_kustomize_sharding_example_matches_the_charts_shards() -> Result<()> {
    use randomsecret::shard::Shard;
    use std::collections::{BTreeMap, BTreeSet};
    let root = repo_root();
    let chart = root.join("charts/randomsecret");
    let values = root.join("examples/sharding/values.yaml");
    let overlay = root.join("examples/sharding/kustomize");
    // Release randomsecret in randomsecret-system: the names config/ uses.
    let helm = docs(&run(
        "helm",
        &[
            "template",
            "randomsecret",
            chart.to_str().unwrap(),
            "--namespace",
            "randomsecret-system",
            "-f",
            values.to_str().unwrap(),
        ],
        None,
    )?)?;
    let built = run("kustomize", &["build", overlay.to_str().unwrap()], None)?;
    let kustomize = docs(&built)?;

    let shard_label = |labels: &Value| labels["randomsecret.io/shard"].as_str().map(String::from);
    let args = |dep: &Value| -> Vec<String> {
        dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(String::from))
            .collect()
    };
    let flag = |dep: &Value, name: &str| -> Option<String> {
        args(dep)
            .iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")).map(String::from))
    };
    // Per Deployment: its --shard-selector, and the shard label of its pods,
    // of its selector and of its pods' anti-affinity.
    type Shards = BTreeMap<String, [Option<String>; 4]>;
    let deployments = |d: &[Value]| -> Shards {
        d.iter()
            .filter(|x| x["kind"] == "Deployment")
            .map(|dep| {
                let spec = &dep["spec"];
                let affinity = &spec["template"]["spec"]["affinity"]["podAntiAffinity"]
                    ["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
                    ["labelSelector"]["matchLabels"];
                (
                    dep["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                    [
                        flag(dep, "shard-selector"),
                        shard_label(&spec["template"]["metadata"]["labels"]),
                        shard_label(&spec["selector"]["matchLabels"]),
                        shard_label(affinity),
                    ],
                )
            })
            .collect()
    };
    let pdbs = |d: &[Value]| -> BTreeMap<String, Option<String>> {
        d.iter()
            .filter(|x| x["kind"] == "PodDisruptionBudget")
            .map(|p| {
                (
                    p["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    shard_label(&p["spec"]["selector"]["matchLabels"]),
                )
            })
            .collect()
    };
    let leases = |d: &[Value]| -> Result<BTreeSet<String>> {
        let role = d
            .iter()
            .find(|x| {
                x["kind"] == "Role" && x["metadata"]["name"] == "randomsecret-leader-election"
            })
            .context("the leader election Role")?;
        Ok(role["rules"][0]["resourceNames"]
            .as_array()
            .context("resourceNames")?
            .iter()
            .filter_map(|n| n.as_str().map(String::from))
            .collect())
    };

    let (h, k) = (deployments(&helm), deployments(&kustomize));
    ensure!(
        h.len() == 3 && h.values().all(|s| s[0].is_some()),
        "the chart renders no sharded install: {h:?}"
    );
    ensure!(
        h == k,
        "Deployments (--shard-selector, pod label, selector, anti-affinity):\n  chart     {h:?}\n  kustomize {k:?}"
    );
    let (h_pdb, k_pdb) = (pdbs(&helm), pdbs(&kustomize));
    ensure!(
        h_pdb.len() == 3,
        "the chart renders a PodDisruptionBudget per shard: {h_pdb:?}"
    );
    ensure!(
        h_pdb == k_pdb,
        "PodDisruptionBudgets:\n  chart     {h_pdb:?}\n  kustomize {k_pdb:?}"
    );
    let (h_leases, k_leases) = (leases(&helm)?, leases(&kustomize)?);
    ensure!(
        h_leases == k_leases,
        "the leader election Role grants:\n  chart     {h_leases:?}\n  kustomize {k_leases:?}"
    );
    // The Leases the overlay's controllers lead on (Shard::lease of each
    // Deployment's selector and --leader-election-id) are those granted.
    let led: BTreeSet<String> = kustomize
        .iter()
        .filter(|x| x["kind"] == "Deployment")
        .map(|dep| {
            let selector = flag(dep, "shard-selector").context("no --shard-selector")?;
            let id = flag(dep, "leader-election-id").context("no --leader-election-id")?;
            Ok(Shard::parse(&selector)
                .map_err(anyhow::Error::msg)?
                .lease(&id))
        })
        .collect::<Result<_>>()?;
    ensure!(
        led == k_leases,
        "the shards lead on {led:?}, the Role grants {k_leases:?}"
    );
    // Past the apiserver's validation, not applied (the namespace is run.sh's).
    run(
        "kubectl",
        &["create", "namespace", "randomsecret-system"],
        None,
    )
    .ok();
    server_dry_run(&built)
}

/// A server-side dry run of `yaml` into namespace rs-shards (made first).
fn kubectl_dry_run(yaml: &str) -> Result<()> {
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: rs-shards}\n";
    run("kubectl", &["apply", "--server-side", "-f", "-"], Some(ns))?;
    let dry = run(
        "kubectl",
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        Some(yaml),
    );
    run(
        "kubectl",
        &["delete", "namespace", "rs-shards", "--wait=false"],
        None,
    )?;
    dry.map(drop)
}
