//! SVG charts of a `results.json`, drawn by the benchmark itself (plotters,
//! SVG backend only): convergence over time against the floor and the peer,
//! RSS against the number of objects, and the rotation latency distribution.
//! `bench --render-charts results.json` draws them again from a file.

use anyhow::{Context, Result};
use plotters::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (800, 480);
/// At most this many points per line (the files stay small enough to commit).
const MAX_POINTS: usize = 200;

/// `(time, how many were done)` points from the sorted times (in seconds)
/// at which each object was done, at most [`MAX_POINTS`] of them.
pub fn curve(sorted_seconds: &[f64]) -> Value {
    let n = sorted_seconds.len();
    if n == 0 {
        return json!([]);
    }
    let steps = MAX_POINTS.min(n);
    let mut points = vec![json!([0.0, 0])];
    for k in 1..=steps {
        let i = k * n / steps - 1;
        points.push(json!([round(sorted_seconds[i]), i + 1]));
    }
    json!(points)
}

/// `(latency in ms, percentile)` points of a latency distribution (sorted).
pub fn distribution(sorted_ms: &[f64]) -> Value {
    let n = sorted_ms.len();
    let steps = MAX_POINTS.min(n);
    json!(
        (1..=steps)
            .map(|k| {
                let i = k * n / steps - 1;
                json!([
                    round(sorted_ms[i]),
                    round(100.0 * (i + 1) as f64 / n as f64)
                ])
            })
            .collect::<Vec<_>>()
    )
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn points(v: &Value) -> Vec<(f64, f64)> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
        .collect()
}

struct Line {
    name: String,
    points: Vec<(f64, f64)>,
    colour: RGBColor,
    dots: bool,
}

const OURS: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const FLOOR: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
const PEER: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const OTHER: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const TARGET: RGBColor = RGBColor(0xd6, 0x27, 0x28);

