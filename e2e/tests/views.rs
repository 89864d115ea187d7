//! `randomsecret status` against the live cluster: the tree of versions and
//! what holds each, through two rotations and a rollback; `-o json`; read-only
//! credentials; `kubectl randomsecret` through kubectl's plugin lookup; `--watch`;
//! `rotate`, one object or many (`-l`, `--all`, `-A`, `--dry-run`).

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::time::{Duration, Instant};

/// `randomsecret status ARGS -o json`, parsed.
fn status_json(args: &[&str]) -> Result<Value> {
    let bin = randomsecret_bin();
    let mut all = vec!["status", "-o", "json"];
    all.extend_from_slice(args);
    let out = run(bin.to_str().context("binary path")?, &all, None)?;
    serde_json::from_str(&out).with_context(|| format!("status -o json is not JSON: {out}"))
}

/// Each version of the first item: name -> (state, kept reason, holders as `Kind/name:pods`).
fn versions(view: &Value) -> BTreeMap<String, (String, String, Vec<String>)> {
    view["items"][0]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let holders = v["holders"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|h| {
                    format!(
                        "{}/{}:{}",
                        h["kind"].as_str().unwrap_or_default(),
                        h["name"].as_str().unwrap_or_default(),
                        h["pods"].as_array().map_or(0, Vec::len)
                    )
                })
                .collect();
            (
                v["name"].as_str().unwrap_or_default().to_string(),
                (
                    v["state"].as_str().unwrap_or_default().to_string(),
                    v["kept"]["reason"].as_str().unwrap_or("-").to_string(),
                    holders,
                ),
            )
        })
        .collect()
}

