//! The `RandomSecret` API (group `randomsecret.io`, version `v1`): types, CRD
//! schema and admission-time (CEL) validation. No IO here. The ground floor:
//! every CRD type is here, and this module imports no other of the crate.
//!
//! - this file: `RandomSecret`, its spec and status, the well-known labels
//!   and annotations of produced Secrets, and [`crds`];
//! - [`push`]: `spec.push` and `status.push`;
//! - [`connections`]: the connection kinds the pushes name;
//! - [`cluster`]: `ClusterRandomSecret`, a RandomSecret stamped into many namespaces;
//! - [`rules`]: the schema's rules as CEL and as Rust checks, from one table.

pub mod cluster;
pub mod connections;
pub mod push;
pub mod rules;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The project's name, spelled here once. A macro rather than a const, so
/// that `concat!` builds every other name of ours from it at compile time:
/// the API group, the keys of labels and annotations ([`key!`]), the field
/// managers, the metrics prefix, the Event reporter. (Attributes that take
/// only a literal, such as the CRDs' `group`, are pinned to [`GROUP`] by a
/// test.)
macro_rules! project {
    () => {
        "randomsecret"
    };
}
pub(crate) use project;

/// A key of ours (a label, annotation or finalizer): `randomsecret.io/<k>`.
macro_rules! key {
    ($k:literal) => {
        concat!($crate::api::project!(), ".io/", $k)
    };
}
pub(crate) use key;

/// The name: the metrics prefix, the Event reporter, the field manager.
pub const NAME: &str = project!();
pub const GROUP: &str = concat!(project!(), ".io");
/// The apiVersion of every kind of ours.
pub const API_VERSION: &str = concat!(project!(), ".io/v1");
/// The prefix of every key of ours (annotations, labels, finalizers).
pub const PREFIX: &str = key!("");
/// Label on produced Secrets: the RandomSecret that owns the version.
pub const LABEL_NAME: &str = key!("name");
/// Label on produced Secrets: the version's hash.
pub const LABEL_HASH: &str = key!("hash");
/// Annotation on produced Secrets: when the version was created, to the
/// nanosecond (creationTimestamp has whole seconds; versions are ordered by it).
pub const ANNOTATION_CREATED: &str = key!("created");
/// Finalizer on every version Secret while it is current or held: a delete
/// (by hand, or by the garbage collector) leaves it readable, Terminating,
/// until retention releases it (`reconciler::protection`).
pub const FINALIZER_IN_USE: &str = key!("in-use");
/// On the Secrets randomsecret keeps for itself (the proof key, the
/// webhook's certificate): what the Secret is for.
pub const PURPOSE: &str = key!("purpose");

/// CEL: the map key `k` is a qualified name (a label or annotation key): an
/// optional DNS subdomain of at most 253 characters and '/', then a name of
/// at most 63 characters.
const QUALIFIED_NAME: &str = "size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (k.indexOf('/') < 0 || k.indexOf('/') <= 253)";
/// CEL: the data key of the JWKS of signing key `k` (and of `o`), with its default.
const JWKS_KEY_OF_K: &str =
    "(has(self.keys[k].signingKey.jwksKey) ? self.keys[k].signingKey.jwksKey : 'jwks.json')";
/// A key pair's public key name, defaults applied, for key `k` (CEL).
const PUBLIC_KEY_OF_K: &str = "(has(self.keys[k].sshKeyPair) ? (has(self.keys[k].sshKeyPair.publicKey) ? self.keys[k].sshKeyPair.publicKey : k + '.pub') : (has(self.keys[k].privateKey.publicKey) ? self.keys[k].privateKey.publicKey : k + '.pub'))";
const JWKS_KEY_OF_O: &str =
    "(has(self.keys[o].signingKey.jwksKey) ? self.keys[o].signingKey.jwksKey : 'jwks.json')";
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = NAME;

/// The status conditions the reconciler writes (kstatus: Ready always
/// present, Reconciling and Stalled saying why it is not Ready).
pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";
/// False (reason `PreviousUnavailable`) while the current version holds new
/// values for every generated key because the version it superseded could
/// not be read and proven when it was made; absent otherwise.
pub const CARRIED_OVER: &str = "CarriedOver";
/// The conditions this controller writes, in the order it writes them.
pub const CONDITIONS: [&str; 4] = [READY, RECONCILING, STALLED, CARRIED_OVER];
/// Tracking mode's condition, True while a tracking workload stays on an
/// older version after a rollback (absent otherwise). Written with
/// `status.pinnedWorkloads` by its own field manager, apart from the three
/// above: it is about workloads, never about the version, so it leaves Ready alone.
pub const WORKLOADS_PINNED: &str = "WorkloadsPinned";
/// The push's condition (`push::vault`), written by its own field manager:
/// True while the current version is in Vault.
pub const VAULT_SYNCED: &str = "VaultSynced";

/// Longest generated value, in characters: a Secret's data is limited to 1 MiB.
pub const MAX_LENGTH: i64 = 1_048_576;
/// Longest base name: room for `-` and the 10-character hash within 253.
pub const MAX_BASE_NAME: usize = 242;
/// Most random bytes of a `bytes` key: hex-encoded, 1 MiB.
pub const MAX_BYTES: i64 = 524_288;
/// Longest RandomSecret name: it is the `randomsecret.io/name` label value.
pub const MAX_OBJECT_NAME: usize = 63;
/// Most generated keys in one RandomSecret.
pub const MAX_KEYS: usize = 64;
/// Most distinct symbol characters (the alphabet stays below 256 entries).
pub const MAX_SYMBOLS: usize = 128;

/// Symbols of the original RandomSecret operator, used when symbols are on and
/// `symbolCharacters` is not set.
pub const DEFAULT_SYMBOLS: &str = "!@#$%^&*()-_=+[]{}|;:,.<>?/~`";
/// Short form defaults of the original operator.
pub const SHORT_FORM_KEY: &str = "password";
pub const SHORT_FORM_LENGTH: i64 = 32;

