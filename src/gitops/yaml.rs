//! The one place that reads and writes YAML (with [serde-saphyr]); everything
//! else works on `serde_json::Value`s and the types read from them.
//!
//! What a manifest means is what kubectl, Helm and kustomize (Go, YAML 1.1)
//! make of it, so reading follows them where serde-saphyr lets it:
//! - a plain `y`, `yes`, `on`, `n`, `no`, `off` (also `Yes`, `YES`, ...) is a
//!   boolean; another spelling (`yEs`) and anything quoted is a string;
//! - `0644` is octal (420) and `1_000` is 1000;
//! - a timestamp (`2024-01-01`) stays a string;
//! - `.inf`, `.nan` and numbers beyond a double (`1e999`) are refused (JSON,
//!   hence the apiserver, cannot carry them);
//! - merge keys (`<<`) are merged.
//!
//! Mapping keys are strings as written; a plain key that YAML 1.2 reads as a
//! boolean or a number becomes its canonical string (`TRUE:` is `"true"`,
//! `0x1F:` is `"31"`), as with serde_yaml before. [`is_yaml11_special`] names
//! the spellings whose meaning differs between YAML 1.1 and 1.2.
//!
//! Writing quotes every string that a YAML 1.1 reader could take for
//! something else (`"on"`, `"017"`, `"2024-01-01"`), so a string stays a
//! string for kubectl. Comments are not kept (serde-saphyr keeps them only
//! in typed `Commented<T>` fields, not through a generic tree).
//!
//! Where serde-saphyr and Go still part (`0X1F`, `1_`, a key `on:`),
//! [`check_plain_scalars`] finds it, for the commands that write back what
//! they read.
//!
//! Input is bounded before anything is built: at most [`MAX_INPUT`] bytes,
//! at most [`MAX_DEPTH`] nested collections (deeper input fails at once,
//! naming the line), alias expansion within the input's length; the other
//! budgets scale with the length of the input, which is already in memory.
//!
//! A byte-order mark is skipped where kubectl skips it (the start of the
//! stream and of each document). [`read_documents`] keeps where each
//! document is in the text, so a document can go out exactly as it came in.
//!
//! [serde-saphyr]: https://docs.rs/serde-saphyr

use serde::Serialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde_json::{Map, Number, Value};
use serde_saphyr::budget::BudgetBreach;
use std::fmt;

/// How deeply collections may nest (serde_yaml's limit too).
pub const MAX_DEPTH: usize = 128;

/// The largest stream read: bigger input is refused before it is parsed
/// (reading takes some 20 times the input's size in memory at most).
pub const MAX_INPUT: usize = 16 << 20;

/// Refuses an input of `len` bytes beyond [`MAX_INPUT`].
pub fn check_size(len: usize) -> Result<(), Error> {
    if len > MAX_INPUT {
        return Err(Error(format!(
            "the input is larger than {} MiB, the most randomsecret reads at once: split it",
            MAX_INPUT >> 20
        )));
    }
    Ok(())
}

/// A byte-order mark. kubectl skips one at the start of its input (and
/// reads UTF-16 after one) and, through its YAML reader, one at the start of
/// each document: the line after a `---` line.
const BOM: char = '\u{feff}';

/// Whether kubectl's stream reader takes `line` for a document separator:
/// `---`, then nothing or a comment.
fn is_separator(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| {
        let rest = rest.trim();
        rest.is_empty() || rest.starts_with('#')
    })
}

/// The input without the byte-order marks kubectl skips (see [`BOM`]);
/// others stay, and the reader refuses them.
fn without_boms(input: &str) -> std::borrow::Cow<'_, str> {
    if !input.contains(BOM) {
        return input.into();
    }
    let mut out = String::with_capacity(input.len());
    let mut document_start = true;
    for line in input.split_inclusive('\n') {
        let line = match line.strip_prefix(BOM) {
            Some(rest) if document_start => rest,
            _ => line,
        };
        document_start = is_separator(line);
        out.push_str(line);
    }
    out.into()
}

/// Invalid YAML, or YAML that is not JSON (which Kubernetes objects are).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl From<serde_saphyr::Error> for Error {
    fn from(e: serde_saphyr::Error) -> Self {
        Error::at_line(e, 0)
    }
}

impl Error {
    /// serde-saphyr's error for text that starts after `lines` lines of the stream.
    fn at_line(e: serde_saphyr::Error, lines: usize) -> Self {
        use serde_saphyr::{Error as E, ExternalMessageSource, granit_parser::ErrorKind};
        let at = |what: String, at: &serde_saphyr::Location| {
            Error(format!(
                "{what} at line {}, column {}",
                at.line() + lines as u64,
                at.column()
            ))
        };
        let too_deep = || format!("nested more than {MAX_DEPTH} levels deep");
        // The error itself, out of the wrappers that add a snippet or where an alias was used.
        let mut inner = &e;
        while let E::WithSnippet { error, .. } | E::AliasError { error, .. } = inner {
            inner = error;
        }
        match inner {
            // Block collections (the budget) and flow collections (the parser).
            E::Budget {
                breach: BudgetBreach::Depth { .. },
                location,
            } => at(too_deep(), location),
            E::ExternalMessage {
                source, location, ..
            } if matches!(&**source, ExternalMessageSource::Parser(p)
                    if matches!(p.kind(), ErrorKind::RecursionLimitExceeded)) =>
            {
                at(too_deep(), location)
            }
            E::AliasReplayLimitExceeded { location, .. }
            | E::AliasExpansionLimitExceeded { location, .. }
            | E::AliasReplayStackDepthExceeded { location, .. }
            | E::Budget {
                breach:
                    BudgetBreach::Nodes { .. }
                    | BudgetBreach::Events { .. }
                    | BudgetBreach::Aliases { .. },
                location,
            } => at(
                "aliases expand to more than the input can hold (an alias bomb?)".into(),
                location,
            ),
            E::NonFiniteFloat { value, location } => at(
                format!(
                    "{value} is not a finite number, which JSON (so Kubernetes) cannot carry; quote it for a string"
                ),
                location,
            ),
            E::DuplicateMappingKey { key, location } => at(
                match key {
                    Some(k) => format!("duplicate mapping key {k:?}"),
                    None => "duplicate mapping key".into(),
                },
                location,
            ),
            _ => Error(e.to_string()),
        }
    }
}

impl From<serde_saphyr::SerializeError> for Error {
    fn from(e: serde_saphyr::SerializeError) -> Self {
        Error(format!("writing YAML: {e}"))
    }
}

