//! What an annotated Secret needs, decided from the object alone (pure): the
//! one parser of the annotations and the rules both paths (the controller's
//! patch and the admission webhook) obey.
//!
//! Rules that never bend:
//! - only a Secret labelled `randomsecret.io/managed: "true"` that asks for
//!   keys (`randomsecret.io/generate`, or the original operator's
//!   `secret.a-cup-of.coffee/enable: "true"`) is looked at;
//! - a listed key with a non-empty value is never overwritten, except by an
//!   explicit rotation (`randomsecret.io/rotate` differs from the token the
//!   last fill recorded in `randomsecret.io/rotated`);
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

use crate::api::rules::valid_data_key;
use crate::api::{Charset, DEFAULT_SYMBOLS, LABEL_NAME, MAX_KEYS, MAX_LENGTH};
use crate::version::{Chars, MAX_ROTATION, MAX_SECRET_BYTES};
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
/// Length of each generated value (default [`DEFAULT_LENGTH`]).
pub const LENGTH: &str = crate::api::key!("length");
/// The alphabet: a CRD charset name (default alphanumeric).
pub const CHARSET: &str = crate::api::key!("charset");
/// `true` adds the default symbols to the alphabet (default false).
pub const SYMBOLS: &str = crate::api::key!("symbols");
/// A rotation token, set by the user: changing it regenerates every listed key.
pub const ROTATE: &str = crate::api::key!("rotate");
/// The rotation token of the last fill, recorded by randomsecret.
pub const ROTATED: &str = crate::api::key!("rotated");
pub const DEFAULT_LENGTH: usize = 32;

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

pub use crate::api::PURPOSE;

/// Every key under [`PREFIX`] or [`alias::PREFIX`] the project defines:
/// annotation mode's, and the labels, annotations and finalizers of the
/// other features, none of which is reported as unknown on a Secret. A test
/// checks that every such string in `src/` is listed here: add a new one.
pub const KNOWN: &[&str] = &[
    MANAGED_LABEL,
    GENERATE,
    LENGTH,
    CHARSET,
    SYMBOLS,
    ROTATE,
    ROTATED,
    alias::ENABLE,
    alias::KEY,
    alias::LENGTH,
    alias::SPECIAL_CHAR,
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
];

/// What a user sets on an annotated Secret: the keys a suggestion may name.
const SETTABLE: &[&str] = &[
    GENERATE,
    LENGTH,
    CHARSET,
    SYMBOLS,
    ROTATE,
    alias::ENABLE,
    alias::KEY,
    alias::LENGTH,
    alias::SPECIAL_CHAR,
];

/// Most edits between a misspelt prefix and ours (`randomsecrets.io/`).
const PREFIX_EDITS: usize = 2;
/// The Event's note is at most 1 kB (events.k8s.io/v1).
const NOTE_BYTES: usize = 1024;
/// Most unknown annotations named one by one in admission warnings.
const WARNINGS: usize = 5;

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
        }
    }

    /// A short reason (Event reason, metric label).
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::ProducedByRandomSecret(_) => "ProducedByRandomSecret",
            Refusal::Immutable { .. } => "Immutable",
        }
    }
}

/// What the annotations ask for, parsed and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The listed keys, in order, each once.
    pub keys: Vec<String>,
    pub generator: Chars,
    /// `randomsecret.io/rotate`, "" when absent.
    pub rotate: String,
}

/// The keys one fill writes. Its `Debug` shows key names, never values.
#[derive(Clone, PartialEq, Eq)]
pub struct Fill {
    generator: Chars,
    generate: Vec<String>,
    copy: BTreeMap<String, ByteString>,
    rotated: Option<String>,
    rotation: bool,
}

impl fmt::Debug for Fill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fill")
            .field("generator", &self.generator)
            .field("generate", &self.generate)
            .field("copy", &self.copy.keys().collect::<Vec<_>>())
            .field("rotated", &self.rotated)
            .field("rotation", &self.rotation)
            .finish()
    }
}

impl Fill {
    /// The values to write: the copied ones and newly generated ones (OS CSPRNG).
    pub fn values(&self) -> Result<BTreeMap<String, ByteString>, rand::rngs::SysError> {
        let mut out = self.copy.clone();
        for k in &self.generate {
            let v = crate::generate::value(&self.generator)?;
            out.insert(k.clone(), ByteString(v.into_bytes()));
        }
        Ok(out)
    }

    /// Keys that get new values.
    pub fn generated_keys(&self) -> &[String] {
        &self.generate
    }

    /// Keys copied from the old object (UPDATE only).
    pub fn copied_keys(&self) -> impl Iterator<Item = &str> {
        self.copy.keys().map(String::as_str)
    }

