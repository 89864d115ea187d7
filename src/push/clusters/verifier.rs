//! The cluster push against the strict mocked apiserver (`crate::testing`):
//! the dispatch (finalizer, routing, deletion policy) upstream, and one
//! cluster's sync (anchor, copy, retention, cleanup) with a second mocked
//! apiserver as the downstream cluster. Downstream, the link's watches
//! (lists and watches of secrets, replicasets, controllerrevisions, pods)
//! are answered apart, with the objects a test puts there; every other
//! request there is strict, as upstream.

use super::{Context, FINALIZER, Linked, MANAGER, Metrics, admit, copy};
use crate::cache::Key;
use crate::cache::slim::RandomSecretObject;
use crate::push::index::Index;
use crate::runtime::runner::Next;
use crate::testing::*;
use futures::FutureExt;
use http::{Method, Request, Response};
use k8s_openapi::api::core::v1::Secret;
use kube::client::Body;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;
use tower::{Service, ServiceExt};
use tower_test::mock;

const CONNECTION: &str = "/apis/randomsecret.io/v1/clusterconnections/east";
/// The downstream namespace: the RandomSecret's own (no spec namespace).
const DOWN_SECRETS: &str = "/api/v1/namespaces/shop/secrets";
const ANCHOR_UID: &str = "a1000000-0000-4000-8000-000000000001";
const COPY_UID: &str = "c1000000-0000-4000-8000-000000000001";
const OLD_COPY_UID: &str = "c2000000-0000-4000-8000-000000000002";
const DOWN_RS_UID: &str = "d1000000-0000-4000-8000-000000000001";

/// `spec.push` with one cluster target through ClusterConnection `east`.
fn cluster_target(policy: &str) -> Value {
    json!({"clusters": [{"connectionRef": {"name": "east"}, "deletionPolicy": policy}]})
}

fn pushing(policy: &str, finalizers: &[&str]) -> Rs {
    Rs::test()
        .with_push(cluster_target(policy))
        .with_meta("finalizers", json!(finalizers))
}

/// The current version of `rs` (cached, as the watch saw it), made for `east`.
fn version_for_east(rs: &Rs, h: &Harness) -> VersionSecret {
    VersionSecret::of(rs)
        .annotated(crate::push::targets::ANNOTATION, "cluster:east")
        .cached_in(h)
}

/// What the upstream side of the cluster push is given, and what it leaves.
struct Upstream {
    ctx: Arc<Context>,
    _reports: UnboundedReceiver<Key>,
    dispatches: UnboundedReceiver<Key>,
}

fn context(w: Wiring, h: &Harness, rs: &Rs) -> Upstream {
    let index = Index::default();
    let obj: RandomSecretObject = serde_json::from_value(rs.json()).unwrap();
    index.handle(&Event::Apply(obj));
    let (reports, reports_rx) = tokio::sync::mpsc::unbounded_channel();
    let (dispatches, dispatches_rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = Arc::new(Context {
        client: w.client,
        leader: w.leader,
        events: w.events,
        metrics: Metrics::register(&mut prometheus_client::registry::Registry::default()),
        caches: h.caches.clone(),
        links: Default::default(),
        results: Default::default(),
        cleaned: Default::default(),
        reports,
        dispatches,
        index: Arc::new(index),
        shutdown: futures::future::pending().boxed().shared(),
        settings: admit::Settings::new(Default::default(), &[], false),
    });
    Upstream {
        ctx,
        _reports: reports_rx,
        dispatches: dispatches_rx,
    }
}

/// The recorded result of `east` for `shop/db`: (synced, reason, names kept).
fn recorded(ctx: &Context) -> Option<(bool, String, Vec<String>)> {
    let results = ctx.results.lock().unwrap();
    let s = results.get(&key())?.get("east")?;
    Some((s.synced, s.reason.clone(), s.secret_names.clone()))
}

fn not_found() -> Value {
    failure(404, "NotFound", "not found", json!([]))
}

async fn get_rs(api: &mut ApiServer) -> Call {
    let call = api.next("GET of the RandomSecret").await;
    call.expect(Method::GET, OBJECT, &[])
}

async fn patch_finalizers(api: &mut ApiServer, rs: &Rs, want: &[&str]) {
    let call = api.next("PATCH of the finalizers").await;
    let call = call.expect(Method::PATCH, OBJECT, &[]);
    assert_eq!(call.header("content-type"), "application/merge-patch+json");
    assert_eq!(
        call.body,
        json!({"metadata": {"resourceVersion": rs.resource_version.to_string(), "finalizers": want}})
    );
    call.respond(200, &rs.json());
}

async fn get_version_metadata(api: &mut ApiServer, v: &VersionSecret) {
    let call = api.next("metadata GET of the version").await;
    let call = call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[]);
    assert!(call.header("accept").contains("as=PartialObjectMetadata"));
    call.respond(200, &v.metadata_response());
}

