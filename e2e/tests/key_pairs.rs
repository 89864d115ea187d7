//! Key pairs, htpasswd lines and templates (issue 29, second part), each
//! value checked by a tool nobody here wrote: OpenSSH's `ssh-keygen`
//! derives every SSH public key from its private key, OpenSSL's `openssl
//! pkey` every PEM public key from its private key and tells its size,
//! Python's bcrypt verifies the htpasswd line against the version's own
//! password, and Python's urllib.parse, json and base64 read the DSN and the
//! `.dockerconfigjson` (`e2e/pairs.py`); the apiserver itself checks the
//! `.dockerconfigjson` of a Secret of type `kubernetes.io/dockerconfigjson`.
//! Renaming a public key keeps its pair byte for byte; `spec.rotation` gives
//! new pairs, and derived values that follow the new password. Bad templates
//! (a missing key, a cycle) and an htpasswd of a missing password are
//! refused naming the keys, never quoting a value.

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::{Map, Value, json};

const NAME: &str = "pairs";
const USER: &str = "app";
const REGISTRY: &str = "registry.example:5000";
/// Symbols a URL must escape (no '/', which `urlencode` leaves as it is,
/// as Jinja2's does), and the ones `tojson` escapes for HTML.
const SYMBOLS: &str = "@:%?#&+=~!<'\"";
const DSN: &str = "postgres://{{ static.username }}:{{ keys.password | urlencode }}@db:5432/app";
/// A template of a template (rendered first although "chain" < "dsn"), an
/// htpasswd line and a public key (both ending in a newline).
const CHAIN: &str = "{{ keys.dsn }}\n{{ keys.auth }}{{ keys['ssh-ec521.pub'] }}";
const DOCKER: &str = r#"{"auths": {"registry.example:5000": {"username": {{ static.username | tojson }}, "password": {{ keys.password | tojson }}, "auth": {{ (static.username ~ ":" ~ keys.password) | b64encode | tojson }}}}}"#;
/// Public keys renamed by the rename step: the pair must stay.
const RENAMED: [(&str, &str); 2] = [("ssh-ed", "ssh-ed.authorized"), ("pk-ed", "pk-ed.spki")];

/// An sshKeyPair and what ssh-keygen must say of it.
struct Ssh {
    key: &'static str,
    /// `type` ("": unset, ed25519), `bits` (0: unset), `comment`, `publicKey`.
    type_: &'static str,
    bits: u32,
    comment: &'static str,
    public: Option<&'static str>,
    /// The key's type in OpenSSH, ssh-keygen -l's name of it, and its size.
    openssh: &'static str,
    label: &'static str,
    size: u32,
}

const SSH: [Ssh; 6] = [
    Ssh {
        key: "ssh-ed",
        type_: "",
        bits: 0,
        comment: "deploy@e2e",
        public: None,
        openssh: "ssh-ed25519",
        label: "ED25519",
        size: 256,
    },
    Ssh {
        key: "ssh-ec256",
        type_: "ecdsa",
        bits: 0,
        comment: "",
        public: None,
        openssh: "ecdsa-sha2-nistp256",
        label: "ECDSA",
        size: 256,
    },
    Ssh {
        key: "ssh-ec384",
        type_: "ecdsa",
        bits: 384,
        comment: "ci deploy key",
        public: None,
        openssh: "ecdsa-sha2-nistp384",
        label: "ECDSA",
        size: 384,
    },
    Ssh {
        key: "ssh-ec521",
        type_: "ecdsa",
        bits: 521,
        comment: "",
        public: None,
        openssh: "ecdsa-sha2-nistp521",
        label: "ECDSA",
        size: 521,
    },
    Ssh {
        key: "ssh-rsa",
        type_: "rsa",
        bits: 2048,
        comment: "",
        public: Some("ssh-rsa.authorized"),
        openssh: "ssh-rsa",
        label: "RSA",
        size: 2048,
    },
    // The default size, once.
    Ssh {
        key: "ssh-rsa3072",
        type_: "rsa",
        bits: 0,
        comment: "rsa default",
        public: None,
        openssh: "ssh-rsa",
        label: "RSA",
        size: 3072,
    },
];