/// Plain scalars that YAML 1.1 readers (kubectl, Helm, kustomize's
/// sigs.k8s.io/yaml) read as booleans or null, where YAML 1.2 reads strings.
/// As a mapping key, kubectl silently turns `n:` into `"false":`.
const YAML11_SPECIAL: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
    "OFF", "~", "null", "Null", "NULL",
];

/// Whether kubectl reads `s`, written plain, as a boolean or null while a
/// YAML 1.2 reader (and a mapping key here) keeps the string.
pub fn is_yaml11_special(s: &str) -> bool {
    YAML11_SPECIAL.contains(&s)
}

/// Booleans of Go's YAML 1.1 reader beyond YAML 1.2's `true`/`false`
/// spellings: exactly these, case as written.
fn yaml11_bool(s: &str) -> Option<bool> {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn options(input: &str, yaml11_booleans: bool) -> serde_saphyr::Options {
    // Linear budgets follow the input (a node or an event takes at least a
    // byte or two of it); depth and alias expansion keep fixed caps.
    let n = input.len();
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            flow_nesting_limit: MAX_DEPTH,
            max_documents: n.max(1_024),
            max_nodes: n.saturating_mul(4).max(250_000),
            max_events: n.saturating_mul(4).max(1_000_000),
            max_total_scalar_bytes: n.max(64 << 20),
        },
        // Alias expansion (a "billion laughs") is bounded by the input's
        // length too: kubectl's input never needs more.
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: n.max(MIN_ALIAS_EVENTS),
        },
        strict_booleans: !yaml11_booleans,
        legacy_octal_numbers: true,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::Reject,
        emit_comments: false,
        // Errors name the line and column, never echo the input (it may hold secrets).
        with_snippet: false,
    }
}

/// The events aliases may replay in any input, however short (more with a
/// longer input: as many as its bytes).
const MIN_ALIAS_EVENTS: usize = 50_000;

/// Reading recurses once per nested level, with big frames in a debug build
/// (some 32 KiB a level): [`MAX_DEPTH`] levels need more than the 2 MiB of a
/// test or tokio thread, so reading runs on a thread of its own.
const READ_STACK: usize = 32 << 20;

fn with_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        let reader = std::thread::Builder::new()
            .name("yaml-reader".into())
            .stack_size(READ_STACK)
            .spawn_scoped(s, f)
            .expect("a thread to read YAML on");
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Every document of a YAML stream, in order, as JSON values. Empty and null
/// documents are skipped.
pub fn read_stream(input: &str) -> Result<Vec<Value>, Error> {
    let stream = read_documents(input)?;
    Ok(stream.docs.into_iter().filter_map(|d| d.value).collect())
}

/// A YAML stream, document by document, with where each is in the text.
#[derive(Debug)]
pub struct Stream<'a> {
    /// The input without the byte-order marks kubectl skips.
    pub text: std::borrow::Cow<'a, str>,
    pub docs: Vec<Document>,
}

/// One document of a [`Stream`].
#[derive(Debug)]
pub struct Document {
    /// Its bytes in [`Stream::text`]: from the end of the document before
    /// (with the comments and the `---` between) to its own end; the ranges
    /// of a stream follow each other, with only what follows the last
    /// document after them.
    pub range: std::ops::Range<usize>,
    /// Where its content starts (after any `---` and directives).
    pub body: usize,
    /// Lines of the stream before `range`.
    pub lines_before: usize,
    /// Its value (None: an empty or null document).
    pub value: Option<Value>,
}

impl Stream<'_> {
    /// A document's text, to read or write as it was.
    pub fn text_of(&self, doc: &Document) -> &str {
        &self.text[doc.range.clone()]
    }

    /// What follows the last document (comments, blank lines).
    pub fn trailer(&self) -> &str {
        &self.text[self.docs.last().map_or(0, |d| d.range.end)..]
    }

    /// Whether kubectl reads the stream as JSON (it starts with `{`), where
    /// it decodes UTF-16 surrogate pairs, which it refuses in YAML.
    fn is_json(&self) -> bool {
        self.text.trim_start().starts_with('{')
    }

    /// [`check_plain_scalars`] on one document.
    pub fn check(&self, doc: &Document) -> Result<(), Ambiguous> {
        let json = self.is_json();
        with_stack(|| check_plain_scalars_here(self.text_of(doc), doc.lines_before, json))
    }
}

/// A YAML stream (at most [`MAX_INPUT`] bytes), document by document.
pub fn read_documents(input: &str) -> Result<Stream<'_>, Error> {
    check_size(input.len())?;
    let text = without_boms(input);
    let docs = with_stack(|| read_documents_here(&text))?;
    Ok(Stream { text, docs })
}

fn read_documents_here(text: &str) -> Result<Vec<Document>, Error> {
    let Some(spans) = document_spans(text) else {
        // The parser refused the input: the reading says where and why.
        read_values(text, 0)?;
        return Err(Error("invalid YAML".into()));
    };
    let mut lines_before = 0;
    let mut previous_end = 0;
    let mut docs = Vec::with_capacity(spans.len());
    for (range, body) in spans {
        lines_before += text[previous_end..range.start].matches('\n').count();
        previous_end = range.start;
        let mut values = read_values(&text[range.clone()], lines_before)?;
        if values.len() > 1 {
            return Err(Error(format!(
                "a document split in two at line {}",
                lines_before + 1
            )));
        }
        docs.push(Document {
            range,
            body,
            lines_before,
            value: values.pop(),
        });
    }
    Ok(docs)
}

/// Each document's byte range (see [`Document::range`]) and where its
/// content starts; None if the parser refuses the input.
fn document_spans(text: &str) -> Option<Vec<(std::ops::Range<usize>, usize)>> {
    use serde_saphyr::granit_parser::{self, Event};
    let options = granit_parser::options! {
        flow_nesting_limit: MAX_DEPTH,
        block_nesting_limit: MAX_DEPTH + 1,
        emit_comments: false,
    };
    let mut spans = Vec::new();
    let (mut start, mut body) = (0, 0);
    for event in granit_parser::Parser::new_from_str_with_options(text, options) {
        let (event, span) = event.ok()?;
        match event {
            Event::DocumentStart(..) => body = span.byte_range()?.end,
            Event::DocumentEnd => {
                let end = span.byte_range()?.end;
                spans.push((start..end, body.max(start)));
                start = end;
            }
            _ => {}
        }
    }
    Some(spans)
}