/// A RandomSecret describes generated and static values; the controller turns
/// each version of it into an immutable Secret named `<secretName>-<hash>`.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "randomsecret.io",
    version = "v1",
    kind = "RandomSecret",
    plural = "randomsecrets",
    singular = "randomsecret",
    namespaced,
    status = "RandomSecretStatus",
    shortname = "rsec",
    shortname = "ransec",
    shortname = "rasec",
    doc = "RandomSecret generates random values into versioned, immutable Secrets named <secretName>-<hash>, where the hash is computed from the spec.",
    printcolumn(name = "Secret", type_ = "string", json_path = ".status.secretName", description = "The current version's Secret"),
    printcolumn(name = "Ready", type_ = "string", json_path = ".status.conditions[?(@.type==\"Ready\")].status"),
    printcolumn(name = "Versions", type_ = "integer", json_path = ".status.liveVersions", priority = 1, description = "Live versions (current and retained)"),
    printcolumn(name = "Reason", type_ = "string", json_path = ".status.conditions[?(@.type==\"Ready\")].reason", description = "Why Ready is what it is (kubectl describe shows the message)"),
    printcolumn(name = "Next rotation", type_ = "string", json_path = ".status.nextRotation", priority = 1, description = "With rotateEvery: when the next version is due"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    validation = Rule::new("size(self.metadata.name) <= 63").message("metadata.name must be at most 63 characters (it is a label value on every version Secret): use a shorter name, and spec.secretName for a longer base name")
)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!(has(self.keys) && (has(self.key) || has(self.length) || has(self.specialChar)))").message("use either keys or the short form (key, length, specialChar), not both"),
    validation = Rule::new("(has(self.keys) && size(self.keys) > 0) || has(self.key) || has(self.length) || has(self.specialChar) || (has(self.static) && size(self.static) > 0)").message("no key at all: set keys (generated values), key/length (the short form), or static"),
    validation = Rule::new("!has(self.keys) || !has(self.static) || self.keys.all(k, !(k in self.static))").message("a key is both generated (keys) and static: remove it from one of them"),
    validation = Rule::new("!has(self.key) || !has(self.static) || !(self.key in self.static)").message("the short-form key is also in static: remove it from one of them"),
    validation = Rule::new("has(self.key) || !(has(self.length) || has(self.specialChar)) || !has(self.static) || !('password' in self.static)").message("static.password collides with the short form's default key \"password\": set key to another name"),
    validation = Rule::new(format!("!has(self.keys) || self.keys.all(k, !has(self.keys[k].signingKey) || !({JWKS_KEY_OF_K} in self.keys || (has(self.static) && {JWKS_KEY_OF_K} in self.static)))").as_str()).message("a signingKey's jwksKey (default jwks.json) is also a key of keys or static: set signingKey.jwksKey to another name"),
    validation = Rule::new(format!("!has(self.keys) || self.keys.all(k, !(has(self.keys[k].sshKeyPair) || has(self.keys[k].privateKey)) || !({PUBLIC_KEY_OF_K} in self.keys || (has(self.static) && {PUBLIC_KEY_OF_K} in self.static)))").as_str()).message("a key pair's publicKey (default <key>.pub) is also a key of keys or static: set sshKeyPair.publicKey or privateKey.publicKey to another name"),
    validation = Rule::new("!has(self.keys) || self.keys.all(k, !has(self.keys[k].certificate) || !has(self.keys[k].certificate.issuer) || (self.keys[k].certificate.issuer in self.keys && has(self.keys[self.keys[k].certificate.issuer].certificate) && has(self.keys[self.keys[k].certificate.issuer].certificate.isCA) && self.keys[self.keys[k].certificate.issuer].certificate.isCA))").message("certificate.issuer must name a key of keys that is a certificate with isCA: true"),
    validation = Rule::new("!has(self.keys) || self.keys.all(k, !has(self.keys[k].htpasswd) || (self.keys[k].htpasswd.passwordFrom in self.keys && has(self.keys[self.keys[k].htpasswd.passwordFrom].length)))").message("htpasswd.passwordFrom must name a key of keys that is a random string (has length)"),
    validation = Rule::new("!has(self.keys) || self.keys.all(k, !has(self.keys[k].htpasswd) || !(self.keys[k].htpasswd.passwordFrom in self.keys) || !has(self.keys[self.keys[k].htpasswd.passwordFrom].length) || self.keys[self.keys[k].htpasswd.passwordFrom].length <= 72)").message("htpasswd.passwordFrom names a random string longer than 72 characters, more than bcrypt reads: use length 72 or less"),
    validation = Rule::new(format!("!has(self.keys) || self.keys.all(k, !has(self.keys[k].signingKey) || self.keys.all(o, o == k || !has(self.keys[o].signingKey) || {JWKS_KEY_OF_K} != {JWKS_KEY_OF_O}))").as_str()).message("two signingKeys write their JWKS under the same jwksKey (default jwks.json): give each its own signingKey.jwksKey"),
)]
pub struct RandomSecretSpec {
    /// Base name of the produced Secrets (default: metadata.name). Each version is
    /// named <secretName>-<hash>. A DNS subdomain of at most 242 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 242))]
    #[x_kube(validation = Rule::new("self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')").message("secretName must be a DNS subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"))]
    pub secret_name: Option<String>,

    /// Generated values: a map from Secret data key to its generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new(format!("self.all(k, {})", rules::data_key_rule("k")).as_str()).message("every key must be a valid Secret data key: letters, digits, '-', '_' and '.', at most 253 characters, not '.' or '..' and not starting with '..'"))]
    pub keys: Option<BTreeMap<String, Generator>>,

    /// Short form of the original RandomSecret operator: the one generated key
    /// (default "password"). Do not combine with keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::data_key_rule("self").as_str()).message("key must be a valid Secret data key: letters, digits, '-', '_' and '.', not '.' or '..' and not starting with '..'"))]
    pub key: Option<String>,

    /// Short form: length of the generated value (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1048576))]
    pub length: Option<i64>,

    /// Short form: include symbols (!@#$%^&*()-_=+[]{}|;:,.<>?/~`) in the
    /// alphanumeric value (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub special_char: Option<bool>,

