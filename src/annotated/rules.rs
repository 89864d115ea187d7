//! What an annotated Secret needs, decided from the object alone (pure): the
//! one parser of the annotations and the rules both paths (the controller's
//! patch and the admission webhook) obey.
//!
//! Rules that never bend:
//! - only a Secret labelled `randomsecret.io/managed: "true"` that asks for
//!   keys (`randomsecret.io/generate` or `randomsecret.io/type`, the original
//!   operator's `secret.a-cup-of.coffee/enable: "true"`, or mittwald's
//!   `secret-generator.v1.mittwald.de/autogenerate` or `/type`) is looked at;
//! - a listed key with a non-empty value is never overwritten, except by an
//!   explicit rotation (`randomsecret.io/rotate` differs from the token the
//!   last fill recorded in `randomsecret.io/rotated`);
//! - key pairs are made whole: an SSH private key and its public key (and a
//!   basic-auth `auth` line and its `password`) are generated together or
//!   not at all; when one has a value and the other not, neither is written
//!   and the Secret is reported ([`Refusal::IncompletePair`]);
//! - Secrets produced from a RandomSecret and immutable Secrets are never filled;
//! - on UPDATE, a listed key the new object lacks but the old object had is
//!   copied from the old one, never generated again (`kubectl replace` and
//!   `helm upgrade --force` cannot rotate silently); so is the recorded token.
//!   Only a key the old object managed (opted in, listing it) is copied: the
//!   PUT's response carries what was copied, so copying any other would hand
//!   its value to a user who may update Secrets but not read them;
//! - the same input gives the same plan (idempotent): after a fill, the
//!   plan of the result is `Complete`;
//! - an annotation under our prefixes that no rule knows (a typo such as
//!   `randomsecret.io/lenght`) is reported with the nearest valid key
//!   ([`unknown_annotations`]); it changes nothing else.
//!
//! No message ever holds a Secret value (annotation values are metadata and
//! may be quoted, shortened).

use super::kinds::{self, BasicAuth, GenerateError, Kind, Type};
use crate::api::rules::valid_data_key;
use crate::api::{
    Charset, DEFAULT_SYMBOLS, Encoding, KeyAlgorithm, LABEL_NAME, MAX_BCRYPT_PASSWORD, MAX_BYTES,
    MAX_KEYS, MAX_LENGTH,
};
use crate::version::{Bytes, Chars, KeyShape, MAX_ROTATION, MAX_SECRET_BYTES};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The prefix of every key of ours (annotations, labels, finalizers).
pub const PREFIX: &str = crate::api::PREFIX;
/// The opt-in label: every watch and the webhook's objectSelector select on it.
pub const MANAGED_LABEL: &str = crate::api::key!("managed");
/// The keys to fill, separated by commas.
pub const GENERATE: &str = crate::api::key!("generate");
/// What the keys get: `string` (default), `bytes`, `uuid`, `ssh-keypair`
/// or `basic-auth` ([`kinds::Type`]).
pub const TYPE: &str = crate::api::key!("type");
/// Length of each generated value: characters of a string (default
/// [`DEFAULT_LENGTH`]), bytes of `bytes`, characters of a basic-auth password.
pub const LENGTH: &str = crate::api::key!("length");
/// The alphabet: a CRD charset name (default alphanumeric).
pub const CHARSET: &str = crate::api::key!("charset");
/// `true` adds the default symbols to the alphabet (default false).
pub const SYMBOLS: &str = crate::api::key!("symbols");
/// How `bytes` are written: `raw`, `base64` (default), `base64url`,
/// `base32`, `hex`.
pub const ENCODING: &str = crate::api::key!("encoding");
/// An SSH key pair's algorithm: `ed25519` (default), `ecdsa`, `rsa`.
pub const ALGORITHM: &str = crate::api::key!("algorithm");
/// An SSH key's size: ecdsa 256 (default), 384, 521; rsa 3072 (default),
/// 2048, 4096.
pub const BITS: &str = crate::api::key!("bits");
/// A rotation token, set by the user: changing it regenerates every listed key.
pub const ROTATE: &str = crate::api::key!("rotate");
/// The rotation token of the last fill, recorded by randomsecret.
pub const ROTATED: &str = crate::api::key!("rotated");
pub const DEFAULT_LENGTH: usize = 32;
pub const DEFAULT_BYTES: usize = 32;

/// The original operator's annotations, read as aliases when the label is
/// present, with its defaults (from its source: `pkg/types/types.go` and
/// `pkg/secrets/secrets.go` of github.com/qjoly/RandomSecret).
pub mod alias {
    /// The prefix of the original operator's annotations.
    pub const PREFIX: &str = "secret.a-cup-of.coffee/";
    /// Must be exactly "true" (its `IsSecretManaged`).
    pub const ENABLE: &str = "secret.a-cup-of.coffee/enable";
    /// One key (default [`DEFAULT_KEY`]).
    pub const KEY: &str = "secret.a-cup-of.coffee/key";
    /// Default 32 (the same as ours).
    pub const LENGTH: &str = "secret.a-cup-of.coffee/length";
    /// Go's `strconv.ParseBool`; default true: symbols on, its symbols are
    /// our `DEFAULT_SYMBOLS`.
    pub const SPECIAL_CHAR: &str = "secret.a-cup-of.coffee/special-char";
    pub const DEFAULT_KEY: &str = "password";
    pub const DEFAULT_SPECIAL_CHAR: bool = true;
}

/// mittwald's kubernetes-secret-generator annotations, read as aliases when
/// the label is present, with its defaults (from its source, v3.4.1:
/// `pkg/controller/secret/{types,secret_controller,secret_string,secret_ssh,secret_basic_auth}.go`
/// and the flag defaults of `cmd/manager/main.go`).
pub mod mittwald {
    /// The prefix of mittwald's annotations.
    pub const PREFIX: &str = "secret-generator.v1.mittwald.de/";
    /// The keys of a `string` Secret, separated by commas.
    pub const AUTOGENERATE: &str = "secret-generator.v1.mittwald.de/autogenerate";
    /// `string` (default), `ssh-keypair` or `basic-auth`.
    pub const TYPE: &str = "secret-generator.v1.mittwald.de/type";
    /// A string's length in characters, or with the suffix `B` (or `b`)
    /// in bytes before encoding; an SSH key's RSA size in bits.
    pub const LENGTH: &str = "secret-generator.v1.mittwald.de/length";
    /// `base64` (default), `base64url`, `base32`, `hex`, `raw`.
    pub const ENCODING: &str = "secret-generator.v1.mittwald.de/encoding";
    /// The user of a basic-auth Secret (default `admin`).
    pub const BASIC_AUTH_USERNAME: &str = "secret-generator.v1.mittwald.de/basic-auth-username";
    /// Its markers on what it filled: read by nothing, never reported.
    pub const SECURE: &str = "secret-generator.v1.mittwald.de/secure";
    pub const GENERATED_AT: &str = "secret-generator.v1.mittwald.de/autogenerate-generated-at";
    /// Its one-shot regeneration: not read (see [`super::NOT_READ`]).
    pub const REGENERATE: &str = "secret-generator.v1.mittwald.de/regenerate";
    /// `--secret-length`'s default.
    pub const DEFAULT_LENGTH: usize = 40;
    /// `--ssh-key-length`'s default: its SSH keys are RSA of this size.
    pub const DEFAULT_SSH_BITS: u32 = 2048;
}

pub use crate::api::PURPOSE;

/// Every key under [`PREFIX`], [`alias::PREFIX`] or [`mittwald::PREFIX`]
/// the project defines: annotation mode's, and the labels, annotations and
/// finalizers of the other features, none of which is reported as unknown
/// on a Secret. A test checks that every such string in `src/` is listed
/// here (or in [`NOT_READ`]): add a new one.
pub const KNOWN: &[&str] = &[
    MANAGED_LABEL,
    GENERATE,
    TYPE,
    LENGTH,
    CHARSET,
    SYMBOLS,
    ENCODING,
    ALGORITHM,
    BITS,
    ROTATE,
    ROTATED,
    alias::ENABLE,
    alias::KEY,
    alias::LENGTH,
    alias::SPECIAL_CHAR,
    mittwald::AUTOGENERATE,
    mittwald::TYPE,
    mittwald::LENGTH,
    mittwald::ENCODING,
    mittwald::BASIC_AUTH_USERNAME,
    mittwald::SECURE,
    mittwald::GENERATED_AT,
    PURPOSE,
    crate::api::LABEL_NAME,
    crate::api::LABEL_HASH,
    crate::api::ANNOTATION_CREATED,
    crate::proof::ANNOTATION_PROOF,
    crate::version::record::ANNOTATION_LINEAGE,
    crate::tracking::ANNOTATION_TRACK,
    crate::api::push::VAULT_FINALIZER,
    crate::push::SKIP_CLEANUP,
    crate::api::push::CLUSTERS_FINALIZER,
    crate::api::FINALIZER_IN_USE,
    crate::push::clusters::copy::LABEL_COPY_OF,
    crate::push::clusters::copy::ANNOTATION_COPY_OF,
    crate::push::clusters::copy::LABEL_ANCHOR,
    crate::push::clusters::copy::ANCHOR_TYPE,
    crate::push::targets::ANNOTATION,
    crate::api::cluster::LABEL_CLUSTER,
    crate::api::cluster::ANNOTATION_TEMPLATE,
    crate::api::cluster::ANNOTATION_VALUES,
];

/// Annotations of the generators we read aliases of that randomsecret does
/// not read, and what to do instead: reported like unknown ones, with this.
pub const NOT_READ: &[(&str, &str)] = &[(
    mittwald::REGENERATE,
    "randomsecret regenerates every key when randomsecret.io/rotate changes: set it to a new token (and remove this one)",
)];

/// What a user sets on an annotated Secret: the keys a suggestion may name.
const SETTABLE: &[&str] = &[
    GENERATE,
    TYPE,
    LENGTH,
    CHARSET,
    SYMBOLS,
    ENCODING,
    ALGORITHM,
    BITS,
    ROTATE,
    alias::ENABLE,
    alias::KEY,
    alias::LENGTH,
    alias::SPECIAL_CHAR,
    mittwald::AUTOGENERATE,
    mittwald::TYPE,
    mittwald::LENGTH,
    mittwald::ENCODING,
    mittwald::BASIC_AUTH_USERNAME,
];

/// The prefixes whose annotations are checked for unknown keys.
const PREFIXES: [&str; 3] = [PREFIX, alias::PREFIX, mittwald::PREFIX];

/// Most edits between a misspelt prefix and ours (`randomsecrets.io/`).
const PREFIX_EDITS: usize = 2;
/// The Event's note is at most 1 kB (events.k8s.io/v1).
const NOTE_BYTES: usize = 1024;
/// Most unknown annotations named one by one in admission warnings.
const WARNINGS: usize = 5;
/// Longest user name of a basic-auth Secret.
const MAX_USERNAME: usize = 253;

/// Longest annotation text quoted in a message.
const QUOTE: usize = 64;

/// What an annotated Secret needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not labelled `"true"`, or asks for no key: nothing, silently.
    NotManaged,
    /// Every listed key has a non-empty value and no rotation is asked for.
    Complete,
    /// Opted in, but never filled (a Warning says why).
    Refused(Refusal),
    /// Bad annotation values: what to fix (never a Secret value).
    Invalid(String),
    /// Keys to copy from the old object and keys to generate.
    Fill(Fill),
}

/// Why an opted-in Secret is never filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Labelled `randomsecret.io/name`: its values come from that RandomSecret.
    ProducedByRandomSecret(String),
    /// `immutable: true`: the keys it lacks can never be added.
    Immutable { missing: Vec<String> },
    /// One key of a pair (an SSH private or public key; basic-auth's `auth`
    /// line without its `password` or `username`) has a value and the
    /// other has none: neither is written (a pair is made whole, a value is
    /// never overwritten).
    IncompletePair {
        have: Vec<String>,
        lack: Vec<String>,
    },
}

impl Refusal {
    /// The Warning's text: what is wrong and what to do; never a value.
    pub fn message(&self) -> String {
        match self {
            Refusal::ProducedByRandomSecret(rs) => format!(
                "not filled: this Secret is a version of RandomSecret {}, whose values come from its spec; remove the {MANAGED_LABEL} label and the generate annotations from its secretLabels and secretAnnotations",
                quote(rs)
            ),
            Refusal::Immutable { missing } => format!(
                "not filled: this Secret is immutable, so {} can never be written; create it again without immutable: true (or with every key set)",
                list(missing)
            ),
            Refusal::IncompletePair { have, lack } => format!(
                "not filled: {} {} a value but {} {} empty, and a pair is only made whole, never overwritten: set the empty one, or empty the other for a new pair (or change {ROTATE})",
                list(have),
                if have.len() == 1 { "has" } else { "have" },
                list(lack),
                if lack.len() == 1 { "is" } else { "are" },
            ),
        }
    }

    /// A short reason (Event reason, metric label).
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::ProducedByRandomSecret(_) => "ProducedByRandomSecret",
            Refusal::Immutable { .. } => "Immutable",
            Refusal::IncompletePair { .. } => "IncompletePair",
        }
    }
}

/// What the annotations ask for, parsed and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Every data key the kind writes, in order, each once: the listed
    /// keys; an SSH pair's private and public key; basic-auth's username,
    /// password and auth.
    pub keys: Vec<String>,
    pub kind: Kind,
    /// The keys grouped as they are made.
    groups: Vec<Group>,
    /// `randomsecret.io/rotate`, "" when absent.
    pub rotate: String,
}

/// Keys made together.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Group {
    One(String),
    Pair { private: String, public: String },
    BasicAuth,
}

