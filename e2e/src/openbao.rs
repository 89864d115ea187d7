//! OpenBao for the Vault push suite: a dev server of a test's own (TLS, on
//! 127.0.0.1), with the Kubernetes auth method configured against the local
//! kube-apiserver and a policy limited to the controller's prefix. Stopped
//! (by its pid) when dropped.

use crate::tools::{kubectl, log_dir, run};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The controller's ServiceAccount in the e2e run (the chart's, release "e2e").
pub const CONTROLLER_SA: (&str, &str) = ("randomsecret-system", "e2e-randomsecret");
/// The Vault role the controller logs in as, and its policy's prefix.
pub const ROLE: &str = "randomsecret";
pub const PREFIX: &str = "randomsecret";

pub struct OpenBao {
    child: Child,
    pub port: u16,
    pub address: String,
    pub root_token: String,
    /// The dev server's CA (PEM).
    pub ca_pem: String,
    ca_file: std::path::PathBuf,
}

/// The `bao` binary: `$BAO_DIR/bao` (set by run.sh from e2e/build-openbao.sh).
fn bao_bin() -> Result<std::path::PathBuf> {
    let dir = std::env::var_os("BAO_DIR").context(
        "BAO_DIR is not set: run the suite with e2e/run.sh (it installs OpenBao with e2e/build-openbao.sh)",
    )?;
    Ok(std::path::Path::new(&dir).join("bao"))
}

