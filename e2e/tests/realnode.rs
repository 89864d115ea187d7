//! Real-node suite: real pods on the kubelet, containerd and runc of
//! `e2e/realnode.sh`, inside its network namespace. Run by `make
//! realnode-test` (these tests are ignored otherwise: the simulated node of
//! the other suites starts no container).

use anyhow::{Result, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{DeleteParams, PostParams};
use randomsecret_e2e::realnode::{
    consumer_pod, consumer_report, container_memory, digest, require_real_node, wait_running,
};
use randomsecret_e2e::{TestNamespace, client, wait_deleted};
use serde_json::json;
use std::collections::BTreeMap;
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