/// The documents of `text` (a stream, or one document's part of one, after
/// `lines` lines), empty and null ones skipped.
fn read_values(text: &str, lines: usize) -> Result<Vec<Value>, Error> {
    let strict = serde_saphyr::from_multiple_with_options(text, options(text, false));
    let docs: Vec<Doc<true>> = strict.map_err(|e| Error::at_line(e, lines))?;
    let mut docs: Vec<Value> = docs.into_iter().map(|d| d.0).collect();
    // Which of the strings `y`, `on`, ... were plain (booleans for kubectl)
    // and which quoted shows only in a second reading with YAML 1.1 booleans.
    if docs.iter().any(has_yaml11_bool_string) {
        let lax = serde_saphyr::from_multiple_with_options(text, options(text, true));
        let lax: Vec<Doc<false>> = lax.map_err(|e| Error::at_line(e, lines))?;
        if lax.len() == docs.len() {
            for (doc, lax) in docs.iter_mut().zip(lax) {
                take_yaml11_booleans(doc, lax.0);
            }
        }
    }
    // serde-saphyr skips empty and `~` documents, not a tagged empty one (`!x`).
    docs.retain(|d| !d.is_null());
    Ok(docs)
}

/// A single-document YAML text (none: null), as `T`, read from its JSON value.
pub fn read<T: DeserializeOwned>(input: &str) -> Result<T, Error> {
    let mut docs = read_stream(input)?;
    if docs.len() > 1 {
        return Err(Error(format!(
            "expected one YAML document, found {}",
            docs.len()
        )));
    }
    let value = docs.pop().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| Error(e.to_string()))
}

/// One YAML document (no `---` marker).
pub fn write<T: Serialize>(value: &T) -> Result<String, Error> {
    Ok(serde_saphyr::to_string(value)?)
}

/// A YAML stream: each document after a `---` line.
pub fn write_stream(docs: &[Value]) -> Result<String, Error> {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        out.push_str(&write(d)?);
    }
    Ok(out)
}

fn has_yaml11_bool_string(v: &Value) -> bool {
    match v {
        Value::String(s) => yaml11_bool(s).is_some(),
        Value::Array(a) => a.iter().any(has_yaml11_bool_string),
        Value::Object(m) => m.values().any(has_yaml11_bool_string),
        _ => false,
    }
}

/// Where the first reading has one of the strings `y`, `on`, ... and the
/// second (YAML 1.1 booleans, same shape) a boolean, the scalar was plain:
/// take the boolean.
fn take_yaml11_booleans(strict: &mut Value, lax: Value) {
    match (strict, lax) {
        (v @ Value::String(_), Value::Bool(b)) if v.as_str().and_then(yaml11_bool) == Some(b) => {
            *v = Value::Bool(b);
        }
        (Value::Array(a), Value::Array(l)) if a.len() == l.len() => {
            a.iter_mut()
                .zip(l)
                .for_each(|(s, l)| take_yaml11_booleans(s, l));
        }
        // Entries pair up by position: the second reading keeps keys as
        // written (`TRUE`, where the first has `true`). A map where the first
        // reading merged two keys (`true` and `"true"`) is left alone.
        (Value::Object(m), Value::Object(l)) if m.len() == l.len() => {
            m.values_mut()
                .zip(l.into_iter().map(|(_, v)| v))
                .for_each(|(s, l)| take_yaml11_booleans(s, l));
        }
        _ => {}
    }
}

/// A document read as a JSON value; `TYPED_KEYS`: plain keys that read as
/// booleans or numbers become their canonical strings (else as written).
struct Doc<const TYPED_KEYS: bool>(Value);

impl<'de, const TYPED_KEYS: bool> de::Deserialize<'de> for Doc<TYPED_KEYS> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Node {
            typed_keys: TYPED_KEYS,
        }
        .deserialize(d)
        .map(Doc)
    }
}

/// Reads any node into a JSON value.
#[derive(Clone, Copy)]
struct Node {
    typed_keys: bool,
}

impl<'de> DeserializeSeed<'de> for Node {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn number<E: de::Error>(n: Option<Number>) -> Result<Value, E> {
    n.map(Value::Number)
        .ok_or_else(|| E::custom("a number that JSON cannot carry"))
}

impl<'de> de::Visitor<'de> for Node {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML node")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        match i64::try_from(v) {
            Ok(v) => Ok(Value::Number(v.into())),
            Err(_) => number(Number::from_f64(v as f64)),
        }
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        match u64::try_from(v) {
            Ok(v) => Ok(Value::Number(v.into())),
            Err(_) => number(Number::from_f64(v as f64)),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        number(Number::from_f64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        String::from_utf8(v.to_vec())
            .map(Value::String)
            .map_err(|_| E::custom("binary data that is not UTF-8"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(Key {
            typed: self.typed_keys,
        })? {
            out.insert(k, map.next_value_seed(self)?);
        }
        Ok(Value::Object(out))
    }
}

/// Reads a mapping key into a string.
struct Key {
    typed: bool,
}

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        if self.typed {
            d.deserialize_any(self)
        } else {
            d.deserialize_string(self)
        }
    }
}

impl<'de> de::Visitor<'de> for Key {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, boolean or number as a mapping key (JSON keys are strings)")
    }
    fn visit_bool<E>(self, b: bool) -> Result<String, E> {
        Ok(b.to_string())
    }
    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i128<E>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u128<E>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        // As serde_json writes a float (and wrote float keys from serde_yaml): 1.0, 1000.0.
        match Number::from_f64(v) {
            Some(n) => Ok(n.to_string()),
            None => Err(E::custom("a mapping key that is not a finite number")),
        }
    }
    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
}

/// A plain scalar that would change meaning for kubectl on its way through
/// `resolve` or the KRM function (see [`check_plain_scalars`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Ambiguous(String);

/// What Go's YAML 1.1 reader (gopkg.in/yaml.v2, under kubectl, Helm and
/// sigs.k8s.io/yaml) makes of a plain, untagged scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Go {
    Str,
    Bool(bool),
    Int(i128),
    Float(f64),
    Null,
    /// `.inf`, `.nan`: kubectl fails to turn these into JSON.
    NotFinite,
}

/// yaml.v2's `resolve` for a plain scalar. (A timestamp stays a string, as
/// yaml.v2 hands it to sigs.k8s.io/yaml; so does anything it cannot parse.)
fn go_plain(s: &str) -> Go {
    match s {
        "true" | "True" | "TRUE" => return Go::Bool(true),
        "false" | "False" | "FALSE" => return Go::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Go::Null,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Go::NotFinite,
        _ => {}
    }
    if let Some(b) = yaml11_bool(s) {
        return Go::Bool(b);
    }
    match s.as_bytes()[0] {
        b'.' if go_float_syntax(s) => s.parse().map_or(Go::Str, Go::Float),
        b'0'..=b'9' | b'+' | b'-' => {
            // Underscores go before Go's strconv sees the digits.
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Go::Int(i);
            }
            match plain.parse::<f64>() {
                Ok(f) if go_float_syntax(&plain) && f.is_finite() => Go::Float(f),
                _ => Go::Str,
            }
        }
        _ => Go::Str,
    }
}

