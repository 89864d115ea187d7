//! How every watch of the controller reads its initial state: streamed from
//! the apiserver's watch cache (a streaming list, `sendInitialEvents`), or
//! in pages of [`PAGE_SIZE`].
//!
//! Pages cost more with the size of the set: each page of a paginated list
//! walks on from its continue token, and at 100,000 Secrets one list at 100 a
//! page took 13 s against 0.4 s at 10,000. A streaming list is served from
//! the watch cache in one response whose objects arrive (and are parsed) one
//! at a time, so nothing holds a page either. It needs the WatchList feature
//! (beta; on by default in Kubernetes 1.32 and from 1.34, off in 1.33):
//! [`probe`] asks the apiserver once at start, and an apiserver that refuses
//! it, or ignores it (an older one never sends the end of the initial
//! events), gets pages.

use crate::api::RandomSecret;
use futures::StreamExt;
use kube::api::{Api, WatchEvent, WatchParams};
use kube::runtime::watcher;
use std::time::Duration;
use tracing::{info, warn};

/// A page of a paginated list: a page is read whole before it is parsed, and
/// a page of 500 ReplicaSets is megabytes of transient heap that the
/// allocator keeps; 100 keeps that small.
pub const PAGE_SIZE: u32 = 100;

/// The bookmark annotation that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How long the probe waits for the end of its (empty) initial events.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// `--initial-lists`: what the operator asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Wanted {
    /// Stream where the apiserver can (asked once at start), else pages.
    Auto,
    /// Always stream (an apiserver without WatchList never gets ready).
    Stream,
    /// Always paginated lists.
    Pages,
}

/// How this controller's watches read their initial state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lists {
    Stream,
    Pages,
}

impl Lists {
    /// `config` with this way of listing.
    pub fn config(self, config: watcher::Config) -> watcher::Config {
        match self {
            Lists::Stream => config.streaming_lists(),
            Lists::Pages => config.page_size(PAGE_SIZE),
        }
    }

    /// What `wanted` comes to on the apiserver of `api`.
    pub async fn decide(wanted: Wanted, api: Api<RandomSecret>) -> Lists {
        let lists = match wanted {
            Wanted::Stream => Lists::Stream,
            Wanted::Pages => Lists::Pages,
            Wanted::Auto => probe(api).await,
        };
        info!(initial_lists = ?lists, asked = ?wanted, "how every watch reads its initial state");
        lists
    }
}

/// What the probe saw of a streaming list of nothing.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The bookmark that ends the initial events: streaming works.
    End,
    /// The apiserver refused the request (an API error, such as 422 without
    /// the WatchList feature).
    Refused,
    /// The stream ended, or went quiet, without that bookmark: an apiserver
    /// that ignores `sendInitialEvents`.
    NoEnd,
    /// No answer (a connection error): try again.
    Unreachable,
}

/// The decision from what the probe saw: streaming only when it ended as a
/// streaming list must; an apiserver never reached after a few tries gets
/// pages, which work everywhere.
fn decided(seen: &Seen) -> Option<Lists> {
    match seen {
        Seen::End => Some(Lists::Stream),
        Seen::Refused | Seen::NoEnd => Some(Lists::Pages),
        Seen::Unreachable => None,
    }
}

/// What a failed request says: an answer of the apiserver's about the
/// request (422 without WatchList) is a refusal; one about its own state
/// (429 while its watch cache (re)initialises, as after its restart, or a
/// 5xx) and no answer at all are worth another try.
fn failed(e: &kube::Error) -> Seen {
    match e {
        kube::Error::Api(s) if s.code == 429 || s.code >= 500 => Seen::Unreachable,
        kube::Error::Api(_) => Seen::Refused,
        _ => Seen::Unreachable,
    }
}

/// Asks for a streaming list of RandomSecrets that no object matches (the
/// controller may always watch RandomSecrets, and an empty answer is cheap).
async fn probe(api: Api<RandomSecret>) -> Lists {
    for attempt in 1..=3 {
        let seen = look(&api).await;
        if let Some(lists) = decided(&seen) {
            if lists == Lists::Pages {
                info!(seen = ?seen, "the apiserver does not stream lists (WatchList): paginated lists");
            }
            return lists;
        }
        warn!(
            attempt,
            "asking the apiserver whether it streams lists: no answer; again in a second"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Lists::Pages
}

async fn look(api: &Api<RandomSecret>) -> Seen {
    let params = WatchParams::streaming_lists()
        .labels("randomsecret.io/initial-lists-probe=none")
        .timeout(PROBE_TIMEOUT.as_secs() as u32);
    let stream = match api.watch(&params, "0").await {
        Ok(s) => s,
        Err(e) => return failed(&e),
    };
    let mut stream = std::pin::pin!(stream);
    let ended = tokio::time::timeout(PROBE_TIMEOUT, async {
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(WatchEvent::Bookmark(b))
                    if b.metadata.annotations.contains_key(INITIAL_EVENTS_END) =>
                {
                    return Seen::End;
                }
                Ok(WatchEvent::Error(e)) if e.code == 429 || e.code >= 500 => {
                    return Seen::Unreachable;
                }
                Ok(WatchEvent::Error(_)) => return Seen::Refused,
                Ok(_) => {}
                Err(_) => return Seen::Unreachable,
            }
        }
        Seen::NoEnd
    })
    .await;
    ended.unwrap_or(Seen::NoEnd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_end_of_the_initial_events_means_streaming() {
        assert_eq!(decided(&Seen::End), Some(Lists::Stream));
        assert_eq!(decided(&Seen::Refused), Some(Lists::Pages));
        assert_eq!(decided(&Seen::NoEnd), Some(Lists::Pages));
        assert_eq!(decided(&Seen::Unreachable), None);
    }

    #[test]
    fn a_refusal_pages_and_an_apiserver_busy_with_itself_is_asked_again() {
        let api = |code: u16| {
            kube::Error::Api(Box::new(
                kube::core::Status::failure("no", "Reason").with_code(code),
            ))
        };
        assert_eq!(failed(&api(422)), Seen::Refused);
        assert_eq!(failed(&api(400)), Seen::Refused);
        assert_eq!(failed(&api(429)), Seen::Unreachable);
        assert_eq!(failed(&api(503)), Seen::Unreachable);
    }

    #[test]
    fn pages_are_paginated_and_streams_ask_for_initial_events() {
        let pages = Lists::Pages.config(watcher::Config::default());
        assert_eq!(pages.page_size, Some(PAGE_SIZE));
        assert_eq!(
            pages.initial_list_strategy,
            watcher::InitialListStrategy::ListWatch
        );
        let stream = Lists::Stream.config(watcher::Config::default().labels("a=b"));
        assert_eq!(
            stream.initial_list_strategy,
            watcher::InitialListStrategy::StreamingList
        );
        assert_eq!(stream.label_selector.as_deref(), Some("a=b"));
    }
}