impl OpenBao {
    /// Starts `bao server -dev -dev-tls` on 127.0.0.1:`port` (and `port + 1`
    /// for its cluster address) and configures Kubernetes auth and the policy.
    pub fn start(port: u16) -> Result<Self> {
        let dir = log_dir().join(format!("openbao-{port}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let root_token = format!("root-{:x}", rand_u64());
        let log = std::fs::File::create(log_dir().join(format!("openbao-{port}.log")))?;
        let child = Command::new(bao_bin()?)
            .args([
                "server",
                "-dev",
                "-dev-tls",
                &format!("-dev-listen-address=127.0.0.1:{port}"),
                &format!("-dev-root-token-id={root_token}"),
                &format!("-dev-tls-cert-dir={}", dir.display()),
            ])
            // Its own HOME: a dev server writes ~/.vault-token, and two at once race on it.
            .env("HOME", &dir)
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("starting bao server -dev")?;
        let ca_file = dir.join("vault-ca.pem");
        let mut bao = OpenBao {
            child,
            port,
            address: format!("https://127.0.0.1:{port}"),
            root_token,
            ca_pem: String::new(),
            ca_file,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = bao.child.try_wait()? {
                bail!("bao server exited ({status}); see openbao-{port}.log");
            }
            if bao.ca_file.exists() && bao.cli(&["status", "-format=json"]).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                bail!("bao server on port {port} not up within 30s");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        bao.ca_pem = std::fs::read_to_string(&bao.ca_file)?;
        bao.configure()?;
        Ok(bao)
    }

    /// A new token with the controller's policy (for a `tokenSecretRef`),
    /// recorded for the end-of-run leak check.
    pub fn policy_token(&self) -> Result<String> {
        let out = self.cli(&[
            "token",
            "create",
            "-format=json",
            &format!("-policy={ROLE}"),
        ])?;
        let token = serde_json::from_str::<serde_json::Value>(&out)?["auth"]["client_token"]
            .as_str()
            .context("client_token")?
            .to_string();
        crate::record_values([token.as_bytes()])?;
        Ok(token)
    }

    /// Runs the bao CLI against this server with the root token.
    pub fn cli(&self, args: &[&str]) -> Result<String> {
        let out = Command::new(bao_bin()?)
            .args(args)
            .env("BAO_ADDR", &self.address)
            .env("BAO_CACERT", &self.ca_file)
            .env("BAO_TOKEN", &self.root_token)
            .env("HOME", log_dir().join(format!("openbao-{}", self.port)))
            .output()?;
        if !out.status.success() {
            bail!("bao {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8(out.stdout)?)
    }

    /// Kubernetes auth against the local apiserver (TokenReview with a
    /// reviewer ServiceAccount bound to system:auth-delegator), a role for
    /// the controller's ServiceAccount (audience "vault") and a policy that
    /// allows only `secret/{data,metadata}/randomsecret/*`.
    fn configure(&self) -> Result<()> {
        let reviewer = reviewer_token()?;
        // The apiserver's address and CA, from the kubeconfig (the e2e and bench clusters alike).
        let (server, ca_data) = crate::tools::server_and_ca(None)?;
        let ca = log_dir().join(format!("openbao-{}/kube-ca.crt", self.port));
        std::fs::write(&ca, run("base64", &["-d"], Some(ca_data.trim()))?)?;
        self.cli(&["auth", "enable", "kubernetes"])?;
        self.cli(&[
            "write",
            "auth/kubernetes/config",
            &format!("kubernetes_host={server}"),
            &format!("kubernetes_ca_cert=@{}", ca.display()),
            &format!("token_reviewer_jwt={reviewer}"),
            "disable_local_ca_jwt=true",
        ])?;
        let policy = format!(
            "path \"secret/data/{PREFIX}/*\" {{ capabilities = [\"create\", \"read\", \"update\"] }}\n\
             path \"secret/metadata/{PREFIX}/*\" {{ capabilities = [\"create\", \"read\", \"update\", \"delete\"] }}\n"
        );
        let file = log_dir().join(format!("openbao-{}/policy.hcl", self.port));
        std::fs::write(&file, policy)?;
        self.cli(&["policy", "write", ROLE, &file.display().to_string()])?;
        self.cli(&[
            "write",
            &format!("auth/kubernetes/role/{ROLE}"),
            &format!("bound_service_account_names={}", CONTROLLER_SA.1),
            &format!("bound_service_account_namespaces={}", CONTROLLER_SA.0),
            "audience=vault",
            &format!("token_policies={ROLE}"),
            "token_ttl=10m",
        ])?;
        Ok(())
    }

    /// The newest version of a KV v2 path: (version, data); None: no such path.
    pub fn kv_get(&self, path: &str) -> Result<Option<(u64, Value)>> {
        self.kv_get_version(path, None)
    }

    /// One version of a KV v2 path.
    pub fn kv_get_version(&self, path: &str, version: Option<u64>) -> Result<Option<(u64, Value)>> {
        let v = version.map(|v| format!("-version={v}"));
        let mut args = vec!["kv", "get", "-format=json"];
        args.extend(v.as_deref());
        args.push(path);
        match self.cli(&args) {
            Ok(out) => {
                let j: Value = serde_json::from_str(&out)?;
                let version = j["data"]["metadata"]["version"].as_u64().unwrap_or(0);
                Ok(Some((version, j["data"]["data"].clone())))
            }
            Err(e) if e.to_string().contains("No value found") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A KV v2 path's metadata; None: no such path.
    pub fn kv_metadata(&self, path: &str) -> Result<Option<Value>> {
        match self.cli(&["kv", "metadata", "get", "-format=json", path]) {
            Ok(out) => Ok(Some(serde_json::from_str::<Value>(&out)?["data"].clone())),
            Err(e) if e.to_string().contains("No value found") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The dev server's unseal key (from its log).
    pub fn unseal_key(&self) -> Result<String> {
        let log = std::fs::read_to_string(log_dir().join(format!("openbao-{}.log", self.port)))?;
        log.lines()
            .find_map(|l| l.trim().strip_prefix("Unseal Key: "))
            .map(|k| k.trim().to_string())
            .context("no unseal key in the dev server's log")
    }

    /// Stops the server with a signal (SIGSTOP, SIGCONT, ...), by its pid.
    pub fn signal(&self, sig: &str) -> Result<()> {
        run(
            "kill",
            &[&format!("-{sig}"), &self.child.id().to_string()],
            None,
        )
        .map(drop)
    }
}

impl Drop for OpenBao {
    fn drop(&mut self) {
        let _ = self.signal("CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}

/// A token of the reviewer ServiceAccount (system:auth-delegator), made once.
fn reviewer_token() -> Result<String> {
    let manifest = r#"
apiVersion: v1
kind: Namespace
metadata: {name: openbao-e2e}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: openbao-reviewer, namespace: openbao-e2e}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: openbao-e2e-reviewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{kind: ServiceAccount, name: openbao-reviewer, namespace: openbao-e2e}]
"#;
    run(
        "kubectl",
        &["apply", "--server-side", "-f", "-"],
        Some(manifest),
    )?;
    Ok(kubectl(&[
        "-n",
        "openbao-e2e",
        "create",
        "token",
        "openbao-reviewer",
        "--duration=2h",
    ])?
    .trim()
    .to_string())
}
