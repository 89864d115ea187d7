//! A mocked Vault: a real HTTP server on 127.0.0.1 (the push's client is
//! reqwest, not kube's) that answers canned replies in order. Strict as the
//! apiserver: each request must be the next one expected (method and path),
//! any other is answered 599 and fails the test at `done`.

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// One request the mock received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) token: String,
    pub(crate) body: Value,
}

#[derive(Default)]
struct State {
    expected: VecDeque<(Method, String, u16, String)>,
    seen: Vec<Seen>,
    unexpected: Vec<String>,
}

pub(crate) struct Vault {
    /// `http://127.0.0.1:port`
    pub(crate) address: String,
    state: Arc<Mutex<State>>,
}

impl Vault {
    /// Listens on a free loopback port.
    pub(crate) async fn start() -> Vault {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = shared.clone();
                async move {
                    let mut s = state.lock().unwrap();
                    let path = uri.path().to_string();
                    s.seen.push(Seen {
                        method: method.to_string(),
                        path: path.clone(),
                        token: headers
                            .get("x-vault-token")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string(),
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    });
                    match s.expected.pop_front() {
                        Some((m, p, code, reply)) if m == method && p == path => {
                            (StatusCode::from_u16(code).unwrap(), reply)
                        }
                        other => {
                            let want = other.map(|(m, p, ..)| format!("{m} {p}"));
                            s.unexpected
                                .push(format!("{method} {path} (expected {want:?})"));
                            (StatusCode::from_u16(599).unwrap(), String::new())
                        }
                    }
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Vault { address, state }
    }

    /// The next request is `method path`, answered `code` with `reply`.
    pub(crate) fn then(&self, method: Method, path: &str, code: u16, reply: Value) -> &Self {
        let reply = if reply.is_null() {
            String::new()
        } else {
            reply.to_string()
        };
        self.state
            .lock()
            .unwrap()
            .expected
            .push_back((method, path.into(), code, reply));
        self
    }

    /// Every expected request came, and no other: what was received.
    pub(crate) fn done(&self) -> Vec<Seen> {
        let s = self.state.lock().unwrap();
        assert!(
            s.unexpected.is_empty(),
            "unexpected Vault requests: {:?}",
            s.unexpected
        );
        assert!(
            s.expected.is_empty(),
            "Vault requests expected and not made: {:?}",
            s.expected
        );
        s.seen.clone()
    }
}
