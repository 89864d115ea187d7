//! RandomSecret v1 against the real control plane and the controller that
//! `e2e/run.sh` runs: versions, rotation, short form, admission errors,
//! conflicts, adoption, status conditions and the `name` command.

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, ResourceExt};
use randomsecret::api::{DEFAULT_SYMBOLS, RandomSecret};
use randomsecret::gitops::yaml;
use randomsecret::version::Version;
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

#[tokio::test]
async fn keys_produce_an_immutable_labelled_owned_version() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-keys").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = json!({
        "keys": {
            "password": {"length": 24},
            "hex": {"length": 16, "charset": "hex"},
            "sym": {"length": 30, "charset": "lower", "symbolCharacters": "<>&\"\\é"},
        },
        "static": {"user": "admin"},
        "type": "example.com/credentials",
        "secretLabels": {"team": "a"},
        "secretAnnotations": {"note": "b"},
    });
    let rs = create_ready(&api, "db", spec).await?;
    let expected = Version::of(&rs.spec, "db")?.secret_name;
    ensure!(
        rs.status.as_ref().unwrap().secret_name.as_deref() == Some(expected.as_str()),
        "status.secretName differs from the name function"
    );

    let s = current_secret(&secrets, &rs).await?;
    ensure!(s.immutable == Some(true), "the Secret must be immutable");
    ensure!(s.type_.as_deref() == Some("example.com/credentials"));
    let labels = s.labels();
    ensure!(labels.get("randomsecret.io/name").map(String::as_str) == Some("db"));
    ensure!(
        labels
            .get("randomsecret.io/hash")
            .is_some_and(|h| expected.ends_with(h.as_str()))
    );
    ensure!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str)
            == Some("randomsecret")
    );
    ensure!(labels.get("team").map(String::as_str) == Some("a"));
    ensure!(s.annotations().get("note").map(String::as_str) == Some("b"));
    let owners = s.owner_references();
    ensure!(
        owners.len() == 1
            && owners[0].uid == rs.uid().unwrap()
            && owners[0].controller == Some(true)
    );

    assert_alphabet(&value(&s, "password")?, 24, ALNUM)?;
    assert_alphabet(&value(&s, "hex")?, 16, "0123456789abcdef")?;
    assert_alphabet(&value(&s, "sym")?, 30, "abcdefghijklmnopqrstuvwxyz<>&\"\\é")?;
    ensure!(value(&s, "user")? == "admin");

    // kstatus: Ready, Reconciling=False, Stalled=False, all for this generation.
    for (t, want) in [
        ("Ready", "True"),
        ("Reconciling", "False"),
        ("Stalled", "False"),
    ] {
        let c = condition(&rs, t).with_context(|| format!("condition {t}"))?;
        ensure!(
            c.status == want && c.observed_generation == rs.metadata.generation,
            "{t}: {c:?}"
        );
    }
    let versions = &rs.status.as_ref().unwrap().versions;
    ensure!(
        versions.len() == 1 && versions[0].name == expected,
        "{versions:?}"
    );

    // An Event says which version was created.
    wait_event(&client, &ns.name, "VersionCreated for db", |e| {
        e.reason.as_deref() == Some("VersionCreated")
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("db")
    })
    .await?;

    // A status write must not trigger another write: the object stays still.
    let rv = api.get("db").await?.resource_version();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    ensure!(
        api.get("db").await?.resource_version() == rv,
        "the RandomSecret keeps changing after Ready"
    );
    ns.delete().await
}

#[tokio::test]
async fn original_short_form_applies_unchanged() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-short").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();

    let rs = create_ready(
        &api,
        "legacy",
        json!({"key": "pw", "length": 20, "static": {"user": "u"}}),
    )
    .await?;
    let s = current_secret(&secrets, &rs).await?;
    let pw = value(&s, "pw")?;
    assert_alphabet(&pw, 20, &format!("{ALNUM}{DEFAULT_SYMBOLS}"))?;
    ensure!(value(&s, "user")? == "u");

    // Defaults of the original operator: key "password", length 32; specialChar false: alphanumeric only.
    let rs = create_ready(&api, "defaults", json!({"specialChar": false})).await?;
    let s = current_secret(&secrets, &rs).await?;
    assert_alphabet(&value(&s, "password")?, 32, ALNUM)?;
    ensure!(s.data.as_ref().unwrap().len() == 1);

    // Symbols are on by default in the short form: over 20 values of 32, some symbol appears.
    let mut any_symbol = false;
    for i in 0..5 {
        let rs = create_ready(&api, &format!("sym-{i}"), json!({"length": 64})).await?;
        let v = value(&current_secret(&secrets, &rs).await?, "password")?;
        assert_alphabet(&v, 64, &format!("{ALNUM}{DEFAULT_SYMBOLS}"))?;
        any_symbol |= v.chars().any(|c| DEFAULT_SYMBOLS.contains(c));
    }
    ensure!(
        any_symbol,
        "the short form produced no symbols in 320 characters"
    );
    ns.delete().await
}

