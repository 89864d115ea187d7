//! `randomsecret check`: is randomsecret installed and working? For CI
//! pipelines and Helm hooks, as `cmctl check api` is for cert-manager. It
//! passes when
//! - every CRD of the project is installed and Established;
//! - a controller holds its Lease: renewed within the lease's duration;
//! - the controller reconciles: no RandomSecret has waited longer than
//!   `--max-lag` for its latest spec to be observed (`status.observedGeneration`);
//! - where the mutating webhook is installed, it answers: a dry-run create
//!   of a Secret that asks for a key comes back with the key filled (the
//!   value is never read out, and nothing is stored).
//!
//! The verdicts are pure functions of what was read; `--wait` reads again
//! every two seconds until every one passes or the time is up.

use crate::annotated::rules::{GENERATE, MANAGED_LABEL};
use crate::api::RandomSecret;
use crate::views::render::span;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use std::time::Duration;

/// The controller's default `--leader-election-id`.
pub const DEFAULT_LEASE: &str = concat!(crate::api::project!(), "-controller");

/// The name of the chart's (and `config/webhook`'s) mutating webhook.
pub const WEBHOOK: &str = concat!("secrets.", crate::api::project!(), ".io");

/// One thing checked: what, and whether it passed (with what was seen).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub what: &'static str,
    pub result: Result<String, String>,
}

impl Verdict {
    fn ok(what: &'static str, seen: String) -> Self {
        Verdict {
            what,
            result: Ok(seen),
        }
    }
    fn fail(what: &'static str, why: String) -> Self {
        Verdict {
            what,
            result: Err(why),
        }
    }
    pub fn passed(&self) -> bool {
        self.result.is_ok()
    }
    /// `✓ CRDs: ...` or `✗ Lease: ...`.
    pub fn line(&self) -> String {
        match &self.result {
            Ok(seen) => format!("✓ {}: {seen}", self.what),
            Err(why) => format!("✗ {}: {why}", self.what),
        }
    }
}

/// Every CRD the project ships is in `installed` and Established.
pub fn crds(installed: &[CustomResourceDefinition]) -> Verdict {
    const WHAT: &str = "CRDs";
    let wanted: Vec<String> = crate::api::crds()
        .into_iter()
        .filter_map(|(_, c)| c.metadata.name)
        .collect();
    let mut missing = Vec::new();
    for name in &wanted {
        let found = installed
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name.as_str()));
        let established = found.and_then(|c| c.status.as_ref()).is_some_and(|s| {
            s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
        match (found, established) {
            (None, _) => missing.push(format!("{name} is not installed")),
            (Some(_), false) => missing.push(format!("{name} is not Established yet")),
            _ => {}
        }
    }
    if missing.is_empty() {
        Verdict::ok(
            WHAT,
            format!("{} installed and Established", wanted.join(", ")),
        )
    } else {
        Verdict::fail(
            WHAT,
            format!(
                "{} (install them: randomsecret crd | kubectl apply --server-side -f -)",
                missing.join("; ")
            ),
        )
    }
}

/// The Lease a controller renews: held, and renewed within its duration
/// (by this machine's clock) at `now`. `lease` None: none was found.
pub fn lease(lease: Option<&Lease>, namespace: &str, now: Timestamp) -> Verdict {
    const WHAT: &str = "Lease";
    let Some(l) = lease else {
        return Verdict::fail(
            WHAT,
            format!(
                "no Lease of a randomsecret controller in namespace {namespace}: give --lease (the controller's --leader-election-id; the chart's is the release's full name) and -n its namespace; a controller without --leader-elect holds none"
            ),
        );
    };
    let name = format!(
        "{namespace}/{}",
        l.metadata.name.as_deref().unwrap_or_default()
    );
    let spec = l.spec.clone().unwrap_or_default();
    let Some(holder) = spec.holder_identity.filter(|h| !h.is_empty()) else {
        return Verdict::fail(
            WHAT,
            format!(
                "{name} is held by no one: no controller leads (stopped, or released on shutdown)"
            ),
        );
    };
    let valid = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    let Some(renewed) = spec.renew_time.map(|t| t.0) else {
        return Verdict::fail(WHAT, format!("{name} has no renewTime"));
    };
    let age = now.as_second() - renewed.as_second();
    if age > valid {
        return Verdict::fail(
            WHAT,
            format!(
                "{name} was last renewed {} ago by {holder}, beyond its {valid}s: its leader is gone and no standby has taken over",
                span(age)
            ),
        );
    }
    Verdict::ok(
        WHAT,
        format!(
            "{name} held by {holder}, renewed {} ago (valid {valid}s)",
            span(age)
        ),
    )
}