// --------------------------------------------------------- the dispatch

/// One dispatch of `shop/db` (cached in the push index as `rs`).
async fn dispatch<S, F>(rs: &Rs, scenario: S) -> Run<(Next, Option<(bool, String, Vec<String>)>)>
where
    S: FnOnce(ApiServer) -> F,
    F: Future<Output = ApiServer> + Send + 'static,
{
    let h = Harness::new();
    let rs = rs.clone();
    h.verify(true, scenario, |w| {
        let up = context(w, &h, &rs);
        async move {
            let next = super::dispatch(key(), up.ctx.clone()).await;
            (next, recorded(&up.ctx))
        }
    })
    .await
}

/// deletionPolicy Delete: the finalizer first, alone; no connection is read.
#[tokio::test]
async fn a_delete_target_takes_the_finalizer_first() {
    let rs = pushing("Delete", &[]);
    let rs2 = rs.clone();
    let run = dispatch(&rs, |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        patch_finalizers(&mut api, &rs2, &[FINALIZER]).await;
        api
    })
    .await;
    assert_eq!(run.next.0, Next::AwaitChange);
}

/// A target removed from the spec: the finalizer goes (other writers'
/// stay), the copies downstream are forgotten, never deleted.
#[tokio::test]
async fn a_removed_target_drops_the_finalizer_and_nothing_else() {
    let rs = Rs::test().with_meta("finalizers", json!([crate::push::FINALIZER, FINALIZER]));
    let rs2 = rs.clone();
    let run = dispatch(&rs, |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        patch_finalizers(&mut api, &rs2, &[crate::push::FINALIZER]).await;
        api
    })
    .await;
    assert_eq!(run.next.0, Next::AwaitChange);
}

/// A connection that does not exist: recorded as the target's result
/// (ConnectionNotFound), looked at again at the resync; nothing written.
#[tokio::test]
async fn a_missing_connection_is_recorded_for_the_target() {
    let rs = pushing("Retain", &[]);
    let rs2 = rs.clone();
    let run = dispatch(&rs, |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        let call = api.next("GET of the ClusterConnection").await;
        call.expect(Method::GET, CONNECTION, &[])
            .respond(404, &not_found());
        api
    })
    .await;
    assert_eq!(run.next.0, Next::RequeueAfter(super::RESYNC));
    assert_eq!(
        run.next.1,
        Some((false, "ConnectionNotFound".into(), vec![]))
    );
}

/// A deletion with deletionPolicy Retain (a finalizer left from Delete)
/// keeps the copies: no connection is read, the finalizer goes.
#[tokio::test]
async fn a_retain_deletion_keeps_the_copies() {
    let rs = pushing("Retain", &[FINALIZER]).deleted_ago(Duration::from_secs(5));
    let rs2 = rs.clone();
    let run = dispatch(&rs, |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        patch_finalizers(&mut api, &rs2, &[]).await;
        api
    })
    .await;
    assert_eq!(run.next.0, Next::AwaitChange);
    assert!(run.events.is_empty());
}

/// A deletion through a connection that is gone: no one can delete the
/// copies there now; they are kept, a Warning says so, the finalizer goes.
#[tokio::test]
async fn a_deletion_whose_connection_is_gone_keeps_the_copies_and_says_so() {
    let h = Harness::new();
    let base = pushing("Delete", &[FINALIZER]);
    let v = version_for_east(&base, &h);
    let rs = base
        .with_status(ready_status(&v, &[]))
        .deleted_ago(Duration::from_secs(5));
    let rs2 = rs.clone();
    let run = dispatch(&rs, |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        // An orphan deletion's version would have lost our owner reference.
        get_version_metadata(&mut api, &v).await;
        let call = api.next("GET of the ClusterConnection").await;
        call.expect(Method::GET, CONNECTION, &[])
            .respond(404, &not_found());
        patch_finalizers(&mut api, &rs2, &[]).await;
        api
    })
    .await;
    assert_eq!(run.next.0, Next::AwaitChange);
    assert_eq!(run.events(), pairs(&[("Warning", "ClusterCopiesKept")]));
    let note = run.events[0]["note"].as_str().unwrap();
    assert!(note.contains("db-anchor"), "{note}");
}

// ------------------------------------------------- the downstream cluster

