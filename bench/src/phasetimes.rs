//! The controller's own account of where its time went:
//! `randomsecret_phase_seconds{phase}` (see the controller's
//! `runtime::phases`) read before and after a part of the benchmark, as each
//! phase's count, mean, p50 and p99 (interpolated in the buckets) and the
//! bucket its slowest fell in, so that a slow tail can be read off one run.

use crate::stats::{Buckets, parse, quantile, share_within};
use anyhow::Result;
use randomsecret_e2e::ControllerProcess;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The phases in the order a reconcile goes through them (`event` is off
/// its path); phases not listed come after, by name.
const ORDER: &[&str] = &[
    "queued",
    "carry_read",
    "generate",
    "create",
    "tracking",
    "retention",
    "status",
    "event",
];

/// The controller's `/metrics` at one moment.
#[derive(Clone, Debug, Default)]
pub struct Snapshot(String);

const METRIC: &str = "randomsecret_phase_seconds";

/// Reads the histograms from the controller's `/metrics`.
pub fn scrape(ctl: &ControllerProcess) -> Result<Snapshot> {
    Ok(Snapshot(ctl.metrics()?))
}

impl Snapshot {
    /// Every phase with a `_sum` line, and that sum.
    fn sums(&self) -> BTreeMap<String, f64> {
        let prefix = format!("{METRIC}_sum{{phase=\"");
        self.0
            .lines()
            .filter_map(|l| {
                let (phase, value) = l.strip_prefix(&prefix)?.split_once("\"} ")?;
                Some((phase.to_string(), value.trim().parse().ok()?))
            })
            .collect()
    }

    fn buckets(&self, phase: &str) -> Buckets {
        parse(&self.0, METRIC, &[&format!("phase=\"{phase}\"")])
    }
}

/// One phase between two snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTime {
    pub phase: String,
    pub count: u64,
    pub mean_ms: f64,
    /// Quantiles, interpolated within buckets as Prometheus does.
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The upper bound of the bucket the slowest fell in (infinite: above
    /// the last bound).
    pub max_le_ms: f64,
    /// How many took longer than 32 ms (a bucket bound).
    pub over_32ms: u64,
}

/// What each phase recorded between `before` and `after`, in reconcile order.
pub fn delta(before: &Snapshot, after: &Snapshot) -> Vec<PhaseTime> {
    let sums_before = before.sums();
    let mut out: Vec<PhaseTime> = after
        .sums()
        .into_iter()
        .filter_map(|(phase, sum)| {
            let (b, a) = (before.buckets(&phase), after.buckets(&phase));
            let count = a.get(&u64::MAX)? - b.get(&u64::MAX).copied().unwrap_or(0.0);
            if count < 0.5 {
                return None;
            }
            let ms = |q| quantile(&b, &a, q).map_or(f64::NAN, |s| s * 1000.0);
            let max_le_ms = a
                .iter()
                .find(|(le, n)| **n - b.get(le).copied().unwrap_or(0.0) >= count - 0.5)
                .map_or(f64::INFINITY, |(le, _)| {
                    if *le == u64::MAX {
                        f64::INFINITY
                    } else {
                        *le as f64 / 1e6
                    }
                });
            let within = share_within(&b, &a, 0.032).unwrap_or(1.0);
            Some(PhaseTime {
                mean_ms: (sum - sums_before.get(&phase).copied().unwrap_or(0.0)) / count * 1000.0,
                count: count.round() as u64,
                p50_ms: ms(0.5),
                p99_ms: ms(0.99),
                max_le_ms,
                over_32ms: (count * (1.0 - within)).round() as u64,
                phase,
            })
        })
        .collect();
    let rank = |p: &str| ORDER.iter().position(|o| *o == p).unwrap_or(ORDER.len());
    out.sort_by(|a, b| (rank(&a.phase), &a.phase).cmp(&(rank(&b.phase), &b.phase)));
    out
}

/// `phase n× mean, p50, p99, max ≤ bound (k over 32 ms)`, one per phase,
/// for the table.
pub fn text(times: &[PhaseTime]) -> String {
    times
        .iter()
        .map(|t| {
            let max = if t.max_le_ms.is_finite() {
                format!("≤ {}", t.max_le_ms)
            } else {
                "above the last bucket".into()
            };
            format!(
                "{} {}×: mean {:.2}, p50 {:.2}, p99 {:.2}, max {max} ms ({} over 32 ms)",
                t.phase, t.count, t.mean_ms, t.p50_ms, t.p99_ms, t.over_32ms
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The same for `results.json`.
pub fn json(times: &[PhaseTime]) -> Value {
    let ms = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
    Value::Array(
        times
            .iter()
            .map(|t| {
                json!({"phase": t.phase, "count": t.count, "mean_ms": ms(t.mean_ms),
                       "p50_ms": ms(t.p50_ms), "p99_ms": ms(t.p99_ms),
                       "max_le_ms": ms(t.max_le_ms), "over_32ms": t.over_32ms})
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(phase: &str, counts: &[(&str, u64)], sum: f64) -> String {
        let mut t = String::new();
        for (le, n) in counts {
            t.push_str(&format!(
                "randomsecret_phase_seconds_bucket{{le=\"{le}\",phase=\"{phase}\"}} {n}\n"
            ));
        }
        let count = counts.last().unwrap().1;
        t.push_str(&format!(
            "randomsecret_phase_seconds_sum{{phase=\"{phase}\"}} {sum}\n"
        ));
        t.push_str(&format!(
            "randomsecret_phase_seconds_count{{phase=\"{phase}\"}} {count}\n"
        ));
        t
    }

    /// 100 creates between the snapshots: 98 within 4 ms, one within
    /// 64 ms, one above every bound; a phase with nothing new is left out.
    #[test]
    fn the_delta_reads_the_tail_of_each_phase() {
        let before = Snapshot(format!(
            "{}{}",
            text_of(
                "create",
                &[("0.004", 10), ("0.032", 10), ("0.064", 10), ("+Inf", 10)],
                0.02
            ),
            text_of("status", &[("0.004", 5), ("+Inf", 5)], 0.01)
        ));
        let after = Snapshot(format!(
            "{}{}",
            text_of(
                "create",
                &[
                    ("0.004", 108),
                    ("0.032", 108),
                    ("0.064", 109),
                    ("+Inf", 110)
                ],
                5.02
            ),
            text_of("status", &[("0.004", 5), ("+Inf", 5)], 0.01)
        ));
        let d = delta(&before, &after);
        assert_eq!(d.len(), 1, "{d:?}");
        let c = &d[0];
        assert_eq!((c.phase.as_str(), c.count), ("create", 100));
        assert!((c.mean_ms - 50.0).abs() < 1e-9, "{c:?}");
        assert!((c.p50_ms - 4.0 * 50.0 / 98.0).abs() < 1e-9, "{c:?}");
        assert!((c.p99_ms - 64.0).abs() < 1e-9, "{c:?}");
        assert!(c.max_le_ms.is_infinite());
        assert_eq!(c.over_32ms, 2);
        assert!(json(&d)[0]["max_le_ms"].is_null());
    }

    #[test]
    fn phases_come_in_reconcile_order() {
        let one = |p| text_of(p, &[("0.004", 1), ("+Inf", 1)], 0.001);
        let after = Snapshot(format!("{}{}{}", one("status"), one("zzz"), one("queued")));
        let phases: Vec<_> = delta(&Snapshot::default(), &after)
            .into_iter()
            .map(|t| t.phase)
            .collect();
        assert_eq!(phases, ["queued", "status", "zzz"]);
    }
}
