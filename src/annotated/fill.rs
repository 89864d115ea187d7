//! The controller path: for one opted-in Secret that may lack keys, GET it,
//! plan ([`rules::plan`]), and merge-patch only what the plan writes, with a
//! resourceVersion precondition (a 409 means someone wrote meanwhile: read
//! again after a backoff). Leader only. Values live only between the plan
//! and the patch: never cached, logged, or put in an Event or a metric.

use super::rules::{self, Fill, Plan};
use super::tracked::Tracked;
use crate::cache::{Key, Uid};
use crate::reconciler::{LAPSED_RETRY, MANAGER};
use crate::runtime::events::{EventType, Events};
use crate::runtime::keygen::KeyGeneration;
use crate::runtime::leader::Leadership;
use crate::runtime::metrics::Metrics;
use crate::runtime::runner::Next;
use crate::runtime::status::Answer as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use tracing::{info, warn};

/// The Event action of every annotation-mode Event.
const ACTION: &str = "FillKeys";
/// The reason of the Warning about annotations of ours that no rule knows.
pub const UNKNOWN_ANNOTATION: &str = "UnknownAnnotation";

pub struct Filler {
    pub client: Client,
    pub tracked: Arc<Tracked>,
    pub events: Events,
    pub metrics: Metrics,
    pub leader: Leadership,
    /// The lane of costly key generation, shared with the reconciler.
    pub keygen: Arc<KeyGeneration>,
}

impl Filler {
    /// The filler of the Secrets `tracked` holds.
    pub fn new(
        shared: &crate::runtime::Shared,
        tracked: Arc<Tracked>,
        keygen: Arc<KeyGeneration>,
    ) -> Self {
        Filler {
            client: shared.client.clone(),
            tracked,
            events: shared.events.clone(),
            metrics: shared.metrics.clone(),
            leader: shared.leader.clone(),
            keygen,
        }
    }

