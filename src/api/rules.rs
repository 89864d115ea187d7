//! The rules the CRD's schema states twice: as CEL expressions (admission)
//! and as the Rust checks the controller and the CLI run (`crate::version`),
//! each pair built from one table or constant here, so the two cannot part.

/// A Secret data key as the apiserver accepts it (its `IsConfigMapKey`):
/// `[-._a-zA-Z0-9]+`, at most 253 characters, neither `.` nor `..`, and not
/// starting with `..`. The CRD's CEL rule ([`data_key_rule`]) is the same.
pub fn valid_data_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 253
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
        && k != "."
        && !k.starts_with("..")
}

/// [`valid_data_key`] as a CEL expression on the string variable `k`.
pub fn data_key_rule(k: &str) -> String {
    format!(
        "size({k}) <= 253 && {k}.matches('^[-._a-zA-Z0-9]+$') && {k} != '.' && !{k}.startsWith('..')"
    )
}

/// Characters `symbolCharacters` must not hold, as inclusive ranges: control
/// characters (C0, DEL, C1: Rust's `char::is_control`), white space (Rust's
/// `char::is_whitespace`), and invisible characters: the bidirectional
/// controls, zero-width and other format characters (Unicode category Cf)
/// and the default-ignorable code points (fillers, variation selectors, tags),
/// which make a value differ from what a reader sees. The CRD's CEL rule is
/// generated from this table ([`symbols_rule`]), so both refuse the same.
pub const FORBIDDEN_SYMBOLS: &[(char, char)] = &[
    ('\u{0}', '\u{20}'),
    ('\u{7f}', '\u{a0}'),
    ('\u{ad}', '\u{ad}'),
    ('\u{34f}', '\u{34f}'),
    ('\u{600}', '\u{605}'),
    ('\u{61c}', '\u{61c}'),
    ('\u{6dd}', '\u{6dd}'),
    ('\u{70f}', '\u{70f}'),
    ('\u{890}', '\u{891}'),
    ('\u{8e2}', '\u{8e2}'),
    ('\u{115f}', '\u{1160}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{17b4}', '\u{17b5}'),
    ('\u{180b}', '\u{180f}'),
    ('\u{2000}', '\u{200f}'),
    ('\u{2028}', '\u{202f}'),
    ('\u{205f}', '\u{206f}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{fe00}', '\u{fe0f}'),
    ('\u{feff}', '\u{feff}'),
    ('\u{ffa0}', '\u{ffa0}'),
    ('\u{fff0}', '\u{fffb}'),
    ('\u{110bd}', '\u{110bd}'),
    ('\u{110cd}', '\u{110cd}'),
    ('\u{13430}', '\u{1343f}'),
    ('\u{1bca0}', '\u{1bca3}'),
    ('\u{1d173}', '\u{1d17a}'),
    ('\u{e0000}', '\u{e0fff}'),
];