/// A privateKey and what openssl must say of it.
struct Pk {
    key: &'static str,
    /// `algorithm`, `size` (0: unset), `encoding` ("": unset, pkcs8), `publicKey`.
    algorithm: &'static str,
    size: u32,
    encoding: &'static str,
    public: Option<&'static str>,
    /// The PEM label of the private key, and what `openssl pkey -text` shows.
    label: &'static str,
    text: &'static [&'static str],
}

const PK: [Pk; 4] = [
    Pk {
        key: "pk-ed",
        algorithm: "ed25519",
        size: 0,
        encoding: "",
        public: None,
        label: "PRIVATE KEY",
        text: &["ED25519 Private-Key"],
    },
    Pk {
        key: "pk-ec",
        algorithm: "ecdsa",
        size: 384,
        encoding: "sec1",
        public: None,
        label: "EC PRIVATE KEY",
        text: &["(384 bit)", "P-384"],
    },
    Pk {
        key: "pk-rsa1",
        algorithm: "rsa",
        size: 2048,
        encoding: "pkcs1",
        public: None,
        label: "RSA PRIVATE KEY",
        text: &["(2048 bit"],
    },
    Pk {
        key: "pk-rsa8",
        algorithm: "rsa",
        size: 2048,
        encoding: "pkcs8",
        public: Some("pk-rsa8.spki"),
        label: "PRIVATE KEY",
        text: &["(2048 bit"],
    },
];

/// The data key of a pair's public key: explicit, renamed, or `<k>.pub`.
fn public_key(key: &str, explicit: Option<&str>, renamed: bool) -> String {
    if renamed && let Some((_, to)) = RENAMED.iter().find(|(k, _)| *k == key) {
        return to.to_string();
    }
    explicit.map_or_else(|| format!("{key}.pub"), str::to_string)
}

fn spec(rotation: &str, renamed: bool) -> Value {
    let mut keys = Map::new();
    keys.insert(
        "password".into(),
        json!({"length": 24, "symbols": true, "symbolCharacters": SYMBOLS, "minSymbols": 6}),
    );
    for s in &SSH {
        let mut g = Map::new();
        if !s.type_.is_empty() {
            g.insert("type".into(), json!(s.type_));
        }
        if s.bits != 0 {
            g.insert("bits".into(), json!(s.bits));
        }
        if !s.comment.is_empty() {
            g.insert("comment".into(), json!(s.comment));
        }
        if s.public.is_some() || (renamed && RENAMED.iter().any(|(k, _)| *k == s.key)) {
            g.insert(
                "publicKey".into(),
                json!(public_key(s.key, s.public, renamed)),
            );
        }
        keys.insert(s.key.into(), json!({ "sshKeyPair": g }));
    }
    for p in &PK {
        let mut g = Map::new();
        g.insert("algorithm".into(), json!(p.algorithm));
        if p.size != 0 {
            g.insert("size".into(), json!(p.size));
        }
        if !p.encoding.is_empty() {
            g.insert("encoding".into(), json!(p.encoding));
        }
        if p.public.is_some() || (renamed && RENAMED.iter().any(|(k, _)| *k == p.key)) {
            g.insert(
                "publicKey".into(),
                json!(public_key(p.key, p.public, renamed)),
            );
        }
        keys.insert(p.key.into(), json!({ "privateKey": g }));
    }
    keys.insert(
        "auth".into(),
        json!({"htpasswd": {"username": USER, "passwordFrom": "password"}}),
    );
    keys.insert("dsn".into(), json!({ "template": DSN }));
    keys.insert("chain".into(), json!({ "template": CHAIN }));
    keys.insert(".dockerconfigjson".into(), json!({ "template": DOCKER }));
    json!({
        "keys": keys,
        "static": {"username": USER},
        "rotation": rotation,
        // The apiserver checks that .dockerconfigjson is JSON.
        "type": "kubernetes.io/dockerconfigjson",
    })
}

