//! Where a reconcile's time goes: `randomsecret_phase_seconds{phase}`, a
//! histogram per phase, fed by `tracing` spans of target [`TARGET`] (a
//! span's wall time from its creation to its close, awaits included) and,
//! for the wait in the runner's queue, by [`observe`].
//!
//! The phases of a RandomSecret's reconcile, in order: `queued` (from the
//! trigger to the start), `carry_read` (the GET of the version a new one
//! carries values from), `generate` (values made and derived), `create`
//! (the new version's POST), `tracking`, `retention`, `status` (the status
//! write); `event` is the poster's POST of an Event, off the reconcile's
//! path. No label but the phase: nothing of an object is recorded.
//!
//! A process-wide layer needs a process-wide histogram: the family is a
//! static, and [`register`] adds it to a registry.
//!
//! One reconcile's phases, itemized ([`itemized`]): with `randomsecret::phase=debug`
//! in `--log-level`, each reconcile writes one line with its phases (and the
//! object's name, no value), so the slowest rotations of a run can be read
//! one by one (the benchmark does) where the histograms only give counts.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use tracing::Subscriber;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The target of phase spans (see [`phase!`](crate::phase)).
pub const TARGET: &str = "randomsecret::phase";

/// The span of phase `name`: `work.instrument(phase!("create")).await`.
#[macro_export]
macro_rules! phase {
    ($name:literal) => {
        tracing::trace_span!(target: $crate::runtime::phases::TARGET, $name)
    };
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabel {
    pub phase: &'static str,
}

fn new_histogram() -> Histogram {
    // 0.25 ms to 4 s: a rotation's phases are milliseconds; the tail is
    // what matters.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
}

type Phases = Family<PhaseLabel, Histogram, fn() -> Histogram>;

static SECONDS: LazyLock<Phases> = LazyLock::new(|| Family::new_with_constructor(new_histogram));

/// Records `took` for `phase` (for waits no span can cover).
pub fn observe(phase: &'static str, took: Duration) {
    SECONDS
        .get_or_create(&PhaseLabel { phase })
        .observe(took.as_secs_f64());
}

/// Adds the family to `registry` (under the registry's prefix).
pub fn register(registry: &mut Registry) {
    registry.register(
        "phase_seconds",
        "Time in each phase of a reconcile (queued, carry_read, generate, create, tracking, retention, status; event off its path)",
        SECONDS.clone(),
    );
}

/// The layer that times phase spans; it sees those alone, whatever the log
/// level (its filter is its own, decided once per callsite).
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    Timer.with_filter(tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span() && meta.target() == TARGET
    }))
}

