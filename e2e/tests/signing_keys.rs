//! Signing keys with an overlapping JWKS (issue 28), checked with a JOSE
//! library nobody here wrote (jwcrypto, `e2e/jose.py`): a token signed with
//! version 1's private key verifies against version 3's JWKS when the key
//! keeps 2 previous public keys, and no longer with keep 1; every `kid` is
//! the thumbprint jwcrypto computes; an edit that rotates nothing keeps the
//! private key and the JWKS byte for byte.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::{Value, json};

fn jose(request: Value) -> Result<String> {
    python_oracle("jose.py", &request)
}

/// The keys: each algorithm, ES256 and EdDSA keeping 2 previous public
/// keys, RS256 keeping 1.
const KEYS: [(&str, &str, u32); 3] = [("es", "ES256", 2), ("ed", "EdDSA", 2), ("rs", "RS256", 1)];

fn spec(rotation: &str) -> Value {
    let keys: serde_json::Map<String, Value> = KEYS
        .iter()
        .map(|(k, alg, keep)| {
            (
                k.to_string(),
                json!({"signingKey": {"algorithm": alg, "keep": keep, "jwksKey": format!("{k}.jwks")}}),
            )
        })
        .collect();
    json!({"keys": keys, "static": {"issuer": "e2e"}, "rotation": rotation})
}

fn text(s: &Secret, key: &str) -> Result<String> {
    let v = s
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .with_context(|| format!("no {key} in {:?}", s.metadata.name))?;
    Ok(String::from_utf8(v.0.clone())?)
}

/// The current version's Secret; its private keys' PEM lines recorded for
/// the check that no value reaches a log (whole PEMs span lines).
async fn read(secrets: &Api<Secret>, name: &str) -> Result<Secret> {
    let s = secrets.get(name).await?;
    for (k, _, _) in KEYS {
        let pem = text(&s, k)?;
        record_values(
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .map(str::as_bytes),
        )?;
    }
    Ok(s)
}

fn kids(jwks: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_str(jwks)?;
    v["keys"]
        .as_array()
        .context("keys")?
        .iter()
        .map(|k| k["kid"].as_str().map(str::to_string).context("kid"))
        .collect()
}

#[tokio::test]
async fn tokens_signed_before_a_rotation_verify_while_their_key_is_kept() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "signing-keys").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let rs = create_ready(&api, "jwt", spec("1")).await?;
    let v1 = read(
        &secrets,
        rs.status
            .and_then(|s| s.secret_name)
            .as_deref()
            .context("secretName")?,
    )
    .await?;

    // The name offline is the cluster's.
    let manifest = serde_json::to_string(&random_secret("jwt", spec("1"))?)?;
    let offline = run("randomsecret", &["name"], Some(&manifest))?;
    ensure!(
        offline.trim() == v1.metadata.name.as_deref().unwrap_or_default(),
        "offline {offline}"
    );

    let mut tokens = Vec::new();
    for (k, alg, _) in KEYS {
        let pem = text(&v1, k)?;
        let jwks = text(&v1, &format!("{k}.jwks"))?;
        // The kid is jwcrypto's thumbprint of the key, and the only key.
        let thumb = jose(json!({"op": "thumbprint", "pem": pem}))?;
        ensure!(
            kids(&jwks)? == [thumb.clone()],
            "{k}: kids {:?}, thumbprint {thumb}",
            kids(&jwks)?
        );
        let token = jose(json!({"op": "sign", "pem": pem, "alg": alg}))?;
        ensure!(
            jose(json!({"op": "verify", "token": token, "jwks": jwks}))? == "ok",
            "{k}: v1 token against v1 JWKS"
        );
        tokens.push((k, token, thumb));
    }

    // An edit that rotates nothing: same private keys, same JWKS, byte for byte.
    patch_spec(&api, "jwt", json!({"static": {"issuer": "e2e-2"}})).await?;
    let edited = wait_for(&api, "jwt", "Ready after a static edit", is_ready).await?;
    let same = read(
        &secrets,
        edited
            .status
            .and_then(|s| s.secret_name)
            .as_deref()
            .context("secretName")?,
    )
    .await?;
    ensure!(
        same.metadata.name != v1.metadata.name,
        "a static edit made no new version"
    );
    for (k, _, _) in KEYS {
        let jwks_key = format!("{k}.jwks");
        ensure!(
            text(&same, k)? == text(&v1, k)?,
            "{k}: the private key changed on a static edit"
        );
        ensure!(
            text(&same, &jwks_key)? == text(&v1, &jwks_key)?,
            "{k}: the JWKS changed on a static edit"
        );
    }

    // Two rotations. After the first, every v1 token still verifies.
    let v2 = read(&secrets, &rotate(&api, "jwt", "2").await?).await?;
    for (k, token, _) in &tokens {
        let jwks = text(&v2, &format!("{k}.jwks"))?;
        ensure!(text(&v2, k)? != text(&v1, k)?, "{k}: not rotated");
        ensure!(kids(&jwks)?.len() == 2, "{k}: v2 kids {:?}", kids(&jwks)?);
        ensure!(
            jose(json!({"op": "verify", "token": token, "jwks": jwks}))? == "ok",
            "{k}: v1 token against v2 JWKS"
        );
    }
    let v3 = read(&secrets, &rotate(&api, "jwt", "3").await?).await?;
    for ((k, token, thumb), (_, _, keep)) in tokens.iter().zip(KEYS) {
        let jwks = text(&v3, &format!("{k}.jwks"))?;
        let kids = kids(&jwks)?;
        // The current key first (the thumbprint of v3's private key), then the kept ones.
        let current = jose(json!({"op": "thumbprint", "pem": text(&v3, k)?}))?;
        ensure!(
            kids.first() == Some(&current),
            "{k}: v3 kids {kids:?}, current {current}"
        );
        ensure!(
            kids.len() == 1 + keep as usize,
            "{k}: v3 kids {kids:?}, keep {keep}"
        );
        let verdict = jose(json!({"op": "verify", "token": token, "jwks": jwks}))?;
        if keep >= 2 {
            ensure!(
                verdict == "ok" && kids.contains(thumb),
                "{k}: v1 token against v3 JWKS (keep 2): {verdict}"
            );
        } else {
            ensure!(
                verdict.starts_with("fail") && !kids.contains(thumb),
                "{k}: v1 token against v3 JWKS (keep 1): {verdict}"
            );
        }
    }
    // The status lists the signing keys as rotated in v3, by name only.
    let rs = api.get("jwt").await?;
    let name = v3.metadata.name.clone().context("name")?;
    let entry = version_status(&rs, &name).context("v3 in status.versions")?;
    ensure!(
        entry.rotated_keys == ["ed", "es", "rs"],
        "rotatedKeys {:?}",
        entry.rotated_keys
    );
    ns.delete().await
}
