//! Text from input or from the cluster, made safe to print on a terminal.
//!
//! Names, namespaces, label keys and condition messages come from YAML in a
//! repository or from objects anyone with write access made: printed raw,
//! an escape sequence in them would drive the reader's terminal (move the
//! cursor, rewrite earlier lines, set the window title). Each control
//! character (C0, DEL, C1) and each bidirectional override is written as a
//! Rust escape (`\u{1b}`) instead; newlines and tabs stay.

use std::borrow::Cow;

fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character escaped (newline and tab kept).
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.contains(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Every string in `value` cleaned ([`clean`]), keys included: a view
/// model read from the cluster, before it is drawn as text.
pub fn clean_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(c) = clean(s) {
                *s = c;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean_json),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut v) in old {
                clean_json(&mut v);
                map.insert(clean(&k).into_owned(), v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        // Rewrite the previous line, set the window title, C1 CSI, bidi.
        let hostile = "db\x1b[1A\x1b[2K\x1b]0;owned\x07\u{9b}31m\u{202e}txt.exe\r";
        let out = clean(hostile);
        assert!(!out.contains(|c: char| unsafe_char(c)), "{out:?}");
        assert_eq!(
            out,
            "db\\u{1b}[1A\\u{1b}[2K\\u{1b}]0;owned\\u{7}\\u{9b}31m\\u{202e}txt.exe\\r"
        );
        assert!(matches!(clean("plain\ttext\nline"), Cow::Borrowed(_)));
        let mut v = json!({"name\x1b[2J": ["ok", {"message": "\x1b[31mred"}], "n": 1});
        clean_json(&mut v);
        assert_eq!(
            v,
            json!({"name\\u{1b}[2J": ["ok", {"message": "\\u{1b}[31mred"}], "n": 1})
        );
    }
}