/// Polls `status -o json` until `want` holds (the cluster settles: old pods
/// terminate, the controller records the rollback).
async fn wait_status(args: &[&str], what: &str, want: impl Fn(&Value) -> bool) -> Result<Value> {
    let start = Instant::now();
    loop {
        let view = status_json(args)?;
        if want(&view) {
            return Ok(view);
        }
        if start.elapsed() > WAIT {
            anyhow::bail!("status never showed {what}; last:\n{view:#}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The ReplicaSet of `web` whose template reads `secret`.
async fn replica_set_on(rss: &Api<ReplicaSet>, secret: &str) -> Result<String> {
    rss.list(&ListParams::default().labels("app=web"))
        .await?
        .items
        .into_iter()
        .find(|rs| {
            serde_json::to_string(&rs.spec)
                .unwrap_or_default()
                .contains(secret)
        })
        .map(|rs| rs.name_any())
        .with_context(|| format!("no ReplicaSet of web reads {secret}"))
}

#[tokio::test]
async fn status_tree_through_two_rotations_and_a_rollback() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "views").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let rss: Api<ReplicaSet> = ns.api();
    let n = ns.name.as_str();

    let v1 = first_version(
        &api,
        &secrets,
        "db",
        json!({"keys": {"password": {"length": 24}}, "rotation": "1"}),
    )
    .await?;
    let v1n = v1.name_any();
    let mut web = deployment("web", &v1n)?;
    web.spec.as_mut().context("spec")?.revision_history_limit = Some(2);
    deploys.create(&PostParams::default(), &web).await?;
    wait_for(&deploys, "web", "rolled out on v1", rollout_complete).await?;

    // Two rotations, each rolled out.
    let v2n = rotate(&api, "db", "2").await?;
    current_secret(&secrets, &api.get("db").await?).await?;
    point_at(&deploys, "web", &v2n, "2").await?;
    wait_for(&deploys, "web", "rolled out on v2", rollout_complete).await?;
    let v3n = rotate(&api, "db", "3").await?;
    current_secret(&secrets, &api.get("db").await?).await?;
    point_at(&deploys, "web", &v3n, "3").await?;
    wait_for(&deploys, "web", "rolled out on v3", rollout_complete).await?;

    // The rollback: `git revert` of the rotation, and `kubectl rollout undo`.
    let back = rotate(&api, "db", "2").await?;
    ensure!(
        back == v2n,
        "reverting the rotation names v2 again, got {back}"
    );
    kubectl(&["rollout", "undo", "-n", n, "deployment/web"])?;
    let on_v2 = v2n.clone();
    wait_for(
        &deploys,
        "web",
        "rolled back to v2",
        move |d: Option<&Deployment>| {
            rollout_complete(d)
                && d.is_some_and(|d| {
                    serde_json::to_string(&d.spec)
                        .unwrap_or_default()
                        .contains(&on_v2)
                })
        },
    )
    .await?;
    // A bare pod (a Job's, say) that still reads v1.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "job"}, "spec": pod_template("job", &v1n)["spec"].clone()}))?;
    Api::<Pod>::namespaced(client.clone(), n)
        .create(&PostParams::default(), &pod)
        .await?;
    let (rs1, rs2, rs3) = (
        replica_set_on(&rss, &v1n).await?,
        replica_set_on(&rss, &v2n).await?,
        replica_set_on(&rss, &v3n).await?,
    );

    let expected: BTreeMap<String, (String, String, Vec<String>)> = [
        (
            &v2n,
            ("current", "current", vec![format!("ReplicaSet/{rs2}:2")]),
        ),
        (
            &v3n,
            (
                "retained",
                "referenced",
                vec![format!("ReplicaSet/{rs3}:0")],
            ),
        ),
        (
            &v1n,
            (
                "retained",
                "referenced",
                vec!["Pod/job:0".to_string(), format!("ReplicaSet/{rs1}:0")],
            ),
        ),
    ]
    .into_iter()
    .map(|(k, (s, r, h))| (k.clone(), (s.to_string(), r.to_string(), h)))
    .collect();
    let view = wait_status(&["-n", n, "db"], "the holders of each version", |v| {
        versions(v) == expected
    })
    .await?;
    ensure!(view["items"][0]["current"] == v2n.as_str());
    ensure!(
        view["items"][0]["versions"]
            .as_array()
            .is_some_and(|vs| vs.iter().all(|v| v["recorded"] == true)),
        "every version is the object the status records: {view:#}"
    );
    // Every namespace: the same RandomSecret is among them.
    let all = status_json(&["-A"])?;
    ensure!(
        all["items"].as_array().is_some_and(|items| items
            .iter()
            .any(|i| i["namespace"] == n && i["name"] == "db" && i["current"] == v2n.as_str())),
        "-A lists db"
    );
    // `-o yaml`: YAML (not JSON), the same view: the same versions, in the
    // same order, with the same states and holders.
    let bin = randomsecret_bin();
    let yaml = run(
        bin.to_str().context("binary path")?,
        &["status", "-o", "yaml", "-n", n, "db"],
        None,
    )?;
    ensure!(
        !yaml.trim_start().starts_with('{'),
        "-o yaml printed JSON:\n{yaml}"
    );
    let from_yaml = docs(&yaml).with_context(|| format!("status -o yaml is not YAML:\n{yaml}"))?;
    ensure!(from_yaml.len() == 1, "one YAML document:\n{yaml}");
    let from_yaml = &from_yaml[0];
    let from_json = status_json(&["-n", n, "db"])?;
    let order = |v: &Value| -> Vec<String> {
        v["items"][0]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| v["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    ensure!(
        order(from_yaml).len() == 3 && order(from_yaml) == order(&from_json),
        "-o yaml lists the versions of -o json:\n{yaml}\n{from_json:#}"
    );
    ensure!(
        versions(from_yaml) == expected && versions(from_yaml) == versions(&from_json),
        "-o yaml and -o json agree on states and holders:\n{yaml}\n{from_json:#}"
    );
    ensure!(from_yaml["items"][0]["current"] == v2n.as_str());

    // The tree, as a user reads it (plain: stdout is a pipe).
    let bin = randomsecret_bin();
    let tree = run(
        bin.to_str().context("binary path")?,
        &["status", "-n", n],
        None,
    )?;
    eprintln!("{tree}");
    ensure!(!tree.contains('\x1b'), "no colour when piped:\n{tree}");
    let line_of = |name: &str| tree.lines().position(|l| l.contains(name));
    let (l2, l3, l1) = (line_of(&v2n), line_of(&v3n), line_of(&v1n));
    ensure!(
        l2 < l3 && l3 < l1 && l2.is_some(),
        "current first, then newest first:\n{tree}"
    );
    ensure!(
        tree.contains(&format!("RandomSecret {n}/db  Ready  3 live versions")),
        "{tree}"
    );
    ensure!(
        tree.contains("  keys: password (random string, 24 characters)\n"),
        "each key's kind, never its value:\n{tree}"
    );
    ensure!(
        tree.contains(&format!("└── ReplicaSet/{rs2} (2 pods)")),
        "{tree}"
    );
    ensure!(
        tree.lines()
            .any(|l| l.contains(&v3n) && l.contains("retained") && l.contains("kept: referenced")),
        "{tree}"
    );

    // No value in anything the command prints.
    for s in [&v1n, &v2n, &v3n] {
        let secret = secrets.get(s).await?;
        record_values(secret.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
        for (_, v) in secret.data.iter().flatten() {
            let v = String::from_utf8_lossy(&v.0);
            ensure!(
                !tree.contains(v.as_ref()) && !view.to_string().contains(v.as_ref()),
                "a value in the output"
            );
        }
    }

    // A look-alike with our labels (labels are no proof): shown, flagged as
    // not in the status, and it holds nothing up.
    let planted: Secret = serde_json::from_value(json!({"metadata": {"name": "db-5555555555",
        "labels": {"randomsecret.io/name": "db", "randomsecret.io/hash": "5555555555",
                   "app.kubernetes.io/managed-by": "randomsecret"}}, "stringData": {"password": "planted"}}))?;
    secrets.create(&PostParams::default(), &planted).await?;
    let view = status_json(&["-n", n, "db"])?;
    let shown = view["items"][0]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == "db-5555555555"))
        .with_context(|| format!("the look-alike is listed: {view:#}"))?;
    ensure!(shown["recorded"] == false, "{shown}");
    let tree = run(
        bin.to_str().context("binary path")?,
        &["status", "-n", n, "db"],
        None,
    )?;
    ensure!(
        tree.lines()
            .any(|l| l.contains("db-5555555555") && l.contains("not in the status")),
        "{tree}"
    );

    // A RandomSecret that is not Ready shows why.
    let spec = json!({"keys": {"password": {"length": 8}}});
    let taken =
        randomsecret::version::Version::of(&serde_json::from_value(spec.clone())?, "taken")?
            .secret_name;
    let foreign: Secret =
        serde_json::from_value(json!({"metadata": {"name": taken}, "stringData": {"a": "b"}}))?;
    secrets.create(&PostParams::default(), &foreign).await?;
    api.create(&PostParams::default(), &random_secret("taken", spec)?)
        .await?;
    wait_for(
        &api,
        "taken",
        "SecretNameConflict",
        not_ready_because("SecretNameConflict"),
    )
    .await?;
    let tree = run(
        bin.to_str().context("binary path")?,
        &["status", "-n", n, "taken"],
        None,
    )?;
    ensure!(
        tree.contains("Not ready: SecretNameConflict")
            && tree.contains("Ready=False SecretNameConflict: "),
        "{tree}"
    );

    ns.delete().await
}

/// A kubeconfig for `sa` in `ns`, with a token of its own.
fn service_account_kubeconfig(ns: &str, sa: &str) -> Result<std::path::PathBuf> {
    let token = kubectl(&["-n", ns, "create", "token", sa, "--duration=1h"])?;
    let (server, ca) = server_and_ca(None)?;
    let dir = std::env::var("E2E_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/e2e"));
    let path = dir.join(format!("{ns}-{sa}.kubeconfig"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{server}\", certificate-authority-data: \"{ca}\"}}\n\
             users:\n- name: u\n  user: {{token: \"{}\"}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u, namespace: {ns}}}\ncurrent-context: c\n",
            token.trim()
        ),
    )?;
    Ok(path)
}

#[tokio::test]
async fn status_needs_only_read_access_and_works_as_a_kubectl_plugin() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "views-rbac").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let n = ns.name.as_str();
    let v1 = first_version(
        &api,
        &secrets,
        "db",
        json!({"keys": {"token": {"length": 20}}, "rotation": "a"}),
    )
    .await?;
    let v1n = v1.name_any();
    deploys
        .create(&PostParams::default(), &deployment("web", &v1n)?)
        .await?;
    wait_for(&deploys, "web", "rolled out", rollout_complete).await?;
    let v2n = rotate(&api, "db", "b").await?;
    current_secret(&secrets, &api.get("db").await?).await?;

    // A ServiceAccount with only what `status` needs: get and list on
    // RandomSecrets, list (a metadata-only list) on Secrets and ReplicaSets.
    let rbac = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: viewer, namespace: {n}}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: viewer, namespace: {n}}}\nrules:\n\
         - {{apiGroups: [randomsecret.io], resources: [randomsecrets], verbs: [get, list]}}\n\
         - {{apiGroups: [\"\"], resources: [secrets], verbs: [list]}}\n\
         - {{apiGroups: [apps], resources: [replicasets], verbs: [list]}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: viewer, namespace: {n}}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: viewer}}\n\
         subjects: [{{kind: ServiceAccount, name: viewer, namespace: {n}}}]\n"
    );
    run("kubectl", &["apply", "-f", "-"], Some(&rbac))?;
    let kubeconfig = service_account_kubeconfig(n, "viewer")?;
    let kc = kubeconfig.to_str().context("path")?;
    ensure!(
        kubectl(&["--kubeconfig", kc, "get", "pods"]).is_err(),
        "the viewer must not be able to list pods"
    );
    // Its namespace comes from the kubeconfig context; no -n.
    let view = wait_status(
        &["--kubeconfig", kc, "db"],
        "v1 held by its ReplicaSet",
        |v| {
            let vs = versions(v);
            vs.get(&v1n).is_some_and(|(s, r, h)| {
                s == "retained"
                    && r == "referenced"
                    && h.len() == 1
                    && h[0].starts_with("ReplicaSet/web-")
            }) && vs.get(&v2n).is_some_and(|(s, _, _)| s == "current")
        },
    )
    .await?;
    let notes = view["notes"].to_string();
    ensure!(
        notes.contains("ControllerRevisions are not shown") && notes.contains("Pods are not shown"),
        "what the credentials could not list is said: {notes}"
    );
    // What docs/src/versions.md says of such a Role: it is no wall around the values.
    // The same credentials get no Secret by name, but a plain list (another
    // client than `status`) returns the values whole (compared, never printed).
    ensure!(
        kubectl(&["--kubeconfig", kc, "get", "secret", &v1n]).is_err(),
        "the viewer must not be able to get a Secret"
    );
    let listed: Value = serde_json::from_str(&kubectl(&[
        "--kubeconfig",
        kc,
        "get",
        "secrets",
        "-o",
        "json",
    ])?)?;
    let listed_data = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["metadata"]["name"] == v1n.as_str())
        .map(|s| s["data"].clone());
    let data = serde_json::to_value(&v1.data)?;
    ensure!(
        listed_data.is_some_and(|d| !d["token"].is_null() && d == data),
        "list on Secrets gives the viewer the values of {v1n}"
    );

    // kubectl's plugin lookup: `kubectl-randomsecret` on PATH.
    let dir = kubeconfig.with_extension("plugin");
    std::fs::create_dir_all(&dir)?;
    let link = dir.join("kubectl-randomsecret");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(std::fs::canonicalize(randomsecret_bin())?, &link)?;
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kubectl_with_plugin = |args: &[&str]| -> Result<String> {
        let out = std::process::Command::new("kubectl")
            .args(args)
            .env("PATH", &path)
            .output()?;
        ensure!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    };
    let plugins = kubectl_with_plugin(&["plugin", "list", "--name-only"])?;
    ensure!(
        plugins.contains("kubectl-randomsecret"),
        "kubectl plugin list: {plugins}"
    );
    let out = kubectl_with_plugin(&["randomsecret", "status", "-n", n, "db", "-o", "json"])?;
    let via_kubectl: Value = serde_json::from_str(&out)?;
    ensure!(
        via_kubectl["items"][0]["current"] == v2n.as_str(),
        "{via_kubectl:#}"
    );
    let help = kubectl_with_plugin(&["randomsecret", "--help"])?;
    ensure!(help.contains("Usage: kubectl randomsecret"), "{help}");

    // --watch prints the view again when it changes.
    let mut child = Killed(
        std::process::Command::new(randomsecret_bin())
            .args([
                "status",
                "-n",
                n,
                "db",
                "-o",
                "json",
                "--watch",
                "--interval",
                "1s",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()?,
    );
    let stdout = child.0.stdout.take().context("stdout")?;
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        // Pretty JSON documents, one after another: a document ends with `}` alone on a line.
        let mut doc = String::new();
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            doc.push_str(&line);
            doc.push('\n');
            if line == "}" {
                if let Ok(v) = serde_json::from_str(&doc) {
                    let _ = tx.send(v);
                }
                doc.clear();
            }
        }
    });
    let first = rx.recv_timeout(WAIT)?;
    ensure!(first["items"][0]["current"] == v2n.as_str());
    let v3n = rotate(&api, "db", "c").await?;
    current_secret(&secrets, &api.get("db").await?).await?;
    let mut seen = false;
    let deadline = Instant::now() + WAIT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(next) = rx.recv_timeout(left) else {
            break;
        };
        if next["items"][0]["current"] == v3n.as_str() {
            seen = true;
            break;
        }
    }
    drop(child);
    ensure!(seen, "--watch printed the rotation to {v3n}");
    ns.delete().await
}

