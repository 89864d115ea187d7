//! Deletion protection (issue 28): every version Secret holds the finalizer
//! `randomsecret.io/in-use` while retention keeps it (current, within
//! `spec.history`, or referenced by a ReplicaSet, ControllerRevision or
//! Pod). A delete of a held version, by hand or by the garbage collector,
//! only makes it Terminating: it stays readable, the status shows it
//! `deleting`, a Warning Event (`DeletionHeld`) names who holds it, and it
//! goes once retention releases it. A deleted RandomSecret's versions, and a
//! deleted namespace, end with nothing left behind.
//!
//! The last two tests run controllers of their own (`randomsecret
//! release-finalizers` needs the controller stopped, or it would protect the
//! versions again; `--deletion-protection=false` is a flag of the process),
//! so they are `#[ignore]`d and `e2e/run.sh` runs them after stopping the
//! shared controller.

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState, VersionStatus};
use randomsecret_e2e::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const FOREIGN: &str = "example.com/keep";

/// Waits until RandomSecret `name` lists version `secret` and `pred` holds of it.
async fn wait_version(
    api: &Api<RandomSecret>,
    name: &str,
    secret: &str,
    what: &str,
    pred: impl Fn(&VersionStatus) -> bool + Send + 'static,
) -> Result<RandomSecret> {
    let secret = secret.to_string();
    wait_for(
        api,
        name,
        &format!("{secret} {what}"),
        move |rs: Option<&RandomSecret>| {
            rs.and_then(|rs| version_status(rs, &secret))
                .is_some_and(&pred)
        },
    )
    .await
}

/// The ReplicaSet a version's status names among its holders.
fn replicaset_of(v: &VersionStatus) -> Option<String> {
    v.referenced_by
        .iter()
        .find_map(|r| r.strip_prefix("ReplicaSet/"))
        .map(String::from)
}

/// Reads a version Secret (its values recorded for the log check).
async fn read(secrets: &Api<Secret>, name: &str) -> Result<Secret> {
    let s = secrets
        .get_opt(name)
        .await?
        .with_context(|| format!("Secret {name} is gone"))?;
    record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    Ok(s)
}

/// `kubectl delete secret NAME`: one DELETE, as a person does; returns what
/// the apiserver answered (the object, Terminating, when a finalizer holds it).
async fn delete_by_hand(secrets: &Api<Secret>, name: &str) -> Result<Option<Secret>> {
    Ok(secrets
        .delete(name, &DeleteParams::background())
        .await
        .with_context(|| format!("deleting Secret {name}"))?
        .left())
}

/// `s` is the version `like` was, held: the same object with the same data
/// and type, Terminating, with our finalizer.
fn held_as_it_was(s: &Secret, like: &Secret) -> Result<()> {
    let name = s.name_any();
    ensure!(
        s.uid() == like.uid(),
        "{name} is another object (uid {:?}, was {:?})",
        s.uid(),
        like.uid()
    );
    ensure!(
        s.data == like.data && s.type_ == like.type_,
        "{name}'s data changed while held"
    );
    ensure!(terminating(s), "{name} has no deletionTimestamp");
    ensure!(
        in_use(s),
        "{name} lacks {FINALIZER_IN_USE}: {:?}",
        finalizers(s)
    );
    Ok(())
}

/// The DeletionHeld Warning on RandomSecret `rs` for version `secret`, its
/// note naming every one of `holders`.
async fn deletion_held_event(
    client: &Client,
    namespace: &str,
    rs: &str,
    secret: &str,
    holders: &[&str],
) -> Result<k8s_openapi::api::events::v1::Event> {
    let matches = |e: &k8s_openapi::api::events::v1::Event| {
        e.reason.as_deref() == Some("DeletionHeld")
            && e.type_.as_deref() == Some("Warning")
            && e.action.as_deref() == Some("ProtectVersion")
            && e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("RandomSecret") && r.name.as_deref() == Some(rs)
            })
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains(secret) && holders.iter().all(|h| n.contains(h)))
    };
    let items = wait_event(
        client,
        namespace,
        &format!("DeletionHeld for {secret}"),
        matches,
    )
    .await?;
    Ok(items.into_iter().find(matches).expect("matched"))
}