/// The keys one fill writes. Its `Debug` shows key names, never values.
#[derive(Clone, PartialEq, Eq)]
pub struct Fill {
    kind: Kind,
    steps: Vec<Step>,
    copy: BTreeMap<String, ByteString>,
    rotated: Option<String>,
    /// The token to write when the steps are left to the controller: the
    /// one recorded before, when the new object lost it.
    restore: Option<String>,
    rotation: bool,
}

/// What one fill makes.
#[derive(Clone, PartialEq, Eq)]
enum Step {
    /// A value of a one-key kind.
    One(String),
    /// An SSH key pair.
    Pair { private: String, public: String },
    /// basic-auth's auth line for `user` (written to `username` too when
    /// `write_user`) and the password (`None`: a new one; else the value
    /// the Secret holds).
    BasicAuth {
        user: String,
        write_user: bool,
        password: Option<Vec<u8>>,
    },
}

impl Step {
    fn keys(&self) -> Vec<&str> {
        match self {
            Step::One(k) => vec![k.as_str()],
            Step::Pair { private, public } => vec![private.as_str(), public.as_str()],
            Step::BasicAuth {
                write_user,
                password,
                ..
            } => {
                let mut keys = vec![kinds::AUTH_KEY];
                if password.is_none() {
                    keys.push(kinds::PASSWORD_KEY);
                }
                if *write_user {
                    keys.push(kinds::USERNAME_KEY);
                }
                keys
            }
        }
    }

    /// The most bytes it writes to `key`.
    fn size_of(&self, kind: &Kind, key: &str) -> usize {
        match (self, kind) {
            (Step::Pair { private, .. }, _) => {
                let (private_max, public_max) = Kind::pair_sizes();
                if key == private {
                    private_max
                } else {
                    public_max
                }
            }
            (Step::BasicAuth { user, .. }, Kind::BasicAuth(a)) => match key {
                kinds::AUTH_KEY => Kind::auth_size(user),
                kinds::USERNAME_KEY => user.len(),
                _ => a.password.size(),
            },
            _ => kind.size(),
        }
    }
}

impl fmt::Debug for Fill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fill")
            .field("kind", &self.kind)
            .field("generate", &self.generated_keys())
            .field("copy", &self.copy.keys().collect::<Vec<_>>())
            .field("rotated", &self.rotated)
            .field("rotation", &self.rotation)
            .finish()
    }
}

impl Fill {
    /// The values to write: the copied ones and newly generated ones (OS
    /// CSPRNG). Costly for an RSA key pair and for basic-auth (bcrypt):
    /// see [`Fill::costly`].
    pub fn values(&self) -> Result<BTreeMap<String, ByteString>, GenerateError> {
        let mut out = self.copy.clone();
        let mut put = |k: &str, v: Vec<u8>| out.insert(k.to_string(), ByteString(v));
        for step in &self.steps {
            match (step, &self.kind) {
                (Step::One(k), kind) => put(k, kind.value()?),
                (Step::Pair { private, public }, Kind::SshKeyPair(shape)) => {
                    let (private_key, public_key) = kinds::ssh_pair(*shape, public)?;
                    put(private, private_key.into_bytes());
                    put(public, public_key.into_bytes())
                }
                (
                    Step::BasicAuth {
                        user,
                        write_user,
                        password,
                    },
                    Kind::BasicAuth(a),
                ) => {
                    let password = match password {
                        Some(given) => given.clone(),
                        None => {
                            let new = a.password.value()?;
                            put(kinds::PASSWORD_KEY, new.clone());
                            new
                        }
                    };
                    // Checked by the plan: a given one is text; a new one is ASCII.
                    let text = String::from_utf8(password)
                        .map_err(|_| GenerateError::text("the password is not text"))?;
                    put(kinds::AUTH_KEY, kinds::htpasswd(user, &text)?.into_bytes());
                    if *write_user {
                        put(kinds::USERNAME_KEY, user.clone().into_bytes());
                    }
                    None
                }
                _ => return Err(GenerateError::text("a step of another kind")),
            };
        }
        Ok(out)
    }

    /// Keys that get new values, in the order they are made.
    pub fn generated_keys(&self) -> Vec<&str> {
        self.steps.iter().flat_map(Step::keys).collect()
    }

    /// Keys copied from the old object (UPDATE only).
    pub fn copied_keys(&self) -> impl Iterator<Item = &str> {
        self.copy.keys().map(String::as_str)
    }

    /// Every key the fill writes, in order.
    pub fn keys(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.copied_keys().chain(self.generated_keys()).collect();
        all.sort_unstable();
        all
    }

    /// The value `randomsecret.io/rotated` must be set to, when it must be written.
    pub fn rotated(&self) -> Option<&str> {
        self.rotated.as_deref()
    }

    /// Whether this fill is an explicit rotation (listed keys regenerated).
    pub fn is_rotation(&self) -> bool {
        self.rotation
    }

    /// What the keys get.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Whether making the values takes enough CPU (an RSA key; bcrypt) to
    /// belong off the async runtime's threads.
    pub fn costly(&self) -> bool {
        !self.steps.is_empty() && self.kind.costly()
    }

    /// The most bytes the fill writes.
    pub fn size(&self) -> usize {
        let made: usize = self
            .steps
            .iter()
            .flat_map(|s| s.keys().into_iter().map(move |k| s.size_of(&self.kind, k)))
            .sum();
        made + self.copy.values().map(|v| v.0.len()).sum::<usize>()
    }

    /// For the webhook, which makes no RSA key: when this fill makes RSA
    /// key pairs, the fill without them (copies only, and the token the
    /// Secret had, so that the controller's fill after admission sees what
    /// this one saw) and the keys left to the controller. `None` when it
    /// makes none.
    pub fn without_rsa(&self) -> Option<(Fill, Vec<String>)> {
        let rsa = matches!(self.kind, Kind::SshKeyPair(s) if s.algorithm == KeyAlgorithm::Rsa);
        if !rsa || self.steps.is_empty() {
            return None;
        }
        let left = self
            .generated_keys()
            .into_iter()
            .map(String::from)
            .collect();
        let rest = Fill {
            kind: self.kind.clone(),
            steps: Vec::new(),
            copy: self.copy.clone(),
            rotated: self.restore.clone(),
            restore: self.restore.clone(),
            rotation: false,
        };
        Some((rest, left))
    }
}

/// Whether the label opts the object in.
pub fn labelled(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels
        .and_then(|l| l.get(MANAGED_LABEL))
        .map(String::as_str)
        == Some("true")
}

/// Whether the annotations ask for keys: ours (`generate` or `type`), the
/// original operator's enabled, or mittwald's (`autogenerate`, or a
/// non-empty `type`). Checks nothing else: [`parse`] does.
pub fn asks(annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotations.is_some_and(asks_in)
}

fn asks_in(a: &BTreeMap<String, String>) -> bool {
    a.contains_key(GENERATE)
        || a.contains_key(TYPE)
        || a.get(alias::ENABLE).map(String::as_str) == Some("true")
        || a.contains_key(mittwald::AUTOGENERATE)
        || a.get(mittwald::TYPE).is_some_and(|t| !t.is_empty())
}

/// Whether a Secret's metadata opts it in: the label and the annotation.
pub fn opted_in(meta: &ObjectMeta) -> bool {
    labelled(meta.labels.as_ref()) && asks(meta.annotations.as_ref())
}

/// What the rules read of a Secret: the whole object on the controller's
/// path, the admission reader's digest of it on the webhook's
/// (`webhook::review::Object`), which holds only the listed keys' values.
pub trait Object {
    fn meta(&self) -> &ObjectMeta;
    fn is_immutable(&self) -> bool;
    /// The value `key` will have once stored: `stringData` wins over `data`.
    fn value(&self, key: &str) -> Option<&[u8]>;
    /// The bytes of the values of every key not in `keys`, each key once
    /// (asked only with the keys the object's own annotations list).
    fn bytes_besides(&self, keys: &[String]) -> usize;
}

impl Object for Secret {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
    fn value(&self, key: &str) -> Option<&[u8]> {
        value_of(self, key)
    }
    fn bytes_besides(&self, keys: &[String]) -> usize {
        data_keys(self)
            .filter(|k| !keys.contains(k))
            .filter_map(|k| value_of(self, &k).map(<[u8]>::len))
            .sum()
    }
}

/// Whether a rule reads this annotation key (ours, an alias, or a near miss
/// reported as unknown): the admission reader keeps only these.
pub fn read_by_rules(key: &str) -> bool {
    KNOWN.contains(&key) || unknown_key(key).is_some()
}

/// The keys a stored object manages: it opted in, is no RandomSecret's
/// version, and its annotations parse and list them. Only these are copied
/// on UPDATE.
fn managed_keys<T: Object + ?Sized>(o: &T) -> Vec<String> {
    let meta = o.meta();
    if !opted_in(meta) || !handled(meta) {
        return Vec::new();
    }
    match meta.annotations.as_ref().map(parse) {
        Some(Ok(Some(r))) => r.keys,
        _ => Vec::new(),
    }
}

/// Whether annotation mode reads this Secret's annotations at all: labelled,
/// and not a version of a RandomSecret.
fn handled(meta: &ObjectMeta) -> bool {
    labelled(meta.labels.as_ref())
        && !meta
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(LABEL_NAME))
}

/// Whether the controller looks at a labelled Secret: it asks for keys, or
/// it carries an annotation of ours that no rule knows (a misspelt
/// `generate` asks for nothing, and the user should hear why).
pub fn looked_at(meta: &ObjectMeta) -> bool {
    opted_in(meta) || unknown_keys(meta).next().is_some()
}

/// An annotation under our prefixes that no rule reads, and the valid key
/// it is nearest to, if one is near.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub key: String,
    pub suggestion: Option<&'static str>,
}

impl Unknown {
    /// What is wrong and what to use instead; names keys, never values.
    pub fn message(&self) -> String {
        if let Some((_, instead)) = NOT_READ.iter().find(|(k, _)| *k == self.key) {
            return format!("annotation {} is not read: {instead}", quote(&self.key));
        }
        let what = format!("unknown annotation {} is ignored", quote(&self.key));
        match self.suggestion {
            Some(s) => format!("{what}: did you mean {s}?"),
            None if self.key.starts_with(alias::PREFIX) => format!(
                "{what}: the original operator's annotations are {}enable, key, length and special-char",
                alias::PREFIX
            ),
            None if self.key.starts_with(mittwald::PREFIX) => format!(
                "{what}: randomsecret reads mittwald's autogenerate, type, length, encoding and basic-auth-username"
            ),
            None => format!(
                "{what}: annotation mode reads {PREFIX}generate, length, charset, symbols, type, encoding, algorithm, bits and rotate"
            ),
        }
    }
}

/// The annotations of a Secret annotation mode handles (labelled, not a
/// RandomSecret's version) under `randomsecret.io/`,
/// `secret.a-cup-of.coffee/` or `secret-generator.v1.mittwald.de/` that no
/// rule knows, each with the nearest settable key when one is near; also a
/// key whose prefix is a near miss of ours (`randomsecrets.io/length`), but
/// only when its name matches one of ours. Sorted by key. Both paths report
/// them; nothing else changes.
pub fn unknown_annotations(meta: &ObjectMeta) -> Vec<Unknown> {
    unknown_keys(meta).collect()
}

fn unknown_keys(meta: &ObjectMeta) -> impl Iterator<Item = Unknown> {
    let keys = handled(meta)
        .then_some(meta.annotations.as_ref())
        .flatten()
        .into_iter()
        .flat_map(|a| a.keys());
    keys.filter_map(|k| unknown_key(k))
}

fn unknown_key(key: &str) -> Option<Unknown> {
    if KNOWN.contains(&key) {
        return None;
    }
    let (prefix, name) = key.split_at(key.find('/')? + 1);
    if PREFIXES.contains(&prefix) {
        return Some(Unknown {
            key: key.to_string(),
            suggestion: suggest(prefix, name),
        });
    }
    // A misspelt prefix is reported only with a suggestion: a domain that
    // merely looks like ours, with names of its own, is not ours to judge.
    let ours = PREFIXES
        .into_iter()
        .find(|p| edits(prefix, p, PREFIX_EDITS).is_some())?;
    Some(Unknown {
        key: key.to_string(),
        suggestion: Some(suggest(ours, name)?),
    })
}

/// The settable key under `prefix` whose name is nearest to `name` (a third
/// of its length in edits, at least one; the first of equals), else one of
/// another prefix with exactly that name (`secret.a-cup-of.coffee/generate`
/// means `randomsecret.io/generate`).
fn suggest(prefix: &str, name: &str) -> Option<&'static str> {
    let under = |k: &'static str, p: &str| k.strip_prefix(p).map(|n| (k, n));
    SETTABLE
        .iter()
        .filter_map(|k| under(k, prefix))
        .filter_map(|(k, n)| Some((edits(name, n, (n.chars().count() / 3).max(1))?, k)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
        .or_else(|| {
            SETTABLE
                .iter()
                .find(|k| !k.starts_with(prefix) && k.split_once('/').map(|(_, n)| n) == Some(name))
                .copied()
        })
}

/// The edits from `a` to `b` (a swap of neighbours counts one) when there
/// are at most `most`. The length check first: a long key costs no distance.
fn edits(a: &str, b: &str, most: usize) -> Option<usize> {
    if a.chars().count().abs_diff(b.chars().count()) > most {
        return None;
    }
    Some(strsim::osa_distance(a, b)).filter(|d| *d <= most)
}

/// The Warning Event's note about unknown annotations (None when there are
/// none): every message joined, as many as fit in an Event's 1 kB.
pub fn unknown_note(unknown: &[Unknown]) -> Option<String> {
    let first = unknown.first()?;
    let mut note = first.message();
    let mut shown = 1;
    for u in &unknown[1..] {
        let next = format!("; {}", u.message());
        // Room for the count of the rest. One message is well below the
        // limit: a key is quoted at most QUOTE characters long.
        if note.len() + next.len() + 64 > NOTE_BYTES {
            break;
        }
        note.push_str(&next);
        shown += 1;
    }
    if shown < unknown.len() {
        note.push_str(&format!(
            "; and {} more unknown annotations",
            unknown.len() - shown
        ));
    }
    Some(note)
}

/// The admission warnings about unknown annotations: one each, at most
/// [`WARNINGS`] and then their count (the apiserver keeps only a few kB).
pub fn unknown_warnings(unknown: &[Unknown]) -> Vec<String> {
    let mut out: Vec<String> = unknown
        .iter()
        .take(WARNINGS)
        .map(Unknown::message)
        .collect();
    if unknown.len() > WARNINGS {
        out.push(format!(
            "and {} more unknown annotations",
            unknown.len() - WARNINGS
        ));
    }
    out
}

/// Whose annotations name the keys (or the type): its defaults apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Ours,
    Original,
    Mittwald,
}