/// strconv.ParseInt(s, 0, 64), else strconv.ParseUint(s, 0, 64): an
/// optional sign (ParseInt only), then 0x, 0o, 0b (either case) or a
/// leading 0 (octal), or decimal.
fn go_parse_int(s: &str) -> Option<i128> {
    let (sign, unsigned) = match s.as_bytes().first()? {
        b'+' => (Some(1), &s[1..]),
        b'-' => (Some(-1), &s[1..]),
        _ => (None, s),
    };
    let (radix, digits) = match unsigned.as_bytes() {
        [b'0', b'x' | b'X', ..] => (16, &unsigned[2..]),
        [b'0', b'o' | b'O', ..] => (8, &unsigned[2..]),
        [b'0', b'b' | b'B', ..] => (2, &unsigned[2..]),
        [b'0', _, ..] => (8, &unsigned[1..]),
        _ => (10, unsigned),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()? as i128;
    match sign {
        None => Some(magnitude),
        Some(sign) => {
            let v = sign * magnitude;
            (i64::MIN as i128..=i64::MAX as i128)
                .contains(&v)
                .then_some(v)
        }
    }
}

/// yaml.v2's float syntax: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn go_float_syntax(s: &str) -> bool {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (s, None),
    };
    exponent.is_none_or(digits)
        && match mantissa.split_once('.') {
            Some(("", fraction)) => digits(fraction),
            Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
            None => digits(mantissa),
        }
}

/// The string sigs.k8s.io/yaml makes of a plain mapping key (None: it refuses it).
fn go_key(s: &str) -> Option<String> {
    match go_plain(s) {
        Go::Str => Some(s.to_string()),
        Go::Bool(b) => Some(b.to_string()),
        // An int64; a larger (uint64) key is refused.
        Go::Int(i) => i64::try_from(i).ok().map(|i| i.to_string()),
        Go::Float(f) => Some(go_format_float32(f)),
        Go::Null | Go::NotFinite => None,
    }
}

