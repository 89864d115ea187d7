//! Per-object metrics, in kube-state-metrics' manner: a few series per
//! RandomSecret, read from the caches at each scrape (what the controller
//! already keeps of each status), so a series goes when its object does and
//! nothing is kept between scrapes. `--per-object-metrics=false` turns
//! them off (their cost: docs/src/operate.md).
//!
//! - `randomsecret_ready{namespace, name, condition, reason}`: 1 or 0 for
//!   each of Ready, Reconciling and Stalled (kstatus); `reason` is Ready's
//!   (the three share it).
//! - `randomsecret_versions{namespace, name, state}`: current (0 or 1),
//!   retained (live but not current), released (the status's recent list).
//! - `randomsecret_last_rotation_timestamp_seconds{namespace, name}`: when
//!   the current version was created.
//! - `randomsecret_next_rotation_timestamp_seconds{namespace, name}`: with
//!   `rotateEvery`, `status.nextRotation`.
//! - `randomsecret_push_synced{namespace, name, target}`: with `spec.push`,
//!   1 while `VaultSynced` is True (target `vault`).
//!
//! Names and conditions only: never a value.

use crate::api::{READY, RECONCILING, STALLED};
use crate::cache::{Caches, Key, Name};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use std::sync::Arc;

/// The conditions exported, in the order of [`Row::conditions`].
const EXPORTED: [&str; 3] = [READY, RECONCILING, STALLED];

/// What one RandomSecret's series are made of, copied out of the cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: Key,
    pub conditions: [Option<bool>; 3],
    pub reason: Option<Name>,
    pub current: Option<Name>,
    pub live: usize,
    pub released: usize,
    pub next_rotation: Option<i64>,
    pub vault_synced: Option<bool>,
    /// When the current version was created (seconds), where cached.
    pub last_rotation: Option<i64>,
}

/// Every RandomSecret's row, ordered by namespace and name.
pub fn rows(caches: &Caches) -> Vec<Row> {
    let mut rows = Vec::with_capacity(caches.randomsecrets.len());
    caches.randomsecrets.each_status(|key, s| {
        rows.push(Row {
            key: key.clone(),
            conditions: EXPORTED.map(|t| s.condition(t).map(|(status, _)| status)),
            reason: s.ready_reason.clone(),
            current: s.secret_name.clone(),
            live: s.live(),
            released: s.released_names().len(),
            next_rotation: s.next_rotation(),
            vault_synced: s.vault_synced(),
            last_rotation: None,
        });
    });
    // Outside the first lock: the current versions' creation, in one pass.
    let currents: Vec<Key> = rows
        .iter()
        .map(|r| r.key.sibling(r.current.as_deref().unwrap_or_default()))
        .collect();
    let created = caches.secrets.created_seconds(&currents);
    for (r, c) in rows.iter_mut().zip(created) {
        r.last_rotation = c.filter(|_| r.current.is_some());
    }
    rows.sort_by(|a, b| (a.key.ns(), &*a.key.name).cmp(&(b.key.ns(), &*b.key.name)));
    rows
}

/// The collector registered with `--per-object-metrics`.
pub struct ObjectMetrics(pub Arc<Caches>);

impl std::fmt::Debug for ObjectMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectMetrics")
    }
}

/// One family's series: (labels beyond namespace and name, value) per row.
type Series<'r> = Vec<(Vec<(&'static str, &'r str)>, i64)>;