/// The annotation a parameter was read from, and its value.
type Source<'a> = Option<(&'static str, &'a str)>;

/// Parses the annotations: `Ok(None)` when they ask for nothing, else the
/// request or every problem found, joined, each saying what to fix.
///
/// Each parameter is read from our annotation, else from the original
/// operator's (only with `secret.a-cup-of.coffee/enable: "true"`), else from
/// mittwald's; an empty alias value means its default, as in both. The
/// defaults are those of the form that names the keys (for `ssh-keypair`
/// and `basic-auth`, the type): the original operator's symbols default to
/// on, mittwald's strings are 40 characters of base64's alphabet, its SSH
/// keys RSA of 2048 bits. An annotation of ours (or the original
/// operator's) that the kind does not read is a problem; one of mittwald's
/// is ignored, as mittwald ignores it.
pub fn parse(a: &BTreeMap<String, String>) -> Result<Option<Request>, String> {
    if !asks_in(a) {
        return Ok(None);
    }
    let get = |k: &str| a.get(k).map(String::as_str);
    let original = get(alias::ENABLE) == Some("true");
    let alias_of = |k: &'static str| get(k).filter(|v| !v.is_empty()).map(|v| (k, v));
    let original_of = |k: &'static str| alias_of(k).filter(|_| original);
    let ours = |k: &'static str| get(k).map(|v| (k, v));
    let mut problems = Vec::new();

    let (type_, type_form) = match (get(TYPE), alias_of(mittwald::TYPE)) {
        (Some(v), _) => (parse_type(TYPE, v, &mut problems), Form::Ours),
        (None, Some((k, v))) => (parse_type(k, v, &mut problems), Form::Mittwald),
        (None, None) => (Type::String, Form::Ours),
    };
    let made_whole = matches!(type_, Type::SshKeyPair | Type::BasicAuth);

    // The keys, and whose form names them.
    let (listed, keys_form) = match (get(GENERATE), original) {
        (Some(list), _) => (Some(parse_keys(GENERATE, list, &mut problems)), Form::Ours),
        (None, true) => {
            let key = get(alias::KEY).unwrap_or(alias::DEFAULT_KEY);
            let keys = parse_keys(alias::KEY, key, &mut problems);
            (Some(keys), Form::Original)
        }
        (None, false) => match get(mittwald::AUTOGENERATE) {
            // mittwald reads it for strings only.
            Some(list) if !made_whole => {
                let keys = parse_keys(mittwald::AUTOGENERATE, list, &mut problems);
                (Some(keys), Form::Mittwald)
            }
            _ => (None, type_form),
        },
    };
    let form = if made_whole { type_form } else { keys_form };
    let type_annotation = if type_form == Form::Mittwald {
        mittwald::TYPE
    } else {
        TYPE
    };
    if made_whole && original {
        problems.push(format!(
            "{} makes random strings, not {} {}: remove it",
            alias::ENABLE,
            type_annotation,
            type_.as_str()
        ));
    }

    // Parameters: ours, else the original operator's, else mittwald's.
    let length = ours(LENGTH)
        .or_else(|| original_of(alias::LENGTH))
        .or_else(|| alias_of(mittwald::LENGTH));
    let symbols = ours(SYMBOLS).or_else(|| original_of(alias::SPECIAL_CHAR));
    let encoding = ours(ENCODING).or_else(|| alias_of(mittwald::ENCODING));

    // What the kind does not read: a problem when it is ours (or the
    // original operator's, named explicitly).
    let reads: &[&str] = match type_ {
        Type::String => &[LENGTH, CHARSET, SYMBOLS, alias::LENGTH, alias::SPECIAL_CHAR],
        Type::Bytes => &[LENGTH, ENCODING, alias::LENGTH],
        Type::Uuid => &[],
        Type::SshKeyPair => &[ALGORITHM, BITS],
        Type::BasicAuth => &[LENGTH, CHARSET, SYMBOLS],
    };
    let settable = [
        ours(LENGTH),
        ours(CHARSET),
        ours(SYMBOLS),
        ours(ENCODING),
        ours(ALGORITHM),
        ours(BITS),
        original_of(alias::LENGTH),
        original_of(alias::SPECIAL_CHAR),
    ];
    for (k, _) in settable.into_iter().flatten() {
        // The original operator's with a key pair: already a problem (enable).
        let original_on_pair = made_whole && k.starts_with(alias::PREFIX);
        if !reads.contains(&k) && !original_on_pair {
            problems.push(format!(
                "{k} is not read with {type_annotation} {}: remove it{}",
                type_.as_str(),
                unread_hint(k, type_)
            ));
        }
    }
    if type_ == Type::BasicAuth && get(GENERATE).is_some() {
        problems.push(format!(
            "{GENERATE} is not read with {type_annotation} basic-auth, which writes the keys {}, {} and {}: remove it",
            kinds::USERNAME_KEY,
            kinds::PASSWORD_KEY,
            kinds::AUTH_KEY
        ));
    }

    let default_length = if form == Form::Mittwald {
        mittwald::DEFAULT_LENGTH
    } else {
        DEFAULT_LENGTH
    };
    let kind = match type_ {
        Type::String => text_kind(
            a,
            form,
            length,
            symbols,
            encoding,
            default_length,
            &mut problems,
        ),
        Type::Bytes => {
            let n = match length {
                Some((k, v)) => parse_length(k, v, MAX_BYTES as usize, &mut problems).0,
                None if form == Form::Mittwald => mittwald::DEFAULT_LENGTH,
                None => DEFAULT_BYTES,
            };
            Kind::Bytes(Bytes {
                length: n,
                encoding: parse_encoding(encoding, &mut problems),
            })
        }
        Type::Uuid => Kind::Uuid,
        Type::SshKeyPair => Kind::SshKeyPair(key_shape(a, type_form, &mut problems)),
        Type::BasicAuth => {
            let password = text_kind(
                a,
                form,
                length,
                symbols,
                encoding,
                default_length,
                &mut problems,
            );
            let (username, named) = match alias_of(mittwald::BASIC_AUTH_USERNAME) {
                Some((k, v)) => {
                    if let Some(why) = bad_user(v) {
                        problems.push(format!("{k} {} {why}", quote(v)));
                    }
                    (v.to_string(), true)
                }
                None => (kinds::DEFAULT_USERNAME.to_string(), false),
            };
            if let Some(why) = bad_password(&password) {
                problems.push(why);
            }
            Kind::BasicAuth(BasicAuth {
                username,
                named,
                password: Box::new(password),
            })
        }
    };

    // The keys' groups.
    let groups: Vec<Group> = match (&kind, listed) {
        (Kind::BasicAuth(_), _) => vec![Group::BasicAuth],
        (Kind::SshKeyPair(_), listed) => listed
            .unwrap_or_else(|| vec![kinds::SSH_PRIVATE_KEY.to_string()])
            .into_iter()
            .map(|private| Group::Pair {
                public: kinds::public_key_of(&private),
                private,
            })
            .collect(),
        (_, Some(keys)) => keys.into_iter().map(Group::One).collect(),
        (_, None) => {
            problems.push(format!(
                "{type_annotation} {} names no key: list the keys to fill in {}, separated by commas",
                type_.as_str(),
                if type_form == Form::Mittwald {
                    mittwald::AUTOGENERATE
                } else {
                    GENERATE
                }
            ));
            Vec::new()
        }
    };
    let mut keys: Vec<String> = Vec::new();
    for g in &groups {
        match g {
            Group::One(k) => keys.push(k.clone()),
            Group::Pair { private, public } => {
                if !valid_data_key(public) {
                    problems.push(format!(
                        "{GENERATE}: the public key of {} would be {}, not a valid Secret data key: use a shorter key",
                        quote(private),
                        quote(public)
                    ));
                }
                for k in [private, public] {
                    if keys.contains(k) {
                        problems.push(format!(
                            "{GENERATE}: key {} would hold two values (a private key, and the public key of another): rename one",
                            quote(k)
                        ));
                    } else {
                        keys.push(k.clone());
                    }
                }
            }
            Group::BasicAuth => keys.extend(
                [kinds::USERNAME_KEY, kinds::PASSWORD_KEY, kinds::AUTH_KEY].map(String::from),
            ),
        }
    }

    let rotate = get(ROTATE).unwrap_or_default();
    if let Some(why) = bad_token(rotate) {
        problems.push(format!("{ROTATE} {why}"));
    }
    if let Some(why) = get(ROTATED).and_then(bad_token) {
        problems.push(format!(
            "{ROTATED} {why} (it is written by randomsecret: remove it)"
        ));
    }
    // Every value at its largest must fit in a Secret (1 MiB).
    let most = match &kind {
        Kind::SshKeyPair(_) | Kind::BasicAuth(_) => groups.len().saturating_mul(kind.size()),
        _ => keys.len().saturating_mul(kind.size()),
    };
    if problems.is_empty() && most > MAX_SECRET_BYTES {
        problems.push(format!(
            "{} keys of up to {} bytes each exceed the 1 MiB a Secret holds: lower {LENGTH} or list fewer keys",
            keys.len(),
            kind.size()
        ));
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(Some(Request {
        keys,
        kind,
        groups,
        rotate: rotate.to_string(),
    }))
}

/// What to use instead of an annotation type `t` does not read.
fn unread_hint(k: &str, t: Type) -> &'static str {
    match (k, t) {
        (ENCODING, Type::String | Type::BasicAuth) => {
            " (a string's alphabet is randomsecret.io/charset; randomsecret.io/type bytes takes an encoding)"
        }
        (CHARSET | SYMBOLS, Type::Bytes) => " (bytes take randomsecret.io/encoding)",
        (LENGTH, Type::SshKeyPair) => " (a key's size is randomsecret.io/bits)",
        _ => "",
    }
}

/// A string's kind (a basic-auth password's too): characters of a charset
/// (ours), or mittwald's encoded random bytes: cut to the length, or whole
/// with a length in bytes (`32B`). mittwald's applies when its form names
/// the keys, or its encoding or a length in bytes is given, unless a
/// charset or symbols are.
fn text_kind(
    a: &BTreeMap<String, String>,
    form: Form,
    length: Source,
    symbols: Source,
    encoding: Source,
    default_length: usize,
    problems: &mut Vec<String>,
) -> Kind {
    let charset = a.get(CHARSET).map(String::as_str);
    let (n, in_bytes) = match length {
        Some((k, v)) => parse_length(k, v, MAX_LENGTH as usize, problems),
        None => (default_length, false),
    };
    let encoded = charset.is_none()
        && symbols.is_none()
        && (form == Form::Mittwald || in_bytes || encoding.is_some_and(|(k, _)| k != ENCODING));
    if encoded {
        let encoding = parse_encoding(encoding, problems);
        if in_bytes {
            if n > MAX_BYTES as usize {
                problems.push(format!(
                    "{} {n}B is more bytes than the {MAX_BYTES} a value may have: lower it",
                    mittwald::LENGTH
                ));
            }
            return Kind::Bytes(Bytes {
                length: n,
                encoding,
            });
        }
        return Kind::Cut(Bytes {
            length: n,
            encoding,
        });
    }
    let charset = match charset {
        None => Charset::Alphanumeric,
        Some(v) => Charset::ALL
            .into_iter()
            .find(|c| c.as_str() == v)
            .unwrap_or_else(|| {
                let names: Vec<&str> = Charset::ALL.iter().map(|c| c.as_str()).collect();
                problems.push(format!(
                    "{CHARSET} {} is not a charset: use one of {}",
                    quote(v),
                    names.join(", ")
                ));
                Charset::Alphanumeric
            }),
    };
    let symbols = match symbols {
        Some((SYMBOLS, "true")) => true,
        Some((SYMBOLS, "false")) => false,
        Some((k, v)) if k == SYMBOLS => {
            problems.push(format!("{SYMBOLS} {} must be true or false", quote(v)));
            false
        }
        Some((k, v)) => go_bool(v).unwrap_or_else(|| {
            problems.push(format!("{k} {} must be true or false", quote(v)));
            false
        }),
        None => form == Form::Original && alias::DEFAULT_SPECIAL_CHAR,
    };
    Kind::Chars(Chars {
        length: n,
        charset,
        symbols: if symbols {
            DEFAULT_SYMBOLS.to_string()
        } else {
            String::new()
        },
        min: Default::default(),
    })
}

