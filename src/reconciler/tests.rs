//! `reconcile()` against the strict mocked apiserver (`crate::testing`):
//! the caches are filled as the watches would fill them, one reconcile runs,
//! and a verifier answers every request in order, asserting its method,
//! path, query and body. Each test proves which requests a branch makes,
//! and that it makes no other: the verifier fails on any request after the
//! expected ones. Events go to a second mocked server, so their order (they
//! are posted in the background) never mixes with the reconcile's.

use super::{Context, MANAGER, reconcile};
use crate::api::{
    ANNOTATION_CREATED, FINALIZER_IN_USE, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY,
};
use crate::cache::slim::RandomSecretObject;
use crate::proof::ANNOTATION_PROOF;
use crate::runtime::runner::Next;
use crate::testing::*;
use http::Method;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

// ------------------------------------------- the reconciler's requests

/// The requests of the version's writer, under its field manager.
impl ApiServer {
    /// POST of a new version Secret.
    async fn create_secret(&mut self) -> Call {
        let call = self.next("POST of the version Secret").await;
        call.expect(Method::POST, SECRETS, &[("fieldManager", MANAGER)])
    }

    /// POST of the new version after a rotation, answered: created.
    async fn create_secret_answered(&mut self) {
        let post = self.create_secret().await;
        let body = post.body.clone();
        post.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));
    }

    /// GET of a whole Secret (to check its proof of creation).
    async fn get_secret(&mut self, name: &str) -> Call {
        let call = self.next("GET of the Secret").await;
        call.expect(Method::GET, &format!("{SECRETS}/{name}"), &[])
    }

    /// Merge patch of a Secret's metadata (its owners).
    async fn patch_secret_metadata(&mut self, name: &str) -> Call {
        let call = self.next("PATCH of the Secret's owners").await;
        let call = call.expect(
            Method::PATCH,
            &format!("{SECRETS}/{name}"),
            &[("fieldManager", MANAGER)],
        );
        assert_eq!(call.header("content-type"), "application/merge-patch+json");
        assert!(call.header("accept").contains("as=PartialObjectMetadata"));
        call
    }

    /// After a lost race: the GET of `secret`'s metadata, answered with it
    /// at `resource_version` (someone else's write came first).
    async fn read_again(&mut self, secret: &VersionSecret, resource_version: &str) {
        let name = secret.name();
        let get = self.next("GET of the Secret's metadata").await;
        let get = get.expect(Method::GET, &format!("{SECRETS}/{name}"), &[]);
        assert!(get.header("accept").contains("as=PartialObjectMetadata"));
        let mut fresh = secret.clone();
        fresh.meta["resourceVersion"] = json!(resource_version);
        get.respond(200, &fresh.metadata_response());
    }

    async fn delete_secret(&mut self, name: &str) -> Call {
        let call = self.next("DELETE of a released version").await;
        call.expect(Method::DELETE, &format!("{SECRETS}/{name}"), &[])
    }

    /// The object (with its status): RBAC grants get on it, not on /status.
    async fn get_status(&mut self) -> Call {
        let call = self.next("GET of the RandomSecret").await;
        call.expect(Method::GET, OBJECT, &[])
    }

    /// Server-side apply of the status, under our field manager, forced.
    async fn apply_status(&mut self) -> Call {
        let call = self.next("PATCH of the status").await;
        let call = call.expect(
            Method::PATCH,
            STATUS,
            &[("fieldManager", MANAGER), ("force", "true")],
        );
        assert_eq!(call.header("content-type"), "application/apply-patch+yaml");
        assert_eq!(call.body["apiVersion"], "randomsecret.io/v1");
        assert_eq!(call.body["kind"], "RandomSecret");
        call
    }
}

/// The version made before the rotation to "2", in the caches.
fn old_version(h: &Harness) -> VersionSecret {
    VersionSecret::of(&Rs::test())
        .with_uid(OLD_SECRET_UID)
        .created_at("2026-01-01T00:00:00")
        .cached_in(h)
}

/// The RandomSecret rotated to "2", its status still Ready on `old`.
fn rotated_past(old: &VersionSecret, h: &Harness) -> Rs {
    Rs::test()
        .with_rotation("2")
        .with_status(ready_status(old, &[]))
        .cached_in(h)
}

/// One reconcile of `shop/db` against the harness.
impl Harness {
    /// Reconciles `shop/db` as the leader while `scenario` plays the apiserver.
    async fn reconcile<S, F>(&self, scenario: S) -> Run
    where
        S: FnOnce(ApiServer) -> F,
        F: Future<Output = ApiServer> + Send + 'static,
    {
        self.reconcile_as(true, scenario).await
    }

    async fn reconcile_as<S, F>(&self, leader: bool, scenario: S) -> Run
    where
        S: FnOnce(ApiServer) -> F,
        F: Future<Output = ApiServer> + Send + 'static,
    {
        let (caches, policy, protect) = (self.caches.clone(), self.policy.clone(), self.protect);
        // The context (client and Event queue) is dropped when the reconcile ends.
        self.verify(leader, scenario, |w| {
            let ctx = Arc::new(Context {
                client: w.client,
                caches,
                events: w.events,
                metrics: w.metrics,
                leader: w.leader,
                policy,
                protect,
                keygen: Arc::new(crate::runtime::keygen::KeyGeneration::new(Some(1)).unwrap()),
                batches: crate::tracking::batch::Batches::new(std::time::Duration::ZERO),
                shared_locks: Default::default(),
                shard: None,
            });
            reconcile(key(), ctx)
        })
        .await
    }
}

// ------------------------------------------------------------------- tests

/// The reconcile of a new RandomSecret: creates its version, then applies a
/// Ready status. Returns the run and the generated values (to look for leaks).
async fn create_new_version(h: &Harness, rs: &Rs) -> (Run, Vec<String>) {
    let v = rs.version();
    let values = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (rs2, seen) = (rs.clone(), values.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let s = post.body.clone();
            assert_eq!(s["kind"], "Secret");
            assert_eq!(s["metadata"]["name"], v.secret_name.as_str());
            assert_eq!(s["metadata"]["namespace"], NS);
            assert_eq!(s["immutable"], true);
            assert_eq!(s["type"], "Opaque");
            assert_eq!(
                s["metadata"]["labels"],
                json!({LABEL_NAME: RS_NAME, LABEL_HASH: v.hash, LABEL_MANAGED_BY: MANAGED_BY})
            );
            assert!(s["metadata"]["annotations"][ANNOTATION_CREATED].is_string());
            assert_eq!(s["metadata"]["ownerReferences"], json!([owner_ref(RS_UID)]));
            assert_eq!(s["metadata"]["finalizers"], json!([FINALIZER_IN_USE]));
            let data = s["data"].as_object().expect("data");
            let keys: Vec<&str> = data.keys().map(|k| k.as_str()).collect();
            assert_eq!(keys, ["password", "token", "user"]);
            let generated: Vec<String> = ["password", "token"]
                .iter()
                .map(|k| {
                    let b: k8s_openapi::ByteString =
                        serde_json::from_value(data[*k].clone()).unwrap();
                    String::from_utf8(b.0).unwrap()
                })
                .collect();
            *seen.lock().unwrap() = generated.clone();
            post.respond(201, &stored(s, SECRET_UID, "2026-01-02T00:00:00Z"));

            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["observedGeneration"], 1);
            assert_eq!(status["secretName"], v.secret_name.as_str());
            assert_eq!(
                status["versions"],
                json!([{"name": v.secret_name, "hash": v.hash, "created": "2026-01-02T00:00:00Z",
                    "uid": SECRET_UID, "state": "current", "referencedBy": []}])
            );
            assert_eq!(status["liveVersions"], 1);
            assert_eq!(status["released"], json!([]));
            assert_eq!(
                conditions(&status),
                pairs(&[
                    ("True", "VersionReady"),
                    ("False", "VersionReady"),
                    ("False", "VersionReady")
                ])
            );
            assert_eq!(
                condition(&status, "Ready")["message"],
                format!("Secret {} is the current version", v.secret_name)
            );
            let text = patch.body.to_string();
            assert!(
                generated.iter().all(|g| !text.contains(g.as_str())),
                "no value in the status"
            );
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    let values = std::mem::take(&mut *values.lock().unwrap());
    (run, values)
}

