//! Command-line tools: the binary under test, kubectl and others on `PATH`.

use anyhow::{Context, Result, bail};
use serde_json::Value;

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

/// Runs `e2e/cluster.sh ARGS` on the control plane whose state is in `dir`,
/// with `env` set on top of this process's environment (its ports, say);
/// returns its stdout, or fails with its stderr.
pub fn cluster_sh(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let out = std::process::Command::new(repo_root().join("e2e/cluster.sh"))
        .args(args)
        .env("E2E_DIR", dir)
        .envs(env.iter().copied())
        .output()
        .context("running e2e/cluster.sh")?;
    if !out.status.success() {
        bail!(
            "cluster.sh {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Runs a tool (from `PATH`, set by `e2e/run.sh`, with the `randomsecret`
/// binary under test first), feeding `stdin`; fails with its stderr.
pub fn run(cmd: &str, args: &[&str], stdin: Option<&str>) -> Result<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let bin_dir = randomsecret_bin()
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new(cmd)
        .args(args)
        .env("PATH", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {cmd}"))?;
    let input = stdin.unwrap_or_default().to_string();
    let mut pipe = child.stdin.take().context("stdin")?;
    // Write from a thread: a large input must not block while the tool fills stdout.
    let writer = std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    let out = child.wait_with_output()?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("stdin writer panicked"))??;
    if !out.status.success() {
        bail!("{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Runs kubectl, failing with its stderr.
pub fn kubectl(args: &[&str]) -> Result<String> {
    run("kubectl", args, None)
}

/// The apiserver address and CA (base64 PEM) of the kubeconfig kubectl uses
/// (`kubeconfig`: another file), for kubeconfigs and auth methods the suites write.
pub fn server_and_ca(kubeconfig: Option<&str>) -> Result<(String, String)> {
    let field = |path: &str| -> Result<String> {
        let jsonpath = format!("jsonpath={{.clusters[0].cluster.{path}}}");
        let mut args = Vec::new();
        if let Some(k) = kubeconfig {
            args.extend(["--kubeconfig", k]);
        }
        args.extend([
            "config",
            "view",
            "--raw",
            "--minify",
            "--flatten",
            "-o",
            &jsonpath,
        ]);
        Ok(kubectl(&args)?.trim().to_string())
    };
    Ok((field("server")?, field("certificate-authority-data")?))
}

/// The documents of a YAML stream, as JSON values.
pub fn docs(yaml: &str) -> Result<Vec<Value>> {
    Ok(randomsecret::manifests::documents(yaml)?)
}

/// Where controller logs go: `E2E_DIR`, else `target/e2e`.
pub fn log_dir() -> std::path::PathBuf {
    std::env::var("E2E_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/e2e"))
}

/// Runs the Python script `e2e/<script>` with the jwcrypto venv's python
/// (`$JWCRYPTO_PYTHON`, set by `e2e/run.sh`, else `e2e/build-jwcrypto.sh`;
/// pyca/cryptography comes with it), `request` as JSON on stdin: a check by
/// libraries nobody here wrote. Its output, trimmed.
pub fn python_oracle(script: &str, request: &Value) -> Result<String> {
    let python = match std::env::var("JWCRYPTO_PYTHON") {
        Ok(p) => p,
        Err(_) => {
            let build = repo_root().join("e2e/build-jwcrypto.sh");
            run(build.to_str().context("path")?, &[], None)?
                .trim()
                .to_string()
        }
    };
    let script = repo_root().join("e2e").join(script);
    let out = run(
        &python,
        &[script.to_str().context("path")?],
        Some(&request.to_string()),
    )?;
    Ok(out.trim().to_string())
}

/// A private key in a file of its own (mode 0600, alone in a folder of
/// mode 0700: no `<file>.pub` beside it for ssh-keygen to read instead),
/// removed when dropped.
pub struct KeyFile {
    dir: std::path::PathBuf,
    path: std::path::PathBuf,
}

impl KeyFile {
    pub fn new(contents: &str) -> Result<Self> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        use std::sync::atomic::{AtomicU32, Ordering};
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "randomsecret-e2e-key-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let path = dir.join("key");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?
            .write_all(contents.as_bytes())?;
        Ok(Self { dir, path })
    }

    pub fn path(&self) -> &str {
        self.path.to_str().unwrap_or_default()
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
