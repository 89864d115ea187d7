//! The hostile-input corpus against the real control plane (issue 12,
//! "Prove it"); the CLI's surfaces are in `tests/hostile.rs`.
//!
//! - `testdata/hostile/crd/`: each case is POSTed raw (JSON from the YAML,
//!   no client-side check) and must be `admitted`, or `rejected: <text>`
//!   with `<text>` in the apiserver's message;
//! - `testdata/hostile/controller/`: each case must be admitted, then its
//!   Ready condition must become True (`ready`: with a Secret that carries
//!   the controller's own labels) or False with `reason: <Reason>`.
//!
//! And the rules the controller mirrors, checked against what the apiserver
//! really does: Secret data keys, and the CEL rules for `symbolCharacters`
//! and `rotation` built from the controller's tables.

use anyhow::{Context, Result, bail, ensure};
use futures::future::join_all;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Every `(case name, input, first line of .expect)` of a surface, sorted.
fn cases(surface: &str) -> Result<Vec<(String, String, String)>> {
    let dir: PathBuf = repo_root().join("testdata/hostile").join(surface);
    let mut out = vec![];
    for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let input = std::fs::read_to_string(&path)?;
        ensure!(
            input.starts_with("# "),
            "{}: the first line must say why the case is hostile",
            path.display()
        );
        let expect = std::fs::read_to_string(path.with_extension("expect"))
            .with_context(|| format!("{}: no .expect", path.display()))?;
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        out.push((name, input, expect.lines().next().unwrap_or("").to_string()));
    }
    out.sort();
    Ok(out)
}

/// The case's one document, as JSON.
fn document(input: &str) -> Result<Value> {
    let mut docs = docs(input)?;
    ensure!(docs.len() == 1, "{} documents, want 1", docs.len());
    Ok(docs.remove(0))
}

/// POSTs `body` to the namespace's randomsecrets as it is: `Ok(None)` when
/// admitted, `Ok(Some(message))` when refused.
async fn post_raw(client: &Client, ns: &str, body: &Value) -> Result<Option<String>> {
    let req = http::Request::post(format!(
        "/apis/randomsecret.io/v1/namespaces/{ns}/randomsecrets"
    ))
    .header("content-type", "application/json")
    .body(serde_json::to_vec(body)?)?;
    match client.request_text(req).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(s)) => Ok(Some(format!("{} ({})", s.message, s.code))),
        Err(e) => Err(e.into()),
    }
}

#[tokio::test]
async fn hostile_crd_cases_are_admitted_or_refused_as_expected() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "hostile-crd").await?;
    let cases = cases("crd")?;
    ensure!(cases.len() >= 20, "{} crd cases", cases.len());
    let mut failures = vec![];
    for (name, input, expect) in &cases {
        let got = post_raw(&client, &ns.name, &document(input)?).await?;
        let ok = match (expect.as_str(), &got) {
            ("admitted", None) => true,
            (e, Some(msg)) => e
                .strip_prefix("rejected: ")
                .is_some_and(|want| !want.is_empty() && msg.contains(want)),
            _ => false,
        };
        if !ok {
            let got = got.map_or("admitted".to_string(), |m| format!("rejected: {m}"));
            failures.push(format!("{name}: want {expect:?}, got {got}"));
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} crd cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    ns.delete().await
}

/// The Ready condition, as `ready` or `reason: <Reason>` (None: not yet decided).
fn outcome(rs: Option<&RandomSecret>) -> Option<String> {
    let rs = rs?;
    let status = rs.status.as_ref()?;
    if status.observed_generation != rs.metadata.generation {
        return None;
    }
    let ready = condition(rs, "Ready")?;
    match ready.status.as_str() {
        "True" => Some("ready".into()),
        // Reconciling is work in progress, not an outcome.
        "False" if condition(rs, "Stalled").is_some_and(|c| c.status == "True") => {
            Some(format!("reason: {}", ready.reason))
        }
        _ => None,
    }
}

async fn controller_case(
    client: &Client,
    ns: &TestNamespace,
    name: &str,
    input: &str,
    expect: &str,
) -> Result<()> {
    let doc = document(input)?;
    let rs_name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .context("metadata.name")?
        .to_string();
    if let Some(msg) = post_raw(client, &ns.name, &doc).await? {
        bail!("refused at admission: {msg}");
    }
    let api: Api<RandomSecret> = ns.api();
    let want = expect.to_string();
    let reached = wait_for(&api, &rs_name, expect, move |rs: Option<&RandomSecret>| {
        outcome(rs).as_deref() == Some(want.as_str())
    })
    .await;
    let rs = match reached {
        Ok(rs) => rs,
        Err(e) => {
            let now = api.get_opt(&rs_name).await?;
            let ready = now.as_ref().and_then(|rs| condition(rs, "Ready")).cloned();
            bail!("{name}: {e}; Ready is {ready:?}");
        }
    };
    if expect == "ready" {
        // The version exists, and carries the controller's labels whatever
        // secretLabels said.
        let secrets: Api<Secret> = ns.api();
        let secret_name = rs
            .status
            .as_ref()
            .and_then(|s| s.secret_name.clone())
            .context("status.secretName")?;
        let s = secrets.get(&secret_name).await?;
        let labels = s.metadata.labels.clone().unwrap_or_default();
        ensure!(
            labels.get("randomsecret.io/name") == Some(&rs_name)
                && labels
                    .get("app.kubernetes.io/managed-by")
                    .map(String::as_str)
                    == Some("randomsecret")
                && secret_name.ends_with(labels.get("randomsecret.io/hash").context("hash")?),
            "{secret_name}: labels {labels:?}"
        );
        ensure!(s.immutable == Some(true), "{secret_name} is not immutable");
        let values = s.data.iter().flatten().map(|(_, v)| v.0.as_slice());
        record_values(values.filter(|v| v.len() < 4096))?;
    }
    Ok(())
}

