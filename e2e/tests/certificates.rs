//! Certificates (issue 29): a CA and a leaf it signs in one version, checked
//! by OpenSSL (the chain, the names, the usages, the key), accepted by the
//! apiserver as a `kubernetes.io/tls` Secret; the end in the status and in
//! `/metrics`; renewal by rotation, of the leaf alone or of the CA (which
//! signs its leaf again).

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;
use std::path::PathBuf;

const NAME: &str = "db-tls";

/// PEM files of one version in a folder of their own, for OpenSSL.
struct Files(PathBuf);

impl Files {
    fn of(secret: &Secret, keys: &[&str]) -> Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU32, Ordering};
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "randomsecret-e2e-certs-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        for k in keys {
            std::fs::write(dir.join(k), value(secret, k)?)?;
        }
        Ok(Files(dir))
    }

    fn path(&self, key: &str) -> String {
        self.0.join(key).to_string_lossy().into_owned()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn openssl(args: &[&str]) -> Result<String> {
    run("openssl", args, None).with_context(|| format!("openssl {args:?}"))
}

fn spec(ca_rotation: &str, leaf_rotation: &str) -> serde_json::Value {
    json!({
        "type": "kubernetes.io/tls",
        "keys": {
            "ca.crt": {"certificate": {"isCA": true, "commonName": "db CA", "duration": "8760h"},
                       "rotation": ca_rotation},
            "tls.crt": {"certificate": {"issuer": "ca.crt", "commonName": "db",
                                        "dnsNames": ["db", "db.default.svc"],
                                        "ipAddresses": ["127.0.0.1"],
                                        "usages": ["digitalSignature", "serverAuth", "clientAuth"],
                                        "duration": "720h"},
                        "rotation": leaf_rotation},
            "client.crt": {"certificate": {"issuer": "ca.crt", "commonName": "app",
                                           "usages": ["clientAuth"], "keyAlgorithm": "rsa", "keySize": 2048,
                                           "privateKey": "client.pem", "caCertificate": "client-ca.crt"}},
        },
    })
}

async fn apply(api: &Api<RandomSecret>, ca: &str, leaf: &str) -> Result<()> {
    let rs: RandomSecret = serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": NAME}, "spec": spec(ca, leaf),
    }))?;
    api.patch(NAME, &PatchParams::apply("e2e").force(), &Patch::Apply(&rs))
        .await?;
    Ok(())
}

async fn version(
    api: &Api<RandomSecret>,
    secrets: &Api<Secret>,
    want: &str,
) -> Result<(RandomSecret, Secret)> {
    let want = want.to_string();
    let rs = wait_for(
        api,
        NAME,
        "Ready for the spec",
        move |rs: Option<&RandomSecret>| {
            is_ready(rs)
                && rs.is_some_and(|rs| {
                    rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(want.as_str())
                })
        },
    )
    .await?;
    let secret = current_secret(secrets, &rs).await?;
    for k in ["ca.key", "tls.key", "client.pem"] {
        record_values(
            value(&secret, k)?
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .map(str::as_bytes),
        )?;
    }
    Ok((rs, secret))
}

/// The name `randomsecret name` computes offline for the spec.
fn offline_name(ca: &str, leaf: &str) -> Result<String> {
    let manifest = serde_json::to_string(&json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": NAME}, "spec": spec(ca, leaf),
    }))?;
    Ok(run("randomsecret", &["name", "-f", "-"], Some(&manifest))?
        .trim()
        .to_string())
}

