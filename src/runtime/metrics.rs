//! Prometheus metrics. Labels carry kinds of outcome, never values; names
//! only in the per-object families (`object_metrics`) and the certificate
//! expiry below.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

/// Which path filled an annotated Secret: `controller` or `webhook`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PathLabel {
    pub path: &'static str,
}

#[derive(Clone)]
pub struct Metrics {
    pub reconciles: Family<ResultLabel, Counter>,
    pub errors: Family<ReasonLabel, Counter>,
    pub duration: Histogram,
    pub versions_created: Counter,
    pub versions_adopted: Counter,
    pub versions_released: Counter,
    pub leader: Gauge,
    pub in_flight: Gauge,
    pub events_dropped: Counter,
    /// Annotation mode: Secrets filled (or rotated), by path.
    pub annotated_fills: Family<PathLabel, Counter>,
    /// Annotation mode: opted-in Secrets left unchanged, by reason.
    pub annotated_refused: Family<ReasonLabel, Counter>,
    /// Push: attempts by result (written, unchanged, error).
    pub pushes: Family<ResultLabel, Counter>,
    /// Push: failures by reason (the VaultSynced reasons).
    pub push_errors: Family<ReasonLabel, Counter>,
    /// Push: time of one push to a target (connection, login, compare, write).
    pub push_duration: Histogram,
    /// Push: RandomSecrets whose target is not in sync now.
    pub push_out_of_sync: Gauge,
}

impl Metrics {
    pub fn register(registry: &mut Registry) -> Self {
        let m = Metrics {
            reconciles: Family::default(),
            errors: Family::default(),
            duration: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            versions_created: Counter::default(),
            versions_adopted: Counter::default(),
            versions_released: Counter::default(),
            leader: Gauge::default(),
            in_flight: Gauge::default(),
            events_dropped: Counter::default(),
            annotated_fills: Family::default(),
            annotated_refused: Family::default(),
            pushes: Family::default(),
            push_errors: Family::default(),
            push_duration: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            push_out_of_sync: Gauge::default(),
        };
        let r = registry.sub_registry_with_prefix(crate::api::NAME);
        super::phases::register(r);
        r.register(
            "reconciles",
            "Reconciles by result (ok, stalled, error, standby, gone, deleting)",
            m.reconciles.clone(),
        );
        r.register(
            "reconcile_errors",
            "Reconcile problems by reason",
            m.errors.clone(),
        );
        r.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            m.duration.clone(),
        );
        r.register(
            "versions_created",
            "Secret versions created",
            m.versions_created.clone(),
        );
        r.register(
            "versions_released",
            "Superseded, unreferenced versions deleted",
            m.versions_released.clone(),
        );
        r.register(
            "leader",
            "1 while this replica holds the leader lease (or runs without leader election)",
            m.leader.clone(),
        );
        r.register(
            "reconciles_in_flight",
            "Reconciles running now",
            m.in_flight.clone(),
        );
        r.register(
            "versions_adopted",
            "Existing Secret versions adopted by a re-created RandomSecret",
            m.versions_adopted.clone(),
        );
        r.register(
            "events_dropped",
            "Events not posted because the queue was full (the apiserver was slower than they came)",
            m.events_dropped.clone(),
        );
        r.register(
            "annotated_fills",
            "Annotated Secrets filled or rotated, by path (controller, webhook)",
            m.annotated_fills.clone(),
        );
        r.register(
            "annotated_refused",
            "Annotated Secrets left unchanged, by reason (InvalidAnnotations, Immutable, ProducedByRandomSecret, PatchRefused)",
            m.annotated_refused.clone(),
        );
        r.register(
            "pushes",
            "Pushes to a target by result (written: a new KV version; unchanged: compared, nothing written; error)",
            m.pushes.clone(),
        );
        r.register(
            "push_errors",
            "Push failures by reason (Unreachable, Sealed, AuthFailed, PermissionDenied, PathNotManaged, ConnectionNotFound, NamespaceNotAllowed, ...)",
            m.push_errors.clone(),
        );
        r.register(
            "push_duration_seconds",
            "Time of one push to a target: connection, login (when the cached token expires), compare and write",
            m.push_duration.clone(),
        );
        r.register(
            "push_targets_out_of_sync",
            "RandomSecrets whose push target is not in sync now",
            m.push_out_of_sync.clone(),
        );
        m
    }

    /// One push ended with `result` (written, unchanged, error).
    pub fn pushed(&self, result: &'static str) {
        self.pushes.get_or_create(&ResultLabel { result }).inc();
    }

    pub fn push_error(&self, reason: &str) {
        self.push_errors
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// One annotated Secret filled (or rotated) by `path` (controller, webhook).
    pub fn filled(&self, path: &'static str) {
        self.annotated_fills
            .get_or_create(&PathLabel { path })
            .inc();
    }

    /// One reconcile ended with `result` (ok, stalled, error, standby, gone, deleting).
    pub fn reconciled(&self, result: &'static str) {
        self.reconciles.get_or_create(&ResultLabel { result }).inc();
    }

    pub fn error(&self, reason: &str) {
        self.errors
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    /// The dashboard ships twice (config/grafana and the chart); the e2e
    /// suite checks that every metric it queries is exported.
    #[test]
    fn the_chart_and_config_ship_the_same_dashboard() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
        assert_eq!(
            read("config/grafana/randomsecret-dashboard.json"),
            read("charts/randomsecret/dashboards/randomsecret.json"),
            "the chart's dashboard and config/grafana's differ: copy one over the other"
        );
    }
}

/// `randomsecret_certificate_expiry_timestamp_seconds{namespace, randomsecret,
/// secret}`: when the first certificate of each version that holds one
/// ends, read from the Secrets cache at each scrape (from each version's
/// signed record), so a series goes when its version does. One series per
/// such version: bounded by the versions kept, never by values.
pub struct CertificateExpiry(pub std::sync::Arc<crate::cache::Caches>);

impl std::fmt::Debug for CertificateExpiry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertificateExpiry")
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    namespace: String,
    randomsecret: String,
    secret: String,
}

impl prometheus_client::collector::Collector for CertificateExpiry {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::gauge::ConstGauge;
        let ends = self.0.secrets.certificate_ends();
        let name = format!("{}_certificate_expiry_timestamp_seconds", crate::api::NAME);
        let mut family = encoder.encode_descriptor(
            &name,
            "When the first certificate of a version ends (unix seconds): renew by rotating before then",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (secret, randomsecret, end) in ends {
            let labels = VersionLabels {
                namespace: secret.ns().to_string(),
                randomsecret: randomsecret.to_string(),
                secret: secret.name.to_string(),
            };
            ConstGauge::new(end).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
