//! `randomsecret rotate NAME`: a new `spec.rotation` token (every generated
//! key), or with `--key K` a new `keys.K.rotation` (that key alone), sent to
//! the cluster as a merge patch, or printed (`--print`) as the change to
//! commit for GitOps users (a YAML fragment that is also a merge patch).
//!
//! `rotate -l SELECTOR` / `--all` (`-A` across namespaces): every
//! RandomSecret selected, to one token for the whole run. An object already
//! at that token is skipped, so a run that stopped halfway is finished by
//! the same command with `--to TOKEN` (the token it printed) without
//! rotating any object twice; `--dry-run` says what it would do.

use crate::api::{RandomSecret, RandomSecretSpec};
use crate::version::Version;
use anyhow::{Context as _, bail};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Field manager of the CLI's writes.
pub const MANAGER: &str = concat!(crate::api::project!(), "-cli");

/// A new token: the time, to the second (readable in a diff, and new unless
/// two rotations happen in one second; `--to` sets one by hand). Compact
/// ISO 8601, which no YAML reader takes for a timestamp or a number.
pub fn token(now: Timestamp) -> String {
    now.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// The merge patch that rotates: every key, or the generated key `key` alone.
pub fn patch(key: Option<&str>, token: &str) -> Value {
    match key {
        None => json!({ "spec": { "rotation": token } }),
        Some(k) => json!({ "spec": { "keys": { k: { "rotation": token } } } }),
    }
}

/// The field a rotation writes, as a user reads it.
pub fn field(key: Option<&str>) -> String {
    key.map_or("spec.rotation".into(), |k| {
        format!("spec.keys.{k}.rotation")
    })
}

/// `--print`: the patch as YAML, to commit in the manifest or give to
/// `kubectl patch --type merge --patch-file`.
pub fn print(key: Option<&str>, token: &str) -> String {
    crate::gitops::yaml::write(&patch(key, token)).expect("a patch serializes")
}

/// The token a rotation replaces: `spec.rotation`, or the generated key
/// `key`'s own; an error saying what to do when `key` cannot be rotated alone.
pub fn current(spec: &RandomSecretSpec, key: Option<&str>) -> Result<Option<String>, String> {
    let Some(k) = key else {
        return Ok(spec.rotation.clone());
    };
    if spec.r#static.as_ref().is_some_and(|s| s.contains_key(k)) {
        return Err(format!(
            "{k} is a static value: it changes when you edit spec.static.{k}, and has no rotation of its own (--key rotates a generated key)"
        ));
    }
    if spec.key.is_some() || spec.length.is_some() || spec.special_char.is_some() {
        return Err(
            "this RandomSecret uses the short form (spec.key, spec.length): rotate its one value without --key, or move it to spec.keys to rotate keys one by one".into(),
        );
    }
    match spec.keys.as_ref().and_then(|keys| keys.get(k)) {
        Some(g) => Ok(g.rotation.clone()),
        None => {
            let known: Vec<&str> = spec
                .keys
                .iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .collect();
            Err(format!(
                "there is no generated key {k:?} in spec.keys{}",
                if known.is_empty() {
                    String::new()
                } else {
                    format!(" (it has {})", known.join(", "))
                }
            ))
        }
    }
}

/// What a bulk rotation does with one RandomSecret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Rotate from this token (None: unset).
    Rotate(Option<String>),
    /// At the run's token already: rotated by an earlier run with `--to`.
    Already,
    /// Cannot be rotated this way (`--key` names no generated key of it).
    Refused(String),
}

/// The plan for one RandomSecret of a bulk rotation to `token`.
pub fn plan(spec: &RandomSecretSpec, key: Option<&str>, token: &str) -> Plan {
    match current(spec, key) {
        Err(why) => Plan::Refused(why),
        Ok(old) if old.as_deref() == Some(token) => Plan::Already,
        Ok(old) => Plan::Rotate(old),
    }
}