    /// Every key the fill writes, in order.
    pub fn keys(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .copied_keys()
            .chain(self.generate.iter().map(String::as_str))
            .collect();
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

    pub fn generator(&self) -> &Chars {
        &self.generator
    }
}

/// Whether the label opts the object in.
pub fn labelled(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels
        .and_then(|l| l.get(MANAGED_LABEL))
        .map(String::as_str)
        == Some("true")
}

/// Whether the annotations ask for keys (the new annotation, or the alias
/// enabled). Checks nothing else: [`parse`] does.
pub fn asks(annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotations.is_some_and(|a| {
        a.contains_key(GENERATE) || a.get(alias::ENABLE).map(String::as_str) == Some("true")
    })
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
        let what = format!("unknown annotation {} is ignored", quote(&self.key));
        match self.suggestion {
            Some(s) => format!("{what}: did you mean {s}?"),
            None if self.key.starts_with(alias::PREFIX) => format!(
                "{what}: the original operator's annotations are {}enable, key, length and special-char",
                alias::PREFIX
            ),
            None => format!(
                "{what}: annotation mode reads {PREFIX}generate, length, charset, symbols and rotate"
            ),
        }
    }
}

/// The annotations of a Secret annotation mode handles (labelled, not a
/// RandomSecret's version) under `randomsecret.io/` or
/// `secret.a-cup-of.coffee/` that no rule knows, each with the nearest
/// settable key when one is near; also a key whose prefix is a near miss of
/// ours (`randomsecrets.io/length`), but only when its name matches one of
/// ours. Sorted by key. Both paths report them; nothing else changes.
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
    if prefix == PREFIX || prefix == alias::PREFIX {
        return Some(Unknown {
            key: key.to_string(),
            suggestion: suggest(prefix, name),
        });
    }
    // A misspelt prefix is reported only with a suggestion: a domain that
    // merely looks like ours, with names of its own, is not ours to judge.
    let ours = [PREFIX, alias::PREFIX]
        .into_iter()
        .find(|p| edits(prefix, p, PREFIX_EDITS).is_some())?;
    Some(Unknown {
        key: key.to_string(),
        suggestion: Some(suggest(ours, name)?),
    })
}

/// The settable key under `prefix` whose name is nearest to `name` (a third
/// of its length in edits, at least one; the first of equals), else one of
/// the other prefix with exactly that name (`secret.a-cup-of.coffee/generate`
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

