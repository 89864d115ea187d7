//! The Kubernetes client, and the check that the CRD is installed.

use crate::runtime::status::Answer as _;
use anyhow::{Context as _, bail};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use std::path::Path;
use std::time::Duration;
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

/// Namespaced kind `K` in `namespace`, or in all namespaces (None): the
/// scope of a command or of the controller's `--namespace`.
pub fn scoped<K>(client: &Client, namespace: Option<&str>) -> kube::Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => kube::Api::namespaced(client.clone(), ns),
        None => kube::Api::all(client.clone()),
    }
}

/// How long an idle connection is kept for reuse. kube's default client
/// keeps every connection a burst of reconciles opened, for good (its idle
/// timeout needs a timer it does not set): some 25 after a burst at
/// `--concurrency 16`, each holding TLS and read buffers. The pool itself
/// is not bounded: closing connections during a burst costs handshakes.
/// 90 s (hyper's own default): at 30 s, the first writes after a pause of
/// half a minute each waited for a new TLS connection (about 50 ms on the
/// benchmark's machine: the two slowest of 1,000 rotations, issue 33).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Builds the client from `kubeconfig` (`--kubeconfig`), else
/// `KUBECONFIG`/~/.kube/config, else in-cluster.
pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<Client> {
    client_as(kubeconfig, None).await
}

/// [`client`], its requests sent with the User-Agent `agent` (so that the
/// apiserver's audit log tells a controller, and its shard, apart).
pub async fn client_as(kubeconfig: Option<&Path>, agent: Option<&str>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &Default::default()).await?
        }
        None => Config::infer()
            .await
            .context("no kubeconfig and not in a cluster")?,
    };
    let mut config = config;
    if let Some(agent) = agent {
        let value = hyper::header::HeaderValue::from_str(agent)
            .with_context(|| format!("the User-Agent {agent:?}"))?;
        config.headers.push((hyper::header::USER_AGENT, value));
    }
    // A proxy is kube's to handle (or to refuse clearly, as this build has
    // no proxy support).
    if config.proxy_url.is_some() {
        return Ok(Client::try_from(config)?);
    }
    pooled(config)
}

/// The service stack of kube's `Client::try_from(config)` (timeouts, retry
/// of throttled requests, auth, headers), over a pool that closes idle
/// connections.
fn pooled(config: Config) -> anyhow::Result<Client> {
    let mut connector = hyper_timeout::TimeoutConnector::new(config.rustls_https_connector()?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let http = HttpClient::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(http);
    Ok(Client::new(service, config.default_namespace))
}

/// The plural name under which the apiserver serves `kind` of `api_version`
/// (None: not served), from API discovery, which every authenticated
/// client may read.
pub async fn served(
    client: &Client,
    api_version: &str,
    kind: &str,
) -> Result<Option<String>, kube::Error> {
    match client.list_api_group_resources(api_version).await {
        Ok(list) => Ok(list
            .resources
            .into_iter()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .map(|r| r.name)),
        Err(kube::Error::Api(s)) if s.not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The custom reference kinds (`--reference`), each found served (its
/// plural from discovery) and registered for the watches and the owner
/// references, once, before any watch starts. A kind the apiserver does not
/// serve stops the start with what to do: its watch could never list, and
/// no version would ever be released.
pub async fn custom_references(client: &Client, texts: &[String]) -> anyhow::Result<()> {
    let mut kinds = crate::references::custom::parse_all(texts).map_err(anyhow::Error::msg)?;
    for k in &mut kinds {
        let what = format!("--reference {}/{}", k.api_version, k.kind);
        k.plural = served(client, &k.api_version, &k.kind)
            .await
            .with_context(|| format!("{what}: reading API discovery"))?
            .with_context(|| {
                format!(
                    "{what}: the apiserver serves no kind {} in {}: install its CRD first, or correct or remove the reference",
                    k.kind, k.api_version
                )
            })?;
        tracing::info!(kind = %k.kind, api_version = %k.api_version, resource = %k.plural, paths = k.paths.len(), "custom references: its objects hold the versions they name");
    }
    crate::references::custom::register(kinds).map_err(anyhow::Error::msg)
}

/// Fails with instructions when the CRD is not installed (discovery needs no extra RBAC).
pub async fn check_crd(client: &Client) -> anyhow::Result<()> {
    let how = "install it with `randomsecret crd | kubectl apply --server-side -f -` (or the Helm chart / config/crd)";
    match client
        .list_api_group_resources(crate::api::API_VERSION)
        .await
    {
        Ok(list)
            if list
                .resources
                .iter()
                .any(|r| r.name == <crate::api::RandomSecret as kube::Resource>::plural(&())) =>
        {
            Ok(())
        }
        Ok(_) => bail!("the RandomSecret CRD (randomsecrets.randomsecret.io) is not served: {how}"),
        Err(kube::Error::Api(s)) if s.not_found() => {
            bail!("the RandomSecret CRD (randomsecrets.randomsecret.io) is not installed: {how}")
        }
        Err(e) => Err(e).context("checking that the RandomSecret CRD is installed"),
    }
}
