//! Graceful shutdown: SIGTERM (or Ctrl-C) stops new reconciles; in-flight ones
//! get [`GRACE`], then the process stops anyway.

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use std::time::Duration;
use tracing::info;

/// How long in-flight reconciles may run after SIGTERM: within a pod's default
/// 30 s grace period. Every step of a reconcile is safe to cut short and repeat.
pub const GRACE: Duration = Duration::from_secs(20);

/// Resolves (for every clone) on the first SIGTERM or Ctrl-C.
pub type Signal = Shared<BoxFuture<'static, ()>>;

pub fn signal() -> Signal {
    async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => info!("SIGTERM: finishing in-flight reconciles"),
            _ = tokio::signal::ctrl_c() => info!("interrupted: finishing in-flight reconciles"),
        }
    }
    .boxed()
    .shared()
}

/// Resolves [`GRACE`] after `signal`.
pub async fn deadline(signal: Signal) {
    signal.await;
    tokio::time::sleep(GRACE).await;
}
