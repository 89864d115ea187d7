//! Command-line interface: one binary, one subcommand per entry point.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub mod input;
pub mod terminal;

#[derive(Debug, Parser)]
#[command(
    name = crate::api::NAME,
    version,
    about = "Versioned, immutable, rotation-safe generated Secrets for Kubernetes"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller (all namespaces unless --namespace is given).
    Controller(Box<ControllerArgs>),
    /// Print the CRDs (RandomSecret, ClusterVaultConnection, VaultConnection,
    /// ClusterConnection, ClusterRandomSecret) generated from the Rust types,
    /// as one YAML stream.
    Crd {
        /// Write one file per CRD into this folder instead (`make crd`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Print the versioned Secret name of each RandomSecret in a YAML stream, one per line
    /// (of a ClusterRandomSecret: the name its RandomSecret has in every namespace).
    Name {
        #[command(flatten)]
        input: InputArgs,
        /// Also show the canonical form each name is the hash of, line by
        /// line with the spec field it comes from (static values hidden).
        #[arg(long)]
        explain: bool,
    },
    /// Compare the RandomSecrets of two manifests: each one's versioned name
    /// in both, and which spec fields changed it.
    Diff {
        /// The manifests before ("-": standard input).
        old: PathBuf,
        /// The manifests after ("-": standard input).
        new: PathBuf,
    },
    /// Rotate a RandomSecret: set spec.rotation (every generated key) or, with
    /// --key, spec.keys.KEY.rotation (that key alone) to a new token (a merge
    /// patch), or print the change to commit with --print. Several at once,
    /// to one token: -l SELECTOR or --all (-A: every namespace); --dry-run
    /// says what it would rotate.
    Rotate(RotateArgs),
    /// Rewrite workload references to RandomSecret base names into versioned names
    /// (a YAML stream in and out; also a Helm --post-renderer). A ClusterRandomSecret's
    /// name is rewritten in the namespaces it lists, and in any with a namespaceSelector.
    Resolve {
        #[command(flatten)]
        input: InputArgs,
        /// Also rewrite a custom kind's references: GROUP/VERSION/KIND=PATH[,PATH...],
        /// as the controller's --reference (repeatable).
        #[arg(long = "reference", value_name = "GROUP/VERSION/KIND=PATHS")]
        references: Vec<String>,
    },
    /// The same as `resolve`, as a KRM function (ResourceList in and out) for
    /// `kustomize build --enable-alpha-plugins --enable-exec`.
    Kustomize,
    /// Show each RandomSecret's versions as a tree: which is current, what
    /// holds each one (ReplicaSets, ControllerRevisions, Pods) and why a
    /// superseded one is still kept. Reads Secrets' metadata only, never a value.
    Status(StatusArgs),
    /// Check that randomsecret is installed and working (for CI pipelines and
    /// Helm hooks): the CRDs are Established, a controller holds its Lease,
    /// no RandomSecret waits longer than --max-lag for it, and, where the
    /// webhook is installed, it fills a dry-run Secret. Exit 0 when all pass.
    Check(CheckArgs),
    /// Remove deletion protection's finalizer (randomsecret.io/in-use) from
    /// every version Secret: for an uninstall, or a controller that will not
    /// come back. Only that finalizer is removed; owner references, and so
    /// retention by the garbage collector, stay.
    ReleaseFinalizers(ReleaseArgs),
    /// Write the generated pages of the book (the CLI and CRD references)
    /// into this folder (`make docs`). Hidden: a tool of the repository.
    #[command(hide = true)]
    Docs {
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Where `name` and `resolve` read manifests, as `kubectl -f` does.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// A file or folder to read (repeat -f for several; "-" or none:
    /// standard input). A folder gives its .json, .yaml and .yml files in
    /// name order. Each file is checked alone, so an error names it.
    #[arg(short = 'f', long = "filename")]
    pub files: Vec<PathBuf>,
    /// Read the folders given with -f and their subfolders too.
    #[arg(short = 'R', long)]
    pub recursive: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["name", "selector", "all"])))]