/// Signing keys in a new version: each private key is PEM, and its JWKS
/// holds that key's public key alone (no previous version), whose kid is
/// the key's thumbprint. The RSA key comes from the blocking pool. One
/// POST and the status, as for strings.
#[tokio::test]
async fn a_new_version_holds_signing_keys_and_their_jwks() {
    use crate::api::SigningAlgorithm;
    use crate::generate::keypair;
    let h = Harness::new();
    let mut rs = Rs::test();
    rs.spec = json!({"keys": {
        "es": {"signingKey": {"algorithm": "ES256", "jwksKey": "es.jwks"}},
        "rs": {"signingKey": {"algorithm": "RS256", "keep": 3, "jwksKey": "rs.jwks"}},
    }});
    let rs = rs.cached_in(&h);
    let rs2 = rs.clone();
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let data = post.body["data"].clone();
            let text = |k: &str| {
                let b: k8s_openapi::ByteString = serde_json::from_value(data[k].clone()).unwrap();
                String::from_utf8(b.0).unwrap()
            };
            for (k, alg) in [
                ("es", SigningAlgorithm::ES256),
                ("rs", SigningAlgorithm::RS256),
            ] {
                let pem = text(k);
                assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{k}");
                let jwks: serde_json::Value =
                    serde_json::from_str(&text(&format!("{k}.jwks"))).unwrap();
                let kid = keypair::public_jwk(alg, &pem).unwrap().kid;
                assert_eq!(jwks["keys"].as_array().unwrap().len(), 1, "{k}: {jwks}");
                assert_eq!(jwks["keys"][0]["kid"], kid.as_str());
                assert!(
                    jwks.to_string().find("PRIVATE").is_none()
                        && jwks["keys"][0].get("d").is_none()
                );
            }
            let body = post.body.clone();
            post.respond(201, &stored(body, SECRET_UID, "2026-01-02T00:00:00Z"));
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert!(
                !patch.body.to_string().contains("BEGIN"),
                "no key in the status"
            );
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.metrics.versions_created.get(), 1);
}

/// A new RandomSecret: the Secret is created (immutable, labelled, owned
/// by the RandomSecret), the status applied Ready; nothing else.
#[tokio::test]
async fn a_new_randomsecret_creates_its_version_and_reports_ready() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let (run, values) = create_new_version(&h, &rs).await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("ok"), 1);
    assert_eq!(run.metrics.versions_created.get(), 1);
    assert_eq!(
        run.events(),
        pairs(&[("Normal", "VersionCreated")]),
        "one Event"
    );
    // No generated value reaches an Event.
    let posted = serde_json::to_string(&run.events).unwrap();
    assert!(values.iter().all(|v| !posted.contains(v.as_str())));
    // Both writes went through to the caches.
    let secret = h
        .caches
        .secrets
        .get(&key().sibling(&rs.version().secret_name))
        .unwrap();
    assert_eq!(&*secret.resource_version, "60");
    assert!(
        h.caches
            .randomsecrets
            .get(&key())
            .unwrap()
            .status
            .secret_name
            .is_some()
    );
}

/// Write-through: after the writes of a new version, a second reconcile of the same
/// key finds the Secret and the status in the caches and makes no request.
#[tokio::test]
async fn a_second_reconcile_after_our_writes_makes_no_request() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    create_new_version(&h, &rs).await;
    let run = h.reconcile(|api| async move { api }).await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("ok"), 1);
    assert_eq!(run.metrics.versions_created.get(), 0);
    assert!(run.events.is_empty());
}

/// AlreadyExists of our own Secret (the cache lagged, or a retry): the
/// existing one is read (metadata only), found ours, and not written again.
#[tokio::test]
async fn already_exists_of_our_own_secret_is_success() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let ours = VersionSecret::of(&rs);
    let (name, existing, rs2) = (ours.name(), ours.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let msg = format!("secrets \"{name}\" already exists");
            post.respond(409, &failure(409, "AlreadyExists", &msg, json!([])));
            api.get_secret(&name).await.respond(200, &existing.whole());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["secretName"], name.as_str());
            assert_eq!(
                status["versions"],
                json!([{"name": name, "hash": existing.hash(), "created": existing.created(),
                    "uid": SECRET_UID, "state": "current", "referencedBy": []}])
            );
            assert_eq!(condition(&status, "Ready")["status"], "True");
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("ok"), 1);
    assert_eq!(run.metrics.versions_created.get(), 0);
    assert_eq!(run.metrics.versions_adopted.get(), 0);
    assert!(run.events.is_empty(), "nothing happened worth an Event");
}

/// AlreadyExists of someone else's Secret: Stalled with
/// SecretNameConflict, read first so the listed versions and the last good
/// name are kept; looked at again in 60 s; one Warning Event.
#[tokio::test]
async fn already_exists_of_a_foreign_secret_is_a_stalled_name_conflict() {
    let h = Harness::new();
    let old = VersionSecret::of(&Rs::test()).cached_in(&h);
    let stored = ready_status(&old, &[]);
    let rs = Rs::test()
        .with_rotation("2")
        .with_status(stored.clone())
        .cached_in(&h);
    let taken = VersionSecret::of(&rs).foreign();
    let (name, rs2) = (taken.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let msg = format!("secrets \"{name}\" already exists");
            post.respond(409, &failure(409, "AlreadyExists", &msg, json!([])));
            api.get_secret(&name).await.respond(200, &taken.whole());
            // A non-Ready outcome reads the stored status (the cache keeps no
            // version list) before applying one.
            api.get_status().await.respond(200, &rs2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                conditions(&status),
                pairs(&[
                    ("False", "SecretNameConflict"),
                    ("False", "SecretNameConflict"),
                    ("True", "SecretNameConflict")
                ])
            );
            let message = condition(&status, "Stalled")["message"].as_str().unwrap();
            assert!(
                message.contains(&name) && message.contains("not created by randomsecret"),
                "{message}"
            );
            assert_eq!(condition(&status, "Ready")["message"], message);
            // The last good version stays current and listed.
            assert_eq!(status["secretName"], stored["secretName"]);
            assert_eq!(status["versions"], stored["versions"]);
            assert_eq!(status["observedGeneration"], 1);
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::RequeueAfter(Duration::from_secs(60)));
    assert_eq!(run.reconciles("stalled"), 1);
    assert_eq!(run.errors("SecretNameConflict"), 1);
    assert_eq!(run.events(), pairs(&[("Warning", "SecretNameConflict")]));
    assert_eq!(
        h.caches
            .randomsecrets
            .get(&key())
            .unwrap()
            .status
            .ready_reason
            .as_deref(),
        Some("SecretNameConflict"),
        "the status write went through to the cache"
    );

    // Looked at again, still taken: the same Stalled status is not written
    // again, and no second Warning.
    let name = VersionSecret::of(&rs).name();
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            post.respond(409, &failure(409, "AlreadyExists", "exists", json!([])));
            api.get_secret(&name)
                .await
                .respond(200, &VersionSecret::of(&rs).foreign().whole());
            api
        })
        .await;
    assert_eq!(run.next, Next::RequeueAfter(Duration::from_secs(60)));
    assert_eq!(run.reconciles("stalled"), 1);
    assert!(run.events.is_empty(), "no Warning on every recheck");
}

