//! The rotation phase's timing: changes to a set sent at a fixed rate,
//! each timed from its send until the benchmark's watch sees it done; and
//! the floor's set and ours changed in alternating blocks, so that what the
//! machine does over the minutes of the phase falls on both sides alike.
//!
//! Until 2026-12-07 the floor's rotations ran on its own set minutes
//! before ours (before the controller started, which would otherwise have
//! taken that set over). One run's rotations were then slower throughout
//! on our side alone (p50 22.6 against the floor's 15.4 ms), though the
//! controller's own phases were slower by as much: the machine's drift,
//! falling on one side. Now the floor's set carries a shard label the
//! controller's `--shard-selector` leaves out ([`FLOOR_SHARD`]), so both
//! sets exist at once and the blocks alternate.

use crate::apimetrics::{self, Counts};
use crate::apitimes::{self, ApiTimes};
use crate::args::Args;
use crate::workload::{self, Done, place};
use anyhow::Result;
use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Client;
use randomsecret::api::RandomSecretSpec;
use randomsecret::shard::SHARD_KEY;
use randomsecret::version::Version;
use std::collections::HashMap;
use std::ops::Range;
use std::time::{Duration, Instant};

/// The value of [`SHARD_KEY`] on the floor's rotation set: the controller
/// runs as the default shard meanwhile (`--shard-selector
/// !sharding.randomsecret.io/key`), and the floor plays a shard of its own
/// whose controller is the benchmark's writes. Its Secrets carry the label
/// too, as a sharded controller's versions do, so neither of the
/// controller's watches delivers the floor's objects.
pub const FLOOR_SHARD: &str = "floor";

/// The controller's flag that leaves the floor's set out.
pub fn default_shard() -> String {
    format!("--shard-selector=!{SHARD_KEY}")
}

/// Changes sent before the timed ones, to objects no timed change touches
/// (between them: every (n / count)-th object is timed). The first writes
/// after a pause wait for new connections: the controller's pool closes
/// connections idle for 90 s. Our first two or three of 1,000 rotations
/// were our slowest in two runs in a row (133, 89 and 46 ms against the
/// floor's first, 71 ms; 2026-12-06), after the memory phase's pause; now
/// the controller has just restarted and waited while the floor's set was
/// made, and its first took 62 to 114 ms (2026-12-07): a cost of the pause,
/// not of the rate the window measures. They are timed and reported apart.
pub const WARM_UP: usize = 5;

/// Which objects a timed phase changes, and the spec they change to (for
/// the expected names).
pub struct Changed {
    pub spec: serde_json::Value,
    /// The first object changed: the rotation phase starts at 0, the edit
    /// phase at 1, so no object is changed twice.
    pub offset: usize,
}

/// How a change to object `i` is sent.
pub type Sender = Box<dyn Fn(usize) -> BoxFuture<'static, Result<()>> + Send + Sync>;

/// A [`Sender`] that calls `send(client, i)` with a client of its own.
pub fn sender<F, Fut>(client: &Client, send: F) -> Sender
where
    F: Fn(Client, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let client = client.clone();
    Box::new(move |i| send(client.clone(), i).boxed())
}

/// The changes to one set: the watch that times them, open from the
/// start, the objects they change (a warm-up and the timed ones), and how
/// each is sent.
pub struct Stream {
    pre: String,
    namespaces: usize,
    spec: RandomSecretSpec,
    interval: Duration,
    watch: workload::RotationWatch,
    send: Sender,
    warm: Vec<usize>,
    timed: Vec<usize>,
}

/// What one stream's changes did: the warm-up's and the timed ones, seen
/// done; and over its windows, what its writes took in the apiserver and
/// every client's requests meanwhile.
pub struct Side {
    pub warm: Vec<Done>,
    pub done: Vec<Done>,
    pub apiserver: ApiTimes,
    pub requests: Counts,
}

