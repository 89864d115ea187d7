//! Sharding (`--shard-selector`): a controller that reconciles only the
//! RandomSecrets (and ClusterRandomSecrets, annotated Secrets) its label
//! selector matches, as Flux's `--watch-label-selector` does. Kubernetes is
//! the whole coordination: each shard watches through its selector, holds a
//! Lease of its own, and its version Secrets carry their RandomSecret's
//! shard labels, so that its Secret watch is narrowed by the same selector.
//!
//! The convention (documented, not enforced): the label [`SHARD_KEY`], one
//! shard per value (`sharding.randomsecret.io/key=shard1`), and a default
//! shard taking everything without it (`!sharding.randomsecret.io/key`).
//!
//! A RandomSecret moved to another shard (relabelled) is handed over by the
//! shard that gains it: its versions still carry the old labels, out of
//! that shard's Secret watch, so it finds them by name
//! (`reconciler::handover`) and relabels those it proves its own.

use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The label key of the documented convention.
pub const SHARD_KEY: &str = concat!("sharding.", crate::api::project!(), ".io/key");

/// A shard: the label selector as given and the label keys it names (its
/// shard labels: what a version copies from its RandomSecret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    selector: String,
    keys: Vec<String>,
    requirements: Vec<Requirement>,
}

/// One requirement of a selector: a key and what its value must be.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Exists,
    NotExists,
    /// `=`, `==`, `in`.
    In(Vec<String>),
    /// `!=`, `notin`: also met by an object without the key.
    NotIn(Vec<String>),
}

/// One object's shard labels: the shard's keys it has, with their values.
pub type ShardLabels = Vec<(String, String)>;

impl Shard {
    /// Parses a label selector (the apiserver's syntax: `k=v`, `k==v`,
    /// `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma-separated);
    /// an error says what to fix.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let selector = text.trim();
        if selector.is_empty() {
            return Err("--shard-selector is empty: give a label selector, such as sharding.randomsecret.io/key=shard1 (or !sharding.randomsecret.io/key for the default shard)".into());
        }
        let requirements = split_top(selector)?
            .into_iter()
            .map(|req| {
                requirement(req)
                    .map_err(|why| format!("--shard-selector {selector:?}: {req:?} {why}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut keys: Vec<String> = requirements.iter().map(|r| r.key.clone()).collect();
        keys.sort();
        keys.dedup();
        Ok(Shard {
            selector: selector.to_string(),
            keys,
            requirements,
        })
    }

    /// Whether an object with the shard labels `labels` (its labels of the
    /// shard's keys: the others cannot change the answer) is this shard's,
    /// as the apiserver decides it for the watch.
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.iter().find(|(k, _)| *k == r.key).map(|(_, v)| v);
            match &r.op {
                Op::Exists => value.is_some(),
                Op::NotExists => value.is_none(),
                Op::In(set) => value.is_some_and(|v| set.contains(v)),
                Op::NotIn(set) => value.is_none_or(|v| !set.contains(v)),
            }
        })
    }

    pub fn selector(&self) -> &str {
        &self.selector
    }

    /// The label keys the selector names, sorted.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// `base` (a selector of ours, may be empty) narrowed to this shard.
    pub fn narrow(&self, base: &str) -> String {
        if base.is_empty() {
            self.selector.clone()
        } else {
            format!("{base},{}", self.selector)
        }
    }

    /// The shard's Lease: `id` and a digest of the selector (as Flux
    /// derives its leader election ID), so that shards never share one.
    pub fn lease(&self, id: &str) -> String {
        let digest = Sha256::digest(self.selector.as_bytes());
        let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{id}-{hex}")
    }

    /// The shard labels of an object labelled `labels`.
    pub fn labels_of(&self, labels: Option<&BTreeMap<String, String>>) -> ShardLabels {
        labels_of(&self.keys, labels)
    }

    /// Gives a version's `labels` its RandomSecret's shard labels `of_rs`:
    /// the shard's keys are the RandomSecret's alone (never from
    /// `spec.secretLabels`), so the version stays in its shard's Secret watch.
    pub fn label(&self, labels: &mut BTreeMap<String, String>, of_rs: &[(String, String)]) {
        labels.retain(|k, _| !self.keys.contains(k));
        labels.extend(of_rs.iter().cloned());
    }

    /// The metadata merge patch that gives a Secret labelled `current` the
    /// shard labels `wanted` (a key `wanted` lacks is removed); None when
    /// it has them.
    pub fn relabel(
        &self,
        current: Option<&BTreeMap<String, String>>,
        wanted: &[(String, String)],
    ) -> Option<serde_json::Value> {
        (self.labels_of(current) != wanted).then(|| self.labels_patch(wanted))
    }

