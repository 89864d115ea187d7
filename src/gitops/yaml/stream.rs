//! Reading a stream into JSON values, document by document (kept with where
//! each is in the text), and writing values back.

use super::error::Error;
use super::limits::*;
use super::tree::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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
pub(super) const BOM: char = '\u{feff}';

/// Whether kubectl's stream reader takes `line` for a document separator:
/// `---`, then nothing or a comment.
pub(super) fn is_separator(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| {
        let rest = rest.trim();
        rest.is_empty() || rest.starts_with('#')
    })
}

/// The input without the byte-order marks kubectl skips (see [`BOM`]);
/// others stay, and the reader refuses them.
pub(super) fn without_boms(input: &str) -> std::borrow::Cow<'_, str> {
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
    pub(super) fn is_json(&self) -> bool {
        self.text.trim_start().starts_with('{')
    }
}

/// A YAML stream (at most [`MAX_INPUT`] bytes), document by document.
pub fn read_documents(input: &str) -> Result<Stream<'_>, Error> {
    check_size(input.len())?;
    let text = without_boms(input);
    let docs = with_stack(|| read_documents_here(&text))?;
    Ok(Stream { text, docs })
}

pub(super) fn read_documents_here(text: &str) -> Result<Vec<Document>, Error> {
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
pub(super) fn document_spans(text: &str) -> Option<Vec<(std::ops::Range<usize>, usize)>> {
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
pub(super) fn read_values(text: &str, lines: usize) -> Result<Vec<Value>, Error> {
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

pub(super) fn has_yaml11_bool_string(v: &Value) -> bool {
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
pub(super) fn take_yaml11_booleans(strict: &mut Value, lax: Value) {
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
