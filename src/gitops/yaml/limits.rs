//! How much the reader takes: the bounds on input and nesting, the budgets
//! and options serde-saphyr reads with, and YAML 1.1's extra booleans.

/// How deeply collections may nest (serde_yaml's limit too).
pub const MAX_DEPTH: usize = 128;

/// The largest stream read: bigger input is refused before it is parsed
/// (reading takes some 20 times the input's size in memory at most).
pub const MAX_INPUT: usize = 16 << 20;

/// Plain scalars that YAML 1.1 readers (kubectl, Helm, kustomize's
/// sigs.k8s.io/yaml) read as booleans or null, where YAML 1.2 reads strings.
/// As a mapping key, kubectl silently turns `n:` into `"false":`.
pub(super) const YAML11_SPECIAL: &[&str] = &[
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
pub(super) fn yaml11_bool(s: &str) -> Option<bool> {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

pub(super) fn options(input: &str, yaml11_booleans: bool) -> serde_saphyr::Options {
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
pub(super) const MIN_ALIAS_EVENTS: usize = 50_000;

/// Reading recurses once per nested level, with big frames in a debug build
/// (some 32 KiB a level): [`MAX_DEPTH`] levels need more than the 2 MiB of a
/// test or tokio thread, so reading runs on a thread of its own.
pub(super) const READ_STACK: usize = 32 << 20;

pub(super) fn with_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
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