fn manifest(name: &str, spec: &Value) -> Value {
    json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": name}, "spec": spec,
    })
}

/// POSTs a RandomSecret as written (no round trip through the Rust types):
/// `Ok(None)` when admitted, `Ok(Some(message))` when refused.
async fn create_raw(client: &Client, ns: &str, name: &str, spec: &Value) -> Result<Option<String>> {
    let req = http::Request::post(format!(
        "/apis/randomsecret.io/v1/namespaces/{ns}/randomsecrets"
    ))
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&manifest(name, spec))?)?;
    match client.request_text(req).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(s)) => Ok(Some(format!("{} ({})", s.message, s.code))),
        Err(e) => Err(e.into()),
    }
}

async fn create_ready_raw(
    client: &Client,
    api: &Api<RandomSecret>,
    ns: &str,
    name: &str,
    spec: &Value,
) -> Result<RandomSecret> {
    if let Some(msg) = create_raw(client, ns, name, spec).await? {
        bail!("{name}: refused at admission: {msg}");
    }
    wait_for(api, name, "Ready", is_ready).await
}

/// `<utf8 byte length>:<x>`, as the canonical form writes strings.
fn s(x: &str) -> String {
    format!("{}:{x}", x.len())
}

/// The canonical lines of the contract for the new kinds of `spec(_, false)`
/// (one ending in ':' is the start of a line).
fn canonical_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for k in &SSH {
        let type_ = if k.type_.is_empty() {
            "ed25519"
        } else {
            k.type_
        };
        let bits = match (type_, k.bits) {
            ("ed25519", _) => 0,
            ("ecdsa", 0) => 256,
            ("rsa", 0) => 3072,
            (_, b) => b,
        };
        lines.push(format!(
            "generate:{}:sshKeyPair:{type_}:{bits}:{}:{}",
            s(k.key),
            s(k.comment),
            s(&public_key(k.key, k.public, false))
        ));
    }
    for k in &PK {
        let size = match (k.algorithm, k.size) {
            ("ed25519", _) => 0,
            ("ecdsa", 0) => 256,
            ("rsa", 0) => 3072,
            (_, n) => n,
        };
        let encoding = if k.encoding.is_empty() {
            "pkcs8"
        } else {
            k.encoding
        };
        lines.push(format!(
            "generate:{}:privateKey:{}:{size}:{encoding}:{}",
            s(k.key),
            k.algorithm,
            s(&public_key(k.key, k.public, false))
        ));
    }
    lines.push(format!(
        "generate:{}:htpasswd:bcrypt:10:{}:{}",
        s("auth"),
        s(USER),
        s("password")
    ));
    // `name --explain` shows a template's length, not its text: a prefix.
    lines.push(format!("generate:{}:template:{}:", s("dsn"), DSN.len()));
    lines
}

/// Runs a tool on a key file; says which tool is missing.
fn tool(cmd: &str, args: &[&str]) -> Result<String> {
    run(cmd, args, None).with_context(|| {
        format!("{cmd} {args:?} (is {cmd} installed? ssh-keygen is Debian's openssh-client)")
    })
}

/// Records a multi-line private value's lines for the log check (whole
/// values with newlines are not recorded; their PEM armour is not secret).
fn record_lines(v: &str) -> Result<()> {
    record_values(
        v.lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::as_bytes),
    )
}

