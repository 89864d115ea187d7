//! Kinds of keys beyond strings (issue 29, first part): random bytes in
//! every encoding, UUIDs and password rules, each value checked by a
//! library nobody here wrote (`e2e/kinds.py`: pyca/cryptography's Fernet,
//! Python's base64 and uuid); carried over byte for byte by an edit that
//! rotates nothing, rotated alone by a change of its own generator.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::{Value, json};

const RULES: [(&str, u64); 4] = [("digits", 3), ("lower", 1), ("upper", 2), ("symbols", 2)];

fn spec(fernet_encoding: &str) -> Value {
    json!({
        "keys": {
            "fernet": {"bytes": {"length": 32, "encoding": fernet_encoding}},
            "hmac": {"bytes": {"length": 32, "encoding": "hex"}},
            "raw": {"bytes": {"length": 16, "encoding": "raw"}},
            "b32": {"bytes": {"length": 10, "encoding": "base32"}},
            "b64": {"bytes": {"length": 48}},
            "id": {"uuid": {}},
            "pw": {"length": 20, "symbols": true, "minDigits": 3, "minLower": 1, "minUpper": 2, "minSymbols": 2},
        },
        "static": {"user": "app"},
    })
}

/// The values, as the API writes them (base64).
fn values(s: &Secret) -> serde_json::Map<String, Value> {
    s.data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
        .collect()
}

/// What the oracle says of a version's values: "ok", or the failed checks.
/// The oracle's verdict on a version whose Fernet key is in `fernet_encoding`.
fn oracle(s: &Secret, fernet_encoding: &str) -> Result<String> {
    let mut rules: serde_json::Map<String, Value> = RULES
        .iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    rules.insert("length".into(), json!(20));
    python_oracle(
        "kinds.py",
        &json!({"values": values(s), "rules": rules, "fernet_encoding": fernet_encoding}),
    )
}

async fn current(api: &Api<RandomSecret>, secrets: &Api<Secret>, what: &str) -> Result<Secret> {
    let rs = wait_for(api, "kinds", what, is_ready).await?;
    current_secret(secrets, &rs).await
}

#[tokio::test]
async fn bytes_uuids_and_password_rules_are_what_real_tools_expect() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "key-kinds").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let v1 = first_version(&api, &secrets, "kinds", spec("base64url")).await?;
    let verdict = oracle(&v1, "base64url")?;
    ensure!(verdict == "ok", "v1: {verdict}");
    // The name offline is the cluster's.
    let manifest = serde_json::to_string(&random_secret("kinds", spec("base64url"))?)?;
    let offline = run("randomsecret", &["name"], Some(&manifest))?;
    ensure!(
        offline.trim() == v1.metadata.name.as_deref().unwrap_or_default(),
        "offline {offline}"
    );

    // A static edit keeps every value, byte for byte.
    patch_spec(&api, "kinds", json!({"static": {"user": "app2"}})).await?;
    let v2 = current(&api, &secrets, "Ready after a static edit").await?;
    ensure!(v2.metadata.name != v1.metadata.name, "no new version");
    let (a, b) = (values(&v1), values(&v2));
    for k in ["fernet", "hmac", "raw", "b32", "b64", "id", "pw"] {
        ensure!(
            a.get(k).is_some() && a.get(k) == b.get(k),
            "{k} changed on a static edit"
        );
    }

    // Another encoding of the Fernet key rotates that key alone (a kept
    // value in another encoding would not be the same value).
    patch_spec(
        &api,
        "kinds",
        json!({"keys": {"fernet": {"bytes": {"length": 32, "encoding": "base64"}}}}),
    )
    .await?;
    let v3 = current(&api, &secrets, "Ready after an encoding change").await?;
    let c = values(&v3);
    ensure!(
        c["fernet"] != b["fernet"],
        "fernet kept across an encoding change"
    );
    for k in ["hmac", "raw", "b32", "b64", "id", "pw"] {
        ensure!(c[k] == b[k], "{k} changed with fernet's encoding");
    }
    let rs = api.get("kinds").await?;
    let name = v3.metadata.name.clone().context("name")?;
    let entry = version_status(&rs, &name).context("v3 in status")?;
    ensure!(
        entry.rotated_keys == ["fernet"],
        "rotatedKeys {:?}",
        entry.rotated_keys
    );

    // spec.rotation: every value new, and still right.
    let v4 = secrets.get(&rotate(&api, "kinds", "2").await?).await?;
    let d = values(&v4);
    for k in ["fernet", "hmac", "raw", "b32", "b64", "id", "pw"] {
        ensure!(d[k] != c[k], "{k} kept across spec.rotation");
    }
    record_values(v4.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    // Still right: the Fernet key now in standard base64 (pyca/cryptography
    // 51 refuses that as a Fernet key; the oracle checks it is strictly
    // base64, and a Fernet key in its URL-safe form).
    let verdict = oracle(&v4, "base64")?;
    ensure!(verdict == "ok", "v4: {verdict}");
    ns.delete().await
}
