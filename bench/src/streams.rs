//! The floor of a restart: the streams a controller reads at start that grow
//! with the RandomSecrets (the RandomSecrets whole; our Secrets and the
//! ReplicaSets as metadata), read bare and at once, as the controller reads
//! them (streamed lists from the watch cache), by a client that parses
//! nothing: it counts lines until each stream's end of initial events. What
//! the apiserver takes to send them is what no controller can go under.

use anyhow::{Result, bail};
use futures::{AsyncBufReadExt, TryStreamExt};
use kube::Client;
use std::time::{Duration, Instant};

const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// (path with the controller's selector, Accept) of each stream.
const STREAMS: [(&str, &str); 3] = [
    ("/apis/randomsecret.io/v1/randomsecrets", "application/json"),
    (
        "/api/v1/secrets?labelSelector=app.kubernetes.io%2Fmanaged-by%3Drandomsecret",
        METADATA,
    ),
    ("/apis/apps/v1/replicasets", METADATA),
];

/// The time until the last of the three streams ended its initial events.
pub async fn bare(client: &Client) -> Result<Duration> {
    let start = Instant::now();
    futures::future::try_join_all(
        STREAMS
            .iter()
            .map(|(path, accept)| read(client, path, accept)),
    )
    .await?;
    Ok(start.elapsed())
}

/// Reads one streamed list to its end; returns how many events came before.
async fn read(client: &Client, path: &str, accept: &str) -> Result<u64> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let uri = format!(
        "{path}{sep}watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=600"
    );
    let request = http::Request::get(uri)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())?;
    let mut lines = client.request_stream(request).await?.lines();
    let mut events = 0;
    while let Some(line) = lines.try_next().await? {
        if line.contains("k8s.io/initial-events-end") {
            return Ok(events);
        }
        if line.starts_with(r#"{"type":"ERROR""#) {
            bail!("{path}: the streamed list failed: {line}");
        }
        events += 1;
    }
    bail!("{path}: the stream ended before its initial events did")
}