/// strconv.FormatFloat(f, 'g', -1, 32), as sigs.k8s.io/yaml writes a float key:
/// the shortest float32 digits, with an exponent below 1e-4 and from 1e6.
fn go_format_float32(f: f64) -> String {
    let f = f as f32;
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        f.to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

fn agrees(ours: &Value, go: Go) -> bool {
    match (ours, go) {
        (Value::String(_), Go::Str) | (Value::Null, Go::Null) | (_, Go::NotFinite) => true,
        (Value::Bool(a), Go::Bool(b)) => *a == b,
        (Value::Number(n), Go::Int(i)) => {
            n.as_i64().map(i128::from) == Some(i)
                || n.as_u64().map(i128::from) == Some(i)
                || n.as_f64() == Some(i as f64)
        }
        (Value::Number(n), Go::Float(f)) => n.as_f64() == Some(f),
        _ => false,
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {s:?}"),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        _ => v.to_string(),
    }
}

fn describe_go(go: Go, s: &str) -> String {
    match go {
        Go::Str => format!("the string {s:?}"),
        Go::Bool(b) => format!("the boolean {b}"),
        Go::Int(i) => format!("the number {i}"),
        Go::Float(f) => format!("the number {f}"),
        Go::Null => "null".into(),
        Go::NotFinite => "a number JSON cannot carry".into(),
    }
}

/// Whether a plain scalar may read as anything but a string, here or for Go:
/// a number (after an optional sign and underscores, which Go drops, a digit
/// or a dot), a boolean or null.
fn may_not_be_a_string(s: &str) -> bool {
    let unsigned = s
        .strip_prefix(['+', '-'])
        .map_or(s, |u| u.trim_start_matches('_'));
    s.is_empty()
        || s == "~"
        || unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        || ["y", "yes", "n", "no", "on", "off", "true", "false", "null"]
            .iter()
            .any(|w| s.eq_ignore_ascii_case(w))
}

/// What this module reads a plain scalar as, if it may be anything but the
/// string as written: as a value, or as a key (its string).
fn our_reading(text: &str, is_key: bool) -> Option<Value> {
    if !may_not_be_a_string(text) || text == "<<" {
        return None;
    }
    if is_key {
        let doc = read_values(&format!("{text}: x\n"), 0).ok()?;
        let key = doc.first()?.as_object()?.keys().next()?;
        Some(Value::String(key.clone()))
    } else {
        let doc = read_values(&format!("k: {text}\n"), 0).ok()?;
        doc.first()?.get("k").cloned()
    }
}

/// `resolve` and the KRM function write back what they read, with every
/// string quoted where a YAML 1.1 reader could take it for something else and
/// every other scalar written plainly. So a plain scalar of the input that
/// kubectl reads differently from this module (`0X1F`: 31 for Go, a string
/// here; a key `on:`: `"true"` for kubectl, `"on"` here) would silently
/// change meaning on the way through. Such input is refused, naming the
/// first one, its line and column. (Booleans and numbers that both read
/// alike, such as `yes` or `0644`, pass.)
///
/// Also refused: a tag on a scalar where the readings may part (`!foo 017`
/// is the string "017" to kubectl, `!!float 017` 15; only `!!str`,
/// `!!binary`, `!!null` and a custom tag on a string pass), and, outside a
/// JSON stream, an escaped UTF-16 surrogate (`"\ud83d"`), which kubectl's
/// YAML reader refuses.
pub fn check_plain_scalars(input: &str) -> Result<(), Ambiguous> {
    let json = input.trim_start().starts_with('{');
    with_stack(|| check_plain_scalars_here(input, 0, json))
}

/// Whether a double-quoted scalar as written escapes a UTF-16 surrogate.
fn escapes_surrogate(written: &str) -> bool {
    let mut rest = written;
    while let Some(i) = rest.find('\\') {
        let escaped = &rest[i + 1..];
        if let Some(hex) = escaped.strip_prefix('u').and_then(|h| h.get(..4))
            && u32::from_str_radix(hex, 16).is_ok_and(|c| (0xD800..0xE000).contains(&c))
        {
            return true;
        }
        // Skip the escaped character (an escaped backslash included).
        rest = escaped.get(1..).unwrap_or_default();
    }
    false
}

/// The check of [`check_plain_scalars`] on `input`, which starts after
/// `lines` lines of the stream; `json`: the stream is JSON to kubectl.
fn check_plain_scalars_here(input: &str, lines: usize, json: bool) -> Result<(), Ambiguous> {
    use serde_saphyr::granit_parser::{self, Event, ScalarStyle};
    enum Frame {
        Seq,
        Map { key_next: bool },
    }
    let options = granit_parser::options! {
        flow_nesting_limit: MAX_DEPTH,
        block_nesting_limit: MAX_DEPTH + 1,
        emit_comments: false,
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut ours = std::collections::HashMap::<(bool, String), Option<Value>>::new();
    for event in granit_parser::Parser::new_from_str_with_options(input, options) {
        // The reading proper has accepted the input; nothing more to check.
        let Ok((event, span)) = event else {
            return Ok(());
        };
        let is_key = matches!(stack.last(), Some(Frame::Map { key_next: true }));
        let complete = match event {
            Event::SequenceStart(..) => {
                stack.push(Frame::Seq);
                false
            }
            Event::MappingStart(..) => {
                stack.push(Frame::Map { key_next: true });
                false
            }
            Event::SequenceEnd | Event::MappingEnd => {
                stack.pop();
                true
            }
            Event::Alias(_) => true,
            Event::Scalar(text, ScalarStyle::Plain, _, None) => {
                let text = text.as_ref();
                let place = || {
                    format!(
                        "line {}, column {}",
                        span.start.line() + lines,
                        span.start.col() + 1
                    )
                };
                let ours = ours
                    .entry((is_key, text.to_string()))
                    .or_insert_with(|| our_reading(text, is_key))
                    .as_ref();
                match (is_key, ours) {
                    (true, Some(Value::String(key))) if go_key(text).as_ref() != Some(key) => {
                        return Err(Ambiguous(match go_key(text) {
                            Some(go) => format!(
                                "the plain key {text} ({}) means {go:?} to kubectl{} but {key:?} here, so the output would change its meaning: quote it, or write the key kubectl reads",
                                place(),
                                if is_yaml11_special(text) {
                                    " (YAML 1.1)"
                                } else {
                                    ""
                                }
                            ),
                            None => format!(
                                "the plain key {text} ({}) is one kubectl refuses (not a string to it), but {key:?} here: quote it",
                                place()
                            ),
                        }));
                    }
                    (false, Some(v)) if !agrees(v, go_plain(text)) => {
                        return Err(Ambiguous(format!(
                            "the plain value {text} ({}) means {} to kubectl but {} here, so the output would change its meaning: quote it, or write the value kubectl reads",
                            place(),
                            describe_go(go_plain(text), text),
                            describe(v)
                        )));
                    }
                    _ => {}
                }
                true
            }
            Event::Scalar(text, style, _, tag) => {
                let place = format!(
                    "line {}, column {}",
                    span.start.line() + lines,
                    span.start.col() + 1
                );
                if style == ScalarStyle::DoubleQuoted
                    && !json
                    && span
                        .byte_range()
                        .and_then(|r| input.get(r))
                        .is_some_and(escapes_surrogate)
                {
                    return Err(Ambiguous(format!(
                        "the string at {place} escapes a UTF-16 surrogate (\\ud800 to \\udfff), which kubectl refuses in YAML (only JSON pairs them): write the character itself"
                    )));
                }
                if let Some(tag) = tag {
                    let core = tag.is_yaml_core_schema();
                    // `!`, non-specific: a string to both.
                    let agrees = if tag.to_string() == "!" {
                        true
                    } else if core {
                        ["str", "binary", "null"]
                            .iter()
                            .any(|t| tag.is_yaml_core_schema_tag(t))
                    } else {
                        // kubectl reads a scalar under a tag of its own as the string written.
                        style != ScalarStyle::Plain
                            || match our_reading(&text, is_key) {
                                None => true,
                                Some(Value::String(s)) => s == *text,
                                Some(_) => false,
                            }
                    };
                    if !agrees {
                        let shown = if core {
                            format!("!!{}", tag.suffix())
                        } else {
                            tag.to_string()
                        };
                        return Err(Ambiguous(format!(
                            "the scalar tagged {shown} ({place}) may mean another value to kubectl than here: drop the tag{}",
                            if core { "" } else { " and quote the value" }
                        )));
                    }
                }
                true
            }
            _ => false,
        };
        if complete && let Some(Frame::Map { key_next }) = stack.last_mut() {
            *key_next = !*key_next;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(yaml: &str) -> Value {
        read::<Value>(yaml).unwrap()
    }

    /// What a plain (or quoted) scalar reads as, in a value and in a key.
    fn value(scalar: &str) -> Result<Value, Error> {
        read::<Value>(&format!("k: {scalar}\n")).map(|v| v["k"].clone())
    }
    fn key(scalar: &str) -> Result<String, Error> {
        let v = read::<Value>(&format!("{scalar}: v\n"))?;
        Ok(v.as_object().unwrap().keys().next().unwrap().clone())
    }

    #[test]
    fn streams_skip_empty_documents_and_keep_order() {
        let docs = read_stream("a: 1\n---\n---\n~\n---\nb: [x, {c: d}]\n...\n").unwrap();
        assert_eq!(docs, [json!({"a": 1}), json!({"b": ["x", {"c": "d"}]})]);
        assert!(read_stream("").unwrap().is_empty());
        assert!(read_stream("# only a comment\n").unwrap().is_empty());
        assert_eq!(one(""), Value::Null);
        assert!(read::<Value>("a: 1\n---\nb: 2\n").is_err());
        let keys: Vec<String> = one("z: 1\na: 2\nm: 3\n")
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["z", "a", "m"], "key order kept");
    }

    /// Found by fuzzing (`fuzz/`, target resolve): a tagged empty document
    /// (`!1`) read as null but was kept, so `resolve` wrote `null` for it,
    /// which its next run skipped.
    #[test]
    fn tagged_null_documents_are_skipped_too() {
        assert!(read_stream("!1").unwrap().is_empty());
        assert_eq!(
            read_stream("!x\n---\na: 1\n--- !!null\n").unwrap(),
            [json!({"a": 1})]
        );
    }

    /// Plain scalars as kubectl (Go's YAML 1.1 reader) reads them; quoted, a string.
    #[test]
    fn plain_scalars_read_as_kubectl_reads_them() {
        let cases = [
            ("on", json!(true)),
            ("On", json!(true)),
            ("yes", json!(true)),
            ("YES", json!(true)),
            ("y", json!(true)),
            ("Y", json!(true)),
            ("true", json!(true)),
            ("True", json!(true)),
            ("n", json!(false)),
            ("no", json!(false)),
            ("off", json!(false)),
            ("OFF", json!(false)),
            ("FALSE", json!(false)),
            // Spellings Go does not take for booleans stay strings.
            ("yEs", json!("yEs")),
            ("oN", json!("oN")),
            ("tRuE", json!("tRuE")),
            ("1_000", json!(1000)),
            ("017", json!(15)),
            ("0644", json!(420)),
            ("0o17", json!(15)),
            ("0x1F", json!(31)),
            ("1e3", json!(1000.0)),
            ("1.5", json!(1.5)),
            ("2024-01-01", json!("2024-01-01")),
            (
                "2001-12-14t21:59:43.10-05:00",
                json!("2001-12-14t21:59:43.10-05:00"),
            ),
            ("12:30", json!("12:30")),
            ("~", json!(null)),
            ("null", json!(null)),
            ("", json!(null)),
        ];
        for (plain, want) in cases {
            assert_eq!(value(plain).unwrap(), want, "plain {plain:?}");
            if !plain.is_empty() {
                assert_eq!(
                    value(&format!("'{plain}'")).unwrap(),
                    json!(plain),
                    "quoted {plain:?}"
                );
                assert_eq!(
                    value(&format!("\"{plain}\"")).unwrap(),
                    json!(plain),
                    "quoted {plain:?}"
                );
            }
        }
        // In flow collections, nested, and in a stream with quoted look-alikes.
        let v = one("a: [on, 'on', \"yes\", yes, {b: n, c: 'n'}]\nd: {e: [[off]]}\n");
        assert_eq!(
            v,
            json!({"a": [true, "on", "yes", true, {"b": false, "c": "n"}], "d": {"e": [[false]]}})
        );
    }

    #[test]
    fn what_json_cannot_carry_is_refused() {
        for plain in [".inf", "-.inf", ".Inf", ".nan", ".NaN", "1e999"] {
            let e = value(plain).unwrap_err().to_string();
            assert!(
                e.contains("not a finite number") && e.contains("line 1, column 4"),
                "{plain}: {e}"
            );
        }
        assert_eq!(value("'.inf'").unwrap(), json!(".inf"));
        assert!(read::<Value>("~: x\n").is_err(), "a null key");
        assert!(read::<Value>("[a]: x\n").is_err(), "a sequence as key");
    }

    /// Keys stay strings as written; plain YAML 1.2 booleans and numbers become
    /// their canonical string (as serde_yaml did, and as kubectl does for these).
    #[test]
    fn keys_are_strings() {
        let cases = [
            ("on", "on"),
            ("n", "n"),
            ("Yes", "Yes"),
            ("TRUE", "true"),
            ("False", "false"),
            ("'TRUE'", "TRUE"),
            ("0x1F", "31"),
            ("017", "15"),
            ("1_000", "1000"),
            ("+1", "1"),
            ("80", "80"),
            ("1.0", "1.0"),
            ("2024-01-01", "2024-01-01"),
            ("'0x1F'", "0x1F"),
            ("a.b/c", "a.b/c"),
        ];
        for (written, want) in cases {
            assert_eq!(key(written).unwrap(), want, "{written}");
        }
    }

    #[test]
    fn merge_keys_merge_and_aliases_expand() {
        let v = one("base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  y: 3\ncopy: *b\n");
        assert_eq!(v["over"], json!({"x": 1, "y": 3}));
        assert_eq!(v["copy"], json!({"x": 1, "y": 2}));
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let e = read::<Value>("a: 1\nb: 2\na: 3\n").unwrap_err().to_string();
        assert_eq!(e, "duplicate mapping key \"a\" at line 3, column 1");
    }

    /// Errors name the place and never echo the input, which may hold secret values.
    #[test]
    fn errors_name_the_line_without_echoing_the_input() {
        let e = read_stream("kind: Secret\nstringData:\n  password: hunter2\n  bad: [unclosed\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }

    /// Hostile nesting fails at once (serde_yaml took minutes on 100,000 `{a: `).
    #[test]
    fn deep_nesting_fails_fast_with_a_clear_error() {
        let inputs = [
            "[".repeat(100_000),
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            "{a: ".repeat(100_000),
            (0..1_000)
                .map(|i| format!("{}a:\n", " ".repeat(i)))
                .collect(),
            (0..1_000)
                .map(|i| format!("{}-\n", " ".repeat(i)))
                .collect(),
        ];
        for input in inputs {
            let e = read_stream(&input).unwrap_err().to_string();
            assert!(e.contains("nested more than 128 levels deep"), "{e}");
        }
        // Up to the limit is fine, and writes back (on a test thread's stack).
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(read_stream(&ok).is_ok());
        let deep = (1..MAX_DEPTH).fold(json!({"a": "x"}), |v, _| json!([v]));
        assert_eq!(one(&write(&deep).unwrap()), deep);
    }

    #[test]
    fn alias_expansion_is_bounded() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let started = std::time::Instant::now();
        let e = read_stream(&bomb).unwrap_err().to_string();
        assert!(
            e.starts_with("aliases expand to more than the input can hold"),
            "{e}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    /// A string stays a string for a YAML 1.1 reader (kubectl): anything it
    /// could take for a boolean, a number, null or a timestamp is quoted.
    #[test]
    fn strings_that_look_like_something_else_are_quoted() {
        let strings = "on yes y Y n NO off true False tRuE 1_000 017 0644 0o17 0x1F 0X1F 1e3 .inf .nan \
            1e999 2024-01-01 12:30 ~ null << = 1_ +1 -0 0. .5";
        for s in strings.split_whitespace().chain([""]) {
            let out = write(&json!({"k": s})).unwrap();
            let text = out.strip_prefix("k: ").unwrap().trim_end();
            assert!(text.starts_with(['"', '\'']), "{s:?} written as {text}");
            assert_eq!(value(text).unwrap(), json!(s), "{s:?} read back");
        }
    }

    #[test]
    fn values_round_trip() {
        let long = "word ".repeat(40);
        let json = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b c"}}"#;
        let strings = [
            long.as_str(),
            json,
            "multi\nline",
            "multi\nline\n",
            "multi\nline\n\n",
            "  leading\nx",
            "trail \nx",
            "tab\tin\nline",
            "a\r\nb",
            "\nstarts with a newline",
            "x\n  more indented\ny\n",
            "é€ß😀✓ <>&\"\\",
            "#!/bin/sh\necho $HOME # not a comment\n",
            "- a\n- b\n",
            "key: v",
            "--- x",
            "a\n---\nb",
            "\u{0}\u{1b}\u{7f}\u{85}\u{2028}",
            " ",
        ];
        for s in strings {
            let v = json!({"k": s, "seq": [s], "nested": {"a": {"b": s}}, s: 1});
            let back = one(&write(&v).unwrap());
            assert_eq!(back, v, "{s:?}");
        }
        let v = json!({"n": [0, -1, 1.5, 1e300, u64::MAX, i64::MIN], "b": [true, false], "z": null, "e": {}, "a": []});
        assert_eq!(one(&write(&v).unwrap()), v);
        let docs = [json!({"a": 1}), json!("s"), json!([1])];
        assert_eq!(read_stream(&write_stream(&docs).unwrap()).unwrap(), docs);
    }

    #[test]
    fn go_reads_plain_scalars_like_yaml_v2() {
        let cases = [
            ("on", Go::Bool(true)),
            ("Y", Go::Bool(true)),
            ("NO", Go::Bool(false)),
            ("TRUE", Go::Bool(true)),
            ("tRuE", Go::Str),
            ("yEs", Go::Str),
            ("1_000", Go::Int(1000)),
            ("017", Go::Int(15)),
            ("-017", Go::Int(-15)),
            ("0o17", Go::Int(15)),
            ("0O17", Go::Int(15)),
            ("0x1F", Go::Int(31)),
            ("0X1F", Go::Int(31)),
            ("+0x1F", Go::Int(31)),
            ("0B101", Go::Int(5)),
            ("1_", Go::Int(1)),
            ("08", Go::Float(8.0)),
            ("1_0.5", Go::Float(10.5)),
            ("1e3", Go::Float(1000.0)),
            (".5", Go::Float(0.5)),
            ("+.5", Go::Float(0.5)),
            ("1.", Go::Float(1.0)),
            ("18446744073709551615", Go::Int(u64::MAX as i128)),
            ("18446744073709551616", Go::Float(18446744073709551616.0)),
            ("1e999", Go::Str),
            (".inf", Go::NotFinite),
            ("-.Inf", Go::NotFinite),
            ("2024-01-01", Go::Str),
            ("12:30", Go::Str),
            ("0x", Go::Str),
            ("-", Go::Str),
            ("--flag", Go::Str),
            ("v1.2.3", Go::Str),
            ("~", Go::Null),
            ("", Go::Null),
        ];
        for (s, want) in cases {
            assert_eq!(go_plain(s), want, "{s:?}");
        }
        // Keys, as `kubectl label --local -o json` prints them.
        let keys = [
            ("on", Some("true")),
            ("No", Some("false")),
            ("0x1F", Some("31")),
            ("1.0", Some("1")),
            ("1.5", Some("1.5")),
            ("1e3", Some("1000")),
            ("1e5", Some("100000")),
            ("123456.7", Some("123456.7")),
            ("1e6", Some("1e+06")),
            ("1.5e1_0", Some("1.5e+10")),
            ("0.0001", Some("0.0001")),
            ("0.00001", Some("1e-05")),
            ("3.4e39", Some(".inf")),
            ("9223372036854775808", None),
            ("null", None),
        ];
        for (s, want) in keys {
            assert_eq!(go_key(s).as_deref(), want, "{s:?}");
        }
    }

    /// Every plain scalar this module reads as Go does passes; the rest are
    /// the spellings where they part.
    #[test]
    fn plain_scalars_kubectl_reads_otherwise_are_refused() {
        let agree = "on yes Y No OFF true False tRuE yEs 1_000 017 0644 0o17 0x1F 08 1e3 1.5 .5 -0 +1 \
            2024-01-01 12:30 ~ null --flag -x v1 1.2.3 10Gi 0.5Gi 100m '0X1F' \"1_\"";
        let agree = agree.split_whitespace();
        for s in agree {
            let doc = format!("a: {s}\nb: [{s}]\nc: {{d: {s}}}\n");
            assert!(
                check_plain_scalars(&doc).is_ok(),
                "{s}: {:?}",
                check_plain_scalars(&doc)
            );
        }
        for s in [
            "0X1F", "0O17", "0B101", "1_", "1__0", "+_1", "1_0.5", "1.5e1_0", "0_8",
        ] {
            let e = check_plain_scalars(&format!("a: x\nb: [{s}]\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("plain value {s} (line 2, column 5)")),
                "{e}"
            );
            assert!(e.contains("to kubectl"), "{e}");
        }
        // Keys: kept as written (or YAML 1.2's canonical string), which is
        // what kubectl reads except for YAML 1.1 spellings and some numbers.
        for key in [
            "a", "TRUE", "true", "80", "1.5", "0x1F", "017", "1_000", "'on'", "\"y\"", "<<",
        ] {
            let doc = format!("{key}: x\n");
            let doc = if key == "<<" {
                "a: &a {b: 1}\nc: {<<: *a}\n".to_string()
            } else {
                doc
            };
            assert!(
                check_plain_scalars(&doc).is_ok(),
                "{key}: {:?}",
                check_plain_scalars(&doc)
            );
        }
        for (key, go) in [
            ("on", "\"true\""),
            ("y", "\"true\""),
            ("No", "\"false\""),
            ("1.0", "\"1\""),
            ("0X1F", "\"31\""),
        ] {
            let e = check_plain_scalars(&format!("x:\n  {key}: v\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!(
                    "plain key {key} (line 2, column 3) means {go} to kubectl"
                )),
                "{e}"
            );
        }
    }

    /// The guarantee `resolve` stands on: a plain scalar (value or key) that
    /// passes the check is written back meaning to kubectl what it meant.
    #[test]
    fn what_passes_the_check_means_the_same_to_kubectl_once_written() {
        let alphabet = [
            "0", "1", "8", "_", ".", "e", "x", "X", "o", "b", "+", "-", "y", "n",
        ];
        let mut tokens: Vec<String> = "on On ON yes YES y Y n N no off OFF true TRUE tRuE false \
            1_000 017 0644 0o17 0x1F 1e3 1E3 1.5 .5 -.5 +.5 1e-3 2024-01-01 2001-12-14t21:59:43.10-05:00 \
            12:30 1:20:30 ~ null Null NULL NaN Infinity 9223372036854775807 9223372036854775808 \
            18446744073709551615 18446744073709551616 -9223372036854775809 <<x = a 10Gi v1 \
            yEs oN nO 0X1F 0O17 0B101 0b101 -0b101 0o 0x 0X +0x1F -0x1F 0x_1F 1__0 +_1 1_0.5 1.5e1_0 \
            0_8 00 01_ 1e999 .inf"
            .split_whitespace()
            .map(String::from)
            .collect();
        // Every short spelling that starts like a number (others are strings for both).
        for a in ["0", "1", "8", ".", "+", "-"] {
            tokens.push(a.to_string());
            for b in alphabet {
                tokens.push(format!("{a}{b}"));
                for c in alphabet {
                    tokens.push(format!("{a}{b}{c}"));
                }
            }
        }
        let kubectl_reads = |written: &str, key: bool| -> (Go, String) {
            if written.starts_with(['"', '\'']) {
                let s: String = read(written).unwrap();
                (Go::Str, s)
            } else if key {
                (Go::Str, go_key(written).unwrap_or_default())
            } else {
                (go_plain(written), written.to_string())
            }
        };
        let same = |a: (Go, String), b: (Go, String)| match (a.0, b.0) {
            (Go::Str, Go::Str) => a.1 == b.1,
            (Go::Int(x), Go::Float(y)) | (Go::Float(y), Go::Int(x)) => x as f64 == y,
            (x, y) => x == y,
        };
        let mut checked = 0;
        for t in &tokens {
            let input = format!("a: {t}\n");
            if let (Ok(docs), Ok(())) = (
                read_values(&input, 0),
                check_plain_scalars_here(&input, 0, false),
            ) {
                let out = write(&docs[0]).unwrap();
                let written = out.strip_prefix("a: ").unwrap().trim_end();
                let before = (go_plain(t), t.clone());
                assert!(
                    same(kubectl_reads(written, false), before),
                    "value {t:?} written as {written}"
                );
                checked += 1;
            }
            let input = format!("{t}: v\n");
            if let (Ok(docs), Ok(())) = (
                read_values(&input, 0),
                check_plain_scalars_here(&input, 0, false),
            ) {
                let out = write(&docs[0]).unwrap();
                let written = out.strip_suffix(": v\n").unwrap();
                let before = (Go::Str, go_key(t).unwrap_or_default());
                assert!(
                    same(kubectl_reads(written, true), before),
                    "key {t:?} written as {written}"
                );
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// A stream in documents: the ranges cover the text (the trailer aside),
    /// empty documents included.
    #[test]
    fn documents_cover_the_stream() {
        let input = "# head\na: 1\n---\n# c\nb: 2\n...\n--- x\n---\n# tail\n";
        let stream = read_documents(input).unwrap();
        let values: Vec<_> = stream.docs.iter().map(|d| d.value.clone()).collect();
        assert_eq!(
            values,
            [
                Some(json!({"a": 1})),
                Some(json!({"b": 2})),
                Some(json!("x")),
                None
            ]
        );
        let joined: String = stream.docs.iter().map(|d| stream.text_of(d)).collect();
        assert_eq!(joined + stream.trailer(), input);
        assert_eq!(
            &input[stream.docs[1].body..stream.docs[1].range.end],
            "\n# c\nb: 2\n..."
        );
        // Errors in a later document name the line in the stream.
        let e = read_stream("a: 1\n---\nb: 2\n---\nc: [x\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 5") || e.contains("line 6"), "{e}");
        let e = read_stream("a: 1\n---\nb: 1\nb: 2\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "duplicate mapping key \"b\" at line 4, column 1");
    }

    /// kubectl skips a byte-order mark at the start of its input and of each
    /// document; elsewhere it is an error.
    #[test]
    fn byte_order_marks_are_skipped_where_kubectl_skips_them() {
        let docs =
            read_stream("\u{feff}a: 1\n---\n\u{feff}b: 2\n--- # x\r\n\u{feff}c: 3\n").unwrap();
        assert_eq!(docs, [json!({"a": 1}), json!({"b": 2}), json!({"c": 3})]);
        assert!(read_stream("a: 1\n\u{feff}b: 2\n").is_err());
        assert!(
            read_stream("a: \"\u{feff}\"\n").is_ok(),
            "inside a string it is a character"
        );
    }

    #[test]
    fn input_beyond_the_limit_is_refused_before_parsing() {
        let mut big = String::from("a: [");
        big.push_str(&"1,".repeat(MAX_INPUT / 2));
        big.push_str("1]\n");
        let started = std::time::Instant::now();
        let e = read_stream(&big).unwrap_err().to_string();
        assert!(e.contains("larger than 16 MiB"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    /// JSON (to kubectl) pairs surrogate escapes into one character and
    /// takes a lone one for U+FFFD; its YAML reader refuses them. Here a
    /// pair in a JSON stream is the character, a lone one an error, and
    /// either in YAML fails the check.
    #[test]
    fn surrogate_escapes_read_as_kubectl_reads_them_or_fail() {
        let json = r#"{"kind": "ConfigMap", "data": {"a": "\ud83d\ude00", "b": "\\ud83d"}}"#;
        assert_eq!(one(json)["data"], json!({"a": "😀", "b": "\\ud83d"}));
        assert!(check_plain_scalars(json).is_ok());
        let e = read_stream(r#"{"a": "\ud83d"}"#).unwrap_err().to_string();
        assert!(e.contains("surrogate"), "{e}");
        let e = check_plain_scalars("kind: ConfigMap\ndata: {a: \"\\ud83d\\ude00\"}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2, column 11") && e.contains("surrogate"),
            "{e}"
        );
        assert!(
            check_plain_scalars("a: \"\\\\ud83d \\u00e9\"\n").is_ok(),
            "an escaped backslash, é"
        );
    }

    /// A tag on a scalar: kubectl reads a custom one as the string written
    /// and applies !!float to its own reading of the text.
    #[test]
    fn tags_where_the_readings_part_are_refused() {
        for ok in [
            "a: !!str 017",
            "a: !foo bar",
            "a: !foo '017'",
            "a: !!binary aGVsbG8=",
            "a: !!null ''",
            "a: !foo {b: 1}",
            "a: !!map {b: 1}",
            "!!str 1: x",
            "a: ! 12",
        ] {
            assert!(
                check_plain_scalars(ok).is_ok(),
                "{ok}: {:?}",
                check_plain_scalars(ok)
            );
        }
        for bad in [
            "a: !foo 017",
            "a: !foo yes",
            "!foo 017: x",
            "a: !!float 017",
            "a: !!int 1",
            "a: !<tag:yaml.org,2002:float> 1",
        ] {
            let e = check_plain_scalars(bad).unwrap_err().to_string();
            assert!(e.contains("tagged") && e.contains("line 1"), "{bad}: {e}");
        }
    }
}
