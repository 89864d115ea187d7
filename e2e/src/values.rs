//! Generated values: reading them from a Secret, checking their alphabet, and
//! recording them for the check that none reaches the controller's log.

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;

/// Appends generated values to `$E2E_VALUES_FILE` (set by `e2e/run.sh`), which
/// is checked against the controller's log after the suite: no value may appear there.
pub fn record_values<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
    use std::io::Write;
    let Some(path) = std::env::var_os("E2E_VALUES_FILE") else {
        return Ok(());
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // One write of whole lines: tests record from parallel threads, and two
    // writes per value let another thread's value in between (a merged line
    // and an empty one, which as a grep pattern matches every log line).
    let mut lines = Vec::new();
    for v in values {
        // Short values could appear in a log by chance; 12+ characters cannot.
        if v.len() >= 12 && !v.contains(&b'\n') {
            lines.extend_from_slice(v);
            lines.push(b'\n');
        }
    }
    if !lines.is_empty() {
        f.write_all(&lines)?;
    }
    Ok(())
}

pub fn value(s: &Secret, key: &str) -> Result<String> {
    let v = s
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .with_context(|| format!("key {key} in Secret {}", s.name_any()))?;
    Ok(String::from_utf8(v.0.clone())?)
}

pub fn assert_alphabet(v: &str, len: usize, alphabet: &str) -> Result<()> {
    ensure!(
        v.chars().count() == len,
        "value has {} characters, want {len}",
        v.chars().count()
    );
    ensure!(
        v.chars().all(|c| alphabet.contains(c)),
        "value has characters outside {alphabet:?}"
    );
    Ok(())
}