pub struct RotateArgs {
    /// The RandomSecret (or several: -l, --all).
    pub name: Option<String>,
    /// Namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Rotate every RandomSecret whose labels match this selector
    /// (team=payments, tier in (db,cache)), all to one token. An object at
    /// that token already is skipped: after a run that stopped halfway, the
    /// same command with --to TOKEN (the token it printed) finishes the rest.
    #[arg(short = 'l', long, conflicts_with_all = ["name", "all", "print"])]
    pub selector: Option<String>,
    /// Rotate every RandomSecret of the namespace, all to one token (as -l).
    #[arg(long, conflicts_with_all = ["name", "print"])]
    pub all: bool,
    /// With -l or --all: in every namespace.
    #[arg(short = 'A', long, conflicts_with_all = ["name", "namespace", "print"])]
    pub all_namespaces: bool,
    /// Print what would be rotated, from which token to which, and send nothing.
    #[arg(long, conflicts_with = "print")]
    pub dry_run: bool,
    /// The new token (default: the current time, e.g. 20261201T070821Z).
    #[arg(long)]
    pub to: Option<String>,
    /// Rotate this generated key alone: write spec.keys.KEY.rotation (every
    /// other value is kept) instead of spec.rotation (every generated key).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Print the change (YAML, also a merge patch) instead of sending it:
    /// commit it to the RandomSecret's manifest. Needs no cluster.
    #[arg(long)]
    pub print: bool,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The controller's namespace, where its Lease is (default: the kubeconfig context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The controller's Lease (its --leader-election-id; default: the one
    /// named randomsecret-controller or, as the chart names it, ending in randomsecret).
    #[arg(long)]
    pub lease: Option<String>,
    /// How long a RandomSecret's new spec may wait for the controller.
    #[arg(long, default_value = "60s", value_parser = duration)]
    pub max_lag: std::time::Duration,
    /// Check again every 2 s until everything passes or this time is up (e.g. 60s, 5m).
    #[arg(long, value_parser = duration)]
    pub wait: Option<std::time::Duration>,
    /// Where the webhook's dry-run Secret is sent (a namespace the webhook serves).
    #[arg(long, default_value = "default")]
    pub webhook_namespace: String,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
}

/// Output format of `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusOutput {
    /// A tree per RandomSecret (coloured on a terminal).
    Tree,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The RandomSecret to show (default: every one in the namespace).
    pub name: Option<String>,
    /// Namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, conflicts_with_all = ["namespace", "name"])]
    pub all_namespaces: bool,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "tree")]
    pub output: StatusOutput,
    /// Keep reading, and print the view again each time it changes.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// How often --watch reads (e.g. 2s, 1m).
    #[arg(long, default_value = "2s", value_parser = duration)]
    pub interval: Duration,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// List the Secrets that hold the finalizer, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster config).
    #[arg(long, env = "RANDOMSECRET_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The one namespace to watch (default: all namespaces).
    #[arg(long, env = "RANDOMSECRET_NAMESPACE")]
    pub namespace: Option<String>,
    /// Address of the Prometheus /metrics endpoint.
    #[arg(
        long,
        env = "RANDOMSECRET_METRICS_BIND_ADDRESS",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_bind_address: SocketAddr,
    /// Address of the /healthz and /readyz endpoints.
    #[arg(
        long,
        env = "RANDOMSECRET_HEALTH_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:8081"
    )]
    pub health_probe_bind_address: SocketAddr,
    /// How many RandomSecrets are reconciled at once.
    #[arg(long, env = "RANDOMSECRET_CONCURRENCY", default_value_t = 16)]
    pub concurrency: u16,
    /// How many costly keys (RSA keys, bcrypt) are generated at once, on
    /// threads of their own at the lowest CPU priority (default: half the
    /// cores, at least 1).
    #[arg(long, env = "RANDOMSECRET_KEY_GENERATION_CONCURRENCY", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub key_generation_concurrency: Option<u16>,
    /// Elect a leader on a Lease, so that only one replica reconciles (the others keep warm caches).
    #[arg(long, env = "RANDOMSECRET_LEADER_ELECT", default_value_t = false)]
    pub leader_elect: bool,
    /// Namespace of the leader election Lease (default: $POD_NAMESPACE, else "default").
    #[arg(long, env = "RANDOMSECRET_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the leader election Lease.
    #[arg(
        long,
        env = "RANDOMSECRET_LEADER_ELECTION_ID",
        default_value = concat!(crate::api::project!(), "-controller")
    )]
    pub leader_election_id: String,
    /// Seconds a lease stays valid after its last renewal; a standby takes over after this when the leader dies.
    #[arg(long, env = "RANDOMSECRET_LEASE_DURATION_SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_duration_seconds: u64,
    /// Seconds the leader keeps trying to renew before it stops reconciling.
    #[arg(long, env = "RANDOMSECRET_RENEW_DEADLINE_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub renew_deadline_seconds: u64,
    /// Seconds between renewals by the leader and attempts by standbys.
    #[arg(long, env = "RANDOMSECRET_RETRY_PERIOD_SECONDS", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub retry_period_seconds: u64,
    /// Tracking mode: watch Deployments, StatefulSets and DaemonSets and point
    /// those annotated `randomsecret.io/track` at the current version (needs
    /// patch on them; off by default).
    #[arg(long, env = "RANDOMSECRET_TRACKING", default_value_t = false)]
    pub tracking: bool,
    /// A custom kind whose objects hold Secret versions, and where they name
    /// them: GROUP/VERSION/KIND=PATH[,PATH...], such as
    /// example.com/v1/Worker=spec/template/spec,spec/credentials/secretName
    /// (a path ending on a string is a Secret name, on a mapping a pod spec;
    /// lists on the way are walked). Repeatable; the controller needs list
    /// and watch on the kind, and stops at start if it is not served.
    #[arg(
        long = "reference",
        value_name = "GROUP/VERSION/KIND=PATHS",
        env = "RANDOMSECRET_REFERENCES",
        value_delimiter = ';'
    )]
    pub references: Vec<String>,
    /// Namespaces no ClusterRandomSecret stamps a RandomSecret into,
    /// comma-separated; the controller's own ($POD_NAMESPACE) is never
    /// stamped into either.
    #[arg(
        long,
        env = "RANDOMSECRET_CLUSTER_EXCLUDE_NAMESPACES",
        value_delimiter = ',',
        default_value = "kube-system"
    )]
    pub cluster_exclude_namespaces: Vec<String>,
    /// Sharding: reconcile only the RandomSecrets, ClusterRandomSecrets and
    /// annotated Secrets this label selector matches, such as
    /// sharding.randomsecret.io/key=shard1 (one controller per shard), and
    /// !sharding.randomsecret.io/key for the default shard. Each shard's
    /// versions carry their RandomSecret's labels of the keys it names, and
    /// its Lease is --leader-election-id and a digest of the selector.
    #[arg(long, env = "RANDOMSECRET_SHARD_SELECTOR", value_name = "SELECTOR")]
    pub shard_selector: Option<String>,
    /// How every watch reads its initial state: stream it from the
    /// apiserver's watch cache (WatchList, on by default in Kubernetes 1.32
    /// and from 1.34; fast and flat in memory with many objects), in pages
    /// of 100, or auto (ask the apiserver once at start; pages where it
    /// cannot stream).
    #[arg(
        long,
        env = "RANDOMSECRET_INITIAL_LISTS",
        value_enum,
        default_value = "auto"
    )]
    pub initial_lists: crate::cache::lists::Wanted,
    /// Tracking mode: a workload that tracks several RandomSecrets is
    /// pointed once for all that get a new version within this window of the
    /// first (one rollout, not one per RandomSecret); a workload that tracks
    /// one is pointed at once. 0s points at once always.
    #[arg(long, env = "RANDOMSECRET_TRACKING_WINDOW", default_value = "3s", value_parser = duration_or_zero)]
    pub tracking_window: Duration,
    /// Deletion protection: every version holds the finalizer
    /// randomsecret.io/in-use while it is current or held, so deleting a held
    /// version (by hand, or by the garbage collector) leaves it readable until
    /// nothing holds it. false: new versions get no finalizer and existing
    /// ones lose it as they are reconciled.
    #[arg(long, env = "RANDOMSECRET_DELETION_PROTECTION", default_value_t = true, action = clap::ArgAction::Set)]
    pub deletion_protection: bool,
    /// Per-object metrics: randomsecret_ready, _versions,
    /// _last_rotation_timestamp_seconds, _next_rotation_timestamp_seconds and
    /// _push_synced, a few series per RandomSecret made from the caches at
    /// each scrape. Off by default: at 10,000 RandomSecrets a scrape is 7 MB
    /// and the steady RSS some 3 MiB more (operate.md).
    #[arg(long, env = "RANDOMSECRET_PER_OBJECT_METRICS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub per_object_metrics: bool,
    /// Secret types RandomSecrets may produce, comma-separated (default: any).
    #[arg(long, env = "RANDOMSECRET_ALLOW_SECRET_TYPES", value_delimiter = ',')]
    pub allow_secret_types: Vec<String>,
    /// Prefixes every secretLabels key must start with, comma-separated (default: any).
    #[arg(long, env = "RANDOMSECRET_ALLOW_LABEL_PREFIXES", value_delimiter = ',')]
    pub allow_label_prefixes: Vec<String>,
    /// Prefixes every secretAnnotations key must start with, comma-separated (default: any).
    #[arg(
        long,
        env = "RANDOMSECRET_ALLOW_ANNOTATION_PREFIXES",
        value_delimiter = ','
    )]
    pub allow_annotation_prefixes: Vec<String>,
    /// Secret that holds the key proving which Secrets this controller created (made on first start).
    #[arg(
        long,
        env = "RANDOMSECRET_PROOF_KEY_SECRET",
        default_value = concat!(crate::api::project!(), "-proof-key")
    )]
    pub proof_key_secret: String,
    /// Namespace of --proof-key-secret (default: $POD_NAMESPACE, else --namespace, else "default").
    #[arg(long, env = "RANDOMSECRET_PROOF_KEY_NAMESPACE")]
    pub proof_key_namespace: Option<String>,
    /// The controller's own ServiceAccount, for the Kubernetes auth of a
    /// ClusterVaultConnection (a token is requested for it with the
    /// TokenRequest API). The chart sets it.
    #[arg(long, env = "RANDOMSECRET_SERVICE_ACCOUNT_NAME")]
    pub service_account_name: Option<String>,
    /// Namespace of --service-account-name (default: $POD_NAMESPACE, else "default").
    #[arg(long, env = "RANDOMSECRET_SERVICE_ACCOUNT_NAMESPACE")]
    pub service_account_namespace: Option<String>,
    /// Allow http:// (unencrypted) Vault addresses, for development. Never
    /// with Kubernetes auth. Off: every connection must use https://.
    #[arg(long, env = "RANDOMSECRET_ALLOW_HTTP_VAULT", default_value_t = false)]
    pub allow_http_vault: bool,
    /// Addresses and networks (CIDR, comma-separated) that namespaced
    /// VaultConnections may reach, checked after name resolution. Unset: any
    /// address but loopback, link-local, unspecified, multicast and cloud
    /// metadata addresses. Listed addresses are allowed even if they are one
    /// of those. ClusterVaultConnections are not limited.
    #[arg(
        long,
        env = "RANDOMSECRET_VAULT_ALLOWED_NETWORKS",
        value_delimiter = ','
    )]
    pub vault_allowed_networks: Vec<crate::push::vault::address::Network>,
    /// Annotation mode: on or off, and the namespaces it leaves alone.
    #[command(flatten)]
    pub annotation: AnnotationArgs,
    /// The mutating webhook of annotation mode (off unless --webhook-bind-address is set).
    #[command(flatten)]
    pub webhook: WebhookArgs,
    /// Copies to downstream clusters (spec.push.clusters).
    #[command(flatten)]
    pub clusters: ClusterPushArgs,
    /// Log format.
    #[arg(
        long,
        env = "RANDOMSECRET_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Log level or tracing filter (e.g. info, debug, randomsecret=debug,kube=info). kube's
    /// client logs errors only, whatever it says (its other lines may quote replies).
    #[arg(long, env = "RANDOMSECRET_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}

