//! A downstream cluster's credentials, from a Secret: parsed, and refused
//! when they would run a command or read a file of this controller's
//! machine. Pure: no IO, no client built here.
//!
//! Anyone who may write the kubeconfig Secret could otherwise make the
//! controller run a program (`exec`, `auth-provider`) or read its own
//! files (`certificate-authority`, `client-certificate`, `client-key`,
//! `tokenFile`: its ServiceAccount token, say) and send them to a server
//! of their choosing. Only inline data is accepted.

use crate::api::connections::KubeconfigFormat;
use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The Secret key of a kubeconfig when the connection names none (Fleet's).
pub const DEFAULT_KEY: &str = "value";
/// The most a kubeconfig (or an Argo CD config) may be: a whole Secret is
/// at most 1 MiB, so anything longer did not come from one.
pub const MAX_TEXT: usize = 1 << 20;

/// Reads the credentials from the Secret's data. Errors say what to fix and
/// never quote the Secret's content.
pub fn parse(
    format: KubeconfigFormat,
    key: &str,
    data: &BTreeMap<String, Vec<u8>>,
    allow_insecure: bool,
) -> Result<Kubeconfig, String> {
    let text = |k: &str| -> Result<&str, String> {
        let bytes = data
            .get(k)
            .ok_or_else(|| format!("the Secret has no key {k}"))?;
        if bytes.len() > MAX_TEXT {
            return Err(format!("the Secret's key {k} is larger than 1 MiB"));
        }
        std::str::from_utf8(bytes).map_err(|_| format!("the Secret's key {k} is not UTF-8 text"))
    };
    let kubeconfig = match format {
        KubeconfigFormat::Kubeconfig => from_yaml(text(key)?).map_err(|e| {
            // serde's message may quote a value: name only its place.
            format!("the Secret's key {key} is not a kubeconfig ({e})")
        })?,
        KubeconfigFormat::ArgoCD => argocd(text("server")?, text("config")?, allow_insecure)?,
    };
    check(&kubeconfig, allow_insecure)?;
    Ok(kubeconfig)
}

/// At most this many YAML events replayed from aliases in one kubeconfig.
/// A real kubeconfig has few aliases or none; a "billion laughs" of a few
/// hundred bytes otherwise costs the reader a core for seconds at every
/// sync (kube's reader allows a million: found by the fuzz target
/// `kubeconfig`).
pub const MAX_ALIAS_EVENTS: usize = 10_000;

/// `Kubeconfig::from_yaml` (every document, merged as kube does) with a
/// budget on aliases. The error is its kind only (serde's may quote a value).
fn from_yaml(text: &str) -> Result<Kubeconfig, &'static str> {
    use serde_saphyr::Error;
    let mut limits = serde_saphyr::options::AliasLimits::default();
    limits.max_total_replayed_events = MAX_ALIAS_EVENTS;
    let mut options = serde_saphyr::Options::default();
    options.alias_limits = limits;
    let documents: Vec<Kubeconfig> = serde_saphyr::from_multiple_with_options(text, options)
        .map_err(|e| match cause(&e) {
            Error::AliasReplayLimitExceeded { .. }
            | Error::AliasExpansionLimitExceeded { .. }
            | Error::Budget { .. } => "too many YAML aliases or nodes",
            other => shape_of(other),
        })?;
    documents
        .into_iter()
        .try_fold(Kubeconfig::default(), Kubeconfig::merge)
        .map_err(|_| "documents that cannot be merged")
}

/// The error under the snippet and alias-location wrappers.
fn cause(mut e: &serde_saphyr::Error) -> &serde_saphyr::Error {
    while let serde_saphyr::Error::AliasError { error, .. }
    | serde_saphyr::Error::WithSnippet { error, .. } = e
    {
        e = error;
    }
    e
}

/// The kind of a parse error without its quoted text, by where it is: the
/// reader places every syntax error and every value of the wrong shape
/// (line, column); serde's own messages about the fields come without a
/// place. Never by the message's words (they may quote the input).
fn shape_of(e: &serde_saphyr::Error) -> &'static str {
    match e.location() {
        Some(_) => "unreadable YAML",
        None => "unexpected fields",
    }
}