/// minijinja's `urlencode` of a string: every byte but ASCII letters,
/// digits and `/ . - _` as `%XX` (uppercase hex).
fn urlencode(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/.-_".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn check_ssh(secret: &Secret, k: &Ssh, renamed: bool) -> Result<()> {
    let key = k.key;
    let private = value(secret, key)?;
    record_lines(&private)?;
    ensure!(
        private.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n")
            && private
                .trim_end()
                .ends_with("\n-----END OPENSSH PRIVATE KEY-----"),
        "{key}: not an OpenSSH private key"
    );
    let pub_key = public_key(key, k.public, renamed);
    let public = value(secret, &pub_key)?;
    ensure!(
        public.ends_with('\n') && public.matches('\n').count() == 1,
        "{pub_key}: not one line ending in a newline: {public:?}"
    );
    let stored: Vec<&str> = public.trim_end_matches('\n').splitn(3, ' ').collect();
    ensure!(
        stored[0] == k.openssh,
        "{pub_key}: type {:?}, want {}",
        stored[0],
        k.openssh
    );
    if k.comment.is_empty() {
        ensure!(
            stored.len() == 2,
            "{pub_key}: a comment part, none was set: {public:?}"
        );
    } else {
        ensure!(
            stored.get(2) == Some(&k.comment),
            "{pub_key}: comment {:?}, want {:?}",
            stored.get(2),
            k.comment
        );
    }
    let file = KeyFile::new(&private)?;
    // OpenSSH derives the public key from the private key.
    let derived = tool("ssh-keygen", &["-y", "-f", file.path()])?;
    let derived: Vec<&str> = derived.trim_end().splitn(3, ' ').collect();
    ensure!(
        derived.len() >= 2 && derived[0] == stored[0] && derived[1] == stored[1],
        "{key}: ssh-keygen -y derives another public key than {pub_key}'s: {derived:?} vs {stored:?}"
    );
    if !k.comment.is_empty() {
        ensure!(
            derived.get(2) == Some(&k.comment),
            "{key}: the private key's comment is {:?}, want {:?}",
            derived.get(2),
            k.comment
        );
    }
    // And says its size and type: `256 SHA256:... comment (ED25519)`.
    let fingerprint = tool("ssh-keygen", &["-l", "-f", file.path()])?;
    let size = k.size.to_string();
    ensure!(
        fingerprint.split_whitespace().next() == Some(size.as_str())
            && fingerprint.trim_end().ends_with(&format!("({})", k.label)),
        "{key}: ssh-keygen -l says {fingerprint:?}, want {} bits ({})",
        k.size,
        k.label
    );
    Ok(())
}

fn check_pk(secret: &Secret, k: &Pk, renamed: bool) -> Result<()> {
    let key = k.key;
    let private = value(secret, key)?;
    record_lines(&private)?;
    let begin = format!("-----BEGIN {}-----\n", k.label);
    let end = format!("\n-----END {}-----", k.label);
    ensure!(
        private.starts_with(&begin) && private.trim_end().ends_with(&end),
        "{key}: not PEM {:?} (first line {:?})",
        k.label,
        private.lines().next()
    );
    let pub_key = public_key(key, k.public, renamed);
    let public = value(secret, &pub_key)?;
    ensure!(
        public.starts_with("-----BEGIN PUBLIC KEY-----\n"),
        "{pub_key}: not a PEM SubjectPublicKeyInfo (first line {:?})",
        public.lines().next()
    );
    let file = KeyFile::new(&private)?;
    // OpenSSL derives the public key from the private key.
    let derived = tool("openssl", &["pkey", "-in", file.path(), "-pubout"])?;
    ensure!(
        derived.trim_end() == public.trim_end(),
        "{key}: openssl pkey -pubout derives another public key than {pub_key}'s"
    );
    // And says what the key is, never printing it here.
    let text = tool("openssl", &["pkey", "-in", file.path(), "-noout", "-text"])?;
    for want in k.text {
        ensure!(
            text.contains(want),
            "{key}: openssl pkey -text does not say {want:?} (first line {:?})",
            text.lines().next()
        );
    }
    Ok(())
}

