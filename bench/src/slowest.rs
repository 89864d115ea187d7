//! The slowest rotations one by one, and where each one's time went: read
//! from the controller's itemized reconciles (`randomsecret::phase=debug` in
//! its `--log-level`: one line per reconcile, with its phases).
//!
//! A rotation's time, from the benchmark's patch until its watch sees the
//! new version Ready, is split into: `to the controller` (the patch, until
//! its answer; then the watch event to the controller, into its queue), the
//! reconcile's phases (`queued` first), and `after` (from the reconcile's
//! end to the benchmark's watch; below zero when the watch saw the status
//! before the controller had its answer). The histograms give counts per
//! phase; this says which phase a slow rotation spent its time in.

use crate::workload::Done;
use anyhow::{Context, Result};
use randomsecret::runtime::phases::ITEMIZED;
use serde_json::{Value, json};
use std::path::Path;
use std::time::SystemTime;

/// One reconcile as the controller itemized it.
#[derive(Clone, Debug, PartialEq)]
pub struct Itemized {
    pub object: (String, String),
    pub end: SystemTime,
    pub took_ms: f64,
    /// `(phase, ms)` in the order they ended.
    pub phases: Vec<(String, f64)>,
}

/// A line of the controller's text log, when it is an itemized reconcile:
/// `<RFC 3339 time> DEBUG randomsecret::phase: reconcile phases
/// randomsecret=<ns>/<name> took_ms=<ms> phases=<phase>:<ms>,...`.
pub fn parse(line: &str) -> Option<Itemized> {
    if !line.contains(ITEMIZED) {
        return None;
    }
    let mut tokens = line.split_whitespace();
    let time: k8s_openapi::jiff::Timestamp = tokens.next()?.parse().ok()?;
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|t| t.strip_prefix(name)?.strip_prefix('='))
    };
    let (ns, name) = field("randomsecret")?.split_once('/')?;
    let phases = field("phases")?
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, ms) = p.split_once(':')?;
            Some((n.to_string(), ms.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Itemized {
        object: (ns.to_string(), name.to_string()),
        end: SystemTime::from(time),
        took_ms: field("took_ms")?.parse().ok()?,
        phases,
    })
}

/// Where one rotation's time went.
#[derive(Clone, Debug, PartialEq)]
pub struct Slow {
    pub object: (String, String),
    pub took_ms: f64,
    /// None when no reconcile of its object ended after it was sent.
    pub to_controller_ms: Option<f64>,
    /// Of that, until the patch was answered (when the sender recorded it).
    pub patch_ms: Option<f64>,
    pub phases: Vec<(String, f64)>,
    pub after_ms: Option<f64>,
}

/// `b - a` in milliseconds (below zero when `b` is earlier).
fn ms_between(a: SystemTime, b: SystemTime) -> f64 {
    match b.duration_since(a) {
        Ok(d) => d.as_secs_f64() * 1e3,
        Err(e) => -e.duration().as_secs_f64() * 1e3,
    }
}

/// Rotation `d` against the first reconcile of its object that ended after
/// it was sent (the one its watch event started).
pub fn attribute(d: &Done, reconciles: &[Itemized]) -> Slow {
    let took_ms = d.took.as_secs_f64() * 1e3;
    let patch_ms = d.answered.map(|a| ms_between(d.sent.wall, a));
    let first = reconciles
        .iter()
        .filter(|r| r.object == d.object && r.end > d.sent.wall)
        .min_by_key(|r| r.end);
    let Some(r) = first else {
        return Slow {
            object: d.object.clone(),
            took_ms,
            to_controller_ms: None,
            patch_ms,
            phases: Vec::new(),
            after_ms: None,
        };
    };
    let queued = r
        .phases
        .iter()
        .find(|(n, _)| n == "queued")
        .map_or(0.0, |p| p.1);
    let start_ms = ms_between(d.sent.wall, r.end) - r.took_ms;
    // The reconcile's time outside every phase (reading caches, planning).
    let phased: f64 = r
        .phases
        .iter()
        .filter(|(n, _)| n != "queued")
        .map(|p| p.1)
        .sum();
    let mut phases = r.phases.clone();
    phases.push(("other".into(), (r.took_ms - phased).max(0.0)));
    Slow {
        object: d.object.clone(),
        took_ms,
        to_controller_ms: Some(start_ms - queued),
        patch_ms,
        phases,
        after_ms: Some(took_ms - ms_between(d.sent.wall, r.end)),
    }
}

