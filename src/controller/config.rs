//! The flags, turned into each wing's and each runtime piece's own small
//! settings. The one module besides `cli.rs` and `main.rs` that reads
//! [`ControllerArgs`]: a wing never sees the whole command line, and a flag's
//! defaulting (a namespace from `$POD_NAMESPACE`, ...) is written here once.

use crate::cli::ControllerArgs;
use crate::push::clusters;
use crate::runtime::{admin, leader};
use crate::shard::Shard;
use crate::{push, reconciler, webhook};

/// Where the proof key lives: `--proof-key-namespace` (default:
/// $POD_NAMESPACE, else `--namespace`, else "default") and
/// `--proof-key-secret`.
pub fn proof_key(args: &ControllerArgs) -> (String, String) {
    (
        own_namespace(args.proof_key_namespace.as_ref(), args),
        args.proof_key_secret.clone(),
    )
}

/// A namespace of the controller's own objects: the flag, else
/// $POD_NAMESPACE, else `--namespace`, else "default".
fn own_namespace(flag: Option<&String>, args: &ControllerArgs) -> String {
    flag.cloned()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .or_else(|| args.namespace.clone())
        .unwrap_or_else(|| "default".into())
}

/// The shard (`--shard-selector`), checked: None when not sharded.
pub fn shard(args: &ControllerArgs) -> Result<Option<Shard>, String> {
    args.shard_selector.as_deref().map(Shard::parse).transpose()
}

/// The lease, with `--leader-elect` only: a shard's is its own
/// ([`Shard::lease`]).
pub fn lease(args: &ControllerArgs, shard: Option<&Shard>) -> Option<leader::Settings> {
    args.leader_elect.then(|| leader::Settings {
        namespace: args.leader_election_namespace.clone(),
        name: shard.map_or_else(
            || args.leader_election_id.clone(),
            |s| s.lease(&args.leader_election_id),
        ),
        lease_duration_seconds: args.lease_duration_seconds,
        renew_deadline_seconds: args.renew_deadline_seconds,
        retry_period_seconds: args.retry_period_seconds,
    })
}

/// The controller's User-Agent: its version, and its shard.
pub fn user_agent(shard: Option<&Shard>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match shard {
        Some(s) => format!(
            "randomsecret/{version} (controller; shard {})",
            s.selector()
        ),
        None => format!("randomsecret/{version} (controller)"),
    }
}

pub fn admin(args: &ControllerArgs) -> admin::Addresses {
    admin::Addresses {
        metrics: args.metrics_bind_address,
        health: args.health_probe_bind_address,
    }
}

/// The webhook, when `--webhook-bind-address` is set. Its serving
/// certificate Secret's namespace is found as the proof key's.
pub fn webhook(args: &ControllerArgs) -> Option<webhook::Config> {
    let w = &args.webhook;
    Some(webhook::Config {
        addr: w.webhook_bind_address?,
        mode: w.webhook_cert_mode,
        secret: (
            own_namespace(w.webhook_cert_namespace.as_ref(), args),
            w.webhook_cert_secret.clone(),
        ),
        ca_secret: w.webhook_ca_secret.clone(),
        configuration: w.webhook_configuration.clone(),
        certificates: webhook::Certificates {
            dns_names: w.webhook_dns_names.clone(),
            ip_addresses: w.webhook_ip_addresses.clone(),
            ca_validity: w.webhook_ca_validity,
            ca_renew_before: w.webhook_ca_renew_before,
            cert_validity: w.webhook_cert_validity,
            cert_renew_before: w.webhook_cert_renew_before,
        },
        excluded: excluded(args),
    })
}

/// The namespaces annotation mode leaves alone, by the controller's fills
/// and the webhook's (`--annotation-exclude-namespaces`).
pub fn excluded(args: &ControllerArgs) -> Vec<String> {
    args.annotation.annotation_exclude_namespaces.clone()
}

/// The namespaces no ClusterRandomSecret stamps into
/// (`--cluster-exclude-namespaces`), and the controller's own when it runs
/// in a pod.
pub fn stamp_excluded(args: &ControllerArgs) -> Vec<String> {
    let mut out = args.cluster_exclude_namespaces.clone();
    out.extend(
        std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|n| !n.is_empty()),
    );
    out
}

/// What RandomSecrets may produce, and copies downstream may carry (`--allow-*`).
pub fn policy(args: &ControllerArgs) -> reconciler::policy::Policy {
    reconciler::policy::Policy {
        types: args.allow_secret_types.clone(),
        label_prefixes: args.allow_label_prefixes.clone(),
        annotation_prefixes: args.allow_annotation_prefixes.clone(),
    }
}

/// The Vault push's settings: the controller's ServiceAccount (for
/// Kubernetes auth, from the flags and the pod's downward API) and where
/// connections may send requests.
pub fn vault(args: &ControllerArgs) -> push::Config {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    push::Config {
        identity: args
            .service_account_name
            .clone()
            .map(|name| push::vault::connection::Identity {
                namespace: args
                    .service_account_namespace
                    .clone()
                    .or_else(|| std::env::var("POD_NAMESPACE").ok())
                    .unwrap_or_else(|| "default".into()),
                name,
                pod: env("POD_NAME").map(|n| (n, env("POD_UID"))),
                api_audiences: push::vault::audience::own(args.kubeconfig.as_deref()),
            }),
        vault_policy: push::vault::address::Policy {
            allow_http: args.allow_http_vault,
            allowed_networks: args.vault_allowed_networks.clone(),
        },
    }
}

