//! Annotation mode, controller path: ordinary Secrets labelled
//! `randomsecret.io/managed: "true"` and annotated get their missing keys
//! from the shared controller of `e2e/run.sh` (no webhook), and nothing else
//! is touched; the apiserver's audit log proves the controller made no
//! request on an unlabelled Secret. Each kind (bytes, UUIDs, SSH key pairs,
//! basic-auth) is checked by a tool nobody here wrote (`oracles`), and a
//! Secret annotated for mittwald's kubernetes-secret-generator is filled
//! once labelled.

mod oracles;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use randomsecret::annotated::rules::{self, MANAGED_LABEL};
use randomsecret::api::{Charset, DEFAULT_SYMBOLS, RandomSecret};
use randomsecret_e2e::{
    TestNamespace, assert_alphabet, client, create_ready, kubectl, record_values, repo_root, value,
    wait_event, wait_for,
};
use serde_json::{Value, json};
use std::time::Duration;

use oracles::{
    basic_auth_checks, decoded_len, fernet_accepts, record_all, ssh_pair_checks, uuid_v4,
};

/// The controller's user (the chart's ServiceAccount, `e2e/lib.sh`).
const CONTROLLER_USER: &str = "system:serviceaccount:randomsecret-system:e2e-randomsecret";

fn secret(name: &str, labelled: bool, annotations: Value, rest: Value) -> Result<Secret> {
    let mut s = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "annotations": annotations},
    });
    if labelled {
        s["metadata"]["labels"] = json!({ MANAGED_LABEL: "true" });
    }
    for (k, v) in rest.as_object().into_iter().flatten() {
        s[k] = v.clone();
    }
    Ok(serde_json::from_value(s)?)
}

async fn create(api: &Api<Secret>, s: &Secret) -> Result<Secret> {
    Ok(api.create(&PostParams::default(), s).await?)
}

/// Waits until `key` holds a value, records every value for the log check.
async fn filled(api: &Api<Secret>, name: &str, keys: &[&str]) -> Result<Secret> {
    let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let s = wait_for(api, name, "filled", move |s: Option<&Secret>| {
        s.and_then(|s| s.data.as_ref()).is_some_and(|d| {
            keys.iter()
                .all(|k| d.get(k).is_some_and(|v| !v.0.is_empty()))
        })
    })
    .await?;
    record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    Ok(s)
}

fn data_keys(s: &Secret) -> Vec<String> {
    s.data.iter().flatten().map(|(k, _)| k.clone()).collect()
}

/// The Warning Events about Secret `name` with `reason`.
fn warnings<'a>(
    events: &'a [Event],
    name: &'a str,
    reason: &'a str,
) -> impl Iterator<Item = &'a Event> {
    events.iter().filter(move |e| {
        e.type_.as_deref() == Some("Warning")
            && e.reason.as_deref() == Some(reason)
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
    })
}

async fn wait_warning(client: &Client, ns: &str, name: &str, reason: &str) -> Result<Event> {
    let events = wait_event(client, ns, &format!("{reason} Warning about {name}"), |e| {
        warnings(std::slice::from_ref(e), name, reason).count() == 1
    })
    .await?;
    warnings(&events, name, reason)
        .next()
        .cloned()
        .context("the Event")
}