#[tokio::test]
async fn rotate_sets_a_new_token_or_prints_the_change() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "views-rotate").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let n = ns.name.as_str();
    let v1 = first_version(
        &api,
        &secrets,
        "db",
        json!({"keys": {"k": {"length": 12}}, "rotation": "1"}),
    )
    .await?;
    let bin = randomsecret_bin();
    let bin = bin.to_str().context("binary path")?;

    // Sent: the printed new version becomes current, with new values.
    let out = run(bin, &["rotate", "-n", n, "db"], None)?;
    let new_name = out
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    ensure!(
        out.contains("rotation \"1\" -> ") && new_name.starts_with("db-"),
        "{out}"
    );
    let rs = wait_for(&api, "db", "Ready after rotate", is_ready).await?;
    ensure!(rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(new_name.as_str()));
    let v2 = current_secret(&secrets, &rs).await?;
    ensure!(v2.data != v1.data, "new values");
    // The same token again is refused, saying what to do.
    let token = rs.spec.rotation.clone().context("rotation")?;
    let err = run(bin, &["rotate", "-n", n, "db", "--to", &token], None)
        .unwrap_err()
        .to_string();
    ensure!(err.contains("is already") && err.contains("--to"), "{err}");

    // Printed: nothing changes in the cluster; the YAML is the merge patch.
    let printed = run(bin, &["rotate", "db", "--print", "--to", "7"], None)?;
    ensure!(
        api.get("db").await?.spec.rotation.as_deref() == Some(token.as_str()),
        "--print sends nothing"
    );
    let dir = std::env::var("E2E_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/e2e"));
    let file = dir.join(format!("{n}-rotate.yaml"));
    std::fs::write(&file, &printed)?;
    kubectl(&[
        "patch",
        "-n",
        n,
        "randomsecret",
        "db",
        "--type",
        "merge",
        "--patch-file",
        file.to_str().context("path")?,
    ])?;
    let rs = wait_for(&api, "db", "Ready after the printed patch", is_ready).await?;
    ensure!(
        rs.spec.rotation.as_deref() == Some("7"),
        "the printed patch sets rotation to the string \"7\""
    );
    let v3 = current_secret(&secrets, &rs).await?;

    // One key: its own token is written, and only its value changes.
    patch_spec(&api, "db", json!({"keys": {"other": {"length": 12}}})).await?;
    let rs = wait_for(&api, "db", "Ready with a second key", is_ready).await?;
    let v4 = current_secret(&secrets, &rs).await?;
    ensure!(value(&v4, "k")? == value(&v3, "k")?, "adding a key keeps k");
    let out = run(
        bin,
        &["rotate", "-n", n, "db", "--key", "other", "--to", "b"],
        None,
    )?;
    ensure!(
        out.contains("rotated: keys.other.rotation unset -> \"b\"; new version db-"),
        "{out}"
    );
    let rs = wait_for(&api, "db", "Ready after rotate --key", is_ready).await?;
    let v5 = current_secret(&secrets, &rs).await?;
    ensure!(v5.name_any() != v4.name_any(), "a new version");
    ensure!(value(&v5, "k")? == value(&v4, "k")?, "k is kept");
    ensure!(
        value(&v5, "other")? != value(&v4, "other")?,
        "other rotated"
    );
    ensure!(
        rs.spec
            .keys
            .as_ref()
            .and_then(|k| k.get("other"))
            .and_then(|g| g.rotation.as_deref())
            == Some("b"),
        "keys.other.rotation is the token"
    );
    // A static key has no token of its own: refused, saying what to use.
    patch_spec(&api, "db", json!({"static": {"user": "app"}})).await?;
    let err = run(bin, &["rotate", "-n", n, "db", "--key", "user"], None)
        .unwrap_err()
        .to_string();
    ensure!(err.contains("user") && err.contains("static"), "{err}");
    ns.delete().await
}

