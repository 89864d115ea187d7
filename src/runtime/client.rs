//! The Kubernetes client, and the check that the CRD is installed.

use crate::cli::ControllerArgs;
use anyhow::{Context as _, bail};
use kube::Client;

/// Builds the client from `--kubeconfig`, else `KUBECONFIG`/~/.kube/config, else in-cluster.
pub async fn client(args: &ControllerArgs) -> anyhow::Result<Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig and not in a cluster")?,
    };
    Ok(Client::try_from(config)?)
}

/// Fails with instructions when the CRD is not installed (discovery needs no extra RBAC).
pub async fn check_crd(client: &Client) -> anyhow::Result<()> {
    let how = "install it with `randomsecret crd | kubectl apply --server-side -f -` (or the Helm chart / config/crd)";
    match client.list_api_group_resources("randomsecret.io/v1").await {
        Ok(list) if list.resources.iter().any(|r| r.name == "randomsecrets") => Ok(()),
        Ok(_) => bail!("the RandomSecret CRD (randomsecrets.randomsecret.io) is not served: {how}"),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            bail!("the RandomSecret CRD (randomsecrets.randomsecret.io) is not installed: {how}")
        }
        Err(e) => Err(e).context("checking that the RandomSecret CRD is installed"),
    }
}