/// An SSH key pair's algorithm and size: ours, else mittwald's (RSA, its
/// `/length` in bits, default 2048), else ed25519.
fn key_shape(
    a: &BTreeMap<String, String>,
    type_form: Form,
    problems: &mut Vec<String>,
) -> KeyShape {
    let get = |k: &str| a.get(k).map(String::as_str);
    let mittwald = type_form == Form::Mittwald;
    let algorithm = match get(ALGORITHM) {
        Some(v) => KeyAlgorithm::ALL
            .into_iter()
            .find(|alg| alg.as_str() == v)
            .unwrap_or_else(|| {
                problems.push(format!(
                    "{ALGORITHM} {} is not a key algorithm: use ed25519, ecdsa or rsa",
                    quote(v)
                ));
                KeyAlgorithm::Ed25519
            }),
        None if mittwald => KeyAlgorithm::Rsa,
        None => KeyAlgorithm::Ed25519,
    };
    let sizes = algorithm.sizes();
    let mittwald_bits = get(mittwald::LENGTH)
        .filter(|v| mittwald && !v.is_empty())
        .map(|v| (mittwald::LENGTH, v));
    let size = match get(BITS).map(|v| (BITS, v)).or(mittwald_bits) {
        Some((k, v)) => {
            let n = if k == mittwald::LENGTH {
                // Its ParseByteLength: a `B` suffix is allowed, and ignored.
                v.strip_suffix(['b', 'B']).unwrap_or(v)
            } else {
                v
            };
            match n.parse::<u32>() {
                Ok(n) if sizes.contains(&n) => n,
                _ if sizes.is_empty() => {
                    problems.push(format!(
                        "{k}: an {} key has no size: remove it",
                        algorithm.as_str()
                    ));
                    0
                }
                _ => {
                    let mut ordered = sizes.to_vec();
                    ordered.sort_unstable();
                    let names: Vec<String> = ordered.iter().map(u32::to_string).collect();
                    problems.push(format!(
                        "{k} {} is not a size of an {} key: use {}",
                        quote(v),
                        algorithm.as_str(),
                        names.join(", ")
                    ));
                    sizes[0]
                }
            }
        }
        None if mittwald && algorithm == KeyAlgorithm::Rsa => mittwald::DEFAULT_SSH_BITS,
        None => sizes.first().copied().unwrap_or(0),
    };
    KeyShape { algorithm, size }
}

/// Why a user name cannot be in an htpasswd line.
fn bad_user(v: &str) -> Option<&'static str> {
    if v.contains(':') || v.chars().any(char::is_control) {
        Some("cannot be in an htpasswd line: use a name without ':' and control characters")
    } else if v.chars().count() > MAX_USERNAME {
        Some("is longer than 253 characters: use a shorter name")
    } else {
        None
    }
}

/// Why a basic-auth password of `kind` cannot be hashed by bcrypt.
fn bad_password(kind: &Kind) -> Option<String> {
    let encoding = match kind {
        Kind::Cut(b) | Kind::Bytes(b) => Some(b.encoding),
        _ => None,
    };
    if encoding == Some(Encoding::Raw) {
        return Some(format!(
            "a basic-auth password must be text, not raw bytes: use another {} (base64, base64url, base32 or hex)",
            mittwald::ENCODING
        ));
    }
    (kind.size() > MAX_BCRYPT_PASSWORD).then(|| {
        format!(
            "a basic-auth password of {} bytes is longer than the {MAX_BCRYPT_PASSWORD} bcrypt reads: use a length of at most {MAX_BCRYPT_PASSWORD}",
            kind.size()
        )
    })
}

/// The state of one listed key: the value the new object holds, the value
/// the stored object held (UPDATE, a key it managed), or none.
#[derive(Clone, Copy)]
enum State<'a> {
    Own(&'a [u8]),
    Stored(&'a [u8]),
    Empty,
}

impl<'a> State<'a> {
    fn value(self) -> Option<&'a [u8]> {
        match self {
            State::Own(v) | State::Stored(v) => Some(v),
            State::Empty => None,
        }
    }
}

/// What `new` needs; `old` is the stored object on UPDATE (None on CREATE
/// and in the controller path).
pub fn plan<T: Object + ?Sized>(new: &T, old: Option<&T>) -> Plan {
    let meta = new.meta();
    if !labelled(meta.labels.as_ref()) || !asks(meta.annotations.as_ref()) {
        return Plan::NotManaged;
    }
    if let Some(rs) = meta.labels.as_ref().and_then(|l| l.get(LABEL_NAME)) {
        return Plan::Refused(Refusal::ProducedByRandomSecret(rs.clone()));
    }
    let empty = BTreeMap::new();
    let annotations = meta.annotations.as_ref().unwrap_or(&empty);
    let request = match parse(annotations) {
        Ok(Some(r)) => r,
        Ok(None) => return Plan::NotManaged,
        Err(why) => return Plan::Invalid(why),
    };

    let rotated_of = |s: &T| s.meta().annotations.as_ref()?.get(ROTATED).cloned();
    let recorded_here = rotated_of(new);
    // On UPDATE the stored object's record counts: a replace that dropped or
    // changed it cannot start a rotation.
    let recorded = old.and_then(rotated_of).or_else(|| recorded_here.clone());
    // Only a token that is set and differs from the recorded one rotates: a
    // manifest without it (kubectl replace, helm upgrade --force of the
    // original manifest after a `kubectl annotate`) never does.
    let rotation =
        !request.rotate.is_empty() && recorded.as_ref().is_some_and(|r| *r != request.rotate);

    let managed = old.map(managed_keys).unwrap_or_default();
    let state = |k: &str| -> State {
        if let Some(v) = new.value(k).filter(|v| !v.is_empty()) {
            return State::Own(v);
        }
        let stored = old.filter(|_| managed.iter().any(|m| m == k));
        match stored.and_then(|o| o.value(k)).filter(|v| !v.is_empty()) {
            Some(v) => State::Stored(v),
            None => State::Empty,
        }
    };
    let mut steps = Vec::new();
    let mut copy = BTreeMap::new();
    let mut copy_stored = |k: &str, s: State| {
        if let State::Stored(v) = s {
            copy.insert(k.to_string(), ByteString(v.to_vec()));
        }
    };
    for group in &request.groups {
        match group {
            Group::One(k) if rotation => steps.push(Step::One(k.clone())),
            Group::One(k) => match state(k) {
                State::Empty => steps.push(Step::One(k.clone())),
                s => copy_stored(k, s),
            },
            Group::Pair { private, public } if rotation => steps.push(Step::Pair {
                private: private.clone(),
                public: public.clone(),
            }),
            Group::Pair { private, public } => {
                let pair = [
                    (private.as_str(), state(private)),
                    (public.as_str(), state(public)),
                ];
                if pair.iter().all(|(_, s)| s.value().is_none()) {
                    steps.push(Step::Pair {
                        private: private.clone(),
                        public: public.clone(),
                    });
                    continue;
                }
                if let Some(refusal) = incomplete(&pair, old) {
                    return Plan::Refused(refusal);
                }
                for (k, s) in pair {
                    copy_stored(k, s);
                }
            }
            Group::BasicAuth => {
                let Kind::BasicAuth(auth) = &request.kind else {
                    continue;
                };
                let [user, password, line] =
                    [kinds::USERNAME_KEY, kinds::PASSWORD_KEY, kinds::AUTH_KEY]
                        .map(|k| (k, state(k)));
                if !rotation && line.1.value().is_some() {
                    // Complete only with the password and the user it hashes.
                    let all = [user, password, line];
                    if let Some(refusal) = incomplete(&all, old) {
                        return Plan::Refused(refusal);
                    }
                    for (k, s) in all {
                        copy_stored(k, s);
                    }
                    continue;
                }
                // A new auth line: of the password and user the Secret holds
                // (never overwritten; copied on UPDATE), else new ones.
                let given_user = user.1.value();
                let name = match given_user {
                    Some(v) => match std::str::from_utf8(v)
                        .ok()
                        .filter(|u| bad_user(u).is_none())
                    {
                        Some(u) => u.to_string(),
                        None => {
                            return Plan::Invalid(format!(
                                "key {} must be a user name an htpasswd line can hold (text without ':' and control characters, at most 253 characters) for {} to be made",
                                kinds::USERNAME_KEY,
                                kinds::AUTH_KEY
                            ));
                        }
                    },
                    None => auth.username.clone(),
                };
                if auth.named && given_user.is_some() && name != auth.username {
                    return Plan::Invalid(format!(
                        "key {} holds another user than {} names: make them the same, or remove one",
                        kinds::USERNAME_KEY,
                        mittwald::BASIC_AUTH_USERNAME
                    ));
                }
                let given_password = if rotation { None } else { password.1.value() };
                if let Some(v) = given_password
                    && (std::str::from_utf8(v).is_err() || v.len() > MAX_BCRYPT_PASSWORD)
                {
                    return Plan::Invalid(format!(
                        "key {} must be text of at most {MAX_BCRYPT_PASSWORD} bytes (what bcrypt reads) for {} to be made from it: shorten it, or remove it for a new one",
                        kinds::PASSWORD_KEY,
                        kinds::AUTH_KEY
                    ));
                }
                copy_stored(user.0, user.1);
                if given_password.is_some() {
                    copy_stored(password.0, password.1);
                }
                steps.push(Step::BasicAuth {
                    user: name,
                    write_user: given_user.is_none(),
                    password: given_password.map(<[u8]>::to_vec),
                });
            }
        }
    }
    let fills = !steps.is_empty() || !copy.is_empty();
    // The token to record: the new one on a rotation; else the one recorded;
    // else (a first fill, or the first token a complete Secret carries) the
    // one asked for, so that a later change of it is a rotation.
    let wanted = match recorded.clone() {
        Some(r) if !rotation => Some(r),
        _ if fills || !request.rotate.is_empty() => Some(request.rotate.clone()),
        _ => None,
    };
    let rotated = wanted.filter(|w| recorded_here.as_ref() != Some(w));
    if !fills && rotated.is_none() {
        return Plan::Complete;
    }
    let written: BTreeSet<&str> = steps
        .iter()
        .flat_map(Step::keys)
        .chain(copy.keys().map(String::as_str))
        .collect();
    if new.is_immutable() {
        if !fills {
            return Plan::Complete; // only the token to record: nothing to refuse
        }
        let missing = written.iter().map(|k| k.to_string()).collect();
        return Plan::Refused(Refusal::Immutable { missing });
    }
    // The whole Secret must stay within 1 MiB.
    let others = new.bytes_besides(&request.keys);
    let made: usize = steps
        .iter()
        .flat_map(|s| {
            let kind = &request.kind;
            s.keys().into_iter().map(move |k| s.size_of(kind, k))
        })
        .sum();
    let added = made
        + copy.values().map(|v| v.0.len()).sum::<usize>()
        + request
            .keys
            .iter()
            .filter(|k| !written.contains(k.as_str()))
            .filter_map(|k| new.value(k).map(<[u8]>::len))
            .sum::<usize>();
    if others + added > MAX_SECRET_BYTES {
        return Plan::Invalid(format!(
            "filled, this Secret would hold {} bytes, more than the 1 MiB a Secret holds: lower {LENGTH} or list fewer keys",
            others + added
        ));
    }
    let restore = recorded.filter(|r| recorded_here.as_ref() != Some(r));
    Plan::Fill(Fill {
        kind: request.kind,
        steps,
        copy,
        rotated,
        restore,
        rotation,
    })
}

/// Keys made together that hold values: a refusal when one lacks a value,
/// or when a value the new object sets would join another copied from the
/// stored object (a changed private key with the stored public key). `None`
/// when they are whole and may be kept (or copied).
fn incomplete<T: Object + ?Sized>(keys: &[(&str, State)], old: Option<&T>) -> Option<Refusal> {
    let of = |f: &dyn Fn(&State) -> bool| -> Vec<String> {
        keys.iter()
            .filter(|(_, s)| f(s))
            .map(|(k, _)| k.to_string())
            .collect()
    };
    let lack = of(&|s| s.value().is_none());
    if !lack.is_empty() {
        return Some(Refusal::IncompletePair {
            have: of(&|s| s.value().is_some()),
            lack,
        });
    }
    let copied = of(&|s| matches!(s, State::Stored(_)));
    let changed = keys.iter().any(|(k, s)| match s {
        State::Own(v) => old.and_then(|o| o.value(k)) != Some(*v),
        _ => false,
    });
    (!copied.is_empty() && changed).then(|| Refusal::IncompletePair {
        have: of(&|s| matches!(s, State::Own(_))),
        lack: copied,
    })
}

/// The value a key will have once stored: `stringData` wins over `data`.
pub fn value_of<'a>(s: &'a Secret, k: &str) -> Option<&'a [u8]> {
    if let Some(v) = s.string_data.as_ref().and_then(|d| d.get(k)) {
        return Some(v.as_bytes());
    }
    s.data.as_ref()?.get(k).map(|v| v.0.as_slice())
}

/// Every key of `data` and `stringData`, each once.
fn data_keys(s: &Secret) -> impl Iterator<Item = String> {
    let mut all: BTreeSet<String> = BTreeSet::new();
    all.extend(s.data.iter().flat_map(|d| d.keys().cloned()));
    all.extend(s.string_data.iter().flat_map(|d| d.keys().cloned()));
    all.into_iter()
}

fn parse_keys(annotation: &str, list: &str, problems: &mut Vec<String>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for k in list.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        if !valid_data_key(k) {
            problems.push(format!(
                "{annotation}: {} is not a valid Secret data key: use letters, digits, '-', '_' and '.', at most 253 characters, not '.' or '..' and not starting with '..'",
                quote(k)
            ));
        } else if !keys.iter().any(|seen| seen == k) {
            keys.push(k.to_string());
        }
        if keys.len() > MAX_KEYS {
            problems.push(format!(
                "{annotation} lists more than {MAX_KEYS} keys: list fewer"
            ));
            return keys;
        }
    }
    if keys.is_empty() && problems.is_empty() {
        problems.push(format!(
            "{annotation} names no key: list the keys to fill, separated by commas"
        ));
    }
    keys
}