    /// Literal values copied into every version.
    #[serde(default, rename = "static", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new(format!("self.all(k, {})", rules::data_key_rule("k")).as_str()).message("every static key must be a valid Secret data key: letters, digits, '-', '_' and '.', at most 253 characters, not '.' or '..' and not starting with '..'"))]
    pub r#static: Option<BTreeMap<String, String>>,

    /// Opaque rotation token: changing it produces a new version with new
    /// values for every generated key. At most 253 characters, no control
    /// characters. Any other edit of the spec keeps the generated values of
    /// the keys whose generator it leaves unchanged (carried over from the
    /// version it supersedes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new(rules::rotation_rule().as_str()).message("rotation must not contain control characters (C0, DEL or C1)"))]
    pub rotation: Option<String>,

    /// Type of the produced Secrets (default Opaque).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new("self.matches('^[-._a-zA-Z0-9/]+$')").message("type must be a Secret type such as Opaque or example.com/custom (letters, digits, '-', '_', '.', '/')"))]
    pub r#type: Option<String>,

    /// Labels for the produced Secrets (not part of the version hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64, "additionalProperties" = {"type": "string", "maxLength": 63}))]
    #[x_kube(
        validation = Rule::new(format!("self.all(k, {QUALIFIED_NAME})").as_str()).message("secretLabels: each key must be a label key: an optional DNS-subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
        validation = Rule::new("self.all(k, self[k].matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))").message("secretLabels: each value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (or empty)"),
    )]
    pub secret_labels: Option<BTreeMap<String, String>>,

    /// Annotations for the produced Secrets (not part of the version hash).
    /// Keys with the prefix randomsecret.io/ are the controller's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(
        validation = Rule::new(format!("self.all(k, {QUALIFIED_NAME})").as_str()).message("secretAnnotations: each key must be an annotation key: an optional DNS-subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
        validation = Rule::new("self.all(k, !k.startsWith('randomsecret.io/'))").message("secretAnnotations: keys with the prefix randomsecret.io/ are the controller's own (proof of creation, push targets)"),
    )]
    pub secret_annotations: Option<BTreeMap<String, String>>,

    /// Time-based rotation, for tracking mode: a new version every period
    /// (e.g. 720h, 90m; at least 1m and at most 876000h, 100 years), counted
    /// from the RandomSecret's creation. Names then depend on time and cannot
    /// be computed offline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = rules::MAX_PERIOD_TEXT))]
    #[x_kube(
        validation = Rule::new(rules::PERIOD_FORMAT_RULE).message(rules::PERIOD_FORMAT_MESSAGE),
        validation = Rule::new(rules::period_range_rule()).message(rules::period_range_message().as_str()),
    )]
    pub rotate_every: Option<String>,

    /// How many superseded versions to keep after nothing references them (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub history: Option<i32>,

    /// Where each version is also sent: `vault`, a Vault or OpenBao KV v2
    /// path (the current version), and `clusters`, downstream clusters that
    /// get a create-only copy of every version. Not part of the version hash:
    /// adding or changing it keeps the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<crate::api::push::PushSpec>,
}

