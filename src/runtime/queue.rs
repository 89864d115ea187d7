//! The runner's queue: a key due now is taken at once; a key due later
//! (a requeue, a retry's backoff) waits in kube-runtime's scheduler.
//!
//! That scheduler keeps every key in a timer wheel of 1 ms ticks, so a key
//! due now waited for the wheel's next tick: about 1 ms at the median of
//! every rotation, the runner's whole share of it (issue 33). Keys due now
//! skip it. A key due now and also scheduled for later runs now and again
//! then (the scheduler alone would have merged them): a reconcile more,
//! never one less.

use crate::cache::Key;
use futures::stream::{BoxStream, Stream, StreamExt};
use kube::runtime::scheduler::{ScheduleRequest, Scheduler, scheduler};
use std::collections::{HashSet, VecDeque};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use tokio::time::Instant;

type Later = Scheduler<Key, BoxStream<'static, ScheduleRequest<Key>>>;

pub struct Queue<R> {
    incoming: Pin<Box<R>>,
    ended: bool,
    /// Keys due, in the order they came, each once.
    due: VecDeque<Key>,
    in_due: HashSet<Key>,
    later_tx: mpsc::UnboundedSender<ScheduleRequest<Key>>,
    later: Pin<Box<Later>>,
}

impl<R: Stream<Item = ScheduleRequest<Key>>> Queue<R> {
    pub fn new(incoming: R) -> Self {
        let (later_tx, mut later_rx) = mpsc::unbounded_channel();
        let requests = futures::stream::poll_fn(move |cx| later_rx.poll_recv(cx)).boxed();
        Queue {
            incoming: Box::pin(incoming),
            ended: false,
            due: VecDeque::new(),
            in_due: HashSet::new(),
            later_tx,
            later: Box::pin(scheduler(requests)),
        }
    }

    /// Takes in what came: due keys to `due` (once each), later ones to
    /// the scheduler.
    fn drain(&mut self, cx: &mut Context<'_>) {
        while !self.ended {
            match self.incoming.as_mut().poll_next(cx) {
                Poll::Ready(Some(request)) if request.run_at <= Instant::now() => {
                    if self.in_due.insert(request.message.clone()) {
                        self.due.push_back(request.message);
                    }
                }
                Poll::Ready(Some(request)) => {
                    let _ = self.later_tx.send(request);
                }
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => break,
            }
        }
    }

    /// The first key `can_take` accepts: due ones first, in order, then
    /// those whose time has come. A key it refuses (running) stays queued.
    /// None once nothing can come any more.
    pub fn poll_take(
        &mut self,
        cx: &mut Context<'_>,
        can_take: impl Fn(&Key) -> bool,
    ) -> Poll<Option<Key>> {
        self.drain(cx);
        if let Some(i) = self.due.iter().position(&can_take) {
            let key = self.due.remove(i).expect("the position is in the queue");
            self.in_due.remove(&key);
            return Poll::Ready(Some(key));
        }
        if let Poll::Ready(Some(key)) = self
            .later
            .as_mut()
            .hold_unless(&can_take)
            .poll_next_unpin(cx)
        {
            return Poll::Ready(Some(key));
        }
        if self.ended && self.due.is_empty() {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// While no key may be taken: takes in what comes (deduplicated here,
    /// not piling up in the channel). Ready(None) once nothing can come.
    pub fn poll_hold(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        self.drain(cx);
        if self.ended {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn now(k: &str) -> ScheduleRequest<Key> {
        ScheduleRequest {
            message: Key::new("n", k),
            run_at: Instant::now(),
        }
    }

    async fn take(
        q: &mut Queue<impl Stream<Item = ScheduleRequest<Key>>>,
        can: impl Fn(&Key) -> bool,
    ) -> Option<Key> {
        futures::future::poll_fn(|cx| q.poll_take(cx, &can)).await
    }

    /// A key due now is taken without the timer wheel's tick: with time
    /// paused, no time passes before it is taken.
    #[tokio::test(start_paused = true)]
    async fn a_due_key_is_taken_at_once_deduplicated_and_in_order() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut q = Queue::new(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        for k in ["a", "b", "a"] {
            tx.send(now(k)).unwrap();
        }
        let start = Instant::now();
        assert_eq!(take(&mut q, |_| true).await, Some(Key::new("n", "a")));
        assert_eq!(take(&mut q, |_| true).await, Some(Key::new("n", "b")));
        assert_eq!(start.elapsed(), Duration::ZERO);
        // A refused key (running) stays; the next one is taken.
        tx.send(now("c")).unwrap();
        tx.send(now("d")).unwrap();
        assert_eq!(
            take(&mut q, |k| k.name != "c").await,
            Some(Key::new("n", "d"))
        );
        assert_eq!(take(&mut q, |_| true).await, Some(Key::new("n", "c")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_key_waits_for_its_time_and_the_end_ends_it() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut q = Queue::new(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        let start = Instant::now();
        tx.send(ScheduleRequest {
            message: Key::new("n", "later"),
            run_at: start + Duration::from_secs(5),
        })
        .unwrap();
        tx.send(now("due")).unwrap();
        assert_eq!(take(&mut q, |_| true).await, Some(Key::new("n", "due")));
        assert_eq!(take(&mut q, |_| true).await, Some(Key::new("n", "later")));
        assert!(start.elapsed() >= Duration::from_secs(5));
        drop(tx);
        assert_eq!(take(&mut q, |_| true).await, None);
    }
}