    /// The metadata merge patch that sets the shard's keys to `wanted`
    /// (a key `wanted` lacks is removed).
    pub fn labels_patch(&self, wanted: &[(String, String)]) -> serde_json::Value {
        let labels: serde_json::Map<String, serde_json::Value> = self
            .keys
            .iter()
            .map(|k| {
                let v = wanted.iter().find(|(w, _)| w == k).map(|(_, v)| v.clone());
                (k.clone(), v.map_or(serde_json::Value::Null, Into::into))
            })
            .collect();
        serde_json::json!({"metadata": {"labels": labels}})
    }
}

/// The labels of `keys` that `labels` has, in the order of `keys`.
pub fn labels_of(keys: &[String], labels: Option<&BTreeMap<String, String>>) -> ShardLabels {
    let Some(labels) = labels else {
        return Vec::new();
    };
    keys.iter()
        .filter_map(|k| Some((k.clone(), labels.get(k)?.clone())))
        .collect()
}

/// The requirements of a selector: split at commas outside parentheses.
fn split_top(selector: &str) -> Result<Vec<&str>, String> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(selector[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!(
                "--shard-selector {selector:?}: unbalanced parentheses"
            ));
        }
    }
    if depth != 0 {
        return Err(format!(
            "--shard-selector {selector:?}: unbalanced parentheses"
        ));
    }
    out.push(selector[start..].trim());
    if out.iter().any(|r| r.is_empty()) {
        return Err(format!(
            "--shard-selector {selector:?}: an empty requirement (a stray comma)"
        ));
    }
    Ok(out)
}