/// The cluster push's flags.
#[derive(Debug, Clone, Args)]
pub struct ClusterPushArgs {
    /// Accept kubeconfigs with insecure-skip-tls-verify (and Argo CD cluster
    /// Secrets with tlsClientConfig.insecure), for development. Off: such a
    /// ClusterConnection is refused (InvalidConnection), as anyone on the way
    /// to the server could take its credentials and the copies.
    #[arg(
        long,
        env = "RANDOMSECRET_ALLOW_INSECURE_DOWNSTREAM_TLS",
        default_value_t = false
    )]
    pub allow_insecure_downstream_tls: bool,
}

/// Whether annotation mode fills anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnnotationMode {
    On,
    /// No annotated Secret is filled: no watch of them, and no webhook
    /// (--webhook-bind-address is refused).
    Off,
}

#[derive(Debug, Clone, Args)]
pub struct AnnotationArgs {
    /// Annotation mode (ordinary Secrets labelled randomsecret.io/managed
    /// get their listed keys): `on` or `off`.
    #[arg(
        long,
        env = "RANDOMSECRET_ANNOTATION_MODE",
        value_enum,
        default_value = "on"
    )]
    pub annotation_mode: AnnotationMode,
    /// Namespaces whose Secrets annotation mode never fills, by the
    /// controller or the webhook, comma-separated (the chart: kube-system,
    /// its own namespace and webhook.excludeNamespaces).
    #[arg(
        long,
        env = "RANDOMSECRET_ANNOTATION_EXCLUDE_NAMESPACES",
        value_delimiter = ','
    )]
    pub annotation_exclude_namespaces: Vec<String>,
}

