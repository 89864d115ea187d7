//! `push()` (the Vault push's step and its cleanup) against the strict
//! mocked apiserver (`crate::testing`) and, where Vault is reached, the
//! mocked Vault: every request is expected, in order, with its body.

use super::{
    AWAIT_READY, CLEANUP_RECHECK_MAX, Context, FINALIZER, MANAGER, RESYNC, SKIP_CLEANUP,
    VAULT_SYNCED, push,
};
use crate::push::vault::plan;
use crate::runtime::metrics::ResultLabel;
use crate::runtime::runner::Next;
use crate::testing::vault::Vault;
use crate::testing::*;
use http::Method;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

const CONNECTION: &str = "/apis/randomsecret.io/v1/clustervaultconnections/vault";
const TOKEN: &str = "/api/v1/namespaces/vault-admin/secrets/vault-token";
/// The KV path of `shop/db` below the connection's default prefix.
const KV: &str = "randomsecret/shop/db";
const PUSH_TARGETS: &str = "randomsecret.io/push-targets";

/// The push's context on the harness's side of the mocks.
fn context(w: Wiring) -> Arc<Context> {
    Arc::new(Context {
        client: w.client,
        leader: w.leader,
        events: w.events,
        metrics: w.metrics,
        tokens: Default::default(),
        identity: None,
        proof_key: proof_key(),
        vault_policy: crate::push::vault::address::Policy {
            allow_http: true,
            ..Default::default()
        },
        out_of_sync: Default::default(),
        connections: Default::default(),
        down: Default::default(),
    })
}

/// One push of `shop/db` as the leader while `scenario` plays the apiserver.
async fn run<S, F>(scenario: S) -> Run
where
    S: FnOnce(ApiServer) -> F,
    F: Future<Output = ApiServer> + Send + 'static,
{
    Harness::new()
        .verify(true, scenario, |w| push(key(), context(w)))
        .await
}

/// `spec.push` with a Vault target through ClusterVaultConnection `vault`.
fn vault_target(policy: &str) -> Value {
    json!({"vault": {"connectionRef": {"name": "vault"}, "deletionPolicy": policy}})
}

/// The RandomSecret pushing with `policy`, holding `finalizers`.
fn pushing(policy: &str, finalizers: &[&str]) -> Rs {
    Rs::test()
        .with_push(vault_target(policy))
        .with_meta("finalizers", json!(finalizers))
}

/// The version of `rs`, made for the Vault target.
fn made_for_vault(rs: &Rs) -> VersionSecret {
    VersionSecret::of(rs).annotated(PUSH_TARGETS, "vault:ClusterVaultConnection/vault")
}

/// What the status records after a first push of `v` as KV version 1.
fn pushed_status(v: &VersionSecret) -> Value {
    let mut s = ready_status(v, &[]);
    s["conditions"].as_array_mut().unwrap().push(json!({
        "type": VAULT_SYNCED, "status": "True", "reason": "Synced",
        "message": format!("Secret {} is KV version 1 of secret/{KV}", v.name()),
        "observedGeneration": 1, "lastTransitionTime": "2026-01-02T00:00:02Z"}));
    s["push"] = json!({"vault": {"connection": "ClusterVaultConnection/vault",
        "path": format!("secret/{KV}"), "versions": [{"secretName": v.name(), "kvVersion": 1}]}});
    s
}

fn connection(address: &str, allowed: &[&str]) -> Value {
    json!({"apiVersion": "randomsecret.io/v1", "kind": "ClusterVaultConnection",
        "metadata": {"name": "vault", "uid": "c0", "resourceVersion": "7"},
        "spec": {"allowedNamespaces": allowed, "address": address,
            "auth": {"tokenSecretRef": {"name": "vault-token", "namespace": "vault-admin", "key": "token"}}}})
}

fn token_secret() -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "vault-token", "namespace": "vault-admin", "resourceVersion": "3"},
        "data": {"token": "cy50ZXN0"}})
}

/// This installation's mark on `shop/db`'s path, holding `secret_name`.
fn our_mark(secret_name: &str) -> Value {
    let owner = proof_key().sign_fields(plan::OWNER_DOMAIN, &plan::owner_fields(NS, RS_NAME));
    let src = plan::Source {
        namespace: NS,
        name: RS_NAME,
        uid: RS_UID,
        owner: &owner,
    };
    json!(plan::ours(&src, secret_name))
}

