//! Which audiences a ServiceAccount token must never be requested for: those
//! the kube-apiserver accepts. A token of the controller's ServiceAccount
//! for such an audience is a credential for the apiserver, with every right
//! of the controller; whoever can write a ClusterVaultConnection (its
//! `auth.kubernetes.audience`) and point it at a server of theirs would
//! receive it.
//!
//! Known from: the `aud` claim of the controller's own credential (its
//! ServiceAccount token in a pod, or the kubeconfig's token), the issuer the
//! apiserver publishes (`/.well-known/openid-configuration`, the default API
//! audience), and the usual defaults. A token issued for another audience is
//! checked again: its `aud` claim must be exactly the audience asked for.

use std::path::Path;

/// Audiences a default cluster accepts (the issuer `--service-account-issuer`
/// is the default `--api-audiences`).
const USUAL: &[&str] = &[
    "https://kubernetes.default.svc",
    "https://kubernetes.default.svc.cluster.local",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "https://kubernetes.default",
    "kubernetes",
    "api",
];

/// The in-pod ServiceAccount token.
const POD_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// How audiences are compared: trimmed, without a trailing '/', any case.
fn key(aud: &str) -> String {
    aud.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Whether a token for `audience` would be an apiserver credential: empty
/// (the apiserver's own audiences by default), or one of `known`.
pub fn refused(audience: &str, known: &[String]) -> bool {
    let a = key(audience);
    a.is_empty() || USUAL.iter().any(|u| key(u) == a) || known.iter().any(|k| key(k) == a)
}

/// The `aud` claim of a JWT (not verified: only to compare), empty if it
/// cannot be read.
pub fn audiences_of(jwt: &str) -> Vec<String> {
    let Some(payload) = jwt.trim().split('.').nth(1) else {
        return Vec::new();
    };
    let Some(bytes) = base64url(payload) else {
        return Vec::new();
    };
    let Ok(claims) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    match &claims["aud"] {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether an issued token is for exactly `audience`.
pub fn issued_for(jwt: &str, audience: &str) -> bool {
    audiences_of(jwt) == [audience]
}

fn base64url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The audiences of the controller's own credential: the in-pod token, and
/// the token of the kubeconfig it was started with (if any).
pub fn own(kubeconfig: Option<&Path>) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(t) = std::fs::read_to_string(POD_TOKEN) {
        found.extend(audiences_of(&t));
    }
    if let Some(t) = kubeconfig_token(kubeconfig) {
        found.extend(audiences_of(&t));
    }
    found
}

fn kubeconfig_token(path: Option<&Path>) -> Option<String> {
    use kube::config::Kubeconfig;
    use secrecy::ExposeSecret;
    let kc = match path {
        Some(p) => Kubeconfig::read_from(p).ok()?,
        None => Kubeconfig::read().ok()?,
    };
    let current = kc.current_context.as_deref()?;
    let user = kc
        .contexts
        .iter()
        .find(|c| c.name == current)?
        .context
        .as_ref()?
        .user
        .clone()?;
    let auth = kc
        .auth_infos
        .iter()
        .find(|a| a.name == user)?
        .auth_info
        .as_ref()?;
    if let Some(t) = &auth.token {
        return Some(t.expose_secret().to_string());
    }
    auth.token_file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
}

/// The issuer the apiserver publishes (its default API audience); None if
/// it cannot be read.
pub async fn issuer(kube: &kube::Client) -> Option<String> {
    let req = hyper::Request::get("/.well-known/openid-configuration")
        .body(Vec::new())
        .ok()?;
    let text = kube.request_text(req).await.ok()?;
    serde_json::from_str::<serde_json::Value>(&text).ok()?["issuer"]
        .as_str()
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let enc = |b: &[u8]| {
            const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            let mut out = String::new();
            for chunk in b.chunks(3) {
                let n = chunk.iter().fold(0u32, |a, &c| (a << 8) | u32::from(c))
                    << (8 * (3 - chunk.len()));
                for i in 0..=chunk.len() {
                    out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
                }
            }
            out
        };
        format!(
            "{}.{}.sig",
            enc(b"{\"alg\":\"RS256\"}"),
            enc(claims.as_bytes())
        )
    }

    #[test]
    fn apiserver_audiences_are_refused() {
        let known = audiences_of(&jwt(r#"{"aud":["https://my-issuer.example","api2"]}"#));
        assert_eq!(known, ["https://my-issuer.example", "api2"]);
        for a in [
            "",
            " ",
            "https://kubernetes.default.svc",
            "https://kubernetes.default.svc/",
            "HTTPS://Kubernetes.Default.Svc.cluster.local",
            "https://my-issuer.example",
            "api2",
        ] {
            assert!(refused(a, &known), "{a:?}");
        }
        for a in ["vault", "https://vault.example"] {
            assert!(!refused(a, &known), "{a:?}");
        }
        assert_eq!(
            audiences_of(&jwt(r#"{"aud":"vault"}"#)),
            vec!["vault".to_string()]
        );
        assert!(issued_for(&jwt(r#"{"aud":["vault"]}"#), "vault"));
        assert!(!issued_for(
            &jwt(r#"{"aud":["vault","https://kubernetes.default.svc"]}"#),
            "vault"
        ));
        assert!(audiences_of("not a jwt").is_empty());
    }
}
