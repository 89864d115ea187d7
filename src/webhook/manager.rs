//! The leader's certificate work (self mode): keeps the certificate Secret
//! as `lifecycle::decide` says (any replica creates it when missing), and the webhook configuration's caBundle
//! equal to the stored bundle. Wakes on a change of either object, of
//! leadership, or at the next time a decision may change.
//!
//! Every write is safe when replicas race: the Secret is created with POST
//! (409: another replica made it; its version arrives through the watch)
//! and replaced with its resourceVersion (409: decide again on the newer one).

use super::configuration::{ca_bundle_patch, carries};
use super::latest::Seen;
use super::lifecycle::{Action, Policy, decide};
use super::metrics::{ActionLabel, WebhookMetrics};
use super::store::{Stored, apply, observe};
use crate::runtime::leader::Leadership;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::{debug, info, warn};

pub struct Manager {
    pub secrets: Api<Secret>,
    pub secret_name: String,
    pub configs: Api<MutatingWebhookConfiguration>,
    pub config_name: String,
    pub policy: Policy,
    pub leadership: Leadership,
    pub secret: watch::Receiver<Seen<Secret>>,
    pub config: watch::Receiver<Seen<MutatingWebhookConfiguration>>,
    pub metrics: WebhookMetrics,
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Since when the configuration has carried which bundle (as seen here).
type Published = Option<(Vec<u8>, Instant)>;

impl Manager {
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut published: Published = None;
        let mut leader = self.leadership.flag();
        let mut missing_said = false;
        // Without leader election the flag never changes (its sender is gone).
        let mut leader_open = true;
        loop {
            let wait = if self.leadership.leading() {
                self.round(&mut published, &mut missing_said).await
            } else {
                // A new leader counts publication from its own observation.
                published = None;
                if matches!(*self.secret.borrow(), Seen::Absent) {
                    // Any replica makes the first certificates (create-only,
                    // race-safe): readiness waits for one, and during an
                    // upgrade that turns the webhook on the leader may be an
                    // old replica without it. Renewals stay the leader's.
                    self.create_first().await
                } else {
                    Duration::from_secs(2)
                }
            };
            tokio::select! {
                _ = &mut shutdown => return,
                _ = self.secret.changed() => {}
                _ = self.config.changed() => {}
                changed = leader.changed(), if leader_open => leader_open = changed.is_ok(),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One look at both objects; returns how long to wait at most.
    async fn round(&mut self, published: &mut Published, missing_said: &mut bool) -> Duration {
        let secret = self.secret.borrow_and_update().clone();
        let config = self.config.borrow_and_update().clone();
        let stored = match &secret {
            Seen::Unknown => return Duration::from_secs(3600),
            Seen::Absent => Stored::default(),
            Seen::Present(s) => Stored::from_data(s.data.as_ref().unwrap_or(&BTreeMap::new())),
        };
        let bundle = stored.bundle.as_bytes().to_vec();
        match &config {
            Seen::Unknown => {}
            Seen::Absent => {
                *published = None;
                if !*missing_said {
                    *missing_said = true;
                    warn!(configuration = %self.config_name, "the MutatingWebhookConfiguration does not exist: nothing to keep the caBundle of (install it with the chart's webhook.enabled, or set --webhook-configuration)");
                }
            }
            Seen::Present(c) if !bundle.is_empty() => {
                *missing_said = false;
                if carries(c, &bundle) {
                    if published.as_ref().is_none_or(|(b, _)| *b != bundle) {
                        *published = Some((bundle.clone(), Instant::now()));
                    }
                } else {
                    *published = None;
                    self.patch_config(c, &bundle).await;
                }
            }
            Seen::Present(_) => {}
        }
        let published_for = published
            .as_ref()
            .filter(|(b, _)| *b == bundle)
            .map(|(_, at)| at.elapsed().as_secs() as i64);
        let now = unix_now();
        let d = decide(&observe(&stored), now, &self.policy, published_for);
        if d.action != Action::Nothing {
            return self.carry_out(&secret, &stored, d.action, now).await;
        }
        let until = d.recheck_at.map_or(3600, |t| t - now).clamp(1, 3600);
        Duration::from_secs(until as u64)
    }

    /// Creates the certificate Secret when none exists (what `decide` does
    /// for an empty store); a 409 means another replica made it first.
    async fn create_first(&self) -> Duration {
        let stored = Stored::default();
        let now = unix_now();
        let d = decide(&observe(&stored), now, &self.policy, None);
        if d.action == Action::Nothing {
            return Duration::from_secs(2);
        }
        self.carry_out(&Seen::Absent, &stored, d.action, now).await
    }

    async fn patch_config(&self, c: &MutatingWebhookConfiguration, bundle: &[u8]) {
        let Some(patch) = ca_bundle_patch(c, bundle) else {
            return;
        };
        match self
            .configs
            .patch(
                &self.config_name,
                &PatchParams::default(),
                &Patch::<()>::Json(patch),
            )
            .await
        {
            Ok(_) => {
                self.metrics.ca_bundle_patches.inc();
                info!(configuration = %self.config_name, "set the webhook configuration's caBundle");
            }
            Err(e) => {
                warn!(configuration = %self.config_name, error = %e, "could not set the caBundle; retrying")
            }
        }
    }

    async fn carry_out(
        &self,
        secret: &Seen<Secret>,
        stored: &Stored,
        action: Action,
        now: i64,
    ) -> Duration {
        let retry = Duration::from_secs(2);
        let next = match apply(stored, action, now, &self.policy) {
            Ok(n) => n,
            Err(e) => {
                warn!(error = %e, action = action.as_str(), "could not make the webhook certificates");
                return retry;
            }
        };
        let what = format!(
            "{}/{}",
            self.secrets.namespace().unwrap_or_default(),
            self.secret_name
        );
        let written = match secret.get() {
            Some(s) => {
                let mut s = s.clone();
                s.metadata.managed_fields = None;
                s.data = Some(next.to_data());
                self.secrets
                    .replace(&self.secret_name, &PostParams::default(), &s)
                    .await
            }
            None => {
                self.secrets
                    .create(&PostParams::default(), &self.fresh(&next))
                    .await
            }
        };
        match written {
            Ok(_) => {
                self.metrics
                    .certificate_changes
                    .get_or_create(&ActionLabel {
                        action: action.as_str(),
                    })
                    .inc();
                info!(secret = %what, action = action.as_str(), "updated the webhook certificates");
                // The watch brings the new version.
                Duration::from_secs(5)
            }
            Err(kube::Error::Api(s)) if crate::runtime::status::Answer::conflict_or_exists(&*s) => {
                debug!(secret = %what, "another replica changed the webhook certificates first");
                Duration::from_secs(1)
            }
            Err(e) => {
                warn!(secret = %what, error = %e, "could not write the webhook certificates; retrying");
                retry
            }
        }
    }

    fn fresh(&self, s: &Stored) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(self.secret_name.clone()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/part-of".into(),
                    "randomsecret".into(),
                )])),
                annotations: Some(BTreeMap::from([(
                    "randomsecret.io/purpose".into(),
                    "The webhook's CA and serving certificate, managed by the randomsecret leader. Deleting it makes new ones.".into(),
                )])),
                ..Default::default()
            },
            type_: Some("kubernetes.io/tls".into()),
            data: Some(s.to_data()),
            ..Default::default()
        }
    }
}
