//! Helpers for the end-to-end suites: they run against the real local control
//! plane of `e2e/cluster.sh` (or any cluster that `KUBECONFIG` points at).

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::wait::{Condition, await_condition};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long any single wait in a test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(90);

/// A client for the cluster named by `KUBECONFIG` (set by `make test`).
pub async fn client() -> Result<Client> {
    if std::env::var_os("KUBECONFIG").is_none() {
        bail!(
            "KUBECONFIG is not set: run `make test`, or `eval $(e2e/cluster.sh env)` after `e2e/cluster.sh up`"
        );
    }
    Client::try_default()
        .await
        .context("connecting to the cluster in KUBECONFIG")
}

/// A fresh namespace for one test, named `<prefix>-<unique suffix>`.
pub struct TestNamespace {
    pub name: String,
    client: Client,
}

impl TestNamespace {
    pub async fn new(client: &Client, prefix: &str) -> Result<Self> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
        let name = format!(
            "{prefix}-{:x}{}",
            nanos,
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"e2e.randomsecret.io/test": prefix}},
        }))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        Ok(Self {
            name,
            client: client.clone(),
        })
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Deletes the namespace (call at the end of a passing test; a failing one
    /// leaves it behind for inspection).
    pub async fn delete(self) -> Result<()> {
        Api::<Namespace>::all(self.client)
            .delete(&self.name, &DeleteParams::background())
            .await?;
        Ok(())
    }
}

/// Waits (by watching) until `cond` holds for the named object, or fails after [`WAIT`].
pub async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, cond: impl Condition<K>) -> Result<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(obj))) => Ok(obj),
        Ok(Ok(None)) => bail!("{name}: deleted while waiting for {what}"),
        Ok(Err(e)) => Err(e).with_context(|| format!("{name}: watching for {what}")),
        Err(_) => bail!("{name}: not {what} within {WAIT:?}"),
    }
}

/// Waits until the named object no longer exists.
pub async fn wait_deleted<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let Some(obj) = api.get_opt(name).await? else {
        return Ok(());
    };
    let uid = obj.meta().uid.clone().unwrap_or_default();
    let cond = kube::runtime::conditions::is_deleted(&uid);
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(r) => r
            .map(drop)
            .with_context(|| format!("{name}: watching for deletion")),
        Err(_) => bail!("{name}: still exists after {WAIT:?}"),
    }
}

/// Appends generated values to `$E2E_VALUES_FILE` (set by `e2e/run.sh`), which
/// is checked against the controller's log after the suite: no value may appear there.
pub fn record_values<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
    use std::io::Write;
    let Some(path) = std::env::var_os("E2E_VALUES_FILE") else {
        return Ok(());
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    for v in values {
        // Short values could appear in a log by chance; 12+ characters cannot.
        if v.len() >= 12 && !v.contains(&b'\n') {
            f.write_all(v)?;
            f.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// The `randomsecret` binary under test (`$RANDOMSECRET_BIN`, set by `e2e/run.sh`).
pub fn randomsecret_bin() -> std::path::PathBuf {
    std::env::var_os("RANDOMSECRET_BIN")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/randomsecret")
        })
}

/// The repository's root folder.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}