/// The `count` slowest of `done`, each attributed from the controller's
/// log `log` (every itemized line in it; an appended log's earlier
/// processes end before these were sent).
pub fn slowest(done: &[Done], log: &Path, count: usize) -> Result<Vec<Slow>> {
    let text = std::fs::read_to_string(log)
        .with_context(|| format!("reading the controller's log {}", log.display()))?;
    let reconciles: Vec<Itemized> = text.lines().filter_map(parse).collect();
    let mut by_time: Vec<&Done> = done.iter().collect();
    by_time.sort_by_key(|d| std::cmp::Reverse(d.took));
    Ok(by_time
        .into_iter()
        .take(count)
        .map(|d| attribute(d, &reconciles))
        .collect())
}

/// `116.7 = 3.1 to the controller + queued 1.0 + create 52.0 + ... + other 0.4 + 3.2 after`.
pub fn text(s: &Slow) -> String {
    let Some(to) = s.to_controller_ms else {
        return format!("{:.1} (no reconcile of it in the log)", s.took_ms);
    };
    let mut out = format!("{:.1} = {to:.1} to the controller", s.took_ms);
    if let Some(patch) = s.patch_ms {
        out.push_str(&format!(" (patch {patch:.1}, watch {:.1})", to - patch));
    }
    for (n, ms) in &s.phases {
        out.push_str(&format!(" + {n} {ms:.1}"));
    }
    let after = s.after_ms.unwrap_or_default();
    let sign = if after < 0.0 { '-' } else { '+' };
    out.push_str(&format!(" {sign} {:.1} after", after.abs()));
    out
}

pub fn json(all: &[Slow]) -> Value {
    all.iter()
        .map(|s| {
            json!({
                "object": format!("{}/{}", s.object.0, s.object.1),
                "took_ms": s.took_ms,
                "to_controller_ms": s.to_controller_ms,
                "patch_ms": s.patch_ms,
                "phases_ms": s.phases.iter().map(|(n, ms)| json!([n, ms])).collect::<Vec<_>>(),
                "after_ms": s.after_ms,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Sent;
    use std::time::Duration;

    const LINE: &str = "2026-12-05T18:22:33.500000Z DEBUG randomsecret::phase: reconcile phases randomsecret=bench-0/ours-7 took_ms=60.00 phases=queued:1.50,carry_read:0.10,create:50.00,retention:2.00,status:7.00";

    #[test]
    fn an_itemized_line_is_read_and_other_lines_are_not() {
        let r = parse(LINE).unwrap();
        assert_eq!(r.object, ("bench-0".into(), "ours-7".into()));
        assert_eq!(r.took_ms, 60.0);
        assert_eq!(r.phases.len(), 5);
        assert_eq!(r.phases[2], ("create".into(), 50.0));
        assert!(parse("2026-12-05T18:22:33.500000Z  INFO randomsecret::reconciler: created version randomsecret=a/b").is_none());
        assert!(parse("garbage reconcile phases").is_none());
    }

    /// Sent at .400; the reconcile ended at .500 after 60 ms, 1.5 of them
    /// queued: it started at .440, was triggered at .4385; the watch saw it
    /// at .510. An earlier reconcile of it, and one of another object, are
    /// not it.
    #[test]
    fn a_rotation_is_split_at_its_first_reconcile_after_it_was_sent() {
        let r = parse(LINE).unwrap();
        let at = |ms: u64| r.end - Duration::from_millis(500) + Duration::from_millis(ms);
        let mut earlier = r.clone();
        earlier.end = at(100);
        let mut other = r.clone();
        other.object.1 = "ours-8".into();
        other.end = at(450);
        let d = Done {
            object: r.object.clone(),
            sent: Sent {
                at: std::time::Instant::now(),
                wall: at(400),
            },
            took: Duration::from_millis(110),
            answered: Some(at(404)),
        };
        let s = attribute(&d, &[earlier, other, r.clone()]);
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-6;
        assert!(close(s.to_controller_ms, 38.5), "{s:?}");
        assert!(close(s.after_ms, 10.0), "{s:?}");
        assert_eq!(s.phases[..5], r.phases[..]);
        assert_eq!(s.phases[5].0, "other");
        assert_eq!(
            text(&s),
            "110.0 = 38.5 to the controller (patch 4.0, watch 34.5) + queued 1.5 + carry_read 0.1 + create 50.0 + retention 2.0 + status 7.0 + other 0.9 + 10.0 after"
        );
        let none = attribute(
            &Done {
                answered: None,
                ..d
            },
            &[],
        );
        assert_eq!(none.to_controller_ms, None);
        assert_eq!(text(&none), "110.0 (no reconcile of it in the log)");
    }
}