/// The namespace is being deleted: nothing to report or retry.
#[tokio::test]
async fn a_terminating_namespace_writes_nothing_and_waits() {
    let h = Harness::new();
    Rs::test().cached_in(&h);
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let msg = "secrets \"db-x\" is forbidden: unable to create new content in namespace shop because it is being terminated";
            let causes = json!([{"reason": "NamespaceTerminating", "message": "namespace shop is being terminated", "field": "metadata.namespace"}]);
            post.respond(403, &failure(403, "Forbidden", msg, causes));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("deleting"), 1);
    assert_eq!(run.errors("ApiError"), 0);
    assert!(run.events.is_empty());
}

/// A live version whose Secret is gone: read to be sure, then a dry-run
/// create tells a lost version (Stalled VersionLost, a Warning, never
/// created again) from a namespace being deleted (nothing reported).
#[tokio::test]
async fn a_lost_live_version_is_stalled_unless_its_namespace_is_going() {
    for terminating in [false, true] {
        let h = Harness::new();
        let live = VersionSecret::of(&Rs::test());
        let rs = Rs::test()
            .with_status(ready_status(&live, &[]))
            .cached_in(&h);
        let (name, rs2) = (live.name(), rs.clone());
        let run = h
            .reconcile(|mut api| async move {
                let get = api.next("GET of the missing version").await;
                let get = get.expect(Method::GET, &format!("{SECRETS}/{name}"), &[]);
                let msg = format!("secrets \"{name}\" not found");
                get.respond(404, &failure(404, "NotFound", &msg, json!([])));
                let probe = api.next("dry-run POST").await;
                let probe = probe.expect(
                    Method::POST,
                    SECRETS,
                    &[("dryRun", "All"), ("fieldManager", MANAGER)],
                );
                assert_eq!(probe.body["data"], Value::Null, "the probe carries no values");
                if terminating {
                    let msg = "unable to create new content in namespace shop because it is being terminated";
                    let causes = json!([{"reason": "NamespaceTerminating", "field": "metadata.namespace"}]);
                    probe.respond(403, &failure(403, "Forbidden", msg, causes));
                    return api;
                }
                let body = probe.body.clone();
                probe.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));
                api.get_status().await.respond(200, &rs2.json());
                let patch = api.apply_status().await;
                let status = patch.body["status"].clone();
                assert_eq!(condition(&status, "Stalled")["reason"], "VersionLost");
                patch.respond(200, &rs2.applied(&status));
                api
            })
            .await;
        assert_eq!(run.next, Next::AwaitChange);
        if terminating {
            assert_eq!(run.reconciles("deleting"), 1);
            assert!(run.events.is_empty());
        } else {
            assert_eq!(run.errors("VersionLost"), 1);
            assert_eq!(run.events(), pairs(&[("Warning", "VersionLost")]));
        }
    }
}

/// The apiserver rejects the Secret itself (422): Stalled SecretRejected
/// with its message; no retry, since only a spec change can help.
#[tokio::test]
async fn a_rejected_secret_is_stalled_until_the_spec_changes() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let rs2 = rs.clone();
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let msg = "Secret \"db-x\" is invalid: data[tls.crt]: Required value";
            post.respond(422, &failure(422, "Invalid", msg, json!([])));
            api.get_status().await.respond(200, &rs2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                conditions(&status),
                pairs(&[
                    ("False", "SecretRejected"),
                    ("False", "SecretRejected"),
                    ("True", "SecretRejected")
                ])
            );
            let message = condition(&status, "Stalled")["message"].as_str().unwrap();
            assert!(
                message.contains("data[tls.crt]: Required value"),
                "{message}"
            );
            assert_eq!(status.get("secretName"), None, "never Ready: no name");
            assert_eq!(status["versions"], json!([]));
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("stalled"), 1);
    assert_eq!(run.errors("SecretRejected"), 1);
    assert_eq!(run.events(), pairs(&[("Warning", "SecretRejected")]));
}

/// A transient apiserver error: Reconciling=True (ApiError) and a retry
/// with backoff; no Event.
#[tokio::test]
async fn a_server_error_is_reported_as_reconciling_and_retried() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let rs2 = rs.clone();
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            post.respond(
                500,
                &failure(
                    500,
                    "InternalError",
                    "etcdserver: request timed out",
                    json!([]),
                ),
            );
            api.get_status().await.respond(200, &rs2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                conditions(&status),
                pairs(&[
                    ("False", "ApiError"),
                    ("True", "ApiError"),
                    ("False", "ApiError")
                ])
            );
            let message = condition(&status, "Reconciling")["message"]
                .as_str()
                .unwrap();
            assert!(
                message.starts_with("creating Secret db-")
                    && message.contains("etcdserver: request timed out"),
                "{message}"
            );
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::Retry);
    assert_eq!(run.reconciles("error"), 1);
    assert_eq!(run.errors("ApiError"), 1);
    assert!(run.events.is_empty());
}

/// A standby replica keeps its caches warm and makes no request.
#[tokio::test]
async fn a_standby_replica_makes_no_request() {
    let h = Harness::new();
    Rs::test().cached_in(&h);
    let run = h.reconcile_as(false, |api| async move { api }).await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("standby"), 1);
    assert!(run.events.is_empty());
}

/// Everything already as it should be (the version exists and is owned,
/// the stored status is what would be written): no request at all.
#[tokio::test]
async fn an_identical_status_is_not_written_again() {
    let h = Harness::new();
    let current = VersionSecret::of(&Rs::test()).cached_in(&h);
    Rs::test()
        .with_status(ready_status(&current, &[]))
        .cached_in(&h);
    let run = h.reconcile(|api| async move { api }).await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("ok"), 1);
    assert!(run.events.is_empty());
}

