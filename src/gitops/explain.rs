//! `randomsecret name --explain` and `randomsecret diff`: the canonical form
//! behind a versioned name, line by line with the field each line comes
//! from, which fields changed the name between two manifests, and, key by
//! key, whether the new version keeps each generated value or rotates it
//! and why (`crate::version::carry`).
//!
//! Static values are part of the name but are never printed (they may be
//! credentials): a static line shows its key and length only.

use super::manifests::{self, Found, ManifestError};
use crate::version::carry::{self, Lineage};
use crate::version::{Class, Kind, Version, VersionSpec};
use std::fmt::Write;

/// One line of the canonical form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The spec field it comes from: `type`, `rotation`, `keys.<k>`, `static.<k>`.
    pub field: String,
    /// The line as hashed.
    pub canonical: String,
    /// The line as printed (a static value hidden).
    pub shown: String,
    /// The field's value as a user reads it (a static value hidden).
    pub value: String,
}

fn s(v: &str) -> String {
    format!("{}:{v}", v.len())
}

/// The lines of [`VersionSpec::canonical`] (after its first, the format's
/// version), each with its field. Joined, they are the canonical form (a test checks it).
pub fn lines(v: &VersionSpec) -> Vec<Line> {
    let mut out = vec![
        Line {
            field: "type".into(),
            canonical: format!("type:{}", s(&v.secret_type)),
            shown: format!("type:{}", s(&v.secret_type)),
            value: format!("{:?}", v.secret_type),
        },
        Line {
            field: "rotation".into(),
            canonical: format!("rotation:{}", s(&v.rotation)),
            shown: format!("rotation:{}", s(&v.rotation)),
            value: format!("{:?}", v.rotation),
        },
    ];
    for (k, g) in &v.generated {
        let line = crate::version::generate_line(k, g);
        let what = match &g.kind {
            Kind::Chars(c) => format!(
                "length {}, charset {}, {}{}",
                c.length,
                c.charset.as_str(),
                if c.symbols.is_empty() {
                    "no symbols".to_string()
                } else {
                    format!("symbols {:?}", c.symbols)
                },
                Class::ALL
                    .iter()
                    .filter(|class| c.min.of(**class) > 0)
                    .map(|class| format!(", {} {}", class.field(), c.min.of(*class)))
                    .collect::<String>()
            ),
            Kind::Bytes(b) => format!("bytes {}, {}", b.length, b.encoding.as_str()),
            Kind::Uuid => "uuid (version 4)".to_string(),
            Kind::SigningKey(sk) => format!(
                "signingKey {}, keep {}, jwksKey {:?}",
                sk.algorithm.as_str(),
                sk.keep,
                sk.jwks_key
            ),
            Kind::SshKeyPair(p) => format!(
                "sshKeyPair {}, comment {:?}, publicKey {:?}",
                p.shape, p.comment, p.public_key
            ),
            Kind::PrivateKey(p) => format!(
                "privateKey {}, {}, publicKey {:?}",
                p.shape,
                p.encoding.as_str(),
                p.public_key
            ),
            Kind::Htpasswd(h) => format!(
                "htpasswd bcrypt cost {}, username {:?}, password keys.{}",
                h.cost, h.username, h.password_from
            ),
            Kind::Certificate(c) => format!(
                "certificate{}{}, commonName {:?}, dnsNames {:?}, ipAddresses {:?}, usages {}, duration {}, key {}, privateKey {:?}{}",
                if c.is_ca { " (CA)" } else { "" },
                c.issuer
                    .as_ref()
                    .map(|i| format!(", issuer keys.{i}"))
                    .unwrap_or_default(),
                c.common_name,
                c.dns_names,
                c.ip_addresses,
                c.usages
                    .iter()
                    .map(|u| u.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                c.duration,
                c.key,
                c.private_key,
                c.ca_certificate
                    .as_ref()
                    .map(|n| format!(", caCertificate {n:?}"))
                    .unwrap_or_default()
            ),
            // Like a static value: the text may hold a literal credential.
            Kind::Template(t) => format!("template, {} bytes (text not shown)", t.len()),
        };
        let shown = match &g.kind {
            Kind::Template(t) => format!("generate:{}:template:{}:(text not shown)", s(k), t.len()),
            _ => line.clone(),
        };
        out.push(Line {
            field: format!("keys.{k}"),
            canonical: line,
            shown,
            value: format!(
                "{what}{}{}",
                if g.previous { ", previous" } else { "" },
                if g.rotation.is_empty() {
                    String::new()
                } else {
                    format!(", rotation {:?}", g.rotation)
                }
            ),
        });
    }
    for (k, val) in &v.statics {
        out.push(Line {
            field: format!("static.{k}"),
            canonical: format!("static:{}:{}", s(k), s(val)),
            shown: format!("static:{}:{}:(value not shown)", s(k), val.len()),
            value: format!("{} bytes (value not shown)", val.len()),
        });
    }
    if let Some(e) = v.epoch {
        let line = format!("epoch:{e}");
        out.push(Line {
            field: "rotateEvery".into(),
            canonical: line.clone(),
            shown: line,
            value: e.to_string(),
        });
    }
    out
}

/// `name --explain` for one version of `found`'s.
pub fn explain(found: &Found) -> String {
    let (object, v) = (&found.name, &found.version);
    let mut out = String::new();
    let _ = writeln!(out, "{}", v.secret_name);
    let (spec, everywhere) = match found.stamps {
        Some(_) => ("spec.template.spec", ", in every namespace it stamps"),
        None => ("spec", ""),
    };
    let _ = writeln!(
        out,
        "  {} {object}: base name {:?} ({spec}.secretName, else metadata.name), hash {}{everywhere}",
        found.kind(),
        v.base,
        v.hash
    );
    let _ = writeln!(
        out,
        "  hash: the first 10 hex digits of SHA-256 of this canonical form, with 0 1 3 a e written g h k m t:"
    );
    let _ = writeln!(out, "    randomsecret.io/v1");
    for l in lines(&v.spec) {
        let _ = writeln!(out, "    {:<40} # {}", l.shown, l.field);
    }
    let _ = writeln!(
        out,
        "  not in the hash: secretLabels, secretAnnotations, history, and anything outside the spec"
    );
    if !v.spec.generated.is_empty() {
        let _ = writeln!(
            out,
            "  values: a new version keeps each generated value of the version it supersedes, unless rotated:"
        );
        let rotation = token(&v.spec.rotation);
        for (k, g) in &v.spec.generated {
            if let Some(from) = derived_from(&g.kind) {
                let _ = writeln!(
                    out,
                    "    {k}: derived when the version is made, from {from}"
                );
                continue;
            }
            let _ = writeln!(
                out,
                "    {k}: rotated by spec.rotation ({rotation}), keys.{k}.rotation ({}), {}or a change of its {}",
                token(&g.rotation),
                if v.spec.epoch.is_some() {
                    "each rotateEvery period, "
                } else {
                    ""
                },
                match &g.kind {
                    Kind::Chars(_) => "length, charset, symbols or password rules".to_string(),
                    Kind::Bytes(_) => "length or encoding".to_string(),
                    Kind::Uuid => "kind".to_string(),
                    Kind::SigningKey(sk) => format!(
                        "algorithm; {} keeps its public key first and up to {} previous one{}",
                        sk.jwks_key,
                        sk.keep,
                        if sk.keep == 1 { "" } else { "s" }
                    ),
                    Kind::SshKeyPair(p) =>
                        format!("type, bits or comment; {} is its public key", p.public_key),
                    Kind::PrivateKey(p) => format!(
                        "algorithm, size or encoding; {} is its public key",
                        p.public_key
                    ),
                    Kind::Certificate(c) => format!(
                        "subject, names, usages, duration or key{}; renewal is a rotation",
                        c.issuer
                            .as_ref()
                            .map(|i| format!(", or a new CA in keys.{i}"))
                            .unwrap_or_default()
                    ),
                    Kind::Htpasswd(_) | Kind::Template(_) => unreachable!("derived, above"),
                }
            );
        }
    }
    out
}

/// What a derived key is computed from (`None`: not derived).
fn derived_from(kind: &Kind) -> Option<String> {
    match kind {
        Kind::Htpasswd(h) => Some(format!(
            "keys.{} (a new salt each version)",
            h.password_from
        )),
        Kind::Template(_) => Some("the values it reads".into()),
        _ => None,
    }
}

fn token(t: &str) -> String {
    if t.is_empty() {
        "unset".into()
    } else {
        format!("{t:?}")
    }
}

/// Per generated key of `new`, whether it keeps the value it has in `old`
/// or rotates, and why: `key: kept: generator unchanged`.
pub fn values(old: &Version, new: &Version) -> Vec<String> {
    let old = Lineage::of(&old.spec);
    carry::plan(Some(&old), &Lineage::of(&new.spec))
        .iter()
        .map(|(k, c)| format!("{k}: {}", c.why(k)))
        .collect()
}

/// The RandomSecrets of a stream, checked as `name` checks them.
pub fn named(input: &str) -> Result<Vec<Found>, ManifestError> {
    manifests::random_secrets_in(&super::yaml::read_documents(input)?)
}

/// `name --explain`: every RandomSecret of the stream, explained.
pub fn explain_stream(input: &str) -> Result<String, ManifestError> {
    Ok(named(input)?
        .iter()
        .map(explain)
        .collect::<Vec<_>>()
        .join("\n"))
}

/// Which fields differ between two versions, as `field: old -> new` lines.
pub fn changes(old: &Version, new: &Version) -> Vec<String> {
    let (a, b) = (lines(&old.spec), lines(&new.spec));
    let mut out = Vec::new();
    if old.base != new.base {
        out.push(format!("base name: {:?} -> {:?}", old.base, new.base));
    }
    for l in &a {
        match b.iter().find(|m| m.field == l.field) {
            None => out.push(format!("{}: removed (was {})", l.field, l.value)),
            Some(m) if m.canonical != l.canonical => {
                if l.field.starts_with("static.") {
                    out.push(format!("{}: value changed (values not shown)", l.field));
                } else {
                    out.push(format!("{}: {} -> {}", l.field, l.value, m.value));
                }
            }
            Some(_) => {}
        }
    }
    for m in b.iter().filter(|m| !a.iter().any(|l| l.field == m.field)) {
        out.push(format!("{}: added ({})", m.field, m.value));
    }
    out
}

/// `diff OLD NEW`: for each RandomSecret (by namespace and name), its name
/// in both, and the fields that changed it.
pub fn diff(old: &str, new: &str) -> Result<String, ManifestError> {
    Ok(diff_of(&named(old)?, &named(new)?))
}

/// [`diff`] of the RandomSecrets of two streams ([`named`]).
pub fn diff_of(old: &[Found], new: &[Found]) -> String {
    let key = |n: &Found| (n.kind(), n.namespace.clone(), n.name.clone());
    let title = |n: &Found| match &n.namespace {
        Some(ns) => format!("{} {ns}/{}", n.kind(), n.name),
        None => format!("{} {}", n.kind(), n.name),
    };
    let mut out = String::new();
    for o in old {
        match new.iter().find(|n| key(n) == key(o)) {
            None => {
                let _ = writeln!(
                    out,
                    "{}: only in the old manifests ({})",
                    title(o),
                    o.version.secret_name
                );
            }
            Some(n) if n.version.secret_name == o.version.secret_name => {
                let _ = writeln!(out, "{}: {} (unchanged)", title(o), o.version.secret_name);
            }
            Some(n) => {
                let _ = writeln!(
                    out,
                    "{}: {} -> {}",
                    title(o),
                    o.version.secret_name,
                    n.version.secret_name
                );
                for c in changes(&o.version, &n.version) {
                    let _ = writeln!(out, "  {c}");
                }
                let values = values(&o.version, &n.version);
                if !values.is_empty() {
                    let _ = writeln!(out, "  values of the new version:");
                }
                for v in values {
                    let _ = writeln!(out, "    {v}");
                }
            }
        }
    }
    for n in new.iter().filter(|n| !old.iter().any(|o| key(o) == key(n))) {
        let _ = writeln!(
            out,
            "{}: only in the new manifests ({})",
            title(n),
            n.version.secret_name
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = r#"
apiVersion: randomsecret.io/v1
kind: RandomSecret
metadata: {name: db}
spec:
  rotation: "1"
  keys: {password: {length: 32}, pin: {length: 4, charset: numeric}}
  static: {user: admin}
---
apiVersion: randomsecret.io/v1
kind: RandomSecret
metadata: {name: api, namespace: prod}
spec: {keys: {token: {length: 40}}}
"#;

    /// Overlap (`previous`), symbols, a Secret type and two statics.
    const OVERLAP: &str = r#"
apiVersion: randomsecret.io/v1
kind: RandomSecret
metadata: {name: cookie}
spec:
  type: example.com/cookie
  rotation: "7"
  keys: {key: {length: 24, previous: true}, salt: {length: 8, symbols: true}, pin: {length: 4, charset: numeric, previous: false}}
  static: {user: admin, host: db}
"#;

    /// The versions the canonical-form test checks: OLD and OVERLAP, and
    /// OVERLAP with `rotateEvery` (not computable offline: built at a time,
    /// three periods after its creation).
    fn versions() -> Vec<Version> {
        let mut out: Vec<Version> = named(OLD)
            .unwrap()
            .into_iter()
            .chain(named(OVERLAP).unwrap())
            .map(|n| n.version)
            .collect();
        let doc = &manifests::documents(OVERLAP).unwrap()[0];
        let mut spec: crate::api::RandomSecretSpec =
            serde_json::from_value(doc["spec"].clone()).unwrap();
        spec.rotate_every = Some("24h".into());
        let (timed, _) = Version::at(&spec, "cookie", 0, 3 * 86_400 + 5).unwrap();
        assert_eq!(timed.spec.epoch, Some(3));
        out.push(timed);
        out
    }

    #[test]
    fn lines_are_the_canonical_form() {
        let versions = versions();
        for v in &versions {
            let joined: String = lines(&v.spec)
                .iter()
                .map(|l| format!("{}\n", l.canonical))
                .collect();
            assert_eq!(format!("randomsecret.io/v1\n{joined}"), v.spec.canonical());
        }
        // The inputs reach every kind of line: the timed OVERLAP has them all.
        let all = lines(&versions.last().unwrap().spec);
        let line = |field: &str| all.iter().find(|l| l.field == field).cloned();
        assert_eq!(
            line("keys.key").unwrap().canonical,
            "generate:3:key:24:alphanumeric:0::previous"
        );
        assert!(line("keys.salt").unwrap().canonical.ends_with(&format!(
            ":{}:{}",
            crate::api::DEFAULT_SYMBOLS.len(),
            crate::api::DEFAULT_SYMBOLS
        )));
        assert_eq!(line("rotateEvery").unwrap().canonical, "epoch:3");
        assert_eq!(line("type").unwrap().value, "\"example.com/cookie\"");
    }

    #[test]
    fn explain_shows_the_form_without_static_values() {
        let text = explain_stream(OLD).unwrap();
        let names = manifests::versioned_names(OLD).unwrap();
        assert!(text.starts_with(&format!("{}\n", names[0])), "{text}");
        assert!(text.contains(&format!("\n{}\n", names[1])), "{text}");
        assert!(text.contains("rotation:1:1"), "{text}");
        assert!(text.contains("generate:3:pin:4:numeric:0:"), "{text}");
        assert!(text.contains("static:4:user:5:(value not shown)"), "{text}");
        assert!(!text.contains("admin"), "{text}");
    }

    #[test]
    fn diff_names_the_fields_that_changed_the_name() {
        let new = OLD
            .replace("rotation: \"1\"", "rotation: \"2\"")
            .replace("length: 4, charset: numeric", "length: 6, charset: numeric")
            .replace("user: admin", "user: root, host: db")
            .replace(
                "name: api, namespace: prod",
                "name: api, namespace: prod, labels: {a: b}",
            );
        let (o, n) = (
            manifests::versioned_names(OLD).unwrap(),
            manifests::versioned_names(&new).unwrap(),
        );
        let text = diff(OLD, &new).unwrap();
        let expected = format!(
            "RandomSecret db: {} -> {}\n  rotation: \"1\" -> \"2\"\n  keys.pin: length 4, charset numeric, no symbols -> length 6, charset numeric, no symbols\n  static.user: value changed (values not shown)\n  static.host: added (2 bytes (value not shown))\n  values of the new version:\n    password: rotated: rotation 1 -> 2\n    pin: rotated: rotation 1 -> 2\nRandomSecret prod/api: {} (unchanged)\n",
            o[0], n[0], o[1]
        );
        assert_eq!(text, expected, "\n{text}");
        assert!(!text.contains("root") && !text.contains("admin"));
    }

    #[test]
    fn diff_reports_added_and_removed_randomsecrets() {
        let only_api = OLD.split("---").nth(1).unwrap();
        let text = diff(OLD, only_api).unwrap();
        assert!(
            text.starts_with("RandomSecret db: only in the old manifests (db-"),
            "{text}"
        );
        let text = diff(only_api, OLD).unwrap();
        assert!(
            text.contains("RandomSecret db: only in the new manifests (db-"),
            "{text}"
        );
    }
}