impl Stream {
    /// `--rotations` changes at `--rotation-rate` per second, spread over
    /// set `pre` of `n` objects (labelled `run`), each sent by `send(i)` and
    /// timed from then until a watch shows `status.secretName` at the new
    /// version's name (computed offline) and Ready; [`WARM_UP`] changes of
    /// the same kind first, when the set has room between the timed ones.
    /// Returns once the watch has its first list.
    pub async fn open(
        client: &Client,
        args: &Args,
        pre: &str,
        run: &str,
        n: usize,
        changed: Changed,
        send: Sender,
    ) -> Result<Stream> {
        let watch = workload::watch_rotations(client, run).await?;
        let (warm, timed) = objects(n, args.rotations.min(n), changed.offset);
        Ok(Stream {
            pre: pre.to_string(),
            namespaces: args.namespaces,
            spec: serde_json::from_value(changed.spec)?,
            interval: Duration::from_secs_f64(1.0 / args.rotation_rate),
            watch,
            send,
            warm,
            timed,
        })
    }

    /// The warm-up, an interval, then every timed change: one stream alone.
    pub async fn alone(&self) -> Result<(Vec<Done>, Vec<Done>)> {
        let warm = self.send_all(&self.warm).await?;
        tokio::time::sleep(self.interval).await;
        Ok((warm, self.send_all(&self.timed).await?))
    }

    /// Sends a change to each of `objects`, one every `interval`, and waits
    /// until each is seen done (2 minutes at most).
    async fn send_all(&self, objects: &[usize]) -> Result<Vec<Done>> {
        let start = Instant::now();
        // Each change is its own task, so that a slow one does not hold back the rate.
        let mut sends = Vec::new();
        for (k, &i) in objects.iter().enumerate() {
            tokio::time::sleep_until((start + self.interval * k as u32).into()).await;
            let (ns, name) = place(&self.pre, self.namespaces, i);
            let expected = Version::of(&self.spec, &name)?.secret_name;
            workload::mark_sent(&self.watch.pending, &ns, &name, expected);
            let sent = (self.send)(i);
            sends.push(tokio::spawn(async move {
                sent.await?;
                anyhow::Ok(((ns, name), std::time::SystemTime::now()))
            }));
        }
        let mut answered = HashMap::new();
        for s in sends {
            let (object, at) = s.await??;
            answered.insert(object, at);
        }
        let mut done = self.watch.seen_all().await?;
        for d in &mut done {
            d.answered = answered.get(&d.object).copied();
        }
        Ok(done)
    }
}

/// The streams' changes in windows ([`schedule`]): each stream's warm-up,
/// then its timed changes in blocks of `block`, the streams alternating.
/// Before the first window and after each, `quiet` waits until the
/// controller has settled (so that no write of one window falls in the
/// next), and the apiserver's metrics are read: each window's difference
/// is its stream's.
pub async fn interleaved<Q, Fut>(
    client: &Client,
    streams: &[Stream],
    block: usize,
    quiet: Q,
) -> Result<Vec<Side>>
where
    Q: Fn() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let timed = streams.first().map_or(0, |s| s.timed.len());
    anyhow::ensure!(
        streams.iter().all(|s| s.timed.len() == timed),
        "the interleaved streams change as many objects each"
    );
    let mut sides: Vec<Side> = streams
        .iter()
        .map(|_| Side {
            warm: Vec::new(),
            done: Vec::new(),
            apiserver: ApiTimes::none(),
            requests: Counts::new(),
        })
        .collect();
    quiet().await?;
    let mut before = Reading::take(client).await?;
    for w in schedule(streams.len(), timed, block) {
        let stream = &streams[w.stream];
        let objects = if w.warm_up {
            &stream.warm[..]
        } else {
            &stream.timed[w.timed.clone()]
        };
        let done = stream.send_all(objects).await?;
        quiet().await?;
        let after = Reading::take(client).await?;
        let side = &mut sides[w.stream];
        side.apiserver
            .add(&apitimes::delta(&before.times, &after.times));
        apimetrics::add(
            &mut side.requests,
            &apimetrics::delta(&before.requests, &after.requests),
        );
        if w.warm_up {
            side.warm.extend(done);
        } else {
            side.done.extend(done);
        }
        before = after;
    }
    Ok(sides)
}

/// One reading of the apiserver's `/metrics`: its request counters and
/// its histograms of the writes.
struct Reading {
    requests: Counts,
    times: apitimes::Snapshot,
}

impl Reading {
    async fn take(client: &Client) -> Result<Reading> {
        let text = apimetrics::text(client).await?;
        Ok(Reading {
            requests: apimetrics::parse(&text),
            times: apitimes::of(&text),
        })
    }
}