/// How one value is generated.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!has(self.symbolCharacters) || !has(self.symbols) || self.symbols").message("symbolCharacters is set but symbols is false: remove one of them"),
    validation = Rule::new("[has(self.length), has(self.bytes), has(self.uuid), has(self.signingKey), has(self.sshKeyPair), has(self.privateKey), has(self.htpasswd), has(self.template), has(self.certificate)].filter(x, x).size() == 1").message("set exactly one of length (a random string), bytes, uuid, signingKey, sshKeyPair, privateKey, htpasswd, template and certificate"),
    validation = Rule::new("has(self.length) || !(has(self.charset) || has(self.symbols) || has(self.symbolCharacters) || has(self.minDigits) || has(self.minLower) || has(self.minUpper) || has(self.minSymbols))").message("charset, symbols, symbolCharacters and minDigits, minLower, minUpper, minSymbols are for random strings (length): remove them"),
    validation = Rule::new("!has(self.signingKey) || !has(self.previous)").message("previous is not for a signingKey: its previous public keys are in its JWKS (signingKey.keep)"),
    validation = Rule::new("!(has(self.sshKeyPair) || has(self.privateKey) || has(self.certificate)) || !has(self.previous)").message("previous is not for a key pair or certificate (sshKeyPair, privateKey, certificate): hand out the new public key or CA before using the new key instead"),
    validation = Rule::new("!(has(self.htpasswd) || has(self.template)) || !(has(self.previous) || has(self.rotation) || has(self.rotateEvery))").message("htpasswd and template are derived from other keys: remove previous, rotation and rotateEvery (rotate the keys they read instead)"),
    validation = Rule::new("!has(self.length) || (has(self.minDigits) ? self.minDigits : 0) + (has(self.minLower) ? self.minLower : 0) + (has(self.minUpper) ? self.minUpper : 0) + (has(self.minSymbols) ? self.minSymbols : 0) <= self.length").message("minDigits + minLower + minUpper + minSymbols is more than length: lower them or raise length"),
    validation = Rule::new(format!("!has(self.minDigits) || self.minDigits == 0 || {}", rules::charset_in("0123456789")).as_str()).message("minDigits needs digits in the alphabet: charset alphanumeric, numeric, hex, base64, base64url or ascii"),
    validation = Rule::new(format!("!has(self.minLower) || self.minLower == 0 || {}", rules::charset_in("abcdefghijklmnopqrstuvwxyz")).as_str()).message("minLower needs lowercase letters in the alphabet: charset alphanumeric, alpha, lower, hex, base64, base64url or ascii"),
    validation = Rule::new(format!("!has(self.minUpper) || self.minUpper == 0 || {}", rules::charset_in("ABCDEFGHIJKLMNOPQRSTUVWXYZ")).as_str()).message("minUpper needs uppercase letters in the alphabet: charset alphanumeric, alpha, upper, base64, base64url or ascii"),
    validation = Rule::new(format!("!has(self.minSymbols) || self.minSymbols == 0 || (has(self.symbolCharacters) && (!has(self.symbols) || self.symbols)) || (has(self.symbols) && self.symbols) || {}", rules::charset_in("!+-_")).as_str()).message("minSymbols needs symbols in the alphabet: set symbols: true (or symbolCharacters), or charset base64, base64url or ascii"),
)]
pub struct Generator {
    /// Number of characters to generate (1 to 1048576): a random string.
    /// Exactly one of length, bytes, uuid, signingKey, sshKeyPair,
    /// privateKey, htpasswd, template and certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1048576))]
    pub length: Option<i64>,
    /// Base alphabet (default alphanumeric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charset: Option<Charset>,
    /// Add symbol characters to the alphabet (default false; true when
    /// symbolCharacters is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbols: Option<bool>,
    /// The symbol characters to add (default !@#$%^&*()-_=+[]{}|;:,.<>?/~`).
    /// Visible characters: no white space, control, zero-width or
    /// bidirectional-control characters; duplicates count once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    #[x_kube(validation = Rule::new(rules::symbols_rule().as_str()).message(rules::SYMBOLS_INVISIBLE))]
    pub symbol_characters: Option<String>,
    /// Password rules: at least this many digits (0-9) in the value (default
    /// 0). Each minimum is drawn from the alphabet's characters of its class,
    /// the rest uniformly from the whole alphabet, and the positions shuffled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1048576))]
    pub min_digits: Option<i64>,
    /// Password rules: at least this many lowercase letters (a-z).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1048576))]
    pub min_lower: Option<i64>,
    /// Password rules: at least this many uppercase letters (A-Z).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1048576))]
    pub min_upper: Option<i64>,
    /// Password rules: at least this many symbols (any character of the
    /// alphabet that is not an ASCII letter or digit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1048576))]
    pub min_symbols: Option<i64>,
    /// Random bytes instead of a string: `length` bytes from the CSPRNG,
    /// written in `encoding`. A Fernet key is 32 bytes in base64url; an
    /// HMAC-SHA256 key 32 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<BytesSpec>,
    /// A random UUID (version 4, from the CSPRNG) instead of a string, in
    /// its lowercase hyphenated form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // No fields, said so: an object with neither properties nor
    // additionalProperties would read as free-form (`gitops::fields`).
    #[schemars(extend("maxProperties" = 0))]
    pub uuid: Option<UuidSpec>,
    /// Overlap for zero-downtime rotation of session or signing keys: each
    /// new version also holds the previous version's value of this key under
    /// `<key>.previous` (absent from the first version, and when the previous
    /// version's Secret is gone: never an older value). Part of the version
    /// name only through this flag (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<bool>,
    /// This key's own rotation token: changing it gives this key a new value
    /// in the next version, and keeps every other generated value (which
    /// change with `spec.rotation`, `rotateEvery`, or a change of their own
    /// generator). At most 253 characters, no control characters. Part of
    /// the version name only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new(rules::rotation_rule().as_str()).message("rotation must not contain control characters (C0, DEL or C1)"))]
    pub rotation: Option<String>,
    /// This key's own time-based rotation, for tracking mode: a new value of
    /// this key every period (e.g. 720h, 90m; at least 1m and at most
    /// 876000h), counted from the RandomSecret's creation, while every other
    /// generated value is kept. Names then depend on time and cannot be
    /// computed offline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = rules::MAX_PERIOD_TEXT))]
    #[x_kube(
        validation = Rule::new(rules::PERIOD_FORMAT_RULE).message(rules::PERIOD_FORMAT_MESSAGE),
        validation = Rule::new(rules::period_range_rule()).message(rules::period_range_message().as_str()),
    )]
    pub rotate_every: Option<String>,
    /// A signing key instead of a random string: the current private key
    /// (PEM, PKCS#8) under this key, and the public JWKS (RFC 7517) of the
    /// current key and of up to `keep` previous ones under `jwksKey`, each
    /// with its RFC 7638 thumbprint as `kid`, current first. A rotation of
    /// this key puts a new key first and keeps the old public keys, so tokens
    /// signed before it stay verifiable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_key: Option<SigningKeySpec>,
    /// An SSH key pair instead of a random string: the private key in
    /// OpenSSH format under this key, the public key in authorized_keys
    /// format under `publicKey` (default `<key>.pub`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key_pair: Option<SshKeyPairSpec>,
    /// A private key instead of a random string: PEM under this key (PKCS#8,
    /// PKCS#1 or SEC1), its public key (PEM SubjectPublicKeyInfo) under
    /// `publicKey` (default `<key>.pub`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<PrivateKeySpec>,
    /// An htpasswd line (`username:$2y$...`, bcrypt) of another key's
    /// password, as ingress-nginx (`auth`) and Traefik (`users`) basic
    /// authentication read it. Derived when the version is made, from that
    /// version's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub htpasswd: Option<HtpasswdSpec>,
    /// A value rendered from the version's other values (a connection
    /// string, a DSN, a .dockerconfigjson, a small config file): a MiniJinja
    /// template over `keys` (every value that keys writes, public keys,
    /// JWKS and other templates included) and `static`, e.g.
    /// `postgres://{{ static.username }}:{{ keys.password | urlquote }}@db:5432/app`.
    /// Filters: MiniJinja's built-ins (urlencode, which keeps '/', tojson,
    /// ...), urlquote (all but RFC 3986's unreserved characters) and
    /// b64encode. Rendered when the version is made; a reference to a
    /// missing key, or a cycle between templates, is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16384))]
    pub template: Option<String>,
    /// An X.509 certificate instead of a random string: the certificate
    /// (PEM) under this key and its private key under `privateKey`;
    /// self-signed, or signed by the CA that another key of this
    /// RandomSecret generates (`issuer`), so one version holds a whole
    /// chain. Name the keys tls.crt, tls.key and ca.crt for a
    /// kubernetes.io/tls Secret. Renewal is a rotation: a new certificate
    /// comes with `rotation`, or `rotateEvery` in tracking mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<CertificateSpec>,
}

