//! Collects the figures, checks them against the targets, prints a Markdown
//! table and writes `results.json`.

use crate::apimetrics::{self, Counts, OURS, WATCHED};
use crate::apitimes::ApiTimes;
use crate::args::Args;
use crate::charts;
use crate::figures::{
    Converged, Floor, ObjectMetricsRun, Pair, PeerResult, Pushed, Renewals, Restart, RsaLoad,
    ScalePoint,
};
use crate::phasetimes::{self, PhaseTime};
use crate::procstat::{Handles, Steady, mib};
use crate::slowest;
use crate::stats::{Spread, p50_p99_max as stats, percentile_ms};
use anyhow::Result;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Targets (issue 11): ratio to the floor, requests per version, memory
/// (steady, peak during a restart, added by unrelated Secrets), rotation.
const MAX_FLOOR_RATIO: f64 = 1.1;
const MAX_REQUESTS_PER_VERSION: f64 = 3.0;
const MAX_STEADY_MIB: f64 = 24.0;
const MAX_RESTART_PEAK_MIB: f64 = 32.0;
const MAX_BULK_ADDED_MIB: f64 = 1.0;
const MAX_ROTATION_P99_MS: f64 = 50.0;
/// Issue 33: over 1,000 rotations at 20/s, our p99 and maximum against the floor's.
const P99_OVER_FLOOR_MS: f64 = 5.0;
const MAX_OVER_FLOOR_MS: f64 = 20.0;
const MAX_WEBHOOK_P99_MS: f64 = 5.0;
/// Targets (issue 29): convergence with a key pair and a template within
/// MAX_FLOOR_RATIO of its floor; while RSA-4096 keys are made, no lease
/// renewal missed and the rotation p99 at most this times its p99 alone.
const MAX_RSA_ROTATION_P99_RATIO: f64 = 1.2;

/// Target (issue 33): convergence by the median of the interleaved pairs.
const MAX_INTERLEAVED_RATIO: f64 = 1.05;

pub struct Report {
    json: serde_json::Map<String, Value>,
    rows: Vec<(String, String, String)>,
    ours: Vec<(usize, f64)>,
    /// `--no-restarts`: each convergence run on a compacted etcd only.
    no_restarts: bool,
}

