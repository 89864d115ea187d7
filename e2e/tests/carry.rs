//! Carry-over (issue 28): a generated value changes when, and only when, it
//! is rotated. Edits that rotate nothing give a new version with the same
//! generated values, byte for byte; a key's own token, or a change of its
//! generator, rotates that key alone; `spec.rotation` rotates all. Every
//! earlier version stays untouched and retained while its ReplicaSet exists.
//! When the previous version is gone or is not ours, the new version has
//! fresh values and says so, and a planted look-alike is never read.

use anyhow::{Context, Result, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use randomsecret::api::{RandomSecret, VersionState};
use randomsecret_e2e::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

type Data = BTreeMap<String, ByteString>;

fn data(s: &Secret) -> Data {
    s.data.clone().unwrap_or_default()
}

/// The keys whose values differ between two versions' data (present in both).
fn changed(a: &Data, b: &Data) -> Vec<String> {
    b.iter()
        .filter(|(k, v)| a.get(*k).is_some_and(|old| old != *v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Ready for the current generation, with a current version other than `old`.
fn moved_on_from(old: String) -> impl Fn(Option<&RandomSecret>) -> bool {
    move |rs| {
        is_ready(rs)
            && rs
                .and_then(|r| r.status.as_ref())
                .and_then(|s| s.secret_name.as_deref())
                .is_some_and(|n| n != old)
    }
}

/// One edit of the spec: waits for the new current version, points the
/// Deployment at it and waits for the rollout, so every earlier version is
/// held by a ReplicaSet of the history.
struct Story {
    api: Api<RandomSecret>,
    secrets: Api<Secret>,
    deploys: Api<Deployment>,
    /// Each version so far: its name and data as first read.
    versions: Vec<(String, Data)>,
}

impl Story {
    async fn edit(&mut self, spec: Value) -> Result<(Data, RandomSecret)> {
        let (old, _) = self.versions.last().cloned().context("a first version")?;
        patch_spec(&self.api, "db", spec.clone()).await?;
        let rs = wait_for(
            &self.api,
            "db",
            &format!("a new version after {spec}"),
            moved_on_from(old),
        )
        .await?;
        let s = current_secret(&self.secrets, &rs).await?;
        let name = s.name_any();
        let rev = self.versions.len().to_string();
        point_at(&self.deploys, "app", &name, &rev).await?;
        wait_for(
            &self.deploys,
            "app",
            "rolled out",
            rolled_out_on_all(&[&name]),
        )
        .await?;
        self.versions.push((name, data(&s)));
        self.untouched().await?;
        Ok((data(&s), rs))
    }

    /// Every earlier version exists with its first data and is retained.
    async fn untouched(&self) -> Result<()> {
        let rs = self.api.get("db").await?;
        let (_, earlier) = self.versions.split_last().context("versions")?;
        for (name, first) in earlier {
            let now = self.secrets.get(name).await?;
            ensure!(data(&now) == *first, "{name} was rewritten");
            let v =
                version_status(&rs, name).with_context(|| format!("{name} in status.versions"))?;
            ensure!(
                v.state == VersionState::Retained
                    && v.referenced_by.iter().any(|r| r.starts_with("ReplicaSet/")),
                "{name} is retained by its ReplicaSet: {v:?}"
            );
        }
        Ok(())
    }
}

fn rotated_keys(rs: &RandomSecret) -> Result<Vec<String>> {
    let name = rs
        .status
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .context("secretName")?;
    Ok(version_status(rs, &name)
        .context("current in versions")?
        .rotated_keys
        .clone())
}

#[tokio::test]
async fn generated_values_change_only_when_rotated() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "carry").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let deploys: Api<Deployment> = ns.api();
    let v1 = first_version(
        &api,
        &secrets,
        "db",
        json!({"keys": {"password": {"length": 24}, "pin": {"length": 6, "charset": "numeric"}},
               "static": {"username": "app"}, "rotation": "1"}),
    )
    .await?;
    let mut app = deployment("app", &v1.name_any())?;
    app.spec.as_mut().context("spec")?.revision_history_limit = Some(20);
    deploys.create(&PostParams::default(), &app).await?;
    wait_for(
        &deploys,
        "app",
        "rolled out",
        rolled_out_on_all(&[&v1.name_any()]),
    )
    .await?;
    let mut story = Story {
        api: api.clone(),
        secrets: secrets.clone(),
        deploys,
        versions: vec![(v1.name_any(), data(&v1))],
    };
    let first = data(&v1);

    // Edits that rotate nothing: the generated values are the same bytes.
    let (d, rs) = story.edit(json!({"static": {"username": "app2"}})).await?;
    ensure!(
        changed(&first, &d) == ["username"],
        "a static edit changed {:?}",
        changed(&first, &d)
    );
    ensure!(
        rotated_keys(&rs)?.is_empty(),
        "nothing rotated: {:?}",
        rotated_keys(&rs)?
    );
    wait_event(
        &client,
        &ns.name,
        "VersionCreated saying what was kept",
        |e| {
            e.reason.as_deref() == Some("VersionCreated")
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains("kept password, pin"))
        },
    )
    .await?;
    let (d, rs) = story
        .edit(json!({"keys": {"token": {"length": 16}}}))
        .await?;
    ensure!(d.get("password") == first.get("password") && d.get("pin") == first.get("pin"));
    ensure!(d.contains_key("token"), "the added key is there");
    ensure!(rotated_keys(&rs)? == ["token"], "{:?}", rotated_keys(&rs)?);
    let (after_type, _) = story.edit(json!({"type": "example.com/db"})).await?;
    ensure!(
        changed(&d, &after_type).is_empty(),
        "a type change changed {:?}",
        changed(&d, &after_type)
    );

    // secretLabels are not in the name: the same version, untouched.
    let before = api.get("db").await?.status.context("status")?.secret_name;
    patch_spec(&api, "db", json!({"secretLabels": {"team": "shop"}})).await?;
    let rs = wait_for(&api, "db", "Ready with the labels", is_ready).await?;
    ensure!(rs.status.as_ref().and_then(|s| s.secret_name.clone()) == before);
    ensure!(data(&secrets.get(before.as_deref().context("name")?).await?) == after_type);

    // A key's own token rotates that key alone.
    let prev = after_type;
    let (d, rs) = story
        .edit(json!({"keys": {"password": {"length": 24, "rotation": "a"}}}))
        .await?;
    ensure!(
        changed(&prev, &d) == ["password"],
        "keys.password.rotation changed {:?}",
        changed(&prev, &d)
    );
    ensure!(
        rotated_keys(&rs)? == ["password"],
        "{:?}",
        rotated_keys(&rs)?
    );
    // A new generator (pin's length) rotates that key alone.
    let prev = d;
    let (d, rs) = story
        .edit(json!({"keys": {"pin": {"length": 8, "charset": "numeric"}}}))
        .await?;
    ensure!(
        changed(&prev, &d) == ["pin"],
        "pin's length changed {:?}",
        changed(&prev, &d)
    );
    ensure!(
        value(
            &secrets.get(&story.versions.last().unwrap().0).await?,
            "pin"
        )?
        .len()
            == 8
    );
    ensure!(rotated_keys(&rs)? == ["pin"], "{:?}", rotated_keys(&rs)?);
    // spec.rotation rotates every generated key.
    let prev = d;
    let (d, rs) = story.edit(json!({"rotation": "2"})).await?;
    ensure!(
        changed(&prev, &d) == ["password", "pin", "token"],
        "spec.rotation changed {:?}",
        changed(&prev, &d)
    );
    ensure!(
        rotated_keys(&rs)? == ["password", "pin", "token"],
        "{:?}",
        rotated_keys(&rs)?
    );
    ensure!(
        condition(&rs, "CarriedOver").is_none(),
        "no CarriedOver condition when all is well"
    );
    ns.delete().await
}

/// A RandomSecret "db" whose first version is then deleted by hand, for
/// good (past deletion protection's finalizer): that version as it was.
async fn deleted_by_hand(api: &Api<RandomSecret>, secrets: &Api<Secret>) -> Result<Secret> {
    let v1 = first_version(
        api,
        secrets,
        "db",
        json!({"keys": {"password": {"length": 24}}, "static": {"username": "app"}}),
    )
    .await?;
    force_delete_secret(secrets, &v1.name_any()).await?;
    Ok(v1)
}

/// The previous version deleted by hand before an edit: the new version has
/// fresh values, and an Event and `CarriedOver=False` say so; the next
/// version carries over again.
#[tokio::test]
async fn a_previous_version_deleted_by_hand_gives_fresh_values_and_says_so() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "carry-lost").await?;
    let (api, secrets) = (ns.api(), ns.api());
    let v1 = deleted_by_hand(&api, &secrets).await?;
    wait_for(&api, "db", "VersionLost", not_ready_because("VersionLost")).await?;

    patch_spec(&api, "db", json!({"static": {"username": "app2"}})).await?;
    let rs = wait_for(&api, "db", "a new version", moved_on_from(v1.name_any())).await?;
    let v2 = current_secret(&secrets, &rs).await?;
    ensure!(
        value(&v2, "password")? != value(&v1, "password")?,
        "fresh values"
    );
    let c = condition(&rs, "CarriedOver").context("CarriedOver")?;
    ensure!(
        c.status == "False"
            && c.reason == "PreviousUnavailable"
            && c.message.contains(&v2.name_any()),
        "{c:?}"
    );
    ensure!(
        rotated_keys(&rs)? == ["password"],
        "{:?}",
        rotated_keys(&rs)?
    );
    wait_event(&client, &ns.name, "PreviousUnavailable", |e| {
        e.reason.as_deref() == Some("PreviousUnavailable")
            && e.type_.as_deref() == Some("Warning")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains(&v1.name_any()))
    })
    .await?;

    patch_spec(&api, "db", json!({"static": {"username": "app3"}})).await?;
    let rs = wait_for(&api, "db", "a third version", moved_on_from(v2.name_any())).await?;
    let v3 = current_secret(&secrets, &rs).await?;
    ensure!(
        value(&v3, "password")? == value(&v2, "password")?,
        "carried from v2"
    );
    ensure!(
        condition(&rs, "CarriedOver").is_none(),
        "the condition is gone"
    );
    ns.delete().await
}

