//! Controller processes of a test's own, and who of several leads.

use crate::tools::{log_dir, randomsecret_bin};
use anyhow::{Result, bail, ensure};
use std::time::Duration;

/// A controller process of a test's own (for suites that stop and start
/// controllers), with the chart's RBAC when `e2e/run.sh` provides it. Killed
/// when dropped, so a failing test leaves no process behind.
pub struct ControllerProcess {
    pub child: std::process::Child,
    pub metrics_port: u16,
    pub health_port: u16,
    /// Its log file (appended to: the same name's earlier processes are in it).
    pub log: std::path::PathBuf,
    /// Where its own lines begin in `log`.
    log_from: u64,
}

impl ControllerProcess {
    /// Starts `randomsecret controller` on `port` (metrics) and `port + 1`
    /// (health), logging to `target/e2e/controller-<log>.log`, and waits until
    /// it is ready.
    pub fn start(log: &str, port: u16, args: &[&str]) -> Result<Self> {
        let mut all = vec!["--log-level=debug"];
        all.extend_from_slice(args);
        let mut p = Self::spawn(log, port, &all)?;
        p.wait_ready(Duration::from_secs(30))?;
        Ok(p)
    }

    /// Starts `randomsecret controller <args>` like `start`, without waiting.
    pub fn spawn(log: &str, port: u16, args: &[&str]) -> Result<Self> {
        Self::spawn_with(
            log,
            port,
            args,
            std::env::var_os("E2E_CONTROLLER_KUBECONFIG"),
        )
    }

    /// Like `spawn`, with credentials of its own (a kubeconfig file): the
    /// apiserver's audit log then tells this process's requests apart.
    pub fn spawn_as(
        log: &str,
        port: u16,
        args: &[&str],
        kubeconfig: &std::path::Path,
    ) -> Result<Self> {
        Self::spawn_with(log, port, args, Some(kubeconfig.as_os_str().to_owned()))
    }

    fn spawn_with(
        log: &str,
        port: u16,
        args: &[&str],
        kubeconfig: Option<std::ffi::OsString>,
    ) -> Result<Self> {
        use std::process::{Command, Stdio};
        let log = log_dir().join(format!("controller-{log}.log"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let log_from = file.metadata()?.len();
        let mut cmd = Command::new(randomsecret_bin());
        cmd.arg("controller")
            .arg(format!("--metrics-bind-address=127.0.0.1:{port}"))
            .arg(format!(
                "--health-probe-bind-address=127.0.0.1:{}",
                port + 1
            ))
            .args(args)
            .stdout(Stdio::from(file.try_clone()?))
            .stderr(Stdio::from(file));
        if let Some(kc) = kubeconfig {
            cmd.arg("--kubeconfig").arg(kc);
        }
        Ok(ControllerProcess {
            child: cmd.spawn()?,
            metrics_port: port,
            health_port: port + 1,
            log,
            log_from,
        })
    }

    /// The last `n` lines at INFO and above of the log since this process
    /// started, for a failing test's message: the CI output keeps a test's
    /// message, not the log files. Other processes writing to the same file
    /// meanwhile (a standby) are among them.
    pub fn log_tail(&self, n: usize) -> String {
        use std::io::{Read, Seek};
        let mut text = String::new();
        let read = std::fs::File::open(&self.log).and_then(|mut f| {
            f.seek(std::io::SeekFrom::Start(self.log_from))?;
            f.read_to_string(&mut text)
        });
        if let Err(e) = read {
            return format!("(its log {} could not be read: {e})", self.log.display());
        }
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| matches!(l.split_whitespace().nth(1), Some("INFO" | "WARN" | "ERROR")))
            .collect();
        format!(
            "the last lines at INFO and above of {} since this controller started:\n{}",
            self.log.display(),
            lines[lines.len().saturating_sub(n)..].join("\n")
        )
    }

    /// Waits until `/readyz` answers 200; fails when the process exits or `timeout` passes.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + timeout;
        let log = log_dir();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the controller exited ({status}): see its log in {}; {}",
                    log.display(),
                    self.log_tail(20)
                );
            }
            // Still running once ready: another process on the port must not pass for it.
            if self.is_ready() && self.child.try_wait()?.is_none() {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                bail!(
                    "the controller did not become ready: see its log in {}; {}",
                    log.display(),
                    self.log_tail(20)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether `/readyz` answers 200 now.
    pub fn is_ready(&self) -> bool {
        self.get("/readyz", self.health_port).is_ok()
    }

    fn get(&self, path: &str, port: u16) -> Result<String> {
        let out = std::process::Command::new("curl")
            .args(["-fsS", &format!("http://127.0.0.1:{port}{path}")])
            .output()?;
        ensure!(
            out.status.success(),
            "GET {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    }

    /// The whole `/metrics` text.
    pub fn metrics(&self) -> Result<String> {
        self.get("/metrics", self.metrics_port)
    }

    /// The value of a metric line (`name{labels} value`), if present.
    pub fn metric(&self, line_prefix: &str) -> Result<Option<f64>> {
        let text = self.get("/metrics", self.metrics_port)?;
        Ok(text
            .lines()
            .find(|l| l.starts_with(line_prefix))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok()))
    }

    /// Whether this replica holds the lease (the `randomsecret_leader` gauge).
    pub fn is_leader(&self) -> bool {
        self.metric("randomsecret_leader ").ok().flatten() == Some(1.0)
    }

    /// SIGTERM, then waits: a graceful stop that must succeed.
    pub fn terminate(mut self) -> Result<()> {
        std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        let status = self.child.wait()?;
        ensure!(
            status.success(),
            "the controller failed on SIGTERM: {status}"
        );
        Ok(())
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill(); // SIGKILL; a no-op after terminate()
        let _ = self.child.wait();
    }
}

/// Waits until exactly one of `replicas` leads (their `randomsecret_leader`
/// gauge), and returns its index; fails after `within`.
pub async fn single_leader(replicas: &[&ControllerProcess], within: Duration) -> Result<usize> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let leading: Vec<usize> = (0..replicas.len())
            .filter(|&i| replicas[i].is_leader())
            .collect();
        if leading.len() == 1 {
            return Ok(leading[0]);
        }
        if std::time::Instant::now() > deadline {
            bail!("expected exactly one leader, got {leading:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