/// Refuses whatever would make the client run a command or read a file,
/// skip the server's certificate check (unless `allow_insecure`: the
/// controller's --allow-insecure-downstream-tls), send a token that is no
/// header value, or name no cluster to talk to.
pub fn check(k: &Kubeconfig, allow_insecure: bool) -> Result<(), String> {
    use secrecy::ExposeSecret;
    for NamedAuthInfo {
        name, auth_info, ..
    } in &k.auth_infos
    {
        let name = shown(name);
        let Some(a) = auth_info else { continue };
        let refuse = |what: &str, why: &str| {
            Err(format!(
                "user {name}: {what} is refused ({why}); use inline credentials: token, client-certificate-data and client-key-data"
            ))
        };
        if a.exec.is_some() {
            return refuse("exec", "it would run a command on the controller's machine");
        }
        if a.auth_provider.is_some() {
            return refuse(
                "auth-provider",
                "it would run a plugin on the controller's machine",
            );
        }
        // A line break in a token would end the header (or fail in the
        // client, on every call): refused here, naming no part of it.
        if a.token
            .as_ref()
            .is_some_and(|t| t.expose_secret().chars().any(|c| c.is_control()))
        {
            return Err(format!(
                "user {name}: the token has a line break or another control character: write it on one line"
            ));
        }
        for (field, set) in [
            ("tokenFile", a.token_file.is_some()),
            ("client-certificate", a.client_certificate.is_some()),
            ("client-key", a.client_key.is_some()),
        ] {
            if set {
                return refuse(field, "it would read a file of the controller's machine");
            }
        }
    }
    for NamedCluster { name, cluster, .. } in &k.clusters {
        let name = shown(name);
        let Some(c) = cluster else { continue };
        if c.certificate_authority.is_some() {
            return Err(format!(
                "cluster {name}: certificate-authority is refused (it would read a file of the controller's machine); use certificate-authority-data"
            ));
        }
        if c.insecure_skip_tls_verify == Some(true) && !allow_insecure {
            return Err(format!(
                "cluster {name}: insecure-skip-tls-verify is refused (anyone on the way could take the credentials and the copies); use certificate-authority-data, or start the controller with --allow-insecure-downstream-tls"
            ));
        }
        if c.proxy_url.is_some() {
            return Err(format!(
                "cluster {name}: proxy-url is refused (the credentials and copies would go through a server of the Secret's choosing besides the cluster)"
            ));
        }
    }
    // kube uses current-context only (it would fail later without one).
    let context = k
        .current_context
        .as_deref()
        .ok_or("the kubeconfig names no current-context: set current-context")?;
    let cluster = k
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.as_str())
        .ok_or_else(|| format!("the kubeconfig has no context {}", shown(context)))?;
    let server = k
        .clusters
        .iter()
        .find(|c| c.name == cluster)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.as_deref())
        .ok_or_else(|| {
            format!(
                "the kubeconfig has no server for cluster {}",
                shown(cluster)
            )
        })?;
    // The credentials go with every request: never in plain text.
    if !server.starts_with("https://") {
        return Err(format!(
            "cluster {}: server must be an https:// address",
            shown(cluster)
        ));
    }
    Ok(())
}