/// The families, in order: (name, help, the series of one row).
#[allow(clippy::type_complexity)]
const FAMILIES: [(&str, &str, for<'r> fn(&'r Row) -> Series<'r>); 5] = [
    (
        "ready",
        "Each condition of a RandomSecret (Ready, Reconciling, Stalled): 1 when True, 0 when False; reason: Ready's",
        |r| {
            EXPORTED
                .iter()
                .zip(r.conditions)
                .filter_map(|(c, status)| {
                    let reason = r.reason.as_deref().unwrap_or_default();
                    Some((
                        vec![("condition", *c), ("reason", reason)],
                        i64::from(status?),
                    ))
                })
                .collect()
        },
    ),
    (
        "versions",
        "Versions of a RandomSecret by state: current (0 or 1), retained (live, superseded), released (recently deleted, at most 10)",
        |r| {
            let current = usize::from(r.current.is_some());
            [
                ("current", current),
                ("retained", r.live.saturating_sub(current)),
                ("released", r.released),
            ]
            .into_iter()
            .map(|(state, n)| (vec![("state", state)], n as i64))
            .collect()
        },
    ),
    (
        "last_rotation_timestamp_seconds",
        "When a RandomSecret's current version was created (unix seconds)",
        |r| r.last_rotation.map(|at| (vec![], at)).into_iter().collect(),
    ),
    (
        "next_rotation_timestamp_seconds",
        "With rotateEvery: when a RandomSecret's next version is due (unix seconds; status.nextRotation)",
        |r| r.next_rotation.map(|at| (vec![], at)).into_iter().collect(),
    ),
    (
        "push_synced",
        "With spec.push: 1 while the current version is in the target (VaultSynced True), else 0",
        |r| {
            r.vault_synced
                .map(|s| (vec![("target", "vault")], i64::from(s)))
                .into_iter()
                .collect()
        },
    ),
];

impl Collector for ObjectMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows = rows(&self.0);
        for (name, help, series) in FAMILIES {
            let name = format!("{}_{name}", crate::api::NAME);
            let mut family = encoder.encode_descriptor(&name, help, None, MetricType::Gauge)?;
            for r in &rows {
                for (extra, value) in series(r) {
                    let mut labels = vec![("namespace", r.key.ns()), ("name", &*r.key.name)];
                    labels.extend(extra);
                    ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fixtures::{Rs, VersionSecret, ready_status};
    use crate::testing::harness::Harness;
    use prometheus_client::registry::Registry;

    fn scrape(h: &Harness) -> String {
        let mut r = Registry::default();
        r.register_collector(Box::new(ObjectMetrics(h.caches.clone())));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
        text
    }

    /// A Ready RandomSecret with a period and a push: its series, from the
    /// caches; gone with the object.
    #[test]
    fn each_randomsecret_has_its_series_and_loses_them_with_it() {
        let h = Harness::new();
        let rs = Rs::test();
        let current = VersionSecret::of(&rs).cached_in(&h);
        let mut status = ready_status(&current, &["db-old".to_string()]);
        status["nextRotation"] = serde_json::json!("2026-02-01T00:00:00Z");
        status["conditions"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "VaultSynced", "status": "False", "reason": "Sealed", "message": "", "lastTransitionTime": "2026-01-02T00:00:01Z"}));
        let rs = rs.with_status(status).cached_in(&h);
        let text = scrape(&h);
        let series = |line: &str| text.lines().any(|l| l == line);
        for line in [
            "randomsecret_ready{namespace=\"shop\",name=\"db\",condition=\"Ready\",reason=\"VersionReady\"} 1",
            "randomsecret_ready{namespace=\"shop\",name=\"db\",condition=\"Stalled\",reason=\"VersionReady\"} 0",
            "randomsecret_versions{namespace=\"shop\",name=\"db\",state=\"current\"} 1",
            "randomsecret_versions{namespace=\"shop\",name=\"db\",state=\"retained\"} 0",
            "randomsecret_versions{namespace=\"shop\",name=\"db\",state=\"released\"} 1",
            // 2026-01-02T00:00:00Z, the version's creationTimestamp.
            "randomsecret_last_rotation_timestamp_seconds{namespace=\"shop\",name=\"db\"} 1767312000",
            "randomsecret_next_rotation_timestamp_seconds{namespace=\"shop\",name=\"db\"} 1769904000",
            "randomsecret_push_synced{namespace=\"shop\",name=\"db\",target=\"vault\"} 0",
        ] {
            assert!(series(line), "{line} missing from:\n{text}");
        }
        assert!(text.contains("# TYPE randomsecret_ready gauge"), "{text}");
        rs.deleting().cached_in(&h);
        let after = scrape(&h);
        assert!(
            !after.contains("name=\"db\""),
            "series left after delete:\n{after}"
        );
    }
}