/// An X.509 certificate and its private key (`keys.<k>.certificate`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("!(has(self.isCA) && self.isCA) || !has(self.issuer)").message("a CA here is self-signed (a root): remove issuer, or isCA"),
    validation = Rule::new("(has(self.isCA) && self.isCA) || has(self.commonName) || has(self.dnsNames) || has(self.ipAddresses)").message("a certificate that is not a CA needs a name: set commonName, dnsNames or ipAddresses"),
    validation = Rule::new("!(has(self.isCA) && self.isCA) || !has(self.usages) || self.usages.exists(u, u == 'certSign')").message("a CA signs certificates: its usages must include certSign"),
    validation = Rule::new("!has(self.keySize) || (has(self.keyAlgorithm) ? ((self.keyAlgorithm == 'ecdsa' && self.keySize in [256, 384]) || (self.keyAlgorithm == 'rsa' && self.keySize in [2048, 3072, 4096])) : self.keySize in [256, 384])").message("keySize: ecdsa takes 256 or 384 (default 256), rsa 2048, 3072 or 4096 (default 3072), ed25519 none"),
)]
pub struct CertificateSpec {
    /// A certificate authority (default false): basic constraints CA,
    /// usages certSign, crlSign and digitalSignature by default, valid
    /// 87600h (10 years) by default. Self-signed.
    #[serde(default, rename = "isCA", skip_serializing_if = "Option::is_none")]
    pub is_ca: Option<bool>,
    /// The key of keys that holds the CA certificate signing this one (a
    /// certificate with isCA). Absent: self-signed. When the CA rotates,
    /// this certificate does too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub issuer: Option<String>,
    /// The subject's common name (at most 64 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[x_kube(validation = Rule::new(rules::rotation_rule().as_str()).message("commonName must not contain control characters"))]
    pub common_name: Option<String>,
    /// DNS names (subject alternative names); a leading `*.` for a
    /// wildcard. At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64), inner(length(min = 1, max = 253)))]
    #[x_kube(validation = Rule::new(format!("self.all(d, d.matches('{DNS_SAN}'))").as_str()).message("dnsNames: each must be a DNS name (lowercase letters, digits, '-' and '.'), optionally starting with '*.'"))]
    pub dns_names: Option<Vec<String>>,
    /// IP addresses (subject alternative names), IPv4 or IPv6. At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64), inner(length(min = 2, max = 45)))]
    #[x_kube(validation = Rule::new("self.all(a, isIP(a))").message("ipAddresses: each must be an IPv4 or IPv6 address"))]
    pub ip_addresses: Option<Vec<String>>,
    /// What the key may be used for. Default: digitalSignature,
    /// keyEncipherment and serverAuth; for a CA certSign, crlSign and
    /// digitalSignature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 9))]
    #[x_kube(validation = Rule::new("self.all(u, self.filter(v, v == u).size() == 1)").message("usages: list each usage once"))]
    pub usages: Option<Vec<CertificateUsage>>,
    /// How long it is valid from the moment the version is made (e.g.
    /// 2160h; at least 1m and at most 876000h). Default 2160h (90 days),
    /// 87600h (10 years) for a CA. A certificate signed by a CA ends no
    /// later than the CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = rules::MAX_PERIOD_TEXT))]
    #[x_kube(
        validation = Rule::new(rules::PERIOD_FORMAT_RULE).message("duration must be a duration such as 2160h, 90m or 1h30m"),
        validation = Rule::new(rules::period_range_rule()).message("duration must be at least 1m and at most 876000h"),
    )]
    pub duration: Option<String>,
    /// The key's algorithm: ecdsa (default, P-256), ed25519 or rsa.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_algorithm: Option<KeyAlgorithm>,
    /// The key's size: ecdsa 256 or 384 (default 256); rsa 2048, 3072 or
    /// 4096 (default 3072); none for ed25519.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_size: Option<i32>,
    /// The data key that holds the private key (PEM, PKCS#8): default the
    /// key's name with .crt replaced by .key (tls.crt: tls.key), else
    /// `<key>.key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::data_key_rule("self").as_str()).message("privateKey must be a valid Secret data key: letters, digits, '-', '_' and '.', not '.' or '..' and not starting with '..'"))]
    pub private_key: Option<String>,
    /// A data key that also gets the issuer's certificate (its own, when
    /// self-signed), as ca.crt in a kubernetes.io/tls Secret. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::data_key_rule("self").as_str()).message("caCertificate must be a valid Secret data key: letters, digits, '-', '_' and '.', not '.' or '..' and not starting with '..'"))]
    pub ca_certificate: Option<String>,
}

/// A DNS subject alternative name: lowercase labels, an optional leading wildcard.
pub const DNS_SAN: &str =
    "^(\\\\*\\\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// What a certificate's key may be used for (key usage and extended key usage).
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord,
)]
#[serde(rename_all = "camelCase")]
pub enum CertificateUsage {
    DigitalSignature,
    KeyEncipherment,
    KeyAgreement,
    CertSign,
    CrlSign,
    ServerAuth,
    ClientAuth,
    CodeSigning,
    EmailProtection,
}

impl CertificateUsage {
    /// The name used in manifests and in the canonical form.
    pub fn as_str(self) -> &'static str {
        match self {
            CertificateUsage::DigitalSignature => "digitalSignature",
            CertificateUsage::KeyEncipherment => "keyEncipherment",
            CertificateUsage::KeyAgreement => "keyAgreement",
            CertificateUsage::CertSign => "certSign",
            CertificateUsage::CrlSign => "crlSign",
            CertificateUsage::ServerAuth => "serverAuth",
            CertificateUsage::ClientAuth => "clientAuth",
            CertificateUsage::CodeSigning => "codeSigning",
            CertificateUsage::EmailProtection => "emailProtection",
        }
    }
}

/// Default validity of a certificate and of a CA.
pub const DEFAULT_CERT_DURATION: &str = "2160h";
pub const DEFAULT_CA_DURATION: &str = "87600h";

/// Key types of sshKeyPair and algorithms of privateKey.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum KeyAlgorithm {
    /// Ed25519 (no size)
    #[default]
    Ed25519,
    /// ECDSA on NIST P-256, P-384 or P-521 (size 256, 384 or 521; default 256)
    Ecdsa,
    /// RSA (size 2048, 3072 or 4096; default 3072)
    Rsa,
}

