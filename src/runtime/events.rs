//! Kubernetes Events (events.k8s.io/v1) about RandomSecrets: queued and posted
//! in the background by one task, each once, off the reconcile path.
//!
//! Not kube-runtime's `Recorder`: it keeps every Event it sent for six minutes
//! (to patch a repeat into a series) and scans that cache on every publish. At
//! 10,000 new versions that is megabytes held and quadratic work, for Events
//! that never repeat: each names its own Secret, and a Warning is sent only
//! when the Stalled reason changes.
//!
//! The queue is bounded: when the apiserver is slower than the Events come,
//! the newest are dropped and counted (`randomsecret_events_dropped`), never
//! held in memory without limit or posted by a task each.

use crate::runtime::status::Answer as _;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tracing::{Instrument as _, debug, warn};

/// How many Events may wait to be posted.
pub const QUEUE: usize = 1024;
/// How many are posted at once: as many as reconciles run (the default
/// `--concurrency`), so Events keep up with a burst of new versions (with 4,
/// a burst of 10,000 dropped about 40 % of them).
const IN_FLIGHT: usize = 16;

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// Who reports the Events: the controller and this replica.
#[derive(Clone, Debug)]
pub struct Reporter {
    pub controller: String,
    pub instance: String,
}

/// The Event, named like kubectl's and client-go's (`<object>.<hex time>`).
/// The longest note an Event gets (the apiserver takes up to 1 KiB): a
/// longer one (a message quoting a long path or many names) is cut at a
/// character boundary and says so.
pub const MAX_NOTE: usize = 1024;

/// `text` cut to at most `max` bytes, ending in "..." when cut.
pub fn truncate(mut text: String, max: usize) -> String {
    const MORE: &str = "...";
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub(MORE.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(MORE);
    text
}

pub fn build(
    reporter: &Reporter,
    regarding: ObjectReference,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
) -> Event {
    let now = k8s_openapi::jiff::Timestamp::now();
    Event {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{:x}",
                regarding.name.as_deref().unwrap_or(&reporter.controller),
                now.as_nanosecond()
            )),
            namespace: regarding.namespace.clone(),
            ..Default::default()
        },
        event_time: Some(MicroTime(now)),
        action: Some(action.to_string()),
        reason: Some(reason.to_string()),
        note: Some(truncate(note, MAX_NOTE)),
        type_: Some(format!("{type_:?}")),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(reporter.instance.clone()),
        regarding: Some(regarding),
        ..Default::default()
    }
}

/// The sending side; cheap to clone.
#[derive(Clone)]
pub struct Events {
    reporter: Reporter,
    queue: mpsc::Sender<Event>,
    dropped: Counter,
}

impl Events {
    /// The queue, and the task that posts what is queued (run it until the
    /// process ends; it stops when every `Events` is dropped).
    pub fn new(
        client: Client,
        reporter: Reporter,
        dropped: Counter,
    ) -> (Self, impl Future<Output = ()>) {
        let (queue, rx) = mpsc::channel(QUEUE);
        let poster = post_all(client, rx);
        (
            Events {
                reporter,
                queue,
                dropped,
            },
            poster,
        )
    }

    /// Queues an Event without waiting: Events are best effort, and a
    /// reconcile (a rotation, say) should not wait for one.
    pub fn publish(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let ev = build(&self.reporter, regarding, type_, reason, action, note);
        if self.queue.try_send(ev).is_err() {
            self.dropped.inc();
            debug!(reason, "event queue full or closed; event dropped");
        }
    }
}

async fn post_all(client: Client, rx: mpsc::Receiver<Event>) {
    use futures::StreamExt;
    let mut rx = rx;
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
        .for_each_concurrent(IN_FLIGHT, |ev| {
            let client = client.clone();
            async move {
                let ns = ev
                    .metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into());
                let api: Api<Event> = Api::namespaced(client, &ns);
                let posted = api
                    .create(&PostParams::default(), &ev)
                    .instrument(crate::phase!("event"))
                    .await;
                match posted {
                    // Expected while a namespace is deleted with its
                    // RandomSecrets in it: not a warning per object.
                    Err(kube::Error::Api(s)) if s.namespace_terminating() => {
                        debug!(namespace = %ns, "not publishing an event: its namespace is being deleted");
                    }
                    Err(e) => warn!(error = %e, "publishing event"),
                    Ok(_) => {}
                }
            }
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporter() -> Reporter {
        Reporter {
            controller: "randomsecret".into(),
            instance: "randomsecret-0".into(),
        }
    }

    fn regarding() -> ObjectReference {
        ObjectReference {
            api_version: Some("randomsecret.io/v1".into()),
            kind: Some("RandomSecret".into()),
            name: Some("db".into()),
            namespace: Some("shop".into()),
            ..Default::default()
        }
    }

    #[test]
    fn builds_a_complete_events_v1_event() {
        let ev = build(
            &reporter(),
            regarding(),
            EventType::Warning,
            "Bad",
            "Validate",
            "fix it".into(),
        );
        assert!(ev.metadata.name.as_deref().unwrap().starts_with("db."));
        assert_eq!(ev.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(ev.type_.as_deref(), Some("Warning"));
        assert_eq!(ev.reporting_instance.as_deref(), Some("randomsecret-0"));
        assert_eq!(ev.reporting_controller.as_deref(), Some("randomsecret"));
        assert!(ev.event_time.is_some() && ev.regarding.is_some());
    }

    /// A note over 1 KiB is refused by the apiserver (the Event is lost):
    /// it is cut, at a character boundary.
    #[test]
    fn a_long_note_is_cut_to_1_kib() {
        let long = "é".repeat(2000);
        let ev = build(
            &reporter(),
            regarding(),
            EventType::Warning,
            "Bad",
            "Validate",
            long,
        );
        let note = ev.note.unwrap();
        assert!(
            note.len() <= MAX_NOTE && note.ends_with("..."),
            "{}",
            note.len()
        );
        assert_eq!(truncate("short".into(), MAX_NOTE), "short");
        assert_eq!(truncate("abcdef".into(), 5), "ab...");
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_instead_of_growing() {
        // Nothing posts (the poster future is never run), so the queue fills.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let dropped = Counter::default();
        let (events, _poster) = Events::new(
            Client::try_from(config).unwrap(),
            reporter(),
            dropped.clone(),
        );
        for _ in 0..QUEUE + 10 {
            events.publish(regarding(), EventType::Normal, "R", "A", "n".into());
        }
        assert_eq!(dropped.get(), 10);
    }
}