tokio::task_local! {
    /// The phases closed so far in this reconcile, when it is itemized.
    static ITEMS: RefCell<Vec<(&'static str, Duration)>>;
}

/// The line [`itemized`] writes (what the benchmark looks for).
pub const ITEMIZED: &str = "reconcile phases";

/// Runs `work` (a reconcile of `key`, which waited `queued` for its slot);
/// when `itemize` and target [`TARGET`] is enabled at debug, then writes one line:
/// `took_ms` (from its start) and `phases`, `name:ms` in the order they
/// ended (`queued:1.08,create:3.27,retention:2.32,status:4.32`). Costs
/// nothing more when that level is off.
pub async fn itemized<T>(
    key: impl std::fmt::Display,
    itemize: bool,
    queued: Option<Duration>,
    work: impl Future<Output = T>,
) -> T {
    if !itemize || !tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
        return work.await;
    }
    let start = Instant::now();
    let items = RefCell::new(queued.map(|q| ("queued", q)).into_iter().collect());
    let (out, items) = ITEMS
        .scope(items, async {
            let out = work.await;
            (out, ITEMS.with(|i| i.take()))
        })
        .await;
    tracing::debug!(
        target: TARGET,
        randomsecret = %key,
        took_ms = format_args!("{:.2}", ms(start.elapsed())),
        phases = %listed(&items),
        "{ITEMIZED}"
    );
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `name:ms,...` (no spaces: one token of a text log line).
fn listed(items: &[(&'static str, Duration)]) -> String {
    let mut s = String::new();
    for (i, (name, took)) in items.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(s, "{sep}{name}:{:.2}", ms(*took));
    }
    s
}

struct Timer;

struct Started(Instant);

impl<S> Layer<S> for Timer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Started(Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && let Some(Started(at)) = span.extensions().get::<Started>()
        {
            let took = at.elapsed();
            observe(span.name(), took);
            // A span closes where its future is dropped: in the reconcile's
            // own task (the Event poster's is another, and not itemized).
            let _ = ITEMS.try_with(|i| i.borrow_mut().push((span.name(), took)));
        }
    }
}

/// Phase `phase`'s count and sum so far (tests of the phases' sources).
#[cfg(test)]
pub(crate) fn totals(phase: &str) -> (u64, f64) {
    let mut text = String::new();
    let mut r = Registry::default();
    register(&mut r);
    prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
    let value = |what: &str| {
        let line = format!("phase_seconds_{what}{{phase=\"{phase}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&line))
            .map_or(0.0, |n| n.parse().unwrap())
    };
    (value("count") as u64, value("sum"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Instrument as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    fn count(phase: &'static str) -> u64 {
        totals(phase).0
    }

    /// With `randomsecret::phase=debug`, an itemized reconcile writes one
    /// line: its object, its phases in the order they ended (queued first),
    /// its time. At info, no line.
    #[tokio::test]
    async fn an_itemized_reconcile_lists_its_phases_in_one_line() {
        use crate::testing::logs::Buffer;
        async fn reconcile() -> u8 {
            async {}
                .instrument(tracing::trace_span!(target: TARGET, "create"))
                .await;
            async { tokio::time::sleep(Duration::from_millis(3)).await }
                .instrument(tracing::trace_span!(target: TARGET, "status"))
                .await;
            7
        }
        let run = |level: &str| {
            let out = Buffer::default();
            let writer = out.clone();
            let subscriber = tracing_subscriber::registry().with(layer()).with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(move || writer.clone())
                    .with_filter(crate::runtime::logging::filter(level).unwrap()),
            );
            (out, tracing::subscriber::set_default(subscriber))
        };
        let (out, guard) = run("info,randomsecret::phase=debug");
        let key = crate::cache::Key::new("ns", "app");
        let got = itemized(&key, true, Some(Duration::from_micros(1500)), reconcile()).await;
        assert_eq!(got, 7);
        drop(guard);
        let text = out.text();
        let line = text
            .lines()
            .find(|l| l.contains(ITEMIZED))
            .unwrap_or_else(|| panic!("no itemized line: {text}"));
        assert!(line.contains("randomsecret=ns/app"), "{line}");
        let phases = line
            .split_whitespace()
            .find_map(|t| t.strip_prefix("phases="))
            .unwrap_or_else(|| panic!("{line}"));
        let items: Vec<(&str, f64)> = phases
            .split(',')
            .map(|i| {
                let (n, ms) = i.split_once(':').unwrap();
                (n, ms.parse().unwrap())
            })
            .collect();
        let names: Vec<&str> = items.iter().map(|i| i.0).collect();
        assert_eq!(names, ["queued", "create", "status"], "{line}");
        assert_eq!(items[0].1, 1.5, "{line}");
        assert!(items[2].1 >= 3.0, "{line}");
        assert_eq!(text.lines().filter(|l| l.contains(ITEMIZED)).count(), 1);

        let (out, guard) = run("info,randomsecret::phase=debug");
        assert_eq!(itemized(&key, false, None, reconcile()).await, 7);
        assert_eq!(out.text(), "", "not itemized: no line");
        drop(guard);
        let (out, _guard) = run("info");
        assert_eq!(itemized(&key, true, None, reconcile()).await, 7);
        assert_eq!(out.text(), "", "nothing at info");
    }

    /// A phase span's time (awaits included) lands in its phase; other
    /// spans and events, at any level, in none.
    #[tokio::test]
    async fn a_phase_span_is_timed_into_its_phase() {
        let subscriber = tracing_subscriber::registry().with(layer()).with(
            tracing_subscriber::fmt::layer()
                .with_filter(tracing_subscriber::filter::LevelFilter::ERROR),
        );
        let _guard = tracing::subscriber::set_default(subscriber);
        let before = count("test_phase");
        async { tokio::time::sleep(Duration::from_millis(3)).await }
            .instrument(tracing::trace_span!(target: TARGET, "test_phase"))
            .await;
        tracing::info_span!("test_phase").in_scope(|| ());
        assert_eq!(count("test_phase"), before + 1);
        let text = {
            let mut t = String::new();
            let mut r = Registry::default();
            register(&mut r);
            prometheus_client::encoding::text::encode(&mut t, &r).unwrap();
            t
        };
        // At least 3 ms of wall time: not within 2 ms.
        let bucket = |le: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with("phase_seconds_bucket{")
                        && l.contains("phase=\"test_phase\"")
                        && l.contains(&format!("le=\"{le}\""))
                })
                .and_then(|l| l.rsplit(' ').next())
                .map(|n| n.parse::<u64>().unwrap())
        };
        assert_eq!(bucket("0.002"), Some(0), "{text}");
        assert_eq!(bucket("+Inf"), Some(1), "{text}");
    }
}