impl KeyAlgorithm {
    pub const ALL: [KeyAlgorithm; 3] = [
        KeyAlgorithm::Ed25519,
        KeyAlgorithm::Ecdsa,
        KeyAlgorithm::Rsa,
    ];

    /// The name used in manifests and in the canonical form.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyAlgorithm::Ed25519 => "ed25519",
            KeyAlgorithm::Ecdsa => "ecdsa",
            KeyAlgorithm::Rsa => "rsa",
        }
    }

    /// The sizes it takes, the default first (none: Ed25519).
    pub fn sizes(self) -> &'static [u32] {
        match self {
            KeyAlgorithm::Ed25519 => &[],
            KeyAlgorithm::Ecdsa => &[256, 384, 521],
            KeyAlgorithm::Rsa => &[3072, 2048, 4096],
        }
    }
}

/// The CEL rule for a key size field `field` next to algorithm field `alg`
/// (required when `alg_required`, else defaulting to ed25519).
fn size_rule(field: &str, alg: &str) -> String {
    format!(
        "!has(self.{field}) || (has(self.{alg}) && ((self.{alg} == 'ecdsa' && self.{field} in [256, 384, 521]) || (self.{alg} == 'rsa' && self.{field} in [2048, 3072, 4096])))"
    )
}

fn size_message(field: &str) -> String {
    format!(
        "{field}: ecdsa takes 256, 384 or 521 (default 256), rsa 2048, 3072 or 4096 (default 3072), ed25519 none: remove {field} or pick one of those"
    )
}

/// An SSH key pair (`keys.<k>.sshKeyPair`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(size_rule("bits", "type").as_str()).message(size_message("bits").as_str()))]
pub struct SshKeyPairSpec {
    /// The key type: ed25519 (default), ecdsa or rsa.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<KeyAlgorithm>,
    /// Key size: ecdsa 256, 384 or 521 (default 256); rsa 2048, 3072 or
    /// 4096 (default 3072); none for ed25519.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<i32>,
    /// The comment of both keys (default none): at most 253 characters, no
    /// control characters. Changing it gives a new key pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    #[x_kube(validation = Rule::new(rules::rotation_rule().as_str()).message("comment must not contain control characters (C0, DEL or C1)"))]
    pub comment: Option<String>,
    /// The data key that holds the public key (default `<key>.pub`).
    /// Changing it keeps the key pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::data_key_rule("self").as_str()).message("publicKey must be a valid Secret data key: letters, digits, '-', '_' and '.', not '.' or '..' and not starting with '..'"))]
    pub public_key: Option<String>,
}

/// A private key in PEM (`keys.<k>.privateKey`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new(size_rule("size", "algorithm").as_str()).message(size_message("size").as_str()),
    validation = Rule::new("!has(self.encoding) || self.encoding == 'pkcs8' || (self.encoding == 'pkcs1' && self.algorithm == 'rsa') || (self.encoding == 'sec1' && self.algorithm == 'ecdsa')").message("encoding: pkcs1 is for rsa keys and sec1 for ecdsa keys; pkcs8 (the default) is for any"),
)]
pub struct PrivateKeySpec {
    /// ed25519, ecdsa or rsa.
    pub algorithm: KeyAlgorithm,
    /// Key size: ecdsa 256, 384 or 521 (default 256); rsa 2048, 3072 or
    /// 4096 (default 3072); none for ed25519.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i32>,
    /// How the private key is written (default pkcs8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<KeyEncoding>,
    /// The data key that holds the public key (default `<key>.pub`).
    /// Changing it keeps the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::data_key_rule("self").as_str()).message("publicKey must be a valid Secret data key: letters, digits, '-', '_' and '.', not '.' or '..' and not starting with '..'"))]
    pub public_key: Option<String>,
}

/// How a private key is written in PEM.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum KeyEncoding {
    /// PKCS#8 (BEGIN PRIVATE KEY), any algorithm
    #[default]
    Pkcs8,
    /// PKCS#1 (BEGIN RSA PRIVATE KEY), rsa only
    Pkcs1,
    /// SEC1 (BEGIN EC PRIVATE KEY), ecdsa only
    Sec1,
}

impl KeyEncoding {
    pub const ALL: [KeyEncoding; 3] = [KeyEncoding::Pkcs8, KeyEncoding::Pkcs1, KeyEncoding::Sec1];

    /// The name used in manifests and in the canonical form.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyEncoding::Pkcs8 => "pkcs8",
            KeyEncoding::Pkcs1 => "pkcs1",
            KeyEncoding::Sec1 => "sec1",
        }
    }
}

/// An htpasswd line of another key's password (`keys.<k>.htpasswd`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HtpasswdSpec {
    /// The user name: at most 253 characters, no ':' and no control characters.
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(format!("!self.contains(':') && {}", rules::rotation_rule()).as_str()).message("username must not contain ':' or control characters"))]
    pub username: String,
    /// The key of keys whose value is the password: a random string (length)
    /// of at most 72 characters (bcrypt reads no more).
    #[schemars(length(min = 1, max = 253))]
    pub password_from: String,
    /// The hash: bcrypt (default, `$2y$`, what Apache, ingress-nginx and
    /// Traefik read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<HashAlgorithm>,
    /// bcrypt's cost, 4 to 12 (default 10): every check of a password by
    /// the proxy takes 2^cost rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 4, max = 12))]
    pub cost: Option<i32>,
}

/// The password hash of an htpasswd line.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum HashAlgorithm {
    /// bcrypt, written as $2y$
    #[default]
    Bcrypt,
}

/// Default and bounds of `htpasswd.cost`.
pub const DEFAULT_BCRYPT_COST: i32 = 10;
pub const MIN_BCRYPT_COST: i32 = 4;
pub const MAX_BCRYPT_COST: i32 = 12;
/// The longest password bcrypt reads, in bytes.
pub const MAX_BCRYPT_PASSWORD: usize = 72;
/// The longest template, in characters.
pub const MAX_TEMPLATE: usize = 16384;
/// Suffix of a key pair's default public key name.
pub const PUBLIC_KEY_SUFFIX: &str = ".pub";