#[tokio::test]
async fn rotation_creates_a_new_version_and_keeps_the_old() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-rotate").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let rs = create_ready(
        &api,
        "app",
        // history 1: the superseded version is kept even though nothing references it.
        json!({"keys": {"token": {"length": 32}}, "rotation": "1", "history": 1}),
    )
    .await?;
    let v1 = current_secret(&secrets, &rs).await?;

    patch_spec(&api, "app", json!({"rotation": "2"})).await?;
    let rs = wait_for(&api, "app", "Ready after rotation", is_ready).await?;
    let v2 = current_secret(&secrets, &rs).await?;
    ensure!(
        v1.name_any() != v2.name_any(),
        "rotation must produce a new name"
    );
    ensure!(
        value(&v1, "token")? != value(&v2, "token")?,
        "rotation must produce new values"
    );

    // The old version is still there, unchanged, and listed as retained.
    let old = secrets.get(&v1.name_any()).await?;
    ensure!(old.data == v1.data, "the old version's values changed");
    let versions = &rs.status.as_ref().unwrap().versions;
    let states: BTreeMap<_, _> = versions
        .iter()
        .map(|v| (v.name.clone(), format!("{:?}", v.state)))
        .collect();
    ensure!(
        versions[0].name == v2.name_any(),
        "current version first: {versions:?}"
    );
    ensure!(
        states.get(&v1.name_any()).map(String::as_str) == Some("Retained"),
        "{states:?}"
    );

    // Rotating back (a git revert) makes the old version current again, values intact.
    patch_spec(&api, "app", json!({"rotation": "1"})).await?;
    let rs = wait_for(&api, "app", "Ready after revert", is_ready).await?;
    ensure!(rs.status.as_ref().unwrap().secret_name.as_deref() == Some(v1.name_any().as_str()));
    ensure!(secrets.get(&v1.name_any()).await?.data == v1.data);
    ns.delete().await
}