fn not_found() -> Value {
    failure(404, "NotFound", "not found", json!([]))
}

// ---------------------------------------------------------- the requests

async fn get_rs(api: &mut ApiServer) -> Call {
    let call = api.next("GET of the RandomSecret").await;
    call.expect(Method::GET, OBJECT, &[])
}

/// A merge patch of the finalizers, conditional on the resourceVersion.
async fn patch_finalizers(api: &mut ApiServer, rs: &Rs, want: &[&str]) -> Call {
    let call = api.next("PATCH of the finalizers").await;
    let call = call.expect(Method::PATCH, OBJECT, &[]);
    assert_eq!(call.header("content-type"), "application/merge-patch+json");
    assert_eq!(
        call.body,
        json!({"metadata": {"resourceVersion": rs.resource_version.to_string(), "finalizers": want}})
    );
    call
}

/// Server-side apply of the push's status fields, under its own manager.
async fn apply_push_status(api: &mut ApiServer) -> Call {
    let call = api.next("PATCH of the push's status").await;
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

/// Metadata-only GET of a version Secret.
async fn get_version_metadata(api: &mut ApiServer, name: &str) -> Call {
    let call = api.next("metadata GET of the version").await;
    let call = call.expect(Method::GET, &format!("{SECRETS}/{name}"), &[]);
    assert!(call.header("accept").contains("as=PartialObjectMetadata"));
    call
}

async fn get_connection(api: &mut ApiServer) -> Call {
    let call = api.next("GET of the ClusterVaultConnection").await;
    call.expect(Method::GET, CONNECTION, &[])
}

/// The connection and its token Secret, as a push reads them before Vault.
async fn open(api: &mut ApiServer, vault: &str) {
    get_connection(api)
        .await
        .respond(200, &connection(vault, &["shop"]));
    let call = api.next("GET of the token Secret").await;
    call.expect(Method::GET, TOKEN, &[])
        .respond(200, &token_secret());
}

/// The connection's Ready condition, under the push's manager.
async fn report_connection(api: &mut ApiServer, reason: &str) {
    let call = api.next("PATCH of the connection's status").await;
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
    let mut stored = connection("http://127.0.0.1:9", &["shop"]);
    stored["status"] = call.body["status"].clone();
    call.respond(200, &stored);
}

fn condition_of<'a>(status: &'a Value, type_: &str) -> &'a Value {
    condition(status, type_)
}

// ------------------------------------------------------------- the step

/// deletionPolicy Delete: the finalizer is added first, alone (the patch is
/// a change of its own, the watch brings it back); nothing is pushed yet.
#[tokio::test]
async fn a_delete_target_takes_the_finalizer_first_and_nothing_else() {
    let rs = pushing("Delete", &[]);
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        let patch = patch_finalizers(&mut api, &rs, &[FINALIZER]).await;
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert!(run.events.is_empty());
}

/// deletionPolicy Retain holds no finalizer (an uninstalled controller never
/// holds a deletion): one left from an earlier Delete goes, another's stays.
#[tokio::test]
async fn a_retain_target_holds_no_finalizer_and_drops_one_left_from_delete() {
    let rs = pushing("Retain", &["example.com/keep", FINALIZER]);
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        let patch = patch_finalizers(&mut api, &rs, &["example.com/keep"]).await;
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
}

/// A target removed from the spec is forgotten, never deleted: the
/// finalizer and the push's own status fields go; Vault is not contacted.
#[tokio::test]
async fn a_removed_target_is_forgotten_never_deleted() {
    let v = made_for_vault(&Rs::test());
    let rs = Rs::test()
        .with_meta("finalizers", json!([FINALIZER]))
        .with_status(pushed_status(&v));
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        patch_finalizers(&mut api, &rs, &[])
            .await
            .respond(200, &rs.json());
        let patch = apply_push_status(&mut api).await;
        assert_eq!(patch.body["status"], json!({}), "the push's fields removed");
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
}

/// Until the version's writer has made the version Ready, nothing is read
/// or pushed; it looks again soon (Ready does not trigger a push).
#[tokio::test]
async fn a_push_waits_for_the_version_to_be_ready() {
    let rs = pushing("Delete", &[FINALIZER]);
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::RequeueAfter(AWAIT_READY));
}

