//! Helpers for the end-to-end suites: they run against the real local control
//! plane of `e2e/cluster.sh` (or any cluster that `KUBECONFIG` points at).

pub mod invariants;

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

// RandomSecret helpers shared by the suites.
use anyhow::ensure;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as MetaCondition;
use kube::ResourceExt;
use randomsecret::api::RandomSecret;
use serde_json::{Value, json};

pub fn random_secret(name: &str, spec: Value) -> Result<RandomSecret> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
        "metadata": {"name": name}, "spec": spec,
    }))?)
}

pub fn condition<'a>(rs: &'a RandomSecret, type_: &str) -> Option<&'a MetaCondition> {
    rs.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// Ready=True for the current generation.
pub fn is_ready(rs: Option<&RandomSecret>) -> bool {
    rs.is_some_and(|rs| {
        rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation
            && condition(rs, "Ready").is_some_and(|c| c.status == "True")
    })
}

/// Ready=False with `reason` for the current generation.
pub fn not_ready_because(reason: &'static str) -> impl Fn(Option<&RandomSecret>) -> bool {
    move |rs| {
        rs.is_some_and(|rs| {
            rs.status.as_ref().and_then(|s| s.observed_generation) == rs.metadata.generation
                && condition(rs, "Ready").is_some_and(|c| c.status == "False" && c.reason == reason)
        })
    }
}

pub async fn create_ready(
    api: &Api<RandomSecret>,
    name: &str,
    spec: Value,
) -> Result<RandomSecret> {
    api.create(&PostParams::default(), &random_secret(name, spec)?)
        .await?;
    wait_for(api, name, "Ready", is_ready).await
}

/// The Secret of the current version, its values recorded for the log check.
pub async fn current_secret(secrets: &Api<Secret>, rs: &RandomSecret) -> Result<Secret> {
    let name = rs
        .status
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .context("status.secretName")?;
    let s = secrets.get(&name).await?;
    record_values(s.data.iter().flatten().map(|(_, v)| v.0.as_slice()))?;
    Ok(s)
}

pub fn value(s: &Secret, key: &str) -> Result<String> {
    let v = s
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .with_context(|| format!("key {key} in Secret {}", s.name_any()))?;
    Ok(String::from_utf8(v.0.clone())?)
}

pub fn assert_alphabet(v: &str, len: usize, alphabet: &str) -> Result<()> {
    ensure!(
        v.chars().count() == len,
        "value has {} characters, want {len}",
        v.chars().count()
    );
    ensure!(
        v.chars().all(|c| alphabet.contains(c)),
        "value has characters outside {alphabet:?}"
    );
    Ok(())
}

/// The Secrets that objects not being deleted (pods, or ReplicaSets through
/// `pod_spec`) reference and `existing` lacks, as (object name, uid, Secret),
/// and how many objects were looked at.
pub fn missing_secrets<'a, K: kube::ResourceExt + 'a>(
    objects: impl IntoIterator<Item = &'a K>,
    pod_spec: impl Fn(&K) -> Option<&k8s_openapi::api::core::v1::PodSpec>,
    existing: &std::collections::BTreeSet<String>,
) -> (usize, Vec<(String, Option<String>, String)>) {
    let (mut checked, mut missing) = (0, Vec::new());
    for o in objects
        .into_iter()
        .filter(|o| o.meta().deletion_timestamp.is_none())
    {
        checked += 1;
        let refs = pod_spec(o)
            .map(randomsecret::references::pod_spec_secret_names)
            .unwrap_or_default();
        for r in refs.into_iter().filter(|r| !existing.contains(r)) {
            missing.push((o.name_any(), o.uid(), r));
        }
    }
    (checked, missing)
}

/// Watches over a namespace for the whole of a test: every `interval` it
/// checks that each running pod finds every Secret named `<prefix>...` it
/// references. `finish` returns the violations and how many pods were checked.
pub struct ReferenceChecker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<Result<(Vec<String>, usize)>>,
}

