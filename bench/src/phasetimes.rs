//! The controller's own account of where its time went:
//! `randomsecret_phase_seconds{phase}` (see the controller's
//! `runtime::phases`) read before and after a part of the benchmark, as each
//! phase's count, mean, and the bucket bounds its p50, p99 and maximum fall
//! under, so that a slow tail can be read off one run.

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

/// One phase's histogram: cumulative `(le, count)` buckets, sum, count.
#[derive(Clone, Debug, Default, PartialEq)]
struct Histogram {
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

/// Every phase's histogram at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot(BTreeMap<String, Histogram>);

/// Reads the histograms from the controller's `/metrics`.
pub fn scrape(ctl: &ControllerProcess) -> Result<Snapshot> {
    Ok(parse(&ctl.metrics()?))
}

fn parse(text: &str) -> Snapshot {
    let mut out: BTreeMap<String, Histogram> = BTreeMap::new();
    let label = |labels: &str, name: &str| -> Option<String> {
        let start = labels.find(&format!("{name}=\""))? + name.len() + 2;
        let end = labels[start..].find('"')? + start;
        Some(labels[start..end].to_string())
    };
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("randomsecret_phase_seconds_") else {
            continue;
        };
        let Some((series, value)) = rest.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let Some((kind, labels)) = series.split_once('{') else {
            continue;
        };
        let Some(phase) = label(labels, "phase") else {
            continue;
        };
        let h = out.entry(phase).or_default();
        match kind {
            "bucket" => {
                let le = label(labels, "le").and_then(|le| match le.as_str() {
                    "+Inf" => Some(f64::INFINITY),
                    le => le.parse().ok(),
                });
                if let Some(le) = le {
                    h.buckets.push((le, value));
                }
            }
            "sum" => h.sum = value,
            "count" => h.count = value,
            _ => {}
        }
    }
    for h in out.values_mut() {
        h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Snapshot(out)
}

/// One phase between two snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTime {
    pub phase: String,
    pub count: u64,
    pub mean_ms: f64,
    /// The upper bounds of the buckets the p50, p99 and slowest fall in
    /// (infinite: above the last bound).
    pub p50_le_ms: f64,
    pub p99_le_ms: f64,
    pub max_le_ms: f64,
    /// How many took longer than 32 ms (the bucket bound nearest it).
    pub over_32ms: u64,
}

/// What each phase recorded between `before` and `after`, in reconcile order.
pub fn delta(before: &Snapshot, after: &Snapshot) -> Vec<PhaseTime> {
    let mut out: Vec<PhaseTime> = after
        .0
        .iter()
        .filter_map(|(phase, a)| {
            let b = before.0.get(phase).cloned().unwrap_or_default();
            let count = a.count - b.count;
            if count < 0.5 {
                return None;
            }
            let cumulative: Vec<(f64, f64)> = a
                .buckets
                .iter()
                .map(|&(le, n)| {
                    let was = b
                        .buckets
                        .iter()
                        .find(|(l, _)| *l == le)
                        .map_or(0.0, |(_, n)| *n);
                    (le, n - was)
                })
                .collect();
            let under = |share: f64| {
                let want = (count * share).ceil().max(1.0);
                cumulative
                    .iter()
                    .find(|(_, n)| *n >= want)
                    .map_or(f64::INFINITY, |(le, _)| le * 1000.0)
            };
            let within_32ms = cumulative
                .iter()
                .filter(|(le, _)| *le <= 0.032 + 1e-12)
                .map(|(_, n)| *n)
                .fold(0.0, f64::max);
            Some(PhaseTime {
                phase: phase.clone(),
                count: count.round() as u64,
                mean_ms: (a.sum - b.sum) / count * 1000.0,
                p50_le_ms: under(0.5),
                p99_le_ms: under(0.99),
                max_le_ms: under(1.0),
                over_32ms: (count - within_32ms).round() as u64,
            })
        })
        .collect();
    let rank = |p: &str| ORDER.iter().position(|o| *o == p).unwrap_or(ORDER.len());
    out.sort_by(|a, b| (rank(&a.phase), &a.phase).cmp(&(rank(&b.phase), &b.phase)));
    out
}

fn bound(ms: f64) -> String {
    if ms.is_finite() {
        format!("≤{ms:.2}")
    } else {
        "above the last bucket".into()
    }
}

/// `phase n mean p99≤ max≤ (k over 32 ms)`, one per phase, for the table.
pub fn text(times: &[PhaseTime]) -> String {
    times
        .iter()
        .map(|t| {
            format!(
                "{} {}× mean {:.2} ms, p99 {} max {} ms ({} over 32 ms)",
                t.phase,
                t.count,
                t.mean_ms,
                bound(t.p99_le_ms),
                bound(t.max_le_ms),
                t.over_32ms
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
                json!({"phase": t.phase, "count": t.count, "mean_ms": t.mean_ms,
                       "p50_le_ms": ms(t.p50_le_ms), "p99_le_ms": ms(t.p99_le_ms),
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
        let before = parse(&format!(
            "{}{}",
            text_of(
                "create",
                &[("0.004", 10), ("0.032", 10), ("0.064", 10), ("+Inf", 10)],
                0.02
            ),
            text_of("status", &[("0.004", 5), ("+Inf", 5)], 0.01)
        ));
        let after = parse(&format!(
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
        assert_eq!(c.p50_le_ms, 4.0);
        assert_eq!(c.p99_le_ms, 64.0);
        assert!(c.max_le_ms.is_infinite());
        assert_eq!(c.over_32ms, 2);
        assert!(json(&d)[0]["max_le_ms"].is_null());
    }

    #[test]
    fn phases_come_in_reconcile_order() {
        let one = |p| text_of(p, &[("0.004", 1), ("+Inf", 1)], 0.001);
        let after = parse(&format!("{}{}{}", one("status"), one("zzz"), one("queued")));
        let phases: Vec<_> = delta(&Snapshot::default(), &after)
            .into_iter()
            .map(|t| t.phase)
            .collect();
        assert_eq!(phases, ["queued", "status", "zzz"]);
    }
}