/// A version a ReplicaSet of a Deployment's history holds, deleted by hand:
/// readable, unchanged and Terminating for as long as that ReplicaSet
/// exists; reported as `deleting` with a Warning naming the ReplicaSet;
/// gone once the Deployment prunes it.
#[tokio::test]
async fn a_deleted_version_a_replicaset_holds_stays_until_the_replicaset_is_pruned() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-rs").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let rss: Api<ReplicaSet> = ns.api();
    let checker = ReferenceChecker::start(&client, &ns.name, "db-");

    let spec = json!({"keys": {"password": {"length": 24}}, "rotation": "1"});
    let v1 = first_version(&api, &secrets, "db", spec).await?;
    let v1n = v1.name_any();
    ensure!(
        finalizers(&v1) == [FINALIZER_IN_USE],
        "a new version holds exactly {FINALIZER_IN_USE}: {:?}",
        finalizers(&v1)
    );
    deploys
        .create(&PostParams::default(), &deployment("web", &v1n)?)
        .await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v1",
        rolled_out_on_all(&[&v1n]),
    )
    .await?;

    // Superseded, and held by the old ReplicaSet once v2 is rolled out.
    let v2n = rotate(&api, "db", "2").await?;
    point_at(&deploys, "web", &v2n, "2").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v2",
        rolled_out_on_all(&[&v2n]),
    )
    .await?;
    let rs = wait_version(&api, "db", &v1n, "retained by its ReplicaSet alone", |v| {
        v.state == VersionState::Retained
            && replicaset_of(v).is_some()
            && v.referenced_by.iter().all(|r| r.starts_with("ReplicaSet/"))
    })
    .await?;
    let old_rs = replicaset_of(version_status(&rs, &v1n).context("v1 listed")?)
        .context("v1's ReplicaSet")?;
    ensure!(
        rss.get_opt(&old_rs).await?.is_some(),
        "ReplicaSet {old_rs} exists"
    );

    // Deleted by hand: the apiserver answers with the object, Terminating.
    let answer = delete_by_hand(&secrets, &v1n)
        .await?
        .context("the DELETE of a held version removed it at once")?;
    held_as_it_was(&answer, &v1)?;
    let rs = wait_version(&api, "db", &v1n, "deleting, still retained", |v| {
        v.deleting && v.state == VersionState::Retained && replicaset_of(v).is_some()
    })
    .await?;
    ensure!(
        is_ready(Some(&rs)),
        "Ready stays True: {:?}",
        condition(&rs, "Ready")
    );
    ensure!(
        rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(v2n.as_str()),
        "v2 stays current"
    );
    ensure!(
        version_status(&rs, &v2n).is_some_and(|v| !v.deleting),
        "only v1 is deleting: {:?}",
        version_status(&rs, &v2n)
    );
    let ev = deletion_held_event(
        &client,
        &ns.name,
        "db",
        &v1n,
        &[&format!("ReplicaSet/{old_rs}")],
    )
    .await?;
    eprintln!("DeletionHeld: {}", ev.note.unwrap_or_default());
    // Not a moment's reprieve: held for as long as the ReplicaSet is there.
    for _ in 0..6 {
        held_as_it_was(&read(&secrets, &v1n).await?, &v1)?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The Deployment prunes the old ReplicaSet: v1 is released and goes.
    deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"revisionHistoryLimit": 0}})),
        )
        .await?;
    wait_deleted(&rss, &old_rs)
        .await
        .context("the Deployment prunes the old ReplicaSet")?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 goes once its ReplicaSet is pruned")?;
    wait_event(&client, &ns.name, "VersionReleased for v1", |e| {
        e.reason.as_deref() == Some("VersionReleased")
            && e.note.as_deref().is_some_and(|n| n.contains(&v1n))
    })
    .await?;
    let (v1_, v2_) = (v1n.clone(), v2n.clone());
    let rs = wait_for(
        &api,
        "db",
        "v1 released in the status",
        move |rs: Option<&RandomSecret>| {
            rs.and_then(|r| r.status.as_ref()).is_some_and(|s| {
                s.versions.len() == 1 && s.versions[0].name == v2_ && s.released.contains(&v1_)
            })
        },
    )
    .await?;
    ensure!(is_ready(Some(&rs)));
    let v2 = read(&secrets, &v2n).await?;
    ensure!(in_use(&v2) && !terminating(&v2), "v2 current and protected");
    checker.finish().await?;
    ns.delete().await
}