impl AnnotationArgs {
    /// Whether annotation mode leaves `namespace` alone.
    pub fn excluded(&self, namespace: &str) -> bool {
        self.annotation_exclude_namespaces
            .iter()
            .any(|n| n == namespace)
    }

    /// The flags checked against the webhook's.
    pub fn check(&self, webhook: &WebhookArgs) -> Result<(), String> {
        if self.annotation_mode == AnnotationMode::Off && webhook.webhook_bind_address.is_some() {
            return Err("--annotation-mode=off fills nothing: the webhook (--webhook-bind-address) is annotation mode's, unset it".into());
        }
        Ok(())
    }
}

/// Who manages the webhook's serving certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CertMode {
    /// This controller: a CA and a serving certificate in --webhook-cert-secret,
    /// renewed and rolled over by the leader, which also keeps the webhook
    /// configuration's caBundle.
    #[value(name = "self")]
    SelfManaged,
    /// Someone else (cert-manager) writes tls.crt and tls.key into
    /// --webhook-cert-secret and injects the caBundle; the controller only reads it.
    External,
}

#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// Serve the mutating webhook (HTTPS, path /mutate) on this address, on
    /// every replica. Unset: no webhook (the controller still fills annotated Secrets).
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_BIND_ADDRESS")]
    pub webhook_bind_address: Option<SocketAddr>,
    /// Who manages the serving certificate: `self` or `external` (cert-manager).
    #[arg(
        long,
        env = "RANDOMSECRET_WEBHOOK_CERT_MODE",
        value_enum,
        default_value = "self"
    )]
    pub webhook_cert_mode: CertMode,
    /// The Secret that holds the webhook's certificates (read by every replica through the API).
    #[arg(
        long,
        env = "RANDOMSECRET_WEBHOOK_CERT_SECRET",
        default_value = concat!(crate::api::project!(), "-webhook-tls")
    )]
    pub webhook_cert_secret: String,
    /// The Secret that holds the webhook's CA keys (self mode), beside
    /// --webhook-cert-secret: read and written by the leader only.
    #[arg(
        long,
        env = "RANDOMSECRET_WEBHOOK_CA_SECRET",
        default_value = concat!(crate::api::project!(), "-webhook-ca")
    )]
    pub webhook_ca_secret: String,
    /// Namespace of --webhook-cert-secret (default: $POD_NAMESPACE, else --namespace, else "default").
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_CERT_NAMESPACE")]
    pub webhook_cert_namespace: Option<String>,
    /// The MutatingWebhookConfiguration whose caBundle the leader keeps (self mode).
    #[arg(
        long,
        env = "RANDOMSECRET_WEBHOOK_CONFIGURATION",
        default_value = crate::api::NAME
    )]
    pub webhook_configuration: String,
    /// DNS names of the serving certificate (the webhook Service's names), comma-separated.
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_DNS_NAMES", value_delimiter = ',')]
    pub webhook_dns_names: Vec<String>,
    /// IP addresses of the serving certificate, comma-separated.
    #[arg(
        long,
        env = "RANDOMSECRET_WEBHOOK_IP_ADDRESSES",
        value_delimiter = ',',
        default_value = "127.0.0.1"
    )]
    pub webhook_ip_addresses: Vec<std::net::IpAddr>,
    /// Validity of a CA (self mode), e.g. 8760h.
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_CA_VALIDITY", default_value = "8760h", value_parser = duration)]
    pub webhook_ca_validity: Duration,
    /// The CA rollover starts this long before the CA expires.
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_CA_RENEW_BEFORE", default_value = "2160h", value_parser = duration)]
    pub webhook_ca_renew_before: Duration,
    /// Validity of a serving certificate (self mode).
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_CERT_VALIDITY", default_value = "720h", value_parser = duration)]
    pub webhook_cert_validity: Duration,
    /// A serving certificate is renewed this long before it expires.
    #[arg(long, env = "RANDOMSECRET_WEBHOOK_CERT_RENEW_BEFORE", default_value = "240h", value_parser = duration)]
    pub webhook_cert_renew_before: Duration,
}