/// A mocked downstream apiserver: lists answered with `replicasets`, the
/// other kinds empty, watches held open; every other request goes to the
/// strict `ApiServer` returned. (Our objects there are given to the link's
/// state after the first lists: a copy a list brings triggers a sync of
/// the link's own runner, which the test does not run.)
fn downstream(replicasets: Vec<Value>) -> (kube::Client, ApiServer) {
    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let (mut strict, strict_handle) = mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some((req, send)) = handle.next_request().await {
            let query = req.uri().query().unwrap_or_default().to_string();
            let path = req.uri().path().to_string();
            let kind = path.rsplit('/').next().unwrap_or_default().to_string();
            let watched = ["secrets", "replicasets", "controllerrevisions", "pods"];
            if req.method() == Method::GET && watched.contains(&kind.as_str()) {
                if query.contains("watch=true") {
                    held.push(send);
                    continue;
                }
                if kind == "secrets" {
                    assert!(
                        query.contains("labelSelector=randomsecret.io%2Fcopy-of"),
                        "the copies are watched by label: {query}"
                    );
                }
                let items = match kind.as_str() {
                    "replicasets" => replicasets.clone(),
                    _ => vec![],
                };
                let list = json!({"apiVersion": "v1", "kind": "List",
                    "metadata": {"resourceVersion": "10"}, "items": items});
                send.send_response(
                    Response::builder()
                        .status(200)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&list).unwrap()))
                        .unwrap(),
                );
                continue;
            }
            let answer = strict.ready().await.unwrap().call(req);
            tokio::spawn(async move {
                if let Ok(r) = answer.await {
                    send.send_response(r);
                }
            });
        }
    });
    let (lease, _) = tokio::sync::watch::channel(true);
    (
        kube::Client::new(service, "default"),
        ApiServer(strict_handle, lease),
    )
}

/// The ClusterConnection `east` as linked: `shop` allowed.
fn grant() -> admit::Grant {
    let spec: crate::api::connections::ClusterConnectionSpec = serde_json::from_value(json!({
        "kubeconfigSecretRef": {"name": "east", "namespace": "randomsecret-system"},
        "allowedNamespaces": ["shop"]}))
    .unwrap();
    admit::Grant::of(&spec)
}