    /// Looks at one Secret; never fails (problems are a Warning Event, a log
    /// line and a metric, then retried or awaited).
    pub async fn fill(&self, key: Key) -> Next {
        if let Some(next) = self.leader.standby() {
            // A standby: everything unsettled is looked at on taking over.
            return next;
        }
        match self.tracked.get(&key) {
            Some(e) if e.unsettled() => {}
            _ => return Next::AwaitChange, // gone, or already looked at
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), key.ns());
        let secret = match api.get_opt(&key.name).await {
            Ok(Some(s)) => s,
            Ok(None) => return Next::AwaitChange,
            Err(e) => {
                warn!(secret = %key, error = %e, "reading an annotated Secret; retrying");
                return Next::Retry;
            }
        };
        let uid = Uid::of(&secret.metadata);
        let rv = secret.metadata.resource_version.clone().unwrap_or_default();
        self.unknown_annotations(&key, &secret);
        let fill = match rules::plan(&secret, None) {
            Plan::NotManaged | Plan::Complete => {
                self.tracked.warn(&key, None);
                self.tracked.settle(&key, uid, &rv);
                return Next::AwaitChange;
            }
            Plan::Refused(r) => {
                self.problem(&key, &secret, r.reason(), r.message());
                self.tracked.settle(&key, uid, &rv);
                return Next::AwaitChange;
            }
            Plan::Invalid(why) => {
                let note = format!("not filled: fix the annotations: {why}");
                self.problem(&key, &secret, "InvalidAnnotations", note);
                self.tracked.settle(&key, uid, &rv);
                return Next::AwaitChange;
            }
            Plan::Fill(f) => f,
        };
        if !self.leader.leading() {
            return Next::RequeueAfter(LAPSED_RETRY);
        }
        let values = match values(&fill, &self.keygen).await {
            Ok(v) => v,
            Err(e) => {
                warn!(secret = %key, error = %e, "generating the values failed; retrying");
                return Next::Retry;
            }
        };
        let mut metadata = serde_json::json!({ "resourceVersion": rv });
        if let Some(token) = fill.rotated() {
            let mut annotations = serde_json::Map::new();
            annotations.insert(rules::ROTATED.into(), token.into());
            metadata["annotations"] = annotations.into();
        }
        let patch = serde_json::json!({ "metadata": metadata, "data": values });
        drop(values);
        let params = PatchParams {
            field_manager: Some(MANAGER.into()),
            ..Default::default()
        };
        match api.patch(&key.name, &params, &Patch::Merge(&patch)).await {
            Ok(written) => {
                drop(patch);
                let new_rv = written.metadata.resource_version.unwrap_or_default();
                self.tracked.warn(&key, None);
                self.tracked.settle(&key, uid, &new_rv);
                self.metrics.filled("controller");
                let keys = fill.keys().join(", ");
                let (reason, what) = if fill.is_rotation() {
                    ("KeysRotated", "rotated")
                } else {
                    ("KeysFilled", "filled")
                };
                info!(secret = %key, keys = %keys, rotation = fill.is_rotation(), "annotated Secret {what}");
                if !keys.is_empty() {
                    let note = format!("{what} keys {keys} with random values");
                    self.events.publish(
                        reference(&secret),
                        EventType::Normal,
                        reason,
                        ACTION,
                        note,
                    );
                }
                Next::AwaitChange
            }
            Err(kube::Error::Api(s)) if s.conflict() => {
                info!(secret = %key, "the Secret changed while being filled; reading it again");
                Next::Retry
            }
            Err(kube::Error::Api(s)) if s.not_found() => Next::AwaitChange,
            Err(kube::Error::Api(s)) if s.client_error() => {
                // Permanent (RBAC, a rule of another admission plugin): say
                // so once. The apiserver's message is not quoted: it could
                // echo what was sent.
                let note = format!(
                    "not filled: the apiserver refused the patch ({} {}); the Secret is unchanged",
                    s.code, s.reason
                );
                self.problem(&key, &secret, "PatchRefused", note);
                self.tracked.settle(&key, uid, &rv);
                Next::AwaitChange
            }
            Err(e) => {
                warn!(secret = %key, error = %e, "patching an annotated Secret; retrying");
                Next::Retry
            }
        }
    }

    /// Misspelt annotations: a Warning Event (the same reason and note while
    /// they stay the same, so a resync or another change of the Secret does
    /// not repeat it) beside whatever the plan does.
    fn unknown_annotations(&self, key: &Key, secret: &Secret) {
        let note = rules::unknown_note(&rules::unknown_annotations(&secret.metadata));
        let digest = note.as_deref().map(|n| digest(UNKNOWN_ANNOTATION, n));
        if self.tracked.warn_unknown(key, digest)
            && let Some(note) = note
        {
            warn!(secret = %key, problem = %note, "annotated Secret has unknown annotations");
            self.events.publish(
                reference(secret),
                EventType::Warning,
                UNKNOWN_ANNOTATION,
                ACTION,
                note,
            );
        }
    }

    /// A Secret left unchanged: log line and metric each time, Warning Event
    /// only when it differs from the last one about this Secret.
    fn problem(&self, key: &Key, secret: &Secret, reason: &'static str, note: String) {
        warn!(secret = %key, reason, problem = %note, "annotated Secret left unchanged");
        self.metrics
            .annotated_refused
            .get_or_create(&crate::runtime::metrics::ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
        if self.tracked.warn(key, Some(digest(reason, &note))) {
            self.events
                .publish(reference(secret), EventType::Warning, reason, ACTION, note);
        }
    }
}

/// The fill's values: made in the key-generation lane when that is costly
/// (an RSA key pair, bcrypt), so the runtime's threads stay free for other
/// fills, reconciles and lease renewal.
async fn values(
    fill: &Fill,
    keygen: &KeyGeneration,
) -> Result<BTreeMap<String, ByteString>, String> {
    if !fill.costly() {
        return fill.values().map_err(|e| e.to_string());
    }
    let fill = fill.clone();
    keygen
        .run(move || fill.values())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// The Event's subject: the Secret.
fn reference(s: &Secret) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Secret".into()),
        name: s.metadata.name.clone(),
        namespace: s.metadata.namespace.clone(),
        uid: s.metadata.uid.clone(),
        resource_version: s.metadata.resource_version.clone(),
        ..Default::default()
    }
}