/// A name from the kubeconfig as it appears in a message: at most 63
/// characters, control characters as `?` (the status is a tenant's to read).
fn shown(name: &str) -> String {
    name.chars()
        .take(63)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Argo CD's cluster Secret `config` (declarative setup). Fields it may
/// carry that run something (execProviderConfig, awsAuthConfig) are refused.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ArgoConfig {
    bearer_token: Option<String>,
    username: Option<String>,
    password: Option<String>,
    #[serde(default)]
    tls_client_config: ArgoTls,
    exec_provider_config: Option<serde_json::Value>,
    aws_auth_config: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ArgoTls {
    #[serde(default)]
    insecure: bool,
    server_name: Option<String>,
    ca_data: Option<String>,
    cert_data: Option<String>,
    key_data: Option<String>,
}

fn argocd(server: &str, config: &str, allow_insecure: bool) -> Result<Kubeconfig, String> {
    let c: ArgoConfig = serde_json::from_str(config).map_err(|e| {
        format!(
            "the Secret's key config is not Argo CD's cluster config (JSON, at line {} column {})",
            e.line(),
            e.column()
        )
    })?;
    if c.exec_provider_config.is_some() {
        return Err("config.execProviderConfig is refused (it would run a command on the controller's machine); use bearerToken or client certificates".into());
    }
    if c.aws_auth_config.is_some() {
        return Err("config.awsAuthConfig is refused (it would run a command on the controller's machine); use bearerToken or client certificates".into());
    }
    if c.tls_client_config.insecure && !allow_insecure {
        return Err("config.tlsClientConfig.insecure is refused (anyone on the way could take the credentials and the copies); use caData, or start the controller with --allow-insecure-downstream-tls".into());
    }
    let name = "downstream".to_string();
    Ok(Kubeconfig {
        clusters: vec![NamedCluster {
            name: name.clone(),
            cluster: Some(Cluster {
                server: Some(server.trim().to_string()),
                insecure_skip_tls_verify: c.tls_client_config.insecure.then_some(true),
                certificate_authority_data: c.tls_client_config.ca_data,
                tls_server_name: c.tls_client_config.server_name,
                ..Default::default()
            }),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: name.clone(),
            auth_info: Some(AuthInfo {
                token: c.bearer_token.map(Into::into),
                username: c.username,
                password: c.password.map(Into::into),
                client_certificate_data: c.tls_client_config.cert_data,
                client_key_data: c.tls_client_config.key_data.map(Into::into),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: name.clone(),
            context: Some(Context {
                cluster: name.clone(),
                user: Some(name.clone()),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        current_context: Some(name),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(k: &str, v: &str) -> BTreeMap<String, Vec<u8>> {
        BTreeMap::from([(k.to_string(), v.as_bytes().to_vec())])
    }

    const GOOD: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: down
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: "Q0E="}
users:
- name: sa
  user: {token: "secret-token-value"}
contexts:
- name: down
  context: {cluster: down, user: sa}
current-context: down
"#;

    #[test]
    fn an_inline_kubeconfig_is_accepted() {
        let k = parse(
            KubeconfigFormat::Kubeconfig,
            "value",
            &data("value", GOOD),
            false,
        )
        .unwrap();
        assert_eq!(k.current_context.as_deref(), Some("down"));
    }

    #[test]
    fn commands_and_files_are_refused_and_errors_never_quote_the_secret() {
        let cases = [
            (
                "user: {token: \"secret-token-value\"}",
                "user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/touch, args: [/tmp/pwned]}}",
                "exec is refused",
            ),
            (
                "user: {token: \"secret-token-value\"}",
                "user: {auth-provider: {name: gcp, config: {cmd-path: /bin/true}}}",
                "auth-provider is refused",
            ),
            (
                "user: {token: \"secret-token-value\"}",
                "user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}",
                "tokenFile is refused",
            ),
            (
                "user: {token: \"secret-token-value\"}",
                "user: {client-certificate: /etc/cert.pem, client-key-data: S0VZ}",
                "client-certificate is refused",
            ),
            (
                "certificate-authority-data: \"Q0E=\"",
                "certificate-authority: /etc/ssl/ca.pem",
                "certificate-authority is refused",
            ),
            (
                "https://127.0.0.1:6443",
                "ftp://127.0.0.1:6443",
                "server must be an https",
            ),
            (
                "certificate-authority-data: \"Q0E=\"",
                "insecure-skip-tls-verify: true",
                "insecure-skip-tls-verify is refused",
            ),
            (
                "certificate-authority-data: \"Q0E=\"",
                "proxy-url: \"http://127.0.0.1:3128\"",
                "proxy-url is refused",
            ),
            (
                "token: \"secret-token-value\"",
                "token: \"secret-token-value\\nX-Injected: 1\"",
                "line break",
            ),
            ("current-context: down", "", "current-context"),
            (
                "https://127.0.0.1:6443",
                "http://127.0.0.1:6443",
                "server must be an https",
            ),
        ];
        for (from, to, expect) in cases {
            let text = GOOD.replace(from, to);
            assert_ne!(text, GOOD, "{from}");
            let e = parse(
                KubeconfigFormat::Kubeconfig,
                "value",
                &data("value", &text),
                false,
            )
            .unwrap_err();
            assert!(e.contains(expect), "{to}: {e}");
            assert!(!e.contains("secret-token-value"), "{e}");
        }
        let e = parse(
            KubeconfigFormat::Kubeconfig,
            "value",
            &data("value", "secret-token-value: ["),
            false,
        )
        .unwrap_err();
        assert!(
            e.contains("not a kubeconfig") && !e.contains("secret-token"),
            "{e}"
        );
        let e = parse(
            KubeconfigFormat::Kubeconfig,
            "kubeconfig",
            &data("value", GOOD),
            false,
        )
        .unwrap_err();
        assert_eq!(e, "the Secret has no key kubeconfig");
    }

    /// The attack: the kind of a parse error was read from its text (does
    /// it say "line"?), and a message without a place that quotes a word
    /// of the input ("pipeline") was taken for a syntax error. Its place
    /// decides; the texts of placed errors are unchanged.
    #[test]
    fn a_parse_error_is_told_by_its_place_not_by_its_words() {
        use serde::de::Error as _;
        let unplaced = serde_saphyr::Error::custom("unknown field `pipeline`");
        assert_eq!(unplaced.location(), None);
        assert_eq!(shape_of(&unplaced), "unexpected fields");
        for (text, why) in [
            ("clusters: [", "unclosed"),
            ("- 1\n- 2\n", "not a mapping"),
            ("clusters:\n- cluster: {server: x}\n", "missing name"),
            ("clusters: 5\n", "wrong type"),
        ] {
            let e = from_yaml(text).unwrap_err();
            assert_eq!(e, "unreadable YAML", "{why}");
        }
    }

    /// The hostile corpus (`testdata/hostile/kubeconfig/`): kubeconfigs
    /// (`<case>.yaml`, under the key `value`) and Argo CD cluster Secrets'
    /// data (`<case>.json`), each ending as `<case>.expect` says (`ok`, or
    /// `error: <text>` with that text in the error): parsed, checked and, if
    /// accepted, made into a client, with no panic and no echo of the token
    /// every case carries.
    #[tokio::test]
    async fn the_hostile_corpus_is_refused_with_clear_errors_and_no_panic() {
        const TOKEN: &str = "TOKEN-SENTINEL";
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/hostile/kubeconfig");
        let mut cases: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "expect"))
            .collect();
        cases.sort();
        assert!(cases.len() >= 25, "{} cases", cases.len());
        // (case, format, Secret data, expected)
        type Case = (String, KubeconfigFormat, BTreeMap<String, Vec<u8>>, String);
        let mut inputs: Vec<Case> = cases
            .iter()
            .map(|expect| {
                let name = expect.file_stem().unwrap().to_string_lossy().to_string();
                let want = std::fs::read_to_string(expect)
                    .unwrap()
                    .trim_end()
                    .to_string();
                let yaml = expect.with_extension("yaml");
                if yaml.exists() {
                    let text = std::fs::read(&yaml).unwrap();
                    (
                        name,
                        KubeconfigFormat::Kubeconfig,
                        BTreeMap::from([("value".to_string(), text)]),
                        want,
                    )
                } else {
                    let json: BTreeMap<String, String> = serde_json::from_slice(
                        &std::fs::read(expect.with_extension("json")).unwrap(),
                    )
                    .unwrap();
                    let data = json.into_iter().map(|(k, v)| (k, v.into_bytes())).collect();
                    (name, KubeconfigFormat::ArgoCD, data, want)
                }
            })
            .collect();
        // Beyond what a Secret holds.
        inputs.push((
            "larger-than-a-secret".into(),
            KubeconfigFormat::Kubeconfig,
            data("value", &format!("{TOKEN}{}", " ".repeat(MAX_TEXT))),
            "error: larger than 1 MiB".into(),
        ));
        let mut wrong = Vec::new();
        for (name, format, data, want) in inputs {
            let parsed = std::panic::catch_unwind(|| parse(format, "value", &data, false));
            let outcome = match parsed {
                Err(_) => Err(format!("{name}: parse panicked")),
                Ok(Err(e)) => Ok(Err(e)),
                Ok(Ok(kc)) => match tokio::spawn(super::super::client_for(
                    kc,
                    std::time::Duration::from_secs(1),
                ))
                .await
                {
                    Err(_) => Err(format!("{name}: building the client panicked")),
                    Ok(r) => Ok(r.map(drop)),
                },
            };
            let got = match outcome {
                Err(panic) => {
                    wrong.push(panic);
                    continue;
                }
                Ok(got) => got,
            };
            if let Err(e) = &got
                && (e.contains(TOKEN) || e.chars().any(char::is_control))
            {
                wrong.push(format!(
                    "{name}: the error echoes the token or a control character: {e:?}"
                ));
            }
            match (want.strip_prefix("error: "), &got) {
                (None, Ok(())) => {}
                (Some(text), Err(e)) if e.contains(text) => {}
                _ => wrong.push(format!("{name}: expected {want:?}, got {got:?}")),
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn skipping_the_certificate_check_needs_the_controllers_flag() {
        let insecure = GOOD.replace(
            "certificate-authority-data: \"Q0E=\"",
            "insecure-skip-tls-verify: true",
        );
        let d = data("value", &insecure);
        assert!(parse(KubeconfigFormat::Kubeconfig, "value", &d, false).is_err());
        assert!(parse(KubeconfigFormat::Kubeconfig, "value", &d, true).is_ok());
        let mut argo = data("server", "https://10.0.0.5:6443");
        argo.insert(
            "config".into(),
            br#"{"bearerToken":"tok","tlsClientConfig":{"insecure":true}}"#.to_vec(),
        );
        let e = parse(KubeconfigFormat::ArgoCD, "", &argo, false).unwrap_err();
        assert!(e.contains("insecure is refused"), "{e}");
        assert!(parse(KubeconfigFormat::ArgoCD, "", &argo, true).is_ok());
    }

    #[test]
    fn argocd_cluster_secrets_are_read_and_their_plugins_refused() {
        let mut d = data("server", "https://10.0.0.5:6443");
        d.insert(
            "config".into(),
            br#"{"bearerToken":"tok","tlsClientConfig":{"caData":"Q0E=","insecure":false}}"#
                .to_vec(),
        );
        let k = parse(KubeconfigFormat::ArgoCD, "ignored", &d, false).unwrap();
        let c = k.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(c.server.as_deref(), Some("https://10.0.0.5:6443"));
        assert_eq!(c.certificate_authority_data.as_deref(), Some("Q0E="));
        assert!(k.auth_infos[0].auth_info.as_ref().unwrap().token.is_some());
        d.insert(
            "config".into(),
            br#"{"execProviderConfig":{"command":"argocd-k8s-auth"}}"#.to_vec(),
        );
        let e = parse(KubeconfigFormat::ArgoCD, "ignored", &d, false).unwrap_err();
        assert!(e.contains("execProviderConfig is refused"), "{e}");
        d.insert(
            "config".into(),
            br#"{"awsAuthConfig":{"clusterName":"x"}}"#.to_vec(),
        );
        let e = parse(KubeconfigFormat::ArgoCD, "ignored", &d, false).unwrap_err();
        assert!(e.contains("awsAuthConfig is refused"), "{e}");
    }
}
