//! Quantiles: of sorted latencies, and of the delta of a Prometheus
//! histogram between two scrapes (the apiserver's and the controller's).

use std::collections::BTreeMap;
use std::time::Duration;

/// The median, minimum and maximum of some ratios.
#[derive(Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median = match v.len() {
            0 => return None,
            len if len % 2 == 1 => v[mid],
            _ => (v[mid - 1] + v[mid]) / 2.0,
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

/// p-th percentile (0..=100) of sorted durations, in milliseconds.
pub fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx].as_secs_f64() * 1000.0
}

/// p50, p99 and the maximum of sorted durations, in milliseconds.
pub fn p50_p99_max(sorted: &[Duration]) -> (f64, f64, f64) {
    (
        percentile_ms(sorted, 50.0),
        percentile_ms(sorted, 99.0),
        sorted.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
    )
}

/// Cumulative buckets (upper bound, count) of one histogram.
pub type Buckets = BTreeMap<u64, f64>;

fn key(le: f64) -> u64 {
    (le * 1e9) as u64
}

/// The samples of `metric` in Prometheus' text format: each one's labels
/// (what stands between the braces) and its value; lines whose value does
/// not parse are left out.
pub fn samples<'a>(text: &'a str, metric: &str) -> impl Iterator<Item = (&'a str, f64)> {
    let prefix = format!("{metric}{{");
    text.lines().filter_map(move |line| {
        let (labels, value) = line.strip_prefix(&prefix)?.rsplit_once("} ")?;
        Some((labels, value.trim().parse().ok()?))
    })
}

/// The value of label `name` in a sample's `labels` (its first occurrence).
pub fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels
        .split(&format!("{name}=\""))
        .nth(1)
        .and_then(|s| s.split('"').next())
}

/// The apiserver's admission-duration buckets for our webhook (CREATE, admitted).
pub fn parse(text: &str, metric: &str, must: &[&str]) -> Buckets {
    let mut out = Buckets::new();
    for (labels, v) in samples(text, &format!("{metric}_bucket")) {
        if !must.iter().all(|m| labels.contains(m)) {
            continue;
        }
        let Some(le) = label(labels, "le").map(|s| {
            if s == "+Inf" {
                f64::INFINITY
            } else {
                s.parse().unwrap_or(f64::NAN)
            }
        }) else {
            continue;
        };
        *out.entry(if le.is_infinite() { u64::MAX } else { key(le) })
            .or_default() += v;
    }
    out
}

/// The `q` quantile (seconds) of the delta `after - before`, interpolated
/// within a bucket as Prometheus' histogram_quantile does.
pub fn quantile(before: &Buckets, after: &Buckets, q: f64) -> Option<f64> {
    let delta: Vec<(u64, f64)> = after
        .iter()
        .map(|(le, v)| (*le, v - before.get(le).copied().unwrap_or(0.0)))
        .collect();
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for (le, count) in delta {
        let upper = le as f64 / 1e9;
        if count >= rank {
            if le == u64::MAX {
                return Some(lower);
            }
            return Some(
                lower + (upper - lower) * (rank - below) / (count - below).max(f64::MIN_POSITIVE),
            );
        }
        (lower, below) = (upper, count);
    }
    None
}

/// The share (0..=1) of the delta's observations at or under `le` seconds
/// (a bucket bound): exact, where a quantile inside a bucket is interpolated.
pub fn share_within(before: &Buckets, after: &Buckets, le: f64) -> Option<f64> {
    let delta = |k: u64| Some(after.get(&k)? - before.get(&k).copied().unwrap_or(0.0));
    let total = delta(u64::MAX).filter(|t| *t > 0.0)?;
    Some(delta(key(le))? / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_histogram_delta() {
        let text = "m_bucket{name=\"h\",le=\"0.005\"} 90\nm_bucket{name=\"h\",le=\"0.025\"} 100\nm_bucket{name=\"h\",le=\"+Inf\"} 100\nm_bucket{name=\"x\",le=\"+Inf\"} 7\n";
        let after = parse(text, "m", &["name=\"h\""]);
        let before = Buckets::new();
        assert!((quantile(&before, &after, 0.5).unwrap() - 0.005 * 50.0 / 90.0).abs() < 1e-9);
        assert!(
            (quantile(&before, &after, 0.99).unwrap() - (0.005 + 0.02 * 9.0 / 10.0)).abs() < 1e-9
        );
        assert_eq!(share_within(&before, &after, 0.005), Some(0.9));
        assert_eq!(share_within(&after, &after, 0.005), None, "no calls");
    }
}