/// A version made before the target was added is never sent there:
/// AwaitingNextVersion, said once by a Warning, before any connection is read.
#[tokio::test]
async fn a_version_not_made_for_the_target_is_not_pushed() {
    let base = pushing("Delete", &[FINALIZER]);
    let v = VersionSecret::of(&base);
    let rs = base.with_status(ready_status(&v, &[]));
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        let patch = apply_push_status(&mut api).await;
        let cond = condition_of(&patch.body["status"], VAULT_SYNCED);
        assert_eq!(
            (&cond["status"], &cond["reason"]),
            (&json!("False"), &json!("AwaitingNextVersion"))
        );
        assert!(patch.body["status"].get("push").is_none());
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.events(), pairs(&[("Warning", "AwaitingNextVersion")]));
}

/// A first push: the connection and its token are read, the version read
/// whole and checked, the new path gets KV version 1 with check-and-set 0,
/// then our mark; the connection is reported Ready, an Event says what was
/// written and the status records it. No value reaches the apiserver.
#[tokio::test]
async fn a_first_push_writes_version_one_then_marks_the_path_ours() {
    let vault = Vault::start().await;
    let meta = format!("/v1/secret/metadata/{KV}");
    let data = format!("/v1/secret/data/{KV}");
    vault
        .then(Method::GET, &meta, 404, Value::Null)
        .then(Method::POST, &data, 200, json!({"data": {"version": 1}}))
        .then(Method::POST, &meta, 204, Value::Null);
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let rs = base.with_status(ready_status(&v, &[]));
    let address = vault.address.clone();
    let name = v.name();
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        let call = api.next("GET of the version").await;
        call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[])
            .respond(200, &v.whole());
        report_connection(&mut api, "Authenticated").await;
        let patch = apply_push_status(&mut api).await;
        let status = &patch.body["status"];
        let cond = condition_of(status, VAULT_SYNCED);
        assert_eq!((&cond["status"], &cond["reason"]), (&json!("True"), &json!("Synced")));
        assert_eq!(
            status["push"],
            json!({"vault": {"connection": "ClusterVaultConnection/vault",
                "path": format!("secret/{KV}"), "versions": [{"secretName": v.name(), "kvVersion": 1}]}})
        );
        assert!(!patch.body.to_string().contains("\"x\""), "no value");
        patch.respond(200, &rs.json());
        api
    })
    .await;
    let seen = vault.done();
    let calls: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(calls[1], ("POST", data.as_str()), "the data first");
    assert_eq!(
        seen[1].body,
        json!({"options": {"cas": 0}, "data": {"password": "x"}})
    );
    assert_eq!(seen[2].body, json!({"custom_metadata": our_mark(&name)}));
    assert!(seen.iter().all(|s| s.token == "s.test"));
    assert_eq!(run.next, Next::RequeueAfter(RESYNC));
    assert_eq!(run.events(), pairs(&[("Normal", "VaultVersionWritten")]));
    let written = run
        .metrics
        .pushes
        .get_or_create(&ResultLabel { result: "written" });
    assert_eq!(written.get(), 1);
}

/// A version Secret without our proof of creation (someone with write
/// access to the namespace made it look like one): its data never leaves,
/// Vault is not asked anything after the login.
#[tokio::test]
async fn a_version_without_our_proof_is_not_pushed() {
    let vault = Vault::start().await;
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base).unproven();
    let rs = base.with_status(ready_status(&v, &[]));
    let address = vault.address.clone();
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        let call = api.next("GET of the version").await;
        call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[])
            .respond(200, &v.whole());
        let patch = apply_push_status(&mut api).await;
        let cond = condition_of(&patch.body["status"], VAULT_SYNCED);
        assert_eq!(cond["reason"], "VersionNotProven");
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert!(vault.done().is_empty());
    assert_eq!(run.next, Next::Retry);
    assert_eq!(run.events(), pairs(&[("Warning", "VersionNotProven")]));
}