/// The RandomSecrets a bulk rotation selects: in `namespace` (None: every
/// namespace), matching `selector` (None: all), ordered by namespace and name.
pub async fn select(
    client: &Client,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> anyhow::Result<Vec<RandomSecret>> {
    let api: Api<RandomSecret> = crate::runtime::client::scoped(client, namespace);
    let mut lp = kube::api::ListParams::default();
    if let Some(s) = selector {
        lp = lp.labels(s);
    }
    let mut all = api
        .list(&lp)
        .await
        .context("listing the RandomSecrets to rotate")?
        .items;
    all.sort_by_key(|rs| (rs.metadata.namespace.clone(), rs.metadata.name.clone()));
    Ok(all)
}

/// Sends one rotation: the merge patch, tried again (it is idempotent: the
/// same token) after a transient failure. Returns the new version's name
/// (None with rotateEvery).
pub async fn send(
    client: &Client,
    namespace: &str,
    name: &str,
    key: Option<&str>,
    token: &str,
) -> anyhow::Result<Option<String>> {
    let api: Api<RandomSecret> = Api::namespaced(client.clone(), namespace);
    let pp = PatchParams::apply(MANAGER).validation_strict();
    let mut tries = 0;
    loop {
        tries += 1;
        match api.patch(name, &pp, &Patch::Merge(patch(key, token))).await {
            Ok(after) => return Ok(Version::of(&after.spec, name).ok().map(|v| v.secret_name)),
            Err(kube::Error::Api(s)) if tries < SEND_TRIES && transient(s.code) => {
                tokio::time::sleep(std::time::Duration::from_millis(200 * tries)).await;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("patching {} of {name}", field(key)));
            }
        }
    }
}

/// How many times a bulk rotation sends one patch before it gives up.
const SEND_TRIES: u64 = 4;

/// A failure worth trying again: the apiserver busy or between leaders.
fn transient(code: u16) -> bool {
    matches!(code, 429 | 500 | 502 | 503 | 504)
}

/// `rotate -l`, `--all` (`-A`), or `--dry-run`: every RandomSecret selected
/// to one token, each line saying what happened; an error at the end when
/// one was refused or failed (the others are rotated all the same).
pub async fn many(
    args: &crate::cli::RotateArgs,
    client: &Client,
    ns: &str,
    what: &str,
    token: &str,
) -> anyhow::Result<()> {
    let key = args.key.as_deref();
    let namespace = (!args.all_namespaces).then_some(ns);
    let targets = match &args.name {
        Some(name) => vec![
            Api::<RandomSecret>::namespaced(client.clone(), ns)
                .get_opt(name)
                .await?
                .ok_or_else(|| {
                    anyhow::anyhow!("RandomSecret {name} not found in namespace {ns}")
                })?,
        ],
        None => select(client, namespace, args.selector.as_deref()).await?,
    };
    let place = namespace.map_or("in any namespace".to_string(), |n| {
        format!("in namespace {n}")
    });
    if targets.is_empty() {
        anyhow::bail!(
            "no RandomSecret {}{place}: nothing rotated",
            args.selector
                .as_deref()
                .map_or(String::new(), |s| format!("matches -l {s:?} "))
        );
    }
    let after = if args.dry_run {
        " (dry run: nothing is sent)".to_string()
    } else {
        format!("; a run that stops is finished by the same command with --to {token}")
    };
    println!(
        "randomsecret rotate: {} RandomSecret(s) {place} to {what} {token:?}{after}",
        targets.len()
    );
    let (mut rotated, mut already, mut failed) = (0, 0, 0);
    for rs in &targets {
        let (rs_ns, name) = (
            rs.metadata.namespace.clone().unwrap_or_default(),
            rs.metadata.name.clone().unwrap_or_default(),
        );
        let at = format!("randomsecret/{name} in {rs_ns}");
        match plan(&rs.spec, key, token) {
            Plan::Already => {
                already += 1;
                println!("{at}: {what} is {token:?} already: skipped");
            }
            Plan::Refused(why) => {
                failed += 1;
                eprintln!("{at}: not rotated: {why}");
            }
            Plan::Rotate(old) => {
                let old = old.map_or("unset".to_string(), |o| format!("{o:?}"));
                if args.dry_run {
                    rotated += 1;
                    println!("{at}: would rotate {what} {old} -> {token:?}");
                    continue;
                }
                match send(client, &rs_ns, &name, key, token).await {
                    Ok(version) => {
                        rotated += 1;
                        let v = version.map_or(String::new(), |v| format!("; new version {v}"));
                        println!("{at} rotated: {what} {old} -> {token:?}{v}");
                    }
                    Err(e) => {
                        failed += 1;
                        eprintln!("{at}: not rotated: {e:#}");
                    }
                }
            }
        }
    }
    let verb = if args.dry_run {
        "would rotate"
    } else {
        "rotated"
    };
    println!(
        "randomsecret rotate: {verb} {rotated}, {already} at {token:?} already, {failed} not rotated"
    );
    anyhow::ensure!(
        failed == 0,
        "{failed} RandomSecret(s) not rotated (see above); the same command with --to {token} retries them and skips those done"
    );
    Ok(())
}