/// Everything checked of one version; `wrong`: passwords the htpasswd line
/// must refuse (besides a one-character change of the right one).
fn check_version(secret: &Secret, renamed: bool, wrong: &[String]) -> Result<()> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    ensure!(
        secret.type_.as_deref() == Some("kubernetes.io/dockerconfigjson"),
        "{name}: type {:?}",
        secret.type_
    );
    for k in &SSH {
        check_ssh(secret, k, renamed).with_context(|| name.clone())?;
    }
    for k in &PK {
        check_pk(secret, k, renamed).with_context(|| name.clone())?;
    }
    let password = value(secret, "password")?;
    ensure!(
        password.chars().count() == 24,
        "{name}: password of {} characters",
        password.chars().count()
    );
    let auth = value(secret, "auth")?;
    record_values([auth.trim_end().as_bytes()])?;
    ensure!(
        auth.starts_with(&format!("{USER}:$2y$10$"))
            && auth.ends_with('\n')
            && auth.len() == USER.len() + 1 + 60 + 1,
        "{name}: auth is not `{USER}:$2y$10$<53 characters>` and a newline"
    );
    // The DSN, built here from the stored values.
    let dsn = value(secret, "dsn")?;
    let want_dsn = format!(
        "postgres://{}:{}@db:5432/app",
        value(secret, "username")?,
        urlencode(&password)
    );
    ensure!(
        dsn == want_dsn,
        "{name}: dsn is not postgres://<username>:<urlencoded password>@db:5432/app (lengths {} and {})",
        dsn.len(),
        want_dsn.len()
    );
    // A template of a template, an htpasswd line and a public key, in order.
    let chain = value(secret, "chain")?;
    let want_chain = format!(
        "{dsn}\n{auth}{}",
        value(secret, &public_key("ssh-ec521", None, renamed))?
    );
    ensure!(
        chain == want_chain,
        "{name}: chain is not dsn, a newline, auth and ssh-ec521.pub ({} lines)",
        chain.lines().count()
    );
    let docker = value(secret, ".dockerconfigjson")?;
    let mut refused: Vec<String> = wrong.to_vec();
    let mut changed: Vec<char> = password.chars().collect();
    changed[0] = if changed[0] == 'x' { 'y' } else { 'x' };
    refused.push(changed.into_iter().collect());
    let verdict = python_oracle(
        "pairs.py",
        &json!({
            "htpasswd": {"line": auth, "username": USER, "cost": 10, "password": password, "wrong": refused},
            "dsn": {"dsn": dsn, "username": USER, "password": password, "host": "db", "port": 5432, "path": "/app"},
            "docker": {"json": docker, "registry": REGISTRY, "username": USER, "password": password},
        }),
    )?;
    ensure!(verdict == "ok", "{name}: {verdict}");
    Ok(())
}

/// The private values: every pair's private key and the password.
fn private_keys() -> Vec<&'static str> {
    SSH.iter()
        .map(|k| k.key)
        .chain(PK.iter().map(|k| k.key))
        .chain(["password"])
        .collect()
}

async fn current(api: &Api<RandomSecret>, secrets: &Api<Secret>, what: &str) -> Result<Secret> {
    let rs = wait_for(api, NAME, what, is_ready).await?;
    current_secret(secrets, &rs).await
}