/// When the latest spec (or metadata) write of `meta` was made: its newest
/// managedFields entry outside the status, else its creation.
fn last_written(meta: &ObjectMeta) -> Option<Timestamp> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter(|f| f.subresource.as_deref().unwrap_or_default().is_empty())
        .filter_map(|f| f.time.as_ref().map(|t| t.0))
        .max()
        .or_else(|| meta.creation_timestamp.as_ref().map(|t| t.0))
}

/// The controller reconciles: every RandomSecret's latest spec has been
/// observed, or was written less than `max_lag` before `now`.
pub fn reconciling(all: &[RandomSecret], now: Timestamp, max_lag: Duration) -> Verdict {
    const WHAT: &str = "Reconciling";
    let max = max_lag.as_secs() as i64;
    let mut waiting: Vec<(i64, String, i64, Option<i64>)> = all
        .iter()
        .filter_map(|rs| {
            let generation = rs.metadata.generation.unwrap_or_default();
            let observed = rs.status.as_ref().and_then(|s| s.observed_generation);
            // Being deleted: nothing is left to reconcile.
            if observed.is_some_and(|o| o >= generation) || rs.metadata.deletion_timestamp.is_some()
            {
                return None;
            }
            let since = last_written(&rs.metadata)?;
            let name = format!(
                "{}/{}",
                rs.metadata.namespace.as_deref().unwrap_or_default(),
                rs.metadata.name.as_deref().unwrap_or_default()
            );
            Some((
                now.as_second() - since.as_second(),
                name,
                generation,
                observed,
            ))
        })
        .collect();
    waiting.sort_by_key(|w| std::cmp::Reverse(w.0));
    let late = waiting.iter().filter(|w| w.0 > max).count();
    match waiting.first() {
        None => Verdict::ok(
            WHAT,
            format!("{} RandomSecret(s), every spec observed", all.len()),
        ),
        Some((age, name, generation, observed)) if late > 0 => Verdict::fail(
            WHAT,
            format!(
                "{name} has waited {} for the controller (generation {generation}, status at {}){}, over --max-lag {}",
                span(*age),
                observed.map_or("none".to_string(), |o| o.to_string()),
                if late > 1 {
                    format!(", and {} more", late - 1)
                } else {
                    String::new()
                },
                span(max)
            ),
        ),
        Some((age, _, _, _)) => Verdict::ok(
            WHAT,
            format!(
                "{} RandomSecret(s), {} being reconciled (the longest for {})",
                all.len(),
                waiting.len(),
                span(*age)
            ),
        ),
    }
}

/// What `check` looks at, and how patient it is.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The controller's namespace (its Lease).
    pub namespace: String,
    /// The Lease's name; None: the controller's default or the chart's.
    pub lease: Option<String>,
    pub max_lag: Duration,
    /// Where the webhook's dry-run Secret is sent.
    pub webhook_namespace: String,
}