/// One window of [`interleaved`]: a stream's warm-up, or its timed
/// changes `timed` (indices into them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub stream: usize,
    pub warm_up: bool,
    pub timed: Range<usize>,
}

/// The windows in order: each stream's warm-up, then the `timed` changes
/// of each in blocks of `block`. With two streams the blocks go A B B A
/// A B ..., so that each runs first in every other round: a drift over
/// the phase (or a cost of following the other side) falls on both alike.
pub fn schedule(streams: usize, timed: usize, block: usize) -> Vec<Window> {
    let block = block.max(1);
    let mut out: Vec<Window> = (0..streams)
        .map(|stream| Window {
            stream,
            warm_up: true,
            timed: 0..0,
        })
        .collect();
    for (round, start) in (0..timed).step_by(block).enumerate() {
        let range = start..(start + block).min(timed);
        let order: Vec<usize> = if round % 2 == 0 {
            (0..streams).collect()
        } else {
            (0..streams).rev().collect()
        };
        out.extend(order.into_iter().map(|stream| Window {
            stream,
            warm_up: false,
            timed: range.clone(),
        }));
    }
    out
}

/// The objects a phase starting at `offset` changes: its warm-up and its
/// `count` timed ones, every (n / count)-th. The warm-up is halfway between
/// timed ones, so that the rotation phase (offset 0) and the edit phase
/// (offset 1) never change an object twice; none when the stride is
/// under 4 and there is no room.
fn objects(n: usize, count: usize, offset: usize) -> (Vec<usize>, Vec<usize>) {
    let stride = n / count;
    let warm = if stride >= 4 {
        (0..WARM_UP)
            .map(|k| (k * stride + offset + stride / 2) % n)
            .collect()
    } else {
        Vec::new()
    };
    (
        warm,
        (0..count).map(|k| (k * stride + offset) % n).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn no_object_is_changed_twice_by_the_rotation_and_edit_phases_and_their_warm_ups() {
        for (n, count) in [(10_000, 1_000), (2_000, 500), (1_000, 250), (100, 10)] {
            let (warm_r, rotations) = objects(n, count, 0);
            let (warm_e, edits) = objects(n, count, 1);
            assert_eq!((warm_r.len(), rotations.len()), (WARM_UP, count));
            let all: Vec<usize> = [warm_r, rotations, warm_e, edits].concat();
            let distinct: HashSet<_> = all.iter().collect();
            assert_eq!(distinct.len(), all.len(), "n={n} count={count}");
            assert!(all.iter().all(|&i| i < n));
        }
    }

    #[test]
    fn no_warm_up_without_room_between_the_timed_objects() {
        // 1,000 rotations of 2,000: every other object is timed.
        let (warm, timed) = objects(2_000, 1_000, 0);
        assert!(warm.is_empty());
        assert_eq!(timed.len(), 1_000);
    }

    #[test]
    fn two_streams_alternate_in_blocks_each_first_in_every_other_round() {
        let w = schedule(2, 250, 100);
        let order: Vec<(usize, bool, Range<usize>)> = w
            .iter()
            .map(|w| (w.stream, w.warm_up, w.timed.clone()))
            .collect();
        assert_eq!(
            order,
            vec![
                (0, true, 0..0),
                (1, true, 0..0),
                (0, false, 0..100),
                (1, false, 0..100),
                (1, false, 100..200),
                (0, false, 100..200),
                (0, false, 200..250),
                (1, false, 200..250),
            ]
        );
    }

    #[test]
    fn every_timed_change_of_each_stream_is_in_exactly_one_window_in_order() {
        for (streams, timed, block) in [(1, 1_000, 100), (2, 1_000, 100), (2, 7, 3), (2, 5, 0)] {
            let w = schedule(streams, timed, block);
            for s in 0..streams {
                let seen: Vec<usize> = w
                    .iter()
                    .filter(|w| w.stream == s && !w.warm_up)
                    .flat_map(|w| w.timed.clone())
                    .collect();
                assert_eq!(
                    seen,
                    (0..timed).collect::<Vec<_>>(),
                    "{streams} {timed} {block}"
                );
                let warm_ups = w.iter().filter(|w| w.stream == s && w.warm_up).count();
                assert_eq!(warm_ups, 1);
            }
            // The warm-ups come first.
            assert!(w[..streams].iter().all(|w| w.warm_up));
        }
    }
}
