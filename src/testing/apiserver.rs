//! The strict mocked apiserver (tower-test's mock on kube's client): the
//! test plays the server, answering every request in order and asserting
//! its method, path, query and body; `no_more` fails on any request after
//! the expected ones. Events go to a second mock, collected as posted.

use super::fixtures::pairs;
use http::{HeaderMap, Method, Request, Response};
use kube::client::Body;
use serde_json::Value;
use std::collections::BTreeMap;
use tower_test::mock::{Handle, SendResponse};

pub(crate) type Mocked = Handle<Request<Body>, Response<Body>>;

/// The verifier's side of the mocked apiserver (and of the lease).
pub(crate) struct ApiServer(
    pub(crate) Mocked,
    pub(crate) tokio::sync::watch::Sender<bool>,
);

/// One request received, decoded.
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) query: BTreeMap<String, String>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
    pub(crate) send: SendResponse<Response<Body>>,
}

impl Call {
    pub(crate) fn expect(self, method: Method, path: &str, query: &[(&str, &str)]) -> Self {
        assert_eq!(
            (&self.method, self.path.as_str()),
            (&method, path),
            "unexpected request"
        );
        let want: BTreeMap<String, String> = pairs(query).into_iter().collect();
        assert_eq!(self.query, want, "query of {method} {path}");
        self
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or_default())
    }

    pub(crate) fn respond(self, code: u16, body: &Value) {
        self.send.send_response(
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(body).unwrap()))
                .unwrap(),
        );
    }
}

impl ApiServer {
    /// This replica stops leading (its renew deadline passed).
    pub(crate) fn lose_leadership(&self) {
        self.1.send_replace(false);
    }
    /// The next request; fails when the code under test ended without making it.
    pub(crate) async fn next(&mut self, what: &str) -> Call {
        let (req, send) = self
            .0
            .next_request()
            .await
            .unwrap_or_else(|| panic!("expected {what}; the code under test ended without it"));
        let (parts, body) = req.into_parts();
        let bytes = body.collect_bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("a JSON body")
        };
        let query = parts
            .uri
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (k.to_string(), v.to_string())
            })
            .collect();
        Call {
            method: parts.method,
            path: parts.uri.path().to_string(),
            query,
            headers: parts.headers,
            body,
            send,
        }
    }

    /// Fails on any request after the expected ones. Resolves once the
    /// code under test has ended (its client is dropped with its context).
    pub(crate) async fn no_more(mut self) {
        if let Some((req, _)) = self.0.next_request().await {
            panic!("unexpected request: {} {}", req.method(), req.uri());
        }
    }
}

/// Answers every Event POST and returns them (the posting task ends once
/// the context under test, holding the queue, is dropped).
pub(crate) async fn collect_events(mut handle: Mocked) -> Vec<Value> {
    let mut posted = Vec::new();
    while let Some((req, send)) = handle.next_request().await {
        assert_eq!(req.method(), Method::POST);
        assert_eq!(
            req.uri().path(),
            "/apis/events.k8s.io/v1/namespaces/shop/events"
        );
        let bytes = req.into_body().collect_bytes().await.unwrap();
        send.send_response(
            Response::builder()
                .status(201)
                .body(Body::from(bytes.clone()))
                .unwrap(),
        );
        posted.push(serde_json::from_slice(&bytes).unwrap());
    }
    posted
}
