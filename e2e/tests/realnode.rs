//! Real-node suite: real pods on the kubelet, containerd and runc of
//! `e2e/realnode.sh`, inside its network namespace. Run by `make
//! realnode-test` (these tests are ignored otherwise: the simulated node of
//! the other suites starts no container).

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::randomsecrets::{create_ready, is_ready, rotate};
use randomsecret_e2e::realnode::{
    ConsumerReport, Memory, PodTrouble, consumer_pod, consumer_report, consumer_template,
    container_memory, digest, pod_memory, require_real_node, wait_running,
};
use randomsecret_e2e::tools::{kubectl, repo_root, run};
use randomsecret_e2e::workloads::{ReferenceChecker, rollout_complete, rollout_undo};
use randomsecret_e2e::{TestNamespace, client, wait_deleted, wait_for};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// A real pod reads a real Secret through `envFrom`, `secretKeyRef` and a
/// `secret` volume, as the restricted profile's user 65532 from a read-only
/// root, resolves a Service's name through the cluster DNS (CoreDNS) and
/// reaches the apiserver by the in-cluster config (the kubernetes Service
/// through kube-proxy, its ServiceAccount token); the log it prints comes back
/// through the apiserver from the kubelet. Deleting it leaves no volume mounted.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn a_real_pod_reads_a_real_secret() -> Result<()> {
    let node_dir = require_real_node()?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "realnode").await?;
    let secrets = ns.api::<Secret>();
    let pods = ns.api::<Pod>();

    // Values unique to this run, so a log of an earlier pod cannot pass.
    let values = BTreeMap::from([
        ("username".to_string(), format!("user-{}", ns.name)),
        ("password".to_string(), format!("pw-{}-x", ns.name)),
    ]);
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds"},
        "immutable": true,
    }))?;
    let secret = Secret {
        data: Some(
            values
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                .collect(),
        ),
        ..secret
    };
    secrets.create(&PostParams::default(), &secret).await?;

    let pod = consumer_pod(
        "reader",
        &[
            "-env-prefix=CREDS_",
            "-apiserver",
            "-resolve=kubernetes.default",
            "/creds",
        ],
        json!({
            "envFrom": [{"secretRef": {"name": "creds"}, "prefix": "CREDS_"}],
            "env": [{"name": "CREDS_REF", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}],
            "volumeMounts": [{"name": "creds", "mountPath": "/creds", "readOnly": true}],
        }),
        json!([{"name": "creds", "secret": {"secretName": "creds"}}]),
    )?;
    pods.create(&PostParams::default(), &pod).await?;
    let running = wait_running(&pods, "reader").await?;
    let status = running.status.unwrap_or_default();
    let pod_ip = status.pod_ip.unwrap_or_default();
    ensure!(
        pod_ip.starts_with("10.244.0."),
        "the pod's IP {pod_ip:?} is not on the node's bridge"
    );

    let report = consumer_report(&pods, "reader").await?;
    ensure!(
        report.errors.is_empty(),
        "the consumer reported errors: {:?}",
        report.errors
    );
    let expected_env = BTreeMap::from([
        (
            "CREDS_password".to_string(),
            digest(values["password"].as_bytes()),
        ),
        (
            "CREDS_username".to_string(),
            digest(values["username"].as_bytes()),
        ),
        (
            "CREDS_REF".to_string(),
            digest(values["password"].as_bytes()),
        ),
    ]);
    ensure!(
        report.env == expected_env,
        "environment: read {:?}, expected {expected_env:?}",
        report.env
    );
    let expected_files: BTreeMap<String, String> = values
        .iter()
        .map(|(k, v)| (format!("/creds/{k}"), digest(v.as_bytes())))
        .collect();
    ensure!(
        report.files == expected_files,
        "volume: read {:?}, expected {expected_files:?}",
        report.files
    );
    ensure!(
        report.apiserver.as_deref() == Some("gitVersion=v1.34.2"),
        "the apiserver through the in-cluster config: {:?}",
        report.apiserver
    );

    ensure!(
        report.resolved.get("kubernetes.default") == Some(&vec!["10.0.0.1".to_string()]),
        "kubernetes.default through the cluster DNS: {:?}",
        report.resolved
    );

    // The kubelet tears the pod down: its Secret volume (a tmpfs) is unmounted.
    let uid = pod_uid(&pods).await?;
    pods.delete("reader", &DeleteParams::default()).await?;
    wait_deleted(&pods, "reader").await?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    let pod_dir = node_dir.join("kubelet/pods").join(&uid);
    let left: Vec<&str> = mounts
        .lines()
        .filter(|l| l.contains(pod_dir.to_str().unwrap_or("-")))
        .collect();
    ensure!(
        left.is_empty(),
        "mounts of the deleted pod are left: {left:?}"
    );
    ns.delete().await
}

async fn pod_uid(pods: &kube::Api<Pod>) -> Result<String> {
    Ok(pods.get("reader").await?.metadata.uid.unwrap_or_default())
}