/// Durations in seconds, sorted (for the charts' curves).
fn seconds(d: &[Duration]) -> Vec<f64> {
    let mut s: Vec<f64> = d.iter().map(Duration::as_secs_f64).collect();
    s.sort_by(f64::total_cmp);
    s
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

fn by_verb(c: &Counts) -> Value {
    Value::Object(
        c.iter()
            .map(|((verb, res), v)| (format!("{verb} {res}"), json!(v)))
            .collect(),
    )
}

/// "connections / threads / fds".
fn handles(h: Handles) -> String {
    format!("{} / {} / {}", h.apiserver, h.threads, h.fds)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// The controller binary measured (`RANDOMSECRET_BIN`): its path and
/// SHA-256, so that `--pool` counts the runs of different builds apart.
/// (Not in [`Report::new`]: the tests make reports, and hashing a debug
/// binary takes seconds.)
fn controller() -> Value {
    use sha2::{Digest as _, Sha256};
    let path = randomsecret_e2e::randomsecret_bin();
    let sha256 = std::fs::read(&path)
        .map(|bytes| {
            Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        })
        .ok();
    json!({"path": path.display().to_string(), "sha256": sha256})
}

fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split(':')
                .nth(1)
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default();
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    json!({"cpu": cpu, "cores": cores, "memory_gib": (mem_kib as f64 / 1048576.0).round(),
           "kernel": read("/proc/sys/kernel/osrelease").trim()})
}

/// The memory side of a restart, for the JSON.
fn restart_json(r: &Restart) -> Value {
    json!({"floor_s": secs(r.floor), "peak_rss_until_ready_mib": mib(r.peak_ready_kib), "sampled_max_rss_until_ready_mib": mib(r.sampled_ready_kib),
           "handles_at_ready": r.handles_ready.json(), "peak_rss_mib": mib(r.peak_kib),
           "steady_rss_mib": mib(r.steady.rss_kib),
           "steady_handles": r.steady.handles.json(), "idle_cpu_percent": r.steady.cpu * 100.0})
}

impl Report {
    pub fn new(args: &Args, big: Option<usize>) -> Self {
        let mut json = serde_json::Map::new();
        json.insert("machine".into(), machine());
        json.insert(
            "settings".into(),
            json!({"sizes": args.sizes, "namespaces": args.namespaces, "concurrency": args.concurrency,
                   "rotations": args.rotations, "rotation_rate": args.rotation_rate, "rotation_block": args.rotation_block,
                   "bulk": args.bulk, "bulk_kib": args.bulk_kib, "steady_seconds": args.steady_seconds,
                   "scale_to": big, "kinds": !args.no_kinds, "kinds_count": args.kinds_count,
                   "rsa_count": args.rsa_count, "key_generation_concurrency": args.key_generation_concurrency,
                   "restarts": !args.no_restarts}),
        );
        json.insert(
            "started".into(),
            json!(k8s_openapi::jiff::Timestamp::now().to_string()),
        );
        Report {
            json,
            rows: Vec::new(),
            ours: Vec::new(),
            no_restarts: args.no_restarts,
        }
    }

    /// Records which controller binary the run measures (`controller`).
    pub fn controller(&mut self) {
        self.json.insert("controller".into(), controller());
    }

    fn row(&mut self, what: String, value: String, target: String) {
        println!("| {what} | {value} | {target} |");
        self.rows.push((what, value, target));
    }

    fn push(&mut self, key: &str, v: Value) {
        self.json
            .entry(key.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .expect("an array")
            .push(v);
    }

    pub fn note(&mut self, text: &str) {
        eprintln!("bench: {text}");
        self.push("notes", json!(text));
    }

    /// The floor's diagnostic run with the controller's watches open
    /// (`--floor-watches`): the writes plus what sending those events costs.
    pub fn floor_watched(&mut self, n: usize, took: Duration, ours: Duration) {
        let ratio = ours.as_secs_f64() / took.as_secs_f64();
        self.push(
            "floor_watched",
            json!({"n": n, "floor_watched_s": secs(took), "randomsecret_s": secs(ours), "ratio": ratio}),
        );
        self.row(
            format!("Diagnostic, N={n}: the floor with the controller's watches open (RandomSecrets; Secrets metadata-only)"),
            format!(
                "{:.2} s; randomsecret / it = {ratio:.2}x",
                took.as_secs_f64()
            ),
            "(no target)".into(),
        );
    }

    pub fn convergence(&mut self, n: usize, floor: Option<&Floor>, ours: &Converged) {
        let floor_s = floor.map_or(f64::NAN, |f| f.took.as_secs_f64());
        let floor_done = floor.map_or(&[][..], |f| &f.done[..]);
        let ratio = ours.took.as_secs_f64() / floor_s;
        // Per version: the controller's requests (its watches are counted apart).
        let mine = apimetrics::only(&ours.requests, OURS);
        let per_version = apimetrics::total(&mine) / n as f64;
        let lists = apimetrics::verb_on(&ours.requests, "LIST", WATCHED);
        self.ours.push((n, ours.took.as_secs_f64()));
        self.push(
            "convergence",
            json!({"n": n, "floor_s": floor.map(|f| secs(f.took)), "floor_writes_s": floor.map(|f| secs(f.writes)),
                   "randomsecret_s": secs(ours.took), "ratio": ratio,
                   "requests_per_version": per_version, "reconciles_per_version": ours.reconciles / n as f64,
                   "lists_after_start": lists, "requests": by_verb(&ours.requests),
                   "cpu": ours.cpu.json(), "floor_cpu": floor.map(|f| f.cpu.json()),
                   "rss_mib": mib(ours.rss_kib), "peak_rss_mib": mib(ours.peak_kib),
                   "handles_after": ours.handles.json(), "handles_max_during": ours.handles_max.json(),
                   "curve": charts::curve(&seconds(&ours.ready)), "floor_curve": charts::curve(&seconds(floor_done))}),
        );
        self.row(
            format!("Convergence N={n}: randomsecret / floor"),
            format!(
                "{:.2} s / {floor_s:.2} s = **{ratio:.2}x** (the floor's last write returned at {:.2} s)",
                ours.took.as_secs_f64(),
                floor.map_or(f64::NAN, |f| f.writes.as_secs_f64())
            ),
            format!(
                "≤ {MAX_FLOOR_RATIO}x: {}",
                verdict(ratio <= MAX_FLOOR_RATIO)
            ),
        );
        let breakdown = mine
            .iter()
            .map(|((verb, res), v)| format!("{verb} {res} {:.2}", v / n as f64))
            .collect::<Vec<_>>()
            .join(", ");
        self.row(
            format!("API requests per new version, N={n}"),
            format!(
                "**{per_version:.4}** ({breakdown}); {:.2} reconciles per version",
                ours.reconciles / n as f64
            ),
            format!(
                "≤ {MAX_REQUESTS_PER_VERSION}: {}",
                verdict(per_version <= MAX_REQUESTS_PER_VERSION)
            ),
        );
        self.row(
            format!("LIST requests after start, N={n}"),
            format!("**{lists}**"),
            format!("0: {}", verdict(lists == 0.0)),
        );
        self.row(
            format!(
                "Apiserver connections / threads / fds, N={n}: after convergence (most while converging)"
            ),
            format!(
                "**{}** ({})",
                handles(ours.handles),
                handles(ours.handles_max)
            ),
            String::new(),
        );
    }

    /// Convergence at `n` over interleaved pairs, in the order run: each
    /// pair's ratio, their median, minimum and maximum, and the median of
    /// each order apart. `pairs`: (the floor, ours, whether ours ran first).
    pub fn interleaved(&mut self, n: usize, pairs: &[Pair]) {
        let ratios: Vec<Option<f64>> = pairs
            .iter()
            .map(|p| {
                p.floor
                    .as_ref()
                    .map(|(f, _)| p.ours.0.as_secs_f64() / f.as_secs_f64())
            })
            .collect();
        let Some(spread) = Spread::of(&ratios.iter().flatten().copied().collect::<Vec<_>>()) else {
            return; // no floor
        };
        // The median of each order apart: whether running second costs.
        let by_order = |first: bool| {
            let of_order: Vec<f64> = pairs
                .iter()
                .zip(&ratios)
                .filter(|(p, _)| p.ours_first == first)
                .filter_map(|(_, r)| *r)
                .collect();
            Spread::of(&of_order).map(|s| s.median)
        };
        let (floor_first, ours_first) = (by_order(false), by_order(true));
        self.push(
            "interleaved",
            json!({"n": n, "median": spread.median, "min": spread.min, "max": spread.max,
                   "median_floor_first": floor_first, "median_ours_first": ours_first,
                   "pairs": pairs.iter().zip(&ratios).map(|(p, r)| json!({
                       "floor_s": p.floor.as_ref().map(|(f, _)| secs(*f)),
                       "randomsecret_s": secs(p.ours.0), "ratio": r,
                       "ours_first": p.ours_first,
                       "floor_cpu": p.floor.as_ref().map(|(_, c)| c.json()),
                       "randomsecret_cpu": p.ours.1.json(),
                   })).collect::<Vec<_>>()}),
        );
        let each = pairs
            .iter()
            .zip(&ratios)
            .map(|(p, r)| {
                format!(
                    "{:.2}/{:.2} s = {:.2}x{}",
                    p.ours.0.as_secs_f64(),
                    p.floor.as_ref().map_or(f64::NAN, |(f, _)| f.as_secs_f64()),
                    r.unwrap_or(f64::NAN),
                    if p.ours_first { " (ours first)" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let orders = match (floor_first, ours_first) {
            (Some(f), Some(o)) => {
                format!("; median with the floor first {f:.2}x, with ours first {o:.2}x")
            }
            _ => String::new(),
        };
        self.row(
            format!(
                "Convergence N={n} over {} interleaved pairs (every other pair ours first, each run on {}): median ratio (min to max)",
                pairs.len(),
                if self.no_restarts {
                    "a compacted etcd"
                } else {
                    "a restarted control plane over a compacted etcd"
                }
            ),
            format!(
                "**{:.2}x** ({:.2}x to {:.2}x); each, ours / floor: {each}{orders}",
                spread.median, spread.min, spread.max
            ),
            format!(
                "median ≤ {MAX_INTERLEAVED_RATIO}x: {}",
                verdict(spread.median <= MAX_INTERLEAVED_RATIO)
            ),
        );
    }

    /// The kinds phase's convergence: RandomSecrets with a password, an
    /// ed25519 SSH key pair and a template, against a floor that computes
    /// the same values.
    pub fn kinds_convergence(&mut self, n: usize, floor: &Floor, ours: &Converged) {
        let ratio = ours.took.as_secs_f64() / floor.took.as_secs_f64();
        let mine = apimetrics::only(&ours.requests, OURS);
        let per_version = apimetrics::total(&mine) / n as f64;
        self.push(
            "kinds_convergence",
            json!({"n": n, "keys": "password (32 characters), deploy (sshKeyPair ed25519, and deploy.pub), dsn (template)",
                   "floor_s": secs(floor.took), "floor_writes_s": secs(floor.writes),
                   "randomsecret_s": secs(ours.took), "ratio": ratio,
                   "requests_per_version": per_version, "reconciles_per_version": ours.reconciles / n as f64,
                   "requests": by_verb(&ours.requests),
                   "rss_mib": mib(ours.rss_kib), "peak_rss_mib": mib(ours.peak_kib),
                   "cpu": ours.cpu.json(), "floor_cpu": floor.cpu.json(),
                   "curve": charts::curve(&seconds(&ours.ready)), "floor_curve": charts::curve(&seconds(&floor.done))}),
        );
        self.row(
            format!("Convergence N={n} with an ed25519 SSH key pair and a template: randomsecret / floor"),
            format!(
                "{:.2} s / {:.2} s = **{ratio:.2}x** (the floor's last write returned at {:.2} s); {per_version:.2} requests, {:.2} reconciles per version; CPU s until Ready: {} / {}; the rest of the machine {:.1} / {:.1}",
                ours.took.as_secs_f64(),
                floor.took.as_secs_f64(),
                floor.writes.as_secs_f64(),
                ours.reconciles / n as f64,
                ours.cpu.text(),
                floor.cpu.text(),
                ours.cpu.others,
                floor.cpu.others
            ),
            format!(
                "≤ {MAX_FLOOR_RATIO}x: {}",
                verdict(ratio <= MAX_FLOOR_RATIO)
            ),
        );
    }

    /// The kinds phase's RSA keys under a rotation workload: their time to
    /// Ready, the controller's lease renewals, the rotation p99 against the
    /// same workload alone.
    pub fn rsa_load(&mut self, r: &RsaLoad) {
        let (a50, a99, amax) = stats(&r.alone);
        let (d50, d99, dmax) = stats(&r.during);
        let (f50, f99, fmax) = stats(&r.after);
        let (_, l99, lmax) = stats(&r.during_later);
        let (g50, g99, gmax) = stats(&r.floor);
        let (_, gl99, glmax) = stats(&r.floor_later);
        // The verdict compares windows of equal length (see RsaLoad::after).
        let (ratio, ratio_short) = (d99 / f99, d99 / a99);
        let renewals = |g: &Renewals| {
            json!({"renewals": g.count, "max_gap_s": secs(g.max_gap), "missed": g.missed,
                   "over_deadline": g.over_deadline})
        };
        let took = r.took.as_secs_f64();
        self.json.insert(
            "rsa_load".into(),
            json!({"rsa_4096": r.count, "plain": r.plain, "key_generation_permits": r.permits,
                   "reconcile_concurrency": r.reconcile_concurrency,
                   "one_key_here_s": secs(r.one_key), "ready_s": secs(r.took),
                   "controller_cpu_s": r.cpu_s, "controller_cores": r.cpu_s / took,
                   "cpu": r.cpu.json(),
                   "rotation_alone": {"rotations": r.alone.len(), "p50_ms": a50, "p99_ms": a99, "max_ms": amax},
                   "rotation_during": {"rotations": r.during.len(), "p50_ms": d50, "p99_ms": d99, "max_ms": dmax},
                   "rotation_after": {"rotations": r.after.len(), "p50_ms": f50, "p99_ms": f99, "max_ms": fmax},
                   "rotation_during_later": {"from_s": r.burst.as_secs(), "rotations": r.during_later.len(), "p99_ms": l99, "max_ms": lmax},
                   "rotation_beside_the_floor": {"rotations": r.floor.len(), "p50_ms": g50, "p99_ms": g99, "max_ms": gmax,
                                                 "keys_s": secs(r.floor_load)},
                   "rotation_beside_the_floor_later": {"from_s": r.burst.as_secs(), "rotations": r.floor_later.len(), "p99_ms": gl99, "max_ms": glmax},
                   "p99_ratio": ratio, "p99_ratio_to_the_first_window": ratio_short,
                   "p99_ratio_to_the_floor": d99 / g99, "p99_ratio_to_the_floor_later": l99 / gl99,
                   "renew_period_s": r.period.as_secs(), "renew_deadline_s": r.deadline.as_secs(),
                   "renewals_alone": renewals(&r.renewals_alone), "renewals_during": renewals(&r.renewals_during),
                   "leader_samples": r.leader_samples, "not_leading_samples": r.not_leading,
                   "metrics_slowest_ms": r.metrics_max_ms,
                   "curve": charts::curve(&seconds(&r.ready))}),
        );
        self.row(
            format!(
                "{} RSA-4096 RandomSecrets created at once ({} key generation permit(s), {} reconciles at once): all Ready",
                r.count, r.permits, r.reconcile_concurrency
            ),
            format!(
                "**{took:.1} s**, {:.2} s per key and permit (one key generated here: {:.2} s, the mean of {}); the controller used {:.1} CPU s ({:.2} cores); CPU s of the run {}, the rest of the machine {:.1}",
                took * r.permits as f64 / r.count as f64,
                r.one_key.as_secs_f64(),
                r.one_key_of,
                r.cpu_s,
                r.cpu_s / took,
                r.cpu.text(),
                r.cpu.others
            ),
            "(no target)".into(),
        );
        let (g, a) = (&r.renewals_during, &r.renewals_alone);
        let leading = r.not_leading == 0 && r.leader_samples > 0;
        self.row(
            format!(
                "Leader renewals while they were made: missed (a gap between renewTimes over 2 × the {} s period) / over the {} s deadline",
                r.period.as_secs(),
                r.deadline.as_secs()
            ),
            format!(
                "**{} / {}** (largest gap {:.2} s over {} renewals; {:.2} s alone); randomsecret_leader 1 in {} of {} scrapes (slowest /metrics {:.0} ms)",
                g.missed,
                g.over_deadline,
                g.max_gap.as_secs_f64(),
                g.count,
                a.max_gap.as_secs_f64(),
                r.leader_samples - r.not_leading,
                r.leader_samples,
                r.metrics_max_ms
            ),
            format!(
                "0 missed, leading throughout: {}",
                verdict(g.missed == 0 && leading)
            ),
        );
        self.row(
            format!(
                "String rotations at the same rate ({} plain RandomSecrets): p50 / p99 alone; during the RSA keys; alone after, as many as during",
                r.plain
            ),
            format!(
                "{a50:.1} / {a99:.1} ms ({} rotations, max {amax:.1}); {d50:.1} / {d99:.1} ms ({} rotations, max {dmax:.1}; sent from the {}th s on: p99 {l99:.1}, max {lmax:.1}, {:.2}x); {f50:.1} / {f99:.1} ms ({} rotations, max {fmax:.1}): p99 during / after **{ratio:.2}x** ({ratio_short:.2}x the first {} alone)",
                r.alone.len(),
                r.during.len(),
                r.burst.as_secs(),
                l99 / f99,
                r.after.len(),
                r.alone.len()
            ),
            format!(
                "≤ {MAX_RSA_ROTATION_P99_RATIO}x: {}",
                verdict(ratio <= MAX_RSA_ROTATION_P99_RATIO)
            ),
        );
        self.row(
            format!(
                "The same rotations beside the load's floor: the benchmark makes {} RSA-4096 keys in a lane like the controller's ({} SCHED_IDLE thread(s)); p50 / p99",
                r.count, r.permits
            ),
            format!(
                "{g50:.1} / {g99:.1} ms ({} rotations, max {gmax:.1}; sent from the {}th s on: p99 {gl99:.1}, max {glmax:.1}; the keys took {:.1} s): p99 during the controller's load / beside its floor **{:.2}x** (from the {}th s on {:.2}x)",
                r.floor.len(),
                r.burst.as_secs(),
                r.floor_load.as_secs_f64(),
                d99 / g99,
                r.burst.as_secs(),
                l99 / gl99
            ),
            "(no target: what the machine itself adds)".into(),
        );
    }

    pub fn replicasets(&mut self, n: usize, requests: &Counts) {
        let mine = apimetrics::only(requests, OURS);
        self.push(
            "replicasets",
            json!({"n": n, "requests": by_verb(requests)}),
        );
        let breakdown = mine
            .iter()
            .map(|((v, r), c)| format!("{v} {r} {c}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.row(
            format!("Requests for {n} new ReplicaSets referencing versions"),
            format!(
                "{:.2} per ReplicaSet ({breakdown})",
                apimetrics::total(&mine) / n as f64
            ),
            "owner reference added per holder".into(),
        );
    }

    pub fn memory(
        &mut self,
        n: usize,
        steady: Steady,
        peak: u64,
        with_bulk: Steady,
        peak_bulk: u64,
        bulk_requests: &Counts,
    ) {
        let added = mib(with_bulk.rss_kib) - mib(steady.rss_kib);
        self.json.insert(
            "memory".into(),
            json!({"n": n, "steady_rss_mib": mib(steady.rss_kib), "peak_rss_mib": mib(peak),
                   "steady_anon_mib": mib(steady.last.anon_kib), "steady_file_mib": mib(steady.last.file_kib),
                   "idle_cpu_percent": steady.cpu * 100.0, "steady_handles": steady.handles.json(),
                   "steady_rss_with_bulk_mib": mib(with_bulk.rss_kib), "peak_rss_with_bulk_mib": mib(peak_bulk),
                   "with_bulk_handles": with_bulk.handles.json(),
                   "bulk_added_mib": added, "requests_during_bulk": by_verb(bulk_requests)}),
        );
        self.row(
            format!("Steady RSS, {n} RandomSecrets / Secrets / ReplicaSets"),
            format!(
                "**{:.1} MiB** (peak {:.1} MiB; anonymous {:.1}, mapped files {:.1})",
                mib(steady.rss_kib),
                mib(peak),
                mib(steady.last.anon_kib),
                mib(steady.last.file_kib)
            ),
            format!(
                "≤ {MAX_STEADY_MIB} MiB: {}",
                verdict(mib(steady.rss_kib) <= MAX_STEADY_MIB)
            ),
        );
        self.row(
            "RSS added by the unrelated 100 KiB Secrets".into(),
            format!(
                "**{added:+.1} MiB** ({:.1} MiB, peak {:.1} MiB)",
                mib(with_bulk.rss_kib),
                mib(peak_bulk)
            ),
            format!(
                "< {MAX_BULK_ADDED_MIB} MiB: {}",
                verdict(added < MAX_BULK_ADDED_MIB)
            ),
        );
        self.row(
            "Idle CPU after convergence".into(),
            format!("{:.2} % of a core", steady.cpu * 100.0),
            String::new(),
        );
        self.row(
            format!(
                "Apiserver connections / threads / fds, steady with {n} of each (most over the window; with the bulk Secrets)"
            ),
            format!(
                "**{}** ({})",
                handles(steady.handles),
                handles(with_bulk.handles)
            ),
            String::new(),
        );
    }

    /// Rotation latencies (sorted), ours and the floor's.
    /// The controller's requests per new version after a rotation and after
    /// an edit that rotates nothing (`count` of each): the edit's may be one
    /// more, the GET of the previous version whose values it carries over.
    pub fn requests_per_change(&mut self, count: usize, rotations: &Counts, edits: &Counts) {
        let per = |c: &Counts| {
            let mine = apimetrics::only(c, OURS);
            let breakdown = mine
                .iter()
                .map(|((verb, res), v)| format!("{verb} {res} {:.2}", v / count as f64))
                .collect::<Vec<_>>()
                .join(", ");
            (apimetrics::total(&mine) / count as f64, breakdown)
        };
        let ((rotation, rb), (edit, eb)) = (per(rotations), per(edits));
        self.push(
            "requests_per_change",
            json!({"changes": count, "per_rotation": rotation, "per_static_edit": edit,
                   "rotation_requests": by_verb(rotations), "static_edit_requests": by_verb(edits)}),
        );
        self.row(
            format!("API requests per new version: rotation / static edit ({count} each)"),
            format!("{rotation:.2} ({rb}) / **{edit:.2}** ({eb})"),
            format!(
                "edit ≤ rotation + 1 (the carry-over GET): {}",
                verdict(edit <= rotation + 1.0)
            ),
        );
    }

    pub fn rotation(
        &mut self,
        count: usize,
        rate: f64,
        ours: &[Duration],
        floor: Option<&[Duration]>,
    ) {
        let (p50, p99, max) = stats(ours);
        let distribution = |l: &[Duration]| {
            charts::distribution(
                &l.iter()
                    .map(|d| d.as_secs_f64() * 1000.0)
                    .collect::<Vec<_>>(),
            )
        };
        let floor_json = floor.map(|f| {
            let (p50, p99, max) = stats(f);
            json!({"p50_ms": p50, "p99_ms": p99, "max_ms": max, "distribution": distribution(f)})
        });
        self.json.insert(
            "rotation".into(),
            json!({"rotations": count, "rate_per_s": rate, "p50_ms": p50, "p99_ms": p99, "max_ms": max, "floor": floor_json,
                   "distribution": distribution(ours)}),
        );
        let floor_text = floor.map_or(String::new(), |f| {
            let (fp50, fp99, fmax) = stats(f);
            format!("; floor {fp50:.1} ms / {fp99:.1} ms (max {fmax:.1} ms)")
        });
        // Against the floor when there is one (issue 33's targets), else
        // against a fixed bound.
        let target = match floor {
            Some(f) => {
                let (_, fp99, fmax) = stats(f);
                format!(
                    "p99 ≤ floor's + {P99_OVER_FLOOR_MS} ms: {}; max ≤ floor's + {MAX_OVER_FLOOR_MS} ms: {}",
                    verdict(p99 <= fp99 + P99_OVER_FLOOR_MS),
                    verdict(max <= fmax + MAX_OVER_FLOOR_MS)
                )
            }
            None => format!(
                "p99 < {MAX_ROTATION_P99_MS} ms: {}",
                verdict(p99 < MAX_ROTATION_P99_MS)
            ),
        };
        self.row(
            format!("Rotation latency ({count} at {rate}/s): p50 / p99"),
            format!("{p50:.1} ms / **{p99:.1} ms** (max {max:.1} ms){floor_text}"),
            target,
        );
    }

    /// The slowest rotations one by one: where each one's time went.
    pub fn slowest_rotations(&mut self, all: &[slowest::Slow]) {
        self.rotation_field("slowest", slowest::json(all));
        self.row(
            format!(
                "The {} slowest rotations, one by one (ms: to the controller, its phases, after)",
                all.len()
            ),
            all.iter().map(slowest::text).collect::<Vec<_>>().join("; "),
            "(no target)".into(),
        );
    }

    /// The warm-up rotations before the timed ones, in the order sent: what
    /// the first writes after a pause cost (ours after the floor's set was
    /// made, the floor's after its set was made).
    pub fn warm_up(&mut self, floor: Option<&[Duration]>, ours: &[Duration]) {
        let ms = |l: &[Duration]| {
            l.iter()
                .map(|d| d.as_secs_f64() * 1000.0)
                .collect::<Vec<_>>()
        };
        let text = |l: &[Duration]| {
            ms(l)
                .iter()
                .map(|m| format!("{m:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        self.rotation_field(
            "warm_up_ms",
            json!({"floor": floor.map(ms), "ours": ms(ours)}),
        );
        self.row(
            format!(
                "The {} rotations before the timed ones (not in them), in the order sent (ms)",
                ours.len()
            ),
            format!(
                "ours {}{}",
                text(ours),
                floor.map_or(String::new(), |f| format!("; floor {}", text(f)))
            ),
            "(no target)".into(),
        );
    }

    /// `key` of the `rotation` object of `results.json` ([`Self::rotation`]
    /// makes it; the fields after it add to it).
    fn rotation_field(&mut self, key: &str, value: Value) {
        self.json
            .entry("rotation")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("rotation is an object")
            .insert(key.into(), value);
    }

    /// Each rotation's send time (Unix seconds) and latency (ms), the
    /// floor's and ours, under `rotation.timeline` in `results.json`: a slow
    /// one can be set beside the apiserver's log of the same moment.
    pub fn rotation_timeline(
        &mut self,
        floor: Option<&[(SystemTime, Duration)]>,
        ours: &[(SystemTime, Duration)],
    ) {
        let points = |l: &[(SystemTime, Duration)]| {
            l.iter()
                .map(|(sent, took)| {
                    let unix = sent.duration_since(UNIX_EPOCH).unwrap_or_default();
                    json!([unix.as_secs_f64(), took.as_secs_f64() * 1000.0])
                })
                .collect::<Vec<_>>()
        };
        self.rotation_field(
            "timeline",
            json!({"floor": floor.map(points), "ours": points(ours)}),
        );
    }

    /// Where the controller's time went over part `what` of the run (its
    /// `randomsecret_phase_seconds`), under `key` in `results.json`.
    /// The rotation writes as the apiserver timed them, the floor's and
    /// ours: a slow answer the controller saw that the apiserver did not
    /// time slow was slow on the way to the controller.
    pub fn api_times(&mut self, count: usize, floor: Option<&ApiTimes>, ours: &ApiTimes) {
        self.json.insert(
            "rotation_apiserver".into(),
            json!({"floor": floor.map(ApiTimes::json), "ours": ours.json()}),
        );
        let floor = floor.map_or(String::new(), |f| format!("; floor: {}", f.text()));
        self.row(
            format!(
                "The apiserver's own time on the writes of {count} rotations: answers over 25 / 50 / 100 ms"
            ),
            format!("ours: {}{floor}", ours.text()),
            "(no target)".into(),
        );
    }

    /// The apiserver's watch-cache consistency checks over the run: off in
    /// the benchmark's apiserver (e2e/bench.sh), or every timed window
    /// that holds one is slow for its sake ([`crate::cachechecks`]).
    pub fn cache_checks(&mut self, run: &crate::cachechecks::Run) {
        self.json.insert("consistency_checks".into(), run.json());
        self.row(
            "The apiserver's watch-cache consistency checks (DetectCacheInconsistency) over the run".into(),
            run.text(),
            "off, 0 checks (each makes every answer slow for seconds)".into(),
        );
    }

    pub fn phase_times(&mut self, what: &str, key: &str, times: &[PhaseTime]) {
        self.json
            .entry("phase_times")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("phase_times is an object")
            .insert(key.into(), phasetimes::json(times));
        self.row(
            format!("Where the controller's time went: {what} (bucket bounds, ms)"),
            phasetimes::text(times),
            "(no target)".into(),
        );
    }

    /// The webhook phase: latency as the apiserver measured it, and the
    /// webhook's own time per review.
    /// `within`: the share of calls the apiserver timed at 5 ms or less
    /// (p99 < 5 ms exactly when it is 99 % or more).
    pub fn webhook(
        &mut self,
        count: usize,
        rate: f64,
        filled: usize,
        within: f64,
        apiserver: (f64, f64),
        ours: (f64, f64),
    ) {
        self.json.insert(
            "webhook".into(),
            json!({"creates": count, "rate_per_s": rate, "filled": filled, "share_within_5ms": within,
                   "apiserver_p50_ms": apiserver.0, "apiserver_p99_ms": apiserver.1,
                   "webhook_p50_ms": ours.0, "webhook_p99_ms": ours.1}),
        );
        self.row(
            format!("Webhook latency (apiserver, {count} creates at {rate}/s): within 5 ms; p50 / p99"),
            format!(
                "**{:.1} %**; {:.2} ms / {:.2} ms (interpolated within the apiserver's buckets; in the webhook: {:.3} / {:.3} ms; {filled} filled)",
                within * 100.0,
                apiserver.0,
                apiserver.1,
                ours.0,
                ours.1
            ),
            format!(
                "p99 < {MAX_WEBHOOK_P99_MS} ms: {}",
                verdict(within >= 0.99)
            ),
        );
    }

    /// The webhook flood: the controller's peak RSS under maximal reviews
    /// from many clients, against the chart's memory limit.
    pub fn webhook_flood(
        &mut self,
        clients: usize,
        requests: usize,
        before: u64,
        peak: u64,
        statuses: &str,
        alive: bool,
    ) {
        const CHART_LIMIT: u64 = 256 << 20;
        self.json.insert(
            "webhook_flood".into(),
            json!({"clients": clients, "requests": requests, "peak_rss_before_mib": before >> 20,
                   "peak_rss_mib": peak >> 20, "statuses": statuses, "alive": alive}),
        );
        self.row(
            format!("Webhook flood: {clients} clients, {requests} reviews of 8 MiB and 3 MiB straight to the port; peak RSS"),
            format!("**{} MiB** (from {} MiB; {statuses})", peak >> 20, before >> 20),
            format!(
                "within the chart's limit (256 MiB), alive: {}",
                verdict(peak < CHART_LIMIT && alive)
            ),
        );
    }

    /// The push phase: create and rotation to VaultSynced, the controller's
    /// time per push, and what a restart wrote (nothing is the promise).
    pub fn vault_push(&mut self, p: &Pushed) {
        let stats = |l: &[Duration]| (percentile_ms(l, 50.0), percentile_ms(l, 99.0));
        let (c50, c99) = stats(&p.create);
        let (r50, r99) = stats(&p.rotate);
        self.json.insert(
            "push".into(),
            json!({"randomsecrets": p.count, "rate_per_s": p.rate,
                   "create_p50_ms": c50, "create_p99_ms": c99,
                   "rotation_p50_ms": r50, "rotation_p99_ms": r99,
                   "push_p50_ms": p.push_ms.0, "push_p99_ms": p.push_ms.1,
                   "restart_written": p.restart_written, "restart_unchanged": p.restart_unchanged}),
        );
        self.row(
            format!(
                "Push to OpenBao ({} creates, then {} rotations, at {}/s): to VaultSynced p50 / p99",
                p.count, p.count, p.rate
            ),
            format!(
                "create {c50:.1} / {c99:.1} ms; rotation {r50:.1} / **{r99:.1} ms**; one push {:.1} / {:.1} ms (interpolated within the controller's buckets)",
                p.push_ms.0, p.push_ms.1
            ),
            "(no target)".into(),
        );
        self.row(
            format!("Push: a restart with {} pushed", p.count),
            format!(
                "{} compared unchanged, **{} KV versions written**",
                p.restart_unchanged, p.restart_written
            ),
            format!("none written: {}", verdict(p.restart_written == 0.0)),
        );
    }

    pub fn startup(&mut self, n: usize, r: &Restart) {
        let lists = apimetrics::verb_on(&r.requests, "LIST", WATCHED);
        // Every write the controller could make; its Secret GETs apart (one
        // is expected: the proof key, read at start).
        let ours = apimetrics::only(&r.requests, OURS);
        let gets = apimetrics::verb_on(&ours, "GET", &["secrets"]);
        let writes = apimetrics::total(&ours) - gets;
        self.json.insert(
            "startup".into(),
            json!({"n": n, "ready_s": secs(r.ready), "all_reconciled_s": secs(r.all), "lists": lists, "writes": writes, "secret_gets": gets,
                   "requests": by_verb(&r.requests), "rss_mib": mib(r.steady.rss_kib), "peak_rss_mib": mib(r.peak_kib),
                   "restart": restart_json(r)}),
        );
        self.row(
            format!("Startup with {n} existing: ready / all reconciled; the floor (the same streams read bare)"),
            format!(
                "{:.2} s / **{:.2} s**; {:.2} s; {lists} LISTs, {writes} writes, {gets} Secret GETs (1: the proof key)",
                r.ready.as_secs_f64(),
                r.all.as_secs_f64(),
                r.floor.as_secs_f64(),
            ),
            format!("no writes: {}", verdict(writes == 0.0)),
        );
        self.row(
            format!(
                "Peak RSS during the restart with {n} existing: initial lists (until ready) / until all reconciled; steady after"
            ),
            format!(
                "{:.1} MiB / **{:.1} MiB**; {:.1} MiB",
                mib(r.peak_ready_kib),
                mib(r.peak_kib),
                mib(r.steady.rss_kib)
            ),
            format!(
                "≤ {MAX_RESTART_PEAK_MIB} MiB: {}",
                verdict(mib(r.peak_kib) <= MAX_RESTART_PEAK_MIB)
            ),
        );
    }

    /// The per-object metrics' cost at `n`: steady RSS (scraped every 2 s)
    /// with them off and on, and what a scrape is.
    pub fn object_metrics(&mut self, n: usize, runs: &[ObjectMetricsRun]) {
        let run = |on: bool| runs.iter().find(|r| r.on == on);
        let (Some(off), Some(on)) = (run(false), run(true)) else {
            return;
        };
        let json_of = |r: &ObjectMetricsRun| {
            json!({"rss_mib": mib(r.steady.rss_kib), "peak_rss_mib": mib(r.peak_kib),
                   "anon_mib": mib(r.steady.last.anon_kib), "scrape_kib": r.scrape_bytes as f64 / 1024.0,
                   "slowest_scrape_ms": r.slowest_scrape.as_secs_f64() * 1e3, "scrapes": r.scrapes})
        };
        self.json.insert(
            "object_metrics".into(),
            json!({"n": n, "off": json_of(off), "on": json_of(on)}),
        );
        self.row(
            format!(
                "Per-object metrics, {n} RandomSecrets (scraped every 2 s): steady RSS off / on (peak); /metrics off / on; slowest scrape on"
            ),
            format!(
                "{:.1} / **{:.1} MiB** ({:.1} / {:.1}); {:.0} / {:.0} KiB; {:.0} ms",
                mib(off.steady.rss_kib),
                mib(on.steady.rss_kib),
                mib(off.peak_kib),
                mib(on.peak_kib),
                off.scrape_bytes as f64 / 1024.0,
                on.scrape_bytes as f64 / 1024.0,
                on.slowest_scrape.as_secs_f64() * 1e3
            ),
            format!(
                "on ≤ {MAX_STEADY_MIB} MiB: {}",
                verdict(mib(on.steady.rss_kib) <= MAX_STEADY_MIB)
            ),
        );
    }

    /// The scale phase: steady RSS as the set grows, per 10,000 more, and a
    /// restart with all (`base`: the restart it began with).
    pub fn scale(&mut self, base: &Restart, points: &[ScalePoint], requests: &Counts, r: &Restart) {
        let (first, last) = (&points[0], &points[points.len() - 1]);
        let per_10k = |a: &ScalePoint, b: &ScalePoint| {
            (mib(b.steady.rss_kib) - mib(a.steady.rss_kib)) * 10_000.0 / (b.n - a.n) as f64
        };
        let overall = per_10k(first, last);
        let steps: Vec<f64> = points.windows(2).map(|w| per_10k(&w[0], &w[1])).collect();
        let added = (last.n - first.n) as f64;
        let mine = apimetrics::only(requests, OURS);
        let per_version = apimetrics::total(&mine) / added;
        let lists = apimetrics::verb_on(requests, "LIST", WATCHED);
        let lists_restart = apimetrics::verb_on(&r.requests, "LIST", WATCHED);
        // Every write the controller could make on restart (its Secret GETs apart).
        let ours_restart = apimetrics::only(&r.requests, OURS);
        let writes_restart = apimetrics::total(&ours_restart)
            - apimetrics::verb_on(&ours_restart, "GET", &["secrets"]);
        self.json.insert(
            "scale".into(),
            json!({
                "points": points.iter().map(|p| json!({"n": p.n, "steady_rss_mib": mib(p.steady.rss_kib),
                    "create_until_ready_s": secs(p.took), "idle_cpu_percent": p.steady.cpu * 100.0,
                    "handles": p.steady.handles.json()})).collect::<Vec<_>>(),
                "mib_per_10k": overall, "mib_per_10k_by_step": steps,
                "requests_per_version": per_version, "lists_after_start": lists, "requests": by_verb(requests),
                "base_restart": {"n": first.n, "ready_s": secs(base.ready), "all_reconciled_s": secs(base.all),
                                 "memory": restart_json(base)},
                "restart": {"n": last.n, "ready_s": secs(r.ready), "all_reconciled_s": secs(r.all),
                            "lists": lists_restart, "writes": writes_restart, "requests": by_verb(&r.requests), "memory": restart_json(r)},
            }),
        );
        let fmt_n = |n: usize| {
            if n.is_multiple_of(1000) {
                format!("{}k", n / 1000)
            } else {
                n.to_string()
            }
        };
        // Issue 31's figures for one replica at 100,000: steady RSS at most
        // 100 MiB; a restart ready in under 10 s with no write, its peak at
        // most 120 MiB.
        let at_100k = last.n >= 100_000;
        let target = |text: String| if at_100k { text } else { String::new() };
        self.row(
            "Steady RSS by RandomSecrets (each with its Secret and a ReplicaSet reading it)".into(),
            points
                .iter()
                .map(|p| {
                    let v = format!("{}: {:.1} MiB", fmt_n(p.n), mib(p.steady.rss_kib));
                    if p.n == last.n { format!("**{v}**") } else { v }
                })
                .collect::<Vec<_>>()
                .join(", "),
            target(format!(
                "≤ 100 MiB at 100k: {}",
                verdict(mib(last.steady.rss_kib) <= 100.0)
            )),
        );
        self.row(
            format!(
                "RSS per 10,000 more RandomSecrets, {} → {}",
                fmt_n(first.n),
                fmt_n(last.n)
            ),
            format!(
                "**{overall:.2} MiB** (by step: {})",
                steps
                    .iter()
                    .map(|s| format!("{s:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "linear: steps alike".into(),
        );
        self.row(
            format!(
                "Growth {} → {}: seconds per 10,000 Ready; requests per version; LISTs; connections / threads / fds at {}",
                fmt_n(first.n),
                fmt_n(last.n),
                fmt_n(last.n)
            ),
            format!(
                "{}; {per_version:.4}; {lists}; {}",
                points[1..]
                    .iter()
                    .zip(points.windows(2))
                    .map(|(p, w)| format!(
                        "{:.1}",
                        p.took.as_secs_f64() * 10_000.0 / (w[1].n - w[0].n) as f64
                    ))
                    .collect::<Vec<_>>()
                    .join(" / "),
                handles(last.steady.handles)
            ),
            String::new(),
        );
        self.row(
            format!(
                "Restart with {} existing: ready / all reconciled (the floor: the same streams read bare); peak RSS until ready / until all reconciled; steady after",
                last.n
            ),
            format!(
                "{:.2} s / {:.2} s ({:.2} s); {:.1} MiB / **{:.1} MiB**; {:.1} MiB ({lists_restart} LISTs, {writes_restart} writes)",
                r.ready.as_secs_f64(),
                r.all.as_secs_f64(),
                r.floor.as_secs_f64(),
                mib(r.peak_ready_kib),
                mib(r.peak_kib),
                mib(r.steady.rss_kib)
            ),
            target(format!(
                "ready < 10 s, peak ≤ 120 MiB, no writes at 100k: {}",
                verdict(
                    r.ready.as_secs_f64() < 10.0
                        && mib(r.peak_kib) <= 120.0
                        && writes_restart == 0.0
                )
            )),
        );
    }

    /// The shards phase: each shard's steady RSS, their total, one
    /// replica's on the same objects.
    pub fn shards(&mut self, s: &crate::shards::Sharded) {
        let each: Vec<f64> = s.steady.iter().map(|x| mib(x.rss_kib)).collect();
        let total: f64 = each.iter().sum();
        let single = mib(s.single.rss_kib);
        self.json.insert(
            "shards".into(),
            json!({"shards": s.shards, "n": s.n, "converged_s": secs(s.converged),
                   "steady_rss_mib": each, "total_rss_mib": total, "single_replica_rss_mib": single,
                   "idle_cpu_percent": s.steady.iter().map(|x| x.cpu * 100.0).collect::<Vec<_>>()}),
        );
        self.row(
            format!(
                "Shards: {} over {} RandomSecrets (each with its Secret and a ReplicaSet): converged; steady RSS of each; total / one replica's",
                s.shards, s.n
            ),
            format!(
                "{:.1} s; {} MiB; **{total:.1} MiB** / {single:.1} MiB ({:.2}x)",
                s.converged.as_secs_f64(),
                each.iter()
                    .map(|m| format!("{m:.1}"))
                    .collect::<Vec<_>>()
                    .join(" / "),
                total / single
            ),
            "each shard below one replica".into(),
        );
    }

    pub fn failover(&mut self, signal: &str, leads: Duration, ready: Duration) {
        self.push("failover", json!({"signal": signal, "standby_leads_s": secs(leads), "new_object_ready_s": secs(ready)}));
        self.row(
            format!("Failover after {signal} of the leader: standby leads / new object Ready"),
            format!(
                "{:.2} s / **{:.2} s**",
                leads.as_secs_f64(),
                ready.as_secs_f64()
            ),
            "lease 15 s, renew 10 s, retry 2 s".into(),
        );
    }

    pub fn peer(&mut self, n: usize, name: &str, r: PeerResult) {
        let ours = self.ours.iter().find(|(m, _)| *m == n).map(|(_, t)| *t);
        let ahead = ours.map(|t| t < r.took.as_secs_f64());
        self.push(
            "peer",
            json!({"n": n, "peer": name, "took_s": secs(r.took), "randomsecret_s": ours,
                   "curve": charts::curve(&seconds(&r.ready)),
                   "rss_mib": mib(r.rss_kib), "peak_rss_mib": mib(r.peak_kib), "requests": by_verb(&r.requests)}),
        );
        self.row(
            format!("Peer ({name}) N={n}: time / RSS (peak)"),
            format!(
                "**{:.2} s** (randomsecret {:.2} s) / {:.1} MiB ({:.1})",
                r.took.as_secs_f64(),
                ours.unwrap_or(f64::NAN),
                mib(r.rss_kib),
                mib(r.peak_kib)
            ),
            format!("randomsecret ahead: {}", verdict(ahead == Some(true))),
        );
    }

    pub fn finish(mut self, out: &std::path::Path, charts: &std::path::Path) -> Result<()> {
        std::fs::create_dir_all(out)?;
        self.json.insert(
            "finished".into(),
            json!(k8s_openapi::jiff::Timestamp::now().to_string()),
        );
        let mut table = String::from("| Measure | Result | Target |\n|---|---|---|\n");
        for (a, b, c) in &self.rows {
            table.push_str(&format!("| {a} | {b} | {c} |\n"));
        }
        self.json.insert("table".into(), json!(table));
        std::fs::write(
            out.join("results.json"),
            serde_json::to_string_pretty(&Value::Object(self.json.clone()))?,
        )?;
        std::fs::write(out.join("table.md"), &table)?;
        for chart in charts::render(&Value::Object(self.json.clone()), charts)? {
            eprintln!("bench: drew {}", chart.display());
        }
        println!("\n{table}");
        eprintln!("bench: wrote {}", out.join("results.json").display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_of_the_pairs() {
        let s = |v: &[f64]| Spread::of(v);
        assert_eq!(s(&[]), None);
        assert_eq!(
            s(&[1.2, 1.0, 1.1]),
            Some(Spread {
                median: 1.1,
                min: 1.0,
                max: 1.2
            })
        );
        assert_eq!(s(&[1.3, 1.0, 1.1, 1.2]).unwrap().median, 1.15);
    }

    fn cpu(apiserver: f64) -> crate::procstat::CpuSplit {
        let mut c = crate::procstat::CpuSplit::default();
        c.by_process.insert("kube-apiserver".into(), apiserver);
        c
    }

    #[test]
    fn each_pair_keeps_both_sides_cpu_and_the_row_names_the_restarts() {
        use clap::Parser;
        let args = |line: &[&str]| {
            Args::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap()
        };
        let pairs = [
            Pair {
                floor: Some((Duration::from_secs(10), cpu(15.0))),
                ours: (Duration::from_secs(11), cpu(16.5)),
                ours_first: false,
            },
            Pair {
                floor: Some((Duration::from_secs(10), cpu(14.0))),
                ours: (Duration::from_secs(10), cpu(14.5)),
                ours_first: true,
            },
        ];
        let mut r = Report::new(&args(&[]), None);
        r.interleaved(1000, &pairs);
        let json = &r.json["interleaved"][0];
        assert_eq!(json["pairs"][0]["ratio"], 1.1);
        assert_eq!(
            json["pairs"][0]["randomsecret_cpu"]["by_process_s"]["kube-apiserver"],
            16.5
        );
        assert_eq!(
            json["pairs"][1]["floor_cpu"]["by_process_s"]["kube-apiserver"],
            14.0
        );
        assert_eq!(json["median_ours_first"], 1.0);
        assert!(
            r.rows[0]
                .0
                .contains("each run on a restarted control plane")
        );
        assert!(r.rows[0].1.starts_with("**1.05x** (1.00x to 1.10x)"));

        let mut kept = Report::new(&args(&["--no-restarts"]), None);
        kept.interleaved(1000, &pairs);
        assert!(kept.rows[0].0.contains("each run on a compacted etcd)"));
        assert_eq!(kept.json["settings"]["restarts"], false);
    }
}