/// Rotates `name` in `namespace` to `token` (the key `key` alone, or every
/// key). Returns the old token and the new version's name (None with
/// rotateEvery: the controller names it).
pub async fn rotate(
    client: &Client,
    namespace: &str,
    name: &str,
    key: Option<&str>,
    token: &str,
) -> anyhow::Result<(Option<String>, Option<String>)> {
    let api: Api<RandomSecret> = Api::namespaced(client.clone(), namespace);
    let before = api
        .get_opt(name)
        .await
        .context("reading the RandomSecret")?
        .with_context(|| format!("RandomSecret {name} not found in namespace {namespace}"))?;
    let old =
        current(&before.spec, key).map_err(|why| anyhow::anyhow!("RandomSecret {name}: {why}"))?;
    if old.as_deref() == Some(token) {
        bail!(
            "{} of {name} is already {token:?}: give another token with --to",
            field(key)
        );
    }
    Ok((old, send(client, namespace, name, key, token).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_the_time_and_the_patch_sets_only_rotation() {
        let t = token("2026-12-01T07:08:21.5Z".parse().unwrap());
        assert_eq!(t, "20261201T070821Z");
        assert_eq!(print(None, &t), "spec:\n  rotation: 20261201T070821Z\n");
        // The printed YAML reads back as the patch: the token stays a string.
        let back: Value = crate::gitops::yaml::read(&print(None, &t)).unwrap();
        assert_eq!(back, patch(None, &t));
        assert_eq!(back["spec"]["rotation"], "20261201T070821Z");
    }

    #[test]
    fn a_numeric_token_stays_a_string_in_the_printed_yaml() {
        let back: Value = crate::gitops::yaml::read(&print(None, "2")).unwrap();
        assert_eq!(back["spec"]["rotation"], "2");
        let one: Value = crate::gitops::yaml::read(&print(Some("password"), "2")).unwrap();
        assert_eq!(
            one,
            json!({"spec": {"keys": {"password": {"rotation": "2"}}}})
        );
    }

    /// A bulk run rotates what is not at its token yet, skips what is (an
    /// earlier run's), and refuses what `--key` cannot rotate, saying why.
    #[test]
    fn a_bulk_run_skips_what_is_at_its_token_already() {
        let spec = |yaml: &str| crate::gitops::yaml::read::<RandomSecretSpec>(yaml).unwrap();
        let s = spec("keys: {password: {length: 8, rotation: 'T'}}\nrotation: '1'");
        assert_eq!(plan(&s, None, "T"), Plan::Rotate(Some("1".into())));
        assert_eq!(plan(&s, Some("password"), "T"), Plan::Already);
        assert_eq!(
            plan(&s, Some("password"), "U"),
            Plan::Rotate(Some("T".into()))
        );
        assert_eq!(
            plan(&spec("keys: {a: {length: 8}}"), None, "T"),
            Plan::Rotate(None)
        );
        assert!(
            matches!(plan(&s, Some("pin"), "T"), Plan::Refused(why) if why.contains("no generated key"))
        );
        assert!(transient(503) && transient(429) && !transient(404) && !transient(422));
    }

    /// `--key` names a generated key of spec.keys: a static key, the short
    /// form or an unknown key is refused with what to do instead.
    #[test]
    fn only_a_generated_key_rotates_alone() {
        let spec = |yaml: &str| crate::gitops::yaml::read::<RandomSecretSpec>(yaml).unwrap();
        let s = spec(
            "keys: {password: {length: 8, rotation: '3'}, pin: {length: 4}}
static: {username: app}
rotation: '1'",
        );
        assert_eq!(current(&s, None), Ok(Some("1".into())));
        assert_eq!(current(&s, Some("password")), Ok(Some("3".into())));
        assert_eq!(current(&s, Some("pin")), Ok(None));
        let static_key = current(&s, Some("username")).unwrap_err();
        assert!(
            static_key.contains("username is a static value"),
            "{static_key}"
        );
        let unknown = current(&s, Some("passwd")).unwrap_err();
        assert!(
            unknown.contains("no generated key \"passwd\"") && unknown.contains("password, pin"),
            "{unknown}"
        );
        let short = current(&spec("key: pw\nlength: 8"), Some("pw")).unwrap_err();
        assert!(short.contains("short form"), "{short}");
        assert_eq!(field(Some("pin")), "spec.keys.pin.rotation");
    }
}