/// A resync of a path that holds the version: read, compared, nothing
/// written, to Vault or to the RandomSecret's status.
#[tokio::test]
async fn a_resync_of_an_unchanged_path_writes_nothing() {
    let vault = Vault::start().await;
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let meta = format!("/v1/secret/metadata/{KV}");
    let data = format!("/v1/secret/data/{KV}");
    vault
        .then(
            Method::GET,
            &meta,
            200,
            json!({"data": {"current_version": 1, "custom_metadata": our_mark(&v.name())}}),
        )
        .then(
            Method::GET,
            &data,
            200,
            json!({"data": {"data": {"password": "x"}, "metadata": {"version": 1}}}),
        );
    let rs = base.with_status(pushed_status(&v));
    let address = vault.address.clone();
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        let call = api.next("GET of the version").await;
        call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[])
            .respond(200, &v.whole());
        report_connection(&mut api, "Authenticated").await;
        api
    })
    .await;
    assert_eq!(vault.done().len(), 2);
    assert_eq!(run.next, Next::RequeueAfter(RESYNC));
    assert!(run.events.is_empty());
    let unchanged = run.metrics.pushes.get_or_create(&ResultLabel {
        result: "unchanged",
    });
    assert_eq!(unchanged.get(), 1);
}

/// Values changed in Vault by hand are written back (check-and-set on the
/// version read), and a Warning says so; the status records the new KV version.
#[tokio::test]
async fn values_changed_in_vault_are_written_back_and_said() {
    let vault = Vault::start().await;
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let meta = format!("/v1/secret/metadata/{KV}");
    let data = format!("/v1/secret/data/{KV}");
    vault
        .then(
            Method::GET,
            &meta,
            200,
            json!({"data": {"current_version": 1, "custom_metadata": our_mark(&v.name())}}),
        )
        .then(
            Method::GET,
            &data,
            200,
            json!({"data": {"data": {"password": "by-hand"}, "metadata": {"version": 1}}}),
        )
        .then(Method::POST, &data, 200, json!({"data": {"version": 2}}));
    let rs = base.with_status(pushed_status(&v));
    let address = vault.address.clone();
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        let call = api.next("GET of the version").await;
        call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[])
            .respond(200, &v.whole());
        report_connection(&mut api, "Authenticated").await;
        let patch = apply_push_status(&mut api).await;
        let versions = &patch.body["status"]["push"]["vault"]["versions"];
        assert_eq!(versions[0]["kvVersion"], 2, "{versions}");
        patch.respond(200, &rs.json());
        api
    })
    .await;
    let seen = vault.done();
    assert_eq!(
        seen[2].body,
        json!({"options": {"cas": 1}, "data": {"password": "x"}})
    );
    assert_eq!(run.next, Next::RequeueAfter(RESYNC));
    assert_eq!(run.events(), pairs(&[("Warning", "VaultValueRestored")]));
    let note = run.events[0]["note"].as_str().unwrap();
    assert!(!note.contains("by-hand"), "{note}");
}

/// A path that exists without our mark is someone else's: never written.
#[tokio::test]
async fn a_path_someone_else_wrote_is_never_written() {
    let vault = Vault::start().await;
    let meta = format!("/v1/secret/metadata/{KV}");
    let data = format!("/v1/secret/data/{KV}");
    vault
        .then(
            Method::GET,
            &meta,
            200,
            json!({"data": {"current_version": 3, "custom_metadata": {"team": "theirs"}}}),
        )
        .then(
            Method::GET,
            &data,
            200,
            json!({"data": {"data": {"password": "theirs"}, "metadata": {"version": 3}}}),
        );
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let rs = base.with_status(ready_status(&v, &[]));
    let address = vault.address.clone();
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        let call = api.next("GET of the version").await;
        call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[])
            .respond(200, &v.whole());
        report_connection(&mut api, "Authenticated").await;
        let patch = apply_push_status(&mut api).await;
        let cond = condition_of(&patch.body["status"], VAULT_SYNCED);
        assert_eq!(cond["reason"], "PathNotManaged");
        assert!(
            !patch.body.to_string().contains("theirs"),
            "nothing of theirs"
        );
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(vault.done().len(), 2, "read, never written");
    assert_eq!(run.next, Next::Retry);
    assert_eq!(run.events(), pairs(&[("Warning", "PathNotManaged")]));
}

// ---------------------------------------------------------- the cleanup

/// `--cascade=orphan`: everything is kept; the finalizer goes at once (the
/// orphan finalizer stays), and neither the version nor Vault is read.
#[tokio::test]
async fn an_orphan_deletion_keeps_the_path() {
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let rs = pushing("Delete", &[FINALIZER, "orphan"])
        .with_status(pushed_status(&v))
        .deleted_ago(Duration::from_secs(5));
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        patch_finalizers(&mut api, &rs, &["orphan"])
            .await
            .respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert!(run.events.is_empty());
}