/// A rotation: the new version is created; the old one, superseded,
/// unreferenced and beyond `history` (0), is deleted with preconditions (so
/// a Secret changed meanwhile is not), and the status lists it as released.
#[tokio::test]
async fn a_rotation_releases_the_unreferenced_old_version() {
    let h = Harness::new();
    let old = old_version(&h);
    let rs = rotated_past(&old, &h);
    let v = rs.version();
    assert_ne!(v.secret_name, old.name());
    let (old_name, old2, rs2) = (old.name(), old.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            assert_eq!(post.body["metadata"]["name"], v.secret_name.as_str());
            let body = post.body.clone();
            post.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));

            let delete = api.delete_secret(&old_name).await;
            assert_eq!(
                delete.body,
                json!({"preconditions": {"uid": OLD_SECRET_UID, "resourceVersion": "50"}})
            );
            // Our finalizer holds it: the apiserver answers with it Terminating.
            let terminating = old2.clone().terminating();
            let mut answer = terminating.whole();
            answer["metadata"]["resourceVersion"] = json!("51");
            delete.respond(200, &answer);
            // Then the finalizer goes, on the state the delete answered.
            let patch = api.patch_secret_metadata(&old_name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "51", "finalizers": null}})
            );
            let released = terminating.with_finalizers(&[]);
            patch.respond(200, &released.metadata_response());

            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["secretName"], v.secret_name.as_str());
            assert_eq!(
                status["versions"],
                json!([{"name": v.secret_name, "hash": v.hash, "created": "2026-02-01T00:00:00Z",
                    "uid": SECRET_UID, "state": "current", "referencedBy": [],
                    "rotatedKeys": ["password", "token"]}])
            );
            assert_eq!(status["released"], json!([old_name]));
            assert_eq!(status["liveVersions"], 1);
            assert_eq!(condition(&status, "Ready")["status"], "True");
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.metrics.versions_created.get(), 1);
    assert_eq!(run.metrics.versions_released.get(), 1);
    assert_eq!(
        run.events(),
        pairs(&[("Normal", "VersionCreated"), ("Normal", "VersionReleased")])
    );
    assert!(h.caches.secrets.get(&key().sibling(&old.name())).is_none());
}

/// An edit that rotates nothing (a static value): the previous version is
/// read whole with one GET, and the new version holds its generated values
/// byte for byte; it is then released like after a rotation. One request
/// more than a rotation, and no other.
#[tokio::test]
async fn a_static_edit_reads_the_previous_version_once_and_keeps_its_values() {
    let h = Harness::new();
    let old = old_version(&h);
    let mut edited = Rs::test();
    edited.spec["static"]["user"] = json!("app2");
    let rs = edited.with_status(ready_status(&old, &[])).cached_in(&h);
    let v = rs.version();
    let (old_secret, rs2) = (old.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let get = api.get_secret(&old_secret.name()).await;
            // Both generated keys, signed as the controller signs a version.
            let mut whole = old_secret.whole();
            whole["data"] = json!({"password": "cGFzc3dvcmQ=", "token": "MDAxMTIyMzM="});
            let unsigned: k8s_openapi::api::core::v1::Secret =
                serde_json::from_value(whole.clone()).unwrap();
            whole["metadata"]["annotations"][ANNOTATION_PROOF] = json!(proof_key().sign(&unsigned));
            get.respond(200, &whole);

            let post = api.create_secret().await;
            let data = &post.body["data"];
            assert_eq!(data["password"], "cGFzc3dvcmQ=");
            assert_eq!(data["token"], "MDAxMTIyMzM=");
            assert_eq!(data["user"], "YXBwMg==");
            let record = post.body["metadata"]["annotations"]
                [crate::version::record::ANNOTATION_LINEAGE]
                .as_str()
                .unwrap()
                .to_string();
            assert!(!record.contains("cGFzc3dvcmQ=") && !record.contains("password\":\"p"));
            let body = post.body.clone();
            post.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));
            api.delete_secret(&old_secret.name()).await.respond(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
            );
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["secretName"], v.secret_name.as_str());
            // Nothing rotated: no rotatedKeys, no CarriedOver condition.
            assert!(
                status["versions"][0].get("rotatedKeys").is_none(),
                "{status}"
            );
            assert!(
                !status["conditions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["type"] == "CarriedOver"),
                "{status}"
            );
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    let note = run
        .events
        .iter()
        .find(|e| e["reason"] == "VersionCreated")
        .unwrap()["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note.ends_with(": kept password, token"), "{note}");
}

/// A released version someone deleted first (another replica, a person):
/// the DELETE answers NotFound, which is no error: nothing more is asked,
/// nothing is told, and the status lists only the current version.
#[tokio::test]
async fn a_released_version_deleted_first_elsewhere_is_no_error() {
    let h = Harness::new();
    let old = old_version(&h);
    let rs = rotated_past(&old, &h);
    let v = rs.version();
    let (old_name, rs2) = (old.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.create_secret_answered().await;
            let delete = api.delete_secret(&old_name).await;
            let msg = format!("secrets \"{old_name}\" not found");
            delete.respond(404, &failure(404, "NotFound", &msg, json!([])));
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["secretName"], v.secret_name.as_str());
            assert_eq!(status["liveVersions"], 1);
            assert_eq!(condition(&status, "Ready")["status"], "True");
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.metrics.versions_released.get(), 0);
    assert_eq!(run.events(), pairs(&[("Normal", "VersionCreated")]));
}

/// A released version that changed since the cache saw it: the DELETE's
/// preconditions fail (409 Conflict), so it is read again into the cache
/// and the reconcile runs again soon, quietly (no status, no Warning).
#[tokio::test]
async fn a_release_whose_preconditions_fail_reads_again_and_retries_quietly() {
    let h = Harness::new();
    let old = old_version(&h);
    let rs = rotated_past(&old, &h);
    let (old_name, old2) = (old.name(), old.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.create_secret_answered().await;
            let delete = api.delete_secret(&old_name).await;
            let msg = format!("Operation cannot be fulfilled on secrets \"{old_name}\": Precondition failed: ResourceVersion in precondition: 50, ResourceVersion in object meta: 52");
            delete.respond(409, &failure(409, "Conflict", &msg, json!([])));
            api.read_again(&old2, "52").await;
            api
        })
        .await;
    assert_eq!(run.next, Next::Retry);
    assert_eq!(run.events(), pairs(&[("Normal", "VersionCreated")]));
    assert_eq!(run.metrics.versions_released.get(), 0);
    let cached = h.caches.secrets.get(&key().sibling(&old.name())).unwrap();
    assert_eq!(&*cached.resource_version, "52", "read again into the cache");
    drop(rs);
}