/// The current version deleted by hand: readable and unchanged, the status
/// shows it `deleting`, and the RandomSecret stays Ready on it (nothing is
/// lost). A rotation then releases it, and it goes.
#[tokio::test]
async fn a_deleted_current_version_stays_readable_and_ready() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-current").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let v1 = first_version(&api, &secrets, "db", json!({"length": 24, "rotation": "1"})).await?;
    let v1n = v1.name_any();
    ensure!(
        in_use(&v1),
        "the current version is protected: {:?}",
        finalizers(&v1)
    );

    let answer = delete_by_hand(&secrets, &v1n)
        .await?
        .context("the DELETE of the current version removed it at once")?;
    held_as_it_was(&answer, &v1)?;
    wait_version(&api, "db", &v1n, "current and deleting", |v| {
        v.deleting && v.state == VersionState::Current
    })
    .await?;
    deletion_held_event(&client, &ns.name, "db", &v1n, &["current version"]).await?;
    // It stays so: Ready on v1, never VersionLost, v1 as it was.
    for _ in 0..10 {
        let rs = api.get("db").await?;
        ensure!(
            is_ready(Some(&rs)),
            "Ready left True while the deleted current version is held: {:?}",
            condition(&rs, "Ready")
        );
        ensure!(
            condition(&rs, "Stalled").is_none_or(|c| c.status != "True"),
            "Stalled: {:?}",
            condition(&rs, "Stalled")
        );
        ensure!(rs.status.as_ref().and_then(|s| s.secret_name.as_deref()) == Some(v1n.as_str()));
        ensure!(version_status(&rs, &v1n).is_some_and(|v| v.deleting));
        held_as_it_was(&read(&secrets, &v1n).await?, &v1)?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Superseded and unreferenced (history 0): released, and gone for good.
    let v2n = rotate(&api, "db", "2").await?;
    ensure!(v2n != v1n);
    wait_deleted(&secrets, &v1n)
        .await
        .context("the deleted current version goes once a rotation releases it")?;
    let rs = wait_for(
        &api,
        "db",
        "v1 out of the status",
        |rs: Option<&RandomSecret>| {
            rs.and_then(|r| r.status.as_ref())
                .is_some_and(|s| s.versions.len() == 1)
        },
    )
    .await?;
    ensure!(is_ready(Some(&rs)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(secrets.get_opt(&v1n).await?.is_none(), "{v1n} came back");
    ensure!(in_use(&read(&secrets, &v2n).await?));
    ns.delete().await
}

/// Waits until namespace `name` (being deleted) is gone; fails after
/// `limit`, naming the Secrets left in it and the namespace's conditions.
/// Returns how long it took.
async fn wait_namespace_gone(client: &Client, name: &str, limit: Duration) -> Result<Duration> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), name);
    let started = Instant::now();
    loop {
        if namespaces.get_opt(name).await?.is_none() {
            return Ok(started.elapsed());
        }
        if started.elapsed() > limit {
            let left: Vec<String> = secrets
                .list_metadata(&ListParams::default())
                .await?
                .items
                .iter()
                .map(|s| {
                    format!(
                        "{} (finalizers {:?}, deleting {})",
                        s.name_any(),
                        s.finalizers(),
                        s.metadata.deletion_timestamp.is_some()
                    )
                })
                .collect();
            let conditions = namespaces
                .get_opt(name)
                .await?
                .and_then(|n| n.status)
                .map(|s| {
                    s.conditions
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|c| c.status == "True")
                        .map(|c| c.message.unwrap_or_default())
                        .collect::<Vec<_>>()
                });
            bail!(
                "namespace {name} still exists {limit:?} after its deletion; Secrets left: {left:?}; conditions: {conditions:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A namespace with versions held by a Deployment's ReplicaSets (one
/// superseded, one current) and by a bare pod is deleted completely within
/// a minute: deletion protection holds nothing back once its holders go.
#[tokio::test]
async fn a_namespace_with_held_versions_is_deleted_within_a_minute() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-ns").await?;
    let name = ns.name.clone();
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let pods: Api<Pod> = ns.api();
    let v1n = first_version(&api, &secrets, "db", json!({"length": 24, "rotation": "1"}))
        .await?
        .name_any();
    deploys
        .create(&PostParams::default(), &deployment("web", &v1n)?)
        .await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v1",
        rolled_out_on_all(&[&v1n]),
    )
    .await?;
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "debug"}, "spec": pod_template("debug", &v1n)["spec"]}),
    )?;
    pods.create(&PostParams::default(), &pod).await?;
    let v2n = rotate(&api, "db", "2").await?;
    point_at(&deploys, "web", &v2n, "2").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out on v2",
        rolled_out_on_all(&[&v2n]),
    )
    .await?;
    wait_version(
        &api,
        "db",
        &v1n,
        "held by its ReplicaSet and the pod",
        |v| {
            v.state == VersionState::Retained
                && replicaset_of(v).is_some()
                && v.referenced_by.iter().any(|r| r == "Pod/debug")
        },
    )
    .await?;
    for s in [&v1n, &v2n] {
        ensure!(in_use(&read(&secrets, s).await?), "{s} is protected");
    }

    ns.delete().await?;
    let took = wait_namespace_gone(&client, &name, Duration::from_secs(60)).await?;
    eprintln!(
        "namespace {name} with held versions deleted in {:.1} s",
        took.as_secs_f64()
    );
    Ok(())
}

