//! The cluster: a client, a namespace per test, and waiting for objects and Events.

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
    wait_uid_deleted(api, name, obj.meta().uid.as_deref().unwrap_or_default()).await
}

/// Waits until the object `name` of UID `uid` no longer exists: another
/// object since made at the name does not count. For a name the controller
/// fills again at once (the next version's, once a Secret planted there is
/// deleted), where [`wait_deleted`] could read the new object and wait for
/// its deletion instead.
pub async fn wait_uid_deleted<K>(api: &Api<K>, name: &str, uid: &str) -> Result<()>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let cond = kube::runtime::conditions::is_deleted(uid);
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(r) => r
            .map(drop)
            .with_context(|| format!("{name}: watching for deletion")),
        Err(_) => bail!("{name}: still exists after {WAIT:?}"),
    }
}

/// Waits until an Event in `namespace` matches `pred` (Events are posted in
/// the background, so one may land just after the status that reports the change).
pub async fn wait_event(
    client: &Client,
    namespace: &str,
    what: &str,
    pred: impl Fn(&k8s_openapi::api::events::v1::Event) -> bool,
) -> Result<Vec<k8s_openapi::api::events::v1::Event>> {
    wait_events(client, namespace, what, |items| items.iter().any(&pred)).await
}

/// Waits until the Events in `namespace`, taken together, satisfy `pred`.
pub async fn wait_events(
    client: &Client,
    namespace: &str,
    what: &str,
    pred: impl Fn(&[k8s_openapi::api::events::v1::Event]) -> bool,
) -> Result<Vec<k8s_openapi::api::events::v1::Event>> {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), namespace);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let items = api.list(&Default::default()).await?.items;
        if pred(&items) {
            return Ok(items);
        }
        if std::time::Instant::now() > deadline {
            bail!("no {what} Event in {namespace} after {WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