/// deletionPolicy Retain (a finalizer left from Delete) and the skip
/// annotation both keep the path: the version is looked at (an orphan
/// deletion's versions lose our owner), Vault never; the finalizer goes.
#[tokio::test]
async fn retain_and_the_skip_annotation_keep_the_path() {
    for (policy, skip) in [("Retain", false), ("Delete", true)] {
        let v = made_for_vault(&Rs::test().with_push(vault_target(policy)));
        let mut rs = pushing(policy, &[FINALIZER])
            .with_status(pushed_status(&v))
            .deleted_ago(Duration::from_secs(5));
        if skip {
            rs = rs.with_meta("annotations", json!({SKIP_CLEANUP: "true"}));
        }
        let run = run(|mut api| async move {
            get_rs(&mut api).await.respond(200, &rs.json());
            get_version_metadata(&mut api, &v.name())
                .await
                .respond(200, &v.metadata_response());
            patch_finalizers(&mut api, &rs, &[])
                .await
                .respond(200, &rs.json());
            api
        })
        .await;
        assert_eq!(run.next, Next::AwaitChange, "{policy}");
        assert!(run.events.is_empty(), "{policy}");
    }
}

/// deletionPolicy Delete: our path is deleted (metadata and every
/// version), then the finalizer goes.
#[tokio::test]
async fn a_deletion_removes_our_path_then_the_finalizer() {
    let vault = Vault::start().await;
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let meta = format!("/v1/secret/metadata/{KV}");
    vault
        .then(
            Method::GET,
            &meta,
            200,
            json!({"data": {"current_version": 1, "custom_metadata": our_mark(&v.name())}}),
        )
        .then(Method::DELETE, &meta, 204, Value::Null);
    let rs = pushing("Delete", &[FINALIZER])
        .with_status(pushed_status(&v))
        .deleted_ago(Duration::from_secs(5));
    let address = vault.address.clone();
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        patch_finalizers(&mut api, &rs, &[])
            .await
            .respond(200, &rs.json());
        api
    })
    .await;
    vault.done();
    assert_eq!(run.next, Next::AwaitChange);
}

/// A path that is not ours (no mark) is left as it is on deletion.
#[tokio::test]
async fn a_deletion_leaves_a_path_of_someone_else() {
    let vault = Vault::start().await;
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let meta = format!("/v1/secret/metadata/{KV}");
    vault.then(
        Method::GET,
        &meta,
        200,
        json!({"data": {"current_version": 4, "custom_metadata": {"team": "theirs"}}}),
    );
    let rs = pushing("Delete", &[FINALIZER])
        .with_status(pushed_status(&v))
        .deleted_ago(Duration::from_secs(5));
    let address = vault.address.clone();
    run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        patch_finalizers(&mut api, &rs, &[])
            .await
            .respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(vault.done().len(), 1, "read, never deleted");
}

/// The connection is gone (a namespace torn down): no one can remove the
/// path now; it is kept, a Warning says so, and the finalizer goes.
#[tokio::test]
async fn a_deletion_whose_connection_is_gone_keeps_the_path_and_says_so() {
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let rs = pushing("Delete", &[FINALIZER])
        .with_status(pushed_status(&v))
        .deleted_ago(Duration::from_secs(5));
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        get_connection(&mut api).await.respond(404, &not_found());
        patch_finalizers(&mut api, &rs, &[])
            .await
            .respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert_eq!(run.events(), pairs(&[("Warning", "VaultPathKept")]));
}