fn digest(reason: &str, note: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (reason, note).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    //! The filler against a mocked apiserver: each test answers the requests
    //! one run makes, in order, and fails on any other.
    use super::*;
    use crate::annotated::rules::{GENERATE, MANAGED_LABEL};
    use crate::runtime::events::Reporter;
    use http::{Method, Request, Response};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::client::Body;
    use kube::core::PartialObjectMetaExt;
    use kube::runtime::watcher::Event;
    use serde_json::{Value, json};
    use std::time::Duration;
    use tower_test::mock::{self, Handle};

    type Mocked = Handle<Request<Body>, Response<Body>>;
    const UID: &str = "2f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
    const PATH: &str = "/api/v1/namespaces/shop/secrets/app";
    const LIMIT: Duration = Duration::from_secs(10);

    fn key() -> Key {
        Key::new("shop", "app")
    }

    /// `shop/app` as stored: labelled, asking for `generate`, with `data` (text).
    fn stored(rv: &str, annotations: Value, data: Value) -> Value {
        let data: serde_json::Map<String, Value> = data
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                let bytes = k8s_openapi::ByteString(v.as_str().unwrap().as_bytes().to_vec());
                (k.clone(), serde_json::to_value(bytes).unwrap())
            })
            .collect();
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "app", "namespace": "shop", "uid": UID, "resourceVersion": rv,
                         "labels": {MANAGED_LABEL: "true"}, "annotations": annotations},
            "data": data,
        })
    }

    /// The watch saw `shop/app` at `rv`.
    fn seen(tracked: &Tracked, rv: &str) {
        let meta = ObjectMeta {
            name: Some("app".into()),
            namespace: Some("shop".into()),
            uid: Some(UID.into()),
            resource_version: Some(rv.into()),
            labels: Some([(MANAGED_LABEL.to_string(), "true".to_string())].into()),
            annotations: Some([(GENERATE.to_string(), "x".to_string())].into()),
            ..Default::default()
        };
        tracked.handle(&Event::Apply(meta.into_response_partial()));
    }

    async fn answer(h: &mut Mocked, method: Method, code: u16, body: &Value) -> Value {
        let (req, send) = tokio::time::timeout(LIMIT, h.next_request())
            .await
            .expect("no request")
            .expect("the run ended without the request");
        assert_eq!((req.method(), req.uri().path()), (&method, PATH));
        let bytes = req.into_body().collect_bytes().await.unwrap();
        send.send_response(
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(body).unwrap()))
                .unwrap(),
        );
        if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        }
    }

    struct Harness {
        filler: Filler,
        api: Mocked,
        events: tokio::sync::mpsc::UnboundedReceiver<Value>,
        lease: tokio::sync::watch::Sender<bool>,
    }

    fn harness() -> Harness {
        let (service, api) = mock::pair::<Request<Body>, Response<Body>>();
        let (event_service, mut event_handle) = mock::pair::<Request<Body>, Response<Body>>();
        let metrics = Metrics::register(&mut prometheus_client::registry::Registry::default());
        let reporter = Reporter {
            controller: "randomsecret".into(),
            instance: "test".into(),
        };
        let (events, poster) = Events::new(
            Client::new(event_service, "default"),
            reporter,
            metrics.events_dropped.clone(),
        );
        tokio::spawn(poster);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some((req, send)) = event_handle.next_request().await {
                let bytes = req.into_body().collect_bytes().await.unwrap();
                send.send_response(
                    Response::builder()
                        .status(201)
                        .body(Body::from(bytes.clone()))
                        .unwrap(),
                );
                let _ = tx.send(serde_json::from_slice(&bytes).unwrap());
            }
        });
        let (lease, flag) = tokio::sync::watch::channel(true);
        Harness {
            filler: Filler {
                client: Client::new(service, "default"),
                tracked: Arc::default(),
                events,
                metrics,
                leader: Leadership::following(flag),
                keygen: Arc::new(KeyGeneration::new(Some(1)).unwrap()),
            },
            api,
            events: rx,
            lease,
        }
    }

    impl Harness {
        /// Runs the filler on `shop/app` while `scenario` plays the apiserver.
        async fn run<F: Future<Output = Mocked>>(
            &mut self,
            scenario: impl FnOnce(Mocked) -> F,
        ) -> Next {
            let api = std::mem::replace(&mut self.api, mock::pair().1);
            let (next, api) = tokio::join!(
                tokio::time::timeout(LIMIT, self.filler.fill(key())),
                scenario(api)
            );
            self.api = api;
            next.expect("the run did not finish")
        }

        /// No request (the scenario after the expected ones).
        async fn no_request(&mut self) {
            let extra =
                tokio::time::timeout(Duration::from_millis(50), self.api.next_request()).await;
            assert!(extra.is_err(), "unexpected request");
        }

        async fn event(&mut self) -> Value {
            tokio::time::timeout(LIMIT, self.events.recv())
                .await
                .expect("no Event")
                .unwrap()
        }

        fn no_event(&mut self) {
            assert!(self.events.try_recv().is_err(), "unexpected Event");
        }
    }

    #[tokio::test]
    async fn patches_only_the_missing_keys_with_a_precondition_then_nothing_more() {
        let mut h = harness();
        seen(&h.filler.tracked, "5");
        let secret = stored(
            "5",
            json!({GENERATE: "user,password"}),
            json!({"user": "admin"}),
        );
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &secret).await;
                let patch = answer(
                    &mut api,
                    Method::PATCH,
                    200,
                    &stored("6", json!({}), json!({})),
                )
                .await;
                assert_eq!(
                    patch["metadata"]["resourceVersion"], "5",
                    "the precondition"
                );
                assert_eq!(
                    patch["metadata"]["annotations"][crate::annotated::rules::ROTATED],
                    ""
                );
                let data = patch["data"].as_object().unwrap();
                assert_eq!(
                    data.keys().collect::<Vec<_>>(),
                    ["password"],
                    "only the missing key"
                );
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
        let ev = h.event().await;
        assert_eq!(
            (ev["type"].as_str(), ev["reason"].as_str()),
            (Some("Normal"), Some("KeysFilled"))
        );
        assert_eq!(ev["note"], "filled keys password with random values");
        // The watch event of our own patch: settled, no request.
        seen(&h.filler.tracked, "6");
        assert_eq!(h.run(|api| async move { api }).await, Next::AwaitChange);
        h.no_request().await;
    }

    #[tokio::test]
    async fn a_conflict_is_retried_with_a_fresh_read() {
        let mut h = harness();
        seen(&h.filler.tracked, "5");
        let secret = stored("5", json!({GENERATE: "password"}), json!({}));
        let conflict = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409, "message": "the object has been modified"});
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &secret).await;
                answer(&mut api, Method::PATCH, 409, &conflict).await;
                api
            })
            .await;
        assert_eq!(next, Next::Retry);
        // Someone filled it meanwhile: the next run reads it and writes nothing.
        let filled = stored(
            "7",
            json!({GENERATE: "password"}),
            json!({"password": "theirs"}),
        );
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &filled).await;
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
        h.no_request().await;
    }

    #[tokio::test]
    async fn bad_annotations_warn_once_and_write_nothing() {
        let mut h = harness();
        for rv in ["5", "6"] {
            seen(&h.filler.tracked, rv);
            let secret = stored(
                rv,
                json!({GENERATE: "password", "randomsecret.io/length": "0"}),
                json!({}),
            );
            let next = h
                .run(|mut api| async move {
                    answer(&mut api, Method::GET, 200, &secret).await;
                    api
                })
                .await;
            assert_eq!(next, Next::AwaitChange);
            h.no_request().await;
        }
        let ev = h.event().await;
        assert_eq!(
            (ev["type"].as_str(), ev["reason"].as_str()),
            (Some("Warning"), Some("InvalidAnnotations"))
        );
        assert!(
            ev["note"].as_str().unwrap().contains("from 1 to 1048576"),
            "{ev}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.no_event();
    }

    #[tokio::test]
    async fn a_misspelt_annotation_warns_once_beside_the_fill() {
        let mut h = harness();
        let typo = json!({GENERATE: "password", "randomsecret.io/lenght": "12"});
        seen(&h.filler.tracked, "5");
        let secret = stored("5", typo.clone(), json!({}));
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &secret).await;
                let patch = answer(
                    &mut api,
                    Method::PATCH,
                    200,
                    &stored("6", json!({}), json!({})),
                )
                .await;
                assert!(patch["data"]["password"].is_string(), "{patch}");
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
        // Posted concurrently: in either order.
        let mut events = [h.event().await, h.event().await];
        events.sort_by_key(|e| e["reason"].to_string());
        assert_eq!(
            (events[0]["reason"].as_str(), events[1]["reason"].as_str()),
            (Some("KeysFilled"), Some(UNKNOWN_ANNOTATION))
        );
        assert_eq!(events[1]["type"], "Warning");
        assert_eq!(
            events[1]["note"],
            "unknown annotation \"randomsecret.io/lenght\" is ignored: did you mean randomsecret.io/length?"
        );
        // Someone else's change: looked at again, the same typo is not repeated.
        seen(&h.filler.tracked, "7");
        let filled = stored("7", typo, json!({"password": "x"}));
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &filled).await;
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.no_event();
    }

    #[tokio::test]
    async fn a_key_pair_is_patched_whole_and_half_a_pair_warns() {
        let mut h = harness();
        seen(&h.filler.tracked, "5");
        let secret = stored(
            "5",
            json!({crate::annotated::rules::TYPE: "ssh-keypair"}),
            json!({}),
        );
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &secret).await;
                let patch = answer(
                    &mut api,
                    Method::PATCH,
                    200,
                    &stored("6", json!({}), json!({})),
                )
                .await;
                let data: std::collections::BTreeMap<String, ByteString> =
                    serde_json::from_value(patch["data"].clone()).unwrap();
                let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
                assert_eq!(
                    crate::generate::pair::ssh_public(&text("ssh-privatekey")).unwrap(),
                    text("ssh-publickey")
                );
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
        let ev = h.event().await;
        assert_eq!(
            ev["note"],
            "filled keys ssh-privatekey, ssh-publickey with random values"
        );
        // Half a pair: a Warning, no patch.
        seen(&h.filler.tracked, "7");
        let half = stored(
            "7",
            json!({crate::annotated::rules::TYPE: "ssh-keypair"}),
            json!({"ssh-publickey": "SECRET-public"}),
        );
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &half).await;
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
        h.no_request().await;
        let ev = h.event().await;
        assert_eq!(
            (ev["type"].as_str(), ev["reason"].as_str()),
            (Some("Warning"), Some("IncompletePair"))
        );
        assert!(!ev["note"].as_str().unwrap().contains("SECRET"), "{ev}");
    }

    #[tokio::test]
    async fn basic_auth_is_made_off_the_runtime_threads() {
        let mut h = harness();
        seen(&h.filler.tracked, "5");
        let secret = stored(
            "5",
            json!({crate::annotated::rules::TYPE: "basic-auth"}),
            json!({"username": "ops"}),
        );
        let next = h
            .run(|mut api| async move {
                answer(&mut api, Method::GET, 200, &secret).await;
                let patch = answer(
                    &mut api,
                    Method::PATCH,
                    200,
                    &stored("6", json!({}), json!({})),
                )
                .await;
                let data: std::collections::BTreeMap<String, ByteString> =
                    serde_json::from_value(patch["data"].clone()).unwrap();
                assert_eq!(data.keys().collect::<Vec<_>>(), ["auth", "password"]);
                let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
                let auth = text("auth");
                let hash = auth.strip_prefix("ops:").unwrap().trim_end();
                assert!(bcrypt::verify(text("password"), hash).unwrap());
                api
            })
            .await;
        assert_eq!(next, Next::AwaitChange);
    }

    #[tokio::test]
    async fn a_standby_makes_no_request() {
        let mut h = harness();
        seen(&h.filler.tracked, "5");
        h.lease.send_replace(false);
        assert_eq!(h.run(|api| async move { api }).await, Next::AwaitChange);
        h.no_request().await;
        assert_eq!(
            h.filler.tracked.unsettled(),
            [key()],
            "looked at on taking over"
        );
    }
}