#[tokio::test]
async fn key_pairs_htpasswd_and_templates_are_what_real_tools_read() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "key-pairs").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let rs = create_ready_raw(&client, &api, &ns.name, NAME, &spec("1", false)).await?;
    let v1 = current_secret(&secrets, &rs).await?;
    check_version(&v1, false, &[])?;

    // The name offline is the cluster's, from the contract's canonical lines.
    let explain = run(
        "randomsecret",
        &["name", "--explain"],
        Some(&manifest(NAME, &spec("1", false)).to_string()),
    )?;
    ensure!(
        explain.lines().next().map(str::trim) == v1.metadata.name.as_deref(),
        "offline {:?}, cluster {:?}",
        explain.lines().next(),
        v1.metadata.name
    );
    for line in canonical_lines() {
        ensure!(
            explain.lines().map(str::trim_start).any(|l| l == line
                || l.strip_prefix(line.as_str())
                    .is_some_and(|rest| line.ends_with(':') || rest.starts_with(' '))),
            "no canonical line {line:?} in:\n{explain}"
        );
    }

    // Renaming public keys keeps their pairs (and every other value) byte
    // for byte, in a new version.
    patch_spec(
        &api,
        NAME,
        json!({"keys": {
            "ssh-ed": {"sshKeyPair": {"publicKey": "ssh-ed.authorized"}},
            "pk-ed": {"privateKey": {"publicKey": "pk-ed.spki"}},
        }}),
    )
    .await?;
    let v2 = current(&api, &secrets, "Ready after renaming public keys").await?;
    ensure!(
        v2.metadata.name != v1.metadata.name,
        "renaming public keys made no new version"
    );
    for k in private_keys() {
        ensure!(
            value(&v2, k)? == value(&v1, k)?,
            "{k}: changed when public keys were renamed"
        );
    }
    for (k, to) in RENAMED {
        let from = format!("{k}.pub");
        ensure!(
            value(&v2, to)? == value(&v1, &from)?,
            "{k}: the public key under {to} is not the one under {from}"
        );
        ensure!(
            v2.data.as_ref().is_some_and(|d| !d.contains_key(&from)),
            "{from}: still written after the rename to {to}"
        );
    }
    for k in ["dsn", ".dockerconfigjson"] {
        ensure!(
            value(&v2, k)? == value(&v1, k)?,
            "{k}: changed with the same inputs"
        );
    }
    check_version(&v2, true, &[])?;

    // spec.rotation: new pairs, a new password, and an htpasswd line and
    // templates that follow it (and refuse the old password).
    let v3 = secrets.get(&rotate(&api, NAME, "2").await?).await?;
    record_values(v3.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    ensure!(
        v3.metadata.name != v2.metadata.name,
        "rotation made no new version"
    );
    for k in private_keys()
        .into_iter()
        .chain(["auth", "dsn", "chain", ".dockerconfigjson"])
    {
        ensure!(
            value(&v3, k)? != value(&v2, k)?,
            "{k}: kept across spec.rotation"
        );
    }
    let publics = SSH.iter().map(|k| (k.key, k.public));
    for (k, explicit) in publics.chain(PK.iter().map(|k| (k.key, k.public))) {
        let p = public_key(k, explicit, true);
        ensure!(
            value(&v3, &p)? != value(&v2, &p)?,
            "{p}: kept across spec.rotation"
        );
    }
    let old_password = value(&v2, "password")?;
    check_version(&v3, true, &[old_password])?;
    ns.delete().await
}

/// A RandomSecret to break: a password, a template of it, a static value.
fn base_spec() -> Value {
    json!({
        "keys": {
            "password": {"length": 20},
            "greeting": {"template": "hello {{ keys.password }} from {{ static.token }}"},
        },
        "static": {"token": "static-token-e2e-0123456789"},
    })
}

/// Every value a message must not quote: the Secret's values (and their
/// lines), of 8 characters or more.
fn secret_values(s: &Secret) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in s.data.iter().flatten() {
        let text = String::from_utf8_lossy(&v.0).into_owned();
        for part in std::iter::once(text.as_str()).chain(text.lines()) {
            if part.len() >= 8 {
                out.push((k.clone(), part.to_string()));
            }
        }
    }
    out
}