fn parse_type(annotation: &'static str, v: &str, problems: &mut Vec<String>) -> Type {
    let mittwald = annotation == mittwald::TYPE;
    let types: Vec<Type> = Type::ALL
        .into_iter()
        .filter(|t| !mittwald || t.in_mittwald())
        .collect();
    if let Some(t) = types.iter().find(|t| t.as_str() == v) {
        return *t;
    }
    let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
    let more = if mittwald && Type::ALL.iter().any(|t| t.as_str() == v) {
        format!(" (set {TYPE} for {v})")
    } else {
        String::new()
    };
    problems.push(format!(
        "{annotation} {} is not a type: use one of {}{more}",
        quote(v),
        names.join(", ")
    ));
    Type::String
}

fn parse_encoding(source: Source, problems: &mut Vec<String>) -> Encoding {
    let Some((k, v)) = source else {
        return Encoding::Base64;
    };
    Encoding::ALL
        .into_iter()
        .find(|e| e.as_str() == v)
        .unwrap_or_else(|| {
            let names: Vec<&str> = Encoding::ALL.iter().map(|e| e.as_str()).collect();
            problems.push(format!(
                "{k} {} is not an encoding: use one of {}",
                quote(v),
                names.join(", ")
            ));
            Encoding::Base64
        })
}

/// A length from 1 to `max`, and whether it is in bytes: mittwald's takes
/// the suffix `B` (or `b`) for that, as its `ParseByteLength` does.
fn parse_length(
    annotation: &str,
    v: &str,
    max: usize,
    problems: &mut Vec<String>,
) -> (usize, bool) {
    let (digits, in_bytes) = match v.strip_suffix(['b', 'B']) {
        Some(d) if annotation == mittwald::LENGTH => (d, true),
        _ => (v, false),
    };
    let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    match digits.parse::<u64>() {
        Ok(n) if all_digits && (1..=max as u64).contains(&n) => (n as usize, in_bytes),
        _ => {
            let suffix = if annotation == mittwald::LENGTH {
                ", optionally followed by B for bytes before encoding"
            } else {
                ""
            };
            problems.push(format!(
                "{annotation} {} must be a whole number from 1 to {max}{suffix}",
                quote(v)
            ));
            (DEFAULT_LENGTH, in_bytes)
        }
    }
}

/// Go's `strconv.ParseBool`, which the original operator used.
fn go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Why a rotation token is refused: too long or with control characters.
fn bad_token(t: &str) -> Option<&'static str> {
    if t.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else if t.chars().count() > MAX_ROTATION {
        Some("is longer than 253 characters: use a shorter token")
    } else {
        None
    }
}

/// An annotation value for a message: debug-quoted, at most [`QUOTE`] characters.
fn quote(v: &str) -> String {
    if v.chars().count() <= QUOTE {
        format!("{v:?}")
    } else {
        let head: String = v.chars().take(QUOTE).collect();
        format!("{head:?}... ({} characters)", v.chars().count())
    }
}