/// The Lease named, or those that look like ours in `api`'s namespace:
/// the controller's default name, or the chart's (a name ending in the
/// project's), and each shard's (that name, `-` and 8 hex digits,
/// `crate::shard::Shard::lease`). Err when several controllers' do (then
/// --lease says which).
async fn find_leases(api: &Api<Lease>, name: Option<&str>) -> anyhow::Result<Vec<Lease>> {
    if let Some(name) = name {
        return Ok(api.get_opt(name).await?.into_iter().collect());
    }
    let ours: Vec<(String, Lease)> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|l| Some((base_of(l.metadata.name.as_deref()?)?.to_string(), l)))
        .collect();
    let mut bases: Vec<&str> = ours.iter().map(|(b, _)| b.as_str()).collect();
    bases.sort_unstable();
    bases.dedup();
    if bases.len() > 1 {
        let names: Vec<&str> = ours
            .iter()
            .filter_map(|(_, l)| l.metadata.name.as_deref())
            .collect();
        anyhow::bail!(
            "several Leases could be the controller's ({}): give --lease",
            names.join(", ")
        );
    }
    Ok(ours.into_iter().map(|(_, l)| l).collect())
}

/// The controller a Lease named `name` is of (its --leader-election-id),
/// if it looks like ours: that name, or a shard's, that name and `-`
/// and 8 hex digits.
fn base_of(name: &str) -> Option<&str> {
    let ours = |n: &str| n == DEFAULT_LEASE || n.ends_with(crate::api::project!());
    if ours(name) {
        return Some(name);
    }
    let (base, digest) = name.rsplit_once('-')?;
    (digest.len() == 8 && digest.bytes().all(|b| b.is_ascii_hexdigit()) && ours(base))
        .then_some(base)
}