/// A Service reaches a pod from the node's namespace, where the apiserver
/// calls webhooks from (kube-proxy's rules for locally sent packets), and
/// from another pod by its DNS name (CoreDNS, then kube-proxy, masqueraded so
/// the reply returns over the one bridge); the kubelet reports the pod's
/// memory from its cgroup.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn a_service_reaches_a_pod_from_the_node_and_from_a_pod() -> Result<()> {
    require_real_node()?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "realnode-svc").await?;
    let pods = ns.api::<Pod>();
    let services = ns.api::<Service>();
    let server = consumer_pod("server", &["-listen=:8080"], json!({}), json!([]))?;
    pods.create(&PostParams::default(), &server).await?;
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "server"},
        "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }))?;
    let service = services.create(&PostParams::default(), &service).await?;
    let cluster_ip = service.spec.and_then(|s| s.cluster_ip).unwrap_or_default();
    wait_running(&pods, "server").await?;
    consumer_report(&pods, "server").await?;

    // From the node's namespace, as the apiserver calls a webhook's Service.
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        match http_get(&format!("{cluster_ip}:80")) {
            Ok(body) => break body,
            Err(e) if Instant::now() > deadline => {
                return Err(e.context(format!("GET http://{cluster_ip}/")));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    ensure!(
        answer.contains("consumer server"),
        "the Service {cluster_ip} answered {answer:?}"
    );

    // From a pod, by the Service's DNS name.
    let url = format!("http://server.{}.svc/", ns.name);
    let fetch = format!("-fetch={url}");
    let client_pod = consumer_pod("client", &[fetch.as_str()], json!({}), json!([]))?;
    pods.create(&PostParams::default(), &client_pod).await?;
    wait_running(&pods, "client").await?;
    let report = consumer_report(&pods, "client").await?;
    ensure!(
        report.errors.is_empty(),
        "the client pod reported errors: {:?}",
        report.errors
    );
    ensure!(
        report.fetched.get(&url).map(String::as_str) == Some("consumer server"),
        "GET {url} from a pod: {:?}",
        report.fetched
    );

    // The kubelet measures the server's memory (the figure the suite reports for the controller).
    let deadline = Instant::now() + Duration::from_secs(60);
    let (working_set, rss) = loop {
        match container_memory(&client, "realnode-0", &ns.name, "server", "consumer").await {
            Ok(m) => break m,
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    };
    ensure!(
        working_set > 100_000 && rss > 100_000,
        "the server's memory: working set {working_set} B, RSS {rss} B"
    );
    eprintln!("the consumer's memory: working set {working_set} B, RSS {rss} B");
    ns.delete().await
}

/// A plain HTTP/1.0 GET of `/` at `addr`: the body.
fn http_get(addr: &str) -> Result<String> {
    use std::io::{Read, Write};
    let addr: std::net::SocketAddr = addr.parse()?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let (_, body) = out.split_once("\r\n\r\n").unwrap_or(("", &out));
    Ok(body.to_string())
}

// ---------------------------------------------------------------------------
// The controller as a user installs it: `make image`'s image, imported into
// the node, installed by `helm install` as docs/src/operate.md#installing says.

/// The release of the install section (docs/src/operate.md#installing).
const RELEASE_NS: &str = "randomsecret-system";
const RELEASE: &str = "randomsecret";
const CONTROLLER_PODS: &str =
    "app.kubernetes.io/name=randomsecret,app.kubernetes.io/instance=randomsecret";

/// The image `make image` writes and `realnode-test.sh` imports: the chart's
/// default repository at the chart's appVersion.
fn controller_image() -> Result<(String, String)> {
    let chart = std::fs::read_to_string(repo_root().join("charts/randomsecret/Chart.yaml"))?;
    let version = chart
        .lines()
        .find_map(|l| l.strip_prefix("appVersion:"))
        .context("appVersion in Chart.yaml")?
        .trim()
        .trim_matches('"')
        .to_string();
    Ok(("ghcr.io/randomsecret/randomsecret".to_string(), version))
}

/// Installs the chart unless it is installed (the tests share one release),
/// then waits until both replicas are Ready. The namespace gets the
/// restricted Pod Security label first; docs/src/operate.md's `helm install ...
/// --create-namespace` then finds it.
async fn installed(client: &kube::Client) -> Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), RELEASE_NS);
    if deployments.get_opt(RELEASE).await?.is_none() {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        if namespaces.get_opt(RELEASE_NS).await?.is_none() {
            kubectl(&["create", "namespace", RELEASE_NS])?;
        }
        kubectl(&[
            "label",
            "namespace",
            RELEASE_NS,
            "--overwrite",
            "pod-security.kubernetes.io/enforce=restricted",
            "pod-security.kubernetes.io/enforce-version=latest",
        ])?;
        let (repository, tag) = controller_image()?;
        let chart = repo_root().join("charts/randomsecret");
        let t0 = Instant::now();
        run(
            "helm",
            &[
                "install",
                RELEASE,
                chart.to_str().context("chart path")?,
                "--namespace",
                RELEASE_NS,
                "--create-namespace",
                "--set",
                &format!("image.repository={repository}"),
                "--set",
                &format!("image.tag={tag}"),
                "--set",
                "image.pullPolicy=Never",
                "--set",
                "webhook.enabled=true",
            ],
            None,
        )?;
        kubectl(&[
            "-n",
            RELEASE_NS,
            "rollout",
            "status",
            "deployment/randomsecret",
            "--timeout=120s",
        ])?;
        eprintln!(
            "helm install: both controller pods Ready {:.1} s after helm install began",
            t0.elapsed().as_secs_f64()
        );
    }
    wait_for(
        &deployments,
        RELEASE,
        "rolled out with 2 available replicas",
        |d: Option<&Deployment>| {
            rollout_complete(d)
                && d.and_then(|d| d.status.as_ref())
                    .and_then(|s| s.ready_replicas)
                    == Some(2)
        },
    )
    .await?;
    // The Deployment's status can lag a deleted pod: count the pods themselves.
    let deadline = Instant::now() + randomsecret_e2e::WAIT;
    loop {
        let pods = controller_pods(client).await?;
        if pods.len() == 2 && pods.iter().all(is_pod_ready) {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "{} controller pods, not 2 Ready ones",
            pods.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The controller's pods that run and are not being deleted.
async fn controller_pods(client: &kube::Client) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), RELEASE_NS);
    Ok(pods
        .list(&ListParams::default().labels(CONTROLLER_PODS))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// The pod holding the leader Lease (its identity is `<pod name>-<suffix>`),
/// once one of `candidates` holds it.
async fn leader_among(client: &kube::Client, candidates: &[String]) -> Result<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), RELEASE_NS);
    let deadline = Instant::now() + randomsecret_e2e::WAIT;
    loop {
        let holder = leases
            .get_opt(RELEASE)
            .await?
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .unwrap_or_default();
        let pod = holder.rsplit_once('-').map(|(p, _)| p).unwrap_or_default();
        if let Some(c) = candidates.iter().find(|c| c.as_str() == pod) {
            return Ok(c.clone());
        }
        if Instant::now() > deadline {
            bail!("the Lease {RELEASE_NS}/{RELEASE} is held by {holder:?}, none of {candidates:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn is_pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Item 1: `helm install` of the chart as docs/src/operate.md says, with `make
/// image`'s image (imported, `pullPolicy: Never`), two replicas with leader
/// election and the webhook, in a namespace enforcing the restricted Pod
/// Security profile (a pod outside it is refused there); both pods become
/// Ready through their real probes (the kubelet's HTTP GETs of /readyz on the
/// pod IP); when the leader's pod is deleted, the standby takes the Lease and
/// reconciles a new RandomSecret to Ready.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn controller_1_helm_install_restricted_ready_and_the_standby_takes_over() -> Result<()> {
    require_real_node()?;
    let client = client().await?;
    installed(&client).await?;

    // The namespace enforces restricted: a pod outside the profile is refused.
    let pods: Api<Pod> = Api::namespaced(client.clone(), RELEASE_NS);
    let root: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "not-restricted"},
        "spec": {"containers": [{"name": "c", "image": randomsecret_e2e::realnode::CONSUMER_IMAGE}]},
    }))?;
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match pods.create(&dry_run, &root).await {
        Err(kube::Error::Api(e)) if e.message.contains("violates PodSecurity \"restricted") => {}
        other => bail!("a pod outside the restricted profile was not refused: {other:?}"),
    }

    let (repository, tag) = controller_image()?;
    let running = controller_pods(&client).await?;
    ensure!(running.len() == 2, "{} controller pods", running.len());
    for p in &running {
        let name = p.name_any();
        let spec = p.spec.as_ref().context("spec")?;
        let c = &spec.containers[0];
        ensure!(
            c.image.as_deref() == Some(format!("{repository}:{tag}").as_str())
                && c.image_pull_policy.as_deref() == Some("Never"),
            "{name}: image {:?}, pull policy {:?}",
            c.image,
            c.image_pull_policy
        );
        let probe = c
            .readiness_probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref())
            .context("readiness probe")?;
        ensure!(
            probe.path.as_deref() == Some("/readyz"),
            "{name}: probe {probe:?}"
        );
        ensure!(is_pod_ready(p), "{name} is not Ready");
        let status = p.status.as_ref().context("status")?;
        let cs = &status
            .container_statuses
            .as_ref()
            .context("container statuses")?[0];
        ensure!(
            cs.ready && cs.restart_count == 0,
            "{name}: ready {}, restarts {}",
            cs.ready,
            cs.restart_count
        );
    }

    let names: Vec<String> = running.iter().map(|p| p.name_any()).collect();
    let leader = leader_among(&client, &names).await?;
    let standby = names
        .iter()
        .find(|n| **n != leader)
        .context("standby")?
        .clone();
    // The node is cordoned first: the replacement the ReplicaSet makes at once
    // would otherwise race the standby for the released Lease (and on this
    // fast node it starts within a second and can win; see the report).
    let node = running[0]
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .context("nodeName")?;
    kubectl(&["cordon", &node])?;
    let takeover = async {
        let t0 = Instant::now();
        pods.delete(&leader, &DeleteParams::default()).await?;
        let new_leader = leader_among(&client, std::slice::from_ref(&standby)).await?;
        let took = t0.elapsed();
        eprintln!(
            "leader {leader} deleted: the standby {new_leader} holds the Lease after {took:.1?}"
        );
        // On SIGTERM the leader releases the Lease: no wait for it to expire.
        ensure!(
            took < Duration::from_secs(10),
            "the standby took {took:?} to take over (the Lease lasts 15 s): was it released?"
        );
        // The new leader reconciles.
        let ns = TestNamespace::new(&client, "rn-takeover").await?;
        let rs = create_ready(
            &ns.api::<RandomSecret>(),
            "after-takeover",
            json!({"keys": {"password": {"length": 24}}}),
        )
        .await?;
        ensure!(
            rs.status.and_then(|s| s.secret_name).is_some(),
            "no version after the takeover"
        );
        eprintln!(
            "a RandomSecret created after the takeover is Ready {:.1?} after the leader's pod was deleted",
            t0.elapsed()
        );
        ns.delete().await
    }
    .await;
    kubectl(&["uncordon", &node])?;
    takeover?;
    // The Deployment replaces the deleted pod; both Ready again for the next tests.
    installed(&client).await
}

