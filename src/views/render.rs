//! The status view as text: a tree per RandomSecret (like `kubectl tree`),
//! JSON or YAML. Pure: the time and whether to colour are arguments.

use super::model::{HolderView, Kept, RandomSecretView, SecretPresence, StatusList, VersionView};
use crate::api::VersionState;
use anstyle::{AnsiColor, Style};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use std::fmt::Write;

/// The view with every string from the cluster made safe to draw on a
/// terminal (`cli::terminal`): the tree's own colours are added after.
fn for_terminal(list: &StatusList) -> StatusList {
    let mut value = serde_json::to_value(list).expect("the view serializes");
    crate::cli::terminal::clean_json(&mut value);
    serde_json::from_value(value).expect("the view reads back")
}

/// `-o json`: the view, pretty-printed.
pub fn json(list: &StatusList) -> String {
    let mut s = serde_json::to_string_pretty(list).expect("the view serializes");
    s.push('\n');
    s
}

/// `-o yaml`.
pub fn yaml(list: &StatusList) -> String {
    crate::gitops::yaml::write(list).expect("the view serializes")
}

/// How long ago, as kubectl prints ages: `45s`, `3m20s`, `25m`, `5h3m`, `30h`, `3d4h`, `40d`.
pub fn age(now: Timestamp, then: &Time) -> String {
    span(now.as_second() - then.0.as_second())
}

/// A number of seconds as kubectl prints ages (below zero: `0s`).
pub fn span(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match s {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        },
        _ if h < 3 => format!("{m}m"),
        _ if h < 8 => match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        },
        _ if h < 48 => format!("{h}h"),
        _ if d < 8 => match h % 24 {
            0 => format!("{d}d"),
            r => format!("{d}d{r}h"),
        },
        _ => format!("{d}d"),
    }
}

/// Styles, or none (piped output, NO_COLOR).
struct Paint(bool);