#[tokio::test]
async fn bad_input_is_refused_at_admission_with_a_readable_message() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-invalid").await?;
    // Untyped, so that what the Rust types would reject still reaches the apiserver.
    let ar = kube::core::ApiResource::erase::<RandomSecret>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &ar);
    let raw = |name: &str, spec: Value| -> Result<DynamicObject> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
            "metadata": {"name": name}, "spec": spec,
        }))?)
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"keys": {"k": {"length": 0}}}),
            "should be greater than or equal to 1",
        ),
        (
            json!({"keys": {"k": {"length": -5}}}),
            "should be greater than or equal to 1",
        ),
        (
            json!({"keys": {"k": {"length": 2000000}}}),
            "should be less than or equal to 1048576",
        ),
        (json!({"length": 0}), "should be greater than or equal to 1"),
        (
            json!({"keys": {"k": {"length": 8, "charset": "emoji"}}}),
            "Unsupported value: \"emoji\"",
        ),
        (
            json!({"keys": {"k": {"length": 8, "symbolCharacters": ""}}}),
            "should be at least 1 chars long",
        ),
        (
            json!({"keys": {"k": {"length": 8, "symbolCharacters": "a b"}}}),
            "symbolCharacters must not contain white space",
        ),
        (
            json!({"keys": {"k": {"length": 8, "symbols": false, "symbolCharacters": "!"}}}),
            "symbolCharacters is set but symbols is false",
        ),
        (
            json!({"keys": {"bad/key": {"length": 8}}}),
            "must be a valid Secret data key",
        ),
        (
            json!({"static": {"bad key": "x"}}),
            "every static key must be a valid Secret data key",
        ),
        (json!({"key": "a:b"}), "key must be a valid Secret data key"),
        (
            json!({"keys": {"k": {"length": 8}}, "static": {"k": "x"}}),
            "a key is both generated (keys) and static",
        ),
        (
            json!({"key": "k", "static": {"k": "x"}}),
            "the short-form key is also in static",
        ),
        (
            json!({"length": 8, "static": {"password": "x"}}),
            "static.password collides",
        ),
        (json!({}), "no key at all"),
        (json!({"keys": {}}), "no key at all"),
        (
            json!({"keys": {"k": {"length": 8}}, "key": "x"}),
            "use either keys or the short form",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "secretName": "Not_A_Name"}),
            "secretName must be a DNS subdomain",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "secretName": "a".repeat(243)}),
            "may not be more than 242",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "rotation": "a\u{7}b"}),
            "rotation must not contain control characters",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "type": "bad type"}),
            "type must be a Secret type",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "history": -1}),
            "should be greater than or equal to 0",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "rotateEvery": "1d"}),
            "rotateEvery must be a duration such as 720h, 90m or 1h30m",
        ),
    ];
    // rotateEvery out of range, including values that overflow a u64 or
    // Go's duration (the controller once turned such a period negative).
    let cases = cases.into_iter().chain(
        [
            "18446744073709551615s",
            "9999999999999999999h",
            "999999h999999h999999h",
            "876001h",
            "876000h1s",
            "59s",
        ]
        .map(|every| {
            (
                json!({"keys": {"k": {"length": 8}}, "rotateEvery": every}),
                "rotateEvery must be at least 1m and at most 876000h (100 years)",
            )
        }),
    );
    let mut failures = vec![];
    for (i, (spec, want)) in cases.enumerate() {
        match api
            .create(
                &PostParams::default(),
                &raw(&format!("bad-{i}"), spec.clone())?,
            )
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 422 && s.message.contains(want) => {}
            Err(kube::Error::Api(s)) => {
                failures.push(format!("{spec}: want {want:?}, got {}", s.message))
            }
            other => failures.push(format!(
                "{spec}: accepted ({:?})",
                other.map(|o| o.name_any())
            )),
        }
    }
    // The bounds themselves are admitted, and the controller makes a version of the longest.
    for (name, every) in [("min-period", "1m"), ("max-period", "876000h")] {
        let spec = json!({"keys": {"k": {"length": 8}}, "rotateEvery": every});
        if let Err(e) = api.create(&PostParams::default(), &raw(name, spec)?).await {
            failures.push(format!("rotateEvery {every}: refused: {e}"));
        }
    }
    let typed: Api<RandomSecret> = ns.api();
    wait_for(
        &typed,
        "max-period",
        "Ready with rotateEvery 876000h",
        is_ready,
    )
    .await?;
    // metadata.name longer than a label value.
    let long = "n".repeat(64);
    match api
        .create(&PostParams::default(), &raw(&long, json!({"length": 8}))?)
        .await
    {
        Err(kube::Error::Api(s))
            if s.message
                .contains("metadata.name must be at most 63 characters") => {}
        other => failures.push(format!(
            "long metadata.name: {:?}",
            other.map(|o| o.name_any())
        )),
    }
    ensure!(
        failures.is_empty(),
        "{} cases not refused as expected:\n{}",
        failures.len(),
        failures.join("\n")
    );
    ns.delete().await
}

#[tokio::test]
async fn invalid_spec_that_passes_admission_is_stalled_not_retried() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-stalled").await?;
    let api: Api<RandomSecret> = ns.api();
    // Each length is allowed; together they exceed the 1 MiB Secret limit.
    let spec = json!({"keys": {"a": {"length": 600000}, "b": {"length": 600000}}});
    api.create(&PostParams::default(), &random_secret("big", spec)?)
        .await?;
    let rs = wait_for(&api, "big", "Stalled", not_ready_because("SecretTooLarge")).await?;
    let stalled = condition(&rs, "Stalled").context("Stalled")?;
    ensure!(
        stalled.status == "True" && stalled.message.contains("1 MiB"),
        "{stalled:?}"
    );
    ensure!(condition(&rs, "Reconciling").is_some_and(|c| c.status == "False"));
    let secrets: Api<Secret> = ns.api();
    ensure!(
        secrets
            .list(&ListParams::default().labels("randomsecret.io/name=big"))
            .await?
            .items
            .is_empty()
    );

    // Fixing the spec makes it Ready.
    patch_spec(&api, "big", json!({"keys": {"b": {"length": 10}}})).await?;
    wait_for(&api, "big", "Ready after the fix", is_ready).await?;
    // A built-in type's required keys, checked before the apiserver would refuse the Secret.
    let spec = json!({"keys": {"k": {"length": 8}}, "type": "kubernetes.io/basic-auth"});
    api.create(&PostParams::default(), &random_secret("basic", spec)?)
        .await?;
    let rs = wait_for(
        &api,
        "basic",
        "Stalled",
        not_ready_because("TypeRequiresKeys"),
    )
    .await?;
    let msg = &condition(&rs, "Ready").unwrap().message;
    ensure!(msg.contains("username or password"), "{msg}");
    // What only the apiserver knows (.dockerconfigjson must be JSON): its refusal, permanent.
    let spec = json!({"keys": {".dockerconfigjson": {"length": 8}}, "type": "kubernetes.io/dockerconfigjson"});
    api.create(&PostParams::default(), &random_secret("docker", spec)?)
        .await?;
    let rs = wait_for(
        &api,
        "docker",
        "Stalled",
        not_ready_because("SecretRejected"),
    )
    .await?;
    ensure!(
        condition(&rs, "Stalled")
            .is_some_and(|c| c.status == "True" && c.message.contains(".dockerconfigjson"))
    );
    ns.delete().await
}

