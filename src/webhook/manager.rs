//! The leader's certificate work (self mode): keeps the serving and CA
//! Secrets as `lifecycle::decide` says (any replica creates them when the
//! serving Secret is missing), and the webhook configuration's caBundle
//! equal to the stored bundle. Wakes on a change of any of the three
//! objects, of leadership, or at the next time a decision may change.
//!
//! Only the leader watches the CA Secret (its watch ends when leadership
//! does), so a follower never receives a CA key. A follower may create both
//! Secrets when none is served yet: it then holds the CA key it just made,
//! never one it read.
//!
//! Every write is safe when replicas race: a Secret is created with POST
//! (409: another replica made it; its version arrives through the watch)
//! and replaced with its resourceVersion (409: decide again on the newer one).

use super::configuration::{ca_bundle_patch, carries};
use super::latest::Seen;
use super::lifecycle::{Action, Policy, decide};
use super::metrics::{ActionLabel, WebhookMetrics};
use super::store::{Stored, Writes, apply, observe, writes};
use crate::runtime::leader::Leadership;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

pub struct Manager {
    pub secrets: Api<Secret>,
    pub secret_name: String,
    pub ca_secret_name: String,
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

/// The CA Secret's watch, held while leading; dropping it ends the watch
/// and the copy of the Secret.
struct CaWatch {
    task: JoinHandle<()>,
    rx: watch::Receiver<Seen<Secret>>,
}

impl Drop for CaWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CaWatch {
    async fn changed(this: &mut Option<CaWatch>) {
        if let Some(w) = this
            && w.rx.changed().await.is_ok()
        {
            return;
        }
        std::future::pending().await
    }
}

const SERVING_PURPOSE: &str = "The webhook's serving certificate and CA bundle, managed by the randomsecret leader (every replica reads it). Deleting it makes a new serving certificate.";
const CA_PURPOSE: &str = "The webhook's CA keys, read and written by the randomsecret leader only. Deleting it makes a new CA, published before it signs.";

impl Manager {
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut published: Published = None;
        let mut leader = self.leadership.flag();
        let mut missing_said = false;
        // Without leader election the flag never changes (its sender is gone).
        let mut leader_open = true;
        let mut ca: Option<CaWatch> = None;
        loop {
            let wait = if self.leadership.leading() {
                let w = ca.get_or_insert_with(|| self.watch_ca());
                self.round(&mut w.rx, &mut published, &mut missing_said)
                    .await
            } else {
                // A new leader counts publication from its own observation.
                published = None;
                // A follower holds no CA Secret.
                ca = None;
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
                _ = CaWatch::changed(&mut ca) => {}
                changed = leader.changed(), if leader_open => leader_open = changed.is_ok(),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    fn watch_ca(&self) -> CaWatch {
        let (tx, rx) = watch::channel(Seen::Unknown);
        let task = tokio::spawn(super::latest::follow(
            self.secrets.clone(),
            self.ca_secret_name.clone(),
            "webhook CA",
            tx,
        ));
        CaWatch { task, rx }
    }

    /// One look at the three objects; returns how long to wait at most.
    async fn round(
        &mut self,
        ca: &mut watch::Receiver<Seen<Secret>>,
        published: &mut Published,
        missing_said: &mut bool,
    ) -> Duration {
        let secret = self.secret.borrow_and_update().clone();
        let ca_secret = ca.borrow_and_update().clone();
        let config = self.config.borrow_and_update().clone();
        if matches!(secret, Seen::Unknown) || matches!(ca_secret, Seen::Unknown) {
            return Duration::from_secs(3600);
        }
        let data = |s: &Seen<Secret>| s.get().map(|s| s.data.clone().unwrap_or_default());
        let (serving_data, ca_data) = (data(&secret), data(&ca_secret));
        let stored =
            Stored::from_secrets(&serving_data.clone().unwrap_or_default(), ca_data.as_ref());
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
        let next = match apply(&stored, d.action, now, &self.policy) {
            Ok(n) => n,
            Err(e) => {
                warn!(error = %e, action = d.action.as_str(), "could not make the webhook certificates");
                return Duration::from_secs(2);
            }
        };
        let w = writes(serving_data.as_ref(), ca_data.as_ref(), &next);
        if w != Writes::default() {
            // Writes without an action: moving CA keys out of the serving Secret.
            let label = if d.action == Action::Nothing {
                "split"
            } else {
                d.action.as_str()
            };
            return self.carry_out(&secret, &ca_secret, w, label).await;
        }
        let until = d.recheck_at.map_or(3600, |t| t - now).clamp(1, 3600);
        Duration::from_secs(until as u64)
    }

    /// Creates both Secrets when no serving Secret exists (what `decide`
    /// does for an empty store), never reading the CA Secret: a 409 on it
    /// means one exists already, and the leader issues from it.
    async fn create_first(&self) -> Duration {
        let stored = Stored::default();
        let now = unix_now();
        let d = decide(&observe(&stored), now, &self.policy, None);
        if d.action == Action::Nothing {
            return Duration::from_secs(2);
        }
        let next = match apply(&stored, d.action, now, &self.policy) {
            Ok(n) => n,
            Err(e) => {
                warn!(error = %e, action = d.action.as_str(), "could not make the webhook certificates");
                return Duration::from_secs(2);
            }
        };
        let w = writes(None, None, &next);
        drop(next);
        self.carry_out(&Seen::Absent, &Seen::Absent, w, d.action.as_str())
            .await
            .max(Duration::from_secs(5))
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

    /// Carries out `w` in its order (the CA Secret first); a failed write
    /// stops the rest, and the next round decides again from what is stored.
    async fn carry_out(
        &self,
        secret: &Seen<Secret>,
        ca: &Seen<Secret>,
        w: Writes,
        action: &'static str,
    ) -> Duration {
        let mut result = Ok(());
        let mut wrote = false;
        if let Some(data) = w.ca {
            result = self
                .write(&self.ca_secret_name, ca, data, "Opaque", CA_PURPOSE)
                .await;
            wrote = result.is_ok();
        }
        if let (Ok(()), Some(data)) = (&result, w.serving) {
            result = self
                .write(
                    &self.secret_name,
                    secret,
                    data,
                    "kubernetes.io/tls",
                    SERVING_PURPOSE,
                )
                .await;
            wrote |= result.is_ok();
        }
        if wrote {
            self.metrics
                .certificate_changes
                .get_or_create(&ActionLabel { action })
                .inc();
            info!(action, "updated the webhook certificates");
        }
        // On success the watch brings the new versions.
        result.err().unwrap_or(Duration::from_secs(5))
    }

    /// Replaces `name` (its watched version, by resourceVersion) or creates
    /// it; the error is how long to wait before deciding again.
    async fn write(
        &self,
        name: &str,
        seen: &Seen<Secret>,
        data: BTreeMap<String, k8s_openapi::ByteString>,
        type_: &str,
        purpose: &str,
    ) -> Result<(), Duration> {
        let what = format!("{}/{name}", self.secrets.namespace().unwrap_or_default());
        let written = match seen.get() {
            Some(s) => {
                let mut s = s.clone();
                s.metadata.managed_fields = None;
                s.data = Some(data);
                self.secrets.replace(name, &PostParams::default(), &s).await
            }
            None => {
                self.secrets
                    .create(&PostParams::default(), &fresh(name, data, type_, purpose))
                    .await
            }
        };
        match written {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if crate::runtime::status::Answer::conflict_or_exists(&*s) => {
                debug!(secret = %what, "another replica changed the webhook certificates first");
                Err(Duration::from_secs(1))
            }
            Err(e) => {
                warn!(secret = %what, error = %e, "could not write the webhook certificates; retrying");
                Err(Duration::from_secs(2))
            }
        }
    }
}

fn fresh(
    name: &str,
    data: BTreeMap<String, k8s_openapi::ByteString>,
    type_: &str,
    purpose: &str,
) -> Secret {
    Secret {
        metadata: crate::runtime::own::meta(name, purpose),
        type_: Some(type_.into()),
        data: Some(data),
        ..Default::default()
    }
}