/// A state only a person can fix (the namespace no longer allowed): the
/// deletion waits, says why and how to skip, and looks again; after ten
/// minutes it lets the RandomSecret go, keeps the path, and says so.
#[tokio::test]
async fn a_deletion_waits_on_what_a_person_must_fix_then_gives_up_after_ten_minutes() {
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let base = pushing("Delete", &[FINALIZER]).with_status(pushed_status(&v));
    let refused = connection("http://127.0.0.1:9", &["other"]);
    // One minute in: waits.
    let rs = base.clone().deleted_ago(Duration::from_secs(60));
    let (v2, refused2) = (v.clone(), refused.clone());
    let run1 = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v2.name())
            .await
            .respond(200, &v2.metadata_response());
        get_connection(&mut api).await.respond(200, &refused2);
        let patch = apply_push_status(&mut api).await;
        let cond = condition_of(&patch.body["status"], VAULT_SYNCED);
        assert_eq!(cond["reason"], "NamespaceNotAllowed");
        let message = cond["message"].as_str().unwrap();
        assert!(message.contains(SKIP_CLEANUP), "{message}");
        patch.respond(200, &rs.json());
        api
    })
    .await;
    match run1.next {
        Next::RequeueAfter(d) => assert!(
            d >= Duration::from_secs(15) && d < Duration::from_secs(16),
            "{d:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(run1.events(), pairs(&[("Warning", "NamespaceNotAllowed")]));
    // Eleven minutes in: gives up, keeps the path.
    let rs = base.deleted_ago(Duration::from_secs(660));
    let run2 = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        get_connection(&mut api).await.respond(200, &refused);
        patch_finalizers(&mut api, &rs, &[])
            .await
            .respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run2.next, Next::AwaitChange);
    assert_eq!(run2.events(), pairs(&[("Warning", "VaultPathKept")]));
    let note = run2.events[0]["note"].as_str().unwrap();
    assert!(note.contains("10 minutes"), "{note}");
}

/// A problem that goes away by itself (the apiserver failing) never gives
/// up, however long the deletion waited: it looks again at most every
/// two minutes.
#[tokio::test]
async fn a_deletion_waits_on_a_passing_problem_however_long() {
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let rs = pushing("Delete", &[FINALIZER])
        .with_status(pushed_status(&v))
        .deleted_ago(Duration::from_secs(3600));
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        get_connection(&mut api)
            .await
            .respond(500, &failure(500, "InternalError", "etcd", json!([])));
        let patch = apply_push_status(&mut api).await;
        let cond = condition_of(&patch.body["status"], VAULT_SYNCED);
        assert_eq!(cond["reason"], "ApiError");
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::RequeueAfter(CLEANUP_RECHECK_MAX));
    assert_eq!(run.events(), pairs(&[("Warning", "ApiError")]));
}

// ------------------------------------- what one process keeps between pushes

/// Two pushes of `shop/db` through one context (its token cache, hold-down
/// and connection statuses), as the leader.
async fn run_twice<S, F>(scenario: S) -> Run<(Next, Next)>
where
    S: FnOnce(ApiServer) -> F,
    F: Future<Output = ApiServer> + Send + 'static,
{
    Harness::new()
        .verify(true, scenario, |w| async move {
            let ctx = context(w);
            let first = push(key(), ctx.clone()).await;
            (first, push(key(), ctx).await)
        })
        .await
}

/// The requests of a push before Vault, with the token cached or not.
async fn up_to_vault(api: &mut ApiServer, rs: &Rs, v: &VersionSecret, address: &str, token: bool) {
    get_rs(api).await.respond(200, &rs.json());
    get_version_metadata(api, &v.name())
        .await
        .respond(200, &v.metadata_response());
    if token {
        open(api, address).await;
    } else {
        get_connection(api)
            .await
            .respond(200, &connection(address, &["shop"]));
    }
    let call = api.next("GET of the version").await;
    call.expect(Method::GET, &format!("{SECRETS}/{}", v.name()), &[])
        .respond(200, &v.whole());
}

/// A second push reuses the token read for the first, and writes the
/// connection's Ready condition only when it changes.
#[tokio::test]
async fn a_second_push_reuses_the_token_and_reports_the_connection_once() {
    let vault = Vault::start().await;
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let meta = format!("/v1/secret/metadata/{KV}");
    let data = format!("/v1/secret/data/{KV}");
    for _ in 0..2 {
        vault
            .then(
                Method::GET,
                &meta,
                200,
                json!({"data": {"current_version": 1, "custom_metadata": our_mark(&v.name())}}),
            )
            .then(
                Method::GET,
                &data,
                200,
                json!({"data": {"data": {"password": "x"}, "metadata": {"version": 1}}}),
            );
    }
    let rs = base.with_status(pushed_status(&v));
    let address = vault.address.clone();
    let run = run_twice(|mut api| async move {
        up_to_vault(&mut api, &rs, &v, &address, true).await;
        report_connection(&mut api, "Authenticated").await;
        up_to_vault(&mut api, &rs, &v, &address, false).await;
        api
    })
    .await;
    assert_eq!(vault.done().len(), 4);
    assert_eq!(
        run.next,
        (Next::RequeueAfter(RESYNC), Next::RequeueAfter(RESYNC))
    );
}

