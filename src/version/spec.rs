//! The version-defining part of a spec: every default applied, and every
//! check the CRD's schema makes, so that a spec which bypassed admission (or a
//! manifest given to the CLI) gets the same clear error.

use crate::api::rules::{SYMBOLS_INVISIBLE, forbidden_symbol, valid_data_key};
use crate::api::{
    CertificateUsage, Charset, DEFAULT_BCRYPT_COST, DEFAULT_JWKS_KEY, DEFAULT_SIGNING_KEEP,
    DEFAULT_SYMBOLS, Encoding, KeyAlgorithm, KeyEncoding, MAX_BCRYPT_COST, MAX_BCRYPT_PASSWORD,
    MAX_BYTES, MAX_KEYS, MAX_LENGTH, MAX_SIGNING_KEEP, MAX_SYMBOLS, MAX_TEMPLATE, MIN_BCRYPT_COST,
    PUBLIC_KEY_SUFFIX, RandomSecretSpec, SHORT_FORM_KEY, SHORT_FORM_LENGTH, SigningAlgorithm,
};
use std::collections::BTreeMap;

/// Largest total size of a Secret's data (the apiserver's limit).
pub const MAX_SECRET_BYTES: usize = 1_048_576;

/// One generated key, with every default applied: what it generates
/// ([`Kind`]) and what rotates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    pub kind: Kind,
    /// Overlap: the new version also holds the previous version's value
    /// under [`previous_key`] (random strings only).
    pub previous: bool,
    /// The key's own rotation token (`keys.<k>.rotation`; empty when unset).
    pub rotation: String,
    /// The key's own period in seconds (`keys.<k>.rotateEvery`).
    pub every: Option<u64>,
    /// With its own period: how many have passed since the RandomSecret's
    /// creation (set by `Version::at`).
    pub epoch: Option<u64>,
}

/// What a generated key holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A random string drawn from an alphabet.
    Chars(Chars),
    /// Random bytes, encoded.
    Bytes(Bytes),
    /// A random UUID, version 4.
    Uuid,
    /// A private key, and the JWKS of it and of the previous ones.
    SigningKey(SigningKey),
    /// An SSH key pair: the private key (OpenSSH), the public key derived.
    SshKeyPair(SshKeyPair),
    /// A private key (PEM), the public key derived.
    PrivateKey(PrivateKey),
    /// Derived: an htpasswd line of another key's password.
    Htpasswd(Htpasswd),
    /// Derived: a template rendered from the version's other values.
    Template(String),
    /// An X.509 certificate and its private key.
    Certificate(Certificate),
}

/// `keys.<k>.certificate`, defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    pub is_ca: bool,
    /// The key of keys whose CA signs it (None: self-signed).
    pub issuer: Option<String>,
    pub common_name: String,
    pub dns_names: Vec<String>,
    /// As written (each parses as an IP address).
    pub ip_addresses: Vec<String>,
    /// Sorted by name, each once.
    pub usages: Vec<CertificateUsage>,
    /// As written (or the default), and in seconds.
    pub duration: String,
    pub seconds: u64,
    pub key: KeyShape,
    /// The data key holding its private key.
    pub private_key: String,
    /// A data key that also gets the issuer's certificate.
    pub ca_certificate: Option<String>,
}

/// An asymmetric key's algorithm and size (0 for Ed25519), defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyShape {
    pub algorithm: KeyAlgorithm,
    pub size: u32,
}

/// `keys.<k>.sshKeyPair`, defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshKeyPair {
    pub shape: KeyShape,
    pub comment: String,
    /// The data key holding the public key.
    pub public_key: String,
}

/// `keys.<k>.privateKey`, defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivateKey {
    pub shape: KeyShape,
    pub encoding: KeyEncoding,
    /// The data key holding the public key.
    pub public_key: String,
}

/// `keys.<k>.htpasswd`, defaults applied (bcrypt is the only hash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Htpasswd {
    pub username: String,
    /// The key of keys whose value is the password.
    pub password_from: String,
    pub cost: u32,
}

impl Kind {
    /// Computed from the version's other values when it is made (never
    /// generated, never carried over).
    pub fn is_derived(&self) -> bool {
        matches!(self, Kind::Htpasswd(_) | Kind::Template(_))
    }

    /// What it is, for explanations and `status`.
    pub fn describe(&self) -> String {
        match self {
            Kind::Chars(c) => format!("random string, {} characters", c.length),
            Kind::Bytes(b) => format!("{} random bytes, {}", b.length, b.encoding.as_str()),
            Kind::Uuid => "UUID".into(),
            Kind::SigningKey(s) => format!("{} signing key", s.algorithm.as_str()),
            Kind::SshKeyPair(p) => format!("SSH key pair, {}", p.shape),
            Kind::PrivateKey(p) => format!("private key, {}, {}", p.shape, p.encoding.as_str()),
            Kind::Htpasswd(h) => format!("htpasswd line of keys.{}", h.password_from),
            Kind::Template(_) => "template".into(),
            Kind::Certificate(c) => format!(
                "{} certificate, {}, {}",
                if c.is_ca {
                    "CA"
                } else if c.issuer.is_some() {
                    "CA-signed"
                } else {
                    "self-signed"
                },
                c.key,
                c.duration
            ),
        }
    }
}

impl std::fmt::Display for KeyShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.algorithm {
            KeyAlgorithm::Ed25519 => f.write_str("ed25519"),
            a => write!(f, "{} {}", a.as_str(), self.size),
        }
    }
}

/// A random string: `length` characters of the charset and the symbols.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chars {
    pub length: usize,
    pub charset: Charset,
    /// The symbol characters added to the alphabet, as written; empty when symbols are off.
    pub symbols: String,
    /// Password rules: at least so many of each class.
    pub min: Minimums,
}

/// Password rules: how many characters of each class a value has at least.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minimums {
    pub digits: usize,
    pub lower: usize,
    pub upper: usize,
    pub symbols: usize,
}