/// One sync of `shop/db` with cluster `east` (already linked, its watches
/// listed, then `ours` there as the copies' watch would report them), while `up` plays the upstream apiserver and `down` the
/// downstream one. Returns what sync returned, the result recorded, and
/// whether the dispatcher was told the cleanup is done.
async fn sync_once<U, UF, D, DF>(
    h: &Harness,
    rs: &Rs,
    (ours, replicasets): (Vec<Value>, Vec<Value>),
    up: U,
    down: D,
) -> Run<(Next, Option<(bool, String, Vec<String>)>, bool)>
where
    U: FnOnce(ApiServer) -> UF,
    UF: Future<Output = ApiServer> + Send + 'static,
    D: FnOnce(ApiServer) -> DF,
    DF: Future<Output = ApiServer> + Send + 'static,
{
    let (client, down_api) = downstream(replicasets);
    let down_scenario = down(down_api);
    let down_verifier = tokio::spawn(async move { down_scenario.await.no_more().await });
    let rs = rs.clone();
    let run = h
        .verify(true, up, |w| {
            let mut upstream = context(w, h, &rs);
            async move {
                let ctx = upstream.ctx.clone();
                let link = super::start_link("east", client, Duration::from_secs(5), &ctx);
                ctx.links.map.lock().unwrap().insert(
                    "east".into(),
                    Linked {
                        link: link.clone(),
                        version: ("1".into(), "1".into()),
                        grant: grant(),
                        read_at: Instant::now(),
                    },
                );
                let d = link.namespace(NS, &ctx);
                let listed = Instant::now();
                while !d.listed() {
                    assert!(
                        listed.elapsed() < LIMIT,
                        "the downstream watches never listed"
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                for o in &ours {
                    let meta = serde_json::from_value(o["metadata"].clone()).unwrap();
                    d.write_through(&meta, ctx.caches.secrets.key());
                }
                let next = super::sync::sync(key(), link.clone(), ctx.clone()).await;
                let result = recorded(&ctx);
                let done = upstream.dispatches.try_recv().is_ok();
                // The link's runner and watches hold the clients: stop them.
                link.stop();
                ctx.links.map.lock().unwrap().clear();
                (next, result, done)
            }
        })
        .await;
    tokio::time::timeout(LIMIT, down_verifier)
        .await
        .expect("the downstream verifier did not finish")
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    run
}

/// The upstream version as the copy's source, read whole.
fn whole(v: &VersionSecret) -> Secret {
    serde_json::from_value(v.whole()).unwrap()
}

/// As stored downstream: `s` with a uid and a resourceVersion.
fn stored_down(s: &Secret, uid: &str, rv: &str) -> Value {
    let mut v = serde_json::to_value(s).unwrap();
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("Secret");
    v["metadata"]["uid"] = json!(uid);
    v["metadata"]["resourceVersion"] = json!(rv);
    v["metadata"]["creationTimestamp"] = json!("2026-01-03T00:00:00Z");
    v
}

/// As the metadata list returns it.
fn listed(stored: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": stored["metadata"]})
}

fn anchor() -> Secret {
    let origin = copy::Origin {
        namespace: NS,
        randomsecret: RS_NAME,
    };
    copy::anchor(&proof_key(), &origin, RS_NAME, NS)
}

fn anchor_owner() -> Value {
    serde_json::to_value(copy::anchor_owner("db-anchor", ANCHOR_UID)).unwrap()
}

/// The connection's Ready condition upstream, under the cluster push's manager.
async fn connection_ready(api: &mut ApiServer, reason: &str) {
    let call = api.next("PATCH of the ClusterConnection's status").await;
    let call = call.expect(
        Method::PATCH,
        &format!("{CONNECTION}/status"),
        &[("fieldManager", MANAGER), ("force", "true")],
    );
    let cond = &call.body["status"]["conditions"][0];
    assert_eq!(
        (&cond["type"], &cond["reason"]),
        (&json!("Ready"), &json!(reason))
    );
    let stored = json!({"apiVersion": "randomsecret.io/v1", "kind": "ClusterConnection",
        "metadata": {"name": "east", "uid": "e0", "resourceVersion": "3"},
        "spec": {"kubeconfigSecretRef": {"name": "east", "namespace": "randomsecret-system"},
            "allowedNamespaces": ["shop"]},
        "status": call.body["status"]});
    call.respond(200, &stored);
}

/// A first sync: the version is read whole upstream (the incarnation the
/// cache saw, made for this target), the anchor is created, then the copy,
/// owned by the anchor, with the same values and the version's proof; an
/// Event says so, the connection is Ready, the result names the copy.
#[tokio::test]
async fn a_first_sync_creates_the_anchor_then_the_copy() {
    let h = Harness::new();
    let base = pushing("Retain", &[]);
    let v = version_for_east(&base, &h);
    let rs = base.with_status(ready_status(&v, &[]));
    let (rs2, v2, v3) = (rs.clone(), v.clone(), v.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            connection_ready(&mut api, "Connected").await;
            api
        },
        |mut down| async move {
            let call = down.next("POST of the anchor").await;
            let call = call.expect(Method::POST, DOWN_SECRETS, &[]);
            let want = serde_json::to_value(anchor()).unwrap();
            assert_eq!(call.body["metadata"], want["metadata"]);
            assert_eq!(call.body["type"], copy::ANCHOR_TYPE);
            let made: Secret = serde_json::from_value(call.body.clone()).unwrap();
            call.respond(201, &stored_down(&made, ANCHOR_UID, "11"));
            let call = down.next("POST of the copy").await;
            let call = call.expect(Method::POST, DOWN_SECRETS, &[]);
            let want = copy::copy_of(&whole(&v3), NS, vec![]);
            assert_eq!(call.body["data"], v3.whole()["data"], "the same values");
            assert_eq!(call.body["immutable"], true);
            assert_eq!(
                call.body["metadata"]["annotations"],
                serde_json::to_value(&want.metadata.annotations).unwrap(),
                "the version's proof and where it came from"
            );
            assert_eq!(
                call.body["metadata"]["ownerReferences"],
                json!([anchor_owner()])
            );
            let made: Secret = serde_json::from_value(call.body.clone()).unwrap();
            call.respond(201, &stored_down(&made, COPY_UID, "12"));
            down
        },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert_eq!(result, &Some((true, "Synced".into(), vec![v.name()])));
    assert_eq!(run.events(), pairs(&[("Normal", "ClusterVersionCopied")]));
}

/// The current version's copy created; an older copy of ours that nothing
/// there references is released (read whole once to prove it ours, then
/// deleted conditional on its uid and resourceVersion).
#[tokio::test]
async fn an_unreferenced_old_copy_is_released() {
    let (h, rs, v, anchor_down, old_down) = rotated();
    let old_name = old_down["metadata"]["name"].as_str().unwrap().to_string();
    let (rs2, v2, old2) = (rs.clone(), v.clone(), old_down.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![listed(&anchor_down), listed(&old_down)], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            connection_ready(&mut api, "Connected").await;
            api
        },
        |mut down| async move {
            let call = down.next("POST of the copy").await;
            let call = call.expect(Method::POST, DOWN_SECRETS, &[]);
            let made: Secret = serde_json::from_value(call.body.clone()).unwrap();
            call.respond(201, &stored_down(&made, COPY_UID, "12"));
            let call = down.next("GET of the old copy, whole").await;
            call.expect(Method::GET, &format!("{DOWN_SECRETS}/{old_name}"), &[])
                .respond(200, &old2);
            let call = down.next("DELETE of the old copy").await;
            let call = call.expect(Method::DELETE, &format!("{DOWN_SECRETS}/{old_name}"), &[]);
            assert_eq!(
                call.body["preconditions"],
                json!({"uid": OLD_COPY_UID, "resourceVersion": "9"})
            );
            call.respond(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
            );
            down
        },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert_eq!(result, &Some((true, "Synced".into(), vec![v.name()])));
}

/// The same, with a ReplicaSet there that still references the old copy:
/// it is kept and handed to the ReplicaSet (an owner beside the anchor),
/// so that cluster's collector removes it with its last user.
#[tokio::test]
async fn an_old_copy_a_replicaset_references_is_handed_to_it() {
    let (h, rs, v, anchor_down, old_down) = rotated();
    let old_name = old_down["metadata"]["name"].as_str().unwrap().to_string();
    let replicaset = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "namespace": NS, "uid": DOWN_RS_UID, "resourceVersion": "8"},
        "spec": {"selector": {}, "template": {"spec": {"containers": [
            {"name": "web", "image": "web", "envFrom": [{"secretRef": {"name": old_name}}]}]}}}});
    let (rs2, v2, old2) = (rs.clone(), v.clone(), old_down.clone());
    let old_kept = old_name.clone();
    let run = sync_once(
        &h,
        &rs,
        (
            vec![listed(&anchor_down), listed(&old_down)],
            vec![replicaset],
        ),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            connection_ready(&mut api, "Connected").await;
            api
        },
        |mut down| async move {
            let call = down.next("POST of the copy").await;
            let call = call.expect(Method::POST, DOWN_SECRETS, &[]);
            let made: Secret = serde_json::from_value(call.body.clone()).unwrap();
            call.respond(201, &stored_down(&made, COPY_UID, "12"));
            let call = down.next("GET of the old copy, whole").await;
            call.expect(Method::GET, &format!("{DOWN_SECRETS}/{old_name}"), &[])
                .respond(200, &old2);
            let call = down.next("PATCH of the old copy's owners").await;
            let call = call.expect(Method::PATCH, &format!("{DOWN_SECRETS}/{old_name}"), &[]);
            assert_eq!(call.body["metadata"]["resourceVersion"], "9");
            let owners = call.body["metadata"]["ownerReferences"]
                .as_array()
                .unwrap()
                .clone();
            let uids: Vec<&str> = owners.iter().map(|o| o["uid"].as_str().unwrap()).collect();
            assert!(uids.contains(&DOWN_RS_UID), "{owners:?}");
            let mut patched = old2.clone();
            patched["metadata"]["ownerReferences"] = json!(owners);
            patched["metadata"]["resourceVersion"] = json!("13");
            call.respond(200, &patched);
            down
        },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    let (synced, _, kept) = result.clone().unwrap();
    assert!(synced);
    assert_eq!(kept, vec![v.name(), old_kept]);
}

