//! Where Go's YAML 1.1 reader (kubectl, Helm, kustomize) and this one part:
//! [`check_plain_scalars`] finds plain scalars that would change meaning on
//! their way through kubectl, for the commands that write back what they read.

use super::limits::*;
use super::stream::*;
use serde_json::Value;

/// A plain scalar that would change meaning for kubectl on its way through
/// `resolve` or the KRM function (see [`check_plain_scalars`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Ambiguous(pub(super) String);

/// What Go's YAML 1.1 reader (gopkg.in/yaml.v2, under kubectl, Helm and
/// sigs.k8s.io/yaml) makes of a plain, untagged scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Go {
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
pub(super) fn go_plain(s: &str) -> Go {
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
pub(super) fn go_parse_int(s: &str) -> Option<i128> {
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
pub(super) fn go_float_syntax(s: &str) -> bool {
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
pub(super) fn go_key(s: &str) -> Option<String> {
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
pub(super) fn go_format_float32(f: f64) -> String {
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

pub(super) fn agrees(ours: &Value, go: Go) -> bool {
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

pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {s:?}"),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        _ => v.to_string(),
    }
}

pub(super) fn describe_go(go: Go, s: &str) -> String {
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
pub(super) fn may_not_be_a_string(s: &str) -> bool {
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
pub(super) fn our_reading(text: &str, is_key: bool) -> Option<Value> {
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
pub(super) fn escapes_surrogate(written: &str) -> bool {
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
pub(super) fn check_plain_scalars_here(
    input: &str,
    lines: usize,
    json: bool,
) -> Result<(), Ambiguous> {
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

impl Stream<'_> {
    /// [`check_plain_scalars`] on one document.
    pub fn check(&self, doc: &Document) -> Result<(), Ambiguous> {
        let json = self.is_json();
        with_stack(|| check_plain_scalars_here(self.text_of(doc), doc.lines_before, json))
    }
}