/// Parses the annotations: `Ok(None)` when they ask for nothing, else the
/// request or every problem found, joined, each saying what to fix.
///
/// New names win over aliases; aliases are read only with
/// `secret.a-cup-of.coffee/enable: "true"`. Defaults are those of the form
/// that names the keys: the alias form's symbols default to on.
pub fn parse(a: &BTreeMap<String, String>) -> Result<Option<Request>, String> {
    let get = |k: &str| a.get(k).map(String::as_str);
    let aliased = get(alias::ENABLE) == Some("true");
    let mut problems = Vec::new();

    let (keys, by_alias) = match (get(GENERATE), aliased) {
        (Some(list), _) => (parse_keys(GENERATE, list, &mut problems), false),
        (None, true) => {
            let key = get(alias::KEY).unwrap_or(alias::DEFAULT_KEY);
            (parse_keys(alias::KEY, key, &mut problems), true)
        }
        (None, false) => return Ok(None),
    };

    // An empty alias value means "default", as in the original operator.
    let alias_of = |k: &str| get(k).filter(|v| aliased && !v.is_empty());
    let length = match (get(LENGTH), alias_of(alias::LENGTH)) {
        (Some(v), _) => parse_length(LENGTH, v, &mut problems),
        (None, Some(v)) => parse_length(alias::LENGTH, v, &mut problems),
        (None, None) => DEFAULT_LENGTH,
    };
    let charset = match get(CHARSET) {
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
    let symbols = match (get(SYMBOLS), alias_of(alias::SPECIAL_CHAR)) {
        (Some("true"), _) => true,
        (Some("false"), _) => false,
        (Some(v), _) => {
            problems.push(format!("{SYMBOLS} {} must be true or false", quote(v)));
            false
        }
        (None, Some(v)) => go_bool(v).unwrap_or_else(|| {
            problems.push(format!(
                "{} {} must be true or false",
                alias::SPECIAL_CHAR,
                quote(v)
            ));
            false
        }),
        (None, None) => by_alias && alias::DEFAULT_SPECIAL_CHAR,
    };
    let rotate = get(ROTATE).unwrap_or_default();
    if let Some(why) = bad_token(rotate) {
        problems.push(format!("{ROTATE} {why}"));
    }
    if let Some(why) = get(ROTATED).and_then(bad_token) {
        problems.push(format!(
            "{ROTATED} {why} (it is written by randomsecret: remove it)"
        ));
    }
    // Every listed value at full length must fit in a Secret (1 MiB).
    if problems.is_empty() && keys.len().saturating_mul(length) > MAX_SECRET_BYTES {
        problems.push(format!(
            "{} keys of {length} characters exceed the 1 MiB a Secret holds: lower {LENGTH} or list fewer keys",
            keys.len()
        ));
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(Some(Request {
        keys,
        generator: Chars {
            length,
            charset,
            symbols: if symbols {
                DEFAULT_SYMBOLS.to_string()
            } else {
                String::new()
            },
            min: Default::default(),
        },
        rotate: rotate.to_string(),
    }))
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
    let mut generate = Vec::new();
    let mut copy = BTreeMap::new();
    for k in &request.keys {
        if rotation {
            generate.push(k.clone());
        } else if new.value(k).is_none_or(|v| v.is_empty()) {
            let stored = old.filter(|_| managed.contains(k)).and_then(|o| o.value(k));
            match stored.filter(|v| !v.is_empty()) {
                Some(v) => {
                    copy.insert(k.clone(), ByteString(v.to_vec()));
                }
                None => generate.push(k.clone()),
            }
        }
    }
    let fills = !generate.is_empty() || !copy.is_empty();
    // The token to record: the new one on a rotation; else the one recorded;
    // else (a first fill, or the first token a complete Secret carries) the
    // one asked for, so that a later change of it is a rotation.
    let wanted = match recorded {
        Some(r) if !rotation => Some(r),
        _ if fills || !request.rotate.is_empty() => Some(request.rotate.clone()),
        _ => None,
    };
    let rotated = wanted.filter(|w| recorded_here.as_ref() != Some(w));
    if !fills && rotated.is_none() {
        return Plan::Complete;
    }
    if new.is_immutable() {
        if !fills {
            return Plan::Complete; // only the token to record: nothing to refuse
        }
        let mut missing: Vec<String> = copy.keys().cloned().collect();
        missing.extend(generate.iter().cloned());
        missing.sort();
        return Plan::Refused(Refusal::Immutable { missing });
    }
    // The whole Secret must stay within 1 MiB.
    let others = new.bytes_besides(&request.keys);
    let added = generate.len() * request.generator.length
        + copy.values().map(|v| v.0.len()).sum::<usize>()
        + request
            .keys
            .iter()
            .filter(|k| !generate.contains(*k) && !copy.contains_key(k.as_str()))
            .filter_map(|k| new.value(k).map(<[u8]>::len))
            .sum::<usize>();
    if others + added > MAX_SECRET_BYTES {
        return Plan::Invalid(format!(
            "filled, this Secret would hold {} bytes, more than the 1 MiB a Secret holds: lower {LENGTH} or list fewer keys",
            others + added
        ));
    }
    Plan::Fill(Fill {
        generator: request.generator,
        generate,
        copy,
        rotated,
        rotation,
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

fn parse_length(annotation: &str, v: &str, problems: &mut Vec<String>) -> usize {
    match v.parse::<u64>() {
        Ok(n) if (1..=MAX_LENGTH as u64).contains(&n) => n as usize,
        _ => {
            problems.push(format!(
                "{annotation} {} must be a whole number from 1 to {MAX_LENGTH}",
                quote(v)
            ));
            DEFAULT_LENGTH
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
fn list(keys: &[String]) -> String {
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
            f.generator(),
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
        assert_eq!(f.generator().symbols, DEFAULT_SYMBOLS);
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
            f.generator(),
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
        assert_eq!(f.generator().length, 32);
        let s = secret(
            &[
                (alias::ENABLE, "true"),
                (alias::LENGTH, "8"),
                (alias::SPECIAL_CHAR, "F"),
            ],
            &[],
        );
        let f = fill(plan(&s, None));
        assert_eq!(
            (f.generator().length, f.generator().symbols.as_str()),
            (8, "")
        );
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
        assert_eq!(
            (f.generator().length, f.generator().symbols.as_str()),
            (10, "")
        );
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
        assert_eq!(
            (f.generator().length, f.generator().symbols.as_str()),
            (8, "")
        );
        // Without enable, alias parameters are not read.
        let s = secret(&[(alias::LENGTH, "8"), (GENERATE, "k")], &[]);
        assert_eq!(fill(plan(&s, None)).generator().length, 32);
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
        assert_eq!(fill(plan(&s, None)).generator().length, DEFAULT_LENGTH);
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
                for prefix in [PREFIX, alias::PREFIX] {
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
            .map(|(k, at)| format!("{k} ({at})"))
            .collect();
        assert!(
            missing.is_empty(),
            "add these keys to annotated::rules::KNOWN: {missing:?}"
        );
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