#[tokio::test]
async fn fills_missing_keys_and_keeps_what_is_set() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-fill").await?;
    let api: Api<Secret> = ns.api();

    let unlabelled = secret(
        "unlabelled",
        false,
        json!({ rules::GENERATE: "password" }),
        json!({}),
    )?;
    create(&api, &unlabelled).await?;
    let s = secret(
        "app",
        true,
        json!({ rules::GENERATE: "password, token, preset, fromstring", rules::LENGTH: "20", rules::CHARSET: "hex" }),
        json!({
            "data": {"preset": "cHJlc2V0LXZhbHVlLWtlcHQ="},   // preset-value-kept
            "stringData": {"fromstring": "string-value-kept", "other": "x"},
        }),
    )?;
    create(&api, &s).await?;
    let got = filled(&api, "app", &["password", "token"]).await?;
    for k in ["password", "token"] {
        assert_alphabet(&value(&got, k)?, 20, Charset::Hex.chars())?;
    }
    ensure!(value(&got, "password")? != value(&got, "token")?);
    ensure!(value(&got, "preset")? == "preset-value-kept");
    ensure!(value(&got, "fromstring")? == "string-value-kept");
    ensure!(value(&got, "other")? == "x");
    let annotations = got.metadata.annotations.clone().unwrap_or_default();
    ensure!(annotations.get(rules::ROTATED).map(String::as_str) == Some(""));
    let rv = got.metadata.resource_version.clone();

    // The examples: ours, and the original operator's documented one with the label added.
    let dir = repo_root().join("examples/annotated");
    kubectl(&["apply", "-n", &ns.name, "-f", dir.to_str().context("path")?])?;
    let got = filled(&api, "app-credentials", &["password", "cookie-key"]).await?;
    assert_alphabet(&value(&got, "cookie-key")?, 40, Charset::Base64url.chars())?;
    ensure!(value(&got, "username")? == "app");
    let got = filled(&api, "non-empty-secret", &["password"]).await?;
    let alphabet = format!("{}{DEFAULT_SYMBOLS}", Charset::Alphanumeric.chars());
    assert_alphabet(&value(&got, "password")?, 32, &alphabet)?;
    ensure!(value(&got, "user")? == "quentin");

    // Settled: a few seconds later nothing was written again, and the
    // unlabelled Secret was never touched.
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        api.get("app").await?.metadata.resource_version == rv,
        "written again"
    );
    let u = api.get("unlabelled").await?;
    ensure!(
        data_keys(&u).is_empty(),
        "unlabelled Secret filled: {:?}",
        data_keys(&u)
    );
    ensure!(
        u.metadata
            .managed_fields
            .iter()
            .flatten()
            .all(|m| m.manager.as_deref() != Some("randomsecret")),
        "randomsecret wrote to the unlabelled Secret"
    );

    // Counted by path.
    if let Ok(url) = std::env::var("E2E_METRICS_URL") {
        let text = randomsecret_e2e::run("curl", &["-fsS", &url], None)?;
        ensure!(
            text.lines()
                .any(|l| l.starts_with("randomsecret_annotated_fills_total{path=\"controller\"}")),
            "no controller fills counted"
        );
    }
    ns.delete().await
}

#[tokio::test]
async fn refuses_immutable_produced_and_bad_annotations_with_a_warning() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-refuse").await?;
    let api: Api<Secret> = ns.api();

    let immutable = secret(
        "immutable",
        true,
        json!({ rules::GENERATE: "password" }),
        json!({"immutable": true, "data": {"user": "YWRtaW4="}}),
    )?;
    create(&api, &immutable).await?;
    let bad: &[(&str, Value)] = &[
        (
            "zero",
            json!({ rules::GENERATE: "password", rules::LENGTH: "0" }),
        ),
        (
            "huge",
            json!({ rules::GENERATE: "password", rules::LENGTH: "99999999999999999999" }),
        ),
        (
            "charset",
            json!({ rules::GENERATE: "password", rules::CHARSET: "klingon" }),
        ),
        ("badkey", json!({ rules::GENERATE: "pass word" })),
    ];
    for (name, annotations) in bad {
        create(
            &api,
            &secret(
                name,
                true,
                annotations.clone(),
                json!({"data": {"user": "YWRtaW4="}}),
            )?,
        )
        .await?;
    }
    // A version produced by a RandomSecret that (wrongly) asks for more keys
    // (in the original operator's annotations: the schema refuses our own
    // prefix in secretAnnotations).
    let rsecs: Api<RandomSecret> = ns.api();
    let rs = create_ready(
        &rsecs,
        "produced",
        json!({
            "keys": {"password": {"length": 16}},
            "secretLabels": { MANAGED_LABEL: "true" },
            "secretAnnotations": { rules::alias::ENABLE: "true", rules::alias::KEY: "extra" },
        }),
    )
    .await?;
    let version = rs
        .status
        .and_then(|s| s.secret_name)
        .context("status.secretName")?;

    wait_warning(&client, &ns.name, "immutable", "Immutable").await?;
    let fixes = [
        ("zero", "from 1 to 1048576"),
        ("huge", "from 1 to 1048576"),
        ("charset", "is not a charset"),
        ("badkey", "not a valid Secret data key"),
    ];
    for (name, fix) in fixes {
        let e = wait_warning(&client, &ns.name, name, "InvalidAnnotations").await?;
        let note = e.note.unwrap_or_default();
        ensure!(note.contains(fix), "{name}: {note}");
    }
    wait_warning(&client, &ns.name, &version, "ProducedByRandomSecret").await?;

    // A metadata change is looked at again, and does not repeat the Warning.
    let touch = json!({"metadata": {"labels": {"touched": "yes"}}});
    api.patch("zero", &PatchParams::default(), &Patch::Merge(&touch))
        .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events: Api<Event> = ns.api();
    let all = events.list(&Default::default()).await?.items;
    let n = warnings(&all, "zero", "InvalidAnnotations").count();
    ensure!(n == 1, "{n} Warnings about zero: a resync repeated it");

    // Nothing was filled.
    for name in ["immutable", "zero", "huge", "charset", "badkey"] {
        ensure!(
            data_keys(&api.get(name).await?) == ["user"],
            "{name} changed"
        );
    }
    let v = api.get(&version).await?;
    record_values(v.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    ensure!(
        data_keys(&v) == ["password"],
        "the version was filled: {:?}",
        data_keys(&v)
    );
    ns.delete().await
}