/// One chart of lines, with an optional horizontal target line.
fn chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    target: Option<(&str, f64)>,
) -> Result<()> {
    let all = lines.iter().flat_map(|l| l.points.iter());
    let x_max = all.clone().map(|p| p.0).fold(0.0, f64::max).max(1e-9) * 1.05;
    let y_max = all
        .map(|p| p.1)
        .chain(target.map(|t| t.1))
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    c.configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for l in lines {
        let colour = l.colour;
        c.draw_series(LineSeries::new(l.points.clone(), colour.stroke_width(2)))?
            .label(l.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        if l.dots {
            c.draw_series(l.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
        }
    }
    if let Some((name, y)) = target {
        c.draw_series(LineSeries::new(
            vec![(0.0, y), (x_max, y)],
            TARGET.stroke_width(1),
        ))?
        .label(name)
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], TARGET.stroke_width(1)));
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Draws every chart `results` has the data for into `dir`; returns the files written.
pub fn render(results: &Value, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    // Convergence of N RandomSecrets to Ready, against the floor and the peer.
    for conv in results["convergence"].as_array().into_iter().flatten() {
        let Some(n) = conv["n"].as_u64() else {
            continue;
        };
        let mut lines = vec![Line {
            name: "randomsecret".into(),
            points: points(&conv["curve"]),
            colour: OURS,
            dots: false,
        }];
        if lines[0].points.is_empty() {
            continue; // a results.json from before the curves were recorded
        }
        let floor = points(&conv["floor_curve"]);
        if !floor.is_empty() {
            lines.push(Line {
                name: "floor (a tight client doing the same writes)".into(),
                points: floor,
                colour: FLOOR,
                dots: false,
            });
        }
        for peer in results["peer"].as_array().into_iter().flatten() {
            let p = points(&peer["curve"]);
            if peer["n"].as_u64() == Some(n) && !p.is_empty() {
                lines.push(Line {
                    name: format!("peer ({})", peer["peer"].as_str().unwrap_or("peer")),
                    points: p,
                    colour: PEER,
                    dots: false,
                });
            }
        }
        let path = dir.join(format!("convergence-{n}.svg"));
        chart(
            &path,
            &format!("Convergence of {n} RandomSecrets"),
            "seconds since the first create",
            "Ready",
            &lines,
            None,
        )?;
        written.push(path);
    }
    // Steady RSS against the number of objects.
    let mut rss = Vec::new();
    let conv: Vec<(f64, f64)> = results["convergence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["n"].as_f64()?, c["rss_mib"].as_f64()?)))
        .collect();
    if !conv.is_empty() {
        rss.push(Line {
            name: "after converging N (with their Secrets)".into(),
            points: conv,
            colour: OURS,
            dots: true,
        });
    }
    let scale: Vec<(f64, f64)> = results["scale"]["points"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["n"].as_f64()?, p["steady_rss_mib"].as_f64()?)))
        .collect();
    if !scale.is_empty() {
        rss.push(Line {
            name: "steady, as the set grows (scale phase)".into(),
            points: scale,
            colour: OTHER,
            dots: true,
        });
    }
    if !rss.is_empty() {
        let path = dir.join("rss.svg");
        chart(
            &path,
            "Resident memory against RandomSecrets",
            "RandomSecrets",
            "RSS (MiB)",
            &rss,
            Some(("target at 10,000: 24 MiB", 24.0)),
        )?;
        written.push(path);
    }
    // Rotation latency distribution, against its floor.
    let rot = &results["rotation"];
    let ours = points(&rot["distribution"]);
    if !ours.is_empty() {
        let mut lines = vec![Line {
            name: "randomsecret".into(),
            points: ours,
            colour: OURS,
            dots: false,
        }];
        let floor = points(&rot["floor"]["distribution"]);
        if !floor.is_empty() {
            lines.push(Line {
                name: "floor".into(),
                points: floor,
                colour: FLOOR,
                dots: false,
            });
        }
        let path = dir.join("rotation-latency.svg");
        chart(
            &path,
            &format!(
                "Rotation latency ({} rotations at {}/s)",
                rot["rotations"], rot["rate_per_s"]
            ),
            "latency (ms): spec.rotation changed until status.secretName is the new version",
            "percent of rotations at or below",
            &lines,
            None,
        )?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small results.json of every shape the charts read.
    fn fixture() -> Value {
        let times: Vec<f64> = (1..=500).map(|i| i as f64 * 0.01).collect();
        let floor: Vec<f64> = (1..=500).map(|i| i as f64 * 0.008).collect();
        let peer: Vec<f64> = (1..=500).map(|i| i as f64 * 0.03).collect();
        let lat: Vec<f64> = (1..=50).map(|i| 10.0 + i as f64).collect();
        json!({
            "convergence": [{"n": 500, "rss_mib": 12.5, "curve": curve(&times), "floor_curve": curve(&floor)}],
            "peer": [{"n": 500, "peer": "other-operator", "curve": curve(&peer)}],
            "scale": {"points": [{"n": 500, "steady_rss_mib": 12.0}, {"n": 1000, "steady_rss_mib": 13.5}]},
            "rotation": {"rotations": 50, "rate_per_s": 20.0, "distribution": distribution(&lat),
                         "floor": {"distribution": distribution(&lat.iter().map(|l| l - 5.0).collect::<Vec<_>>())}},
        })
    }

    #[test]
    fn curves_are_bounded_and_end_with_everything_done() {
        let times: Vec<f64> = (1..=1000).map(f64::from).collect();
        let c = points(&curve(&times));
        assert_eq!(c.len(), MAX_POINTS + 1);
        assert_eq!(c[0], (0.0, 0.0));
        assert_eq!(*c.last().unwrap(), (1000.0, 1000.0));
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        let d = points(&distribution(&[1.0, 2.0, 3.0, 4.0]));
        assert_eq!(d, [(1.0, 25.0), (2.0, 50.0), (3.0, 75.0), (4.0, 100.0)]);
    }

    #[test]
    fn renders_each_chart_from_a_results_file() {
        let dir = std::env::temp_dir().join(format!("bench-charts-{}", std::process::id()));
        let written = render(&fixture(), &dir).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["convergence-500.svg", "rss.svg", "rotation-latency.svg"]
        );
        let svg = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
        let conv = svg("convergence-500.svg");
        assert!(conv.starts_with("<svg") && conv.trim_end().ends_with("</svg>"));
        for label in [
            "Convergence of 500 RandomSecrets",
            "randomsecret",
            "floor (a tight client",
            "peer (other-operator)",
        ] {
            assert!(conv.contains(label), "{label}");
        }
        // One polyline per series, with the curve's points.
        assert!(conv.matches("<polyline").count() >= 3);
        let rss = svg("rss.svg");
        assert!(rss.contains("target at 10,000: 24 MiB") && rss.contains("<circle"));
        assert!(svg("rotation-latency.svg").contains("Rotation latency (50 rotations at 20.0/s)"));
        // An older results.json (no curves, no distribution): only what it can show.
        let old = json!({"convergence": [{"n": 10, "rss_mib": 9.0}]});
        let written = render(&old, &dir.join("old")).unwrap();
        assert_eq!(written.len(), 1, "{written:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
