//! Checks of annotation mode's kinds by tools nobody here wrote, shared by
//! the controller-path suite (`annotated.rs`) and the webhook suite
//! (`webhook.rs`): OpenSSH's `ssh-keygen` derives an SSH pair's public key
//! from its private key and says its type and size; Python (the venv of
//! `e2e/build-jwcrypto.sh`, with PyPI's bcrypt and pyca/cryptography)
//! verifies htpasswd lines, decodes bytes, accepts Fernet keys and parses
//! UUIDs.

#![allow(dead_code)]

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use randomsecret_e2e::{KeyFile, record_values, repo_root, run, value};
use serde_json::{Value, json};

/// What the Python oracle does with `request` (JSON on stdin): one line out.
const ORACLE: &str = r#"
import base64, json, sys, uuid
r = json.load(sys.stdin)
k = r["check"]
if k == "bcrypt":
    import bcrypt
    h = r["hash"].encode()
    print(json.dumps([bcrypt.checkpw(r["password"].encode(), h),
                      bcrypt.checkpw((r["password"] + "x").encode(), h)]))
elif k == "decode":
    decode = {"base64": lambda v: base64.b64decode(v, validate=True),
              "base64url": base64.urlsafe_b64decode,
              "base32": base64.b32decode,
              "hex": bytes.fromhex}[r["encoding"]]
    print(len(decode(r["value"])))
elif k == "fernet":
    from cryptography.fernet import Fernet
    f = Fernet(r["value"].encode())
    print(f.decrypt(f.encrypt(b"checked")).decode())
elif k == "uuid":
    print(uuid.UUID(r["value"]).version)
"#;

/// The venv's python: `$JWCRYPTO_PYTHON` (set by `e2e/run.sh`), else what
/// `e2e/build-jwcrypto.sh` builds.
fn python_path() -> Result<String> {
    if let Ok(p) = std::env::var("JWCRYPTO_PYTHON") {
        return Ok(p);
    }
    let build = repo_root().join("e2e/build-jwcrypto.sh");
    Ok(run(build.to_str().context("path")?, &[], None)?
        .trim()
        .to_string())
}

fn oracle(request: Value) -> Result<String> {
    let out = run(&python_path()?, &["-c", ORACLE], Some(&request.to_string())).context(
        "the Python oracle (bcrypt and cryptography in the venv of e2e/build-jwcrypto.sh)",
    )?;
    Ok(out.trim().to_string())
}

/// Python's bcrypt accepts `password` for the htpasswd line `auth` of
/// `user`, and refuses another password.
pub fn bcrypt_verifies(auth: &str, user: &str, password: &str) -> Result<()> {
    let hash = auth
        .strip_prefix(&format!("{user}:"))
        .with_context(|| format!("the auth line is not {user}'s"))?
        .trim_end_matches('\n');
    ensure!(
        hash.starts_with("$2y$10$") && hash.len() == 60,
        "not a bcrypt hash of cost 10"
    );
    let out = oracle(json!({"check": "bcrypt", "hash": hash, "password": password}))?;
    ensure!(
        out == "[true, false]",
        "bcrypt.checkpw says {out} (want the password accepted, another refused)"
    );
    Ok(())
}

/// The number of bytes Python decodes from `v` in `encoding`.
pub fn decoded_len(v: &str, encoding: &str) -> Result<usize> {
    Ok(oracle(json!({"check": "decode", "encoding": encoding, "value": v}))?.parse()?)
}

/// pyca/cryptography's Fernet takes `key` and round-trips a token with it.
pub fn fernet_accepts(key: &str) -> Result<()> {
    let out = oracle(json!({"check": "fernet", "value": key}))?;
    ensure!(out == "checked", "Fernet: {out}");
    Ok(())
}

/// Python's `uuid.UUID` parses `v` as a version 4 UUID.
pub fn uuid_v4(v: &str) -> Result<()> {
    let out = oracle(json!({"check": "uuid", "value": v}))?;
    ensure!(out == "4", "uuid.UUID({v:?}).version is {out}");
    Ok(())
}

fn ssh_keygen(args: &[&str]) -> Result<String> {
    run("ssh-keygen", args, None).context("ssh-keygen (Debian's openssh-client) on the private key")
}

/// The SSH key pair under `private` and `public` of `s`: an OpenSSH private
/// key from which `ssh-keygen -y` derives the stored public key, of type
/// `openssh` (`ssh-ed25519`, `ecdsa-sha2-nistp384`, `ssh-rsa`) and of `bits`
/// (`ssh-keygen -l`).
pub fn ssh_pair_checks(
    s: &Secret,
    private: &str,
    public: &str,
    openssh: &str,
    bits: u32,
) -> Result<()> {
    let private_key = value(s, private)?;
    record_lines(&private_key)?;
    ensure!(
        private_key.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"),
        "{private}: not an OpenSSH private key"
    );
    let public_key = value(s, public)?;
    ensure!(
        public_key.ends_with('\n') && public_key.matches('\n').count() == 1,
        "{public}: not one authorized_keys line"
    );
    let stored: Vec<&str> = public_key.trim_end().split(' ').collect();
    ensure!(
        stored[0] == openssh,
        "{public}: type {}, want {openssh}",
        stored[0]
    );
    let file = KeyFile::new(&private_key)?;
    let derived = ssh_keygen(&["-y", "-f", file.path()])?;
    let derived: Vec<&str> = derived.trim_end().split(' ').collect();
    ensure!(
        derived.len() >= 2 && derived[..2] == stored[..2],
        "{private}: ssh-keygen -y derives another public key than {public}'s"
    );
    let fingerprint = ssh_keygen(&["-l", "-f", file.path()])?;
    ensure!(
        fingerprint.split_whitespace().next() == Some(bits.to_string().as_str()),
        "{private}: ssh-keygen -l says {fingerprint:?}, want {bits} bits"
    );
    Ok(())
}

/// A basic-auth Secret: `username` is `user`, `auth` the htpasswd line of
/// `user` and `password` (checked by Python's bcrypt). Returns the password.
pub fn basic_auth_checks(s: &Secret, user: &str) -> Result<String> {
    ensure!(value(s, "username")? == user, "username is not {user}");
    let password = value(s, "password")?;
    let auth = value(s, "auth")?;
    record_values([auth.trim_end().as_bytes()])?;
    bcrypt_verifies(&auth, user, &password)?;
    Ok(password)
}

/// Records a multi-line value's lines for the log check (the PEM armour
/// is not secret).
pub fn record_lines(v: &str) -> Result<()> {
    record_values(
        v.lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::as_bytes),
    )
}

/// Records every value of `s` for the log check: whole, and line by line.
pub fn record_all(s: &Secret) -> Result<()> {
    for v in s.data.iter().flatten().map(|(_, v)| v.0.as_slice()) {
        record_values([v])?;
        if let Ok(text) = std::str::from_utf8(v) {
            record_lines(text)?;
        }
    }
    Ok(())
}