/// The classes of characters that password rules count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Digit,
    Lower,
    Upper,
    /// Anything that is not an ASCII letter or digit.
    Symbol,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Digit, Class::Lower, Class::Upper, Class::Symbol];

    pub fn of(c: char) -> Class {
        match c {
            '0'..='9' => Class::Digit,
            'a'..='z' => Class::Lower,
            'A'..='Z' => Class::Upper,
            _ => Class::Symbol,
        }
    }

    /// The field that sets its minimum.
    pub fn field(self) -> &'static str {
        match self {
            Class::Digit => "minDigits",
            Class::Lower => "minLower",
            Class::Upper => "minUpper",
            Class::Symbol => "minSymbols",
        }
    }
}

impl Minimums {
    pub fn of(&self, class: Class) -> usize {
        match class {
            Class::Digit => self.digits,
            Class::Lower => self.lower,
            Class::Upper => self.upper,
            Class::Symbol => self.symbols,
        }
    }

    pub fn total(&self) -> usize {
        Class::ALL.iter().map(|c| self.of(*c)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

impl Chars {
    /// The alphabet: the charset's characters, then each symbol character
    /// not already in it (duplicates would bias the draw).
    pub fn alphabet(&self) -> Vec<char> {
        let mut out: Vec<char> = self.charset.chars().chars().collect();
        for c in self.symbols.chars() {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }
}

/// Random bytes (`keys.<k>.bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes {
    pub length: usize,
    pub encoding: Encoding,
}

impl Bytes {
    /// The size of the encoded value, in bytes.
    pub fn encoded_len(&self) -> usize {
        self.encoding
            .codec()
            .map_or(self.length, |codec| codec.encode_len(self.length))
    }
}

/// A signing key (`keys.<k>.signingKey`), defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigningKey {
    pub algorithm: SigningAlgorithm,
    /// Previous public keys the JWKS keeps after the current one.
    pub keep: usize,
    /// The data key holding the JWKS.
    pub jwks_key: String,
}

impl Generated {
    /// A key of `kind` that only `spec.rotation` (and `rotateEvery`) rotate.
    pub fn of(kind: Kind) -> Self {
        Generated {
            kind,
            previous: false,
            rotation: String::new(),
            every: None,
            epoch: None,
        }
    }

    /// The signing key it generates, if that is its kind.
    pub fn signing_key(&self) -> Option<&SigningKey> {
        match &self.kind {
            Kind::SigningKey(s) => Some(s),
            _ => None,
        }
    }

    /// The data keys it writes besides its own (its overlap pair, its
    /// JWKS, its public key), each with what it is.
    pub fn derived_keys(&self, key: &str) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        if self.previous {
            out.push((previous_key(key), "previous value"));
        }
        match &self.kind {
            Kind::SigningKey(s) => out.push((s.jwks_key.clone(), "JWKS, signingKey.jwksKey")),
            Kind::SshKeyPair(p) => {
                out.push((p.public_key.clone(), "public key, sshKeyPair.publicKey"))
            }
            Kind::PrivateKey(p) => {
                out.push((p.public_key.clone(), "public key, privateKey.publicKey"))
            }
            Kind::Certificate(c) => {
                out.push((c.private_key.clone(), "private key, certificate.privateKey"));
                if let Some(ca) = &c.ca_certificate {
                    out.push((
                        ca.clone(),
                        "issuer's certificate, certificate.caCertificate",
                    ));
                }
            }
            _ => {}
        }
        out
    }
}

/// Suffix of the data key that holds a key's previous value (overlap).
pub const PREVIOUS_SUFFIX: &str = ".previous";

/// The data key holding the previous version's value of `key` (overlap).
pub fn previous_key(key: &str) -> String {
    format!("{key}{PREVIOUS_SUFFIX}")
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
        "{0:?} is not a valid Secret data key: use letters, digits, '-', '_' and '.', at most 253 characters, not '.' or '..' and not starting with '..'"
    )]
    InvalidKey(String),
    #[error(
        "key {key:?} is written by keys.{by} (its {what}) and is also a key of keys, of static or of another generated key: rename one of them"
    )]
    DerivedKeyConflict {
        key: String,
        by: String,
        what: &'static str,
    },
    #[error("key {key:?}: length {length} is out of range: use 1 to {MAX_LENGTH}")]
    InvalidLength { key: String, length: i64 },
    #[error("key {key:?}: {why}")]
    InvalidSymbols { key: String, why: &'static str },
    #[error("keys.{key}: {why}")]
    InvalidSigningKey { key: String, why: String },
    #[error("keys.{key}: {why}")]
    InvalidGenerator { key: String, why: String },
    #[error(transparent)]
    InvalidTemplate(#[from] crate::template::TemplateError),
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
    #[error("rotation {0}")]
    InvalidRotation(&'static str),
    #[error("keys.{key}.rotation {why}")]
    InvalidKeyRotation { key: String, why: &'static str },
    #[error("type {secret_type} requires {needs}: add it to keys or static, or use another type")]
    TypeRequiresKeys {
        secret_type: String,
        needs: &'static str,
    },
    #[error(
        "the Secret would hold up to {0} bytes, more than the 1 MiB limit: shorten lengths or static values"
    )]
    TooLarge(usize),
    #[error(
        "rotateEvery {0:?} must be a duration such as 720h, 90m or 1h30m (at most 32 characters), {range}",
        range = crate::api::rules::period_range_text()
    )]
    InvalidRotateEvery(String),
    #[error(
        "keys.{key}.rotateEvery {every:?} must be a duration such as 720h, 90m or 1h30m (at most 32 characters), {range}",
        range = crate::api::rules::period_range_text()
    )]
    InvalidKeyRotateEvery { key: String, every: String },
    /// The field that makes it so: `rotateEvery` or `keys.<k>.rotateEvery`.
    #[error(
        "{0} makes the name depend on time: it cannot be computed offline (read status.secretName instead)"
    )]
    TimeBased(String),
}

impl From<super::period::InvalidPeriod> for SpecError {
    fn from(e: super::period::InvalidPeriod) -> Self {
        SpecError::InvalidRotateEvery(e.0)
    }
}

