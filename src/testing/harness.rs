//! The harness: caches listed as the watches would list them, and one run
//! of the code under test against the strict mocked apiserver.

use super::apiserver::{ApiServer, collect_events};
use super::fixtures::{NS, REPLICASET_UID, key, proof_key};
use crate::cache::holders::HOLDER_STREAMS;
use crate::cache::holders::{Holder, HolderKind};
use crate::cache::index::Stream;
use crate::cache::{Caches, Namespace, Uid};
use crate::runtime::events::{Events, Reporter};
use crate::runtime::leader::Leadership;
use crate::runtime::metrics::{Metrics, ReasonLabel, ResultLabel};
use crate::runtime::runner::Next;
use http::{Request, Response};
use kube::client::Body;
use kube::runtime::watcher::Event;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tower_test::mock;

/// How long the code under test (or the verifier) may take before the test fails.
pub(crate) const LIMIT: Duration = Duration::from_secs(10);

/// The caches, listed once (as the runner's gate requires), shared by the
/// runs of one test.
pub(crate) struct Harness {
    pub(crate) caches: Arc<Caches>,
    pub(crate) policy: crate::reconciler::policy::Policy,
    /// Deletion protection (`--deletion-protection`, on by default).
    pub(crate) protect: bool,
}

/// What the code under test is given: its side of the mocks.
pub(crate) struct Wiring {
    pub(crate) client: kube::Client,
    pub(crate) events: Events,
    pub(crate) metrics: Metrics,
    pub(crate) leader: Leadership,
}

/// What one run returned and left behind.
pub(crate) struct Run<T = Next> {
    pub(crate) next: T,
    pub(crate) metrics: Metrics,
    /// Events posted, as sent.
    pub(crate) events: Vec<Value>,
}

impl<T> Run<T> {
    pub(crate) fn reconciles(&self, result: &'static str) -> u64 {
        self.metrics
            .reconciles
            .get_or_create(&ResultLabel { result })
            .get()
    }

    pub(crate) fn errors(&self, reason: &str) -> u64 {
        self.metrics
            .errors
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .get()
    }

    /// (type, reason) of each Event, sorted (they are posted concurrently).
    pub(crate) fn events(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .events
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_string(),
                    e["reason"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        out.sort();
        out
    }
}

impl Harness {
    pub(crate) fn new() -> Self {
        let caches = Caches::new(proof_key());
        caches.randomsecrets.handle(&Event::Init);
        caches.randomsecrets.handle(&Event::InitDone);
        caches.secrets.handle(&Event::Init);
        caches.secrets.handle(&Event::InitDone);
        {
            let mut holders = caches.holders.0.write().unwrap();
            for stream in HOLDER_STREAMS {
                holders.init(stream);
                holders.init_done(stream);
            }
        }
        assert!(caches.listed());
        Harness {
            caches: Arc::new(caches),
            policy: Default::default(),
            protect: true,
        }
    }

    /// A ReplicaSet `name` whose pod template references Secret `secret`.
    pub(crate) fn referenced_by_replicaset(&self, secret: &str, name: &str) {
        let holder = Holder {
            kind: HolderKind::ReplicaSet,
            namespace: Namespace::new(NS),
            name: name.into(),
            uid: Uid::parse(REPLICASET_UID).unwrap(),
            covered: false,
        };
        self.caches.holders.0.write().unwrap().apply(
            Stream::ReplicaSets,
            holder,
            vec![key().sibling(secret)],
        );
    }

    /// Runs `work` against the mocked apiserver while `scenario` plays it:
    /// `work` gets the client, the Event queue, the metrics and the
    /// leadership (leading or not), and must drop them when it ends (the
    /// verifier's `no_more` waits for that). The verifier's panic, if any,
    /// is the test's.
    pub(crate) async fn verify<T, S, F, W, WF>(&self, leader: bool, scenario: S, work: W) -> Run<T>
    where
        S: FnOnce(ApiServer) -> F,
        F: Future<Output = ApiServer> + Send + 'static,
        W: FnOnce(Wiring) -> WF,
        WF: Future<Output = T>,
    {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let (event_service, event_handle) = mock::pair::<Request<Body>, Response<Body>>();
        let metrics = Metrics::register(&mut prometheus_client::registry::Registry::default());
        let reporter = Reporter {
            controller: crate::reconciler::MANAGER.into(),
            instance: "randomsecret-test".into(),
        };
        let (events, poster) = Events::new(
            kube::Client::new(event_service, "default"),
            reporter,
            metrics.events_dropped.clone(),
        );
        let poster = tokio::spawn(poster);
        let posted = tokio::spawn(collect_events(event_handle));
        let (lease, flag) = tokio::sync::watch::channel(leader);
        let wiring = Wiring {
            client: kube::Client::new(service, "default"),
            events,
            metrics: metrics.clone(),
            leader: Leadership::following(flag),
        };
        let server = scenario(ApiServer(handle, lease));
        let verifier = tokio::spawn(async move { server.await.no_more().await });
        let next = tokio::time::timeout(LIMIT, work(wiring)).await;
        let verified = tokio::time::timeout(LIMIT, verifier)
            .await
            .expect("the verifier did not finish");
        if let Err(e) = verified {
            std::panic::resume_unwind(e.into_panic());
        }
        let next = next.expect("the code under test did not finish");
        tokio::time::timeout(LIMIT, poster)
            .await
            .expect("events not posted")
            .unwrap();
        let events = tokio::time::timeout(LIMIT, posted)
            .await
            .expect("events not collected")
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        Run {
            next,
            metrics,
            events,
        }
    }
}