/// Overlap keys (`previous: true`): a rotation reads the version the status
/// records as current (one GET) and puts its value under `<key>.previous`;
/// the same name holding another object (a uid the status did not record)
/// gives no previous value, never a value of unknown origin.
#[tokio::test]
async fn a_rotation_with_overlap_keys_carries_the_recorded_previous_value() {
    // The status records the old version by uid; by uid, but the name now
    // holds another object; by creation time only (written before uids were).
    for (recorded, by_uid) in [(true, true), (false, true), (true, false)] {
        let h = Harness::new();
        let base = Rs {
            spec: json!({"keys": {"password": {"length": 16, "previous": true}, "pin": {"length": 4}}}),
            ..Rs::test()
        };
        let old = VersionSecret::of(&base)
            .with_uid(OLD_SECRET_UID)
            .created_at("2026-01-01T00:00:00")
            .cached_in(&h);
        let mut status = ready_status(&old, &[]);
        if !by_uid {
            status["versions"][0].as_object_mut().unwrap().remove("uid");
        }
        let rs = base
            .clone()
            .with_rotation("2")
            .with_status(status)
            .cached_in(&h);
        let v = rs.version();
        let (old_name, rs2) = (old.name(), rs.clone());
        let mut whole = old.whole();
        whole["data"] = json!({"password": "b2xkLXBhc3N3b3Jk", "pin": "MTIzNA=="});
        if !recorded {
            whole["metadata"]["uid"] = json!(REPLICASET_UID);
        }
        let run = h
            .reconcile(|mut api| async move {
                let get = api.get_secret(&old_name).await;
                get.respond(200, &whole);
                let post = api.create_secret().await;
                assert_eq!(post.body["metadata"]["name"], v.secret_name.as_str());
                let data = post.body["data"].as_object().expect("data").clone();
                let keys: Vec<&str> = data.keys().map(String::as_str).collect();
                if recorded {
                    assert_eq!(keys, ["password", "password.previous", "pin"]);
                    assert_eq!(data["password.previous"], "b2xkLXBhc3N3b3Jk");
                } else {
                    assert_eq!(keys, ["password", "pin"], "another object: no previous value");
                }
                assert_ne!(data["password"], "b2xkLXBhc3N3b3Jk", "a new value");
                let body = post.body.clone();
                post.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));
                if by_uid {
                    let delete = api.delete_secret(&old_name).await;
                    let gone = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": old_name, "kind": "secrets", "uid": OLD_SECRET_UID}});
                    delete.respond(200, &gone);
                } else {
                    // A version listed without its uid is read before it is
                    // released (and kept here: this mock's copy has no proof).
                    api.get_secret(&old_name).await.respond(200, &whole);
                }
                let patch = api.apply_status().await;
                let status = patch.body["status"].clone();
                assert_eq!(status["secretName"], v.secret_name.as_str());
                assert!(!patch.body.to_string().contains("b2xkLXBhc3N3b3Jk"), "no value in the status");
                patch.respond(200, &rs2.applied(&status));
                api
            })
            .await;
        assert_eq!(run.next, Next::AwaitChange);
        assert_eq!(run.metrics.versions_created.get(), 1);
    }
}

/// The same rotation while a watch is interrupted (the apiserver restarted,
/// say): the reference index may miss a ReplicaSet created during the gap,
/// so the old version is kept, owned by the RandomSecret as if within
/// history, until every watch flows again.
#[tokio::test]
async fn a_rotation_while_a_watch_is_interrupted_releases_nothing() {
    let h = Harness::new();
    let old = old_version(&h);
    h.caches
        .interruptions
        .failed("replicasets", std::time::Instant::now());
    assert!(!h.caches.references_current());
    let rs = rotated_past(&old, &h);
    let v = rs.version();
    let (old_name, old2, rs2) = (old.name(), old.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.create_secret_answered().await;

            // No delete, no owners patch: the status write comes next.
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                status["versions"],
                json!([
                    {"name": v.secret_name, "hash": v.hash, "created": "2026-02-01T00:00:00Z",
                        "uid": SECRET_UID, "state": "current", "referencedBy": [],
                        "rotatedKeys": ["password", "token"]},
                    {"name": old_name, "hash": old2.hash(), "created": "2026-01-01T00:00:00Z",
                        "uid": OLD_SECRET_UID, "state": "retained", "referencedBy": []},
                ])
            );
            assert_eq!(status["released"], json!([]));
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.metrics.versions_released.get(), 0);
    assert!(h.caches.secrets.get(&key().sibling(&old.name())).is_some());
}

/// A RandomSecret being deleted, or gone from the cache: no request.
#[tokio::test]
async fn a_deleted_or_deleting_randomsecret_makes_no_request() {
    let h = Harness::new();
    let run = h.reconcile(|api| async move { api }).await;
    assert_eq!((run.next, run.reconciles("gone")), (Next::AwaitChange, 1));
    Rs::test().deleting().cached_in(&h);
    let run = h.reconcile(|api| async move { api }).await;
    assert_eq!(
        (run.next, run.reconciles("deleting")),
        (Next::AwaitChange, 1)
    );
}

/// A rotation while a ReplicaSet still references the old version: it is
/// retained, owned by the ReplicaSet instead of the RandomSecret (so the
/// garbage collector deletes it with the ReplicaSet), never deleted here.
#[tokio::test]
async fn a_rotation_hands_a_referenced_old_version_to_its_replicaset() {
    let h = Harness::new();
    let old = old_version(&h);
    h.referenced_by_replicaset(&old.name(), "web-7d4b9c");
    let rs = rotated_past(&old, &h);
    let v = rs.version();
    let (old_name, old2, rs2) = (old.name(), old.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.create_secret_answered().await;

            let patch = api.patch_secret_metadata(&old_name).await;
            let replicaset = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c", "uid": REPLICASET_UID});
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "50", "ownerReferences": [replicaset]}})
            );
            let mut patched = old2.clone();
            patched.meta["ownerReferences"] = json!([replicaset]);
            patched.meta["resourceVersion"] = json!("51");
            patch.respond(200, &patched.metadata_response());

            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                status["versions"],
                json!([
                    {"name": v.secret_name, "hash": v.hash, "created": "2026-02-01T00:00:00Z",
                        "uid": SECRET_UID, "state": "current", "referencedBy": [],
                        "rotatedKeys": ["password", "token"]},
                    {"name": old_name, "hash": old2.hash(), "created": "2026-01-01T00:00:00Z",
                        "uid": OLD_SECRET_UID, "state": "retained", "referencedBy": ["ReplicaSet/web-7d4b9c"]},
                ])
            );
            assert_eq!(status["released"], json!([]));
            assert_eq!(status["liveVersions"], 2);
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.metrics.versions_released.get(), 0);
    let cached = h.caches.secrets.get(&key().sibling(&old.name())).unwrap();
    assert_eq!(
        &*cached.resource_version, "51",
        "the owners patch went through"
    );
}

/// The owners patch loses a race (the garbage collector removed a deleted
/// holder first): the Secret is read again into the cache, and the reconcile
/// runs again soon, quietly: no status, no Warning, no error counted.
#[tokio::test]
async fn an_owners_patch_that_loses_a_race_reads_again_and_retries_quietly() {
    let h = Harness::new();
    let old = old_version(&h);
    h.referenced_by_replicaset(&old.name(), "web-7d4b9c");
    let rs = rotated_past(&old, &h);
    let (old_name, old2) = (old.name(), old.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.create_secret_answered().await;
            let patch = api.patch_secret_metadata(&old_name).await;
            let msg = format!("Operation cannot be fulfilled on secrets \"{old_name}\": the object has been modified");
            patch.respond(409, &failure(409, "Conflict", &msg, json!([])));
            api.read_again(&old2, "52").await;
            api
        })
        .await;
    assert_eq!(run.next, Next::Retry);
    let reasons: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["VersionCreated"], "no Warning for a lost race");
    assert_eq!(run.errors("Conflict"), 0);
    let cached = h.caches.secrets.get(&key().sibling(&old.name())).unwrap();
    assert_eq!(&*cached.resource_version, "52", "read again into the cache");
    drop(rs);
}