impl SpecError {
    /// The `Ready=False` condition reason for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            SpecError::NoKeys => "NoKeys",
            SpecError::BothForms => "ConflictingForms",
            SpecError::KeyConflict(_) | SpecError::DerivedKeyConflict { .. } => "KeyConflict",
            SpecError::InvalidKey(_) | SpecError::TooManyKeys(_) => "InvalidKey",
            SpecError::InvalidLength { .. } => "InvalidLength",
            SpecError::InvalidSymbols { .. } => "InvalidSymbols",
            SpecError::InvalidSigningKey { .. } => "InvalidSigningKey",
            SpecError::InvalidGenerator { .. } => "InvalidGenerator",
            SpecError::InvalidTemplate(_) => "InvalidTemplate",
            SpecError::InvalidBaseName { .. } => "InvalidSecretName",
            SpecError::NameTooLong(_) => "NameTooLong",
            SpecError::InvalidType(_) => "InvalidType",
            SpecError::InvalidRotation(_) | SpecError::InvalidKeyRotation { .. } => {
                "InvalidRotation"
            }
            SpecError::TypeRequiresKeys { .. } => "TypeRequiresKeys",
            SpecError::TooLarge(_) => "SecretTooLarge",
            SpecError::InvalidRotateEvery(_) | SpecError::InvalidKeyRotateEvery { .. } => {
                "InvalidRotateEvery"
            }
            SpecError::TimeBased(_) => "TimeBased",
        }
    }
}

/// Longest `rotation`, in characters (the CRD's maxLength, which counts characters).
pub const MAX_ROTATION: usize = 253;