/// The cluster push's settings for every connection: the copy policy, the
/// namespaces no copy may go to downstream (the controller's own and its
/// proof key's besides the built-in ones), insecure TLS.
pub fn clusters(args: &ControllerArgs) -> clusters::admit::Settings {
    clusters::admit::Settings::new(
        policy(args),
        &[
            std::env::var("POD_NAMESPACE").unwrap_or_default(),
            proof_key(args).0,
        ],
        args.clusters.allow_insecure_downstream_tls,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{CertMode, Cli, Command};
    use clap::Parser as _;
    use std::time::Duration;

    fn parse(flags: &[&str]) -> ControllerArgs {
        let mut all = vec!["randomsecret", "controller"];
        all.extend_from_slice(flags);
        match Cli::try_parse_from(all).unwrap().command {
            Command::Controller(c) => *c,
            _ => unreachable!(),
        }
    }

    /// Each setting comes from its own flag, with the defaults the flags
    /// always had (two addresses of one type must not swap).
    #[test]
    fn each_setting_comes_from_its_flag_with_the_old_defaults() {
        let none = parse(&[]);
        assert_eq!(
            admin(&none),
            admin::Addresses {
                metrics: "0.0.0.0:8080".parse().unwrap(),
                health: "0.0.0.0:8081".parse().unwrap(),
            }
        );
        assert_eq!(lease(&none, None), None);
        assert_eq!(webhook(&none), None);

        let set = parse(&[
            "--metrics-bind-address=127.0.0.1:1",
            "--health-probe-bind-address=127.0.0.1:2",
            "--leader-elect",
            "--proof-key-namespace=keys",
        ]);
        assert_eq!(admin(&set).metrics.port(), 1);
        assert_eq!(admin(&set).health.port(), 2);
        assert_eq!(
            lease(&set, None),
            Some(leader::Settings {
                namespace: None,
                name: "randomsecret-controller".into(),
                lease_duration_seconds: 15,
                renew_deadline_seconds: 10,
                retry_period_seconds: 2,
            })
        );
        assert_eq!(
            proof_key(&set),
            ("keys".into(), "randomsecret-proof-key".into())
        );
    }

    /// A shard's Lease is its own: two shards with the chart's one
    /// --leader-election-id never wait on each other.
    #[test]
    fn a_shard_leads_on_a_lease_of_its_own() {
        let args = |sel: &str| {
            parse(&[
                "--leader-elect",
                "--leader-election-id=rs",
                &format!("--shard-selector={sel}"),
            ])
        };
        let names: Vec<String> = [
            "sharding.randomsecret.io/key=a",
            "!sharding.randomsecret.io/key",
        ]
        .iter()
        .map(|sel| {
            let a = args(sel);
            let s = shard(&a).unwrap().unwrap();
            lease(&a, Some(&s)).unwrap().name
        })
        .collect();
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| n.starts_with("rs-")), "{names:?}");
        let bad = args("a in (1");
        assert!(shard(&bad).unwrap_err().contains("unbalanced"));
        assert_eq!(shard(&parse(&[])).unwrap(), None);
    }

    #[test]
    fn the_webhook_settings_with_their_defaults() {
        let c = parse(&[
            "--webhook-bind-address=127.0.0.1:9443",
            "--webhook-cert-namespace=hooks",
            "--webhook-dns-names=a.svc,b.svc",
            "--annotation-exclude-namespaces=kube-system,ops",
        ]);
        assert_eq!(
            webhook(&c),
            Some(webhook::Config {
                addr: "127.0.0.1:9443".parse().unwrap(),
                mode: CertMode::SelfManaged,
                secret: ("hooks".into(), "randomsecret-webhook-tls".into()),
                ca_secret: "randomsecret-webhook-ca".into(),
                configuration: "randomsecret".into(),
                certificates: webhook::Certificates {
                    dns_names: vec!["a.svc".into(), "b.svc".into()],
                    ip_addresses: vec!["127.0.0.1".parse().unwrap()],
                    ca_validity: Duration::from_secs(8760 * 3600),
                    ca_renew_before: Duration::from_secs(2160 * 3600),
                    cert_validity: Duration::from_secs(720 * 3600),
                    cert_renew_before: Duration::from_secs(240 * 3600),
                },
                excluded: vec!["kube-system".into(), "ops".into()],
            })
        );
    }
    /// The Vault push's message names the controller's real flag and variable.
    #[test]
    fn the_missing_identity_names_the_real_flag_and_variable() {
        use crate::push::vault::connection::NO_IDENTITY;
        let cmd = <ControllerArgs as clap::Args>::augment_args(clap::Command::new("c"));
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "service_account_name")
            .expect("the --service-account-name argument");
        let flag = format!("--{}", arg.get_long().expect("a long flag"));
        let env = format!("${}", arg.get_env().expect("an env var").to_str().unwrap());
        assert_eq!(flag, "--service-account-name");
        assert!(NO_IDENTITY.contains(&format!("{flag} ")), "{NO_IDENTITY}");
        assert!(NO_IDENTITY.contains(&format!("{env})")), "{NO_IDENTITY}");
    }
}