fn annotated_secret(name: &str) -> Result<Secret> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": name,
            "labels": {"randomsecret.io/managed": "true"},
            "annotations": {"randomsecret.io/generate": "password,token", "randomsecret.io/length": "40"},
        },
        "type": "Opaque",
        "stringData": {"username": "app"},
    }))?)
}

/// The keys of a Secret's data and their lengths (never the values).
fn key_lengths(s: &Secret) -> BTreeMap<String, usize> {
    s.data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.len()))
        .collect()
}

/// Item 2: the apiserver calls the webhook through its Service, trusting the
/// CA bundle the controller keeps in the MutatingWebhookConfiguration (equal
/// to `ca.crt` of the certificate Secret it made), and the webhook fills an
/// annotated Secret at admission (the keys are in the create response, before
/// the controller could patch). With both controller pods gone (the
/// Deployment scaled to 0), Secret writes still succeed (`failurePolicy:
/// Ignore`), and once the controller is back its controller path fills them.
/// No filled value is in any log of the node.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn controller_2_webhook_called_through_its_service_and_failing_open() -> Result<()> {
    let node_dir = require_real_node()?;
    let client = client().await?;
    installed(&client).await?;

    let configs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let tls: Api<Secret> = Api::namespaced(client.clone(), RELEASE_NS);
    let deadline = Instant::now() + randomsecret_e2e::WAIT;
    loop {
        let config = configs.get(RELEASE).await?;
        let hook = config
            .webhooks
            .as_ref()
            .and_then(|w| w.first())
            .context("no webhook in the configuration")?;
        let service = hook.client_config.service.as_ref();
        ensure!(
            hook.client_config.url.is_none()
                && service.map(|s| (s.name.as_str(), s.namespace.as_str()))
                    == Some(("randomsecret-webhook", RELEASE_NS)),
            "the webhook is not called through its Service: {:?}",
            hook.client_config
        );
        ensure!(
            hook.failure_policy.as_deref() == Some("Ignore"),
            "failurePolicy {:?}",
            hook.failure_policy
        );
        let ca = tls
            .get("randomsecret-webhook-tls")
            .await?
            .data
            .unwrap_or_default()
            .get("ca.crt")
            .map(|b| b.0.clone())
            .context("ca.crt in randomsecret-webhook-tls")?;
        if hook.client_config.ca_bundle.as_ref().map(|b| &b.0) == Some(&ca) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the configuration's caBundle is not ca.crt of randomsecret-webhook-tls");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let ns = TestNamespace::new(&client, "rn-webhook").await?;
    let secrets = ns.api::<Secret>();
    let want = BTreeMap::from([
        ("password".to_string(), 40),
        ("token".to_string(), 40),
        ("username".to_string(), 3),
    ]);
    let created = secrets
        .create(&PostParams::default(), &annotated_secret("at-admission")?)
        .await?;
    ensure!(
        key_lengths(&created) == want,
        "not filled at admission: the create response has keys of lengths {:?}",
        key_lengths(&created)
    );

    // Both replicas gone: writes still succeed, stored as sent.
    kubectl(&[
        "-n",
        RELEASE_NS,
        "scale",
        "deployment/randomsecret",
        "--replicas=0",
    ])?;
    // Scaled back up even when a check fails (the later tests need the controller).
    let while_down = async {
        let deadline = Instant::now() + randomsecret_e2e::WAIT;
        let all_pods: Api<Pod> = Api::namespaced(client.clone(), RELEASE_NS);
        while !all_pods
            .list(&ListParams::default().labels(CONTROLLER_PODS))
            .await?
            .items
            .is_empty()
        {
            ensure!(Instant::now() < deadline, "the controller pods did not go");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let t0 = Instant::now();
        let stored = secrets
            .create(&PostParams::default(), &annotated_secret("while-down")?)
            .await
            .context("a Secret write with the webhook down")?;
        let patch = Patch::Merge(json!({"metadata": {"labels": {"edited": "yes"}}}));
        secrets
            .patch("while-down", &PatchParams::default(), &patch)
            .await
            .context("a Secret update with the webhook down")?;
        let took = t0.elapsed();
        ensure!(
            key_lengths(&stored) == BTreeMap::from([("username".to_string(), 3)]),
            "with no replica the Secret should be stored as sent: {:?}",
            key_lengths(&stored)
        );
        eprintln!("webhook down: a create and an update of an annotated Secret took {took:.1?}");
        anyhow::Ok(())
    }
    .await;

    kubectl(&[
        "-n",
        RELEASE_NS,
        "scale",
        "deployment/randomsecret",
        "--replicas=2",
    ])?;
    while_down?;
    installed(&client).await?;
    let filled = wait_for(
        &secrets,
        "while-down",
        "filled by the controller path",
        |s: Option<&Secret>| s.is_some_and(|s| key_lengths(s) == want),
    )
    .await;
    ensure!(
        filled.is_ok(),
        "after the controller came back, while-down has keys {:?}",
        secrets.get("while-down").await.map(|s| key_lengths(&s))
    );
    // Neither the webhook's values nor the controller path's are in any log of the node.
    let (a, b) = (
        secrets.get("at-admission").await?,
        secrets.get("while-down").await?,
    );
    let leaked = randomsecret_e2e::realnode::secret_values_in_node_logs(&node_dir, &[&a, &b])?;
    ensure!(
        leaked.is_empty(),
        "a filled value is in the logs {leaked:?}"
    );
    ns.delete().await
}

// ---------------------------------------------------------------------------
// Real pods reading versions through a rotation, a rollout and an undo.

/// The consumer of the rollout test reads `secret` three ways and re-reads
/// its volume every second (a changed byte would be reported).
fn app_template(secret: &str) -> Result<Value> {
    consumer_template(
        "app",
        &["-env-prefix=CREDS_", "-interval=1s", "/creds"],
        json!({
            "envFrom": [{"secretRef": {"name": secret}, "prefix": "CREDS_"}],
            "env": [{"name": "CREDS_REF", "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}}}],
            "volumeMounts": [{"name": "creds", "mountPath": "/creds", "readOnly": true}],
        }),
        json!([{"name": "creds", "secret": {"secretName": secret}}]),
    )
}

/// Checks that a consumer of [`app_template`] read exactly `secret`'s data
/// (digests) and that no file changed under it since it started.
fn check_reads(pod: &str, report: &ConsumerReport, secret: &Secret) -> Result<()> {
    let name = secret.name_any();
    ensure!(
        report.errors.is_empty(),
        "pod {pod}: errors {:?}",
        report.errors
    );
    ensure!(
        report.changed.is_empty(),
        "pod {pod}: the bytes of {name} changed under the running pod: {:?}",
        report.changed
    );
    let data = secret.data.clone().unwrap_or_default();
    let mut env: BTreeMap<String, String> = data
        .iter()
        .map(|(k, v)| (format!("CREDS_{k}"), digest(&v.0)))
        .collect();
    env.insert(
        "CREDS_REF".into(),
        digest(&data.get("password").context("password")?.0),
    );
    let files: BTreeMap<String, String> = data
        .iter()
        .map(|(k, v)| (format!("/creds/{k}"), digest(&v.0)))
        .collect();
    ensure!(
        report.env == env && report.files == files,
        "pod {pod} did not read {name}: env {:?} files {:?}, expected env {env:?} files {files:?}",
        report.env,
        report.files
    );
    Ok(())
}

/// The report of a consumer pod if it printed `ready` (None before, or when
/// its log cannot be read).
async fn try_report(pods: &Api<Pod>, name: &str) -> Option<ConsumerReport> {
    let log = pods.logs(name, &Default::default()).await.ok()?;
    log.lines()
        .any(|l| l == "ready")
        .then(|| randomsecret_e2e::realnode::parse_report(&log))
}

fn running(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// The names of the pods `lp` selects that run and are not being deleted.
async fn running_pods(pods: &Api<Pod>, lp: &ListParams) -> Result<Vec<String>> {
    let list = pods.list(lp).await?;
    Ok(list
        .items
        .iter()
        .filter(|p| running(p))
        .map(|p| p.name_any())
        .collect())
}

/// Item 3 (and item 4's check under running pods): real pods read a version
/// through `envFrom`, `secretKeyRef` and a `secret` volume (digests compared
/// with the Secret's data). A rotation makes a new version; the Deployment is
/// pointed at its name (as a GitOps pipeline would) and rolls: while it does,
/// the old ReplicaSet's pods keep reading the old version until they end and
/// the new pods read the new; `kubectl rollout undo` brings back pods that read
/// the old version, which still exists (the controller keeps it while a
/// ReplicaSet references it). Over the whole test no pod waits in
/// `CreateContainerConfigError` or gets FailedMount for a missing Secret, no
/// pod references a missing version, no consumer ever saw a byte of a version
/// change under it (each re-reads its volume every second), and no value is
/// in any log of the node.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn controller_3_pods_read_versions_through_a_rotation_rollout_and_undo() -> Result<()> {
    let node_dir = require_real_node()?;
    let client = client().await?;
    installed(&client).await?;
    let ns = TestNamespace::new(&client, "rn-rollout").await?;
    let trouble = PodTrouble::start(&client, &ns.name);
    let refs = ReferenceChecker::start(&client, &ns.name, "app-creds");
    let (rs_api, secrets, pods, deployments) = (
        ns.api::<RandomSecret>(),
        ns.api::<Secret>(),
        ns.api::<Pod>(),
        ns.api::<Deployment>(),
    );
    let app_pods = ListParams::default().labels("app=app");

    let rs = create_ready(
        &rs_api,
        "app-creds",
        json!({"keys": {"password": {"length": 32}}, "static": {"username": "app"}, "rotation": "1"}),
    )
    .await?;
    let v1 = rs
        .status
        .and_then(|s| s.secret_name)
        .context("status.secretName")?;
    let s1 = secrets.get(&v1).await?;

    // minReadySeconds keeps each old pod running for 6 s beside a new one.
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "app"},
        "spec": {
            "replicas": 2, "minReadySeconds": 6,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "selector": {"matchLabels": {"app": "app"}},
            "template": app_template(&v1)?,
        },
    }))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;
    let on = |name: &str| randomsecret_e2e::workloads::rolled_out_on_all(&[name]);
    wait_for(&deployments, "app", "rolled out on v1", on(&v1)).await?;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut reads = 0;
    for name in running_pods(&pods, &app_pods).await? {
        let report = consumer_report(&pods, &name).await?;
        check_reads(&name, &report, &s1)?;
        seen.insert(name);
        reads += 1;
    }
    ensure!(seen.len() == 2, "first rollout: pods {seen:?}");
    let old = seen.clone();

    // Rotate; the Deployment is pointed at the new name.
    let v2 = rotate(&rs_api, "app-creds", "2").await?;
    ensure!(v2 != v1, "the rotation kept the name {v1}");
    let s2 = secrets.get(&v2).await?;
    ensure!(
        s1.data.as_ref().map(|d| digest(&d["password"].0))
            != s2.data.as_ref().map(|d| digest(&d["password"].0)),
        "the rotation kept the password"
    );
    let t0 = Instant::now();
    deployments
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": app_template(&v2)?}})),
        )
        .await?;
    let (mut overlap, mut old_reads) = (false, 0);
    let deadline = Instant::now() + randomsecret_e2e::WAIT;
    loop {
        let d = deployments.get("app").await?;
        let now = pods.list(&app_pods).await?.items;
        let mut new_checked = false;
        for p in &now {
            let name = p.name_any();
            if old.contains(&name) {
                // Read to its end: a terminating pod's log may be gone already.
                if let Some(report) = try_report(&pods, &name).await {
                    check_reads(&name, &report, &s1)?;
                    old_reads += 1;
                }
            } else if running(p) && !seen.contains(&name) {
                let report = consumer_report(&pods, &name).await?;
                check_reads(&name, &report, &s2)?;
                seen.insert(name);
                new_checked = true;
                reads += 1;
            } else if running(p)
                && let Some(report) = try_report(&pods, &name).await
            {
                check_reads(&name, &report, &s2)?;
                new_checked = true;
                reads += 1;
            }
        }
        let old_running = now
            .iter()
            .any(|p| old.contains(&p.name_any()) && running(p));
        overlap |= old_running && new_checked;
        if on(&v2)(Some(&d)) && !now.iter().any(|p| old.contains(&p.name_any())) {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the rollout to {v2} did not finish"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    ensure!(
        overlap,
        "never saw an old pod running beside a new one that read the new version"
    );
    ensure!(
        old_reads > 0,
        "never read an old pod's log during the rollout"
    );
    eprintln!(
        "rollout to {v2}: {:.1?}; old pods read {old_reads} times while it ran",
        t0.elapsed()
    );
    let second: BTreeSet<String> = seen.difference(&old).cloned().collect();
    // The old version is kept because the old ReplicaSet (scaled to 0, in the
    // Deployment's history) references it: the controller made it an owner.
    let deadline = Instant::now() + randomsecret_e2e::WAIT;
    while !randomsecret_e2e::owner_kinds(&secrets, &v1)
        .await?
        .iter()
        .any(|k| k == "ReplicaSet")
    {
        ensure!(
            Instant::now() < deadline,
            "{v1} has no ReplicaSet among its owners after the rollout to {v2}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Undo: pods reading v1 again, which still exists.
    rollout_undo(&ns.name, "deployment/app")?;
    wait_for(&deployments, "app", "rolled back to v1", on(&v1)).await?;
    let mut third = 0;
    for name in running_pods(&pods, &app_pods).await? {
        ensure!(
            !old.contains(&name) && !second.contains(&name),
            "pod {name} survived the undo"
        );
        let report = consumer_report(&pods, &name).await?;
        check_reads(&name, &report, &s1)?;
        third += 1;
        reads += 1;
    }
    ensure!(third == 2, "{third} pods after the undo");
    let rss: Api<ReplicaSet> = ns.api();
    ensure!(
        rss.list(&Default::default()).await?.items.len() == 2,
        "two ReplicaSets expected (v1's and v2's)"
    );
    // Neither version's bytes changed at any point.
    for (before, name) in [(&s1, &v1), (&s2, &v2)] {
        let now = secrets.get(name).await?;
        ensure!(
            now.data == before.data && now.immutable == Some(true),
            "version {name} changed (or is not immutable)"
        );
    }

    // No value of either version in any log of the node (the controller's,
    // the consumers', the kubelet's, the apiserver's, ...).
    let leaked = randomsecret_e2e::realnode::secret_values_in_node_logs(&node_dir, &[&s1, &s2])?;
    ensure!(
        leaked.is_empty(),
        "a version's value is in the logs {leaked:?}"
    );

    let problems = trouble.finish().await?;
    ensure!(
        problems.is_empty(),
        "pods missed Secrets:\n{}",
        problems.join("\n")
    );
    let checked = refs.finish().await?;
    eprintln!(
        "rotation, rollout and undo: {reads} consumer reports, all of the version their pod names, none changed; {checked} pod reference checks"
    );
    ns.delete().await
}

// ---------------------------------------------------------------------------
// The controller's memory as its pod runs it.

/// Bytes of a memory quantity as the chart writes limits (`256Mi`, `1Gi`, bytes).
fn quantity_bytes(q: &str) -> Result<u64> {
    let units = [("Ki", 1u64 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)];
    for (suffix, factor) in units {
        if let Some(n) = q.strip_suffix(suffix) {
            return Ok(n.parse::<u64>()? * factor);
        }
    }
    Ok(q.parse()?)
}

/// Every RandomSecret of a namespace Ready, or fails after `wait`.
async fn all_ready(api: &Api<RandomSecret>, count: usize, wait: Duration) -> Result<Duration> {
    let t0 = Instant::now();
    loop {
        let list = api.list(&Default::default()).await?.items;
        let ready = list.iter().filter(|rs| is_ready(Some(rs))).count();
        if list.len() == count && ready == count {
            return Ok(t0.elapsed());
        }
        ensure!(
            t0.elapsed() < wait,
            "{ready} of {count} RandomSecrets Ready after {wait:?}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Measures both controller pods (leader first) and prints one line each,
/// failing if any figure reaches the container's memory limit.
async fn report_memory(client: &kube::Client, phase: &str, limit: u64) -> Result<Memory> {
    let pods = controller_pods(client).await?;
    let names: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    let leader = leader_among(client, &names).await?;
    // cAdvisor refreshes its figures every 10 s or so: wait for one newer than now.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let mut leader_memory = Memory::default();
    for p in &pods {
        let role = if p.name_any() == leader {
            "leader"
        } else {
            "standby"
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let m = loop {
            match pod_memory(client, p, "controller").await {
                Ok(m) => break m,
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_secs(2)).await,
            }
        };
        eprintln!("MEMORY real node, controller pod ({role}), {phase}: {m}");
        for (what, v) in [
            ("cgroup working set", m.cgroup_working_set),
            ("cgroup RSS", m.cgroup_rss),
            ("Summary working set", m.summary_working_set),
            ("Summary RSS", m.summary_rss),
            ("VmRSS", m.vm_rss),
            ("VmHWM", m.vm_hwm),
        ] {
            ensure!(
                v > (1 << 20) && v < limit,
                "{role} {phase}: {what} {v} B is not between 1 MiB and the limit {limit} B"
            );
        }
        if role == "leader" {
            leader_memory = m;
        }
    }
    Ok(leader_memory)
}

/// Item 5: the controller's memory as its pod really runs it, measured on
/// the leader and the standby with examples/basic applied, then with 1,000
/// more RandomSecrets (all Ready): the container's cgroup (working set and
/// RSS, from `memory.stat` and the kubelet's Summary API) and the process's
/// VmRSS (`/proc/PID/status`, the pid from the cgroup's `cgroup.procs`).
/// Each figure must stay below the container's memory limit (the chart's
/// `resources.limits.memory`, read from the running pod). Prints `MEMORY`
/// lines for the table of docs/src/benchmarks.md#memory.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn controller_5_memory_with_the_examples_and_1000_randomsecrets() -> Result<()> {
    require_real_node()?;
    let client = client().await?;
    installed(&client).await?;
    let pods = controller_pods(&client).await?;
    let limit = pods[0]
        .spec
        .as_ref()
        .and_then(|s| s.containers[0].resources.as_ref())
        .and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get("memory"))
        .map(|q| q.0.clone())
        .context("the controller container has no memory limit")?;
    let limit = quantity_bytes(&limit)?;

    let examples = TestNamespace::new(&client, "rn-examples").await?;
    let dir = repo_root().join("examples/basic");
    kubectl(&[
        "apply",
        "-n",
        &examples.name,
        "-f",
        dir.to_str().context("path")?,
    ])?;
    let count = std::fs::read_dir(&dir)?.count();
    all_ready(&examples.api(), count, randomsecret_e2e::WAIT).await?;
    report_memory(
        &client,
        &format!("examples/basic ({count} RandomSecrets)"),
        limit,
    )
    .await?;

    let many = TestNamespace::new(&client, "rn-1000").await?;
    let api = many.api::<RandomSecret>();
    let t0 = Instant::now();
    let creates = futures::stream::iter(0..1000).map(|i| {
        let api = api.clone();
        async move {
            let rs = randomsecret_e2e::random_secret(
                &format!("rs-{i:04}"),
                json!({"keys": {"password": {"length": 32}}, "static": {"username": "app"}}),
            )?;
            api.create(&PostParams::default(), &rs).await?;
            anyhow::Ok(())
        }
    });
    use futures::StreamExt;
    let results: Vec<Result<()>> = creates.buffer_unordered(16).collect().await;
    results.into_iter().collect::<Result<Vec<()>>>()?;
    let took = all_ready(&api, 1000, Duration::from_secs(300)).await?;
    eprintln!(
        "1,000 RandomSecrets created and all Ready in {:.1?} ({took:.1?} after the last create)",
        t0.elapsed()
    );
    report_memory(
        &client,
        &format!("1,000 RandomSecrets (+{count} of examples/basic)"),
        limit,
    )
    .await?;
    many.delete().await?;
    examples.delete().await
}

// ---------------------------------------------------------------------------
// The kubelet and immutable Secrets (kubernetes#131589).

fn secret_of(name: &str, value: &str, immutable: bool) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        immutable: Some(immutable),
        data: Some(BTreeMap::from([(
            "key".to_string(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}

fn reader_pod(name: &str, secrets: &[&str]) -> Result<Pod> {
    let mut args = vec!["-interval=1s".to_string()];
    args.extend(secrets.iter().map(|s| format!("/{s}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mounts: Vec<Value> = secrets
        .iter()
        .map(|s| json!({"name": s, "mountPath": format!("/{s}"), "readOnly": true}))
        .collect();
    let volumes: Vec<Value> = secrets
        .iter()
        .map(|s| json!({"name": s, "secret": {"secretName": s}}))
        .collect();
    consumer_pod(name, &args, json!({"volumeMounts": mounts}), json!(volumes))
}

/// Waits until the pod's log has a `changed file PATH DIGEST` line, or `wait` ends.
async fn wait_changed(
    pods: &Api<Pod>,
    pod: &str,
    path: &str,
    wait: Duration,
) -> Result<Option<String>> {
    let t0 = Instant::now();
    loop {
        let report = consumer_report(pods, pod).await?;
        if let Some((_, d)) = report.changed.iter().rev().find(|(p, _)| p == path) {
            return Ok(Some(d.clone()));
        }
        if t0.elapsed() > wait {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Item 4: what the kubelet does with a Secret's bytes under a running pod,
/// which is why a version must never be re-created by hand. The consumer does
/// see a change when the kubelet makes one (a mutable Secret updated: its
/// volume file changes within the kubelet's sync period), so its silence
/// elsewhere means something; an immutable Secret deleted and re-created with
/// other bytes under the same name is never re-read for the running pod (the
/// kubelet caches immutable Secrets, kubernetes#131589), and a pod started
/// afterwards on the same node, while the first still runs, gets the same
/// cached old bytes; only once no pod on the node references it does a new
/// pod read the re-created bytes. Also: the pod watch of the rollout test
/// (PodTrouble) does report a pod whose Secret is missing, and its log scan
/// finds a string that is in the node's logs.
#[tokio::test]
#[ignore = "needs a real node: make realnode-test"]
async fn kubelet_caches_immutable_secrets_and_the_pod_watch_sees_missing_ones() -> Result<()> {
    let node_dir = require_real_node()?;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rn-immutable").await?;
    let (secrets, pods) = (ns.api::<Secret>(), ns.api::<Pod>());
    let value = |what: &str| format!("{what}-{}", ns.name);
    secrets
        .create(
            &PostParams::default(),
            &secret_of("mutable", &value("one"), false),
        )
        .await?;
    secrets
        .create(
            &PostParams::default(),
            &secret_of("frozen", &value("frozen-one"), true),
        )
        .await?;
    pods.create(
        &PostParams::default(),
        &reader_pod("first", &["mutable", "frozen"])?,
    )
    .await?;
    wait_running(&pods, "first").await?;
    let report = consumer_report(&pods, "first").await?;
    let want = BTreeMap::from([
        (
            "/frozen/key".to_string(),
            digest(value("frozen-one").as_bytes()),
        ),
        ("/mutable/key".to_string(), digest(value("one").as_bytes())),
    ]);
    ensure!(
        report.files == want,
        "first read {:?}, expected {want:?}",
        report.files
    );

    // The consumer reports a change the kubelet makes.
    let t0 = Instant::now();
    secrets
        .replace(
            "mutable",
            &PostParams::default(),
            &secret_of("mutable", &value("two"), false),
        )
        .await?;
    let changed = wait_changed(&pods, "first", "/mutable/key", randomsecret_e2e::WAIT).await?;
    ensure!(
        changed == Some(digest(value("two").as_bytes())),
        "the updated mutable Secret never reached the running pod: {changed:?}"
    );
    let refresh = t0.elapsed();
    eprintln!("a mutable Secret's update reached the running pod's volume after {refresh:.1?}");

    // An immutable Secret deleted and re-created with other bytes.
    secrets.delete("frozen", &DeleteParams::default()).await?;
    wait_deleted(&secrets, "frozen").await?;
    secrets
        .create(
            &PostParams::default(),
            &secret_of("frozen", &value("frozen-two"), true),
        )
        .await?;
    let window = (refresh * 2).max(Duration::from_secs(25));
    // A pod started now, on the same node, while `first` still runs.
    pods.create(&PostParams::default(), &reader_pod("second", &["frozen"])?)
        .await?;
    wait_running(&pods, "second").await?;
    let changed = wait_changed(&pods, "first", "/frozen/key", window).await?;
    ensure!(
        changed.is_none(),
        "the running pod saw the re-created immutable Secret: {changed:?}"
    );
    let second = consumer_report(&pods, "second").await?;
    let old = digest(value("frozen-one").as_bytes());
    let new = digest(value("frozen-two").as_bytes());
    let second_read = second.files.get("/frozen/key").cloned().unwrap_or_default();
    let which = |d: &str| {
        if d == old {
            "the OLD bytes"
        } else if d == new {
            "the new bytes"
        } else {
            "other bytes"
        }
    };
    eprintln!(
        "immutable Secret re-created by hand: the running pod kept the old bytes for {window:.0?}; a pod started meanwhile on the same node read {}",
        which(&second_read)
    );
    ensure!(
        second_read == old,
        "expected the kubelet's cached (old) bytes in a pod started while another used them, read {}",
        which(&second_read)
    );

    // Once no pod on the node uses it, a new pod reads the re-created bytes.
    for p in ["first", "second"] {
        pods.delete(p, &DeleteParams::default()).await?;
    }
    for p in ["first", "second"] {
        wait_deleted(&pods, p).await?;
    }
    pods.create(&PostParams::default(), &reader_pod("third", &["frozen"])?)
        .await?;
    wait_running(&pods, "third").await?;
    let third = consumer_report(&pods, "third").await?;
    let third_read = third.files.get("/frozen/key").cloned().unwrap_or_default();
    eprintln!(
        "after the pods that used it ended, a new pod read {}",
        which(&third_read)
    );
    ensure!(
        third_read == new,
        "the third pod read {}",
        which(&third_read)
    );

    // The pod watch of the rollout test sees a missing Secret (so its silence counts).
    let trouble = PodTrouble::start(&client, &ns.name);
    let env_only = consumer_pod(
        "orphan-env",
        &[],
        json!({"envFrom": [{"secretRef": {"name": "absent"}}]}),
        json!([]),
    )?;
    pods.create(&PostParams::default(), &env_only).await?;
    pods.create(
        &PostParams::default(),
        &reader_pod("orphan-volume", &["absent"])?,
    )
    .await?;
    // Until the kubelet names the missing Secret in both: its first word
    // on either may be a cache sync it retries (`kubelet_cache_sync_retried`).
    let names_it = |message: &str| {
        message.contains("\"absent\"")
            && !randomsecret_e2e::realnode::kubelet_cache_sync_retried(message)
    };
    let deadline = Instant::now() + randomsecret_e2e::WAIT;
    loop {
        let waiting = pods
            .get("orphan-env")
            .await?
            .status
            .and_then(|s| s.container_statuses)
            .and_then(|c| c.first().and_then(|c| c.state.clone()))
            .and_then(|s| s.waiting)
            .map(|w| (w.reason.unwrap_or_default(), w.message.unwrap_or_default()));
        let env_failed = waiting
            .as_ref()
            .is_some_and(|(r, m)| r == "CreateContainerConfigError" && names_it(m));
        let events: Api<k8s_openapi::api::core::v1::Event> = ns.api();
        let mount_failed = events
            .list(&Default::default())
            .await?
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("FailedMount")
                    && names_it(e.message.as_deref().unwrap_or_default())
            });
        if env_failed && mount_failed {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the pods of a missing Secret did not fail as expected ({waiting:?}, FailedMount {mount_failed})"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let problems = trouble.finish().await?;
    ensure!(
        problems
            .iter()
            .any(|p| p.contains("CreateContainerConfigError"))
            && problems.iter().any(|p| p.contains("FailedMount"))
            && problems.iter().all(|p| p.contains("absent")),
        "the pod watch reported {problems:?}"
    );
    // The log scan of the rollout test finds what is there: the kubelet logs
    // the failed mounts with this namespace's name.
    let found = randomsecret_e2e::realnode::values_in_node_logs(&node_dir, &[ns.name.as_bytes()])?;
    ensure!(
        !found.is_empty(),
        "the namespace's name is in no log of the node"
    );
    ns.delete().await
}