fn check_symbols(key: &str, s: &str) -> Result<(), SpecError> {
    let why = if s.is_empty() {
        Some("symbolCharacters is empty: remove it or list at least one character")
    } else if s.chars().any(forbidden_symbol) {
        Some(SYMBOLS_INVISIBLE)
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

/// A random string's generator, checked (`key` names it in errors).
fn chars(
    key: &str,
    length: i64,
    charset: Charset,
    symbols: Option<bool>,
    chars: Option<&str>,
) -> Result<Chars, SpecError> {
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
    Ok(Chars {
        length: length as usize,
        charset,
        symbols,
        min: Minimums::default(),
    })
}

/// Password rules on `c`, checked: each minimum in range, a class the
/// alphabet has for each that is set, and no more than the length in all.
fn minimums(key: &str, c: &mut Chars, g: &crate::api::Generator) -> Result<(), SpecError> {
    let invalid = |why: String| SpecError::InvalidGenerator {
        key: key.to_string(),
        why,
    };
    let alphabet = c.alphabet();
    for (class, value) in
        Class::ALL
            .into_iter()
            .zip([g.min_digits, g.min_lower, g.min_upper, g.min_symbols])
    {
        let n = value.unwrap_or(0);
        if !(0..=MAX_LENGTH).contains(&n) {
            return Err(invalid(format!(
                "{} {n} is out of range: use 0 to {MAX_LENGTH}",
                class.field()
            )));
        }
        if n > 0 && !alphabet.iter().any(|ch| Class::of(*ch) == class) {
            return Err(invalid(format!(
                "{} {n}: the alphabet (charset {} and the symbols) has no such character: change the charset or the symbols, or remove {}",
                class.field(),
                c.charset.as_str(),
                class.field()
            )));
        }
        let n = n as usize;
        match class {
            Class::Digit => c.min.digits = n,
            Class::Lower => c.min.lower = n,
            Class::Upper => c.min.upper = n,
            Class::Symbol => c.min.symbols = n,
        }
    }
    if c.min.total() > c.length {
        return Err(invalid(format!(
            "minDigits + minLower + minUpper + minSymbols is {}, more than length {}: lower them or raise length",
            c.min.total(),
            c.length
        )));
    }
    Ok(())
}

/// What `keys.<key>` generates: exactly one of a random string, bytes, a
/// UUID and a signing key.
fn kind(key: &str, g: &crate::api::Generator) -> Result<Kind, SpecError> {
    let invalid = |why: &str| SpecError::InvalidGenerator {
        key: key.to_string(),
        why: why.to_string(),
    };
    let chosen = [
        g.length.is_some(),
        g.bytes.is_some(),
        g.uuid.is_some(),
        g.signing_key.is_some(),
        g.ssh_key_pair.is_some(),
        g.private_key.is_some(),
        g.htpasswd.is_some(),
        g.template.is_some(),
        g.certificate.is_some(),
    ];
    if chosen.iter().filter(|x| **x).count() != 1 {
        return Err(invalid(
            "set exactly one of length (a random string), bytes, uuid, signingKey, sshKeyPair, privateKey, htpasswd, template and certificate",
        ));
    }
    if let Some(length) = g.length {
        let mut c = chars(
            key,
            length,
            g.charset.unwrap_or_default(),
            g.symbols,
            g.symbol_characters.as_deref(),
        )?;
        minimums(key, &mut c, g)?;
        return Ok(Kind::Chars(c));
    }
    let string_only = [g.min_digits, g.min_lower, g.min_upper, g.min_symbols]
        .iter()
        .any(Option::is_some)
        || g.charset.is_some()
        || g.symbols.is_some()
        || g.symbol_characters.is_some();
    if string_only {
        return Err(invalid(
            "charset, symbols, symbolCharacters and minDigits, minLower, minUpper, minSymbols are for random strings (length): remove them",
        ));
    }
    if let Some(b) = &g.bytes {
        if !(1..=MAX_BYTES).contains(&b.length) {
            return Err(invalid(&format!(
                "bytes.length {} is out of range: use 1 to {MAX_BYTES}",
                b.length
            )));
        }
        return Ok(Kind::Bytes(Bytes {
            length: b.length as usize,
            encoding: b.encoding.unwrap_or_default(),
        }));
    }
    if g.uuid.is_some() {
        return Ok(Kind::Uuid);
    }
    if let Some(s) = &g.signing_key {
        return signing_key(key, s, g.previous.is_some()).map(Kind::SigningKey);
    }
    if g.previous.is_some()
        && (g.ssh_key_pair.is_some() || g.private_key.is_some() || g.certificate.is_some())
    {
        return Err(invalid(
            "previous is not for a key pair or certificate (sshKeyPair, privateKey, certificate): hand out the new public key or CA before using the new key instead",
        ));
    }
    if let Some(c) = &g.certificate {
        return certificate(key, c).map(Kind::Certificate);
    }
    let public_key = |name: &Option<String>| -> Result<String, SpecError> {
        let name = name
            .clone()
            .unwrap_or_else(|| format!("{key}{PUBLIC_KEY_SUFFIX}"));
        if valid_data_key(&name) {
            Ok(name)
        } else {
            Err(SpecError::InvalidKey(name))
        }
    };
    if let Some(p) = &g.ssh_key_pair {
        let comment = p.comment.clone().unwrap_or_default();
        if comment.chars().any(char::is_control) || comment.chars().count() > 253 {
            return Err(invalid(
                "sshKeyPair.comment must be at most 253 characters, without control characters",
            ));
        }
        return Ok(Kind::SshKeyPair(SshKeyPair {
            shape: key_shape(key, "sshKeyPair.bits", p.type_.unwrap_or_default(), p.bits)?,
            comment,
            public_key: public_key(&p.public_key)?,
        }));
    }
    if let Some(p) = &g.private_key {
        let encoding = p.encoding.unwrap_or_default();
        let fits = match encoding {
            KeyEncoding::Pkcs8 => true,
            KeyEncoding::Pkcs1 => p.algorithm == KeyAlgorithm::Rsa,
            KeyEncoding::Sec1 => p.algorithm == KeyAlgorithm::Ecdsa,
        };
        if !fits {
            return Err(invalid(&format!(
                "privateKey.encoding {} is not for {} keys: pkcs1 is for rsa, sec1 for ecdsa, pkcs8 (the default) for any",
                encoding.as_str(),
                p.algorithm.as_str()
            )));
        }
        return Ok(Kind::PrivateKey(PrivateKey {
            shape: key_shape(key, "privateKey.size", p.algorithm, p.size)?,
            encoding,
            public_key: public_key(&p.public_key)?,
        }));
    }
    if g.previous.is_some() || g.rotation.is_some() || g.rotate_every.is_some() {
        return Err(invalid(
            "htpasswd and template are derived from other keys: remove previous, rotation and rotateEvery (rotate the keys they read instead)",
        ));
    }
    if let Some(h) = &g.htpasswd {
        let user = &h.username;
        if user.is_empty()
            || user.chars().count() > 253
            || user.contains(':')
            || user.chars().any(char::is_control)
        {
            return Err(invalid(
                "htpasswd.username must be 1 to 253 characters, without ':' or control characters",
            ));
        }
        let cost = h.cost.unwrap_or(DEFAULT_BCRYPT_COST);
        if !(MIN_BCRYPT_COST..=MAX_BCRYPT_COST).contains(&cost) {
            return Err(invalid(&format!(
                "htpasswd.cost {cost} is out of range: use {MIN_BCRYPT_COST} to {MAX_BCRYPT_COST}"
            )));
        }
        return Ok(Kind::Htpasswd(Htpasswd {
            username: user.clone(),
            password_from: h.password_from.clone(),
            cost: cost as u32,
        }));
    }
    let text = g.template.clone().expect("one generator is chosen");
    if text.is_empty() || text.chars().count() > MAX_TEMPLATE {
        return Err(invalid(&format!(
            "template must be 1 to {MAX_TEMPLATE} characters"
        )));
    }
    Ok(Kind::Template(text))
}

/// `keys.<key>.certificate`, checked, its defaults applied.
fn certificate(key: &str, c: &crate::api::CertificateSpec) -> Result<Certificate, SpecError> {
    use crate::api::{CertificateUsage as U, DEFAULT_CA_DURATION, DEFAULT_CERT_DURATION};
    let invalid = |why: String| SpecError::InvalidGenerator {
        key: key.to_string(),
        why,
    };
    let is_ca = c.is_ca.unwrap_or(false);
    if is_ca && c.issuer.is_some() {
        return Err(invalid(
            "certificate: a CA here is self-signed (a root): remove issuer, or isCA".into(),
        ));
    }
    let common_name = c.common_name.clone().unwrap_or_default();
    if common_name.chars().count() > 64 || common_name.chars().any(char::is_control) {
        return Err(invalid(
            "certificate.commonName must be at most 64 characters, without control characters"
                .into(),
        ));
    }
    let dns_names = c.dns_names.clone().unwrap_or_default();
    let ip_addresses = c.ip_addresses.clone().unwrap_or_default();
    if dns_names.len() > 64 || ip_addresses.len() > 64 {
        return Err(invalid(
            "certificate: at most 64 dnsNames and 64 ipAddresses".into(),
        ));
    }
    if let Some(bad) = dns_names.iter().find(|d| !dns_san(d)) {
        return Err(invalid(format!(
            "certificate.dnsNames: {bad:?} is not a DNS name (lowercase letters, digits, '-' and '.', optionally starting with '*.')"
        )));
    }
    if let Some(bad) = ip_addresses
        .iter()
        .find(|a| a.parse::<std::net::IpAddr>().is_err())
    {
        return Err(invalid(format!(
            "certificate.ipAddresses: {bad:?} is not an IPv4 or IPv6 address"
        )));
    }
    if !is_ca && common_name.is_empty() && dns_names.is_empty() && ip_addresses.is_empty() {
        return Err(invalid(
            "a certificate that is not a CA needs a name: set commonName, dnsNames or ipAddresses"
                .into(),
        ));
    }
    let mut usages = c.usages.clone().unwrap_or_else(|| {
        if is_ca {
            vec![U::CertSign, U::CrlSign, U::DigitalSignature]
        } else {
            vec![U::DigitalSignature, U::KeyEncipherment, U::ServerAuth]
        }
    });
    let written = usages.len();
    usages.sort_by_key(|u| u.as_str());
    usages.dedup();
    if usages.len() != written {
        return Err(invalid("certificate.usages: list each usage once".into()));
    }
    if is_ca && !usages.contains(&U::CertSign) {
        return Err(invalid(
            "a CA signs certificates: its usages must include certSign".into(),
        ));
    }
    let duration = c.duration.clone().unwrap_or_else(|| {
        if is_ca {
            DEFAULT_CA_DURATION
        } else {
            DEFAULT_CERT_DURATION
        }
        .to_string()
    });
    let seconds = super::period::parse_period(&duration).map_err(|_| {
        invalid(format!(
            "certificate.duration {duration:?} must be a duration such as 2160h, 90m or 1h30m, at least 1m and at most 876000h"
        ))
    })?;
    let algorithm = c.key_algorithm.unwrap_or(KeyAlgorithm::Ecdsa);
    // As privateKey's sizes, but no P-521 (ring cannot sign with it).
    let key_shape = key_shape(key, "certificate.keySize", algorithm, c.key_size)
        .ok()
        .filter(|k| !(k.algorithm == KeyAlgorithm::Ecdsa && k.size == 521))
        .ok_or_else(|| {
            invalid(format!(
                "certificate.keySize {}: ecdsa takes 256 or 384 (default 256), rsa 2048, 3072 or 4096 (default 3072), ed25519 none",
                c.key_size.unwrap_or_default()
            ))
        })?;
    let private_key = match &c.private_key {
        Some(name) => name.clone(),
        None => match key.strip_suffix(".crt") {
            Some(stem) if !stem.is_empty() => format!("{stem}.key"),
            _ => format!("{key}.key"),
        },
    };
    for name in std::iter::once(&private_key).chain(c.ca_certificate.iter()) {
        if !valid_data_key(name) {
            return Err(SpecError::InvalidKey(name.clone()));
        }
    }
    Ok(Certificate {
        is_ca,
        issuer: c.issuer.clone(),
        common_name,
        dns_names,
        ip_addresses,
        usages,
        duration,
        seconds,
        key: key_shape,
        private_key,
        ca_certificate: c.ca_certificate.clone(),
    })
}

/// A DNS subject alternative name: lowercase labels of letters, digits and
/// '-' (not at either end), an optional leading `*.` (the CRD's rule).
fn dns_san(name: &str) -> bool {
    let name = name.strip_prefix("*.").unwrap_or(name);
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// An asymmetric key's size, checked, its default applied (`field` names
/// it in errors).
fn key_shape(
    key: &str,
    field: &str,
    algorithm: KeyAlgorithm,
    size: Option<i32>,
) -> Result<KeyShape, SpecError> {
    let sizes = algorithm.sizes();
    let size = match size {
        None => sizes.first().copied().unwrap_or(0),
        Some(n) if sizes.iter().any(|s| *s as i64 == n as i64) => n as u32,
        Some(n) => {
            return Err(SpecError::InvalidGenerator {
                key: key.to_string(),
                why: format!(
                    "{field} {n} is not a size of {} keys: ecdsa takes 256, 384 or 521 (default 256), rsa 2048, 3072 or 4096 (default 3072), ed25519 none",
                    algorithm.as_str()
                ),
            });
        }
    };
    Ok(KeyShape { algorithm, size })
}

/// `keys.<key>.signingKey`, checked, its defaults applied. `previous`: the
/// key also asks for overlap, which a signing key has in its JWKS instead.
fn signing_key(
    key: &str,
    s: &crate::api::SigningKeySpec,
    previous: bool,
) -> Result<SigningKey, SpecError> {
    let invalid_signing = |why: String| SpecError::InvalidSigningKey {
        key: key.to_string(),
        why,
    };
    if previous {
        return Err(invalid_signing(
            "previous is not for a signingKey: its previous public keys are in its JWKS (signingKey.keep)".into(),
        ));
    }
    let keep = s.keep.unwrap_or(DEFAULT_SIGNING_KEEP);
    if !(0..=MAX_SIGNING_KEEP).contains(&keep) {
        return Err(invalid_signing(format!(
            "signingKey.keep {keep} is out of range: use 0 to {MAX_SIGNING_KEEP}"
        )));
    }
    let jwks_key = s.jwks_key.as_deref().unwrap_or(DEFAULT_JWKS_KEY);
    if !valid_data_key(jwks_key) {
        return Err(SpecError::InvalidKey(jwks_key.to_string()));
    }
    Ok(SigningKey {
        algorithm: s.algorithm,
        keep: keep as usize,
        jwks_key: jwks_key.to_string(),
    })
}

/// A rotation token (`spec.rotation`, `keys.<k>.rotation`): what the CRD allows.
fn check_rotation(rotation: &str) -> Result<(), SpecError> {
    if rotation.chars().any(char::is_control) {
        return Err(SpecError::InvalidRotation(
            "must not contain control characters (C0, DEL or C1)",
        ));
    }
    if rotation.chars().count() > MAX_ROTATION {
        return Err(SpecError::InvalidRotation(
            "is longer than 253 characters: use a shorter token",
        ));
    }
    Ok(())
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
            if !valid_data_key(key) {
                return Err(SpecError::InvalidKey(key.to_string()));
            }
            let length = spec.length.unwrap_or(SHORT_FORM_LENGTH);
            let c = chars(
                key,
                length,
                Charset::Alphanumeric,
                Some(spec.special_char.unwrap_or(true)),
                None,
            )?;
            generated_map.insert(key.to_string(), Generated::of(Kind::Chars(c)));
        }
        for (key, g) in spec.keys.iter().flatten() {
            if !valid_data_key(key) {
                return Err(SpecError::InvalidKey(key.to_string()));
            }
            let mut generated = Generated::of(kind(key, g)?);
            generated.previous = g.previous.unwrap_or(false);
            generated.rotation = g.rotation.clone().unwrap_or_default();
            generated.every = match g.rotate_every.as_deref() {
                None => None,
                Some(text) => Some(super::period::parse_period(text).map_err(|_| {
                    SpecError::InvalidKeyRotateEvery {
                        key: key.clone(),
                        every: text.to_string(),
                    }
                })?),
            };
            check_rotation(&generated.rotation).map_err(|e| match e {
                SpecError::InvalidRotation(why) => SpecError::InvalidKeyRotation {
                    key: key.clone(),
                    why,
                },
                e => e,
            })?;
            generated_map.insert(key.clone(), generated);
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
        // Overlap's `<key>.previous` and a signing key's JWKS are data keys
        // of their own: valid, and no one else's.
        let mut derived = std::collections::BTreeSet::new();
        for (k, g) in &generated_map {
            for (d, what) in g.derived_keys(k) {
                if !valid_data_key(&d) {
                    return Err(SpecError::InvalidKey(d));
                }
                if generated_map.contains_key(&d)
                    || statics.contains_key(&d)
                    || !derived.insert(d.clone())
                {
                    return Err(SpecError::DerivedKeyConflict {
                        key: d,
                        by: k.clone(),
                        what,
                    });
                }
            }
        }
        check_derivations(&generated_map, &statics, &derived)?;
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
        let has = |k: &str| {
            generated_map.contains_key(k) || statics.contains_key(k) || derived.contains(k)
        };
        if let Some(needs) = missing_type_keys(&secret_type, has) {
            return Err(SpecError::TypeRequiresKeys { secret_type, needs });
        }
        let rotation = spec.rotation.clone().unwrap_or_default();
        check_rotation(&rotation)?;
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

    /// An upper bound of the Secret's data size in bytes, as the apiserver
    /// counts it against its 1 MiB limit: the values' bytes (not the keys).
    pub fn max_data_bytes(&self) -> usize {
        let gen_bytes: usize = self
            .generated
            .values()
            .map(|g| match &g.kind {
                Kind::Chars(c) => {
                    let widest = c.symbols.chars().map(char::len_utf8).max().unwrap_or(1);
                    // With overlap, the previous value too (of the same size when the spec kept it).
                    c.length * widest * if g.previous { 2 } else { 1 }
                }
                Kind::Bytes(b) => b.encoded_len() * if g.previous { 2 } else { 1 },
                // 36 characters.
                Kind::Uuid => 36 * if g.previous { 2 } else { 1 },
                Kind::SigningKey(s) => {
                    let (pem, jwk) = crate::generate::keypair::max_sizes(s.algorithm);
                    pem + jwks_bytes(jwk, s.keep)
                }
                Kind::SshKeyPair(p) => pair_bytes(p.shape) + 2 * p.comment.len(),
                Kind::PrivateKey(p) => pair_bytes(p.shape),
                // The user, ':', and the 60 characters of a bcrypt hash.
                Kind::Htpasswd(h) => h.username.len() + 62,
                // What it renders to depends on the values: its text here,
                // the real size when the version is made.
                Kind::Template(t) => t.len(),
                // The certificate (names, a signature) and its key; and the
                // issuer's certificate again under caCertificate.
                Kind::Certificate(c) => {
                    let names: usize = c
                        .dns_names
                        .iter()
                        .chain(&c.ip_addresses)
                        .map(|n| n.len() + 8)
                        .sum();
                    let one = 2048 + 2 * (names + c.common_name.len()) + 2 * pair_bytes(c.key);
                    one * if c.ca_certificate.is_some() { 2 } else { 1 }
                }
            })
            .sum();
        gen_bytes + self.statics.values().map(String::len).sum::<usize>()
    }
}

/// An upper bound of a key pair's private and public key, PEM or OpenSSH:
/// an RSA private key holds about five numbers of the modulus' size.
fn pair_bytes(shape: KeyShape) -> usize {
    match shape.algorithm {
        KeyAlgorithm::Rsa => (shape.size as usize / 8) * 8 + 1024,
        _ => 1024,
    }
}

/// What derived keys read, checked: an htpasswd line a random string of
/// keys that bcrypt reads whole; templates their inputs, without a cycle
/// (rendered here with stand-ins). `derived`: the data keys that
/// generated keys write besides their own.
fn check_derivations(
    generated: &BTreeMap<String, Generated>,
    statics: &BTreeMap<String, String>,
    derived: &std::collections::BTreeSet<String>,
) -> Result<(), SpecError> {
    for (key, g) in generated {
        let Kind::Certificate(c) = &g.kind else {
            continue;
        };
        let Some(issuer) = &c.issuer else { continue };
        if !matches!(generated.get(issuer).map(|g| &g.kind), Some(Kind::Certificate(ca)) if ca.is_ca)
        {
            return Err(SpecError::InvalidGenerator {
                key: key.clone(),
                why: format!(
                    "certificate.issuer names {issuer:?}, which is not a certificate of keys with isCA: true: name one"
                ),
            });
        }
    }
    for (key, g) in generated {
        let Kind::Htpasswd(h) = &g.kind else { continue };
        let invalid = |why: String| SpecError::InvalidGenerator {
            key: key.clone(),
            why,
        };
        let from = &h.password_from;
        match generated.get(from).map(|g| &g.kind) {
            Some(Kind::Chars(c)) => {
                let widest = c.symbols.chars().map(char::len_utf8).max().unwrap_or(1);
                if c.length * widest > MAX_BCRYPT_PASSWORD {
                    return Err(invalid(format!(
                        "htpasswd.passwordFrom names keys.{from}, which may be longer than the {MAX_BCRYPT_PASSWORD} bytes bcrypt reads: use length {MAX_BCRYPT_PASSWORD} or less (ASCII symbols)"
                    )));
                }
            }
            _ => {
                return Err(invalid(format!(
                    "htpasswd.passwordFrom names {from:?}, which is not a random string of keys (one with length): name one"
                )));
            }
        }
    }
    let templates = templates_of(generated);
    if templates.is_empty() {
        return Ok(());
    }
    // An overlap pair is absent from a first version: not readable.
    let readable = generated
        .iter()
        .filter(|(k, _)| !templates.contains_key(*k))
        .map(|(k, g)| {
            let raw = matches!(&g.kind, Kind::Bytes(b) if b.encoding == Encoding::Raw);
            (k, !raw)
        })
        .chain(
            derived
                .iter()
                .filter(|k| !k.ends_with(PREVIOUS_SUFFIX))
                .map(|k| (k, true)),
        );
    crate::template::check(&templates, readable, statics)?;
    Ok(())
}

/// The templates among `generated`: key to text.
pub fn templates_of(generated: &BTreeMap<String, Generated>) -> BTreeMap<String, String> {
    generated
        .iter()
        .filter_map(|(k, g)| match &g.kind {
            Kind::Template(t) => Some((k.clone(), t.clone())),
            _ => None,
        })
        .collect()
}

/// An upper bound of the size of a JWKS of `1 + keep` keys of at most `jwk` bytes each.
fn jwks_bytes(jwk: usize, keep: usize) -> usize {
    // `{"keys":[` ... `]}` and a comma between entries.
    12 + (jwk + 1) * (1 + keep)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Generator;
    use crate::version::Version;

    fn spec(yaml: &str) -> RandomSecretSpec {
        crate::gitops::yaml::read(yaml).unwrap()
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
            Generated::of(Kind::Chars(Chars {
                length: 32,
                charset: Charset::Alphanumeric,
                symbols: String::new(),
                min: Default::default(),
            }))
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

    /// `push` is never part of the version hash: adding it, or changing any
    /// of its fields, keeps the name.
    #[test]
    fn push_does_not_change_the_name() {
        let name = |yaml: &str| Version::of(&spec(yaml), "x").unwrap().secret_name;
        let plain = name("keys: {k: {length: 8}}");
        for push in [
            "push: {vault: {connectionRef: {name: a}}}",
            "push: {vault: {connectionRef: {name: b, kind: VaultConnection}, path: 'x/{name}', keys: [k], keyPrefix: P_, deletionPolicy: Delete}}",
            "push: {}",
            "push: {clusters: [{connectionRef: {name: east}}]}",
            "push: {clusters: [{connectionRef: {name: east}, namespace: apps, deletionPolicy: Delete}, {connectionRef: {name: west}}], vault: {connectionRef: {name: a}}}",
        ] {
            assert_eq!(
                name(&format!("keys: {{k: {{length: 8}}}}\n{push}")),
                plain,
                "{push}"
            );
        }
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

    #[test]
    fn generator_struct_round_trips() {
        let g = Generator {
            length: Some(5),
            charset: Some(Charset::Base64url),
            symbols: None,
            symbol_characters: None,
            previous: Some(true),
            rotation: Some("2".into()),
            rotate_every: Some("24h".into()),
            min_digits: Some(1),
            ..Default::default()
        };
        let back: Generator = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
        assert_eq!(g, back);
    }

    /// Password rules, bytes and UUIDs: defaults, and each impossible or
    /// contradictory combination refused with the field to fix.
    #[test]
    fn new_kinds_and_password_rules_are_checked() {
        let v = Version::of(
            &spec("keys: {b: {bytes: {length: 7}}, u: {uuid: {}}, p: {length: 9, symbols: true, minSymbols: 2}}"),
            "x",
        )
        .unwrap();
        let g = &v.spec.generated;
        assert_eq!(
            g["b"].kind,
            Kind::Bytes(Bytes {
                length: 7,
                encoding: Encoding::Base64
            })
        );
        assert_eq!(g["u"].kind, Kind::Uuid);
        let Kind::Chars(p) = &g["p"].kind else {
            panic!("a string")
        };
        assert_eq!(
            p.min,
            Minimums {
                symbols: 2,
                ..Default::default()
            }
        );
        // base64 of 7 bytes: 12 characters; a UUID: 36; the string at its widest.
        assert_eq!(v.spec.max_data_bytes(), 12 + 36 + 9);
        for (yaml, reason, says) in [
            (
                "keys: {k: {length: 4, minDigits: 3, minUpper: 2}}",
                "InvalidGenerator",
                "is 5, more than length 4",
            ),
            (
                "keys: {k: {length: 4, charset: alpha, minDigits: 1}}",
                "InvalidGenerator",
                "minDigits 1: the alphabet",
            ),
            (
                "keys: {k: {length: 4, charset: hex, minUpper: 1}}",
                "InvalidGenerator",
                "minUpper 1",
            ),
            (
                "keys: {k: {length: 4, minSymbols: 1}}",
                "InvalidGenerator",
                "minSymbols 1",
            ),
            (
                "keys: {k: {length: 4, charset: numeric, symbolCharacters: '12', minSymbols: 1}}",
                "InvalidGenerator",
                "minSymbols 1",
            ),
            (
                "keys: {k: {length: 4, minLower: -1}}",
                "InvalidGenerator",
                "minLower -1 is out of range",
            ),
            (
                "keys: {k: {bytes: {length: 0}}}",
                "InvalidGenerator",
                "bytes.length 0",
            ),
            (
                "keys: {k: {bytes: {length: 524289}}}",
                "InvalidGenerator",
                "bytes.length 524289",
            ),
            (
                "keys: {k: {bytes: {length: 4}, charset: hex}}",
                "InvalidGenerator",
                "are for random strings",
            ),
            (
                "keys: {k: {uuid: {}, minDigits: 1}}",
                "InvalidGenerator",
                "are for random strings",
            ),
            (
                "keys: {k: {uuid: {}, length: 4}}",
                "InvalidGenerator",
                "exactly one of",
            ),
            (
                "keys: {k: {rotation: '1'}}",
                "InvalidGenerator",
                "exactly one of",
            ),
        ] {
            let err = Version::of(&spec(yaml), "x").unwrap_err();
            assert_eq!(err.reason(), reason, "{yaml}: {err}");
            assert!(err.to_string().contains(says), "{yaml}: {err}");
        }
        // The ascii charset has every class: all four rules at once.
        assert!(Version::of(&spec("keys: {k: {length: 4, charset: ascii, minDigits: 1, minLower: 1, minUpper: 1, minSymbols: 1}}"), "x").is_ok());
    }

    #[test]
    fn signing_keys_take_their_defaults_and_their_jwks_key_is_nobody_elses() {
        let v = Version::of(&spec("keys: {sig: {signingKey: {algorithm: EdDSA}}}"), "x").unwrap();
        assert_eq!(
            v.spec.generated["sig"].kind,
            Kind::SigningKey(SigningKey {
                algorithm: SigningAlgorithm::EdDSA,
                keep: 1,
                jwks_key: "jwks.json".into(),
            })
        );
        // keep and jwksKey are in the name: they change the JWKS.
        let names: std::collections::HashSet<String> = [
            "keys: {sig: {signingKey: {algorithm: EdDSA}}}",
            "keys: {sig: {signingKey: {algorithm: EdDSA, keep: 2}}}",
            "keys: {sig: {signingKey: {algorithm: EdDSA, jwksKey: keys.json}}}",
            "keys: {sig: {signingKey: {algorithm: ES256}}}",
        ]
        .iter()
        .map(|y| Version::of(&spec(y), "x").unwrap().secret_name)
        .collect();
        assert_eq!(names.len(), 4);
        for (yaml, reason) in [
            (
                "keys: {sig: {signingKey: {algorithm: EdDSA, keep: 11}}}",
                "InvalidSigningKey",
            ),
            (
                "keys: {sig: {signingKey: {algorithm: EdDSA, keep: -1}}}",
                "InvalidSigningKey",
            ),
            (
                "keys: {sig: {length: 4, signingKey: {algorithm: EdDSA}}}",
                "InvalidGenerator",
            ),
            ("keys: {sig: {charset: hex}}", "InvalidGenerator"),
            (
                "keys: {sig: {charset: hex, signingKey: {algorithm: EdDSA}}}",
                "InvalidGenerator",
            ),
            (
                "keys: {sig: {previous: true, signingKey: {algorithm: EdDSA}}}",
                "InvalidSigningKey",
            ),
            (
                "keys: {sig: {signingKey: {algorithm: EdDSA, jwksKey: '..x'}}}",
                "InvalidKey",
            ),
            (
                "keys: {sig: {signingKey: {algorithm: EdDSA}}, jwks.json: {length: 4}}",
                "KeyConflict",
            ),
            (
                "keys: {sig: {signingKey: {algorithm: EdDSA}}}\nstatic: {jwks.json: x}",
                "KeyConflict",
            ),
            (
                "keys: {a: {signingKey: {algorithm: EdDSA}}, b: {signingKey: {algorithm: ES256}}}",
                "KeyConflict",
            ),
            (
                "keys: {a: {signingKey: {algorithm: EdDSA, jwksKey: b.previous}}, b: {length: 4, previous: true}}",
                "KeyConflict",
            ),
        ] {
            let err = Version::of(&spec(yaml), "x").unwrap_err();
            assert_eq!(err.reason(), reason, "{yaml}: {err}");
        }
        // Two signing keys, each with its own JWKS.
        assert!(Version::of(&spec("keys: {a: {signingKey: {algorithm: EdDSA}}, b: {signingKey: {algorithm: ES256, jwksKey: b.jwks}}}"), "x").is_ok());
    }

    /// Issue 12, point 10: what the CRD refuses, the controller (and the
    /// CLI, through the same function) refuses too, with a reason.
    #[test]
    fn gaps_between_the_crd_and_the_controller_are_closed() {
        let refused: &[(&str, &str)] = &[
            // The apiserver's IsConfigMapKey: not '.', not '..', not starting with '..'.
            ("keys: {'.': {length: 4}}", "InvalidKey"),
            ("keys: {'..': {length: 4}}", "InvalidKey"),
            ("keys: {'..x': {length: 4}}", "InvalidKey"),
            ("static: {'..': x}", "InvalidKey"),
            ("static: {'..data': x}", "InvalidKey"),
            ("key: '.'\nlength: 4", "InvalidKey"),
            ("key: '..x'", "InvalidKey"),
            // C1 control characters (and DEL) in rotation.
            (
                "keys: {k: {length: 4}}\nrotation: \"a\\u0085\"",
                "InvalidRotation",
            ),
            (
                "keys: {k: {length: 4}}\nrotation: \"\\u009b31m\"",
                "InvalidRotation",
            ),
            (
                "keys: {k: {length: 4}}\nrotation: \"\\u007f\"",
                "InvalidRotation",
            ),
            // The same for a key's own token.
            (
                "keys: {k: {length: 4, rotation: \"\\u009b31m\"}}",
                "InvalidRotation",
            ),
            (
                "keys: {k: {length: 4, rotation: \"a\\u0007\"}}",
                "InvalidRotation",
            ),
            // Invisible and bidi-control characters in symbolCharacters.
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\u200b\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\u202e\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\u2066\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\u200f\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\ufeff\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\u00ad\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\u0090\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\ufe0f\"}}",
                "InvalidSymbols",
            ),
            (
                "keys: {k: {length: 4, symbolCharacters: \"!\\U000E0041\"}}",
                "InvalidSymbols",
            ),
            // rotateEvery below the minimum, and longer than the CRD's maxLength.
            (
                "keys: {k: {length: 4}}\nrotateEvery: 59s",
                "InvalidRotateEvery",
            ),
            (
                "keys: {k: {length: 4}}\nrotateEvery: 0s",
                "InvalidRotateEvery",
            ),
            (
                "keys: {k: {length: 4}}\nrotateEvery: 000000000000000000000000000000001h",
                "InvalidRotateEvery",
            ),
        ];
        for (yaml, reason) in refused {
            let err = Version::of(&spec(yaml), "x").expect_err(yaml);
            assert_eq!(err.reason(), *reason, "{yaml}: {err}");
        }
        // rotation: at most 253 characters, as the CRD counts them (not bytes).
        let rotation = |r: String| spec(&format!("keys: {{k: {{length: 4}}}}\nrotation: \"{r}\""));
        assert!(Version::of(&rotation("é".repeat(253)), "x").is_ok());
        let err = Version::of(&rotation("a".repeat(254)), "x").unwrap_err();
        assert_eq!(err.reason(), "InvalidRotation");
        assert!(err.to_string().contains("253"), "{err}");
        // The documented maximum length is a Secret the apiserver takes: it
        // counts the values' bytes against 1 MiB, not the keys.
        let max = spec("keys: {a-long-key-name: {length: 1048576}}");
        assert!(Version::of(&max, "x").is_ok());
        let both = spec("keys: {k: {length: 1048575}}\nstatic: {s: x}");
        assert!(Version::of(&both, "x").is_ok());
        let over = spec("keys: {k: {length: 1048576}}\nstatic: {s: x}");
        assert_eq!(
            Version::of(&over, "x").unwrap_err().reason(),
            "SecretTooLarge"
        );
        // Keys and symbols that are fine stay fine.
        for ok in [
            "keys: {'.x': {length: 4}}",
            "keys: {'x..': {length: 4}}",
            "static: {'-': v1, '_': v2, 'a.b': v3}",
            "keys: {k: {length: 4, symbolCharacters: \"é€😀!\"}}",
            "keys: {k: {length: 4}}\nrotation: \"é\\u00a0tab-free ok\"",
        ] {
            assert!(Version::of(&spec(ok), "x").is_ok(), "{ok}");
        }
    }
}