#[tokio::test]
async fn a_foreign_secret_with_the_name_is_reported_and_left_alone() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-conflict").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let rs = random_secret("taken", json!({"keys": {"k": {"length": 16}}}))?;
    let name = Version::of(&rs.spec, "taken")?.secret_name;
    let foreign: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"owner": "someone-else"}},
        "stringData": {"k": "not-generated"},
    }))?;
    let foreign = secrets.create(&PostParams::default(), &foreign).await?;

    api.create(&PostParams::default(), &rs).await?;
    let rs = wait_for(
        &api,
        "taken",
        "Stalled on the name conflict",
        not_ready_because("SecretNameConflict"),
    )
    .await?;
    let msg = &condition(&rs, "Ready").unwrap().message;
    ensure!(
        msg.contains(&name) && msg.contains("not created by randomsecret"),
        "{msg}"
    );
    ensure!(condition(&rs, "Stalled").is_some_and(|c| c.status == "True"));

    let after = secrets.get(&name).await?;
    ensure!(
        after.resource_version() == foreign.resource_version(),
        "the foreign Secret was modified"
    );
    ensure!(after.owner_references().is_empty() && after.data == foreign.data);
    ns.delete().await
}

#[tokio::test]
async fn delete_and_recreate_adopts_the_existing_version() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-adopt").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = json!({"keys": {"password": {"length": 32}}, "rotation": "7"});
    let first = create_ready(&api, "db", spec.clone()).await?;
    let before = current_secret(&secrets, &first).await?;

    // A GitOps re-sync that deletes without cascading, then re-creates.
    api.delete("db", &DeleteParams::orphan()).await?;
    wait_deleted(&api, "db").await?;
    let second = create_ready(&api, "db", spec).await?;
    ensure!(second.uid() != first.uid());
    let after = current_secret(&secrets, &second).await?;
    ensure!(
        after.name_any() == before.name_any() && after.uid() == before.uid(),
        "not the same Secret"
    );
    ensure!(after.data == before.data, "values changed on adoption");
    let owners: Vec<_> = after
        .owner_references()
        .iter()
        .map(|o| o.uid.clone())
        .collect();
    ensure!(
        owners == vec![second.uid().unwrap()],
        "owner references after adoption: {owners:?}"
    );

    // Owned again: deleting the RandomSecret now lets the garbage collector remove the version.
    api.delete("db", &DeleteParams::background()).await?;
    wait_deleted(&secrets, &after.name_any())
        .await
        .context("the version is garbage-collected with its RandomSecret")?;
    ns.delete().await
}

#[tokio::test]
async fn name_command_matches_status_for_every_example() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-examples").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let dir = repo_root().join("examples/basic");
    let mut files: Vec<_> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    let mut checked = 0;
    for file in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
    {
        let out = std::process::Command::new(randomsecret_bin())
            .arg("name")
            .arg("-f")
            .arg(file)
            .output()?;
        ensure!(
            out.status.success(),
            "name -f {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let names: Vec<String> = String::from_utf8(out.stdout)?
            .lines()
            .map(String::from)
            .collect();
        let text = std::fs::read_to_string(file)?;
        let mut i = 0;
        for v in yaml::read_stream(&text)? {
            if v["kind"] != "RandomSecret" {
                continue;
            }
            let rs: RandomSecret = serde_json::from_value(v)?;
            let name = rs.name_any();
            api.create(&PostParams::default(), &rs).await?;
            let rs = wait_for(&api, &name, "Ready", is_ready).await?;
            current_secret(&secrets, &rs).await?;
            let status_name = rs
                .status
                .as_ref()
                .and_then(|s| s.secret_name.clone())
                .unwrap_or_default();
            ensure!(
                names.get(i) == Some(&status_name),
                "{}: name printed {:?}, status says {status_name}",
                file.display(),
                names.get(i)
            );
            i += 1;
            checked += 1;
        }
        ensure!(
            i == names.len(),
            "{}: {} names printed for {i} RandomSecrets",
            file.display(),
            names.len()
        );
    }
    ensure!(
        checked >= 3,
        "expected the examples to hold at least 3 RandomSecrets, found {checked}"
    );
    ns.delete().await
}

