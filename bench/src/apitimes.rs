//! The apiserver's own time on the rotation writes: how many of its answers
//! to POST and PATCH of Secrets and to the status apply took over 25, 50
//! and 100 ms as the apiserver itself timed them
//! (`apiserver_request_duration_seconds`), and how many requests of any
//! client waited in its fairness queues over 5 ms
//! (`apiserver_flowcontrol_request_wait_duration_seconds`), read before and
//! after the floor's rotations and ours. A slow answer the controller timed
//! that the apiserver timed slow too was slow inside the apiserver (or etcd
//! under it); one it did not was slow on the way (the network, or the CPU
//! the controller's threads waited for).

use crate::stats::{Buckets, parse};
use serde_json::{Value, json};

/// The writes of a rotation, as (what the report calls it, the labels that
/// pick it out of the apiserver's histogram).
const WRITES: &[(&str, &[&str])] = &[
    (
        "POST secrets",
        &[
            r#"verb="POST""#,
            r#",resource="secrets""#,
            r#"subresource="""#,
        ],
    ),
    (
        "PATCH secrets",
        &[
            r#"verb="PATCH""#,
            r#",resource="secrets""#,
            r#"subresource="""#,
        ],
    ),
    (
        "APPLY status",
        &[
            r#"verb="APPLY""#,
            r#",resource="randomsecrets""#,
            r#"subresource="status""#,
        ],
    ),
    ("POST events", &[r#"verb="POST""#, r#",resource="events""#]),
];
const DURATION: &str = "apiserver_request_duration_seconds";
const QUEUED: &str = "apiserver_flowcontrol_request_wait_duration_seconds";
/// The bounds counted over, in seconds: each is a bucket bound of the
/// apiserver's request-duration histogram.
const OVER_S: [f64; 3] = [0.025, 0.05, 0.1];
/// A bucket bound of the fairness queues' wait histogram.
const QUEUED_OVER_S: f64 = 0.005;

/// One reading of the histograms.
pub struct Snapshot {
    writes: Vec<Buckets>,
    queued: Buckets,
    checks: u64,
}

/// What one phase's writes took, as the apiserver timed them.
#[derive(Debug, PartialEq)]
pub struct ApiTimes {
    /// Per write: its name, how many, and how many over each of `OVER_S`.
    pub writes: Vec<(&'static str, f64, [f64; 3])>,
    /// Requests of every client that waited in the fairness queues, and how
    /// many over `QUEUED_OVER_S`.
    pub queued: (f64, f64),
    /// The apiserver's watch-cache consistency checks meanwhile
    /// ([`crate::cachechecks`]): each makes every answer slow for seconds.
    pub checks: u64,
}

/// A reading of the histograms in the apiserver's `/metrics` text.
pub fn of(text: &str) -> Snapshot {
    Snapshot {
        writes: WRITES
            .iter()
            .map(|(_, m)| parse(text, DURATION, m))
            .collect(),
        queued: parse(text, QUEUED, &[r#"execute="true""#]),
        checks: crate::cachechecks::count(text),
    }
}

/// Count and count over `le` seconds (a bucket bound) of `after - before`.
fn over(before: &Buckets, after: &Buckets, le: f64) -> (f64, f64) {
    let at = |b: &Buckets, k: u64| b.get(&k).copied().unwrap_or(0.0);
    let total = at(after, u64::MAX) - at(before, u64::MAX);
    let key = (le * 1e9) as u64;
    (total, total - (at(after, key) - at(before, key)))
}

/// What happened between two readings.
pub fn delta(before: &Snapshot, after: &Snapshot) -> ApiTimes {
    let writes = WRITES
        .iter()
        .zip(before.writes.iter().zip(&after.writes))
        .map(|((name, _), (b, a))| {
            let total = over(b, a, OVER_S[0]).0;
            (*name, total, OVER_S.map(|le| over(b, a, le).1))
        })
        .collect();
    ApiTimes {
        writes,
        queued: over(&before.queued, &after.queued, QUEUED_OVER_S),
        checks: after.checks.saturating_sub(before.checks),
    }
}

impl ApiTimes {
    /// Nothing yet: what [`Self::add`] sums windows into.
    pub fn none() -> ApiTimes {
        ApiTimes {
            writes: WRITES
                .iter()
                .map(|(name, _)| (*name, 0.0, [0.0; 3]))
                .collect(),
            queued: (0.0, 0.0),
            checks: 0,
        }
    }

    /// Adds another window's to these (a side's windows of the
    /// interleaved rotations).
    pub fn add(&mut self, more: &ApiTimes) {
        for ((name, total, over), (more_name, more_total, more_over)) in
            self.writes.iter_mut().zip(&more.writes)
        {
            debug_assert_eq!(name, more_name);
            *total += more_total;
            for (o, m) in over.iter_mut().zip(more_over) {
                *o += m;
            }
        }
        self.queued.0 += more.queued.0;
        self.queued.1 += more.queued.1;
        self.checks += more.checks;
    }

    /// "POST secrets 3 / 1 / 0 of 1000, …; waited in the fairness queues
    /// over 5 ms: 2 of 5400; watch-cache consistency checks: 0".
    pub fn text(&self) -> String {
        let writes: Vec<String> = self
            .writes
            .iter()
            .filter(|(_, total, _)| *total > 0.0)
            .map(|(name, total, o)| format!("{name} {} / {} / {} of {total}", o[0], o[1], o[2]))
            .collect();
        format!(
            "{}; waited in the fairness queues over 5 ms: {} of {}; watch-cache consistency checks: {}",
            writes.join(", "),
            self.queued.1,
            self.queued.0,
            self.checks
        )
    }

    pub fn json(&self) -> Value {
        let writes: serde_json::Map<String, Value> = self
            .writes
            .iter()
            .map(|(name, total, o)| {
                (
                    (*name).to_string(),
                    json!({"count": total, "over_25ms": o[0], "over_50ms": o[1], "over_100ms": o[2]}),
                )
            })
            .collect();
        json!({
            "writes": writes,
            "queued": {"count": self.queued.0, "over_5ms": self.queued.1},
            "consistency_checks": self.checks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(metric: &str, labels: &str, le: &str, v: f64) -> String {
        format!("{metric}_bucket{{{labels},le=\"{le}\"}} {v}\n")
    }

    fn text(post: [f64; 4], queued: [f64; 2], checks: f64) -> String {
        let l = r#"component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1""#;
        let status = r#"component="apiserver",dry_run="",group="randomsecret.io",resource="randomsecrets",scope="resource",subresource="status",verb="APPLY",version="v1""#;
        let q = r#"execute="true",flow_schema="exempt",priority_level="exempt""#;
        [
            line(DURATION, l, "0.025", post[0]),
            line(DURATION, l, "0.05", post[1]),
            line(DURATION, l, "0.1", post[2]),
            line(DURATION, l, "+Inf", post[3]),
            line(DURATION, status, "0.025", 1.0),
            line(DURATION, status, "0.05", 1.0),
            line(DURATION, status, "0.1", 1.0),
            line(DURATION, status, "+Inf", 1.0),
            line(QUEUED, q, "0.005", queued[0]),
            line(QUEUED, q, "+Inf", queued[1]),
            format!(
                "apiserver_storage_consistency_checks_total{{group=\"\",resource=\"secrets\",status=\"success\"}} {checks}\n"
            ),
        ]
        .concat()
    }

    #[test]
    fn counts_the_slow_answers_of_each_write_between_two_readings() {
        let before = of(&text([90.0, 95.0, 98.0, 100.0], [10.0, 10.0], 3.0));
        // 100 more POSTs: 3 over 25 ms, of them 2 over 50 and 1 over 100.
        let after = of(&text([187.0, 193.0, 197.0, 200.0], [19.0, 20.0], 4.0));
        let d = delta(&before, &after);
        assert_eq!(d.writes[0], ("POST secrets", 100.0, [3.0, 2.0, 1.0]));
        assert_eq!(d.writes[1], ("PATCH secrets", 0.0, [0.0, 0.0, 0.0]));
        assert_eq!(d.writes[2], ("APPLY status", 0.0, [0.0, 0.0, 0.0]));
        assert_eq!(d.queued, (10.0, 1.0));
        assert_eq!(d.checks, 1);
        assert_eq!(
            d.text(),
            "POST secrets 3 / 2 / 1 of 100; waited in the fairness queues over 5 ms: 1 of 10; watch-cache consistency checks: 1"
        );
        assert_eq!(d.json()["writes"]["POST secrets"]["over_50ms"], 2.0);
    }

    #[test]
    fn windows_add_up_to_what_one_window_over_them_all_reads() {
        let readings = [
            of(&text([90.0, 95.0, 98.0, 100.0], [10.0, 10.0], 3.0)),
            of(&text([187.0, 193.0, 197.0, 200.0], [19.0, 20.0], 4.0)),
            of(&text([280.0, 290.0, 296.0, 300.0], [25.0, 30.0], 4.0)),
        ];
        let mut sum = ApiTimes::none();
        assert!(sum.writes.iter().all(|(_, total, _)| *total == 0.0));
        for w in readings.windows(2) {
            sum.add(&delta(&w[0], &w[1]));
        }
        assert_eq!(sum, delta(&readings[0], &readings[2]));
        assert_eq!(sum.writes[0], ("POST secrets", 200.0, [10.0, 5.0, 2.0]));
    }
}
