//! The apiserver's own request counters (`apiserver_request_total`), read
//! before and after a phase: what every client did, split by verb and resource.

use crate::stats::{label, samples};
use anyhow::{Context, Result};
use kube::Client;
use std::collections::BTreeMap;

/// The requests the controller makes, as (verb, resource): everything else in
/// the apiserver's counters is other clients (the benchmark, the
/// controller-manager's garbage collector and Event series, ...).
pub const OURS: &[(&str, &str)] = &[
    ("POST", "secrets"),
    ("GET", "secrets"),
    ("PATCH", "secrets"),
    ("DELETE", "secrets"),
    ("APPLY", "randomsecrets/status"),
    ("POST", "events"),
];
/// Resources the controller watches (its only LISTs are at start).
pub const WATCHED: &[&str] = &[
    "secrets",
    "randomsecrets",
    "replicasets",
    "controllerrevisions",
    "pods",
    "deployments",
    "statefulsets",
    "daemonsets",
];

/// Requests by `(verb, resource[/subresource])`.
pub type Counts = BTreeMap<(String, String), f64>;

/// Reads the counters from the apiserver's `/metrics`.
pub async fn scrape(client: &Client) -> Result<Counts> {
    Ok(parse(&text(client).await?))
}

/// The apiserver's `/metrics`, as text.
pub async fn text(client: &Client) -> Result<String> {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .context("building the /metrics request")?;
    client
        .request_text(req)
        .await
        .context("reading the apiserver's /metrics")
}

/// Sums `apiserver_request_total` over the labels other than verb and resource.
pub fn parse(text: &str) -> Counts {
    let mut out = Counts::new();
    for (labels, value) in samples(text, "apiserver_request_total") {
        let get = |name: &str| label(labels, name).unwrap_or_default().to_string();
        let (resource, sub) = (get("resource"), get("subresource"));
        let resource = if sub.is_empty() {
            resource
        } else {
            format!("{resource}/{sub}")
        };
        *out.entry((get("verb"), resource)).or_default() += value;
    }
    out
}

/// `after - before`, keeping the non-zero entries.
pub fn delta(before: &Counts, after: &Counts) -> Counts {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

/// Adds `more` to `counts`.
pub fn add(counts: &mut Counts, more: &Counts) {
    for (k, v) in more {
        *counts.entry(k.clone()).or_default() += v;
    }
}

/// Removes `n` requests of `verb` on `resource` (the benchmark's own) from `counts`.
pub fn subtract(counts: &mut Counts, verb: &str, resource: &str, n: f64) {
    let key = (verb.to_string(), resource.to_string());
    if let Some(v) = counts.get_mut(&key) {
        *v -= n;
        if *v <= 0.0 {
            counts.remove(&key);
        }
    }
}

/// Only the (verb, resource) pairs in `pairs`.
pub fn only(counts: &Counts, pairs: &[(&str, &str)]) -> Counts {
    counts
        .iter()
        .filter(|((v, r), _)| pairs.contains(&(v.as_str(), r.as_str())))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The sum of all counts.
pub fn total(counts: &Counts) -> f64 {
    counts.values().fold(0.0, |a, v| a + v)
}

/// The sum for one verb over `resources`.
pub fn verb_on(counts: &Counts, verb: &str, resources: &[&str]) -> f64 {
    counts
        .iter()
        .filter(|((v, r), _)| v == verb && resources.contains(&r.as_str()))
        .fold(0.0, |a, (_, v)| a + v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_over_codes_and_splits_subresources() {
        let text = r#"# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="randomsecret.io",resource="randomsecrets",scope="resource",subresource="status",verb="APPLY",version="v1"} 3
apiserver_request_duration_seconds_count{verb="POST"} 99
"#;
        let c = parse(text);
        assert_eq!(c[&("POST".into(), "secrets".into())], 9.0);
        assert_eq!(c[&("APPLY".into(), "randomsecrets/status".into())], 3.0);
        assert_eq!(c.len(), 2);
        let mut d = delta(&Counts::new(), &c);
        subtract(&mut d, "POST", "secrets", 9.0);
        assert_eq!(total(&only(&d, &[("APPLY", "randomsecrets/status")])), 3.0);
        assert_eq!(verb_on(&c, "POST", &["secrets"]), 9.0);
        let mut sum = c.clone();
        add(&mut sum, &c);
        assert_eq!(sum[&("POST".into(), "secrets".into())], 18.0);
    }
}