impl Paint {
    fn paint(&self, style: Style, text: &str) -> String {
        if self.0 {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
    fn fg(&self, c: AnsiColor, text: &str) -> String {
        self.paint(Style::new().fg_color(Some(c.into())), text)
    }
    fn bold(&self, text: &str) -> String {
        self.paint(Style::new().bold(), text)
    }
    fn dim(&self, text: &str) -> String {
        self.paint(Style::new().dimmed(), text)
    }
}

fn state_text(p: &Paint, v: &VersionView) -> String {
    let (word, colour) = match v.state {
        VersionState::Current => ("current ", AnsiColor::Green),
        VersionState::Retained => ("retained", AnsiColor::Yellow),
        VersionState::Released => ("released", AnsiColor::BrightBlack),
    };
    p.fg(colour, word)
}

fn why(v: &VersionView) -> String {
    let kept = match v.kept {
        Some(Kept::Current) | None => String::new(),
        Some(Kept::Referenced) => "kept: referenced".into(),
        Some(Kept::History { position, of }) => {
            format!("kept: within history ({position} of {of})")
        }
    };
    let secret = match v.secret {
        SecretPresence::Present => "",
        // Held by deletion protection: readable until released.
        SecretPresence::Deleting if v.kept.is_some() => {
            "Secret deleted: held, readable until nothing holds it"
        }
        SecretPresence::Deleting => "Secret being deleted",
        SecretPresence::Missing => "Secret missing",
        SecretPresence::Deleted => "deleted",
    };
    let unrecorded = match v.secret {
        SecretPresence::Present | SecretPresence::Deleting if !v.recorded => {
            "not in the status: new, or a look-alike the controller leaves alone"
        }
        _ => "",
    };
    [kept.as_str(), secret, unrecorded]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

fn holder_line(p: &Paint, h: &HolderView) -> String {
    let mut line = format!("{}/{}", p.fg(AnsiColor::Cyan, &h.kind), h.name);
    match h.pods.len() {
        0 => {}
        1 => line.push_str(&format!(" (1 pod: {})", h.pods[0])),
        n => line.push_str(&format!(" ({n} pods)")),
    }
    line
}

fn header(p: &Paint, rs: &RandomSecretView, now: Timestamp) -> String {
    let ready = rs.condition("Ready");
    let readiness = match ready {
        Some(c) if c.status == "True" => p.fg(AnsiColor::Green, "Ready"),
        Some(c) => p.fg(AnsiColor::Red, &format!("Not ready: {}", c.reason)),
        None => p.fg(AnsiColor::Yellow, "Not reconciled yet"),
    };
    let live = rs
        .versions
        .iter()
        .filter(|v| v.state != VersionState::Released)
        .count();
    let mut line = format!(
        "{} {}/{}  {readiness}  {live} live version{}, history {}",
        p.dim("RandomSecret"),
        rs.namespace,
        p.bold(&rs.name),
        if live == 1 { "" } else { "s" },
        rs.history,
    );
    if let Some(t) = &rs.created {
        line.push_str(&format!(", age {}", age(now, t)));
    }
    if let Some(due) = &rs.next_rotation {
        line.push_str(&format!(", {}", next_rotation(now, due)));
    }
    line
}

/// `next rotation in 6d23h`, or `next rotation due` once its time has come
/// (the controller makes it within seconds; longer means it is not running).
fn next_rotation(now: Timestamp, due: &Time) -> String {
    if due.0 <= now {
        return "next rotation due".into();
    }
    format!("next rotation in {}", age(due.0, &Time(now)))
}

/// When a version's first certificate ends: `certificate ends in 29d`
/// (yellow within two weeks), or `certificate ended 3d ago` (red).
fn expiry(p: &Paint, now: Timestamp, end: &Time) -> String {
    let left = end.0.as_second() - now.as_second();
    if left <= 0 {
        let ago = age(now, end);
        return p.fg(AnsiColor::Red, &format!("certificate ended {ago} ago"));
    }
    let text = format!("certificate ends in {}", age(end.0, &Time(now)));
    if left < 14 * 24 * 3600 {
        p.fg(AnsiColor::Yellow, &text)
    } else {
        text
    }
}

/// One RandomSecret as a tree.
fn tree_of(out: &mut String, p: &Paint, rs: &RandomSecretView, now: Timestamp) {
    let _ = writeln!(out, "{}", header(p, rs, now));
    if !rs.keys.is_empty() {
        let keys: Vec<String> = rs
            .keys
            .iter()
            .map(|k| format!("{} ({})", k.name, k.kind))
            .collect();
        let _ = writeln!(out, "  {}", p.dim(&format!("keys: {}", keys.join(", "))));
    }
    // The conditions that explain a RandomSecret that is not Ready.
    let not_ready = rs.condition("Ready").is_some_and(|c| c.status != "True");
    for c in &rs.conditions {
        let explains = c.type_ == "Ready" || c.status == "True";
        if not_ready && explains {
            let text = if c.message.is_empty() {
                format!("{}={} {}", c.type_, c.status, c.reason)
            } else {
                format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message)
            };
            let _ = writeln!(out, "  {}", p.fg(AnsiColor::Red, &text));
        }
    }
    if rs.pending {
        let _ = writeln!(
            out,
            "  {}",
            p.fg(
                AnsiColor::Yellow,
                "the controller has not reconciled the latest spec yet"
            )
        );
    }
    if rs.versions.is_empty() {
        let _ = writeln!(out, "  {}", p.dim("(no version)"));
    }
    let n = rs.versions.len();
    for (i, v) in rs.versions.iter().enumerate() {
        let last = i + 1 == n;
        let (branch, indent) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        let name = if v.state == VersionState::Current {
            p.bold(&v.name)
        } else {
            v.name.clone()
        };
        let mut line = format!("{branch}{name}  {}", state_text(p, v));
        if let Some(t) = &v.created {
            line.push_str(&format!("  {:>6}", age(now, t)));
        }
        let why = why(v);
        if !why.is_empty() {
            line.push_str(&format!("  {}", p.dim(&why)));
        }
        if let Some(end) = &v.not_after {
            line.push_str(&format!("  {}", expiry(p, now, end)));
        }
        let _ = writeln!(out, "{}", line.trim_end());
        let m = v.holders.len();
        for (j, h) in v.holders.iter().enumerate() {
            let b = if j + 1 == m {
                "└── "
            } else {
                "├── "
            };
            let _ = writeln!(out, "{indent}{b}{}", holder_line(p, h));
        }
    }
}

/// The tree of every RandomSecret, separated by blank lines; `colour` on a terminal only.
pub fn tree(list: &StatusList, now: Timestamp, colour: bool) -> String {
    let list = &for_terminal(list);
    let p = Paint(colour);
    let mut out = String::new();
    if list.items.is_empty() {
        out.push_str("No RandomSecret found.\n");
    }
    for (i, rs) in list.items.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        tree_of(&mut out, &p, rs, now);
    }
    for note in &list.notes {
        let _ = writeln!(out, "{}", p.dim(&format!("note: {note}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::model::{assemble, fixtures};
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:05:00Z".parse().unwrap()
    }

    #[test]
    fn the_tree_shows_versions_holders_and_reasons() {
        let text = tree(&assemble(&fixtures::read()), now(), false);
        let expected = "\
RandomSecret demo/db  Ready  4 live versions, history 1, age 5m
  keys: deploy (SSH key pair, ecdsa 256), dsn (template), password (random string, 16 characters), user (static)
├── db-c8h2d5q9bx  current       3m  certificate ends in 58d
│   └── ReplicaSet/web-2 (2 pods)
├── db-7b9fk2m4tg  retained      3m  kept: referenced
│   └── ReplicaSet/web-3
├── db-b7c9f2k4tg  retained      4m  kept: referenced
│   ├── ControllerRevision/cache-6d5f
│   └── Pod/web-1-x
├── db-9fk2m4tg7b  retained      5m  kept: within history (1 of 1)
├── db-5555555555  released      7m  not in the status: new, or a look-alike the controller leaves alone
└── db-t2t2t2t2t2  released  deleted

RandomSecret demo/taken  Not ready: SecretNameTaken  0 live versions, history 0, age 5m
  keys: password (random string, 16 characters)
  Ready=False SecretNameTaken: Secret taken-5555555555 exists and was not created by randomsecret: rename it or set spec.secretName
  Stalled=True SecretNameTaken
  (no version)
";
        assert_eq!(text, expected, "\n{text}");
    }

    /// A held version deleted by hand reads as held, not as going.
    #[test]
    fn a_deleted_held_version_says_it_stays_readable() {
        let mut v = serde_json::to_value(assemble(&fixtures::read())).unwrap();
        v["items"][0]["versions"][1]["secret"] = "deleting".into();
        v["items"][0]["versions"][0]["secret"] = "deleting".into();
        let list: StatusList = serde_json::from_value(v).unwrap();
        let text = tree(&list, now(), false);
        assert!(
            text.contains(
                "kept: referenced, Secret deleted: held, readable until nothing holds it"
            ),
            "{text}"
        );
        assert!(
            text.contains("db-c8h2d5q9bx  current       3m  Secret deleted: held"),
            "{text}"
        );
    }

    /// Names and messages from the cluster cannot drive the terminal.
    #[test]
    fn escape_sequences_from_the_cluster_are_shown_not_sent() {
        let mut v = serde_json::to_value(assemble(&fixtures::read())).unwrap();
        let hostile = "\x1b[2J\x1b]0;owned\x07";
        v["items"][1]["name"] = hostile.into();
        v["items"][1]["conditions"][0]["message"] = format!("fix{hostile}").into();
        v["items"][0]["versions"][0]["holders"][0]["name"] = hostile.into();
        let list: StatusList = serde_json::from_value(v).unwrap();
        for colour in [false, true] {
            let text = tree(&list, now(), colour);
            assert!(text.contains("\\u{1b}[2J\\u{1b}]0;owned\\u{7}"), "{text}");
            assert!(
                !text.contains("\x1b[2J") && !text.contains('\x07'),
                "{text:?}"
            );
        }
        // JSON keeps the data as it is (serde_json escapes it).
        assert!(json(&list).contains("\\u001b[2J"));
    }

    #[test]
    fn colour_only_when_asked() {
        let list = assemble(&fixtures::read());
        let plain = tree(&list, now(), false);
        let coloured = tree(&list, now(), true);
        assert!(!plain.contains('\x1b'));
        assert!(coloured.contains("\x1b[32mcurrent \x1b[0m"), "{coloured}");
        // Same text once the escapes are removed.
        let stripped: String = {
            let mut s = String::new();
            let mut esc = false;
            for c in coloured.chars() {
                match (esc, c) {
                    (_, '\x1b') => esc = true,
                    (true, 'm') => esc = false,
                    (true, _) => {}
                    (false, c) => s.push(c),
                }
            }
            s
        };
        assert_eq!(stripped, plain);
    }

    #[test]
    fn json_and_yaml_parse_back() {
        let list = assemble(&fixtures::read());
        let v: serde_json::Value = serde_json::from_str(&json(&list)).unwrap();
        assert_eq!(v["items"][0]["current"], fixtures::V2);
        assert_eq!(v["items"][0]["versions"][0]["kept"]["reason"], "current");
        assert_eq!(
            v["items"][0]["versions"][3]["kept"],
            serde_json::json!({"reason": "history", "position": 1, "of": 1})
        );
        assert_eq!(
            v["items"][0]["versions"][0]["holders"][0]["pods"][1],
            "web-2-b"
        );
        assert_eq!(v["items"][1]["conditions"][0]["reason"], "SecretNameTaken");
        let y: serde_json::Value = crate::gitops::yaml::read(&yaml(&list)).unwrap();
        assert_eq!(y, v);
    }

    #[test]
    fn ages_read_like_kubectl() {
        let t = |s: i64| Time(Timestamp::from_second(1_000_000 - s).unwrap());
        let now = Timestamp::from_second(1_000_000).unwrap();
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (200, "3m20s"),
            (600, "10m"),
            (3 * 3600 + 120, "3h2m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (40 * 86400, "40d"),
            (-5, "0s"),
        ];
        for (s, want) in cases {
            assert_eq!(age(now, &t(s)), want, "{s}");
        }
    }

    #[test]
    fn the_next_rotation_reads_as_a_time_left_then_due() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let at = |s: i64| Time(Timestamp::from_second(1_000_000 + s).unwrap());
        assert_eq!(
            next_rotation(now, &at(7 * 86400 - 3600)),
            "next rotation in 6d23h"
        );
        assert_eq!(next_rotation(now, &at(90)), "next rotation in 90s");
        assert_eq!(next_rotation(now, &at(0)), "next rotation due");
        assert_eq!(next_rotation(now, &at(-60)), "next rotation due");
    }
}