/// A RandomSecret deleted with its versions orphaned and created again with
/// the same spec adopts the existing version: its owner reference is set to
/// the new object (optimistically, on the resourceVersion read), values kept.
#[tokio::test]
async fn a_recreated_randomsecret_adopts_its_orphaned_version() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let orphan = VersionSecret::of(&rs).owned_by(EARLIER_RS_UID);
    let (name, orphan2, rs2) = (orphan.name(), orphan.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            post.respond(409, &failure(409, "AlreadyExists", "exists", json!([])));
            api.get_secret(&name)
                .await
                .respond(200, &orphan2.whole());
            let patch = api.patch_secret_metadata(&name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "50", "ownerReferences": [owner_ref(RS_UID)]}})
            );
            let mut adopted = orphan2.clone().owned_by(RS_UID);
            adopted.meta["resourceVersion"] = json!("51");
            patch.respond(200, &adopted.metadata_response());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["secretName"], name.as_str());
            assert_eq!(condition(&status, "Ready")["status"], "True");
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.metrics.versions_adopted.get(), 1);
    assert_eq!(run.metrics.versions_created.get(), 0);
    assert_eq!(run.events(), pairs(&[("Normal", "VersionAdopted")]));
}

/// A `git revert` of a rotation whose version was already released: the name
/// comes back with new values, which an Event says; the version being
/// reverted from is released in turn, and the current name leaves the
/// released list.
#[tokio::test]
async fn reverting_to_a_released_version_creates_it_again_and_says_so() {
    let h = Harness::new();
    let reverted = Rs::test();
    let name = reverted.version().secret_name;
    let later = VersionSecret::of(&Rs::test().with_rotation("2"))
        .with_uid(OLD_SECRET_UID)
        .cached_in(&h);
    let rs = reverted
        .with_status(ready_status(&later, std::slice::from_ref(&name)))
        .cached_in(&h);
    let (later_name, rs2) = (later.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            assert_eq!(post.body["metadata"]["name"], name.as_str());
            let body = post.body.clone();
            post.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));
            let delete = api.delete_secret(&later_name).await;
            assert_eq!(
                delete.body,
                json!({"preconditions": {"uid": OLD_SECRET_UID, "resourceVersion": "50"}})
            );
            delete.respond(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
            );
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["secretName"], name.as_str());
            assert_eq!(status["released"], json!([later_name]));
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(
        run.events(),
        pairs(&[
            ("Normal", "VersionRecreated"),
            ("Normal", "VersionReleased")
        ])
    );
    let note = run
        .events
        .iter()
        .find(|e| e["reason"] == "VersionRecreated")
        .unwrap()["note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note.contains("new values"), "{note}");
}

/// A Ready status write whose response shows a newer spec (edited while this
/// reconcile ran) reconciles again at once: the write went through to the
/// cache with the newer generation, so the edit's watch event, older than
/// the write, triggers nothing.
#[tokio::test]
async fn a_ready_status_write_that_shows_a_newer_spec_reconciles_again() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let version = VersionSecret::of(&rs).cached_in(&h);
    let edited = rs.clone().edited(&Rs::test().with_rotation("2"));
    let edited2 = edited.clone();
    let run = h
        .reconcile(|mut api| async move {
            // Not created by this process nor recorded in the status: read
            // whole once to check its proof.
            api.get_secret(&version.name())
                .await
                .respond(200, &version.whole());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["observedGeneration"], 1);
            assert_eq!(condition(&status, "Ready")["status"], "True");
            patch.respond(200, &edited2.applied(&status));
            api
        })
        .await;
    let event: RandomSecretObject = serde_json::from_value(edited.json()).unwrap();
    assert!(
        h.caches
            .randomsecrets
            .handle(&Event::Apply(event))
            .is_empty(),
        "the edit's own watch event triggers nothing"
    );
    assert_eq!(run.next, Next::RequeueAfter(Duration::ZERO));
}

/// The same on the Stalled path: a user who fixes a spec while its Stalled
/// status is being written must see the fix reconciled. Today the fix is
/// not reconciled until a restart, a leader change or another edit: see the
/// ignore reason.
#[tokio::test]
async fn a_stalled_status_write_that_shows_a_newer_spec_reconciles_again() {
    let h = Harness::new();
    let bad = Rs::invalid().cached_in(&h);
    let fixed = bad.edited(&Rs::test());
    let fixed2 = fixed.clone();
    let run = h
        .reconcile(|mut api| async move {
            api.get_status().await.respond(200, &fixed2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                conditions(&status),
                pairs(&[
                    ("False", "InvalidLength"),
                    ("False", "InvalidLength"),
                    ("True", "InvalidLength")
                ])
            );
            assert_eq!(status["observedGeneration"], 1, "what was reconciled");
            patch.respond(200, &fixed2.applied(&status));
            api
        })
        .await;
    let event: RandomSecretObject = serde_json::from_value(fixed.json()).unwrap();
    assert!(
        h.caches
            .randomsecrets
            .handle(&Event::Apply(event))
            .is_empty(),
        "the fix's own watch event triggers nothing"
    );
    assert_eq!(
        run.next,
        Next::RequeueAfter(Duration::ZERO),
        "the fixed spec must be reconciled again, as on the Ready path"
    );
}

/// A Secret planted at the next version's name with our labels (the name is
/// computable from git) but no proof: Stalled SecretNameConflict, never
/// adopted, never patched.
#[tokio::test]
async fn a_planted_secret_with_our_labels_is_not_adopted() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let planted = VersionSecret::of(&rs).unproven().cached_in(&h);
    let (name, rs2) = (planted.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.get_status().await.respond(200, &rs2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(condition(&status, "Ready")["reason"], "SecretNameConflict");
            let message = condition(&status, "Ready")["message"].as_str().unwrap();
            assert!(
                message.contains(&name) && message.contains("not a valid proof"),
                "{message}"
            );
            assert!(status.get("secretName").is_none_or(Value::is_null));
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.errors("SecretNameConflict"), 1);
    assert_eq!(run.metrics.versions_adopted.get(), 0);
}

/// A proof copied from a real version onto a Secret with other values: the
/// metadata verifies, so the Secret is read whole once, and the values give
/// it away.
#[tokio::test]
async fn a_copied_proof_on_other_values_is_caught_by_a_whole_read() {
    let h = Harness::new();
    let rs = Rs::test().cached_in(&h);
    let copy = VersionSecret::of(&rs).cached_in(&h);
    let (name, rs2) = (copy.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let mut other = copy.whole();
            other["data"] = json!({"password": "b3RoZXI="});
            api.get_secret(&name).await.respond(200, &other);
            api.get_status().await.respond(200, &rs2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(condition(&status, "Ready")["reason"], "SecretNameConflict");
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.errors("SecretNameConflict"), 1);
    assert_eq!(run.metrics.versions_adopted.get(), 0);
}

/// A version made before proofs existed, which the status records (same
/// name and creation time): read whole and signed with one metadata patch,
/// conditional on its resourceVersion; then Ready as before.
#[tokio::test]
async fn a_recorded_version_from_before_proofs_is_signed_once() {
    let h = Harness::new();
    let signed = VersionSecret::of(&Rs::test());
    let legacy = signed.clone().unproven().cached_in(&h);
    let stored = ready_status(&legacy, &[]);
    Rs::test().with_status(stored).cached_in(&h);
    let (name, signed2) = (legacy.name(), signed.clone());
    let run = h
        .reconcile(|mut api| async move {
            let signed = signed2;
            api.get_secret(&name)
                .await
                .respond(200, &legacy.whole());
            let patch = api.patch_secret_metadata(&name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "50",
                    "annotations": {ANNOTATION_PROOF: signed.meta["annotations"][ANNOTATION_PROOF]}}})
            );
            let mut patched = signed.clone();
            patched.meta["resourceVersion"] = json!("51");
            patch.respond(200, &patched.metadata_response());
            api
        })
        .await;
    assert_eq!(run.reconciles("ok"), 1);
    let cached = h
        .caches
        .secrets
        .get(&key().sibling(&signed.name()))
        .unwrap();
    assert_eq!(
        (cached.proof, cached.verified),
        (crate::proof::Proof::Valid, true)
    );
}