/// A misspelt annotation of ours is named in a Warning with the key meant,
/// once, and changes nothing else: the fill takes the default.
#[tokio::test]
async fn a_misspelt_annotation_is_named_with_the_key_meant() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-typo").await?;
    let api: Api<Secret> = ns.api();
    create(
        &api,
        &secret(
            "typo",
            true,
            json!({ rules::GENERATE: "password", "randomsecret.io/lenght": "12" }),
            json!({}),
        )?,
    )
    .await?;
    // A misspelt `generate` asks for nothing: the Warning is all there is.
    create(
        &api,
        &secret(
            "generat",
            true,
            json!({ "randomsecret.io/generat": "password" }),
            json!({}),
        )?,
    )
    .await?;

    let got = filled(&api, "typo", &["password"]).await?;
    assert_alphabet(&value(&got, "password")?, 32, Charset::Alphanumeric.chars())?;
    let e = wait_warning(&client, &ns.name, "typo", "UnknownAnnotation").await?;
    let note = e.note.unwrap_or_default();
    ensure!(
        note.contains("\"randomsecret.io/lenght\"")
            && note.contains("did you mean randomsecret.io/length?"),
        "{note}"
    );
    let e = wait_warning(&client, &ns.name, "generat", "UnknownAnnotation").await?;
    let note = e.note.unwrap_or_default();
    ensure!(
        note.contains("\"randomsecret.io/generat\"")
            && note.contains("did you mean randomsecret.io/generate?"),
        "{note}"
    );
    ensure!(data_keys(&api.get("generat").await?).is_empty());

    // Another change of the Secret is looked at again, and does not repeat the Warning.
    let touch = json!({"metadata": {"labels": {"touched": "yes"}}});
    api.patch("typo", &PatchParams::default(), &Patch::Merge(&touch))
        .await?;
    // Fixed: filled.
    let fix = json!({"metadata": {"annotations": {"randomsecret.io/generat": null, rules::GENERATE: "password"}}});
    api.patch("generat", &PatchParams::default(), &Patch::Merge(&fix))
        .await?;
    filled(&api, "generat", &["password"]).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events: Api<Event> = ns.api();
    let all = events.list(&Default::default()).await?.items;
    for name in ["typo", "generat"] {
        let n = warnings(&all, name, "UnknownAnnotation").count();
        ensure!(n == 1, "{n} UnknownAnnotation Warnings about {name}");
    }
    ns.delete().await
}