/// Random bytes and how they are written.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BytesSpec {
    /// How many random bytes (1 to 524288; encoded, at most 1 MiB).
    #[schemars(range(min = 1, max = 524288))]
    pub length: i64,
    /// How they are written in the Secret (default base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Encoding>,
}

/// How random bytes are written.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// The bytes themselves (a key file)
    Raw,
    /// Standard base64 with padding (RFC 4648 section 4)
    #[default]
    Base64,
    /// URL-safe base64 with padding (RFC 4648 section 5): a Fernet key
    Base64url,
    /// Base32 with padding (RFC 4648 section 6)
    Base32,
    /// Lowercase hexadecimal
    Hex,
}

impl Encoding {
    pub const ALL: [Encoding; 5] = [
        Encoding::Raw,
        Encoding::Base64,
        Encoding::Base64url,
        Encoding::Base32,
        Encoding::Hex,
    ];

    /// The RFC 4648 codec it writes with; `None` for the bytes themselves.
    pub fn codec(self) -> Option<data_encoding::Encoding> {
        match self {
            Encoding::Raw => None,
            Encoding::Base64 => Some(data_encoding::BASE64),
            Encoding::Base64url => Some(data_encoding::BASE64URL),
            Encoding::Base32 => Some(data_encoding::BASE32),
            Encoding::Hex => Some(data_encoding::HEXLOWER),
        }
    }

    /// The name used in manifests and in the canonical form.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Base64 => "base64",
            Encoding::Base64url => "base64url",
            Encoding::Base32 => "base32",
            Encoding::Hex => "hex",
        }
    }
}

/// A random UUID (version 4): no parameters.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct UuidSpec {}

/// A generated signing key and its JWKS.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SigningKeySpec {
    /// The JWS algorithm: ES256 (ECDSA P-256), EdDSA (Ed25519) or RS256 (RSA,
    /// 2048 bits). Changing it rotates the key; the old public keys stay in
    /// the JWKS.
    pub algorithm: SigningAlgorithm,
    /// How many previous public keys the JWKS keeps after the current one
    /// (0 to 10, default 1). Changing it keeps the private key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub keep: Option<i32>,
    /// The data key that holds the JWKS (default jwks.json). Not a key of
    /// keys or static, and not another signing key's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    #[x_kube(validation = Rule::new(rules::data_key_rule("self").as_str()).message("jwksKey must be a valid Secret data key: letters, digits, '-', '_' and '.', not '.' or '..' and not starting with '..'"))]
    pub jwks_key: Option<String>,
}

/// Default of `signingKey.keep`.
pub const DEFAULT_SIGNING_KEEP: i32 = 1;
/// Largest `signingKey.keep`.
pub const MAX_SIGNING_KEEP: i32 = 10;
/// Default of `signingKey.jwksKey`.
pub const DEFAULT_JWKS_KEY: &str = "jwks.json";

/// A signing key's JWS algorithm (RFC 7518, RFC 8037).
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
pub enum SigningAlgorithm {
    /// ECDSA with the P-256 curve and SHA-256
    #[default]
    ES256,
    /// Ed25519
    EdDSA,
    /// RSASSA-PKCS1-v1_5 with SHA-256, a 2048-bit key
    RS256,
}

impl SigningAlgorithm {
    pub const ALL: [SigningAlgorithm; 3] = [
        SigningAlgorithm::ES256,
        SigningAlgorithm::EdDSA,
        SigningAlgorithm::RS256,
    ];

    /// The name used in manifests, in JWKs (`alg`) and in the canonical form.
    pub fn as_str(self) -> &'static str {
        match self {
            SigningAlgorithm::ES256 => "ES256",
            SigningAlgorithm::EdDSA => "EdDSA",
            SigningAlgorithm::RS256 => "RS256",
        }
    }
}

/// The base alphabet of a generated value.
#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum Charset {
    /// A-Z a-z 0-9
    #[default]
    Alphanumeric,
    /// A-Z a-z
    Alpha,
    /// a-z
    Lower,
    /// A-Z
    Upper,
    /// 0-9
    Numeric,
    /// 0-9 a-f
    Hex,
    /// A-Z a-z 0-9 + /
    Base64,
    /// A-Z a-z 0-9 - _
    Base64url,
    /// The 94 printable ASCII characters (! to ~)
    Ascii,
}

impl Charset {
    pub const ALL: [Charset; 9] = [
        Charset::Alphanumeric,
        Charset::Alpha,
        Charset::Lower,
        Charset::Upper,
        Charset::Numeric,
        Charset::Hex,
        Charset::Base64,
        Charset::Base64url,
        Charset::Ascii,
    ];

    /// The name used in manifests and in the canonical form.
    pub fn as_str(self) -> &'static str {
        match self {
            Charset::Alphanumeric => "alphanumeric",
            Charset::Alpha => "alpha",
            Charset::Lower => "lower",
            Charset::Upper => "upper",
            Charset::Numeric => "numeric",
            Charset::Hex => "hex",
            Charset::Base64 => "base64",
            Charset::Base64url => "base64url",
            Charset::Ascii => "ascii",
        }
    }

    /// The characters of the alphabet.
    pub fn chars(self) -> &'static str {
        const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
        const DIGITS: &str = "0123456789";
        match self {
            Charset::Alphanumeric => const_str_alnum(),
            Charset::Alpha => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            Charset::Lower => LOWER,
            Charset::Upper => UPPER,
            Charset::Numeric => DIGITS,
            Charset::Hex => "0123456789abcdef",
            Charset::Base64 => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            Charset::Base64url => {
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
            }
            Charset::Ascii => {
                "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"
            }
        }
    }
}

const fn const_str_alnum() -> &'static str {
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
}