/// A labelled Secret without proof among the versions: a Warning, and it is
/// neither patched nor deleted (it is not even listed).
#[tokio::test]
async fn an_unproven_look_alike_among_the_versions_is_left_alone() {
    let h = Harness::new();
    let current = VersionSecret::of(&Rs::test()).cached_in(&h);
    let stored = ready_status(&current, &[]);
    Rs::test().with_status(stored).cached_in(&h);
    let mut other = VersionSecret::of(&Rs::test().with_rotation("9"))
        .with_uid(OLD_SECRET_UID)
        .unproven();
    other.meta["ownerReferences"] = json!([]);
    other.cached_in(&h);
    let run = h.reconcile(|api| async move { api }).await;
    assert_eq!(run.reconciles("ok"), 1);
    assert_eq!(run.events(), pairs(&[("Warning", "UnprovenSecret")]));
}

/// Leadership that ends mid-reconcile (the renew deadline passed): the
/// reconcile stops before its next write (here: the status) and counts as
/// a standby's; the new leader reconciles everything when it takes over.
#[tokio::test]
async fn a_leader_whose_lease_lapses_mid_reconcile_writes_nothing_more() {
    let h = Harness::new();
    Rs::test().cached_in(&h);
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            let body = post.body.clone();
            api.lose_leadership();
            post.respond(201, &stored(body, SECRET_UID, "2026-01-02T00:00:00Z"));
            api
        })
        .await;
    assert_eq!(run.reconciles("standby"), 1);
    assert_eq!(run.errors("NotLeading"), 0, "not an error");
}

/// Outside the operators' allow list (`--allow-secret-types`): Stalled
/// NotAllowed with what is allowed, and no Secret is created.
#[tokio::test]
async fn a_type_outside_the_allow_list_is_refused_before_anything_is_created() {
    let mut h = Harness::new();
    h.policy.types = vec!["Opaque".into()];
    let mut rs = Rs::test();
    rs.spec["type"] = json!("example.com/other");
    let rs = rs.cached_in(&h);
    let rs2 = rs.clone();
    let run = h
        .reconcile(|mut api| async move {
            api.get_status().await.respond(200, &rs2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(condition(&status, "Ready")["reason"], "NotAllowed");
            assert_eq!(condition(&status, "Stalled")["status"], "True");
            let message = condition(&status, "Ready")["message"].as_str().unwrap();
            assert!(
                message.contains("example.com/other") && message.contains("Opaque"),
                "{message}"
            );
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.errors("NotAllowed"), 1);
    assert_eq!(run.metrics.versions_created.get(), 0);
}

/// Issue 12, point 10: a spec that bypassed admission with what the CRD now
/// refuses (a key starting with '..', C1 controls or 254 characters in
/// rotation, an invisible symbol, a period too short) is Stalled with the
/// reason and a message that says what to fix; no Secret is written.
#[tokio::test]
async fn specs_the_crd_refuses_are_stalled_with_what_to_fix() {
    let cases = [
        (
            json!({"keys": {"..x": {"length": 8}}}),
            "InvalidKey",
            "not starting with '..'",
        ),
        (
            json!({"static": {"..": "v"}}),
            "InvalidKey",
            "not '.' or '..'",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "rotation": "\u{9b}31m"}),
            "InvalidRotation",
            "control characters (C0, DEL or C1)",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "rotation": "r".repeat(254)}),
            "InvalidRotation",
            "longer than 253 characters",
        ),
        (
            json!({"keys": {"k": {"length": 8, "symbolCharacters": "!\u{202e}"}}}),
            "InvalidSymbols",
            "invisible characters",
        ),
        (
            json!({"keys": {"k": {"length": 8}}, "rotateEvery": "59s"}),
            "InvalidRotateEvery",
            "at least 1m",
        ),
    ];
    for (spec, reason, fix) in cases {
        let h = Harness::new();
        let bad = Rs {
            spec: spec.clone(),
            ..Rs::test()
        }
        .cached_in(&h);
        let bad2 = bad.clone();
        h.reconcile(|mut api| async move {
            api.get_status().await.respond(200, &bad2.json());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(
                conditions(&status),
                pairs(&[("False", reason), ("False", reason), ("True", reason)]),
                "{spec}"
            );
            let message = condition(&status, "Ready")["message"].as_str().unwrap();
            assert!(message.contains(fix), "{spec}: {message}");
            patch.respond(200, &bad2.applied(&status));
            api
        })
        .await;
    }
}

// ------------------------------------------------- deletion protection

/// Without deletion protection (`--deletion-protection=false`): a new
/// version has no finalizer, a release is one DELETE (answered: deleted at
/// once), and a kept version that holds the finalizer loses it.
#[tokio::test]
async fn without_protection_no_finalizer_is_set_and_a_release_is_one_delete() {
    let mut h = Harness::new();
    h.protect = false;
    let old = VersionSecret::of(&Rs::test())
        .with_uid(OLD_SECRET_UID)
        .created_at("2026-01-01T00:00:00")
        .with_finalizers(&[])
        .cached_in(&h);
    let rs = rotated_past(&old, &h);
    let (old_name, rs2) = (old.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let post = api.create_secret().await;
            assert!(post.body["metadata"].get("finalizers").is_none());
            let body = post.body.clone();
            post.respond(201, &stored(body, SECRET_UID, "2026-02-01T00:00:00Z"));
            let delete = api.delete_secret(&old_name).await;
            // What the apiserver answers for a Secret deleted at once.
            let gone = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": old_name, "kind": "secrets", "uid": OLD_SECRET_UID}});
            delete.respond(200, &gone);
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["released"], json!([old_name]));
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.metrics.versions_released.get(), 1);

    // A version protected by an earlier run loses the finalizer.
    let h = {
        let mut h = Harness::new();
        h.protect = false;
        h
    };
    let current = VersionSecret::of(&Rs::test()).cached_in(&h);
    Rs::test()
        .with_status(ready_status(&current, &[]))
        .cached_in(&h);
    let name = current.name();
    let run = h
        .reconcile(|mut api| async move {
            let patch = api.patch_secret_metadata(&name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "50", "finalizers": null}})
            );
            patch.respond(200, &current.with_finalizers(&[]).metadata_response());
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert!(run.events.is_empty());
}

