//! A second local control plane, for the cluster push (`spec.push.clusters`):
//! `e2e/cluster.sh` with a state directory and ports of its own (and so its
//! own CA), started by a test and stopped when it is dropped. A
//! ServiceAccount there gets exactly the RBAC docs/src/clusters.md documents for a
//! connection, and an upstream Secret holds a kubeconfig with its token.

use crate::tools::{cluster_sh, kubectl, repo_root, run};
use anyhow::{Context, Result};
use kube::Client;
use std::path::PathBuf;

/// The downstream control plane's ports (apart from the test and bench ones).
const PORTS: [(&str, &str); 6] = [
    ("ETCD_PORT", "14379"),
    ("ETCD_PEER_PORT", "14380"),
    ("API_PORT", "18443"),
    ("KCM_PORT", "22257"),
    ("SCHED_PORT", "22259"),
    ("KWOK_PORT", "22261"),
];
pub const API_PORT: u16 = 18443;

pub struct DownstreamCluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
}

impl DownstreamCluster {
    /// Starts it (from an empty etcd) and waits until it serves.
    pub fn up() -> Result<Self> {
        Self::up_with(&[])
    }

    /// [`Self::up`] with more of `e2e/cluster.sh`'s settings, such as
    /// `APISERVER_EXTRA_ARGS`.
    pub fn up_with(settings: &[(&str, &str)]) -> Result<Self> {
        let dir = crate::tools::log_dir().join("downstream");
        std::fs::create_dir_all(&dir)?;
        let c = DownstreamCluster {
            kubeconfig: dir.join("kubeconfig"),
            dir,
        };
        let mut settings = settings.to_vec();
        settings.push(("E2E_FRESH", "1"));
        c.script(&["up"], &settings)
            .context("starting the downstream control plane")?;
        Ok(c)
    }

    fn script(&self, args: &[&str], extra: &[(&str, &str)]) -> Result<String> {
        let env: Vec<(&str, &str)> = PORTS.iter().chain(extra).copied().collect();
        cluster_sh(&self.dir, args, &env).context("the downstream control plane")
    }

    /// Stops one component (SIGTERM), keeping its state; [`Self::start`] brings it back.
    pub fn stop(&self, component: &str) -> Result<()> {
        self.script(&["stop", component], &[]).map(drop)
    }

    /// Starts the components that are not running.
    pub fn start(&self) -> Result<()> {
        self.script(&["up"], &[]).map(drop)
    }

    /// An admin client of the downstream cluster.
    pub async fn client(&self) -> Result<Client> {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await?;
        Ok(Client::try_from(config)?)
    }

    /// kubectl against the downstream cluster, as its admin.
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        let kc = self.kubeconfig.display().to_string();
        let mut all = vec!["--kubeconfig", kc.as_str()];
        all.extend_from_slice(args);
        kubectl(&all)
    }

    /// The documented least RBAC for a connection (the Role of
    /// `examples/fleet/shared/downstream-rbac.yaml`, so the two cannot
    /// drift), in `namespaces`: a ServiceAccount `randomsecret-upstream` in
    /// the first of them, bound in each; returns a kubeconfig with its token
    /// (inline, as required).
    pub fn connection_kubeconfig(&self, namespaces: &[&str]) -> Result<String> {
        let home = namespaces[0];
        let example = std::fs::read_to_string(
            repo_root().join("examples/fleet/shared/downstream-rbac.yaml"),
        )?;
        let rules = crate::tools::docs(&example)?
            .into_iter()
            .find(|d| d["kind"] == "Role")
            .context("the example has a Role")?["rules"]
            .clone();
        let mut docs = vec![serde_json::json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "randomsecret-upstream", "namespace": home},
        })];
        for ns in namespaces {
            docs.push(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "randomsecret-upstream", "namespace": ns},
                "rules": rules,
            }));
            docs.push(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "randomsecret-upstream", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "randomsecret-upstream"},
                "subjects": [{"kind": "ServiceAccount", "name": "randomsecret-upstream", "namespace": home}],
            }));
        }
        let manifest = serde_json::to_string(&serde_json::json!({
            "apiVersion": "v1", "kind": "List", "items": docs,
        }))?;
        let kc = self.kubeconfig.display().to_string();
        run(
            "kubectl",
            &["--kubeconfig", &kc, "apply", "-f", "-"],
            Some(&manifest),
        )?;
        let token = self.kubectl(&[
            "-n",
            home,
            "create",
            "token",
            "randomsecret-upstream",
            "--duration=2h",
        ])?;
        let (server, ca) = crate::tools::server_and_ca(Some(&kc))?;
        Ok(format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: downstream\n  cluster: {{server: \"{server}\", certificate-authority-data: \"{ca}\"}}\nusers:\n- name: upstream\n  user: {{token: \"{}\"}}\ncontexts:\n- name: downstream\n  context: {{cluster: downstream, user: upstream}}\ncurrent-context: downstream\n",
            token.trim()
        ))
    }
}

impl Drop for DownstreamCluster {
    fn drop(&mut self) {
        let _ = self.script(&["down"], &[]);
    }
}