/// A RandomSecret deleted: the versions nothing references (the current
/// one, one within history) are deleted by the garbage collector and then
/// let go, so they vanish; a version a bare pod uses stays, readable and
/// unchanged, until the pod is deleted, then it goes too.
#[tokio::test]
async fn a_deleted_randomsecrets_versions_go_once_nothing_holds_them() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-rsdel").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let pods: Api<Pod> = ns.api();
    let spec = |rotation: &str| json!({"length": 24, "history": 1, "rotation": rotation});
    let v1 = first_version(&api, &secrets, "db", spec("1")).await?;
    let v1n = v1.name_any();
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "debug"}, "spec": pod_template("debug", &v1n)["spec"]}),
    )?;
    pods.create(&PostParams::default(), &pod).await?;
    wait_version(&api, "db", &v1n, "held by the pod", |v| {
        v.referenced_by.iter().any(|r| r == "Pod/debug")
    })
    .await?;
    let v2n = rotate(&api, "db", "2").await?;
    let v3n = rotate(&api, "db", "3").await?;
    let rs = wait_version(&api, "db", &v1n, "retained by the pod", |v| {
        v.state == VersionState::Retained && v.referenced_by == ["Pod/debug"]
    })
    .await?;
    ensure!(
        version_status(&rs, &v2n)
            .is_some_and(|v| v.state == VersionState::Retained && v.referenced_by.is_empty()),
        "v2 is kept within history, unreferenced: {:?}",
        version_status(&rs, &v2n)
    );
    for s in [&v1n, &v2n, &v3n] {
        ensure!(in_use(&read(&secrets, s).await?), "{s} is protected");
    }

    api.delete("db", &DeleteParams::background()).await?;
    wait_deleted(&api, "db").await?;
    for s in [&v3n, &v2n] {
        wait_deleted(&secrets, s)
            .await
            .with_context(|| format!("{s}, unreferenced, goes with its RandomSecret"))?;
    }
    // The pod's version stays, as it was, for as long as the pod is there.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let kept = read(&secrets, &v1n)
        .await
        .context("a version a pod uses went with its RandomSecret")?;
    ensure!(kept.uid() == v1.uid() && kept.data == v1.data, "v1 changed");
    ensure!(
        kept.owner_references().iter().all(|o| o.kind == "Pod"),
        "v1's owners: {:?}",
        kept.owner_references()
    );

    pods.delete("debug", &DeleteParams::default().grace_period(0))
        .await?;
    wait_deleted(&pods, "debug").await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 goes with the pod that used it")?;
    let left = secrets
        .list_metadata(&ListParams::default().labels("app.kubernetes.io/managed-by=randomsecret"))
        .await?
        .items;
    ensure!(
        left.is_empty(),
        "versions left behind: {:?}",
        left.iter()
            .map(|s| (s.name_any(), s.finalizers().to_vec()))
            .collect::<Vec<_>>()
    );
    ns.delete().await
}