/// The current version deleted by hand: our finalizer keeps it readable;
/// no request touches it, the status shows it `deleting`, and a Warning
/// Event says who holds it, once (the next reconcile sees the status).
#[tokio::test]
async fn a_held_version_deleted_by_hand_stays_and_is_reported_once() {
    let h = Harness::new();
    let current = VersionSecret::of(&Rs::test()).terminating().cached_in(&h);
    let rs = Rs::test()
        .with_status(ready_status(&current, &[]))
        .cached_in(&h);
    let (name, rs2) = (current.name(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["versions"][0]["name"], name.as_str());
            assert_eq!(status["versions"][0]["state"], "current");
            assert_eq!(status["versions"][0]["deleting"], true);
            assert_eq!(condition(&status, "Ready")["status"], "True");
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.events(), pairs(&[("Warning", "DeletionHeld")]));
    let note = run.events[0]["note"].as_str().unwrap();
    assert!(
        note.contains(&current.name()) && note.contains("its current version"),
        "{note}"
    );
    let again = h.reconcile(|api| async move { api }).await;
    assert!(again.events.is_empty(), "reported once");
}

/// A superseded version deleted earlier and held by its ReplicaSet until
/// now: once released, only the finalizer is removed (it is deleted
/// already), and that is its release.
#[tokio::test]
async fn a_version_deleted_while_held_is_let_go_once_released() {
    let h = Harness::new();
    let old = old_version(&h).terminating().cached_in(&h);
    let rs = rotated_past(&old, &h);
    let (old_name, old2, rs2) = (old.name(), old.clone(), rs.clone());
    let run = h
        .reconcile(|mut api| async move {
            api.create_secret_answered().await;
            let patch = api.patch_secret_metadata(&old_name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "60", "finalizers": null}})
            );
            patch.respond(200, &old2.with_finalizers(&[]).metadata_response());
            let patch = api.apply_status().await;
            let status = patch.body["status"].clone();
            assert_eq!(status["released"], json!([old_name]));
            assert_eq!(status["liveVersions"], 1);
            patch.respond(200, &rs2.applied(&status));
            api
        })
        .await;
    assert_eq!(run.metrics.versions_released.get(), 1);
    assert_eq!(
        run.events(),
        pairs(&[("Normal", "VersionCreated"), ("Normal", "VersionReleased")])
    );
}

/// A version made before deletion protection gets the finalizer, once,
/// conditional on the state cached; nothing else is written.
#[tokio::test]
async fn a_version_made_before_protection_gets_the_finalizer() {
    let h = Harness::new();
    let current = VersionSecret::of(&Rs::test())
        .with_finalizers(&[])
        .cached_in(&h);
    Rs::test()
        .with_status(ready_status(&current, &[]))
        .cached_in(&h);
    let name = current.name();
    let run = h
        .reconcile(|mut api| async move {
            let patch = api.patch_secret_metadata(&name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "50", "finalizers": [FINALIZER_IN_USE]}})
            );
            let mut patched = current.with_finalizers(&[FINALIZER_IN_USE]);
            patched.meta["resourceVersion"] = json!("51");
            patch.respond(200, &patched.metadata_response());
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    let again = h.reconcile(|api| async move { api }).await;
    assert!(again.events.is_empty());
}

/// A deleted RandomSecret: its version being deleted that nothing
/// references loses our finalizer, keeping another's (read first, as the
/// cache knows only that there is one); one a ReplicaSet references stays.
#[tokio::test]
async fn the_versions_of_a_deleted_randomsecret_go_once_nothing_references_them() {
    let h = Harness::new();
    let held = old_version(&h).terminating().cached_in(&h);
    h.referenced_by_replicaset(&held.name(), "web-7d4b9c");
    let free = VersionSecret::of(&Rs::test().with_rotation("2"))
        .with_finalizers(&["example.com/keep", FINALIZER_IN_USE])
        .terminating()
        .cached_in(&h);
    let (name, free2) = (free.name(), free.clone());
    let run = h
        .reconcile(|mut api| async move {
            let get = api.next("GET of the Secret's metadata").await;
            let get = get.expect(Method::GET, &format!("{SECRETS}/{name}"), &[]);
            assert!(get.header("accept").contains("as=PartialObjectMetadata"));
            get.respond(200, &free2.metadata_response());
            let patch = api.patch_secret_metadata(&name).await;
            assert_eq!(
                patch.body,
                json!({"metadata": {"resourceVersion": "60", "finalizers": ["example.com/keep"]}})
            );
            let mut patched = free2.with_finalizers(&["example.com/keep"]);
            patched.meta["resourceVersion"] = json!("61");
            patch.respond(200, &patched.metadata_response());
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.reconciles("gone"), 1);
    assert_eq!(run.metrics.versions_released.get(), 1);
    // Nothing more to let go while the ReplicaSet references the other.
    let again = h.reconcile(|api| async move { api }).await;
    assert_eq!(again.metrics.versions_released.get(), 0);
}

/// The current version made before carry-over and deletion protection (an
/// upgrade): one metadata patch gives it both its record of how its values
/// were generated (signed, so the next edit carries them over) and the
/// finalizer; nothing else is written.
#[tokio::test]
async fn a_version_from_before_carry_over_gets_its_record_and_finalizer_in_one_patch() {
    let h = Harness::new();
    let mut legacy = VersionSecret::of(&Rs::test()).with_finalizers(&[]);
    legacy.meta["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(crate::version::record::ANNOTATION_LINEAGE);
    let legacy = legacy.cached_in(&h);
    assert!(
        h.caches
            .secrets
            .get(&key().sibling(&legacy.name()))
            .unwrap()
            .record
            .missing
    );
    Rs::test()
        .with_status(ready_status(&legacy, &[]))
        .cached_in(&h);
    let (name, legacy2) = (legacy.name(), legacy.clone());
    let run = h
        .reconcile(|mut api| async move {
            let patch = api.patch_secret_metadata(&name).await;
            let meta = &patch.body["metadata"];
            assert_eq!(meta["resourceVersion"], "50");
            assert_eq!(meta["finalizers"], json!([FINALIZER_IN_USE]));
            let record = meta["annotations"][crate::version::record::ANNOTATION_LINEAGE]
                .as_str()
                .expect("the record")
                .to_string();
            // It verifies, and records the generators of the spec the name is the hash of.
            let read = crate::version::record::Record::read(&proof_key(), NS, &name, Some(&record))
                .expect("a record that verifies");
            assert_eq!(
                read.lineage,
                crate::version::carry::Lineage::of(&Rs::test().version().spec)
            );
            assert!(read.rotated.is_empty() && !read.uncarried);
            assert_eq!(meta.as_object().unwrap().len(), 3, "{meta}");
            let mut patched = legacy2.with_finalizers(&[FINALIZER_IN_USE]);
            patched.meta["annotations"][crate::version::record::ANNOTATION_LINEAGE] = json!(record);
            patched.meta["resourceVersion"] = json!("51");
            patch.respond(200, &patched.metadata_response());
            api
        })
        .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert!(run.events.is_empty());
    let cached = h
        .caches
        .secrets
        .get(&key().sibling(&legacy.name()))
        .unwrap();
    assert!(!cached.record.missing && cached.record.seed != 0);
    let again = h.reconcile(|api| async move { api }).await;
    assert!(again.events.is_empty(), "patched once");
}