/// The chain verifies with OpenSSL, with the names, usages and key asked
/// for; the client certificate's CA copy is the CA.
fn check_chain(secret: &Secret) -> Result<()> {
    let f = Files::of(
        secret,
        &[
            "ca.crt",
            "ca.key",
            "tls.crt",
            "tls.key",
            "client.crt",
            "client.pem",
            "client-ca.crt",
        ],
    )?;
    let verified = openssl(&[
        "verify",
        "-CAfile",
        &f.path("ca.crt"),
        &f.path("tls.crt"),
        &f.path("client.crt"),
    ])?;
    ensure!(
        verified.matches(": OK").count() == 2,
        "openssl verify: {verified}"
    );
    let purpose = openssl(&[
        "verify",
        "-CAfile",
        &f.path("ca.crt"),
        "-purpose",
        "sslserver",
        "-verify_hostname",
        "db.default.svc",
        "-verify_ip",
        "127.0.0.1",
        &f.path("tls.crt"),
    ])?;
    ensure!(
        purpose.contains(": OK"),
        "server purpose and names: {purpose}"
    );
    let text = openssl(&[
        "x509",
        "-in",
        &f.path("tls.crt"),
        "-noout",
        "-subject",
        "-ext",
        "subjectAltName,keyUsage,extendedKeyUsage,basicConstraints",
    ])?;
    for want in [
        "CN = db",
        "DNS:db",
        "DNS:db.default.svc",
        "IP Address:127.0.0.1",
        "Digital Signature",
        "TLS Web Server Authentication",
        "TLS Web Client Authentication",
        "CA:FALSE",
    ] {
        ensure!(text.contains(want), "tls.crt lacks {want:?}:\n{text}");
    }
    let ca = openssl(&[
        "x509",
        "-in",
        &f.path("ca.crt"),
        "-noout",
        "-subject",
        "-ext",
        "basicConstraints,keyUsage",
    ])?;
    ensure!(
        ca.contains("CA:TRUE") && ca.contains("Certificate Sign") && ca.contains("CN = db CA"),
        "ca.crt:\n{ca}"
    );
    // Each certificate's public key is its private key's.
    for (cert, key) in [
        ("ca.crt", "ca.key"),
        ("tls.crt", "tls.key"),
        ("client.crt", "client.pem"),
    ] {
        let from_cert = openssl(&["x509", "-in", &f.path(cert), "-noout", "-pubkey"])?;
        let from_key = openssl(&["pkey", "-in", &f.path(key), "-pubout"])?;
        ensure!(from_cert == from_key, "{cert} is not for {key}");
    }
    let client = openssl(&["x509", "-in", &f.path("client.crt"), "-noout", "-text"])?;
    ensure!(
        client.contains("(2048 bit)") && client.contains("TLS Web Client Authentication"),
        "client.crt:\n{client}"
    );
    ensure!(
        value(secret, "client-ca.crt")? == value(secret, "ca.crt")?,
        "caCertificate holds the issuer's certificate"
    );
    Ok(())
}

/// `openssl x509 -enddate` of `key`, as unix seconds.
fn end_of(secret: &Secret, key: &str) -> Result<i64> {
    let f = Files::of(secret, &[key])?;
    let out = openssl(&[
        "x509",
        "-in",
        &f.path(key),
        "-noout",
        "-enddate",
        "-dateopt",
        "iso_8601",
    ])?;
    let date = out.trim().strip_prefix("notAfter=").context("notAfter=")?;
    let t: k8s_openapi::jiff::Timestamp = date
        .replace(' ', "T")
        .parse()
        .with_context(|| date.to_string())?;
    Ok(t.as_second())
}