/// One requirement, its key, operator and values checked.
fn requirement(req: &str) -> Result<Requirement, String> {
    let make = |key: &str, op| -> Result<Requirement, String> {
        Ok(Requirement {
            key: label_key(key.trim())?.to_string(),
            op,
        })
    };
    if let Some(key) = req.strip_prefix('!') {
        return make(key, Op::NotExists);
    }
    for (sign, negated) in [("==", false), ("!=", true), ("=", false)] {
        if let Some((key, value)) = req.split_once(sign) {
            let value = value.trim();
            label_value(value)?;
            let set = vec![value.to_string()];
            return make(key, if negated { Op::NotIn(set) } else { Op::In(set) });
        }
    }
    let mut words = req.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let Some(rest) = words.next().map(str::trim) else {
        return make(key, Op::Exists);
    };
    let (negated, set) = match rest.strip_prefix("notin") {
        Some(set) => (true, set),
        None => (false, rest.strip_prefix("in").unwrap_or("")),
    };
    let set = set
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("is not a requirement: use key=value, key!=value, key in (a,b), key notin (a,b), key or !key")?;
    let values = set
        .split(',')
        .map(|v| {
            let v = v.trim();
            label_value(v).map(|()| v.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    make(
        key,
        if negated {
            Op::NotIn(values)
        } else {
            Op::In(values)
        },
    )
}

/// A label key: an optional DNS subdomain prefix and a name of at most 63.
fn label_key(key: &str) -> Result<&str, String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part.len() <= 63
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    if !prefix_ok || name.is_empty() || label_value(name).is_err() {
        return Err(format!(
            "has no valid label key ({key:?}): a name of at most 63 letters, digits, '-', '_' or '.', optionally after a DNS prefix and '/'"
        ));
    }
    Ok(key)
}

/// A label value: empty, or at most 63 alphanumerics, '-', '_' and '.',
/// beginning and ending alphanumeric.
fn label_value(v: &str) -> Result<(), String> {
    let alnum = |c: Option<u8>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    if v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && alnum(v.bytes().next())
        && alnum(v.bytes().last())
    {
        Ok(())
    } else {
        Err(format!(
            "has an invalid label value {v:?}: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"
        ))
    }
}

/// The shard keys of this process, set once at start before any watch (the
/// RandomSecret cache's parser keeps those labels and drops the others).
static KEYS: OnceLock<Vec<String>> = OnceLock::new();

/// Sets this process's shard (once; a second call is refused).
pub fn register(shard: &Shard) -> Result<(), String> {
    KEYS.set(shard.keys.clone())
        .map_err(|_| "the shard is set once, at start".to_string())
}

/// The shard keys of this process (none when it is not sharded).
pub fn keys() -> &'static [String] {
    KEYS.get().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_operator_of_the_apiserver_names_its_key() {
        for (sel, keys) in [
            ("sharding.randomsecret.io/key=shard1", vec![SHARD_KEY]),
            ("!sharding.randomsecret.io/key", vec![SHARD_KEY]),
            ("a==1,b!=2", vec!["a", "b"]),
            ("team in (a, b),env notin (dev)", vec!["env", "team"]),
            ("tier", vec!["tier"]),
            ("x=1, x!=2", vec!["x"]),
            ("example.com/owner=", vec!["example.com/owner"]),
        ] {
            let s = Shard::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.keys(), keys, "{sel}");
        }
    }

    /// The apiserver's semantics: `!=` and `notin` match an object without
    /// the key; every requirement must hold.
    #[test]
    fn a_selector_matches_as_the_apiserver_does() {
        let l = |pairs: &[(&str, &str)]| -> ShardLabels {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let one = Shard::parse("sharding.randomsecret.io/key=shard1").unwrap();
        assert!(one.matches(&l(&[(SHARD_KEY, "shard1")])));
        assert!(!one.matches(&l(&[(SHARD_KEY, "shard2")])));
        assert!(!one.matches(&[]));
        let default = Shard::parse("!sharding.randomsecret.io/key").unwrap();
        assert!(default.matches(&[]));
        assert!(!default.matches(&l(&[(SHARD_KEY, "shard1")])));
        let set = Shard::parse("t in (a, b),e notin (dev),x!=1,k").unwrap();
        assert!(set.matches(&l(&[("t", "b"), ("k", "")])));
        assert!(set.matches(&l(&[("t", "a"), ("e", "prod"), ("x", "2"), ("k", "v")])));
        assert!(!set.matches(&l(&[("t", "c"), ("k", "")])));
        assert!(!set.matches(&l(&[("t", "a"), ("e", "dev"), ("k", "")])));
        assert!(!set.matches(&l(&[("t", "a"), ("x", "1"), ("k", "")])));
        assert!(!set.matches(&l(&[("t", "a")])));
    }

    #[test]
    fn a_bad_selector_says_what_to_fix() {
        for (sel, says) in [
            ("", "is empty"),
            ("a=1,", "stray comma"),
            ("a in (1,2", "unbalanced"),
            ("a in 1", "is not a requirement"),
            ("a=b c", "invalid label value"),
            ("Bad_Prefix.io/k=1", "no valid label key"),
            ("-k=1", "no valid label key"),
            ("a in ((1))", "unbalanced"),
        ] {
            let e = Shard::parse(sel).unwrap_err();
            assert!(e.contains(says), "{sel}: {e}");
        }
    }

    #[test]
    fn each_shard_has_a_lease_of_its_own() {
        let one = Shard::parse("sharding.randomsecret.io/key=shard1").unwrap();
        let two = Shard::parse("sharding.randomsecret.io/key=shard2").unwrap();
        assert_ne!(one.lease("rs"), two.lease("rs"));
        assert!(one.lease("rs").starts_with("rs-"));
        assert_eq!(one.lease("rs").len(), "rs-".len() + 8);
        // Stable: a restarted replica finds its shard's Lease.
        assert_eq!(one.lease("rs"), one.lease("rs"));
    }

    #[test]
    fn a_version_gets_its_randomsecrets_shard_labels_and_loses_the_others() {
        let s = Shard::parse("sharding.randomsecret.io/key=shard2").unwrap();
        let rs = labels(&[(SHARD_KEY, "shard2"), ("app", "web")]);
        let wanted = s.labels_of(Some(&rs));
        assert_eq!(wanted, vec![(SHARD_KEY.to_string(), "shard2".to_string())]);
        let old = labels(&[(SHARD_KEY, "shard1"), ("randomsecret.io/name", "db")]);
        assert_eq!(
            s.relabel(Some(&old), &wanted),
            Some(serde_json::json!({"metadata": {"labels": {SHARD_KEY: "shard2"}}}))
        );
        let moved = labels(&[(SHARD_KEY, "shard2"), ("randomsecret.io/name", "db")]);
        assert_eq!(s.relabel(Some(&moved), &wanted), None);
        // Into the default shard: the key goes.
        let default = Shard::parse("!sharding.randomsecret.io/key").unwrap();
        assert_eq!(
            default.relabel(Some(&old), &[]),
            Some(serde_json::json!({"metadata": {"labels": {SHARD_KEY: null}}}))
        );
        assert_eq!(default.relabel(None, &[]), None);
    }

    #[test]
    fn secret_labels_never_set_a_versions_shard() {
        let s = Shard::parse("sharding.randomsecret.io/key=a").unwrap();
        let mut version = labels(&[(SHARD_KEY, "b"), ("team", "x")]);
        s.label(&mut version, &[(SHARD_KEY.to_string(), "a".to_string())]);
        assert_eq!(version, labels(&[(SHARD_KEY, "a"), ("team", "x")]));
        // A RandomSecret without the key (the default shard): none on the version.
        let mut version = labels(&[(SHARD_KEY, "b")]);
        s.label(&mut version, &[]);
        assert!(version.is_empty());
    }

    #[test]
    fn narrowed_selectors_keep_ours_first() {
        let s = Shard::parse(" !sharding.randomsecret.io/key ").unwrap();
        assert_eq!(
            s.narrow("app.kubernetes.io/managed-by=randomsecret"),
            "app.kubernetes.io/managed-by=randomsecret,!sharding.randomsecret.io/key"
        );
        assert_eq!(s.narrow(""), "!sharding.randomsecret.io/key");
    }
}
