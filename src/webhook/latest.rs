//! The latest version of one object, watched by name (a field selector, so
//! RBAC can name it with resourceNames), published on a `watch` channel.

use futures::StreamExt;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use std::fmt::Debug;
use std::sync::Arc;
use tokio::sync::watch;
use tracing::warn;

/// What is known of the object.
#[derive(Debug)]
pub enum Seen<K> {
    /// Not listed yet.
    Unknown,
    Absent,
    Present(Arc<K>),
}

impl<K> Clone for Seen<K> {
    fn clone(&self) -> Self {
        match self {
            Seen::Unknown => Seen::Unknown,
            Seen::Absent => Seen::Absent,
            Seen::Present(k) => Seen::Present(k.clone()),
        }
    }
}

impl<K> Seen<K> {
    pub fn get(&self) -> Option<&K> {
        match self {
            Seen::Present(k) => Some(k),
            _ => None,
        }
    }
}

/// Watches `name` in `api` (with backoff, forever), publishing each version.
pub async fn follow<K>(api: Api<K>, name: String, what: &'static str, tx: watch::Sender<Seen<K>>)
where
    K: kube::Resource + Clone + Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    let mut listing: Option<K> = None;
    while let Some(ev) = events.next().await {
        match ev {
            Ok(watcher::Event::Init) => listing = None,
            Ok(watcher::Event::InitApply(k)) => listing = Some(k),
            Ok(watcher::Event::InitDone) => {
                tx.send_replace(
                    listing
                        .take()
                        .map_or(Seen::Absent, |k| Seen::Present(Arc::new(k))),
                );
            }
            Ok(watcher::Event::Apply(k)) => drop(tx.send_replace(Seen::Present(Arc::new(k)))),
            Ok(watcher::Event::Delete(_)) => drop(tx.send_replace(Seen::Absent)),
            Err(e) => warn!(watch = what, %name, error = %e, "watch failed; retrying with backoff"),
        }
    }
}