/// [`lease`] of every Lease found (a sharded controller holds one per
/// shard): the first that fails, else all of them.
pub fn leases(found: &[Lease], namespace: &str, now: Timestamp) -> Verdict {
    let verdicts: Vec<Verdict> = found
        .iter()
        .map(|l| lease(Some(l), namespace, now))
        .collect();
    match verdicts.iter().position(|v| !v.passed()) {
        _ if verdicts.is_empty() => lease(None, namespace, now),
        Some(i) => verdicts.into_iter().nth(i).expect("found"),
        None if verdicts.len() == 1 => verdicts.into_iter().next().expect("one"),
        None => Verdict::ok(
            "Lease",
            format!(
                "{} shards' Leases held: {}",
                verdicts.len(),
                verdicts
                    .iter()
                    .filter_map(|v| v.result.as_deref().ok())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ),
    }
}

/// Where the webhook is installed, that it fills a dry-run Secret asking for
/// a key in `namespace`. Passes, saying so, where it is not installed.
async fn webhook(client: &Client, namespace: &str) -> Verdict {
    const WHAT: &str = "Webhook";
    let configs = match Api::<MutatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(l) => l.items,
        Err(e) => {
            return Verdict::fail(
                WHAT,
                format!("listing mutating webhook configurations: {e}"),
            );
        }
    };
    let Some(config) = configs
        .iter()
        .find(|c| c.webhooks.iter().flatten().any(|w| w.name == WEBHOOK))
    else {
        return Verdict::ok(WHAT, format!("{WEBHOOK} is not installed: not checked"));
    };
    let config = config.metadata.name.as_deref().unwrap_or_default();
    const KEY: &str = "check";
    let probe = Secret {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-check-", crate::api::project!())),
            labels: Some([(MANAGED_LABEL.to_string(), "true".to_string())].into()),
            annotations: Some([(GENERATE.to_string(), KEY.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&pp, &probe)
        .await
    {
        // Only whether the key is there: its value is never read out.
        Ok(s) if s.data.as_ref().is_some_and(|d| d.contains_key(KEY)) => Verdict::ok(
            WHAT,
            format!(
                "{WEBHOOK} (MutatingWebhookConfiguration {config}) filled a dry-run Secret in namespace {namespace}"
            ),
        ),
        Ok(_) => Verdict::fail(
            WHAT,
            format!(
                "{WEBHOOK} (MutatingWebhookConfiguration {config}) did not fill a dry-run Secret in namespace {namespace}: no replica answered (its failurePolicy Ignore let the Secret through unfilled), or that namespace is excluded (give --webhook-namespace)"
            ),
        ),
        Err(e) => Verdict::fail(
            WHAT,
            format!("a dry-run Secret in namespace {namespace}: {e}"),
        ),
    }
}

/// Reads the cluster once and gives every verdict, in order.
pub async fn once(client: &Client, s: &Settings) -> Vec<Verdict> {
    let now = Timestamp::now();
    let crd = match Api::<CustomResourceDefinition>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(l) => crds(&l.items),
        Err(e) => Verdict::fail("CRDs", format!("listing CustomResourceDefinitions: {e}")),
    };
    let leases: Api<Lease> = Api::namespaced(client.clone(), &s.namespace);
    let held = match find_leases(&leases, s.lease.as_deref()).await {
        Ok(l) => self::leases(&l, &s.namespace, now),
        Err(e) => Verdict::fail("Lease", format!("{e:#}")),
    };
    // Without the CRD there is nothing to list.
    let reconciled = if crd.passed() {
        match Api::<RandomSecret>::all(client.clone())
            .list(&ListParams::default())
            .await
        {
            Ok(l) => reconciling(&l.items, now, s.max_lag),
            Err(e) => Verdict::fail("Reconciling", format!("listing RandomSecrets: {e}")),
        }
    } else {
        Verdict::fail("Reconciling", "not checked without the CRDs".into())
    };
    vec![
        crd,
        held,
        reconciled,
        webhook(client, &s.webhook_namespace).await,
    ]
}

/// Checks until every verdict passes or `wait` is over (once without it);
/// prints the last verdicts. Err (a non-zero exit) when one failed.
pub async fn run(client: &Client, s: &Settings, wait: Option<Duration>) -> anyhow::Result<()> {
    let deadline = wait.map(|w| tokio::time::Instant::now() + w);
    loop {
        let verdicts = once(client, s).await;
        let passed = verdicts.iter().all(Verdict::passed);
        let more = deadline.is_some_and(|d| tokio::time::Instant::now() + RETRY < d);
        if passed || !more {
            for v in &verdicts {
                println!("{}", v.line());
            }
            let failed: Vec<&str> = verdicts
                .iter()
                .filter(|v| !v.passed())
                .map(|v| v.what)
                .collect();
            anyhow::ensure!(
                failed.is_empty(),
                "not ready: {}{}",
                failed.join(", "),
                wait.map_or(String::new(), |w| format!(
                    " (after waiting {})",
                    span(w.as_secs() as i64)
                ))
            );
            return Ok(());
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// How often `--wait` reads again.
const RETRY: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, MicroTime, Time};

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_000_000 + s).unwrap()
    }

    fn held(holder: Option<&str>, renewed: i64) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some("randomsecret".into()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(String::from),
                renew_time: Some(MicroTime(at(renewed))),
                lease_duration_seconds: Some(15),
                ..Default::default()
            }),
        }
    }

    /// A sharded controller's Leases (`crate::shard::Shard::lease`) are
    /// found beside the chart's and the default name; others are not.
    #[test]
    fn a_shards_lease_is_its_controllers() {
        let shard = crate::shard::Shard::parse("sharding.randomsecret.io/key=a").unwrap();
        let name = shard.lease("rel-randomsecret");
        assert_eq!(base_of(&name), Some("rel-randomsecret"));
        assert_eq!(base_of(DEFAULT_LEASE), Some(DEFAULT_LEASE));
        assert_eq!(base_of("rel-randomsecret"), Some("rel-randomsecret"));
        assert_eq!(base_of("kube-scheduler"), None);
        assert_eq!(base_of("other-1311f203"), None);
        assert_eq!(base_of("rel-randomsecret-xyz"), None);
    }

    /// Every shard's Lease must be held: one that is not fails the check.
    #[test]
    fn every_shards_lease_must_be_held() {
        let named = |name: &str, l: Lease| Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..l
        };
        let both = [
            named("rs-00000001", held(Some("a"), -1)),
            named("rs-00000002", held(Some("b"), -2)),
        ];
        let v = leases(&both, "ns", at(0));
        assert!(v.passed(), "{}", v.line());
        assert!(v.line().contains("2 shards"), "{}", v.line());
        let one_gone = [
            named("rs-00000001", held(Some("a"), -1)),
            named("rs-00000002", held(None, -2)),
        ];
        let v = leases(&one_gone, "ns", at(0));
        assert!(
            !v.passed() && v.line().contains("rs-00000002"),
            "{}",
            v.line()
        );
        assert!(!leases(&[], "ns", at(0)).passed());
    }

    #[test]
    fn a_lease_passes_while_renewed_within_its_duration() {
        let ok = lease(Some(&held(Some("pod-a"), -3)), "rs", at(0));
        assert_eq!(
            ok.result,
            Ok("rs/randomsecret held by pod-a, renewed 3s ago (valid 15s)".into())
        );
        let stale = lease(Some(&held(Some("pod-a"), -16)), "rs", at(0));
        assert!(
            stale
                .result
                .as_ref()
                .unwrap_err()
                .contains("last renewed 16s ago by pod-a, beyond its 15s"),
            "{stale:?}"
        );
        let free = lease(Some(&held(None, -1)), "rs", at(0));
        assert!(free.result.unwrap_err().contains("held by no one"));
        let none = lease(None, "rs", at(0));
        assert!(none.result.unwrap_err().contains("give --lease"));
        assert!(ok.line().starts_with("✓ Lease: "));
    }

    fn rs(name: &str, generation: i64, observed: Option<i64>, written: i64) -> RandomSecret {
        let mut r = RandomSecret::new(name, Default::default());
        r.metadata.namespace = Some("ns".into());
        r.metadata.generation = Some(generation);
        r.metadata.creation_timestamp = Some(Time(at(-1000)));
        r.metadata.managed_fields = Some(vec![
            ManagedFieldsEntry {
                manager: Some("kubectl".into()),
                time: Some(Time(at(written))),
                ..Default::default()
            },
            // A later status write does not count as the spec's.
            ManagedFieldsEntry {
                manager: Some("randomsecret".into()),
                subresource: Some("status".into()),
                time: Some(Time(at(0))),
                ..Default::default()
            },
        ]);
        r.status = observed.map(|o| crate::api::RandomSecretStatus {
            observed_generation: Some(o),
            ..Default::default()
        });
        r
    }

    #[test]
    fn a_spec_waiting_beyond_the_lag_fails_and_names_the_longest() {
        let lag = Duration::from_secs(60);
        let done = rs("done", 2, Some(2), -500);
        let fresh = rs("fresh", 3, Some(2), -5);
        assert_eq!(
            reconciling(std::slice::from_ref(&done), at(0), lag).result,
            Ok("1 RandomSecret(s), every spec observed".into())
        );
        assert_eq!(
            reconciling(&[done.clone(), fresh.clone()], at(0), lag).result,
            Ok("2 RandomSecret(s), 1 being reconciled (the longest for 5s)".into())
        );
        let late = rs("late", 3, Some(2), -312);
        let never = rs("never", 1, None, -90);
        let mut going = rs("going", 4, Some(3), -900);
        going.metadata.deletion_timestamp = Some(Time(at(-900)));
        let v = reconciling(&[done, fresh, late, never, going], at(0), lag);
        assert_eq!(
            v.result,
            Err("ns/late has waited 5m12s for the controller (generation 3, status at 2), and 1 more, over --max-lag 60s".into())
        );
    }

    #[test]
    fn every_crd_must_be_installed_and_established() {
        let mut all: Vec<CustomResourceDefinition> =
            crate::api::crds().into_iter().map(|(_, c)| c).collect();
        assert!(!crds(&all).passed(), "no status: not Established");
        for c in &mut all {
            c.status = serde_json::from_value(serde_json::json!({
                "conditions": [{"type": "Established", "status": "True"}]
            }))
            .unwrap();
        }
        assert!(crds(&all).passed());
        let missing = crds(&all[1..]);
        assert!(
            missing
                .result
                .unwrap_err()
                .contains("is not installed (install them: randomsecret crd"),
        );
    }
}