#[tokio::test]
async fn a_ca_and_its_leaves_verify_with_openssl_and_renew_by_rotation() -> Result<()> {
    let client: Client = client().await?;
    let ns = TestNamespace::new(&client, "certs").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();

    apply(&api, "1", "1").await?;
    let name1 = offline_name("1", "1")?;
    let (rs, v1) = version(&api, &secrets, &name1).await?;
    ensure!(
        v1.type_.as_deref() == Some("kubernetes.io/tls"),
        "type {:?}",
        v1.type_
    );
    check_chain(&v1)?;

    // The first certificate to end is the leaf (720h, inside the CA's 8760h):
    // in the status, and in /metrics for this version.
    let leaf_end = end_of(&v1, "tls.crt")?;
    let ca_end = end_of(&v1, "ca.crt")?;
    ensure!(leaf_end < ca_end, "leaf {leaf_end}, CA {ca_end}");
    let status = rs.status.clone().context("status")?;
    let current = status
        .versions
        .iter()
        .find(|v| v.name == name1)
        .context("current in the status")?;
    let recorded = current
        .not_after
        .as_ref()
        .context("status.versions[].notAfter")?
        .0
        .as_second();
    ensure!(
        recorded == leaf_end,
        "status notAfter {recorded}, openssl {leaf_end}"
    );
    let url =
        std::env::var("E2E_METRICS_URL").context("E2E_METRICS_URL (run through e2e/run.sh)")?;
    let series = format!(
        "randomsecret_certificate_expiry_timestamp_seconds{{namespace=\"{}\",randomsecret=\"{NAME}\",secret=\"{name1}\"}} {leaf_end}",
        ns.name
    );
    let metrics = run("curl", &["-fsS", &url], None)?;
    ensure!(
        metrics.lines().any(|l| l == series),
        "no {series} in /metrics"
    );

    // `randomsecret status` shows the kinds and the end.
    let tree = run("randomsecret", &["status", "-n", &ns.name, NAME], None)?;
    ensure!(
        tree.contains("certificate ends in 29d") || tree.contains("certificate ends in 30d"),
        "{tree}"
    );
    ensure!(
        tree.contains("tls.crt (CA-signed certificate, ecdsa 256, 720h)"),
        "{tree}"
    );

    // Renewing the leaf alone: a new leaf and key, the same CA byte for byte.
    apply(&api, "1", "2").await?;
    let name2 = offline_name("1", "2")?;
    let (rs2, v2) = version(&api, &secrets, &name2).await?;
    check_chain(&v2)?;
    for k in ["ca.crt", "ca.key", "client.crt", "client.pem"] {
        ensure!(
            value(&v2, k)? == value(&v1, k)?,
            "{k} changed with the leaf's rotation"
        );
    }
    for k in ["tls.crt", "tls.key"] {
        ensure!(
            value(&v2, k)? != value(&v1, k)?,
            "{k} kept through its rotation"
        );
    }
    let rotated = &rs2
        .status
        .as_ref()
        .context("status")?
        .versions
        .iter()
        .find(|v| v.name == name2)
        .context("v2")?
        .rotated_keys;
    ensure!(
        rotated == &vec!["tls.crt".to_string()],
        "rotatedKeys {rotated:?}"
    );

    // Renewing the CA: every certificate it signed is signed again, and the
    // new leaf does not verify against the old CA.
    apply(&api, "2", "2").await?;
    let name3 = offline_name("2", "2")?;
    let (_, v3) = version(&api, &secrets, &name3).await?;
    check_chain(&v3)?;
    for k in ["ca.crt", "tls.crt", "client.crt"] {
        ensure!(
            value(&v3, k)? != value(&v2, k)?,
            "{k} kept through its CA's rotation"
        );
    }
    let mixed = Files::of(&v2, &["ca.crt"])?;
    let new_leaf = Files::of(&v3, &["tls.crt"])?;
    let refused = run(
        "openssl",
        &[
            "verify",
            "-CAfile",
            &mixed.path("ca.crt"),
            &new_leaf.path("tls.crt"),
        ],
        None,
    );
    ensure!(refused.is_err(), "the new leaf verified against the old CA");

    // The apiserver takes a kubernetes.io/tls Secret made of these values.
    let copy: Secret = serde_json::from_value(json!({
        "metadata": {"name": "tls-copy"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": v3.data.as_ref().context("data")?["tls.crt"],
                 "tls.key": v3.data.as_ref().context("data")?["tls.key"]},
    }))?;
    secrets.create(&PostParams::default(), &copy).await?;
    ns.delete().await
}

/// A certificate asked of an issuer that is not a CA is refused at
/// admission, saying what to fix; so is a leaf without a name.
#[tokio::test]
async fn a_certificate_without_a_ca_or_a_name_is_refused() -> Result<()> {
    let client: Client = client().await?;
    let ns = TestNamespace::new(&client, "certs-bad").await?;
    let api: Api<RandomSecret> = ns.api();
    for (keys, want) in [
        (
            json!({"ca.crt": {"certificate": {"commonName": "not a CA"}}, "tls.crt": {"certificate": {"issuer": "ca.crt", "commonName": "db"}}}),
            "certificate.issuer must name a key of keys that is a certificate with isCA: true",
        ),
        (
            json!({"tls.crt": {"certificate": {"usages": ["serverAuth"]}}}),
            "a certificate that is not a CA needs a name",
        ),
        (
            json!({"tls.crt": {"certificate": {"commonName": "db", "keySize": 521}}}),
            "keySize: ecdsa takes 256 or 384",
        ),
    ] {
        let rs: RandomSecret = serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
            "metadata": {"name": "bad"}, "spec": {"keys": keys},
        }))?;
        let err = api
            .create(&PostParams::default(), &rs)
            .await
            .err()
            .context("admitted")?;
        ensure!(err.to_string().contains(want), "want {want:?}, got {err}");
    }
    ns.delete().await
}