#[tokio::test]
async fn rotation_is_explicit() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-rotate").await?;
    let api: Api<Secret> = ns.api();
    create(
        &api,
        &secret(
            "db",
            true,
            json!({ rules::GENERATE: "password" }),
            json!({}),
        )?,
    )
    .await?;
    let first = value(&filled(&api, "db", &["password"]).await?, "password")?;

    let annotate = |k: &str, v: &str| json!({"metadata": {"annotations": { k: v }}});
    // An unrelated change rotates nothing.
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(&annotate("note", "x")),
    )
    .await?;
    // The rotate token does, once.
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(&annotate(rules::ROTATE, "2026-12")),
    )
    .await?;
    let rotated = wait_for(&api, "db", "rotated", |s: Option<&Secret>| {
        s.and_then(|s| s.metadata.annotations.as_ref())
            .and_then(|a| a.get(rules::ROTATED))
            .is_some_and(|t| t == "2026-12")
    })
    .await?;
    record_values(rotated.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    let second = value(&rotated, "password")?;
    ensure!(second != first, "not rotated");
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        value(&api.get("db").await?, "password")? == second,
        "rotated twice"
    );

    // Without the webhook, a deleted key is generated again.
    let remove = json!({"data": {"password": null}});
    api.patch("db", &PatchParams::default(), &Patch::Merge(&remove))
        .await?;
    let third = value(&filled(&api, "db", &["password"]).await?, "password")?;
    ensure!(third != second);
    ns.delete().await
}

