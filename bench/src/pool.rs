//! `bench --pool RESULTS.json...`: the interleaved convergence pairs of
//! several runs pooled, per size: the median over every pair, beside each
//! run's own median.
//!
//! Why: on this 2-core VM a pair's ratio moves by some ±10 % (a standard
//! deviation of 0.10 over 42 pairs of five runs on 2026-12-07) with the
//! host's speed between its two sides, every process's CPU for the same
//! work moving together. A run's median of five pairs then moves by some
//! ±0.05, and misses 1.05x in about one run in four when the ratio is
//! 1.02x; the pairs of several runs, pooled, tell a regression from that.
//! Runs of different controller binaries are counted apart, unless
//! `--pool-as-one` says they are one.

use crate::stats::Spread;
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Reads each results.json and prints the pooled table; `as_one` pools
/// every run as one controller.
pub fn run(files: &[PathBuf], as_one: bool) -> Result<()> {
    let runs = files
        .iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let json: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a results.json", f.display()))?;
            Ok(Run::of(&f.display().to_string(), &json))
        })
        .collect::<Result<Vec<_>>>()?;
    let runs = if as_one { one_controller(runs) } else { runs };
    print!("{}", table(&runs));
    Ok(())
}

/// The controller column when `--pool-as-one` pools every run.
const AS_ONE: &str = "all, as one";

/// What one results.json holds of the pairs.
#[derive(Debug)]
pub struct Run {
    name: String,
    started: String,
    /// The controller binary's SHA-256 (`controller.sha256`; "unknown" in
    /// results written before 2026-12-07).
    controller: String,
    /// Per size, each pair's ratio.
    pairs: BTreeMap<u64, Vec<f64>>,
}

impl Run {
    pub fn of(name: &str, json: &Value) -> Run {
        let pairs = json["interleaved"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|size| {
                let n = size["n"].as_u64()?;
                let ratios = size["pairs"]
                    .as_array()?
                    .iter()
                    .filter_map(|p| p["ratio"].as_f64())
                    .collect();
                Some((n, ratios))
            })
            .collect();
        Run {
            name: name.to_string(),
            // To the minute: "2026-12-07 10:44".
            started: json["started"]
                .as_str()
                .map_or("?".into(), |t| t.get(..16).unwrap_or(t).replace('T', " ")),
            controller: json["controller"]["sha256"]
                .as_str()
                .unwrap_or("unknown")
                .to_string(),
            pairs,
        }
    }
}

/// The runs, each counted as the same controller.
pub fn one_controller(runs: Vec<Run>) -> Vec<Run> {
    runs.into_iter()
        .map(|r| Run {
            controller: AS_ONE.to_string(),
            ..r
        })
        .collect()
}

/// The table, per controller binary and size: the pooled median, minimum
/// and maximum of every pair's ratio, their count, and each run's median.
pub fn table(runs: &[Run]) -> String {
    let mut by: BTreeMap<(&str, u64), Vec<&Run>> = BTreeMap::new();
    for r in runs {
        for &n in r.pairs.keys() {
            by.entry((&r.controller, n)).or_default().push(r);
        }
    }
    let mut out = String::from(
        "| Controller (SHA-256) | N | Pairs (runs) | Pooled median (min to max) | Each run's median |\n|---|---|---|---|---|\n",
    );
    for ((controller, n), rs) in by {
        let all: Vec<f64> = rs.iter().flat_map(|r| r.pairs[&n].clone()).collect();
        let each: Vec<String> = rs
            .iter()
            .filter_map(|r| {
                let m = Spread::of(&r.pairs[&n])?.median;
                Some(format!("{m:.2}x ({}, {})", r.started, r.name))
            })
            .collect();
        let Some(Spread {
            median: pooled,
            min,
            max,
        }) = Spread::of(&all)
        else {
            continue;
        };
        out.push_str(&format!(
            "| {} | {n} | {} ({}) | **{pooled:.2}x** ({min:.2}x to {max:.2}x) | {} |\n",
            &controller[..controller.len().min(12)],
            all.len(),
            rs.len(),
            each.join("; ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn results(controller: Option<&str>, started: &str, sizes: &[(u64, &[f64])]) -> Value {
        let interleaved: Vec<Value> = sizes
            .iter()
            .map(|(n, ratios)| {
                json!({"n": n, "pairs": ratios.iter().map(|r| json!({"ratio": r})).collect::<Vec<_>>()})
            })
            .collect();
        let mut v = json!({"started": started, "interleaved": interleaved});
        if let Some(c) = controller {
            v["controller"] = json!({"sha256": c});
        }
        v
    }

    #[test]
    fn pools_every_pair_of_the_same_controller_per_size() {
        let runs = [
            Run::of(
                "a",
                &results(
                    Some("abc"),
                    "d1",
                    &[(1000, &[0.9, 1.0, 1.2]), (10000, &[1.1])],
                ),
            ),
            Run::of("b", &results(Some("abc"), "d2", &[(1000, &[1.3, 0.95])])),
            Run::of("c", &results(None, "d0", &[(1000, &[2.0])])),
        ];
        let t = table(&runs);
        // abc at 1,000: 0.9, 0.95, 1.0, 1.2, 1.3 -> 1.0; each run's median apart.
        assert!(
            t.contains(
                "| abc | 1000 | 5 (2) | **1.00x** (0.90x to 1.30x) | 1.00x (d1, a); 1.12x (d2, b) |"
            ),
            "{t}"
        );
        assert!(
            t.contains("| abc | 10000 | 1 (1) | **1.10x** (1.10x to 1.10x) |"),
            "{t}"
        );
        // Another binary is counted apart, not pooled in.
        assert!(t.contains("| unknown | 1000 | 1 (1) | **2.00x**"), "{t}");
        assert_eq!(t.lines().count(), 2 + 3);
    }

    #[test]
    fn pools_every_run_as_one_when_asked() {
        let runs = vec![
            Run::of("a", &results(Some("abc"), "d1", &[(1000, &[0.9, 1.0])])),
            Run::of("c", &results(None, "d0", &[(1000, &[2.0])])),
        ];
        let t = table(&one_controller(runs));
        assert!(
            t.contains("| all, as one | 1000 | 3 (2) | **1.00x** (0.90x to 2.00x) | 0.95x (d1, a); 2.00x (d0, c) |"),
            "{t}"
        );
        assert_eq!(t.lines().count(), 2 + 1);
    }
}