/// A duration such as `720h`, `90m`, `1h30m` or `20s`.
pub fn duration(text: &str) -> Result<Duration, String> {
    crate::version::seconds_of(text)
        .filter(|t| *t > 0)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is not a duration such as 720h, 90m or 20s"))
}

/// A [`duration`], or `0s` (`0`) for none.
pub fn duration_or_zero(text: &str) -> Result<Duration, String> {
    match text {
        "0" | "0s" => Ok(Duration::ZERO),
        _ => duration(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_mode_off_refuses_the_webhook_and_exclusions_are_a_list() {
        let parse = |a: &[&str]| {
            let mut all = vec!["randomsecret", "controller"];
            all.extend_from_slice(a);
            match Cli::try_parse_from(all).unwrap().command {
                Command::Controller(c) => c,
                _ => unreachable!(),
            }
        };
        let c = parse(&["--annotation-exclude-namespaces=kube-system,ops"]);
        assert_eq!(c.annotation.annotation_mode, AnnotationMode::On);
        assert!(c.annotation.excluded("ops") && !c.annotation.excluded("shop"));
        assert!(c.annotation.check(&c.webhook).is_ok());
        let c = parse(&[
            "--annotation-mode=off",
            "--webhook-bind-address=127.0.0.1:9443",
        ]);
        assert!(c.annotation.check(&c.webhook).is_err());
        let c = parse(&["--annotation-mode=off"]);
        assert!(c.annotation.check(&c.webhook).is_ok());
    }

    /// One RandomSecret or a selection, never both; `-A` only with a
    /// selection; `--print` one alone; `check` durations read as the rest.
    #[test]
    fn rotate_and_check_refuse_what_contradicts_itself() {
        let parse = |a: &[&str]| Cli::try_parse_from([&["randomsecret"][..], a].concat());
        for ok in [
            &["rotate", "db"][..],
            &["rotate", "-l", "team=a", "--dry-run"],
            &["rotate", "--all", "-A", "--key", "password"],
            &["check", "--wait", "1m30s", "--max-lag", "20s"],
        ] {
            assert!(parse(ok).is_ok(), "{ok:?}");
        }
        for bad in [
            &["rotate"][..],
            &["rotate", "db", "-l", "team=a"],
            &["rotate", "-A", "db"],
            &["rotate", "-l", "team=a", "--print"],
            &["rotate", "db", "--print", "--dry-run"],
            &["check", "--wait", "soon"],
            &["check", "--max-lag", "0s"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was taken");
        }
        let err = parse(&["check", "--wait", "soon"]).unwrap_err().to_string();
        assert!(err.contains("\"soon\" is not a duration such as"), "{err}");
    }

    #[test]
    fn durations() {
        assert_eq!(duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(duration_or_zero("0s"), Ok(Duration::ZERO));
        assert_eq!(duration_or_zero("3s"), Ok(Duration::from_secs(3)));
        assert!(duration("0s").is_err() && duration_or_zero("-1s").is_err());
        for bad in ["", "0s", "5", "h", "1d", "-1s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }
}
