//! The version-defining part of a spec, its canonical serialization, and the
//! versioned Secret name `<secretName>-<hash>`. Pure functions, no IO.
//!
//! The canonical form is the contract shared with the Helm helper and the
//! kustomize function (README "How names are computed"); the fixture
//! `testdata/name-vectors.yaml` pins it. Changing it renames every version.

use crate::api::{
    Charset, DEFAULT_SYMBOLS, MAX_BASE_NAME, MAX_KEYS, MAX_LENGTH, MAX_OBJECT_NAME, MAX_SYMBOLS,
    RandomSecretSpec, SHORT_FORM_KEY, SHORT_FORM_LENGTH,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Largest total size of a Secret's data (the apiserver's limit).
pub const MAX_SECRET_BYTES: usize = 1_048_576;

/// One generated value, with every default applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    pub length: usize,
    pub charset: Charset,
    /// The symbol characters added to the alphabet, as written; empty when symbols are off.
    pub symbols: String,
}

/// What defines a version: everything that changes the Secret's data or type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionSpec {
    pub secret_type: String,
    pub rotation: String,
    pub generated: BTreeMap<String, Generated>,
    pub statics: BTreeMap<String, String>,
    /// With `rotateEvery`: how many periods have passed since the RandomSecret's creation.
    pub epoch: Option<u64>,
}

/// Why a spec cannot produce a version. Each message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("no key at all: set keys (generated values), key/length (the short form), or static")]
    NoKeys,
    #[error("use either keys or the short form (key, length, specialChar), not both")]
    BothForms,
    #[error("key {0:?} is both generated and static: remove it from one of them")]
    KeyConflict(String),
    #[error(
        "{0:?} is not a valid Secret data key: use letters, digits, '-', '_' and '.', at most 253 characters"
    )]
    InvalidKey(String),
    #[error("key {key:?}: length {length} is out of range: use 1 to {MAX_LENGTH}")]
    InvalidLength { key: String, length: i64 },
    #[error("key {key:?}: {why}")]
    InvalidSymbols { key: String, why: &'static str },
    #[error("too many keys ({0}): at most {MAX_KEYS} generated and {MAX_KEYS} static")]
    TooManyKeys(usize),
    #[error(
        "metadata.name {0:?} is longer than 63 characters (it is a label value on every version Secret): use a shorter name, and spec.secretName for a longer base name"
    )]
    NameTooLong(String),
    #[error("base name {name:?} {why}")]
    InvalidBaseName { name: String, why: &'static str },
    #[error("type {0:?} is not a valid Secret type: use letters, digits, '-', '_', '.' and '/'")]
    InvalidType(String),
    #[error("rotation must not contain control characters")]
    InvalidRotation,
    #[error("type {secret_type} requires {needs}: add it to keys or static, or use another type")]
    TypeRequiresKeys {
        secret_type: String,
        needs: &'static str,
    },
    #[error(
        "the Secret would hold up to {0} bytes, more than the 1 MiB limit: shorten lengths or static values"
    )]
    TooLarge(usize),
    #[error("rotateEvery {0:?} is not a duration of at least 1m (such as 720h, 90m or 1h30m)")]
    InvalidRotateEvery(String),
    #[error(
        "rotateEvery makes the name depend on time: it cannot be computed offline (read status.secretName instead)"
    )]
    TimeBased,
}

impl SpecError {
    /// The `Ready=False` condition reason for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            SpecError::NoKeys => "NoKeys",
            SpecError::BothForms => "ConflictingForms",
            SpecError::KeyConflict(_) => "KeyConflict",
            SpecError::InvalidKey(_) | SpecError::TooManyKeys(_) => "InvalidKey",
            SpecError::InvalidLength { .. } => "InvalidLength",
            SpecError::InvalidSymbols { .. } => "InvalidSymbols",
            SpecError::InvalidBaseName { .. } => "InvalidSecretName",
            SpecError::NameTooLong(_) => "NameTooLong",
            SpecError::InvalidType(_) => "InvalidType",
            SpecError::InvalidRotation => "InvalidRotation",
            SpecError::TypeRequiresKeys { .. } => "TypeRequiresKeys",
            SpecError::TooLarge(_) => "SecretTooLarge",
            SpecError::InvalidRotateEvery(_) => "InvalidRotateEvery",
            SpecError::TimeBased => "TimeBased",
        }
    }
}