/// A Secret planted under the previous version's name, with our labels and
/// the real version's annotations (proof and lineage copied) over values of
/// the planter's choice, is never read for values.
#[tokio::test]
async fn a_planted_look_alike_previous_version_is_never_read() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "carry-plant").await?;
    let (api, secrets) = (ns.api(), ns.api());
    let v1 = deleted_by_hand(&api, &secrets).await?;
    let name = v1.name_any();
    let mut planted = v1.clone();
    planted.metadata = kube::api::ObjectMeta {
        name: Some(name.clone()),
        labels: v1.metadata.labels.clone(),
        annotations: v1.metadata.annotations.clone(),
        ..Default::default()
    };
    let chosen = "planted-by-someone-else-0000";
    planted
        .data
        .as_mut()
        .context("data")?
        .insert("password".into(), ByteString(chosen.as_bytes().to_vec()));
    secrets.create(&PostParams::default(), &planted).await?;

    patch_spec(&api, "db", json!({"static": {"username": "app2"}})).await?;
    let rs = wait_for(&api, "db", "a new version", moved_on_from(name.clone())).await?;
    let v2 = current_secret(&secrets, &rs).await?;
    let password = value(&v2, "password")?;
    ensure!(
        password != chosen && password != value(&v1, "password")?,
        "fresh values"
    );
    let c = condition(&rs, "CarriedOver").context("CarriedOver")?;
    ensure!(
        c.status == "False" && c.reason == "PreviousUnavailable",
        "{c:?}"
    );
    // The planted Secret is left as it was.
    ensure!(value(&secrets.get(&name).await?, "password")? == chosen);
    ns.delete().await
}