/// Versions deleted while their RandomSecret exists are held (current, and
/// within history); the RandomSecret deleted afterwards, nothing holds them
/// any more and they go. (A namespace deletion does this whenever its
/// Secrets are deleted before its RandomSecrets.)
#[tokio::test]
async fn versions_deleted_before_their_randomsecret_go_with_it() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-before").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let spec = |rotation: &str| json!({"length": 20, "history": 1, "rotation": rotation});
    let v1 = first_version(&api, &secrets, "db", spec("1")).await?;
    let v1n = v1.name_any();
    let v2n = rotate(&api, "db", "2").await?;
    let v2 = read(&secrets, &v2n).await?;
    for (s, like) in [(&v1n, &v1), (&v2n, &v2)] {
        let answer = delete_by_hand(&secrets, s)
            .await?
            .with_context(|| format!("the DELETE of {s} removed it at once"))?;
        held_as_it_was(&answer, like)?;
    }
    for s in [&v1n, &v2n] {
        wait_version(&api, "db", s, "deleting", |v| v.deleting).await?;
    }

    api.delete("db", &DeleteParams::background()).await?;
    wait_deleted(&api, "db").await?;
    for s in [&v1n, &v2n] {
        wait_deleted(&secrets, s).await.with_context(|| {
            format!("{s}, deleted earlier and held for its RandomSecret, goes once that is deleted")
        })?;
    }
    ns.delete().await
}

// ------------------------------------------- with controllers of their own

/// Runs the binary under test; its stdout and stderr (failing on a non-zero exit).
fn cli(args: &[&str]) -> Result<(String, String)> {
    let out = std::process::Command::new(randomsecret_bin())
        .args(args)
        .output()
        .context("running randomsecret")?;
    let (stdout, stderr) = (
        String::from_utf8(out.stdout)?,
        String::from_utf8(out.stderr)?,
    );
    ensure!(
        out.status.success(),
        "randomsecret {args:?}: {}\n{stderr}",
        out.status
    );
    Ok((stdout, stderr))
}

/// The current version's name.
fn current(rs: &RandomSecret) -> Result<String> {
    rs.status
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .context("status.secretName")
}

