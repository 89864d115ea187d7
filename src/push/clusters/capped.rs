//! Every reply from a downstream apiserver is read through a cap.
//!
//! Whoever writes a kubeconfig Secret chooses the server, and kube reads a
//! reply whole (a list, a get) or a watch event line by line, without a
//! bound: a server that answers with gigabytes, or a body without end,
//! would fill the leader's memory. This layer, on the downstream client's
//! stack (after any decompression), refuses a Content-Length above
//! [`MAX_REPLY`] before reading, and stops a body (or, for a watch, one
//! line) at that size: the call fails with [`TooLarge`], which
//! [`super::ClusterError::downstream`] reports as `ReplyTooLarge`.

use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::{Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tower::{BoxError, Layer, Service};

/// The most any reply (or one watch event) may be. A Secret is at most
/// 1 MiB, and the watches list in pages ([`super::link`]).
pub const MAX_REPLY: usize = 8 << 20;

/// A reply was longer than [`MAX_REPLY`]: it was not read further.
#[derive(Debug, thiserror::Error)]
#[error("the answer is larger than {} MiB; it was not read", MAX_REPLY >> 20)]
pub struct TooLarge;

/// Whether `e` (a kube error, a watch's, or anything in its chain) comes from
/// a reply cut at the cap.
pub fn too_large(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.is::<TooLarge>() {
            return true;
        }
        // An io::Error's source() skips the error it wraps (a watch's body
        // error is wrapped in one): look inside.
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            && too_large(inner)
        {
            return true;
        }
        next = e.source();
    }
    false
}

#[derive(Clone, Copy, Debug, Default)]
pub struct CapLayer;

impl<S> Layer<S> for CapLayer {
    type Service = Cap<S>;
    fn layer(&self, inner: S) -> Cap<S> {
        Cap { inner }
    }
}

#[derive(Clone, Debug)]
pub struct Cap<S> {
    inner: S,
}

impl<S, Q, B> Service<Request<Q>> for Cap<S>
where
    S: Service<Request<Q>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<Capped<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Q>) -> Self::Future {
        let per_line = is_watch(req.uri().query());
        let call = self.inner.call(req);
        Box::pin(async move {
            let resp = call.await.map_err(Into::into)?;
            let claimed = resp
                .headers()
                .get(hyper::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            if claimed.is_some_and(|n| n > MAX_REPLY as u64) {
                return Err(Box::new(TooLarge) as BoxError);
            }
            Ok(resp.map(|inner| Capped {
                inner,
                seen: 0,
                per_line,
                done: false,
            }))
        })
    }
}

/// A watch streams one event per line, for as long as it runs: the cap is
/// per line there, per body elsewhere.
fn is_watch(query: Option<&str>) -> bool {
    query
        .unwrap_or_default()
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1")
}

/// A body that fails once it passes [`MAX_REPLY`] (or a line of it does).
pub struct Capped<B> {
    inner: B,
    seen: usize,
    per_line: bool,
    done: bool,
}

impl<B> Capped<B> {
    /// Counts `data`; whether the cap is passed.
    fn count(&mut self, data: &[u8]) -> bool {
        if !self.per_line {
            self.seen = self.seen.saturating_add(data.len());
            return self.seen > MAX_REPLY;
        }
        match (
            data.iter().position(|b| *b == b'\n'),
            data.iter().rposition(|b| *b == b'\n'),
        ) {
            (Some(first), Some(last)) => {
                // The line that ends here, then the one that begins.
                let over = self.seen.saturating_add(first) > MAX_REPLY;
                self.seen = data.len() - last - 1;
                over
            }
            _ => {
                self.seen = self.seen.saturating_add(data.len());
                self.seen > MAX_REPLY
            }
        }
    }
}

impl<B> Body for Capped<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let this = &mut *self;
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref()
                    && this.count(data)
                {
                    this.done = true;
                    return Poll::Ready(Some(Err(Box::new(TooLarge))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            None => Poll::Ready(None),
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    //! The cap against a loopback server (plain HTTP: the kube client
    //! itself, with this layer, is what is under test).
    use super::*;
    use crate::runtime::outcome::Outcome as _;
    use k8s_openapi::api::core::v1::Secret;
    use kube::Api;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers each request with `head` and then `chunk`
    /// forever; the client's address.
    async fn server(head: &'static str, chunk: Vec<u8>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let chunk = chunk.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let mut head_in = Vec::new();
                    while !head_in.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head_in.extend_from_slice(&buf[..n]),
                        }
                    }
                    if s.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    while s.write_all(&chunk).await.is_ok() {}
                });
            }
        });
        format!("http://{addr}")
    }

    fn client(url: &str) -> kube::Client {
        let config = kube::Config::new(url.parse().unwrap());
        kube::client::ClientBuilder::try_from(config)
            .unwrap()
            .with_layer(&CapLayer)
            .build()
    }

    #[tokio::test]
    async fn an_endless_body_or_a_huge_length_is_refused_at_the_cap() {
        let mib = format!("100000\r\n{}\r\n", " ".repeat(1 << 20)).into_bytes();
        let endless = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            mib,
        )
        .await;
        let claims = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n",
            vec![b' '; 1 << 16],
        )
        .await;
        for url in [endless, claims] {
            let api: Api<Secret> = Api::namespaced(client(&url), "ns");
            let started = std::time::Instant::now();
            let e = tokio::time::timeout(std::time::Duration::from_secs(20), api.get("x"))
                .await
                .expect("the read stops at the cap")
                .unwrap_err();
            assert!(too_large(&e), "{url}: {e:?}");
            assert_eq!(
                super::super::ClusterError::downstream("east", "reading", e).reason(),
                "ReplyTooLarge"
            );
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
        }
    }

    #[tokio::test]
    async fn a_watch_line_without_end_is_refused_and_short_lines_pass() {
        use futures::StreamExt;
        // One line without end, as a watch's body.
        let endless = server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            format!("100000\r\n{}\r\n", "x".repeat(1 << 20)).into_bytes(),
        )
        .await;
        let api: Api<Secret> = Api::namespaced(client(&endless), "ns");
        let stream = api
            .watch(&kube::api::WatchParams::default(), "0")
            .await
            .unwrap();
        let first =
            tokio::time::timeout(std::time::Duration::from_secs(20), Box::pin(stream).next())
                .await
                .expect("the read stops at the cap");
        match first {
            Some(Err(e)) => assert!(too_large(&e), "{e:?}"),
            other => panic!("expected the cap, got {other:?}"),
        }
        // Many short lines (more than the cap in all) pass the per-line cap.
        let mut c = Capped {
            inner: (),
            seen: 0,
            per_line: true,
            done: false,
        };
        let lines = "{\"type\":\"ADDED\"}\n".repeat(1 << 16);
        for _ in 0..16 {
            assert!(!c.count(lines.as_bytes()));
        }
        assert!(c.count(&vec![b'x'; MAX_REPLY + 1]));
        let mut whole = Capped {
            inner: (),
            seen: 0,
            per_line: false,
            done: false,
        };
        assert!(!whole.count(&vec![b'x'; MAX_REPLY]));
        assert!(whole.count(b"x"));
        assert!(is_watch(Some("watch=true&resourceVersion=1")));
        assert!(!is_watch(Some("labelSelector=watch%3Dtrue")));
    }
}