#[tokio::test]
async fn hostile_controller_cases_end_with_the_expected_ready_condition() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "hostile-controller").await?;
    let cases = cases("controller")?;
    ensure!(cases.len() >= 8, "{} controller cases", cases.len());
    let results = join_all(cases.iter().map(|(name, input, expect)| {
        let (client, ns) = (&client, &ns);
        async move {
            controller_case(client, ns, name, input, expect)
                .await
                .map_err(|e| format!("{name}: want {expect:?}: {e:#}"))
        }
    }))
    .await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    ensure!(
        failures.is_empty(),
        "{} of {} controller cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    ns.delete().await
}

/// The controller's rule for Secret data keys is the apiserver's: a Secret
/// with each key is accepted exactly when `valid_data_key` says so.
#[tokio::test]
async fn data_keys_are_valid_exactly_when_the_apiserver_takes_them() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "hostile-keys").await?;
    let secrets: Api<Secret> = ns.api();
    let long = "k".repeat(253);
    let longer = "k".repeat(254);
    let keys = [
        ".", "..", "..x", "...", ".x", "x.", "x..", "a..b", "-", "_", "-.", "._", "a b", "a/b",
        "é", "", &long, &longer,
    ];
    let mut failures = vec![];
    for (i, key) in keys.iter().enumerate() {
        let s: Secret = serde_json::from_value(json!({
            "metadata": {"name": format!("key-{i}")},
            "stringData": {*key: "v"},
        }))?;
        let taken = secrets.create(&PostParams::default(), &s).await.is_ok();
        if taken != randomsecret::api::rules::valid_data_key(key) {
            failures.push(format!(
                "{key:?}: the apiserver {}",
                if taken { "takes it" } else { "refuses it" }
            ));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    ns.delete().await
}

/// The CEL rules for `symbolCharacters` and `rotation` (built from the
/// controller's tables) refuse exactly what the controller refuses: each
/// edge of each forbidden range, and the characters just outside it.
#[tokio::test]
async fn cel_refuses_the_characters_the_controller_refuses() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "hostile-chars").await?;
    let mut chars: Vec<char> = vec!['!', 'é', '€', '😀', '\u{10ffff}'];
    for &(lo, hi) in randomsecret::api::rules::FORBIDDEN_SYMBOLS {
        let (lo, hi) = (u32::from(lo), u32::from(hi));
        for c in [lo.wrapping_sub(1), lo, hi, hi + 1] {
            chars.extend(char::from_u32(c));
        }
    }
    chars.sort();
    chars.dedup();
    let mut failures = vec![];
    for (i, c) in chars.iter().enumerate() {
        let symbols = format!("!{c}");
        let spec: randomsecret::api::RandomSecretSpec = serde_json::from_value(
            json!({"keys": {"k": {"length": 4, "symbolCharacters": symbols}}, "rotation": c.to_string()}),
        )?;
        let controller = randomsecret::version::Version::of(&spec, "x");
        let body = json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
            "metadata": {"name": format!("c-{i}")},
            "spec": {"keys": {"k": {"length": 4, "symbolCharacters": symbols}}},
        });
        let symbols_refused = post_raw(&client, &ns.name, &body).await?.is_some();
        let body = json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
            "metadata": {"name": format!("r-{i}")},
            "spec": {"keys": {"k": {"length": 4}}, "rotation": c.to_string()},
        });
        let rotation_refused = post_raw(&client, &ns.name, &body).await?.is_some();
        let (want_symbols, want_rotation) = match &controller {
            Ok(_) => (false, false),
            Err(e) => (
                e.reason() == "InvalidSymbols",
                e.reason() == "InvalidRotation",
            ),
        };
        // Rotation is checked after the symbols: check it on its own too.
        let rotation_spec: randomsecret::api::RandomSecretSpec = serde_json::from_value(
            json!({"keys": {"k": {"length": 4}}, "rotation": c.to_string()}),
        )?;
        let want_rotation = want_rotation
            || randomsecret::version::Version::of(&rotation_spec, "x")
                .is_err_and(|e| e.reason() == "InvalidRotation");
        if symbols_refused != want_symbols || rotation_refused != want_rotation {
            failures.push(format!(
                "U+{:04X}: CEL refuses symbols {symbols_refused}, rotation {rotation_refused}; the controller {want_symbols}, {want_rotation}",
                u32::from(*c)
            ));
        }
    }
    ensure!(
        failures.is_empty(),
        "{} of {} characters:\n{}",
        failures.len(),
        chars.len(),
        failures.join("\n")
    );
    ns.delete().await
}