/// The audit log (`e2e/cluster.sh`: Metadata level for Secrets) shows the
/// controller's requests: on the labelled Secret, and none naming an
/// unlabelled one, annotated or not.
#[tokio::test]
async fn audit_log_shows_no_request_on_unlabelled_secrets() -> Result<()> {
    let dir = std::env::var("E2E_DIR").context("E2E_DIR (set by e2e/run.sh)")?;
    let log = std::path::Path::new(&dir).join("logs/audit.log");
    if !log.exists() {
        bail!(
            "{} is missing: the control plane was started without the audit log; restart it with it (e2e/cluster.sh down && E2E_AUDIT=1 e2e/cluster.sh up)",
            log.display()
        );
    }
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-audit").await?;
    let api: Api<Secret> = ns.api();
    for name in ["plain", "annotated-only"] {
        let annotations = if name == "plain" {
            json!({})
        } else {
            json!({ rules::GENERATE: "password" })
        };
        create(&api, &secret(name, false, annotations, json!({}))?).await?;
    }
    create(
        &api,
        &secret(
            "labelled",
            true,
            json!({ rules::GENERATE: "password" }),
            json!({}),
        )?,
    )
    .await?;
    filled(&api, "labelled", &["password"]).await?;
    // Then touch the unlabelled ones: any reaction would come now.
    for name in ["plain", "annotated-only"] {
        let touch = json!({"metadata": {"annotations": {"touched": "yes"}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&touch))
            .await?;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    let text = std::fs::read_to_string(&log)?;
    let mut on_labelled = Vec::new();
    for line in text.lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if ev["user"]["username"] != CONTROLLER_USER
            || ev["objectRef"]["resource"] != "secrets"
            || ev["objectRef"]["namespace"] != ns.name.as_str()
        {
            continue;
        }
        let name = ev["objectRef"]["name"].as_str().unwrap_or_default();
        let verb = ev["verb"].as_str().unwrap_or_default();
        match name {
            "labelled" => on_labelled.push(verb.to_string()),
            "plain" | "annotated-only" => {
                bail!("the controller made a {verb} request on unlabelled Secret {name}")
            }
            _ => {}
        }
    }
    ensure!(
        on_labelled.iter().any(|v| v == "get") && on_labelled.iter().any(|v| v == "patch"),
        "the audit log shows no get and patch of the labelled Secret by {CONTROLLER_USER}: {on_labelled:?}"
    );
    ns.delete().await
}

/// Waits until every key of `keys` holds a value; records every value.
async fn filled_all(api: &Api<Secret>, name: &str, keys: &[&str]) -> Result<Secret> {
    let s = filled(api, name, keys).await?;
    record_all(&s)?;
    Ok(s)
}

/// Every kind of `randomsecret.io/type` filled by the controller path, each
/// value checked by a tool nobody here wrote; half a key pair is reported
/// and left as it is.
#[tokio::test]
async fn every_kind_is_filled_and_checked_by_real_tools() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-kinds").await?;
    let api: Api<Secret> = ns.api();
    let made: &[(&str, Value, Value)] = &[
        (
            "fernet",
            json!({ rules::GENERATE: "key", rules::TYPE: "bytes", rules::ENCODING: "base64url" }),
            json!({}),
        ),
        (
            "base32",
            json!({ rules::GENERATE: "a,b", rules::TYPE: "bytes", rules::LENGTH: "20", rules::ENCODING: "base32" }),
            json!({}),
        ),
        (
            "uuid",
            json!({ rules::GENERATE: "id", rules::TYPE: "uuid" }),
            json!({}),
        ),
        ("ed25519", json!({ rules::TYPE: "ssh-keypair" }), json!({})),
        (
            "ecdsa",
            json!({ rules::GENERATE: "id_ecdsa", rules::TYPE: "ssh-keypair", rules::ALGORITHM: "ecdsa", rules::BITS: "384" }),
            json!({}),
        ),
        (
            "rsa",
            json!({ rules::TYPE: "ssh-keypair", rules::ALGORITHM: "rsa" }),
            json!({}),
        ),
        (
            "basic-auth",
            json!({ rules::TYPE: "basic-auth" }),
            json!({"stringData": {"username": "ops"}}),
        ),
        (
            "half",
            json!({ rules::TYPE: "ssh-keypair" }),
            json!({"stringData": {"ssh-publickey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeep"}}),
        ),
    ];
    for (name, annotations, rest) in made {
        create(
            &api,
            &secret(name, true, annotations.clone(), rest.clone())?,
        )
        .await?;
    }

    // bytes: 32 base64url bytes are a Fernet key; base32 decodes to 20.
    let s = filled_all(&api, "fernet", &["key"]).await?;
    let key = value(&s, "key")?;
    ensure!(key.len() == 44 && decoded_len(&key, "base64url")? == 32);
    fernet_accepts(&key)?;
    let s = filled_all(&api, "base32", &["a", "b"]).await?;
    for k in ["a", "b"] {
        ensure!(decoded_len(&value(&s, k)?, "base32")? == 20, "{k}");
    }
    ensure!(value(&s, "a")? != value(&s, "b")?);
    // uuid: version 4.
    let s = filled_all(&api, "uuid", &["id"]).await?;
    uuid_v4(&value(&s, "id")?)?;
    // SSH key pairs: under the conventional keys, or <key> and <key>.pub;
    // the RSA one made off the runtime's threads.
    let s = filled_all(&api, "ed25519", &["ssh-privatekey", "ssh-publickey"]).await?;
    ssh_pair_checks(&s, "ssh-privatekey", "ssh-publickey", "ssh-ed25519", 256)?;
    let s = filled_all(&api, "ecdsa", &["id_ecdsa", "id_ecdsa.pub"]).await?;
    ssh_pair_checks(&s, "id_ecdsa", "id_ecdsa.pub", "ecdsa-sha2-nistp384", 384)?;
    let s = filled_all(&api, "rsa", &["ssh-privatekey", "ssh-publickey"]).await?;
    ssh_pair_checks(&s, "ssh-privatekey", "ssh-publickey", "ssh-rsa", 3072)?;
    // basic-auth: the preset user kept, a password, and its bcrypt line.
    let s = filled_all(&api, "basic-auth", &["auth", "password"]).await?;
    let password = basic_auth_checks(&s, "ops")?;
    assert_alphabet(&password, 32, Charset::Alphanumeric.chars())?;

    // Half a pair: a Warning naming both keys, nothing written.
    let e = wait_warning(&client, &ns.name, "half", "IncompletePair").await?;
    let note = e.note.unwrap_or_default();
    ensure!(
        note.contains("\"ssh-publickey\" has a value but key \"ssh-privatekey\" is empty")
            && !note.contains("AAAA"),
        "{note}"
    );
    ensure!(data_keys(&api.get("half").await?) == ["ssh-publickey"]);
    // Complete: a few seconds later nothing was written again.
    let rv = api.get("rsa").await?.metadata.resource_version;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        api.get("rsa").await?.metadata.resource_version == rv,
        "written again"
    );
    ns.delete().await
}