/// Merge-patches `keys` into a Ready RandomSecret: the apiserver's refusal,
/// or the Ready=False reason and message of the new generation.
async fn bad_edit(api: &Api<RandomSecret>, name: &str, keys: Value) -> Result<String> {
    let patch = Patch::Merge(json!({"spec": {"keys": keys}}));
    match api.patch(name, &PatchParams::default(), &patch).await {
        Err(kube::Error::Api(s)) => return Ok(format!("refused ({}): {}", s.code, s.message)),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    let rs = wait_for(api, name, "Ready=False after a bad edit", not_ready).await?;
    let ready = condition(&rs, "Ready").context("Ready")?;
    Ok(format!("{}: {}", ready.reason, ready.message))
}

/// The message names every one of `names` and quotes none of `values`.
fn names_without_values(
    what: &str,
    message: &str,
    names: &[&str],
    values: &[(String, String)],
) -> Result<()> {
    for (k, v) in values {
        ensure!(
            !message.contains(v.as_str()),
            "{what}: the message quotes the value of {k}"
        );
    }
    for n in names {
        ensure!(
            message.contains(n),
            "{what}: {n:?} not named in {message:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn bad_templates_and_htpasswd_are_refused_naming_the_keys() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "key-pairs-bad").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let name = "refs";
    let rs = create_ready_raw(&client, &api, &ns.name, name, &base_spec()).await?;
    let good = current_secret(&secrets, &rs).await?;
    let mut values = secret_values(&good);
    values.push(("static.token".into(), "static-token-e2e-0123456789".into()));

    // A template of a missing key: refused, or Ready=False, naming both keys.
    let msg = bad_edit(
        &api,
        name,
        json!({"dangling": {"template": "{{ keys.password }}:{{ keys.nope }}"}}),
    )
    .await?;
    names_without_values("a missing key", &msg, &["dangling", "nope"], &values)?;
    patch_spec(&api, name, json!({"keys": {"dangling": null}})).await?;
    wait_for(&api, name, "Ready again without the bad template", is_ready).await?;

    // A cycle between two templates: likewise.
    let msg = bad_edit(
        &api,
        name,
        json!({
            "loop-left": {"template": "{{ keys.password }}{{ keys['loop-right'] }}"},
            "loop-right": {"template": "{{ keys['loop-left'] }}"},
        }),
    )
    .await?;
    names_without_values("a cycle", &msg, &["loop-left", "loop-right"], &values)?;
    patch_spec(
        &api,
        name,
        json!({"keys": {"loop-left": null, "loop-right": null}}),
    )
    .await?;
    let back = wait_for(&api, name, "Ready again without the cycle", is_ready).await?;
    ensure!(
        back.status.as_ref().and_then(|s| s.secret_name.as_deref())
            == good.metadata.name.as_deref(),
        "the fixed spec is not the first version's"
    );

    // An htpasswd of a missing password key: refused at admission (CEL),
    // saying which field to fix.
    let missing = json!({"keys": {
        "password": {"length": 20},
        "auth": {"htpasswd": {"username": "app", "passwordFrom": "passwd"}},
    }});
    let msg = create_raw(&client, &ns.name, "no-password", &missing)
        .await?
        .context("an htpasswd of a missing key was admitted")?;
    ensure!(
        msg.contains("passwordFrom") && msg.contains("(422)"),
        "htpasswd of a missing key: {msg}"
    );
    // Of a key that is not a random string: refused, or Ready=False, naming passwordFrom.
    let not_string = json!({"keys": {
        "id": {"uuid": {}},
        "auth": {"htpasswd": {"username": "app", "passwordFrom": "id"}},
    }});
    let msg = match create_raw(&client, &ns.name, "uuid-password", &not_string).await? {
        Some(refused) => refused,
        None => {
            let rs = wait_for(&api, "uuid-password", "Ready=False", not_ready).await?;
            condition(&rs, "Ready")
                .map(|c| format!("{}: {}", c.reason, c.message))
                .unwrap_or_default()
        }
    };
    ensure!(msg.contains("passwordFrom"), "htpasswd of a uuid: {msg}");
    // Derived kinds take no rotation.
    let rotated = json!({"keys": {
        "password": {"length": 20},
        "dsn": {"template": "{{ keys.password }}", "rotation": "1"},
    }});
    let msg = create_raw(&client, &ns.name, "rotated-template", &rotated)
        .await?
        .context("a template with a rotation was admitted")?;
    ensure!(msg.contains("rotation"), "template with a rotation: {msg}");
    ns.delete().await
}

/// Ready=False (any reason) for the current generation.
fn not_ready(rs: Option<&RandomSecret>) -> bool {
    rs.is_some_and(|rs| {
        rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation
            && condition(rs, "Ready").is_some_and(|c| c.status == "False")
    })
}

#[test]
fn urlencode_is_minijinjas() {
    assert_eq!(urlencode("aZ9/.-_"), "aZ9/.-_");
    assert_eq!(
        urlencode("@:%?#&+=~! <'\"é"),
        "%40%3A%25%3F%23%26%2B%3D%7E%21%20%3C%27%22%C3%A9"
    );
}
