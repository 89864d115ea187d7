//! Running one watch into a cache: the generic feed that every watch of the
//! controller and every downstream cluster's watch (`push::clusters::link`)
//! runs, with the failures and relists recorded in [`Interruptions`].
//! How the initial state is read (streamed or in pages) is the caller's
//! `config` (`super::lists`).

use super::Key;
use super::interruptions::Interruptions;
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use std::fmt::Debug;
use tokio::sync::mpsc::UnboundedSender;

/// A namespaced kind that `watcher` can watch.
pub trait Watched:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Debug
    + serde::de::DeserializeOwned
    + Send
    + 'static
{
}
impl<K> Watched for K where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Debug
        + serde::de::DeserializeOwned
        + Send
        + 'static
{
}

/// Runs a watch of `api` (with backoff), handing each event to
/// `apply` and sending the keys it returns to `triggers`. Failures go to
/// `failed` (which logs them) and, with relists, to `interruptions`; when every watch recorded
/// there flows again, `recovered` runs. Also used for downstream clusters
/// (`push::clusters`), each with interruptions of its own.
#[allow(clippy::too_many_arguments)]
pub async fn feed<K>(
    api: Api<K>,
    what: &'static str,
    config: watcher::Config,
    interruptions: &Interruptions,
    triggers: &UnboundedSender<Key>,
    mut apply: impl FnMut(&watcher::Event<K>) -> Vec<Key>,
    failed: impl Fn(watcher::Error),
    recovered: impl Fn(),
) where
    K: Resource + Clone + Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
    loop {
        let flows_again = tokio::select! {
            ev = events.next() => match ev {
                None => break,
                Some(Ok(ev)) => {
                    for key in apply(&ev) {
                        let _ = triggers.send(key);
                    }
                    interruptions.event(what, &ev)
                }
                // `failed` logs it: a downstream cluster's error may
                // quote what that cluster chose to send (even the copy we
                // sent it), so only the caller knows what may be written.
                Some(Err(e)) => {
                    failed(e);
                    interruptions.failed(what, std::time::Instant::now());
                    false
                }
            },
            _ = tick.tick() => interruptions.tick(std::time::Instant::now()),
        };
        if flows_again {
            recovered();
        }
    }
}
