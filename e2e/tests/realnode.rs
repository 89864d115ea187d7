//! Real-node suite: real pods on the kubelet, containerd and runc of
//! `e2e/realnode.sh`, inside its network namespace. Run by `make
//! realnode-test` (these tests are ignored otherwise: the simulated node of
//! the other suites starts no container).

use anyhow::{Result, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{DeleteParams, PostParams};
use randomsecret_e2e::realnode::{
    consumer_pod, consumer_report, digest, require_real_node, wait_running,
};
use randomsecret_e2e::{TestNamespace, client, wait_deleted};
use serde_json::json;
use std::collections::BTreeMap;

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