/// Adds a finalizer of someone else's to Secret `name` (beside ours).
async fn add_finalizer(secrets: &Api<Secret>, name: &str, finalizer: &str) -> Result<()> {
    let s = secrets.get_metadata(name).await?;
    let mut list = finalizers(&s);
    list.push(finalizer.to_string());
    let patch = json!({"metadata": {"resourceVersion": s.resource_version(), "finalizers": list}});
    secrets
        .patch_metadata(name, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

/// Removes `FOREIGN` from a Secret when dropped, passing or not, so the
/// namespace can go.
struct ForeignFinalizer(String, String);

impl Drop for ForeignFinalizer {
    fn drop(&mut self) {
        let (ns, name) = (&self.0, &self.1);
        let Ok(out) = kubectl(&[
            "get",
            "secret",
            name,
            "-n",
            ns,
            "-o",
            "jsonpath={.metadata.finalizers}",
        ]) else {
            return;
        };
        let list: Vec<String> = serde_json::from_str(&out).unwrap_or_default();
        if !list.iter().any(|f| f == FOREIGN) {
            return;
        }
        let rest: Vec<&String> = list.iter().filter(|f| *f != FOREIGN).collect();
        let patch = json!({"metadata": {"finalizers": rest}}).to_string();
        let _ = kubectl(&[
            "patch",
            "secret",
            name,
            "-n",
            ns,
            "--type=merge",
            "-p",
            &patch,
        ]);
    }
}

/// Deletes namespaces and waits (a minute) until they are gone: a
/// controller is running, to let their versions go.
async fn delete_namespaces(client: &Client, namespaces: Vec<TestNamespace>) -> Result<()> {
    let names: Vec<String> = namespaces.iter().map(|n| n.name.clone()).collect();
    for ns in namespaces {
        ns.delete().await?;
    }
    for n in &names {
        wait_namespace_gone(client, n, Duration::from_secs(60)).await?;
    }
    Ok(())
}

/// `randomsecret release-finalizers -n NS`, with the controller stopped (as
/// at an uninstall): `--dry-run` lists every version holding our finalizer
/// and changes nothing; the real run removes ours from each of them (and
/// from no Secret of another namespace), leaves another's finalizer in
/// place, and a second run finds nothing. A controller back protects the
/// held versions again.
#[tokio::test]
#[ignore = "stops its own controller: e2e/run.sh runs it after stopping the shared one"]
async fn release_finalizers_removes_ours_alone() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-release").await?;
    let other_ns = TestNamespace::new(&client, "prot-release-other").await?;
    let (api, secrets): (Api<RandomSecret>, Api<Secret>) = (ns.api(), ns.api());
    let (other_api, other_secrets): (Api<RandomSecret>, Api<Secret>) =
        (other_ns.api(), other_ns.api());
    let controller = ControllerProcess::start("protection", 18270, &[])?;

    // db: v1 within history 1, v2 current; app: a1; elsewhere: w1.
    let v1 = first_version(
        &api,
        &secrets,
        "db",
        json!({"length": 20, "history": 1, "rotation": "1"}),
    )
    .await?;
    let v2n = rotate(&api, "db", "2").await?;
    wait_version(&api, "db", &v1.name_any(), "retained within history", |v| {
        v.state == VersionState::Retained
    })
    .await?;
    let a1 = first_version(&api, &secrets, "app", json!({"length": 20})).await?;
    let w1 = first_version(&other_api, &other_secrets, "db", json!({"length": 20})).await?;
    let ours = [v1.name_any(), v2n.clone(), a1.name_any()];
    for s in &ours {
        ensure!(in_use(&read(&secrets, s).await?), "{s} is protected");
    }
    ensure!(in_use(&w1));
    // Someone else's finalizer beside ours, on v1: the controller keeps both.
    add_finalizer(&secrets, &v1.name_any(), FOREIGN).await?;
    let _cleanup = ForeignFinalizer(ns.name.clone(), v1.name_any());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let f = finalizers(&secrets.get_metadata(&v1.name_any()).await?);
    ensure!(
        f.iter().any(|f| f == FINALIZER_IN_USE) && f.iter().any(|f| f == FOREIGN),
        "the controller changed v1's finalizers: {f:?}"
    );
    controller.terminate()?;

    let lines = |out: &str| out.lines().map(String::from).collect::<BTreeSet<_>>();
    let expect = |verb: &str| {
        ours.iter()
            .map(|s| format!("secret/{}/{s} {verb} {FINALIZER_IN_USE}", ns.name))
            .collect::<BTreeSet<_>>()
    };
    let before: Vec<(String, String)> = {
        let mut v = Vec::new();
        for s in &ours {
            let m = secrets.get_metadata(s).await?;
            v.push((s.clone(), m.resource_version().unwrap_or_default()));
        }
        v
    };

    // --dry-run: lists them, changes nothing.
    let (out, err) = cli(&["release-finalizers", "-n", &ns.name, "--dry-run"])?;
    ensure!(lines(&out) == expect("holds"), "--dry-run printed:\n{out}");
    ensure!(
        err.contains("3 Secret(s) would be released (dry run)"),
        "--dry-run stderr: {err}"
    );
    for (s, rv) in &before {
        let m = secrets.get_metadata(s).await?;
        ensure!(
            m.resource_version().as_deref() == Some(rv.as_str()) && in_use(&m),
            "--dry-run changed {s}: finalizers {:?}",
            finalizers(&m)
        );
    }

    // The real run: ours removed, the other finalizer kept, other namespaces untouched.
    let (out, err) = cli(&["release-finalizers", "-n", &ns.name])?;
    ensure!(
        lines(&out) == expect("released"),
        "release-finalizers printed:\n{out}"
    );
    ensure!(err.contains("3 Secret(s) released"), "stderr: {err}");
    for s in &ours {
        let now = read(&secrets, s).await?;
        let want: Vec<String> = if *s == v1.name_any() {
            vec![FOREIGN.to_string()]
        } else {
            vec![]
        };
        ensure!(
            finalizers(&now) == want,
            "{s}'s finalizers after release-finalizers: {:?}, want {want:?}",
            finalizers(&now)
        );
        ensure!(!terminating(&now), "{s} was deleted");
    }
    ensure!(
        read(&secrets, &v1.name_any()).await?.data == v1.data,
        "v1's data changed"
    );
    let w1_now = read(&other_secrets, &w1.name_any()).await?;
    ensure!(
        finalizers(&w1_now) == [FINALIZER_IN_USE],
        "-n {} reached namespace {}: {:?}",
        ns.name,
        other_ns.name,
        finalizers(&w1_now)
    );
    let (out, err) = cli(&["release-finalizers", "-n", &ns.name])?;
    ensure!(
        out.is_empty() && err.contains("0 Secret(s) released"),
        "a second run: {out} {err}"
    );

    // A controller back protects what it holds again, and keeps the other finalizer.
    let controller = ControllerProcess::start("protection", 18270, &[])?;
    for s in &ours {
        let s2 = s.clone();
        wait_for(&secrets, s, "protected again", move |o: Option<&Secret>| {
            o.is_some_and(in_use)
        })
        .await
        .with_context(|| format!("{s2}: the controller protects it again"))?;
    }
    let f = finalizers(&secrets.get_metadata(&v1.name_any()).await?);
    ensure!(
        f.iter().any(|f| f == FOREIGN),
        "the other finalizer went: {f:?}"
    );

    ensure!(remove_finalizer(&secrets, &v1.name_any(), FOREIGN).await?);
    delete_namespaces(&client, vec![ns, other_ns]).await?;
    controller.terminate()
}

/// `--deletion-protection=false`: the versions a protecting controller made
/// lose the finalizer as they are reconciled, new versions get none, and a
/// version deleted by hand is gone at once (a live one is lost). A
/// protecting controller back protects the held versions again.
#[tokio::test]
#[ignore = "runs its own controller: e2e/run.sh runs it after stopping the shared one"]
async fn without_deletion_protection_versions_hold_no_finalizer() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "prot-off").await?;
    let (api, secrets): (Api<RandomSecret>, Api<Secret>) = (ns.api(), ns.api());
    let controller = ControllerProcess::start("protection", 18270, &[])?;
    let spec = |rotation: &str| json!({"length": 20, "history": 1, "rotation": rotation});
    let v1n = first_version(&api, &secrets, "db", spec("1"))
        .await?
        .name_any();
    let v2n = rotate(&api, "db", "2").await?;
    for s in [&v1n, &v2n] {
        ensure!(in_use(&read(&secrets, s).await?), "{s} is protected");
    }
    controller.terminate()?;

    let controller =
        ControllerProcess::start("protection", 18270, &["--deletion-protection=false"])?;
    for s in [&v1n, &v2n] {
        wait_for(&secrets, s, "unprotected", |o: Option<&Secret>| {
            o.is_some_and(|o| !in_use(o))
        })
        .await
        .with_context(|| format!("{s} loses {FINALIZER_IN_USE} without protection"))?;
    }
    // New versions: no finalizer.
    let v3n = rotate(&api, "db", "3").await?;
    wait_deleted(&secrets, &v1n)
        .await
        .context("v1 released beyond history 1")?;
    let fresh = first_version(&api, &secrets, "fresh", json!({"length": 20})).await?;
    for s in [&read(&secrets, &v3n).await?, &fresh] {
        ensure!(
            finalizers(s).is_empty(),
            "{} made without protection has finalizers {:?}",
            s.name_any(),
            finalizers(s)
        );
    }
    // A delete by hand is a delete: gone at once, and a live version is lost.
    ensure!(
        delete_by_hand(&secrets, &fresh.name_any()).await?.is_none(),
        "the DELETE of an unprotected version left it Terminating"
    );
    wait_deleted(&secrets, &fresh.name_any()).await?;
    wait_for(
        &api,
        "fresh",
        "VersionLost",
        not_ready_because("VersionLost"),
    )
    .await?;
    controller.terminate()?;

    // Protection on again: the held versions (v3 current, v2 within history) get it back.
    let controller = ControllerProcess::start("protection", 18270, &[])?;
    for s in [&v2n, &v3n] {
        wait_for(&secrets, s, "protected again", |o: Option<&Secret>| {
            o.is_some_and(in_use)
        })
        .await
        .with_context(|| format!("{s} is protected again"))?;
    }
    let rs = api.get("db").await?;
    ensure!(is_ready(Some(&rs)) && current(&rs)? == v3n);
    delete_namespaces(&client, vec![ns]).await?;
    controller.terminate()
}