/// A rotated RandomSecret and, downstream, our anchor and our copy of the
/// version before (owned by the anchor, resourceVersion 9).
fn rotated() -> (Harness, Rs, VersionSecret, Value, Value) {
    let h = Harness::new();
    let base = pushing("Retain", &[]).with_rotation("2");
    let v = version_for_east(&base, &h);
    let rs = base.with_status(ready_status(&v, &[]));
    let before = VersionSecret::of(&pushing("Retain", &[]))
        .annotated(crate::push::targets::ANNOTATION, "cluster:east")
        .with_uid(OLD_SECRET_UID);
    let owner: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference =
        serde_json::from_value(anchor_owner()).unwrap();
    let old = copy::copy_of(&whole(&before), NS, vec![owner]);
    let anchor_down = stored_down(&anchor(), ANCHOR_UID, "5");
    (h, rs, v, anchor_down, stored_down(&old, OLD_COPY_UID, "9"))
}

/// The RandomSecret deleted with deletionPolicy Delete: a last retention
/// pass, then our anchor is deleted (conditional on its uid, in the
/// background), so that cluster's collector removes what only it held; the
/// dispatcher is told, and nothing is written upstream.
#[tokio::test]
async fn a_deletion_deletes_the_anchor_of_our_copies() {
    let h = Harness::new();
    let base = pushing("Delete", &[FINALIZER]);
    let v = version_for_east(&base, &h);
    let rs = base
        .with_status(ready_status(&v, &[]))
        .deleted_ago(Duration::from_secs(5));
    let anchor_down = stored_down(&anchor(), ANCHOR_UID, "5");
    let owner = serde_json::from_value(anchor_owner()).unwrap();
    let copy_down = stored_down(&copy::copy_of(&whole(&v), NS, vec![owner]), COPY_UID, "6");
    let (rs2, v2, copy2, anchor2) = (
        rs.clone(),
        v.clone(),
        copy_down.clone(),
        anchor_down.clone(),
    );
    let run = sync_once(
        &h,
        &rs,
        (vec![listed(&anchor_down), listed(&copy_down)], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            get_version_metadata(&mut api, &v2).await;
            api
        },
        |mut down| async move {
            let name = copy2["metadata"]["name"].as_str().unwrap().to_string();
            let call = down.next("GET of the copy, whole").await;
            call.expect(Method::GET, &format!("{DOWN_SECRETS}/{name}"), &[])
                .respond(200, &copy2);
            let call = down.next("metadata GET of the anchor").await;
            let call = call.expect(Method::GET, &format!("{DOWN_SECRETS}/db-anchor"), &[]);
            call.respond(200, &listed(&anchor2));
            let call = down.next("DELETE of the anchor").await;
            let call = call.expect(Method::DELETE, &format!("{DOWN_SECRETS}/db-anchor"), &[]);
            assert_eq!(call.body["preconditions"], json!({"uid": ANCHOR_UID}));
            assert_eq!(call.body["propagationPolicy"], "Background");
            call.respond(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
            );
            down
        },
    )
    .await;
    let (next, _, done) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert!(done, "the dispatcher is told the cleanup is done");
}