fn valid_data_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 253
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
}

/// A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', each label
/// starting and ending with an alphanumeric.
fn dns_subdomain(name: &str) -> bool {
    name.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    })
}

fn check_symbols(key: &str, s: &str) -> Result<(), SpecError> {
    let why = if s.is_empty() {
        Some("symbolCharacters is empty: remove it or list at least one character")
    } else if s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        Some("symbolCharacters must not contain white space or control characters")
    } else if s.chars().count() > MAX_SYMBOLS {
        Some("symbolCharacters is longer than 128 characters")
    } else {
        None
    };
    match why {
        Some(why) => Err(SpecError::InvalidSymbols {
            key: key.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

fn generated(
    key: &str,
    length: i64,
    charset: Charset,
    symbols: Option<bool>,
    chars: Option<&str>,
) -> Result<Generated, SpecError> {
    if !valid_data_key(key) {
        return Err(SpecError::InvalidKey(key.to_string()));
    }
    if !(1..=MAX_LENGTH).contains(&length) {
        return Err(SpecError::InvalidLength {
            key: key.to_string(),
            length,
        });
    }
    if let Some(s) = chars {
        check_symbols(key, s)?;
        if symbols == Some(false) {
            return Err(SpecError::InvalidSymbols {
                key: key.to_string(),
                why: "symbolCharacters is set but symbols is false: remove one of them",
            });
        }
    }
    let on = symbols.unwrap_or(chars.is_some());
    let symbols = if on {
        chars.unwrap_or(DEFAULT_SYMBOLS).to_string()
    } else {
        String::new()
    };
    Ok(Generated {
        length: length as usize,
        charset,
        symbols,
    })
}

impl VersionSpec {
    /// Applies every default and checks everything the CRD's schema checks, so
    /// that a spec which bypassed admission (or a manifest given to the CLI)
    /// gets the same clear error.
    pub fn from_spec(spec: &RandomSecretSpec) -> Result<Self, SpecError> {
        let short = spec.key.is_some() || spec.length.is_some() || spec.special_char.is_some();
        if short && spec.keys.is_some() {
            return Err(SpecError::BothForms);
        }
        let mut generated_map = BTreeMap::new();
        if short {
            let key = spec.key.as_deref().unwrap_or(SHORT_FORM_KEY);
            let length = spec.length.unwrap_or(SHORT_FORM_LENGTH);
            let g = generated(
                key,
                length,
                Charset::Alphanumeric,
                Some(spec.special_char.unwrap_or(true)),
                None,
            )?;
            generated_map.insert(key.to_string(), g);
        }
        for (key, g) in spec.keys.iter().flatten() {
            let g = generated(
                key,
                g.length,
                g.charset.unwrap_or_default(),
                g.symbols,
                g.symbol_characters.as_deref(),
            )?;
            generated_map.insert(key.clone(), g);
        }
        let statics = spec.r#static.clone().unwrap_or_default();
        for k in statics.keys() {
            if !valid_data_key(k) {
                return Err(SpecError::InvalidKey(k.clone()));
            }
            if generated_map.contains_key(k) {
                return Err(SpecError::KeyConflict(k.clone()));
            }
        }
        if generated_map.len() > MAX_KEYS || statics.len() > MAX_KEYS {
            return Err(SpecError::TooManyKeys(
                generated_map.len().max(statics.len()),
            ));
        }
        if generated_map.is_empty() && statics.is_empty() {
            return Err(SpecError::NoKeys);
        }
        let secret_type = spec.r#type.clone().unwrap_or_else(|| "Opaque".to_string());
        if secret_type.is_empty()
            || secret_type.len() > 253
            || !secret_type
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._/".contains(&b))
        {
            return Err(SpecError::InvalidType(secret_type));
        }
        let has = |k: &str| generated_map.contains_key(k) || statics.contains_key(k);
        if let Some(needs) = missing_type_keys(&secret_type, has) {
            return Err(SpecError::TypeRequiresKeys { secret_type, needs });
        }
        let rotation = spec.rotation.clone().unwrap_or_default();
        if rotation.chars().any(char::is_control) {
            return Err(SpecError::InvalidRotation);
        }
        let v = VersionSpec {
            secret_type,
            rotation,
            generated: generated_map,
            statics,
            epoch: None,
        };
        let size = v.max_data_bytes();
        if size > MAX_SECRET_BYTES {
            return Err(SpecError::TooLarge(size));
        }
        Ok(v)
    }

    /// An upper bound of the Secret's data size in bytes.
    pub fn max_data_bytes(&self) -> usize {
        let gen_bytes: usize = self
            .generated
            .iter()
            .map(|(k, g)| {
                let widest = g.symbols.chars().map(char::len_utf8).max().unwrap_or(1);
                k.len() + g.length * widest
            })
            .sum();
        gen_bytes
            + self
                .statics
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

    /// The canonical serialization (README: "How names are computed").
    /// Strings are length-prefixed (`<bytes>:<text>`), so no escaping is needed
    /// and every tool produces the same bytes; maps are sorted by key bytes.
    pub fn canonical(&self) -> String {
        fn s(out: &mut String, v: &str) {
            out.push_str(&v.len().to_string());
            out.push(':');
            out.push_str(v);
        }
        let mut out = String::from("randomsecret.io/v1\n");
        out.push_str("type:");
        s(&mut out, &self.secret_type);
        out.push_str("\nrotation:");
        s(&mut out, &self.rotation);
        out.push('\n');
        for (k, g) in &self.generated {
            out.push_str("generate:");
            s(&mut out, k);
            out.push_str(&format!(":{}:{}:", g.length, g.charset.as_str()));
            s(&mut out, &g.symbols);
            out.push('\n');
        }
        for (k, v) in &self.statics {
            out.push_str("static:");
            s(&mut out, k);
            out.push(':');
            s(&mut out, v);
            out.push('\n');
        }
        if let Some(epoch) = self.epoch {
            out.push_str(&format!("epoch:{epoch}\n"));
        }
        out
    }

    /// The 10-character version hash.
    pub fn hash(&self) -> String {
        hash_canonical(&self.canonical())
    }
}

/// First 10 hex digits of SHA-256, with 0 1 3 a e mapped to g h k m t (as
/// kustomize's name suffixes do), so a suffix never spells a word or reads as a number.
pub fn hash_canonical(canonical: &str) -> String {
    let digest = Sha256::digest(canonical.as_bytes());
    digest
        .iter()
        .take(5)
        .flat_map(|b| [b >> 4, b & 0xf])
        .map(|n| match n {
            0 => 'g',
            1 => 'h',
            3 => 'k',
            0xa => 'm',
            0xe => 't',
            n => char::from_digit(u32::from(n), 16).expect("a nibble is a hex digit"),
        })
        .collect()
}

/// What the apiserver requires of the built-in Secret types, checked before it
/// refuses the Secret (`None`: nothing missing).
fn missing_type_keys(secret_type: &str, has: impl Fn(&str) -> bool) -> Option<&'static str> {
    match secret_type {
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            Some("a username or password key")
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => Some("an ssh-privatekey key"),
        "kubernetes.io/tls" if !(has("tls.crt") && has("tls.key")) => {
            Some("tls.crt and tls.key keys")
        }
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
            Some("a .dockerconfigjson key")
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => Some("a .dockercfg key"),
        "kubernetes.io/service-account-token" => {
            Some("a ServiceAccount (it is not a type for generated values)")
        }
        _ => None,
    }
}

/// Parses a duration such as `720h`, `90m` or `1h30m` into seconds (at least 60).
pub fn parse_period(text: &str) -> Result<u64, SpecError> {
    let bad = || SpecError::InvalidRotateEvery(text.to_string());
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' if !digits.is_empty() => {
                let n: u64 = digits.parse().map_err(|_| bad())?;
                let unit = match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                total = n
                    .checked_mul(unit)
                    .and_then(|x| total.checked_add(x))
                    .ok_or_else(bad)?;
                digits.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !digits.is_empty() || total < 60 {
        return Err(bad());
    }
    Ok(total)
}

/// Whether `c` can appear in a version hash.
pub fn hash_alphabet_contains(c: char) -> bool {
    matches!(
        c,
        'b' | 'c' | 'd' | 'f' | 'g' | 'h' | 'k' | 'm' | 't' | '2' | '4'..='9'
    )
}

/// The base name: `spec.secretName`, else the object's name, checked to leave
/// room for the suffix.
pub fn base_name<'a>(
    spec: &'a RandomSecretSpec,
    object_name: &'a str,
) -> Result<&'a str, SpecError> {
    let name = spec.secret_name.as_deref().unwrap_or(object_name);
    let why = if name.len() > MAX_BASE_NAME {
        Some(
            "is longer than 242 characters, which leaves no room for the version suffix: set a shorter spec.secretName",
        )
    } else if !dns_subdomain(name) {
        Some(
            "is not a DNS subdomain: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
        )
    } else {
        None
    };
    match why {
        Some(why) => Err(SpecError::InvalidBaseName {
            name: name.to_string(),
            why,
        }),
        None => Ok(name),
    }
}

/// Everything the controller and the CLI need to know about the current version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub spec: VersionSpec,
    /// `spec.secretName`, else the object's name.
    pub base: String,
    pub hash: String,
    /// `<base>-<hash>`
    pub secret_name: String,
}