/// Key names for a message.
pub(crate) fn list(keys: &[String]) -> String {
    let shown: Vec<String> = keys.iter().map(|k| quote(k)).collect();
    match shown.len() {
        1 => format!("key {}", shown[0]),
        _ => format!("keys {}", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A labelled Secret with `annotations` and `data` (as text).
    fn secret(annotations: &[(&str, &str)], data: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("s".into()),
                namespace: Some("n".into()),
                labels: Some(map(&[(MANAGED_LABEL, "true")])),
                annotations: Some(map(annotations)),
                ..Default::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn fill(p: Plan) -> Fill {
        match p {
            Plan::Fill(f) => f,
            other => panic!("expected a fill, got {other:?}"),
        }
    }

    /// The string generator of a fill of strings.
    fn chars(f: &Fill) -> &Chars {
        match f.kind() {
            Kind::Chars(c) => c,
            other => panic!("expected strings, got {other:?}"),
        }
    }

    fn invalid(p: Plan) -> String {
        match p {
            Plan::Invalid(why) => why,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    /// Applies a fill the way both paths do: values into data, the token
    /// into the annotation.
    fn apply(s: &Secret, f: &Fill) -> Secret {
        let mut out = s.clone();
        out.data.get_or_insert_default().extend(f.values().unwrap());
        if let Some(t) = f.rotated() {
            out.metadata
                .annotations
                .get_or_insert_default()
                .insert(ROTATED.into(), t.into());
        }
        out
    }

    fn text(s: &Secret, k: &str) -> String {
        String::from_utf8(value_of(s, k).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn fills_the_listed_keys_with_the_parameters() {
        let s = secret(
            &[
                (GENERATE, "password, token"),
                (LENGTH, "12"),
                (CHARSET, "hex"),
                (SYMBOLS, "false"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["password", "token"]);
        assert_eq!(f.copied_keys().count(), 0);
        assert_eq!(f.rotated(), Some(""), "every fill records the token");
        let done = apply(&s, &f);
        for k in ["password", "token"] {
            let v = text(&done, k);
            assert_eq!(v.len(), 12);
            assert!(v.chars().all(|c| c.is_ascii_hexdigit()), "{v}");
        }
        assert_ne!(text(&done, "password"), text(&done, "token"));
    }

    #[test]
    fn defaults_are_32_alphanumeric_without_symbols() {
        let f = fill(plan(&secret(&[(GENERATE, "k")], &[]), None));
        assert_eq!(
            chars(&f),
            &Chars {
                length: 32,
                charset: Charset::Alphanumeric,
                symbols: String::new(),
                min: Default::default(),
            }
        );
        let f = fill(plan(
            &secret(&[(GENERATE, "k"), (SYMBOLS, "true")], &[]),
            None,
        ));
        assert_eq!(chars(&f).symbols, DEFAULT_SYMBOLS);
    }

    #[test]
    fn a_key_with_a_value_is_never_overwritten_and_a_fill_is_idempotent() {
        let s = secret(&[(GENERATE, "user,password")], &[("user", "admin")]);
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["password"]);
        let done = apply(&s, &f);
        assert_eq!(text(&done, "user"), "admin");
        assert_eq!(plan(&done, None), Plan::Complete);
        // The same input gives the same plan.
        assert_eq!(plan(&s, None).is_fill_of(), plan(&s, None).is_fill_of());
    }

    #[test]
    fn string_data_counts_and_wins_over_data() {
        let mut s = secret(&[(GENERATE, "a,b")], &[("b", "")]);
        s.string_data = Some(map(&[("a", "preset")]));
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["b"], "an empty value is filled");
        // stringData "" replaces data's value when stored: that key is empty.
        let mut s = secret(&[(GENERATE, "a")], &[("a", "x")]);
        s.string_data = Some(map(&[("a", "")]));
        assert_eq!(fill(plan(&s, None)).generated_keys(), ["a"]);
    }

    #[test]
    fn only_labelled_secrets_that_ask_are_managed() {
        let mut s = secret(&[(GENERATE, "a")], &[]);
        s.metadata.labels = None;
        assert_eq!(plan(&s, None), Plan::NotManaged);
        s.metadata.labels = Some(map(&[(MANAGED_LABEL, "True")]));
        assert_eq!(plan(&s, None), Plan::NotManaged);
        // Labelled but asking for nothing (or the alias disabled).
        assert_eq!(plan(&secret(&[], &[]), None), Plan::NotManaged);
        let s = secret(&[(alias::ENABLE, "false"), (alias::KEY, "a")], &[]);
        assert_eq!(plan(&s, None), Plan::NotManaged);
        // Even bad values are ignored without the label.
        let mut s = secret(&[(GENERATE, "a b"), (LENGTH, "0")], &[]);
        s.metadata.labels = None;
        assert_eq!(plan(&s, None), Plan::NotManaged);
    }

    #[test]
    fn versions_of_a_randomsecret_are_never_filled() {
        let mut s = secret(&[(GENERATE, "a")], &[]);
        s.metadata
            .labels
            .get_or_insert_default()
            .insert(LABEL_NAME.into(), "db".into());
        let Plan::Refused(r) = plan(&s, None) else {
            panic!()
        };
        assert_eq!(r.reason(), "ProducedByRandomSecret");
        assert!(r.message().contains("\"db\""), "{}", r.message());
    }

    #[test]
    fn immutable_secrets_are_refused_only_when_they_lack_keys() {
        let mut s = secret(&[(GENERATE, "a,b")], &[("a", "x")]);
        s.immutable = Some(true);
        let Plan::Refused(r) = plan(&s, None) else {
            panic!()
        };
        assert_eq!(
            r,
            Refusal::Immutable {
                missing: vec!["b".into()]
            }
        );
        assert!(r.message().contains("key \"b\""), "{}", r.message());
        let mut complete = secret(&[(GENERATE, "a")], &[("a", "x")]);
        complete.immutable = Some(true);
        assert_eq!(plan(&complete, None), Plan::Complete);
    }

    #[test]
    fn update_copies_what_the_new_object_lacks_from_the_old() {
        let old = secret(
            &[(GENERATE, "a,b"), (ROTATED, "")],
            &[("a", "old-a"), ("b", "old-b")],
        );
        // kubectl replace with a manifest that has neither key nor the token.
        let new = secret(&[(GENERATE, "a,b")], &[("a", "new-a")]);
        let f = fill(plan(&new, Some(&old)));
        assert_eq!(f.generated_keys(), [] as [&str; 0]);
        assert_eq!(f.copied_keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(f.rotated(), Some(""));
        let done = apply(&new, &f);
        assert_eq!(
            (text(&done, "a"), text(&done, "b")),
            ("new-a".into(), "old-b".into())
        );
        assert_eq!(plan(&done, Some(&old)), Plan::Complete);
        // A key the old object lacked too is generated.
        let new = secret(&[(GENERATE, "a,b,c")], &[]);
        let f = fill(plan(&new, Some(&old)));
        assert_eq!(f.keys(), ["a", "b", "c"]);
        assert_eq!(f.generated_keys(), ["c"]);
        // The Debug form names keys, never values.
        assert!(!format!("{f:?}").contains("old-"), "{f:?}");
    }

    /// Finding #8 of issue 26: an UPDATE copies only what the stored object
    /// already managed, so `update` without `get` reads nothing through the
    /// PUT's response.
    #[test]
    fn update_copies_only_keys_the_old_object_managed() {
        let stored = [("password", "stored"), ("token", "stored-too")];
        let asks = secret(&[(GENERATE, "password,token")], &[]);
        // Not opted in: no label.
        let mut unlabelled = secret(&[], &stored);
        unlabelled.metadata.labels = None;
        // Labelled, but asking for nothing; asking for another key; with
        // annotations that never parsed (never filled); a RandomSecret's version.
        let asked_nothing = secret(&[], &stored);
        let other_key = secret(&[(GENERATE, "token")], &stored);
        let invalid = secret(&[(GENERATE, "password,token"), (LENGTH, "0")], &stored);
        let mut version = secret(&[(GENERATE, "password,token")], &stored);
        version
            .metadata
            .labels
            .get_or_insert_default()
            .insert(LABEL_NAME.into(), "db".into());
        for (what, old, copied) in [
            ("unlabelled", &unlabelled, vec![]),
            ("asking for nothing", &asked_nothing, vec![]),
            ("listing another key", &other_key, vec!["token"]),
            ("invalid annotations", &invalid, vec![]),
            ("a RandomSecret's version", &version, vec![]),
        ] {
            let f = fill(plan(&asks, Some(old)));
            assert_eq!(f.copied_keys().collect::<Vec<_>>(), copied, "{what}");
            let done = apply(&asks, &f);
            assert_ne!(
                text(&done, "password"),
                "stored",
                "{what}: the stored value came back"
            );
            assert_eq!(f.keys(), ["password", "token"], "{what}");
        }
        // The alias form manages its one key.
        let aliased = secret(&[(alias::ENABLE, "true")], &stored);
        let f = fill(plan(&asks, Some(&aliased)));
        assert_eq!(f.copied_keys().collect::<Vec<_>>(), ["password"]);
    }

    #[test]
    fn rotation_regenerates_when_the_token_differs_from_the_recorded_one() {
        let s = secret(&[(GENERATE, "a,b")], &[("a", "1"), ("b", "2")]);
        assert_eq!(plan(&s, None), Plan::Complete);
        // A fill recorded "", so a first token rotates.
        let filled = secret(
            &[(GENERATE, "a,b"), (ROTATED, "")],
            &[("a", "1"), ("b", "2")],
        );
        assert_eq!(plan(&filled, None), Plan::Complete);
        let mut asked = filled.clone();
        asked
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(ROTATE.into(), "2024-05".into());
        let f = fill(plan(&asked, None));
        assert!(f.is_rotation());
        assert_eq!(f.generated_keys(), ["a", "b"]);
        assert_eq!(f.rotated(), Some("2024-05"));
        let done = apply(&asked, &f);
        assert_ne!(text(&done, "a"), "1");
        assert_eq!(plan(&done, None), Plan::Complete, "rotates once");
        // On UPDATE the copy rule does not undo a rotation.
        let f = fill(plan(&asked, Some(&filled)));
        assert!(f.is_rotation() && f.copied_keys().count() == 0);
        // A replace that drops the recorded token does not rotate (the old one counts).
        let mut replaced = secret(&[(GENERATE, "a,b"), (ROTATE, "2024-05")], &[]);
        let f = fill(plan(&replaced, Some(&done)));
        assert!(!f.is_rotation());
        assert_eq!(f.copied_keys().collect::<Vec<_>>(), ["a", "b"]);
        replaced = apply(&replaced, &f);
        assert_eq!(text(&replaced, "a"), text(&done, "a"));
    }

    #[test]
    fn a_manifest_without_the_token_never_rotates() {
        // Rotated imperatively (`kubectl annotate ... rotate=X`): stored with X recorded.
        let stored = secret(
            &[(GENERATE, "a,b"), (ROTATE, "X"), (ROTATED, "X")],
            &[("a", "1"), ("b", "2")],
        );
        // `kubectl replace` / `helm upgrade --force` with the original
        // manifest: no token, no record, one key preset.
        let original = secret(&[(GENERATE, "a,b")], &[("a", "1")]);
        let f = fill(plan(&original, Some(&stored)));
        assert!(!f.is_rotation(), "{f:?}");
        assert_eq!(f.copied_keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(f.rotated(), Some("X"), "the record is kept");
        let done = apply(&original, &f);
        assert_eq!(
            (text(&done, "a"), text(&done, "b")),
            ("1".into(), "2".into())
        );
        assert_eq!(plan(&done, Some(&stored)), Plan::Complete);
        // A record changed by hand in the new object does not count either.
        let mut forged = stored.clone();
        forged
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(ROTATED.into(), "Y".into());
        let Plan::Fill(f) = plan(&forged, Some(&stored)) else {
            panic!("the record is put back")
        };
        assert!(!f.is_rotation() && f.keys().is_empty());
        assert_eq!(f.rotated(), Some("X"));
        // Removing the token on a Secret without a record rotates nothing.
        let bare = secret(&[(GENERATE, "a")], &[("a", "1")]);
        assert_eq!(plan(&bare, Some(&bare)), Plan::Complete);
    }

    #[test]
    fn a_first_token_on_a_complete_secret_is_recorded_not_acted_on() {
        let s = secret(&[(GENERATE, "a"), (ROTATE, "1")], &[("a", "mine")]);
        let f = fill(plan(&s, None));
        assert!(!f.is_rotation() && f.keys().is_empty());
        assert_eq!(f.rotated(), Some("1"));
        let done = apply(&s, &f);
        assert_eq!(text(&done, "a"), "mine");
        assert_eq!(plan(&done, None), Plan::Complete);
    }

    #[test]
    fn aliases_of_the_original_operator_with_its_defaults() {
        // Its documented example, with the label added.
        let s = secret(
            &[(alias::ENABLE, "true"), (alias::KEY, "password")],
            &[("user", "quentin")],
        );
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["password"]);
        assert_eq!(
            chars(&f),
            &Chars {
                length: 32,
                charset: Charset::Alphanumeric,
                symbols: DEFAULT_SYMBOLS.into(),
                min: Default::default(),
            }
        );
        // No key annotation: "password"; empty values mean the default.
        let s = secret(
            &[
                (alias::ENABLE, "true"),
                (alias::LENGTH, ""),
                (alias::SPECIAL_CHAR, ""),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["password"]);
        assert_eq!(chars(&f).length, 32);
        let s = secret(
            &[
                (alias::ENABLE, "true"),
                (alias::LENGTH, "8"),
                (alias::SPECIAL_CHAR, "F"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!((chars(&f).length, chars(&f).symbols.as_str()), (8, ""));
    }

    #[test]
    fn new_names_win_over_aliases() {
        let s = secret(
            &[
                (alias::ENABLE, "true"),
                (alias::KEY, "old"),
                (alias::LENGTH, "8"),
                (alias::SPECIAL_CHAR, "true"),
                (GENERATE, "new"),
                (LENGTH, "10"),
                (SYMBOLS, "false"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["new"]);
        assert_eq!((chars(&f).length, chars(&f).symbols.as_str()), (10, ""));
        // Keys from the new annotation take the alias parameters it leaves unset.
        let s = secret(
            &[
                (alias::ENABLE, "true"),
                (alias::LENGTH, "8"),
                (GENERATE, "k"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!((chars(&f).length, chars(&f).symbols.as_str()), (8, ""));
        // Without enable, alias parameters are not read.
        let s = secret(&[(alias::LENGTH, "8"), (GENERATE, "k")], &[]);
        assert_eq!(chars(&fill(plan(&s, None))).length, 32);
    }

    #[test]
    fn hostile_values_are_invalid_with_what_to_fix() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[(GENERATE, "a"), (LENGTH, "0")], "from 1 to 1048576"),
            (&[(GENERATE, "a"), (LENGTH, "-3")], "from 1 to 1048576"),
            (&[(GENERATE, "a"), (LENGTH, "1048577")], "from 1 to 1048576"),
            (
                &[(GENERATE, "a"), (LENGTH, "99999999999999999999999999")],
                "from 1 to 1048576",
            ),
            (&[(GENERATE, "a"), (LENGTH, "")], "from 1 to 1048576"),
            (&[(GENERATE, "a"), (LENGTH, " 8")], "from 1 to 1048576"),
            (
                &[(GENERATE, "a"), (CHARSET, "klingon")],
                "use one of alphanumeric",
            ),
            (&[(GENERATE, "a"), (CHARSET, "Hex")], "is not a charset"),
            (&[(GENERATE, "a"), (SYMBOLS, "yes")], "true or false"),
            (&[(GENERATE, "a b")], "not a valid Secret data key"),
            (&[(GENERATE, "a/b")], "not a valid Secret data key"),
            (&[(GENERATE, "..a")], "not a valid Secret data key"),
            (&[(GENERATE, "")], "names no key"),
            (&[(GENERATE, " , ,")], "names no key"),
            (&[(alias::ENABLE, "true"), (alias::KEY, "")], "names no key"),
            (
                &[(alias::ENABLE, "true"), (alias::LENGTH, "x")],
                "from 1 to",
            ),
            (
                &[(alias::ENABLE, "true"), (alias::SPECIAL_CHAR, "maybe")],
                "true or false",
            ),
            (&[(GENERATE, "a"), (ROTATE, "a\nb")], "control characters"),
            (
                &[(GENERATE, "a,b"), (LENGTH, "1048576")],
                "exceed the 1 MiB",
            ),
        ];
        for (annotations, expect) in cases {
            let why = invalid(plan(&secret(annotations, &[]), None));
            assert!(why.contains(expect), "{annotations:?}: {why}");
        }
        // A too long key, a long value: quoted shortened.
        let long = "k".repeat(300);
        let why = invalid(plan(&secret(&[(GENERATE, &long)], &[]), None));
        assert!(why.contains("(300 characters)") && why.len() < 400, "{why}");
        let huge = "9".repeat(100_000);
        let why = invalid(plan(
            &secret(&[(GENERATE, "a"), (LENGTH, &huge)], &[]),
            None,
        ));
        assert!(why.len() < 300, "{why}");
        // Every problem at once.
        let why = invalid(plan(
            &secret(&[(GENERATE, "a b"), (LENGTH, "0"), (CHARSET, "x")], &[]),
            None,
        ));
        assert_eq!(why.matches("; ").count(), 2, "{why}");
    }

    #[test]
    fn keys_are_listed_once_and_bounded() {
        let f = fill(plan(&secret(&[(GENERATE, "a,a, a,b,")], &[]), None));
        assert_eq!(f.generated_keys(), ["a", "b"]);
        let many: Vec<String> = (0..=MAX_KEYS).map(|i| format!("k{i}")).collect();
        let why = invalid(plan(&secret(&[(GENERATE, &many.join(","))], &[]), None));
        assert!(why.contains("more than 64 keys"), "{why}");
    }

    #[test]
    fn a_fill_that_would_overflow_the_secret_is_invalid_and_quotes_no_value() {
        let big = "v".repeat(MAX_SECRET_BYTES - 10);
        let s = secret(&[(GENERATE, "a")], &[("blob", &big)]);
        let why = invalid(plan(&s, None));
        assert!(why.contains("1 MiB") && !why.contains("vvv"), "{why}");
    }

    /// The unknown annotations of a labelled Secret with `keys` annotated.
    fn unknown(keys: &[&str]) -> Vec<Unknown> {
        let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (*k, "12")).collect();
        unknown_annotations(&secret(&pairs, &[]).metadata)
    }

    fn suggestion(key: &str) -> Option<&'static str> {
        let found = unknown(&[key]);
        assert_eq!(found.len(), 1, "{key} is not reported: {found:?}");
        found[0].suggestion
    }

    #[test]
    fn a_misspelt_annotation_gets_the_nearest_key() {
        let cases = [
            ("randomsecret.io/lenght", LENGTH),
            ("randomsecret.io/lengh", LENGTH),
            ("randomsecret.io/Length", LENGTH),
            ("randomsecret.io/generat", GENERATE),
            ("randomsecret.io/genrate", GENERATE),
            ("randomsecret.io/char-set", CHARSET),
            ("randomsecret.io/symbol", SYMBOLS),
            ("randomsecret.io/rotatd", ROTATE),
        ];
        for (typo, want) in cases {
            assert_eq!(suggestion(typo), Some(want), "{typo}");
        }
        let found = unknown(&[GENERATE, "randomsecret.io/lenght"]);
        let message = found[0].message();
        assert_eq!(
            message,
            "unknown annotation \"randomsecret.io/lenght\" is ignored: did you mean randomsecret.io/length?"
        );
        // A typo changes nothing else: the fill takes the default.
        let s = secret(&[(GENERATE, "k"), ("randomsecret.io/lenght", "12")], &[]);
        assert_eq!(chars(&fill(plan(&s, None))).length, DEFAULT_LENGTH);
    }

    #[test]
    fn a_key_far_from_every_valid_one_gets_no_suggestion() {
        for key in [
            "randomsecret.io/owner",
            "randomsecret.io/len",
            "randomsecret.io/keys-to-generate",
            "randomsecret.io/x",
        ] {
            assert_eq!(suggestion(key), None, "{key}");
        }
        let message = unknown(&["randomsecret.io/owner"])[0].message();
        assert!(
            message.contains("\"randomsecret.io/owner\" is ignored")
                && message.contains("randomsecret.io/generate, length"),
            "{message}"
        );
        // A very long name costs no distance and gets none.
        let long = format!("{PREFIX}{}", "l".repeat(10_000));
        assert_eq!(suggestion(&long), None);
    }

    #[test]
    fn every_known_key_is_accepted_and_other_prefixes_are_not_ours() {
        assert_eq!(unknown(KNOWN), []);
        let others = [
            "kubectl.kubernetes.io/last-applied-configuration",
            "meta.helm.sh/release-name",
            "randomsecret.io",
            "length",
            "example.com/lenght",
            "argocd.argoproj.io/sync-wave",
        ];
        assert_eq!(unknown(&others), []);
    }

    #[test]
    fn the_original_operators_prefix_is_checked_too() {
        assert_eq!(
            suggestion("secret.a-cup-of.coffee/lenght"),
            Some(alias::LENGTH)
        );
        assert_eq!(
            suggestion("secret.a-cup-of.coffee/specialchar"),
            Some(alias::SPECIAL_CHAR)
        );
        assert_eq!(
            suggestion("secret.a-cup-of.coffee/enabled"),
            Some(alias::ENABLE)
        );
        // A name of ours under the other prefix.
        assert_eq!(
            suggestion("secret.a-cup-of.coffee/generate"),
            Some(GENERATE)
        );
        assert_eq!(
            suggestion("randomsecret.io/special-char"),
            Some(alias::SPECIAL_CHAR)
        );
        let message = unknown(&["secret.a-cup-of.coffee/rotation"])[0].message();
        assert!(
            message.contains("secret.a-cup-of.coffee/enable, key, length and special-char"),
            "{message}"
        );
    }

    #[test]
    fn a_misspelt_prefix_is_reported_only_with_a_name_of_ours() {
        assert_eq!(suggestion("randomsecrets.io/generate"), Some(GENERATE));
        assert_eq!(suggestion("random-secret.io/lenght"), Some(LENGTH));
        assert_eq!(suggestion("randomsecret.com/length"), Some(LENGTH));
        assert_eq!(
            suggestion("secret.a-cup-of-coffee/enable"),
            Some(alias::ENABLE)
        );
        assert_eq!(
            unknown(&["randomsecrets.io/team", "randomsecret.io.x/owner"]),
            []
        );
    }

    #[test]
    fn only_secrets_annotation_mode_handles_are_checked() {
        let typo = "randomsecret.io/generat";
        // Labelled, asking for nothing but for the typo: looked at, reported.
        let s = secret(&[(typo, "password")], &[]);
        assert_eq!(plan(&s, None), Plan::NotManaged);
        assert!(looked_at(&s.metadata));
        assert_eq!(unknown_annotations(&s.metadata).len(), 1);
        let plain = secret(&[("note", "x")], &[]);
        assert!(!looked_at(&plain.metadata));
        // Unlabelled, or a RandomSecret's version: not ours to judge.
        let mut unlabelled = s.clone();
        unlabelled.metadata.labels = None;
        assert!(!looked_at(&unlabelled.metadata));
        assert_eq!(unknown_annotations(&unlabelled.metadata), []);
        let mut version = s.clone();
        version
            .metadata
            .labels
            .get_or_insert_default()
            .insert(LABEL_NAME.into(), "db".into());
        assert_eq!(unknown_annotations(&version.metadata), []);
    }

    #[test]
    fn messages_fit_an_event_and_the_admission_warnings() {
        let names: Vec<String> = (0..100)
            .map(|i| format!("{PREFIX}{i}{}", "\u{1}".repeat(300)))
            .collect();
        let keys: Vec<&str> = names.iter().map(String::as_str).collect();
        let found = unknown(&keys);
        assert_eq!(found.len(), 100);
        let note = unknown_note(&found).unwrap();
        assert!(note.len() <= NOTE_BYTES, "{} bytes", note.len());
        assert!(note.ends_with("more unknown annotations"), "{note}");
        let warnings = unknown_warnings(&found);
        assert_eq!(warnings.len(), WARNINGS + 1);
        assert_eq!(warnings[WARNINGS], "and 95 more unknown annotations");
        // Keys as the apiserver stores them: each warning below its 256 characters.
        let long = format!("{PREFIX}{}", "a".repeat(63));
        let found = unknown(&[long.as_str(), "randomsecret.io/lenght"]);
        for w in unknown_warnings(&found) {
            assert!(w.len() + "randomsecret: ".len() <= 256, "{w}");
        }
        assert_eq!(
            unknown_note(&found)
                .unwrap()
                .matches("unknown annotation")
                .count(),
            2
        );
        assert_eq!(unknown_note(&[]), None);
    }

    /// Every `randomsecret.io/<name>` (or alias) string in the code outside
    /// tests is a key of ours: it must be in [`KNOWN`], or a Secret carrying
    /// it would be told it is unknown.
    #[test]
    fn every_key_the_code_defines_is_known() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![root];
        let mut found = BTreeSet::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text
                .lines()
                .take_while(|l| l.trim() != "#[cfg(test)]")
                .filter(|l| !l.trim_start().starts_with("//"));
            for line in code {
                // Keys of ours built by `crate::api::key!("k")`.
                for (at, _) in line.match_indices("key!(\"") {
                    let rest = &line[at + "key!(\"".len()..];
                    let name = &rest[..rest.find('"').unwrap_or(rest.len())];
                    if !name.is_empty() {
                        found.insert((format!("{PREFIX}{name}"), path.display().to_string()));
                    }
                }
                for prefix in PREFIXES {
                    let quoted = format!("\"{prefix}");
                    for (at, _) in line.match_indices(&quoted) {
                        let rest = &line[at + 1..];
                        let literal = &rest[..rest.find('"').unwrap_or(rest.len())];
                        let name = &literal[prefix.len()..];
                        // Keys only: not an apiVersion (`randomsecret.io/v1`)
                        // nor a longer path (a proof domain).
                        let api_version = name.strip_prefix('v').is_some_and(|v| {
                            !v.is_empty() && v.chars().all(|c| c.is_ascii_digit())
                        });
                        let key = !name.is_empty()
                            && name
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                        if key && !api_version {
                            found.insert((literal.to_string(), path.display().to_string()));
                        }
                    }
                }
            }
        }
        assert!(found.len() >= 20, "the search found too little: {found:?}");
        let missing: Vec<String> = found
            .iter()
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .filter(|(k, _)| !NOT_READ.iter().any(|(n, _)| n == k))
            .map(|(k, at)| format!("{k} ({at})"))
            .collect();
        assert!(
            missing.is_empty(),
            "add these keys to annotated::rules::KNOWN: {missing:?}"
        );
    }

    // ---- Kinds: randomsecret.io/type, encoding, algorithm, bits ----

    fn text_of(values: &BTreeMap<String, ByteString>, k: &str) -> String {
        String::from_utf8(values[k].0.clone()).unwrap()
    }

    fn refused(p: Plan) -> Refusal {
        match p {
            Plan::Refused(r) => r,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn bytes_are_length_bytes_in_the_encoding() {
        let s = secret(
            &[
                (GENERATE, "fernet"),
                (TYPE, "bytes"),
                (ENCODING, "base64url"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!(
            f.kind(),
            &Kind::Bytes(Bytes {
                length: 32,
                encoding: Encoding::Base64url
            })
        );
        let v = f.values().unwrap();
        let raw = data_encoding::BASE64URL.decode(&v["fernet"].0).unwrap();
        assert_eq!(raw.len(), 32);
        // Every encoding, a length in bytes; default base64.
        for e in Encoding::ALL {
            let s = secret(
                &[
                    (GENERATE, "k"),
                    (TYPE, "bytes"),
                    (LENGTH, "20"),
                    (ENCODING, e.as_str()),
                ],
                &[],
            );
            let v = fill(plan(&s, None)).values().unwrap();
            let raw = match e.codec() {
                Some(c) => c.decode(&v["k"].0).unwrap(),
                None => v["k"].0.clone(),
            };
            assert_eq!(raw.len(), 20, "{e:?}");
        }
        let s = secret(&[(GENERATE, "k"), (TYPE, "bytes")], &[]);
        assert!(
            matches!(fill(plan(&s, None)).kind(), Kind::Bytes(b) if b.encoding == Encoding::Base64)
        );
    }

    #[test]
    fn uuids_are_version_4() {
        let s = secret(
            &[(GENERATE, "id,other"), (TYPE, "uuid")],
            &[("other", "kept")],
        );
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["id"]);
        let v = f.values().unwrap();
        let u = uuid::Uuid::parse_str(&text_of(&v, "id")).unwrap();
        assert_eq!(u.get_version_num(), 4);
    }

    #[test]
    fn an_ssh_key_pair_is_made_whole_under_the_conventional_keys() {
        let s = secret(&[(TYPE, "ssh-keypair")], &[]);
        assert!(asks(s.metadata.annotations.as_ref()), "type alone asks");
        let f = fill(plan(&s, None));
        assert_eq!(f.generated_keys(), ["ssh-privatekey", "ssh-publickey"]);
        assert_eq!(
            f.kind(),
            &Kind::SshKeyPair(KeyShape {
                algorithm: KeyAlgorithm::Ed25519,
                size: 0
            })
        );
        assert!(!f.costly() && f.without_rsa().is_none());
        let v = f.values().unwrap();
        let private = text_of(&v, "ssh-privatekey");
        assert_eq!(
            crate::generate::pair::ssh_public(&private).unwrap(),
            text_of(&v, "ssh-publickey"),
            "the public key is the private key's"
        );
        let done = apply(&s, &f);
        assert_eq!(plan(&done, None), Plan::Complete);
        // Listed keys: one pair each, the public key beside it as <key>.pub.
        let s = secret(
            &[
                (GENERATE, "id_deploy, ssh-privatekey"),
                (TYPE, "ssh-keypair"),
                (ALGORITHM, "ecdsa"),
                (BITS, "384"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!(
            f.keys(),
            [
                "id_deploy",
                "id_deploy.pub",
                "ssh-privatekey",
                "ssh-publickey"
            ]
        );
        let v = f.values().unwrap();
        assert!(text_of(&v, "id_deploy.pub").starts_with("ecdsa-sha2-nistp384 "));
        // Defaults of each algorithm.
        for (alg, size) in [("ecdsa", 256), ("rsa", 3072)] {
            let s = secret(&[(TYPE, "ssh-keypair"), (ALGORITHM, alg)], &[]);
            let Kind::SshKeyPair(shape) = *fill(plan(&s, None)).kind() else {
                panic!()
            };
            assert_eq!(shape.size, size, "{alg}");
        }
    }

    #[test]
    fn half_a_key_pair_is_reported_never_completed_or_overwritten() {
        for (have, lack) in [
            ("ssh-privatekey", "ssh-publickey"),
            ("ssh-publickey", "ssh-privatekey"),
        ] {
            let s = secret(&[(TYPE, "ssh-keypair")], &[(have, "SECRET-half")]);
            let r = refused(plan(&s, None));
            assert_eq!(
                r,
                Refusal::IncompletePair {
                    have: vec![have.into()],
                    lack: vec![lack.into()]
                }
            );
            assert_eq!(r.reason(), "IncompletePair");
            let m = r.message();
            assert!(
                m.contains(have) && m.contains(lack) && !m.contains("SECRET"),
                "{m}"
            );
        }
        // Both set: complete; a rotation makes both again.
        let s = secret(
            &[(TYPE, "ssh-keypair"), (ROTATED, "")],
            &[("ssh-privatekey", "a"), ("ssh-publickey", "b")],
        );
        assert_eq!(plan(&s, None), Plan::Complete);
        let mut asked = s.clone();
        asked
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(ROTATE.into(), "1".into());
        let f = fill(plan(&asked, None));
        assert!(f.is_rotation());
        assert_eq!(f.generated_keys(), ["ssh-privatekey", "ssh-publickey"]);
        // One pair of two incomplete: nothing is written.
        let s = secret(
            &[(GENERATE, "a,b"), (TYPE, "ssh-keypair")],
            &[("b.pub", "x")],
        );
        assert_eq!(refused(plan(&s, None)).reason(), "IncompletePair");
    }

    #[test]
    fn update_copies_a_pair_whole_or_not_at_all() {
        let annotations = [(TYPE, "ssh-keypair"), (ROTATED, "")];
        let old = secret(
            &annotations,
            &[
                ("ssh-privatekey", "old-private"),
                ("ssh-publickey", "old-public"),
            ],
        );
        // A replace without the pair: both copied.
        let f = fill(plan(&secret(&annotations, &[]), Some(&old)));
        assert_eq!(
            f.copied_keys().collect::<Vec<_>>(),
            ["ssh-privatekey", "ssh-publickey"]
        );
        assert!(f.generated_keys().is_empty());
        // Without the public key only, the private key unchanged: copied.
        let new = secret(&annotations, &[("ssh-privatekey", "old-private")]);
        let f = fill(plan(&new, Some(&old)));
        assert_eq!(f.copied_keys().collect::<Vec<_>>(), ["ssh-publickey"]);
        // A new private key with the stored public key would not match: refused.
        let new = secret(&annotations, &[("ssh-privatekey", "new-private")]);
        assert_eq!(
            refused(plan(&new, Some(&old))),
            Refusal::IncompletePair {
                have: vec!["ssh-privatekey".into()],
                lack: vec!["ssh-publickey".into()]
            }
        );
    }

    #[test]
    fn basic_auth_writes_username_password_and_a_bcrypt_line() {
        let s = secret(&[(TYPE, "basic-auth")], &[]);
        let f = fill(plan(&s, None));
        assert_eq!(f.keys(), ["auth", "password", "username"]);
        assert!(f.costly(), "bcrypt");
        let v = f.values().unwrap();
        let password = text_of(&v, "password");
        assert_eq!(password.len(), 32);
        assert!(password.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(text_of(&v, "username"), "admin");
        let line = text_of(&v, "auth");
        let hash = line.strip_prefix("admin:").unwrap().trim_end();
        assert!(hash.starts_with("$2y$10$"), "{line}");
        assert!(bcrypt::verify(&password, hash).unwrap());
        let done = apply(&s, &f);
        assert_eq!(plan(&done, None), Plan::Complete);

        // A preset user and password are kept: only the line is made.
        let s = secret(
            &[(TYPE, "basic-auth")],
            &[("username", "ops"), ("password", "preset-pw")],
        );
        let f = fill(plan(&s, None));
        assert_eq!(f.keys(), ["auth"]);
        let line = text_of(&f.values().unwrap(), "auth");
        let hash = line.strip_prefix("ops:").unwrap().trim_end();
        assert!(bcrypt::verify("preset-pw", hash).unwrap());

        // The password's length and alphabet are ours.
        let s = secret(
            &[(TYPE, "basic-auth"), (LENGTH, "20"), (CHARSET, "hex")],
            &[],
        );
        let v = fill(plan(&s, None)).values().unwrap();
        let p = text_of(&v, "password");
        assert!(p.len() == 20 && p.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn basic_auth_with_a_line_and_no_password_is_reported() {
        let s = secret(&[(TYPE, "basic-auth")], &[("auth", "admin:$2y$10$SECRET")]);
        let r = refused(plan(&s, None));
        assert_eq!(
            r,
            Refusal::IncompletePair {
                have: vec!["auth".into()],
                lack: vec!["username".into(), "password".into()]
            }
        );
        assert!(!r.message().contains("SECRET"), "{}", r.message());
        // All three: complete (a Secret mittwald filled).
        let s = secret(
            &[(mittwald::TYPE, "basic-auth")],
            &[("auth", "a:h"), ("username", "a"), ("password", "p")],
        );
        assert_eq!(plan(&s, None), Plan::Complete);
        // A preset password bcrypt cannot read, or a user an htpasswd line
        // cannot hold: invalid, quoting neither.
        let long = "SECRET".repeat(13);
        let why = invalid(plan(
            &secret(&[(TYPE, "basic-auth")], &[("password", &long)]),
            None,
        ));
        assert!(
            why.contains("at most 72 bytes") && !why.contains("SECRET"),
            "{why}"
        );
        let why = invalid(plan(
            &secret(&[(TYPE, "basic-auth")], &[("username", "SECRET:x")]),
            None,
        ));
        assert!(
            why.contains("key username") && !why.contains("SECRET"),
            "{why}"
        );
    }

    // ---- mittwald's annotations, read as aliases ----

    #[test]
    fn mittwald_strings_are_40_characters_of_base64_by_default() {
        let s = secret(&[(mittwald::AUTOGENERATE, "password,token")], &[]);
        assert!(asks(s.metadata.annotations.as_ref()));
        let f = fill(plan(&s, None));
        assert_eq!(
            f.kind(),
            &Kind::Cut(Bytes {
                length: 40,
                encoding: Encoding::Base64
            })
        );
        assert_eq!(f.generated_keys(), ["password", "token"]);
        let v = f.values().unwrap();
        for k in ["password", "token"] {
            let t = text_of(&v, k);
            assert_eq!(t.len(), 40);
            assert!(
                t.chars().all(|c| Charset::Base64.chars().contains(c)),
                "{t}"
            );
        }
        // The type it adds after its first fill changes nothing.
        let s = secret(
            &[
                (mittwald::AUTOGENERATE, "password"),
                (mittwald::TYPE, "string"),
            ],
            &[],
        );
        assert_eq!(fill(plan(&s, None)).kind(), f.kind());
        // Length and encoding: characters of the encoding, cut.
        let s = secret(
            &[
                (mittwald::AUTOGENERATE, "k"),
                (mittwald::LENGTH, "15"),
                (mittwald::ENCODING, "hex"),
            ],
            &[],
        );
        let v = fill(plan(&s, None)).values().unwrap();
        let t = text_of(&v, "k");
        assert!(
            t.len() == 15 && t.chars().all(|c| c.is_ascii_hexdigit()),
            "{t}"
        );
    }

    #[test]
    fn mittwald_b_suffix_is_a_length_in_bytes_encoded_whole() {
        for (length, encoding, raw, out) in [
            ("32B", "base64url", 32, 44),
            ("32b", "base64", 32, 44),
            ("16B", "hex", 16, 32),
            ("10B", "base32", 10, 16),
            ("24B", "raw", 24, 24),
        ] {
            let s = secret(
                &[
                    (mittwald::AUTOGENERATE, "k"),
                    (mittwald::LENGTH, length),
                    (mittwald::ENCODING, encoding),
                ],
                &[],
            );
            let f = fill(plan(&s, None));
            let Kind::Bytes(b) = f.kind() else {
                panic!("{length}: {:?}", f.kind())
            };
            assert_eq!(b.length, raw);
            let v = f.values().unwrap();
            assert_eq!(v["k"].0.len(), out, "{length} {encoding}");
            if let Some(codec) = b.encoding.codec() {
                assert_eq!(codec.decode(&v["k"].0).unwrap().len(), raw);
            }
        }
        // Our own length takes no suffix.
        let why = invalid(plan(
            &secret(&[(GENERATE, "k"), (LENGTH, "32B")], &[]),
            None,
        ));
        assert!(why.contains("whole number from 1 to 1048576"), "{why}");
    }

    #[test]
    fn mittwald_ssh_keys_are_rsa_of_its_length_in_bits() {
        let s = secret(&[(mittwald::TYPE, "ssh-keypair")], &[]);
        let f = fill(plan(&s, None));
        assert_eq!(
            f.kind(),
            &Kind::SshKeyPair(KeyShape {
                algorithm: KeyAlgorithm::Rsa,
                size: 2048
            })
        );
        assert_eq!(f.generated_keys(), ["ssh-privatekey", "ssh-publickey"]);
        assert!(f.costly());
        // Its length is the key's size; its encoding and autogenerate are
        // not read for key pairs (as mittwald does not).
        let s = secret(
            &[
                (mittwald::TYPE, "ssh-keypair"),
                (mittwald::LENGTH, "4096"),
                (mittwald::ENCODING, "hex"),
                (mittwald::AUTOGENERATE, "password"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert!(matches!(f.kind(), Kind::SshKeyPair(k) if k.size == 4096));
        assert_eq!(f.generated_keys(), ["ssh-privatekey", "ssh-publickey"]);
        let why = invalid(plan(
            &secret(
                &[(mittwald::TYPE, "ssh-keypair"), (mittwald::LENGTH, "1024")],
                &[],
            ),
            None,
        ));
        assert!(why.contains("use 2048, 3072, 4096"), "{why}");
        // Ours win: an ed25519 key for a mittwald-typed Secret.
        let s = secret(
            &[(mittwald::TYPE, "ssh-keypair"), (ALGORITHM, "ed25519")],
            &[],
        );
        assert!(
            matches!(fill(plan(&s, None)).kind(), Kind::SshKeyPair(k) if k.algorithm == KeyAlgorithm::Ed25519)
        );
    }

    #[test]
    fn mittwald_basic_auth_with_its_username_and_password_defaults() {
        let s = secret(
            &[
                (mittwald::TYPE, "basic-auth"),
                (mittwald::BASIC_AUTH_USERNAME, "ops"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        let Kind::BasicAuth(a) = f.kind() else {
            panic!()
        };
        assert_eq!((a.username.as_str(), a.named), ("ops", true));
        assert_eq!(
            *a.password,
            Kind::Cut(Bytes {
                length: 40,
                encoding: Encoding::Base64
            })
        );
        let v = f.values().unwrap();
        assert_eq!(text_of(&v, "username"), "ops");
        let password = text_of(&v, "password");
        assert_eq!(password.len(), 40);
        let line = text_of(&v, "auth");
        let hash = line.strip_prefix("ops:").unwrap().trim_end();
        assert!(bcrypt::verify(&password, hash).unwrap());
        // A username key that names another user than the annotation: invalid.
        let s = secret(
            &[
                (mittwald::TYPE, "basic-auth"),
                (mittwald::BASIC_AUTH_USERNAME, "ops"),
            ],
            &[("username", "SECRET-someone")],
        );
        let why = invalid(plan(&s, None));
        assert!(
            why.contains("another user") && !why.contains("SECRET"),
            "{why}"
        );
        // Its raw encoding cannot be a password; nor can more than 72 bytes.
        for (k, v, expect) in [
            (mittwald::ENCODING, "raw", "must be text"),
            (mittwald::LENGTH, "73", "at most 72"),
            (mittwald::LENGTH, "60B", "at most 72"),
            (mittwald::BASIC_AUTH_USERNAME, "a:b", "htpasswd line"),
        ] {
            let why = invalid(plan(
                &secret(&[(mittwald::TYPE, "basic-auth"), (k, v)], &[]),
                None,
            ));
            assert!(why.contains(expect), "{k}={v}: {why}");
        }
    }

    #[test]
    fn a_mittwald_secret_migrates_by_adding_the_label() {
        // Already filled by mittwald (its markers included): complete.
        let s = secret(
            &[
                (mittwald::AUTOGENERATE, "password"),
                (mittwald::TYPE, "string"),
                (mittwald::SECURE, "yes"),
                (mittwald::GENERATED_AT, "2020-04-03T14:07:47+02:00"),
            ],
            &[("password", "kept")],
        );
        assert_eq!(unknown_annotations(&s.metadata), []);
        assert_eq!(plan(&s, None), Plan::Complete);
        // Not filled yet: filled as mittwald would (40 characters of base64).
        let mut empty = s.clone();
        empty.data = None;
        let f = fill(plan(&empty, None));
        assert_eq!(f.generated_keys(), ["password"]);
        assert!(matches!(f.kind(), Kind::Cut(b) if b.length == 40));
        // Without the label: nothing.
        let mut unlabelled = s.clone();
        unlabelled.metadata.labels = None;
        assert_eq!(plan(&unlabelled, None), Plan::NotManaged);
        // An empty type asks for nothing, as in mittwald.
        assert_eq!(
            plan(&secret(&[(mittwald::TYPE, "")], &[]), None),
            Plan::NotManaged
        );
    }

    #[test]
    fn bad_kind_values_say_what_to_fix() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[(TYPE, "password")],
                "is not a type: use one of string, bytes, uuid, ssh-keypair, basic-auth",
            ),
            (&[(TYPE, "")], "is not a type"),
            (
                &[(TYPE, "uuid")],
                "names no key: list the keys to fill in randomsecret.io/generate",
            ),
            (
                &[(mittwald::TYPE, "string")],
                "names no key: list the keys to fill in secret-generator.v1.mittwald.de/autogenerate",
            ),
            (
                &[(mittwald::TYPE, "bytes")],
                "use one of string, ssh-keypair, basic-auth (set randomsecret.io/type for bytes)",
            ),
            (&[(mittwald::TYPE, "sshkeypair")], "is not a type"),
            (
                &[(GENERATE, "k"), (TYPE, "bytes"), (ENCODING, "base58")],
                "use one of raw, base64, base64url, base32, hex",
            ),
            (
                &[
                    (mittwald::AUTOGENERATE, "k"),
                    (mittwald::ENCODING, "base58"),
                ],
                "is not an encoding",
            ),
            (
                &[(GENERATE, "k"), (TYPE, "bytes"), (LENGTH, "524289")],
                "from 1 to 524288",
            ),
            (
                &[(mittwald::AUTOGENERATE, "k"), (mittwald::LENGTH, "0B")],
                "optionally followed by B",
            ),
            (
                &[(mittwald::AUTOGENERATE, "k"), (mittwald::LENGTH, "-5")],
                "optionally followed by B",
            ),
            (
                &[(GENERATE, "k"), (ENCODING, "hex")],
                "randomsecret.io/encoding is not read with randomsecret.io/type string: remove it (a string's alphabet is randomsecret.io/charset",
            ),
            (
                &[(GENERATE, "k"), (TYPE, "bytes"), (CHARSET, "hex")],
                "charset is not read with randomsecret.io/type bytes",
            ),
            (
                &[(GENERATE, "k"), (TYPE, "uuid"), (LENGTH, "8")],
                "length is not read with randomsecret.io/type uuid",
            ),
            (
                &[(TYPE, "ssh-keypair"), (LENGTH, "4096")],
                "(a key's size is randomsecret.io/bits)",
            ),
            (
                &[(TYPE, "ssh-keypair"), (ALGORITHM, "dsa")],
                "use ed25519, ecdsa or rsa",
            ),
            (
                &[(TYPE, "ssh-keypair"), (BITS, "256")],
                "an ed25519 key has no size",
            ),
            (
                &[(TYPE, "ssh-keypair"), (ALGORITHM, "rsa"), (BITS, "1024")],
                "use 2048, 3072, 4096",
            ),
            (
                &[(TYPE, "ssh-keypair"), (ALGORITHM, "ecdsa"), (BITS, "255")],
                "use 256, 384, 521",
            ),
            (
                &[(GENERATE, "k"), (ALGORITHM, "rsa")],
                "algorithm is not read with randomsecret.io/type string",
            ),
            (
                &[(TYPE, "basic-auth"), (GENERATE, "auth")],
                "is not read with randomsecret.io/type basic-auth, which writes the keys username, password and auth",
            ),
            (&[(TYPE, "basic-auth"), (LENGTH, "73")], "at most 72"),
            (
                &[(TYPE, "ssh-keypair"), (alias::ENABLE, "true")],
                "makes random strings",
            ),
            (
                &[(TYPE, "ssh-keypair"), (GENERATE, "a,a.pub")],
                "would hold two values",
            ),
            (
                &[(TYPE, "ssh-keypair"), (GENERATE, &"k".repeat(252))],
                "not a valid Secret data key",
            ),
            (
                &[(GENERATE, "a,b"), (TYPE, "bytes"), (LENGTH, "400000")],
                "exceed the 1 MiB",
            ),
        ];
        for (annotations, expect) in cases {
            let why = invalid(plan(&secret(annotations, &[]), None));
            assert!(why.contains(expect), "{annotations:?}: {why}");
        }
    }

    #[test]
    fn the_webhook_leaves_rsa_pairs_to_the_controller() {
        let s = secret(&[(mittwald::TYPE, "ssh-keypair")], &[]);
        let f = fill(plan(&s, None));
        let (rest, left) = f.without_rsa().unwrap();
        assert_eq!(left, ["ssh-privatekey", "ssh-publickey"]);
        assert!(rest.keys().is_empty() && rest.rotated().is_none());
        assert!(rest.values().unwrap().is_empty());
        // An UPDATE that lost the record: the rest puts it back, so the
        // controller's fill sees the rotation this one saw.
        let old = secret(
            &[(TYPE, "ssh-keypair"), (ALGORITHM, "rsa"), (ROTATED, "1")],
            &[("ssh-privatekey", "a"), ("ssh-publickey", "b")],
        );
        let new = secret(
            &[(TYPE, "ssh-keypair"), (ALGORITHM, "rsa"), (ROTATE, "2")],
            &[("ssh-privatekey", "a"), ("ssh-publickey", "b")],
        );
        let f = fill(plan(&new, Some(&old)));
        assert!(f.is_rotation() && f.rotated() == Some("2"));
        let (rest, _) = f.without_rsa().unwrap();
        assert_eq!(rest.rotated(), Some("1"));
        let mut stored = new.clone();
        stored
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(ROTATED.into(), "1".into());
        assert!(
            fill(plan(&stored, None)).is_rotation(),
            "the controller rotates"
        );
        // A copy on UPDATE is no RSA generation: nothing is left.
        let f = fill(plan(
            &secret(&[(mittwald::TYPE, "ssh-keypair")], &[]),
            Some(&old),
        ));
        assert!(f.without_rsa().is_none(), "{f:?}");
    }

    #[test]
    fn mittwald_annotations_are_checked_for_typos() {
        assert_eq!(
            suggestion("secret-generator.v1.mittwald.de/lenght"),
            Some(mittwald::LENGTH)
        );
        assert_eq!(
            suggestion("secret-generator.v1.mittwald.de/autogenrate"),
            Some(mittwald::AUTOGENERATE)
        );
        assert_eq!(
            suggestion("secret-generator.v1.mittwald.de/generate"),
            Some(mittwald::AUTOGENERATE)
        );
        assert_eq!(suggestion("randomsecret.io/username"), None);
        assert_eq!(suggestion("randomsecret.io/typ"), Some(TYPE));
        assert_eq!(suggestion("randomsecret.io/encodng"), Some(ENCODING));
        assert_eq!(
            suggestion("secret-generator.v1.mittwald.io/type"),
            Some(mittwald::TYPE)
        );
        let found = unknown(&[mittwald::REGENERATE]);
        assert_eq!(found.len(), 1);
        let m = found[0].message();
        assert!(
            m.contains("is not read") && m.contains("randomsecret.io/rotate"),
            "{m}"
        );
        let m = unknown(&["secret-generator.v1.mittwald.de/owner"])[0].message();
        assert!(
            m.contains("randomsecret reads mittwald's autogenerate, type, length, encoding and basic-auth-username"),
            "{m}"
        );
        // Every message fits the apiserver's 256 characters per warning.
        let long = [
            format!("{}{}", mittwald::PREFIX, "a".repeat(63)),
            format!("{}{}", alias::PREFIX, "a".repeat(63)),
            format!("{PREFIX}{}", "a".repeat(63)),
            mittwald::REGENERATE.to_string(),
        ];
        let keys: Vec<&str> = long.iter().map(String::as_str).collect();
        for w in unknown_warnings(&unknown(&keys)) {
            assert!(w.len() + "randomsecret: ".len() <= 256, "{} {w}", w.len());
        }
    }

    impl Plan {
        /// The plan's shape without random values, to compare two plans.
        fn is_fill_of(&self) -> Option<(Vec<String>, Option<String>)> {
            match self {
                Plan::Fill(f) => Some((
                    f.keys().into_iter().map(String::from).collect(),
                    f.rotated().map(String::from),
                )),
                _ => None,
            }
        }
    }
}