/// A version made before this target was added is never copied there:
/// AwaitingNextVersion, said by a Warning, nothing written downstream
/// (not even the anchor).
#[tokio::test]
async fn a_version_not_made_for_the_cluster_is_not_copied() {
    let h = Harness::new();
    let base = pushing("Retain", &[]);
    let v = VersionSecret::of(&base).cached_in(&h);
    let rs = base.with_status(ready_status(&v, &[]));
    let (rs2, v2) = (rs.clone(), v.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            api
        },
        |down| async move { down },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert_eq!(result.as_ref().unwrap().1, "AwaitingNextVersion");
    assert_eq!(run.events(), pairs(&[("Warning", "AwaitingNextVersion")]));
}

/// A Secret there with our copy label but no proof (anyone with write
/// access downstream can label one): read whole once, left alone, never
/// released, and not in the result.
#[tokio::test]
async fn a_look_alike_among_the_copies_is_left_alone() {
    let (h, rs, v, anchor_down, mut fake) = rotated();
    fake["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(crate::proof::ANNOTATION_PROOF);
    let fake_name = fake["metadata"]["name"].as_str().unwrap().to_string();
    let (rs2, v2, fake2) = (rs.clone(), v.clone(), fake.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![listed(&anchor_down), listed(&fake)], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            connection_ready(&mut api, "Connected").await;
            api
        },
        |mut down| async move {
            let call = down.next("POST of the copy").await;
            let call = call.expect(Method::POST, DOWN_SECRETS, &[]);
            let made: Secret = serde_json::from_value(call.body.clone()).unwrap();
            call.respond(201, &stored_down(&made, COPY_UID, "12"));
            let call = down.next("GET of the look-alike, whole").await;
            call.expect(Method::GET, &format!("{DOWN_SECRETS}/{fake_name}"), &[])
                .respond(200, &fake2);
            down
        },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert_eq!(result, &Some((true, "Synced".into(), vec![v.name()])));
}

/// On deletion, an anchor there whose proof is not ours (planted under
/// the anchor's name) is not deleted: nothing is written downstream.
#[tokio::test]
async fn a_deletion_leaves_an_anchor_that_is_not_ours() {
    let h = Harness::new();
    let base = pushing("Delete", &[FINALIZER]);
    let v = version_for_east(&base, &h);
    let rs = base
        .with_status(ready_status(&v, &[]))
        .deleted_ago(Duration::from_secs(5));
    let mut planted = stored_down(&anchor(), ANCHOR_UID, "5");
    planted["metadata"]["annotations"][crate::proof::ANNOTATION_PROOF] = json!("rs1.00.00");
    let (rs2, v2) = (rs.clone(), v.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![listed(&planted)], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            get_version_metadata(&mut api, &v2).await;
            api
        },
        |down| async move { down },
    )
    .await;
    let (next, _, done) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert!(done, "nothing of ours there: the cleanup is done");
}

