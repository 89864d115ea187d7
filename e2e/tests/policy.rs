//! The operators' allow lists (`--allow-secret-types`,
//! `--allow-label-prefixes`, `--allow-annotation-prefixes`): a RandomSecret
//! outside them is `Stalled`/`NotAllowed` with a message that says what is
//! allowed, and nothing is created for it; once its spec is fixed, its version
//! is made. Runs its own controller (with the flags), so `e2e/run.sh` runs it
//! (`--ignored`) after stopping the shared one.

use anyhow::{Result, ensure};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ListParams, PostParams};
use randomsecret::api::RandomSecret;
use randomsecret_e2e::*;
use serde_json::json;

fn message(rs: &RandomSecret) -> String {
    condition(rs, "Ready")
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

#[tokio::test]
#[ignore = "runs its own controller: e2e/run.sh runs it after stopping the shared one"]
async fn allow_lists_refuse_what_the_operators_did_not_allow() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::new(&client, "policy").await?;
    let api: Api<RandomSecret> = ns.api();
    let secrets: Api<Secret> = ns.api();
    let controller = ControllerProcess::start(
        "policy",
        18130,
        &[
            "--allow-secret-types=Opaque,kubernetes.io/basic-auth",
            "--allow-label-prefixes=app.example.com/",
            "--allow-annotation-prefixes=app.example.com/,note",
        ],
    )?;

    // Within the lists: made as usual.
    let ok = json!({"length": 16, "type": "kubernetes.io/basic-auth",
        "secretLabels": {"app.example.com/team": "a"}, "secretAnnotations": {"note": "x"}});
    let s = first_version(&api, &secrets, "ok", ok).await?;
    record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;

    // Outside: Stalled with the reason, and nothing created.
    let refused = [
        (
            "bad-type",
            json!({"length": 16, "type": "example.com/token"}),
            "type example.com/token is not allowed here (allowed: Opaque, kubernetes.io/basic-auth)",
        ),
        (
            "bad-label",
            json!({"length": 16, "secretLabels": {"app.kubernetes.io/part-of": "x"}}),
            "secretLabels key app.kubernetes.io/part-of is not allowed here (allowed prefixes: app.example.com/)",
        ),
        (
            "bad-annotation",
            json!({"length": 16, "secretAnnotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}),
            "secretAnnotations key kubectl.kubernetes.io/last-applied-configuration is not allowed here",
        ),
    ];
    for (name, spec, says) in &refused {
        api.create(&PostParams::default(), &random_secret(name, spec.clone())?)
            .await?;
        let rs = wait_for(&api, name, "NotAllowed", not_ready_because("NotAllowed")).await?;
        ensure!(message(&rs).contains(says), "{name}: {}", message(&rs));
        ensure!(
            condition(&rs, "Stalled").is_some_and(|c| c.status == "True"),
            "{name}: not Stalled"
        );
        let made = secrets
            .list(&ListParams::default().labels(&format!("randomsecret.io/name={name}")))
            .await?;
        ensure!(made.items.is_empty(), "{name}: a Secret was created");
    }
    wait_event(&client, &ns.name, "a NotAllowed Warning", |e| {
        e.reason.as_deref() == Some("NotAllowed") && e.type_.as_deref() == Some("Warning")
    })
    .await?;

    // Fixed: the version is made.
    patch_spec(&api, "bad-label", json!({"secretLabels": {"app.kubernetes.io/part-of": null, "app.example.com/part-of": "x"}}))
        .await?;
    let rs = wait_for(&api, "bad-label", "Ready once allowed", is_ready).await?;
    let s = current_secret(&secrets, &rs).await?;
    record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;

    controller.terminate()?;
    ns.delete().await
}
