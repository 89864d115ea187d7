//! The Argo CD health check (examples/argocd/health.lua), run by a real Lua
//! interpreter on every fixture in testdata/argocd-health/, and on a live
//! RandomSecret's status.

use anyhow::{Context, Result, ensure};
use kube::Api;
use randomsecret::api::RandomSecret;
use randomsecret::gitops::yaml;
use randomsecret_e2e::*;
use serde_json::{Value, json};

/// A Lua table constructor for a JSON value.
fn lua(v: &Value) -> String {
    match v {
        Value::Null => "nil".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) => format!("{{{}}}", a.iter().map(lua).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("[{k:?}] = {}", lua(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Runs the health script on `obj`; returns (status, message).
fn health(obj: &Value) -> Result<(String, String)> {
    let script = repo_root().join("examples/argocd/health.lua");
    let program = format!(
        "obj = {}\nlocal hs = dofile({:?})\nio.write(hs.status, \"\\n\", hs.message or \"\")",
        lua(obj),
        script.to_str().unwrap()
    );
    let out = std::process::Command::new("lua5.4")
        .args(["-e", &program])
        .output()
        .context("running lua5.4")?;
    ensure!(
        out.status.success(),
        "lua: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let (status, message) = text.split_once('\n').unwrap_or((&text, ""));
    Ok((status.to_string(), message.to_string()))
}

#[test]
fn health_check_on_every_fixture() -> Result<()> {
    let dir = repo_root().join("testdata/argocd-health");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let fixture: Value = yaml::read(&std::fs::read_to_string(&path)?)?;
        let (status, message) = health(&fixture["obj"])?;
        ensure!(
            status == fixture["expected"]["status"],
            "{}: {status} ({message})",
            path.display()
        );
        ensure!(
            message == fixture["expected"]["message"],
            "{}: message {message:?}",
            path.display()
        );
        n += 1;
    }
    ensure!(n >= 5, "expected the five fixtures, found {n}");
    Ok(())
}

#[test]
fn argocd_cm_snippet_is_the_same_script() -> Result<()> {
    let root = repo_root();
    let script = std::fs::read_to_string(root.join("examples/argocd/health.lua"))?;
    let cm: Value = yaml::read(&std::fs::read_to_string(
        root.join("examples/argocd/argocd-cm.yaml"),
    )?)?;
    let snippet = cm["data"]["resource.customizations.health.randomsecret.io_RandomSecret"]
        .as_str()
        .context("health key")?;
    let code = |s: &str| {
        s.lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string()
    };
    ensure!(
        code(snippet) == code(&script),
        "argocd-cm.yaml and health.lua differ"
    );
    Ok(())
}

#[tokio::test]
async fn health_check_on_live_randomsecrets() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "argocd-health").await?;
    let api: Api<RandomSecret> = ns.api();
    let ready = create_ready(&api, "good", json!({"length": 16})).await?;
    ensure!(health(&serde_json::to_value(&ready)?)?.0 == "Healthy");
    api.create(
        &Default::default(),
        &random_secret(
            "big",
            json!({"keys": {"a": {"length": 600000}, "b": {"length": 600000}}}),
        )?,
    )
    .await?;
    let stalled = wait_for(&api, "big", "Stalled", not_ready_because("SecretTooLarge")).await?;
    let (status, message) = health(&serde_json::to_value(&stalled)?)?;
    ensure!(
        status == "Degraded" && message.starts_with("SecretTooLarge: "),
        "{status}: {message}"
    );
    ns.delete().await
}
