//! One tenant's slow Vault server never starves another tenant's push
//! (issue 26, finding 3), against the shared controller and a real OpenBao.
//!
//! The attack: tenant A points many VaultConnections, with the longest
//! timeout the schema takes, at a server that accepts connections and never
//! answers (a tarpit on loopback), and pushes a dozen RandomSecrets through
//! them: more pushes than the controller has slots. Tenant B's push to a
//! healthy server must still complete within one tenant deadline.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret::api::connections::VaultConnection;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Accepts connections on loopback and never answers; keeps them open.
fn tarpit() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    Ok(port)
}

/// A Secret `vault` with a token and the CA, and a VaultConnection `name`
/// to `address` with token auth.
async fn connection(
    client: &Client,
    ns: &TestNamespace,
    name: &str,
    address: &str,
    token: &str,
    ca: &str,
) -> Result<()> {
    let secrets: Api<Secret> = ns.api();
    if secrets.get_opt("vault").await?.is_none() {
        let secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vault"},
            "stringData": {"token": token, "ca.crt": ca},
        }))?;
        secrets.create(&PostParams::default(), &secret).await?;
    }
    let vc: VaultConnection = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "VaultConnection",
        "metadata": {"name": name},
        "spec": {"address": address, "timeoutSeconds": 300,
                 "auth": {"tokenSecretRef": {"name": "vault", "key": "token"}},
                 "ca": {"secretRef": {"name": "vault", "key": "ca.crt"}}},
    }))?;
    Api::<VaultConnection>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &vc)
        .await?;
    Ok(())
}

fn push_through(connection: &str) -> Value {
    json!({"keys": {"k": {"length": 16}}, "push": {"vault": {
        "connectionRef": {"kind": "VaultConnection", "name": connection}}}})
}

#[tokio::test]
async fn a_tenants_tarpit_never_starves_another_tenants_push() -> Result<()> {
    let client = client().await?;
    let bao = OpenBao::start(28240)?;
    let token = bao.policy_token()?;

    // Tenant A: eight connections to the tarpit, twelve pushes through them.
    let port = tarpit()?;
    let a = TestNamespace::new(&client, "tarpit-a").await?;
    for i in 0..8 {
        let address = format!("https://127.0.0.1:{port}");
        connection(
            &client,
            &a,
            &format!("slow-{i}"),
            &address,
            "not-a-token",
            &bao.ca_pem,
        )
        .await?;
    }
    let a_api: Api<RandomSecret> = a.api();
    for i in 0..12 {
        create_ready(
            &a_api,
            &format!("a{i}"),
            push_through(&format!("slow-{}", i % 8)),
        )
        .await?;
    }
    // Their pushes start once each is Ready (the push looks again 15 s
    // after it first saw one not Ready): let them fill every slot.
    tokio::time::sleep(Duration::from_secs(20)).await;

    // Tenant B: one push to a healthy server.
    let b = TestNamespace::new(&client, "tarpit-b").await?;
    connection(&client, &b, "healthy", &bao.address, &token, &bao.ca_pem).await?;
    let b_api: Api<RandomSecret> = b.api();
    let start = Instant::now();
    create_ready(&b_api, "db", push_through("healthy")).await?;
    wait_for(
        &b_api,
        "db",
        "VaultSynced=True",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| condition(rs, "VaultSynced"))
                .is_some_and(|c| c.status == "True")
        },
    )
    .await?;
    let waited = start.elapsed();
    // Up to 15 s until its push first sees it Ready, then at most one of
    // tenant A's requests (capped at 15 s) before a slot is B's.
    ensure!(
        waited < Duration::from_secs(45),
        "tenant B's push waited {waited:?} behind tenant A's tarpit"
    );
    // Tenant A's pushes fail, with its own reason, and never reach B's server.
    let a0 = a_api.get("a0").await?;
    let c = condition(&a0, "VaultSynced").context("tenant A's push reports")?;
    ensure!(
        c.status == "False" && c.reason == "Unreachable",
        "tenant A's push: {c:?}"
    );
    a.delete().await?;
    b.delete().await?;
    Ok(())
}