impl Version {
    /// The version a spec names, as computed offline (the CLI and GitOps filters).
    pub fn of(spec: &RandomSecretSpec, object_name: &str) -> Result<Self, SpecError> {
        if spec.rotate_every.is_some() {
            return Err(SpecError::TimeBased);
        }
        Self::build(spec, object_name, None)
    }

    /// The version at time `now` (seconds) of a RandomSecret created at
    /// `created`: with `rotateEvery`, one more epoch per period. Also returns
    /// when the next epoch starts.
    pub fn at(
        spec: &RandomSecretSpec,
        object_name: &str,
        created: i64,
        now: i64,
    ) -> Result<(Self, Option<i64>), SpecError> {
        let Some(every) = spec.rotate_every.as_deref() else {
            return Ok((Self::build(spec, object_name, None)?, None));
        };
        let period = parse_period(every)? as i64;
        let epoch = (now - created).max(0) / period;
        let next = created + (epoch + 1) * period;
        Ok((
            Self::build(spec, object_name, Some(epoch as u64))?,
            Some(next),
        ))
    }

    fn build(
        spec: &RandomSecretSpec,
        object_name: &str,
        epoch: Option<u64>,
    ) -> Result<Self, SpecError> {
        if object_name.len() > MAX_OBJECT_NAME {
            return Err(SpecError::NameTooLong(object_name.to_string()));
        }
        let base = base_name(spec, object_name)?;
        let mut vspec = VersionSpec::from_spec(spec)?;
        vspec.epoch = epoch;
        let hash = vspec.hash();
        Ok(Version {
            secret_name: format!("{base}-{hash}"),
            base: base.to_string(),
            hash,
            spec: vspec,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Generator;

    fn spec(yaml: &str) -> RandomSecretSpec {
        crate::gitops::yaml::read(yaml).unwrap()
    }

    #[test]
    fn hash_is_ten_dns_safe_chars_without_vowels() {
        let h = hash_canonical("anything");
        assert_eq!(h.len(), 10);
        assert!(h.chars().all(|c| "bcdfghkmt2456789".contains(c)), "{h}");
        assert!(h.chars().all(hash_alphabet_contains));
        assert!(
            "aeijlnopqrsuvwxyz013"
                .chars()
                .all(|c| !hash_alphabet_contains(c))
        );
    }

    #[test]
    fn defaults_and_explicit_values_hash_the_same() {
        let a = spec("keys: {password: {length: 16}}");
        let b = spec(
            "keys: {password: {length: 16, charset: alphanumeric, symbols: false}}\ntype: Opaque\nrotation: ''",
        );
        assert_eq!(Version::of(&a, "x").unwrap(), Version::of(&b, "x").unwrap());
    }

    #[test]
    fn short_form_equals_its_keys_form() {
        let short = spec("key: pw\nlength: 20");
        let long = spec("keys: {pw: {length: 20, symbols: true}}");
        assert_eq!(
            Version::of(&short, "x").unwrap().hash,
            Version::of(&long, "x").unwrap().hash
        );
        let defaults = spec("specialChar: false");
        let v = Version::of(&defaults, "x").unwrap();
        assert_eq!(
            v.spec.generated["password"],
            Generated {
                length: 32,
                charset: Charset::Alphanumeric,
                symbols: String::new()
            }
        );
    }

    #[test]
    fn labels_annotations_history_do_not_change_the_name() {
        let a = spec("keys: {k: {length: 8}}");
        let b = spec(
            "keys: {k: {length: 8}}\nsecretLabels: {a: b}\nsecretAnnotations: {c: d}\nhistory: 3",
        );
        assert_eq!(
            Version::of(&a, "x").unwrap().secret_name,
            Version::of(&b, "x").unwrap().secret_name
        );
    }

    #[test]
    fn every_version_defining_field_changes_the_hash() {
        let base = "keys: {k: {length: 8}}\nstatic: {s: v}\n";
        let variants = [
            "keys: {k: {length: 9}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, charset: hex}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, symbols: true}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, symbolCharacters: '!'}}\nstatic: {s: v}\n",
            "keys: {k2: {length: 8}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8}}\nstatic: {s: w}\n",
            "keys: {k: {length: 8}}\nstatic: {s2: v}\n",
            "keys: {k: {length: 8}}\nstatic: {s: v}\nrotation: '2'\n",
            "keys: {k: {length: 8}}\nstatic: {s: v}\ntype: example.com/x\n",
        ];
        let h0 = Version::of(&spec(base), "x").unwrap().hash;
        let mut seen = std::collections::BTreeSet::from([h0]);
        for v in variants {
            assert!(
                seen.insert(Version::of(&spec(v), "x").unwrap().hash),
                "{v} collides"
            );
        }
    }

    #[test]
    fn canonical_form_is_length_prefixed_and_sorted() {
        let s = spec(
            "keys: {b: {length: 3, symbolCharacters: '<>&'}, a: {length: 1, charset: hex}}\nstatic: {z: \"é\\n\"}\nrotation: r1",
        );
        let v = VersionSpec::from_spec(&s).unwrap();
        assert_eq!(
            v.canonical(),
            "randomsecret.io/v1\ntype:6:Opaque\nrotation:2:r1\ngenerate:1:a:1:hex:0:\ngenerate:1:b:3:alphanumeric:3:<>&\nstatic:1:z:3:é\n\n"
        );
    }

    #[test]
    fn secret_name_defaults_to_object_name() {
        let v = Version::of(&spec("keys: {k: {length: 8}}"), "db-creds").unwrap();
        assert!(
            v.secret_name.starts_with("db-creds-") && v.secret_name.len() == "db-creds-".len() + 10
        );
        let v = Version::of(
            &spec("secretName: other\nkeys: {k: {length: 8}}"),
            "db-creds",
        )
        .unwrap();
        assert!(v.secret_name.starts_with("other-"));
    }

    #[test]
    fn bad_specs_are_refused_with_reasons() {
        let cases: &[(&str, &str)] = &[
            ("{}", "NoKeys"),
            ("keys: {}", "NoKeys"),
            ("keys: {k: {length: 1}}\nkey: k", "ConflictingForms"),
            ("keys: {k: {length: 0}}", "InvalidLength"),
            ("keys: {k: {length: -4}}", "InvalidLength"),
            ("keys: {k: {length: 1048577}}", "InvalidLength"),
            ("keys: {'a b': {length: 4}}", "InvalidKey"),
            ("static: {'a/b': x}", "InvalidKey"),
            ("keys: {k: {length: 4}}\nstatic: {k: x}", "KeyConflict"),
            ("length: 4\nstatic: {password: x}", "KeyConflict"),
            (
                "keys: {k: {length: 4, symbolCharacters: ''}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: 'a b'}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbols: false, symbolCharacters: '!'}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4}}\nsecretName: Upper",
                "InvalidSecretName",
            ),
            (
                "keys: {k: {length: 4}}\nsecretName: a..b",
                "InvalidSecretName",
            ),
            ("keys: {k: {length: 4}}\ntype: 'a b'", "InvalidType"),
            (
                "keys: {k: {length: 4}}\nrotation: \"a\\u0007\"",
                "InvalidRotation",
            ),
            (
                "keys: {k: {length: 4}}\ntype: kubernetes.io/basic-auth",
                "TypeRequiresKeys",
            ),
            (
                "keys: {tls.crt: {length: 4}}\ntype: kubernetes.io/tls",
                "TypeRequiresKeys",
            ),
            (
                "keys: {k: {length: 4}}\ntype: kubernetes.io/service-account-token",
                "TypeRequiresKeys",
            ),
            (
                "keys: {a: {length: 600000}, b: {length: 600000}}",
                "SecretTooLarge",
            ),
        ];
        for (yaml, reason) in cases {
            let err = Version::of(&spec(yaml), "x").expect_err(yaml);
            assert_eq!(err.reason(), *reason, "{yaml}: {err}");
        }
        let long = "a".repeat(243);
        let with_base =
            |base: &str| spec(&format!("secretName: {base}\nkeys: {{k: {{length: 4}}}}"));
        assert_eq!(
            Version::of(&with_base(&long), "x").unwrap_err().reason(),
            "InvalidSecretName"
        );
        assert!(Version::of(&with_base(&long[..242]), "x").is_ok());
        // The object's name is a label value: at most 63 characters.
        let keys = spec("keys: {k: {length: 4}}");
        assert_eq!(
            Version::of(&keys, &long[..64]).unwrap_err().reason(),
            "NameTooLong"
        );
        assert!(Version::of(&keys, &long[..63]).is_ok());
    }

    /// The shared fixture: every implementation of the name must agree with it.
    #[test]
    fn fixture_vectors() {
        #[derive(serde::Deserialize)]
        struct Vector {
            description: String,
            name: String,
            spec: RandomSecretSpec,
            canonical: String,
            #[serde(rename = "secretName")]
            secret_name: String,
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/name-vectors.yaml");
        let vectors: Vec<Vector> =
            crate::gitops::yaml::read(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(vectors.len() >= 10);
        for v in vectors {
            let got =
                Version::of(&v.spec, &v.name).unwrap_or_else(|e| panic!("{}: {e}", v.description));
            assert_eq!(got.spec.canonical(), v.canonical, "{}", v.description);
            assert_eq!(got.secret_name, v.secret_name, "{}", v.description);
        }
    }

    #[test]
    fn periods_parse_like_go_durations() {
        assert_eq!(parse_period("720h").unwrap(), 720 * 3600);
        assert_eq!(parse_period("1h30m").unwrap(), 5400);
        assert_eq!(parse_period("90m").unwrap(), 5400);
        for bad in ["", "30s", "10", "h", "1d", "1h-", "99999999999999999999h"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rotate_every_changes_the_name_once_per_period() {
        let s = spec("keys: {k: {length: 8}}\nrotateEvery: 1h");
        assert_eq!(Version::of(&s, "x").unwrap_err(), SpecError::TimeBased);
        let (a, next_a) = Version::at(&s, "x", 1000, 1000).unwrap();
        let (b, _) = Version::at(&s, "x", 1000, 1000 + 3599).unwrap();
        let (c, next_c) = Version::at(&s, "x", 1000, 1000 + 3600).unwrap();
        assert_eq!(a.secret_name, b.secret_name);
        assert_ne!(a.secret_name, c.secret_name);
        assert_eq!((next_a, next_c), (Some(4600), Some(8200)));
        // Without rotateEvery, the controller's version is the offline one.
        let plain = spec("keys: {k: {length: 8}}");
        assert_eq!(
            Version::at(&plain, "x", 1, 99999).unwrap().0,
            Version::of(&plain, "x").unwrap()
        );
    }

    #[test]
    fn generator_struct_round_trips() {
        let g = Generator {
            length: 5,
            charset: Some(Charset::Base64url),
            symbols: None,
            symbol_characters: None,
        };
        let back: Generator = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
        assert_eq!(g, back);
    }
}