/// A Secret annotated for mittwald's kubernetes-secret-generator is filled
/// as mittwald would once it carries the label; one it already filled is
/// left alone; its one-shot `regenerate` is reported as not read.
#[tokio::test]
async fn a_mittwald_secret_migrates_by_adding_the_label() -> Result<()> {
    use rules::mittwald::*;
    let client = client().await?;
    let ns = TestNamespace::new(&client, "annotated-mittwald").await?;
    let api: Api<Secret> = ns.api();
    let made: &[(&str, bool, Value, Value)] = &[
        (
            "string",
            true,
            json!({ AUTOGENERATE: "password,token" }),
            json!({"data": {"username": "c29tZXVzZXI="}}),
        ),
        (
            "fernet",
            true,
            json!({ AUTOGENERATE: "key", LENGTH: "32B", ENCODING: "base64url" }),
            json!({}),
        ),
        (
            "hex",
            true,
            json!({ AUTOGENERATE: "k", LENGTH: "15", ENCODING: "hex" }),
            json!({}),
        ),
        ("ssh", true, json!({ TYPE: "ssh-keypair" }), json!({})),
        (
            "auth",
            true,
            json!({ TYPE: "basic-auth", BASIC_AUTH_USERNAME: "ops" }),
            json!({}),
        ),
        // Filled by mittwald before the migration, with its markers.
        (
            "done",
            true,
            json!({ AUTOGENERATE: "password", TYPE: "string", SECURE: "yes", GENERATED_AT: "2020-04-03T14:07:47+02:00" }),
            json!({"data": {"password": "VFdWd1NVODNMMmh1TlhCcmFsTlRNSEZ3VTNWS1NrazA="}}),
        ),
        (
            "regenerate",
            true,
            json!({ AUTOGENERATE: "password", REGENERATE: "true" }),
            json!({"data": {"password": "a2VwdC1hcy1pdC1pcw=="}}),
        ),
        (
            "unlabelled",
            false,
            json!({ AUTOGENERATE: "password" }),
            json!({}),
        ),
    ];
    for (name, labelled, annotations, rest) in made {
        create(
            &api,
            &secret(name, *labelled, annotations.clone(), rest.clone())?,
        )
        .await?;
    }
    let done_rv = api.get("done").await?.metadata.resource_version;

    // Strings: 40 characters of base64's alphabet; the username kept.
    let s = filled_all(&api, "string", &["password", "token"]).await?;
    for k in ["password", "token"] {
        assert_alphabet(&value(&s, k)?, 40, Charset::Base64.chars())?;
    }
    ensure!(value(&s, "username")? == "someuser");
    // 32B base64url: 32 bytes encoded whole, a Fernet key.
    let s = filled_all(&api, "fernet", &["key"]).await?;
    let key = value(&s, "key")?;
    ensure!(decoded_len(&key, "base64url")? == 32);
    fernet_accepts(&key)?;
    let s = filled_all(&api, "hex", &["k"]).await?;
    assert_alphabet(&value(&s, "k")?, 15, Charset::Hex.chars())?;
    // ssh-keypair: RSA of 2048 bits (its default), under its keys.
    let s = filled_all(&api, "ssh", &["ssh-privatekey", "ssh-publickey"]).await?;
    ssh_pair_checks(&s, "ssh-privatekey", "ssh-publickey", "ssh-rsa", 2048)?;
    // basic-auth: its user, a 40-character password, the bcrypt line.
    let s = filled_all(&api, "auth", &["auth", "password", "username"]).await?;
    let password = basic_auth_checks(&s, "ops")?;
    assert_alphabet(&password, 40, Charset::Base64.chars())?;

    // regenerate is not read: a Warning, the value kept.
    let e = wait_warning(&client, &ns.name, "regenerate", "UnknownAnnotation").await?;
    let note = e.note.unwrap_or_default();
    ensure!(
        note.contains("is not read") && note.contains("randomsecret.io/rotate"),
        "{note}"
    );
    ensure!(value(&api.get("regenerate").await?, "password")? == "kept-as-it-is");
    // What mittwald filled stays as it is, without a Warning; the
    // unlabelled Secret is never touched.
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        api.get("done").await?.metadata.resource_version == done_rv,
        "a Secret mittwald filled was written"
    );
    let events: Api<Event> = ns.api();
    let all = events.list(&Default::default()).await?.items;
    ensure!(
        all.iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("done"))
            .all(|e| e.type_.as_deref() != Some("Warning")),
        "a Warning about a Secret mittwald filled"
    );
    ensure!(data_keys(&api.get("unlabelled").await?).is_empty());
    ns.delete().await
}