/// A token Vault refuses (revoked, expired early) is forgotten: the next
/// push reads it again; the connection is reported not Ready, then Ready.
#[tokio::test]
async fn a_refused_token_is_forgotten_and_read_again() {
    let vault = Vault::start().await;
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let meta = format!("/v1/secret/metadata/{KV}");
    let data = format!("/v1/secret/data/{KV}");
    vault
        .then(
            Method::GET,
            &meta,
            403,
            json!({"errors": ["permission denied"]}),
        )
        .then(
            Method::GET,
            "/v1/auth/token/lookup-self",
            403,
            json!({"errors": ["permission denied"]}),
        )
        .then(Method::GET, &meta, 404, Value::Null)
        .then(Method::POST, &data, 200, json!({"data": {"version": 1}}))
        .then(Method::POST, &meta, 204, Value::Null);
    let rs = base.with_status(ready_status(&v, &[]));
    let address = vault.address.clone();
    let run = run_twice(|mut api| async move {
        up_to_vault(&mut api, &rs, &v, &address, true).await;
        report_connection(&mut api, "AuthFailed").await;
        let patch = apply_push_status(&mut api).await;
        assert_eq!(
            condition_of(&patch.body["status"], VAULT_SYNCED)["reason"],
            "AuthFailed"
        );
        patch.respond(200, &rs.json());
        // The token is read again.
        up_to_vault(&mut api, &rs, &v, &address, true).await;
        report_connection(&mut api, "Authenticated").await;
        let patch = apply_push_status(&mut api).await;
        assert_eq!(
            condition_of(&patch.body["status"], VAULT_SYNCED)["reason"],
            "Synced"
        );
        patch.respond(200, &rs.json());
        api
    })
    .await;
    vault.done();
    assert_eq!(run.next, (Next::Retry, Next::RequeueAfter(RESYNC)));
    assert_eq!(
        run.events(),
        pairs(&[("Normal", "VaultVersionWritten"), ("Warning", "AuthFailed")])
    );
}

/// A server that does not answer is held down: the next push through it
/// fails at once, before the token or the version is read (a dead server
/// holds one push slot at a time, not all of them).
#[tokio::test]
async fn a_server_that_does_not_answer_is_held_down() {
    // Nothing listens on the discard port of the loopback address.
    let address = "http://127.0.0.1:9".to_string();
    let base = pushing("Delete", &[FINALIZER]);
    let v = made_for_vault(&base);
    let rs = base.with_status(ready_status(&v, &[]));
    let run = run_twice(|mut api| async move {
        up_to_vault(&mut api, &rs, &v, &address, true).await;
        report_connection(&mut api, "Unreachable").await;
        let patch = apply_push_status(&mut api).await;
        assert_eq!(
            condition_of(&patch.body["status"], VAULT_SYNCED)["reason"],
            "Unreachable"
        );
        patch.respond(200, &rs.json());
        // Held down: the connection is read, nothing more before the status.
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        get_connection(&mut api)
            .await
            .respond(200, &connection(&address, &["shop"]));
        let patch = apply_push_status(&mut api).await;
        let cond = condition_of(&patch.body["status"], VAULT_SYNCED);
        assert_eq!(cond["reason"], "Unreachable");
        assert!(
            cond["message"].as_str().unwrap().contains("moments ago"),
            "{cond}"
        );
        patch.respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, (Next::Retry, Next::Retry));
}

/// Nothing recorded as pushed (the status maps no KV version): a deletion
/// looks for the path once and never waits on a server for it.
#[tokio::test]
async fn a_deletion_with_nothing_pushed_never_waits_on_the_server() {
    let address = "http://127.0.0.1:9".to_string();
    let v = made_for_vault(&Rs::test().with_push(vault_target("Delete")));
    let rs = pushing("Delete", &[FINALIZER])
        .with_status(ready_status(&v, &[]))
        .deleted_ago(Duration::from_secs(5));
    let run = run(|mut api| async move {
        get_rs(&mut api).await.respond(200, &rs.json());
        get_version_metadata(&mut api, &v.name())
            .await
            .respond(200, &v.metadata_response());
        open(&mut api, &address).await;
        patch_finalizers(&mut api, &rs, &[])
            .await
            .respond(200, &rs.json());
        api
    })
    .await;
    assert_eq!(run.next, Next::AwaitChange);
    assert!(run.events.is_empty());
}