/// Observed state, kstatus-compatible.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RandomSecretStatus {
    /// The metadata.generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Full name of the current version's Secret (<secretName>-<hash>).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// Live versions, current first.
    #[serde(default)]
    pub versions: Vec<VersionStatus>,
    /// The most recently released (deleted) versions, newest first (at most 10).
    #[serde(default)]
    pub released: Vec<String>,
    /// How many versions are live (the length of versions).
    #[serde(default)]
    pub live_versions: i32,
    /// With rotateEvery (or a key's rotateEvery): when the next version is
    /// due; the controller makes it then. Absent without a period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_rotation: Option<Time>,
    /// Ready (always present), Reconciling and Stalled, in the metav1.Condition
    /// shape; VaultSynced while spec.push.vault is set; WorkloadsPinned while
    /// a tracking workload stays on an older version after a rollback. A map keyed by type:
    /// the version and the push write their own conditions (server-side apply).
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// What the pushes (spec.push) wrote, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<crate::api::push::PushStatus>,
    /// Tracking mode: workloads someone rolled back to an older version
    /// (kubectl rollout undo) after the controller had pointed them at the
    /// current one; they stay there (condition WorkloadsPinned). At most 20.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_workloads: Vec<PinnedWorkload>,
}

/// A tracking workload left on an older version after a rollback.
#[derive(
    schemars::JsonSchema,
    Serialize,
    Deserialize,
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
)]
#[serde(rename_all = "camelCase")]
pub struct PinnedWorkload {
    /// Deployment, StatefulSet or DaemonSet.
    pub kind: String,
    /// The workload's name, in the RandomSecret's namespace.
    pub name: String,
    /// The older version its pod template references.
    pub secret_name: String,
}

/// One version (one Secret) of a RandomSecret.
#[derive(schemars::JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VersionStatus {
    /// The Secret's name.
    pub name: String,
    /// The version hash (the name's suffix).
    pub hash: String,
    /// When the Secret was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Time>,
    /// When the first certificate this version holds ends (keys of kind
    /// certificate): renew by rotating before then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
    /// The Secret's uid: which object the controller recorded (a Secret
    /// deleted and made again under the name is another one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// current, retained or released.
    pub state: VersionState,
    /// What references this version (kind/name).
    #[serde(default)]
    pub referenced_by: Vec<String>,
    /// The generated keys that got new values in this version (every key in
    /// the first one); the others kept the values of the version it
    /// superseded. Key names only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rotated_keys: Vec<String>,
    /// Someone deleted this Secret (a person, the garbage collector) while
    /// it was held: deletion protection keeps it readable (Terminating)
    /// until nothing holds it, then it goes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleting: bool,
}

#[derive(
    schemars::JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq,
)]
#[serde(rename_all = "lowercase")]
pub enum VersionState {
    /// The version the spec describes now.
    #[default]
    Current,
    /// Superseded, kept because something references it or it is within history.
    Retained,
    /// Superseded and unreferenced: the garbage collector deletes it.
    Released,
}

/// The CRDs, generated from the types above and in [`push`] and [`connections`], with
/// the file each is committed as (in `config/crd/` and the chart's `crds/`).
///
/// `nullable` is removed everywhere: the apiserver then prunes an explicit
/// `null` like an absent field, so `key: null` and no `key` store (and hash) alike.
pub fn crds() -> Vec<(
    &'static str,
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
)> {
    use crate::api::connections::{ClusterConnection, ClusterVaultConnection, VaultConnection};
    use kube::CustomResourceExt;
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("nullable");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let clean = |crd| {
        let mut v = serde_json::to_value(crd).expect("the CRD serializes");
        strip(&mut v);
        serde_json::from_value(v).expect("the CRD deserializes")
    };
    vec![
        (
            "randomsecret.io_randomsecrets.yaml",
            clean(RandomSecret::crd()),
        ),
        (
            "randomsecret.io_clustervaultconnections.yaml",
            clean(ClusterVaultConnection::crd()),
        ),
        (
            "randomsecret.io_vaultconnections.yaml",
            clean(VaultConnection::crd()),
        ),
        (
            "randomsecret.io_clusterconnections.yaml",
            clean(ClusterConnection::crd()),
        ),
        (
            "randomsecret.io_clusterrandomsecrets.yaml",
            clean(crate::api::cluster::ClusterRandomSecret::crd()),
        ),
    ]
}

/// The RandomSecret CRD.
pub fn crd()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    crds().swap_remove(0).1
}

/// One CRD as YAML (what `config/crd/` holds).
pub fn crd_file_yaml(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> String {
    format!(
        "---\n{}",
        crate::gitops::yaml::write(crd).expect("the CRD serializes")
    )
}

/// Every CRD as one YAML stream (what `randomsecret crd` prints).
pub fn crd_yaml() -> String {
    crds().iter().map(|(_, c)| crd_file_yaml(c)).collect()
}

#[cfg(test)]
mod tests {
    /// The names on the wire, spelled out: a change to `project!` or `key!`
    /// shows here; and the derive attributes that take only a literal agree
    /// with the constants.
    #[test]
    fn names_are_the_wire_contract() {
        use kube::Resource;
        assert_eq!(super::NAME, "randomsecret");
        assert_eq!(super::GROUP, "randomsecret.io");
        assert_eq!(super::API_VERSION, "randomsecret.io/v1");
        assert_eq!(super::PREFIX, "randomsecret.io/");
        assert_eq!(super::LABEL_NAME, "randomsecret.io/name");
        assert_eq!(super::LABEL_HASH, "randomsecret.io/hash");
        assert_eq!(super::ANNOTATION_CREATED, "randomsecret.io/created");
        assert_eq!(super::RandomSecret::api_version(&()), super::API_VERSION);
        assert_eq!(
            crate::api::connections::VaultConnection::api_version(&()),
            super::API_VERSION
        );
        assert_eq!(
            crate::api::connections::ClusterVaultConnection::api_version(&()),
            super::API_VERSION
        );
        assert_eq!(
            crate::api::connections::ClusterConnection::api_version(&()),
            super::API_VERSION
        );
        assert_eq!(
            super::RandomSecret::plural(&()),
            concat!(super::project!(), "s")
        );
    }

    /// CI fails when the committed CRD drifts from the Rust types:
    /// regenerate it with `make crd`.
    #[test]
    fn committed_crds_match_the_types() {
        for (name, crd) in super::crds() {
            for dir in ["config/crd", "charts/randomsecret/crds"] {
                let file = format!("{dir}/{name}");
                let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
                let committed =
                    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
                assert!(
                    committed == super::crd_file_yaml(&crd),
                    "{file} is out of date: run `make crd`"
                );
            }
        }
    }
}