#[tokio::test]
async fn name_command_reports_malformed_yaml() -> Result<()> {
    let mut child = std::process::Command::new(randomsecret_bin())
        .arg("name")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"kind: [unclosed\n")?;
    let out = child.wait_with_output()?;
    ensure!(
        out.status.code() == Some(1),
        "exit code {:?}",
        out.status.code()
    );
    let err = String::from_utf8(out.stderr)?;
    ensure!(err.contains("invalid YAML"), "{err}");
    Ok(())
}

#[tokio::test]
async fn kubectl_wait_explain_and_columns_work() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "rs-kubectl").await?;
    let api: Api<RandomSecret> = ns.api();
    api.create(
        &PostParams::default(),
        &random_secret("w", json!({"keys": {"k": {"length": 8}}}))?,
    )
    .await?;
    let kubectl = |args: &[&str]| -> Result<String> {
        let out = std::process::Command::new("kubectl").args(args).output()?;
        if !out.status.success() {
            bail!("kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8(out.stdout)?)
    };
    kubectl(&[
        "wait",
        "-n",
        &ns.name,
        "--for=condition=Ready",
        "randomsecret/w",
        "--timeout=60s",
    ])?;
    let table = kubectl(&["get", "rsec", "-n", &ns.name])?;
    let header = table.lines().next().unwrap_or_default();
    // The reason is shown by default, beside READY (not only with -o wide).
    for col in ["NAME", "SECRET", "READY", "REASON", "AGE"] {
        ensure!(header.contains(col), "column {col} missing: {header}");
    }
    let rs = api.get("w").await?;
    let status = rs.status.unwrap();
    let ready_reason = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.reason.clone())
        .unwrap_or_default();
    let row = table.lines().nth(1).unwrap_or_default();
    ensure!(
        row.contains(status.secret_name.as_deref().unwrap()) && row.contains(&ready_reason),
        "the row shows the Secret and the reason {ready_reason:?}: {table}"
    );
    let explain = kubectl(&["explain", "randomsecret.spec.keys"])?;
    ensure!(explain.contains("Generated values"), "{explain}");
    // spec.push is described as what it is: Vault and downstream clusters.
    let explain = kubectl(&["explain", "randomsecret.spec.push"])?;
    ensure!(
        explain.contains("Vault") && explain.contains("downstream clusters"),
        "{explain}"
    );
    let explain = kubectl(&["explain", "rsec.status.conditions"])?;
    ensure!(explain.contains("Ready"), "{explain}");
    ns.delete().await
}

/// The stored object (after defaulting and pruning) names the same version as
/// the manifest: every fixture vector, and one written with explicit nulls.
#[tokio::test]
async fn fixture_vectors_name_the_stored_objects() -> Result<()> {
    let client = client().await?;
    let text = std::fs::read_to_string(repo_root().join("testdata/name-vectors.yaml"))?;
    let vectors: Vec<Value> = yaml::read(&text)?;
    let ar = kube::core::ApiResource::erase::<RandomSecret>(&());
    let mut cases: Vec<(String, Value, String)> = vectors
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["spec"].clone(),
                v["secretName"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let first = &vectors[0];
    let mut with_nulls = first["spec"].clone();
    with_nulls["rotation"] = Value::Null;
    with_nulls["type"] = Value::Null;
    with_nulls["secretLabels"] = Value::Null;
    with_nulls["keys"]["password"]["charset"] = Value::Null;
    cases.push((
        first["name"].as_str().unwrap().to_string(),
        with_nulls,
        first["secretName"].as_str().unwrap().to_string(),
    ));

    for (i, (name, spec, want)) in cases.into_iter().enumerate() {
        let ns = TestNamespace::new(&client, &format!("rs-vector{i}")).await?;
        let raw: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &ar);
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "metadata": {"name": name}, "spec": spec,
        }))?;
        raw.create(&PostParams::default(), &obj)
            .await
            .with_context(|| format!("vector {i}: {spec}"))?;
        let api: Api<RandomSecret> = ns.api();
        let rs = wait_for(&api, &name, "Ready", is_ready).await?;
        let got = rs
            .status
            .as_ref()
            .and_then(|s| s.secret_name.clone())
            .unwrap_or_default();
        ensure!(
            got == want,
            "vector {i} ({spec}): status.secretName {got}, fixture {want}"
        );
        current_secret(&ns.api(), &rs).await?;
        ns.delete().await?;
    }
    Ok(())
}
