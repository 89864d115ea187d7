//! Smoke suite: proves the local control plane provides what the product
//! depends on (rollouts with Ready pods, ReplicaSet history pruning, garbage
//! collection by owner references, RBAC-enforced ServiceAccount tokens).

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use randomsecret_e2e::{TestNamespace, client, rollout_complete, wait_deleted, wait_for};
use serde_json::json;

fn deployment(name: &str, history: i32) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "revisionHistoryLimit": history,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                         "env": [{"name": "REV", "value": "1"}]}]},
            },
        },
    }))?)
}

async fn set_rev(api: &Api<Deployment>, name: &str, rev: &str) -> Result<()> {
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "REV", "value": rev}]}]}}}});
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    Ok(())
}

async fn replicaset_names(api: &Api<ReplicaSet>, app: &str) -> Result<Vec<String>> {
    let lp = ListParams::default().labels(&format!("app={app}"));
    Ok(api
        .list(&lp)
        .await?
        .items
        .iter()
        .map(|rs| rs.name_any())
        .collect())
}

#[tokio::test]
async fn deployment_rolls_out_and_history_is_pruned() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "smoke-deploy").await?;
    let deploys: Api<Deployment> = ns.api();
    let rss: Api<ReplicaSet> = ns.api();

    deploys
        .create(&PostParams::default(), &deployment("web", 1)?)
        .await?;
    wait_for(
        &deploys,
        "web",
        "available with 2 Ready pods",
        rollout_complete,
    )
    .await?;
    let first = replicaset_names(&rss, "web").await?;
    ensure!(first.len() == 1, "expected one ReplicaSet, got {first:?}");

    // A template change makes a new ReplicaSet; the rollout completes.
    set_rev(&deploys, "web", "2").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out to revision 2",
        rollout_complete,
    )
    .await?;
    let second = replicaset_names(&rss, "web").await?;
    ensure!(
        second.len() == 2 && second.contains(&first[0]),
        "expected the old and a new ReplicaSet, got {second:?}"
    );

    // A third revision with revisionHistoryLimit 1: the first ReplicaSet is pruned.
    set_rev(&deploys, "web", "3").await?;
    wait_for(
        &deploys,
        "web",
        "rolled out to revision 3",
        rollout_complete,
    )
    .await?;
    wait_deleted(&rss, &first[0])
        .await
        .context("the oldest ReplicaSet is pruned")?;
    let third = replicaset_names(&rss, "web").await?;
    ensure!(
        third.len() == 2,
        "expected current + 1 old ReplicaSet, got {third:?}"
    );
    ns.delete().await
}

#[tokio::test]
async fn garbage_collector_deletes_dependents() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "smoke-gc").await?;
    let cms: Api<ConfigMap> = ns.api();
    let owner = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}}))?,
        )
        .await?;
    let owner_ref = owner.controller_owner_ref(&()).context("owner reference")?;
    let child: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "child", "ownerReferences": [owner_ref]},
        "data": {"k": "v"},
    }))?;
    cms.create(&PostParams::default(), &child).await?;
    let survivor: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "unowned"}}))?;
    cms.create(&PostParams::default(), &survivor).await?;

    cms.delete("owner", &DeleteParams::background()).await?;
    wait_deleted(&cms, "child")
        .await
        .context("the dependent is garbage-collected")?;
    ensure!(
        cms.get_opt("unowned").await?.is_some(),
        "an object without owners was deleted"
    );
    ns.delete().await
}

#[tokio::test]
async fn service_account_token_is_subject_to_rbac() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "smoke-rbac").await?;
    let pp = PostParams::default();
    let sas: Api<ServiceAccount> = ns.api();
    sas.create(
        &pp,
        &serde_json::from_value(json!({"metadata": {"name": "reader"}}))?,
    )
    .await?;
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "read-configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }))?;
    ns.api::<Role>().create(&pp, &role).await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns.name}],
    }))?;
    ns.api::<RoleBinding>().create(&pp, &binding).await?;

    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 600}}))?;
    let token = sas.create_token_request("reader", &pp, &request).await?;
    let token = token.status.context("token in TokenRequest status")?.token;

    let mut config = kube::Config::infer().await?;
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.into()),
        ..Default::default()
    };
    let sa_client = Client::try_from(config)?;

    // Allowed by the Role.
    let cms: Api<ConfigMap> = Api::namespaced(sa_client.clone(), &ns.name);
    cms.list(&ListParams::default())
        .await
        .context("the Role allows listing configmaps")?;
    // Outside the Role: refused with 403.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(sa_client, &ns.name);
    match secrets.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => {
            anyhow::bail!("listing secrets with the reader token must be forbidden, got {other:?}")
        }
    }
    ns.delete().await
}