pub fn forbidden_symbol(c: char) -> bool {
    FORBIDDEN_SYMBOLS
        .iter()
        .any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// A CEL string literal (single-quoted) holding an RE2 class of the ranges.
fn cel_class(ranges: &[(char, char)]) -> String {
    let mut class = String::from("'[");
    for &(lo, hi) in ranges {
        // `\\x{..}` in CEL's literal is `\x{..}` in the regular expression.
        class.push_str(&format!("\\\\x{{{:x}}}", u32::from(lo)));
        if hi != lo {
            class.push_str(&format!("-\\\\x{{{:x}}}", u32::from(hi)));
        }
    }
    class.push_str("]'");
    class
}

/// The CRD's CEL rule for `symbolCharacters`: none of [`FORBIDDEN_SYMBOLS`].
pub fn symbols_rule() -> String {
    format!("!self.matches({})", cel_class(FORBIDDEN_SYMBOLS))
}

/// The control characters (Unicode Cc: C0, DEL and C1), which `rotation`
/// must not hold: Rust's `char::is_control`.
const CONTROLS: &[(char, char)] = &[('\u{0}', '\u{1f}'), ('\u{7f}', '\u{9f}')];

/// The CRD's CEL rule for `rotation`: no control character (C0, DEL, C1).
pub fn rotation_rule() -> String {
    format!("!self.matches({})", cel_class(CONTROLS))
}

/// What is wrong with `symbolCharacters` holding one of [`FORBIDDEN_SYMBOLS`]
/// (the CRD's message too).
pub const SYMBOLS_INVISIBLE: &str = "symbolCharacters must not contain white space, control characters or invisible characters (zero-width, bidirectional controls, other format characters): list visible characters only";

/// The shortest period, in seconds (`1m`).
pub const MIN_PERIOD_SECONDS: u64 = 60;
/// The longest period, in hours: 100 years of 365 days. Every epoch
/// computation stays far from overflow with it, and so does the CRD's rule.
pub const MAX_PERIOD_HOURS: u64 = 876_000;
pub const MAX_PERIOD_SECONDS: u64 = MAX_PERIOD_HOURS * 3600;

/// The longest `rotateEvery`, in characters (the CRD's maxLength).
pub const MAX_PERIOD_TEXT: usize = 32;

/// CEL, on a key's generator: its charset (default alphanumeric) has at
/// least one of `chars`. Each charset's characters are spelled once, in
/// [`crate::api::Charset::chars`].
pub fn charset_in(chars: &str) -> String {
    let names: Vec<String> = crate::api::Charset::ALL
        .iter()
        .filter(|c| c.chars().chars().any(|x| chars.contains(x)))
        .map(|c| format!("'{}'", c.as_str()))
        .collect();
    let default = crate::api::Charset::default()
        .chars()
        .chars()
        .any(|x| chars.contains(x));
    format!(
        "(has(self.charset) ? self.charset in [{}] : {default})",
        names.join(", ")
    )
}

/// The CRD's CEL rule for the format of a `rotateEvery` (spec and key), and its message.
pub const PERIOD_FORMAT_RULE: &str = "self.matches('^([0-9]+(h|m|s))+$')";
pub const PERIOD_FORMAT_MESSAGE: &str = "rotateEvery must be a duration such as 720h, 90m or 1h30m";

/// The message of [`period_range_rule`].
pub fn period_range_message() -> String {
    format!("rotateEvery must be {}", period_range_text())
}

/// The allowed range, as the error messages state it.
pub fn period_range_text() -> String {
    format!(
        "at least 1m and at most {MAX_PERIOD_HOURS}h ({} years)",
        MAX_PERIOD_HOURS / (365 * 24)
    )
}

/// The CRD's CEL rule for the range of `rotateEvery`: the same result as
/// `version::parse_period` for every string of the format `^([0-9]+(h|m|s))+$`
/// (which a rule of its own checks; this one stays silent otherwise).
///
/// It adds up the components in seconds as integers rather than with
/// `duration()`: that is Go's `time.ParseDuration`, which fails beyond about
/// 292 years, and units may repeat, so even a bounded digit count per
/// component (`999999h999999h999999h`) would reach it. A component with more
/// than 10 significant digits is at least 10^10 s, beyond the maximum, and is
/// refused before `int()` sees it; with at most 10, the sum of the at most 16
/// components (maxLength 32) is far within an int64.
pub fn period_range_rule() -> String {
    format!(
        "!self.matches('^([0-9]+(h|m|s))+$') || \
         (self.findAll('[0-9]+[hms]').all(c, c.matches('^0*[0-9]{{1,10}}[hms]$')) && \
         [self.findAll('[0-9]+[hms]').map(c, int(c.substring(0, size(c) - 1)) * \
         (c.endsWith('h') ? 3600 : (c.endsWith('m') ? 60 : 1))).sum()]\
         .all(t, t >= {MIN_PERIOD_SECONDS} && t <= {MAX_PERIOD_SECONDS}))"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table the CRD's rule is made from covers every character Rust
    /// calls a control or white space, and rotation's rule is exactly Cc.
    #[test]
    fn forbidden_symbols_cover_controls_and_white_space() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            if c.is_control() || c.is_whitespace() {
                assert!(forbidden_symbol(c), "{:x}", u32::from(c));
            }
            let in_controls = CONTROLS.iter().any(|&(lo, hi)| (lo..=hi).contains(&c));
            assert_eq!(in_controls, c.is_control(), "{:x}", u32::from(c));
        }
        for c in ['!', 'é', '€', '😀', 'ß', '中'] {
            assert!(!forbidden_symbol(c), "{c}");
        }
        assert!(
            rotation_rule().contains("x{7f}-\\\\x{9f}"),
            "{}",
            rotation_rule()
        );
    }
}