impl ReferenceChecker {
    pub fn start(client: &Client, namespace: &str, prefix: &str) -> Self {
        use k8s_openapi::api::core::v1::Pod;
        use kube::api::ListParams;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (pods, secrets): (Api<Pod>, Api<Secret>) = (
            Api::namespaced(client.clone(), namespace),
            Api::namespaced(client.clone(), namespace),
        );
        let (prefix, flag) = (prefix.to_string(), stop.clone());
        let task = tokio::spawn(async move {
            let (mut violations, mut checked) = (Vec::new(), 0);
            loop {
                // Read the flag first, so that one last check runs after finish().
                let last = flag.load(Ordering::Relaxed);
                let pod_list = pods.list(&ListParams::default()).await?;
                let existing: std::collections::BTreeSet<String> = secrets
                    .list_metadata(&ListParams::default())
                    .await?
                    .items
                    .iter()
                    .map(|s| s.name_any())
                    .collect();
                let (seen, missing) =
                    missing_secrets(&pod_list.items, |p| p.spec.as_ref(), &existing);
                checked += seen;
                for (pod, _, r) in missing
                    .into_iter()
                    .filter(|(_, _, r)| r.starts_with(&prefix))
                {
                    violations.push(format!("pod {pod} references missing Secret {r}"));
                }
                if last {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok((violations, checked))
        });
        Self { stop, task }
    }

    /// Stops checking; fails if any pod ever missed a Secret, or nothing was checked.
    pub async fn finish(self) -> Result<usize> {
        self.stop.store(true, Ordering::Relaxed);
        let (violations, checked) = self.task.await??;
        ensure!(
            violations.is_empty(),
            "pods referenced missing Secrets:\n{}",
            violations.join("\n")
        );
        ensure!(checked > 0, "the reference checker saw no pods");
        Ok(checked)
    }
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

/// The documents of a YAML stream, as JSON values.
pub fn docs(yaml: &str) -> Result<Vec<Value>> {
    Ok(randomsecret::manifests::documents(yaml)?)
}

/// Merge-patches a RandomSecret's spec (without waiting for anything).
pub async fn patch_spec(api: &Api<RandomSecret>, name: &str, spec: Value) -> Result<()> {
    let patch = kube::api::Patch::Merge(json!({ "spec": spec }));
    api.patch(name, &kube::api::PatchParams::default(), &patch)
        .await?;
    Ok(())
}

/// kubectl's notion of a completed rollout: the controller saw the latest
/// spec and every replica is updated and available.
pub fn rollout_complete(d: Option<&k8s_openapi::api::apps::v1::Deployment>) -> bool {
    let Some(d) = d else { return false };
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(s) = d.status.as_ref() else {
        return false;
    };
    s.observed_generation >= d.metadata.generation
        && s.updated_replicas == Some(want)
        && s.replicas == Some(want)
        && s.available_replicas == Some(want)
}

/// Where controller logs go: `E2E_DIR`, else `target/e2e`.
fn log_dir() -> std::path::PathBuf {
    std::env::var("E2E_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/e2e"))
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

/// A controller process of a test's own (for suites that stop and start
/// controllers), with the chart's RBAC when `e2e/run.sh` provides it. Killed
/// when dropped, so a failing test leaves no process behind.
pub struct ControllerProcess {
    pub child: std::process::Child,
    pub metrics_port: u16,
    pub health_port: u16,
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
        use std::process::{Command, Stdio};
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_dir().join(format!("controller-{log}.log")))?;
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
        if let Some(kc) = std::env::var_os("E2E_CONTROLLER_KUBECONFIG") {
            cmd.arg("--kubeconfig").arg(kc);
        }
        Ok(ControllerProcess {
            child: cmd.spawn()?,
            metrics_port: port,
            health_port: port + 1,
        })
    }

    /// Waits until `/readyz` answers 200; fails when the process exits or `timeout` passes.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + timeout;
        let log = log_dir();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the controller exited ({status}): see its log in {}",
                    log.display()
                );
            }
            // Still running once ready: another process on the port must not pass for it.
            if self.is_ready() && self.child.try_wait()?.is_none() {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                bail!(
                    "the controller did not become ready: see its log in {}",
                    log.display()
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

/// A pod template whose container reads `secret` with `envFrom`.
pub fn pod_template(app: &str, secret: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                 "envFrom": [{"secretRef": {"name": secret}}]}]},
    })
}

/// A Deployment of 2 replicas (revisionHistoryLimit 1) reading `secret`.
pub fn deployment(name: &str, secret: &str) -> Result<k8s_openapi::api::apps::v1::Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 2, "revisionHistoryLimit": 1, "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name, secret)},
    }))?)
}

/// Points a workload's template at `secret` (the `rev` annotation forces a new template).
pub async fn point_at<K>(api: &Api<K>, name: &str, secret: &str, rev: &str) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"rev": rev}}, "spec": {"containers": [
        {"name": "app", "envFrom": [{"secretRef": {"name": secret}}]}]}}}});
    api.patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Strategic(patch),
    )
    .await?;
    Ok(())
}

/// Creates a RandomSecret, waits until Ready and returns its current version's Secret.
pub async fn first_version(
    api: &Api<RandomSecret>,
    secrets: &Api<Secret>,
    name: &str,
    spec: Value,
) -> Result<Secret> {
    current_secret(secrets, &create_ready(api, name, spec).await?).await
}

/// Sets `spec.rotation`, waits until Ready and returns the new current Secret name.
pub async fn rotate(api: &Api<RandomSecret>, name: &str, rotation: &str) -> Result<String> {
    patch_spec(api, name, json!({ "rotation": rotation })).await?;
    let rs = wait_for(api, name, "Ready after rotation", is_ready).await?;
    rs.status
        .and_then(|s| s.secret_name)
        .context("status.secretName")
}

/// The kinds of a Secret's owners, in order.
pub async fn owner_kinds(secrets: &Api<Secret>, name: &str) -> Result<Vec<String>> {
    Ok(secrets
        .get(name)
        .await?
        .owner_references()
        .iter()
        .map(|o| o.kind.clone())
        .collect())
}