/// Our copy there under the current version's name with other values (the
/// version was re-created upstream since): never overwritten, ValueMismatch
/// said by a Warning; nothing is written downstream.
#[tokio::test]
async fn our_copy_with_other_values_is_never_overwritten() {
    let h = Harness::new();
    let base = pushing("Retain", &[]);
    let v = version_for_east(&base, &h);
    let rs = base.with_status(ready_status(&v, &[]));
    let owner = serde_json::from_value(anchor_owner()).unwrap();
    let mut earlier = whole(&v);
    earlier.data = Some(
        [(
            "password".to_string(),
            k8s_openapi::ByteString(b"earlier".to_vec()),
        )]
        .into(),
    );
    // Signed by us over those values: our copy of an earlier incarnation.
    let proof = proof_key().sign(&earlier);
    earlier
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(crate::proof::ANNOTATION_PROOF.into(), proof);
    let stale = stored_down(&copy::copy_of(&earlier, NS, vec![owner]), COPY_UID, "6");
    let anchor_down = stored_down(&anchor(), ANCHOR_UID, "5");
    let (rs2, v2, stale2) = (rs.clone(), v.clone(), stale.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![listed(&anchor_down), listed(&stale)], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            api
        },
        |mut down| async move {
            let name = stale2["metadata"]["name"].as_str().unwrap().to_string();
            let call = down.next("GET of the copy there, whole").await;
            call.expect(Method::GET, &format!("{DOWN_SECRETS}/{name}"), &[])
                .respond(200, &stale2);
            down
        },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert_eq!(result.as_ref().unwrap().1, "ValueMismatch");
    assert_eq!(run.events(), pairs(&[("Warning", "ValueMismatch")]));
}

