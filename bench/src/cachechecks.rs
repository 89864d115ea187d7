//! The apiserver's watch-cache consistency checks (Kubernetes 1.34's
//! `DetectCacheInconsistency`, beta and on by default): every 5 to 7.5
//! minutes, for each resource it caches, the apiserver reads the whole
//! resource from etcd and from its cache and compares digests. With 10,000
//! RandomSecrets that is some 5 CPU seconds (each custom resource decoded
//! and coerced to its schema) and a few hundred MB that its garbage
//! collector then marks: on 2 cores every answer of the apiserver is slow
//! for about 5 s, whoever asked. Such a check fell into the controller's
//! rotation window in every 1,000-rotation run and into none of the floor's
//! (the phases' lengths put them at the same points of its cycle each run):
//! the tail of issue 33. So e2e/bench.sh starts the benchmark's apiserver
//! with the checks off, and the report counts the checks that ran anyway,
//! over the whole run and within each rotation window.

use crate::stats::{label, samples};
use anyhow::Result;
use kube::Client;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const CHECKS: &str = "apiserver_storage_consistency_checks_total";
const GATE: &str = r#"kubernetes_feature_enabled{name="DetectCacheInconsistency""#;

/// Checks the apiserver has run since it started, over every resource and
/// outcome.
pub fn count(text: &str) -> u64 {
    by_resource(text).values().sum()
}

/// Checks the apiserver has run, by `group/resource` (`resource` for the
/// core group).
fn by_resource(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (labels, v) in samples(text, CHECKS) {
        let (group, resource) = (
            label(labels, "group").unwrap_or_default(),
            label(labels, "resource").unwrap_or_default(),
        );
        let key = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{group}/{resource}")
        };
        *out.entry(key).or_default() += v as u64;
    }
    out
}

/// Whether the checks are on, as the apiserver reports its feature gate
/// (None: an apiserver without it).
fn enabled(text: &str) -> Option<bool> {
    let line = text.lines().find(|l| l.starts_with(GATE))?;
    Some(line.rsplit_once("} ")?.1.trim() == "1")
}

/// The checks of a whole run, read at its end.
pub struct Run {
    pub enabled: Option<bool>,
    pub by_resource: BTreeMap<String, u64>,
}

pub async fn over_run(client: &Client) -> Result<Run> {
    let text = crate::apimetrics::text(client).await?;
    Ok(Run {
        enabled: enabled(&text),
        by_resource: by_resource(&text),
    })
}

impl Run {
    /// "off; 0 checks" or "on; 7 checks (randomsecret.io/randomsecrets 2, secrets 2, …)".
    pub fn text(&self) -> String {
        let gate = match self.enabled {
            Some(true) => "on",
            Some(false) => "off",
            None => "not in this apiserver",
        };
        let total: u64 = self.by_resource.values().sum();
        let each: Vec<String> = self
            .by_resource
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        if each.is_empty() {
            format!("{gate}; {total} checks")
        } else {
            format!("{gate}; {total} checks ({})", each.join(", "))
        }
    }

    pub fn json(&self) -> Value {
        json!({"enabled": self.enabled, "checks": self.by_resource})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP apiserver_storage_consistency_checks_total [ALPHA] Counter for status of consistency checks between etcd and watch cache
apiserver_storage_consistency_checks_total{group="randomsecret.io",resource="randomsecrets",status="success"} 2
apiserver_storage_consistency_checks_total{group="",resource="secrets",status="success"} 1
apiserver_storage_consistency_checks_total{group="",resource="secrets",status="error"} 1
apiserver_storage_consistency_checks_total{group="apps",resource="replicasets",status="success"} 0
kubernetes_feature_enabled{name="DetectCacheInconsistencyX",stage="ALPHA"} 0
kubernetes_feature_enabled{name="DetectCacheInconsistency",stage="BETA"} 1
"#;

    #[test]
    fn counts_the_checks_by_resource_and_reads_the_gate() {
        assert_eq!(count(TEXT), 4);
        let run = Run {
            enabled: enabled(TEXT),
            by_resource: by_resource(TEXT),
        };
        assert_eq!(
            run.text(),
            "on; 4 checks (randomsecret.io/randomsecrets 2, secrets 2)"
        );
        assert_eq!(run.json()["checks"]["apps/replicasets"], 0);
        assert_eq!(
            Run {
                enabled: Some(false),
                by_resource: BTreeMap::new()
            }
            .text(),
            "off; 0 checks"
        );
    }

    #[test]
    fn an_apiserver_with_the_checks_off_reports_none() {
        let off =
            "kubernetes_feature_enabled{name=\"DetectCacheInconsistency\",stage=\"BETA\"} 0\n";
        assert_eq!(enabled(off), Some(false));
        assert_eq!(count(off), 0);
        assert_eq!(enabled("other 1\n"), None);
    }
}