/// A RandomSecret labelled `team` (and Ready).
async fn labelled(api: &Api<RandomSecret>, name: &str, team: &str, spec: Value) -> Result<()> {
    let mut rs = random_secret(name, spec)?;
    rs.metadata.labels = Some(BTreeMap::from([("team".to_string(), team.to_string())]));
    api.create(&PostParams::default(), &rs).await?;
    Ok(())
}

/// `rotate -l` over 20 of 25 RandomSecrets rotates exactly those, once:
/// `--dry-run` sends nothing; 3 rotated before (a run that stopped) are
/// skipped and not rotated again, and the same command once more rotates
/// nothing. `--all -n` with `--key` rotates the object that has the key and
/// names the one that has not (exit non-zero); `-A` reaches every
/// namespace; a selector matching nothing is an error.
#[tokio::test]
async fn rotate_by_selector_rotates_each_selected_object_once() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "views-rotate-many").await?;
    let other = TestNamespace::new(&client, "views-rotate-many2").await?;
    let api: Api<RandomSecret> = ns.api();
    let api2: Api<RandomSecret> = other.api();
    let n = ns.name.as_str();
    // Unique to this test: -A must not reach another test's objects.
    let team = format!("t-{n}");
    let spec = json!({"keys": {"password": {"length": 12}}, "rotation": "1"});
    for i in 0..25 {
        let t = if i < 20 { team.as_str() } else { "other" };
        labelled(&api, &format!("app-{i:02}"), t, spec.clone()).await?;
    }
    labelled(&api2, "with-key", &team, spec.clone()).await?;
    labelled(
        &api2,
        "without-key",
        &team,
        json!({"keys": {"pin": {"length": 6}}}),
    )
    .await?;
    let mut before = BTreeMap::new();
    for i in 0..25 {
        let name = format!("app-{i:02}");
        let rs = wait_for(&api, &name, "Ready", is_ready).await?;
        before.insert(name, rs);
    }
    for name in ["with-key", "without-key"] {
        wait_for(&api2, name, "Ready", is_ready).await?;
    }
    let bin = randomsecret_bin();
    let bin = bin.to_str().context("binary path")?;
    let selector = format!("team={team}");
    let generation = |rs: &RandomSecret| rs.metadata.generation.unwrap_or_default();

    // Dry run: 20 listed, nothing sent.
    let out = run(
        bin,
        &[
            "rotate",
            "-n",
            n,
            "-l",
            &selector,
            "--to",
            "T1",
            "--dry-run",
        ],
        None,
    )?;
    ensure!(
        out.matches(": would rotate rotation \"1\" -> \"T1\"")
            .count()
            == 20,
        "{out}"
    );
    ensure!(
        out.contains("would rotate 20, 0 at \"T1\" already"),
        "{out}"
    );
    for (name, rs) in &before {
        let now = api.get(name).await?;
        ensure!(
            generation(&now) == generation(rs),
            "{name}: --dry-run changed nothing"
        );
    }

    // A run that stopped after 3: those are at T1 already.
    for i in 0..3 {
        patch_spec(&api, &format!("app-{i:02}"), json!({"rotation": "T1"})).await?;
    }
    let mut stopped = BTreeMap::new();
    for i in 0..3 {
        let name = format!("app-{i:02}");
        stopped.insert(
            name.clone(),
            wait_for(&api, &name, "Ready at T1", is_ready).await?,
        );
    }
    let out = run(
        bin,
        &["rotate", "-n", n, "-l", &selector, "--to", "T1"],
        None,
    )?;
    ensure!(
        out.contains("rotated 17, 3 at \"T1\" already, 0 not rotated"),
        "{out}"
    );
    ensure!(
        out.matches(" rotated: rotation \"1\" -> \"T1\"; new version app-")
            .count()
            == 17,
        "{out}"
    );
    for (name, rs) in &before {
        let now = wait_for(&api, name, "Ready", is_ready).await?;
        let selected = rs.labels().get("team") == Some(&team);
        if !selected {
            ensure!(
                generation(&now) == generation(rs),
                "{name} is not selected: untouched"
            );
            ensure!(now.spec.rotation.as_deref() == Some("1"), "{name}");
            continue;
        }
        ensure!(
            now.spec.rotation.as_deref() == Some("T1"),
            "{name} is at T1"
        );
        let was = stopped.get(name).unwrap_or(rs);
        let expected = if stopped.contains_key(name) {
            generation(was)
        } else {
            generation(was) + 1
        };
        ensure!(
            generation(&now) == expected,
            "{name}: rotated exactly once ({} then {})",
            generation(was),
            generation(&now)
        );
        let current = now.status.as_ref().and_then(|s| s.secret_name.clone());
        ensure!(
            current != rs.status.as_ref().and_then(|s| s.secret_name.clone()),
            "{name}: a new version"
        );
    }
    // The same command again: every one is done; nothing is rotated.
    let out = run(
        bin,
        &["rotate", "-n", n, "-l", &selector, "--to", "T1"],
        None,
    )?;
    ensure!(out.contains("rotated 0, 20 at \"T1\" already"), "{out}");

    // --all with --key: one has the key, one has not (named; exit non-zero).
    let o = other.name.as_str();
    let failed = std::process::Command::new(bin)
        .args([
            "rotate", "-n", o, "--all", "--key", "password", "--to", "K1",
        ])
        .output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr),
    );
    ensure!(
        !failed.status.success(),
        "a refused object fails the run: {stdout}"
    );
    ensure!(
        stdout.contains(&format!(
            "randomsecret/with-key in {o} rotated: keys.password.rotation unset -> \"K1\""
        )),
        "{stdout}"
    );
    ensure!(
        stderr.contains(&format!("randomsecret/without-key in {o}: not rotated"))
            && stderr.contains("no generated key \"password\""),
        "{stderr}"
    );
    let rs = wait_for(&api2, "with-key", "Ready", is_ready).await?;
    ensure!(
        rs.spec
            .keys
            .as_ref()
            .and_then(|k| k.get("password"))
            .and_then(|g| g.rotation.as_deref())
            == Some("K1")
    );

    // -A: both namespaces' selected objects, and no one else's.
    let out = run(
        bin,
        &["rotate", "-A", "-l", &selector, "--to", "T2", "--dry-run"],
        None,
    )?;
    ensure!(out.contains("22 RandomSecret(s) in any namespace"), "{out}");
    ensure!(
        out.contains(&format!("randomsecret/without-key in {o}: would rotate")),
        "{out}"
    );
    // Nothing selected: an error that says what was asked.
    let err = run(bin, &["rotate", "-n", n, "-l", "team=nobody"], None)
        .unwrap_err()
        .to_string();
    ensure!(
        err.contains("no RandomSecret matches -l \"team=nobody\""),
        "{err}"
    );
    other.delete().await?;
    ns.delete().await
}

/// A child process killed however the test ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