/// A connection whose kubeconfig Secret is missing, or holds a kubeconfig
/// that would run a command: nothing is linked, nothing is sent there; the
/// connection is reported not Ready with the reason, and the target's
/// result says InvalidConnection.
#[tokio::test]
async fn a_kubeconfig_missing_or_running_a_command_links_nothing() {
    let exec = "apiVersion: v1\nkind: Config\nclusters:\n- name: east\n  cluster: {server: 'https://127.0.0.1:6443'}\nusers:\n- name: east\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ['-c', 'id']}\ncontexts:\n- name: east\n  context: {cluster: east, user: east}\ncurrent-context: east\n";
    let with_exec = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("east".into()),
            namespace: Some("randomsecret-system".into()),
            resource_version: Some("4".into()),
            ..Default::default()
        },
        data: Some(
            [(
                super::kubeconfig::DEFAULT_KEY.to_string(),
                k8s_openapi::ByteString(exec.as_bytes().to_vec()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    let cases = [
        (None, "InvalidKubeconfig"),
        (
            Some(serde_json::to_value(&with_exec).unwrap()),
            "KubeconfigRefused",
        ),
    ];
    for (secret, reason) in cases {
        let rs = pushing("Retain", &[]);
        let rs2 = rs.clone();
        let run = dispatch(&rs, |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the ClusterConnection").await;
            call.expect(Method::GET, CONNECTION, &[]).respond(
                200,
                &json!({"apiVersion": "randomsecret.io/v1", "kind": "ClusterConnection",
                    "metadata": {"name": "east", "uid": "e0", "resourceVersion": "3"},
                    "spec": {"kubeconfigSecretRef": {"name": "east", "namespace": "randomsecret-system"},
                        "allowedNamespaces": ["shop"]}}),
            );
            let call = api.next("GET of the kubeconfig Secret").await;
            let call = call.expect(Method::GET, "/api/v1/namespaces/randomsecret-system/secrets/east", &[]);
            match secret {
                Some(s) => call.respond(200, &s),
                None => call.respond(404, &not_found()),
            }
            connection_ready(&mut api, reason).await;
            api
        })
        .await;
        assert_eq!(run.next.0, Next::RequeueAfter(super::RESYNC), "{reason}");
        let (synced, recorded, _) = run.next.1.clone().unwrap();
        assert_eq!(
            (synced, recorded.as_str()),
            (false, "InvalidConnection"),
            "{reason}"
        );
    }
}

/// A Secret there under the anchor's name that is not our anchor (its
/// proof is not ours): SecretNameConflict, it is never used as the copies'
/// owner, and nothing is written.
#[tokio::test]
async fn a_planted_anchor_is_a_name_conflict() {
    let h = Harness::new();
    let base = pushing("Retain", &[]);
    let v = version_for_east(&base, &h);
    let rs = base.with_status(ready_status(&v, &[]));
    let mut planted = stored_down(&anchor(), ANCHOR_UID, "5");
    planted["metadata"]["annotations"][crate::proof::ANNOTATION_PROOF] = json!("rs1.00.00");
    let (rs2, v2) = (rs.clone(), v.clone());
    let run = sync_once(
        &h,
        &rs,
        (vec![listed(&planted)], vec![]),
        |mut api| async move {
            get_rs(&mut api).await.respond(200, &rs2.json());
            let call = api.next("GET of the version, whole").await;
            call.expect(Method::GET, &format!("{SECRETS}/{}", v2.name()), &[])
                .respond(200, &v2.whole());
            api
        },
        |down| async move { down },
    )
    .await;
    let (next, result, _) = &run.next;
    assert_eq!(*next, Next::AwaitChange);
    assert_eq!(result.as_ref().unwrap().1, "SecretNameConflict");
    assert_eq!(run.events(), pairs(&[("Warning", "SecretNameConflict")]));
}

// ------------------------------------------------------------ the status

/// One write of `shop/db`'s clusters status from `results` recorded for `east`.
async fn write_status<S, F>(rs: &Rs, synced: Option<Vec<String>>, scenario: S) -> Run
where
    S: FnOnce(ApiServer) -> F,
    F: Future<Output = ApiServer> + Send + 'static,
{
    let h = Harness::new();
    let rs = rs.clone();
    h.verify(true, scenario, |w| {
        let up = context(w, &h, &rs);
        if let Some(names) = synced {
            let target: crate::api::push::ClusterPush =
                serde_json::from_value(cluster_target("Retain")["clusters"][0].clone()).unwrap();
            up.ctx.record(
                &key(),
                super::report::synced("east", &target, &key(), names),
            );
        }
        super::report::write(key(), up.ctx.clone())
    })
    .await
}

/// The recorded results become `status.push.clusters` and ClustersSynced,
/// applied under the cluster push's own manager; the same status stored
/// already is not written again; a target removed takes its fields away.
#[tokio::test]
async fn the_clusters_status_is_written_when_it_changes() {
    let rs = pushing("Retain", &[]);
    let v = VersionSecret::of(&rs);
    let rs = rs.with_status(ready_status(&v, &[]));
    let applied = Arc::new(std::sync::Mutex::new(Value::Null));
    let (rs2, seen, name) = (rs.clone(), applied.clone(), v.name());
    write_status(&rs, Some(vec![v.name()]), |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        let call = api.next("PATCH of the clusters status").await;
        let call = call.expect(
            Method::PATCH,
            STATUS,
            &[("fieldManager", MANAGER), ("force", "true")],
        );
        assert_eq!(call.header("content-type"), "application/apply-patch+yaml");
        let status = call.body["status"].clone();
        let cond = condition(&status, super::CLUSTERS_SYNCED);
        assert_eq!(
            (&cond["status"], &cond["reason"]),
            (&json!("True"), &json!("Synced"))
        );
        assert_eq!(status["push"]["clusters"][0]["connection"], "east");
        assert_eq!(status["push"]["clusters"][0]["namespace"], NS);
        assert_eq!(status["push"]["clusters"][0]["secretNames"], json!([name]));
        *seen.lock().unwrap() = status.clone();
        call.respond(200, &rs2.applied(&status));
        api
    })
    .await;
    // The same again, with that status stored: nothing is written.
    let written = applied.lock().unwrap().clone();
    let mut stored = ready_status(&v, &[]);
    stored["conditions"]
        .as_array_mut()
        .unwrap()
        .extend(written["conditions"].as_array().unwrap().iter().cloned());
    stored["push"] = written["push"].clone();
    let rs = rs.with_status(stored.clone());
    let rs2 = rs.clone();
    write_status(&rs, Some(vec![v.name()]), |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        api
    })
    .await;
    // The target removed from the spec: its fields go.
    let mut rs = Rs::test().with_status(stored);
    rs.spec.as_object_mut().unwrap().remove("push");
    let rs2 = rs.clone();
    write_status(&rs, None, |mut api| async move {
        get_rs(&mut api).await.respond(200, &rs2.json());
        let call = api.next("PATCH of the clusters status").await;
        let call = call.expect(
            Method::PATCH,
            STATUS,
            &[("fieldManager", MANAGER), ("force", "true")],
        );
        assert_eq!(call.body["status"], json!({}));
        call.respond(200, &rs2.json());
        api
    })
    .await;
}
