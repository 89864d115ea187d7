//! The webhook's metrics (the fills counter is shared with the controller
//! path: `runtime::metrics`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabel {
    pub action: &'static str,
}

/// Why a review was refused before it was answered.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

#[derive(Clone)]
pub struct WebhookMetrics {
    pub requests: Family<crate::runtime::metrics::ResultLabel, Counter>,
    /// Refused unanswered: too_large, shed, timeout, unreadable_body.
    pub refused: Family<ReasonLabel, Counter>,
    pub duration: Histogram,
    pub certificate_expiry: Gauge,
    pub certificate_changes: Family<ActionLabel, Counter>,
    pub ca_bundle_patches: Counter,
}

impl WebhookMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let m = WebhookMetrics {
            requests: Family::default(),
            refused: Family::default(),
            // 100 µs to about 1.6 s.
            duration: Histogram::new(exponential_buckets(0.0001, 2.0, 15)),
            certificate_expiry: Gauge::default(),
            certificate_changes: Family::default(),
            ca_bundle_patches: Counter::default(),
        };
        let r = registry.sub_registry_with_prefix(crate::api::NAME);
        r.register(
            "webhook_requests",
            "Admission reviews answered, by result (filled, unchanged, warning, unreadable)",
            m.requests.clone(),
        );
        r.register(
            "webhook_refused",
            "Admission reviews refused unanswered (the apiserver fails open), by reason (too_large, shed, timeout, unreadable_body)",
            m.refused.clone(),
        );
        r.register(
            "webhook_request_duration_seconds",
            "Time to answer one admission review (from the request body to the response body)",
            m.duration.clone(),
        );
        r.register(
            "webhook_certificate_expiry_timestamp_seconds",
            "notAfter of the serving certificate this replica serves (unix seconds; 0: none)",
            m.certificate_expiry.clone(),
        );
        r.register(
            "webhook_certificate_changes",
            "Changes the leader made to the certificate Secret, by action (create, rollover, promote, reissue, rebundle)",
            m.certificate_changes.clone(),
        );
        r.register(
            "webhook_ca_bundle_patches",
            "Patches of the webhook configuration's caBundle by the leader",
            m.ca_bundle_patches.clone(),
        );
        m
    }
}
