//! Leader election on a `coordination.k8s.io/v1` Lease, client-go style: the
//! holder renews `renewTime` every retry period; a candidate takes the lease
//! when its record has not changed for the lease duration (by the candidate's
//! own clock, so clock skew between nodes does not matter). Updates carry the
//! resourceVersion, so two candidates can never both win.
//!
//! Correctness never depends on the lease (versions are create-only); it only
//! keeps a standby from doing duplicate work. Still, a leader stops writing
//! the moment its leadership is uncertain: [`Leadership::leading`] is checked
//! before every write, and is false once the renew deadline has passed since
//! the last renewal began, even while a renewal request hangs.

use crate::runtime::runner::Next;
use crate::runtime::status::Answer as _;
use anyhow::bail;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::{info, warn};

/// How soon work skipped while leadership was uncertain is looked at again.
pub const LAPSED_RETRY: Duration = Duration::from_secs(2);

#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long a lease is valid after its last renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// How often the leader renews and candidates retry.
    pub retry_period: Duration,
}

/// The lease as given (`--leader-election-namespace`, `--leader-election-id`,
/// `--lease-duration-seconds`, `--renew-deadline-seconds`,
/// `--retry-period-seconds`), before [`config`] checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Unset: $POD_NAMESPACE, else "default".
    pub namespace: Option<String>,
    pub name: String,
    pub lease_duration_seconds: u64,
    pub renew_deadline_seconds: u64,
    pub retry_period_seconds: u64,
}

/// The lease settings, checked, with this replica's identity.
pub fn config(s: Settings) -> anyhow::Result<LeaseConfig> {
    // As client-go requires: the leader gives up (renew deadline) before a standby may take over.
    if !(s.lease_duration_seconds > s.renew_deadline_seconds
        && s.renew_deadline_seconds > s.retry_period_seconds)
    {
        bail!(
            "leader election needs --lease-duration-seconds > --renew-deadline-seconds > --retry-period-seconds (got {} > {} > {})",
            s.lease_duration_seconds,
            s.renew_deadline_seconds,
            s.retry_period_seconds
        );
    }
    let namespace = s
        .namespace
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| "default".into());
    // The pod name where there is one; a random suffix keeps two processes on one host apart.
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| crate::api::NAME.into());
    let suffix: String = crate::generate::value(&crate::version::Chars {
        length: 6,
        charset: crate::api::Charset::Lower,
        symbols: String::new(),
        min: Default::default(),
    })
    .unwrap_or_default();
    Ok(LeaseConfig {
        namespace,
        name: s.name,
        identity: format!("{host}-{suffix}"),
        lease_duration: Duration::from_secs(s.lease_duration_seconds),
        renew_deadline: Duration::from_secs(s.renew_deadline_seconds),
        retry_period: Duration::from_secs(s.retry_period_seconds),
    })
}

/// Whether this replica may write: it leads (as the elector last said) and,
/// with leader election, its last successful renewal began less than the
/// renew deadline ago.
#[derive(Clone, Debug)]
pub struct Leadership {
    flag: watch::Receiver<bool>,
    /// Until when the last renewal holds; None without leader election.
    until: Option<Arc<Mutex<Option<Instant>>>>,
}

impl Leadership {
    /// Without leader election: always leading.
    pub fn always() -> Self {
        Leadership {
            flag: watch::channel(true).1,
            until: None,
        }
    }

    /// Leading exactly while `flag` says so (tests).
    pub fn following(flag: watch::Receiver<bool>) -> Self {
        Leadership { flag, until: None }
    }

    pub fn leading(&self) -> bool {
        *self.flag.borrow()
            && self.until.as_ref().is_none_or(|u| {
                u.lock()
                    .expect("lease deadline lock")
                    .is_some_and(|t| Instant::now() < t)
            })
    }

    /// Whether the elector still says leading but the renew deadline has
    /// passed: a renewal may yet succeed (and no take-over would then
    /// reconcile what was skipped), so skipped work is looked at again.
    pub fn lapsed(&self) -> bool {
        *self.flag.borrow() && !self.leading()
    }

    /// What a replica that may not write does with a piece of work: None
    /// while it leads; otherwise nothing (a new leader looks at everything
    /// when it takes over), unless its lease only lapsed (a renewal may yet
    /// succeed, with no take-over to bring the work back): then it looks
    /// again after [`LAPSED_RETRY`].
    pub fn standby(&self) -> Option<Next> {
        if self.leading() {
            None
        } else if self.lapsed() {
            Some(Next::RequeueAfter(LAPSED_RETRY))
        } else {
            Some(Next::AwaitChange)
        }
    }

    /// The elector's flag, for the metric and take-over.
    pub fn flag(&self) -> watch::Receiver<bool> {
        self.flag.clone()
    }

    /// Whether a lease decides (`--leader-elect`): only then can work have
    /// been skipped as standby.
    pub fn elected(&self) -> bool {
        self.until.is_some()
    }
}

/// Calls `on_takeover` each time this replica starts leading (false -> true),
/// and keeps `gauge` at 1 while it leads.
///
/// Under an election, leading already at the first look counts as a
/// take-over too: the elector runs on its own task and may win the lease
/// before this one is first polled, after a reconcile had already skipped a
/// key as standby; without the take-over nothing would bring that key back.
/// Without one, nothing was ever skipped.
pub async fn follow(
    leadership: Leadership,
    gauge: prometheus_client::metrics::gauge::Gauge,
    on_takeover: impl Fn(),
) {
    let mut leader = leadership.flag();
    let mut was = !leadership.elected();
    loop {
        let leading = *leader.borrow_and_update();
        gauge.set(i64::from(leading));
        if leading && !was {
            on_takeover();
        }
        was = leading;
        if leader.changed().await.is_err() {
            return;
        }
    }
}

/// What a candidate should do with the lease it just read (pure).
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// We hold it: renew.
    Renew,
    /// Free or expired: take it.
    Acquire,
    /// Someone else holds a live lease.
    Follow,
}

/// Decides the next step from the lease's holder and how long its record has
/// been unchanged (as observed locally).
pub fn decide(
    holder: Option<&str>,
    me: &str,
    unchanged_for: Duration,
    lease_duration: Duration,
) -> Step {
    match holder {
        Some(h) if h == me => Step::Renew,
        None | Some("") => Step::Acquire,
        Some(_) if unchanged_for >= lease_duration => Step::Acquire,
        Some(_) => Step::Follow,
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    /// Shared with [`Leadership`]: when the last renewal stops holding.
    until: Arc<Mutex<Option<Instant>>>,
    /// The record last seen (holder, renewTime, resourceVersion) and when it changed.
    observed: Option<(String, Instant)>,
    last_renew: Option<Instant>,
}

impl Elector {
    /// The elector, and the leadership it publishes through `flag`.
    pub fn new(
        client: Client,
        config: LeaseConfig,
        flag: watch::Receiver<bool>,
    ) -> (Self, Leadership) {
        let until = Arc::new(Mutex::new(None));
        let leadership = Leadership {
            flag,
            until: Some(until.clone()),
        };
        let elector = Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            until,
            observed: None,
            last_renew: None,
        };
        (elector, leadership)
    }

    fn desired(&self, lease: &Lease, acquire: bool) -> Lease {
        let mut l = lease.clone();
        let spec = l.spec.get_or_insert_with(LeaseSpec::default);
        if acquire {
            spec.holder_identity = Some(self.config.identity.clone());
            spec.acquire_time = Some(now());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.lease_duration_seconds = Some(self.config.lease_duration.as_secs().max(1) as i32);
        spec.renew_time = Some(now());
        l.metadata.managed_fields = None;
        l
    }

    /// One round: read the lease and renew, acquire or follow. Returns whether we lead.
    async fn round(&mut self, leading: bool) -> kube::Result<bool> {
        let lease = match self.api.get_opt(&self.config.name).await? {
            Some(l) => l,
            None => {
                let fresh = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec::default()),
                };
                match self.api.create(&PostParams::default(), &fresh).await {
                    Ok(l) => l,
                    Err(kube::Error::Api(s)) if s.already_exists() => return Ok(leading),
                    Err(e) => return Err(e),
                }
            }
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let record = format!(
            "{:?}/{:?}/{:?}",
            spec.holder_identity,
            spec.renew_time.as_ref().map(|t| t.0),
            lease.metadata.resource_version
        );
        let changed_at = match &self.observed {
            Some((r, at)) if *r == record => *at,
            _ => Instant::now(),
        };
        self.observed = Some((record, changed_at));
        let step = decide(
            spec.holder_identity.as_deref(),
            &self.config.identity,
            changed_at.elapsed(),
            self.config.lease_duration,
        );
        match step {
            Step::Follow => Ok(false),
            Step::Renew | Step::Acquire => {
                let desired = self.desired(&lease, step == Step::Acquire);
                // replace() sends the resourceVersion: a concurrent writer makes this fail with 409.
                let began = Instant::now();
                match self
                    .api
                    .replace(&self.config.name, &PostParams::default(), &desired)
                    .await
                {
                    Ok(_) => {
                        // A standby counts the lease from when it sees this
                        // renewal, which is after it began.
                        self.last_renew = Some(began);
                        *self.until.lock().expect("lease deadline lock") =
                            Some(began + self.config.renew_deadline);
                        Ok(true)
                    }
                    Err(kube::Error::Api(s)) if s.conflict() => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Runs until `shutdown`, publishing whether we lead; on shutdown releases
    /// the lease if we hold it, so a standby takes over at once.
    pub async fn run(
        mut self,
        leader: watch::Sender<bool>,
        mut shutdown: impl std::future::Future<Output = ()> + Unpin,
    ) {
        loop {
            let leading = *leader.borrow();
            // Each round is bounded: a request that hangs must not keep this
            // replica leading past the renew deadline while a standby takes over.
            let round = tokio::time::timeout(self.config.retry_period, self.round(leading)).await;
            let now_leading = match round
                .unwrap_or_else(|_| Err(kube::Error::Service("lease request timed out".into())))
            {
                Ok(l) => l,
                Err(e) => {
                    warn!(error = %e, "leader election: lease request failed");
                    // Keep leading only while within the renew deadline.
                    leading
                        && self
                            .last_renew
                            .is_some_and(|t| t.elapsed() < self.config.renew_deadline)
                }
            };
            if !now_leading {
                *self.until.lock().expect("lease deadline lock") = None;
            }
            if now_leading != leading {
                if now_leading {
                    info!(identity = %self.config.identity, lease = %self.config.name, "became the leader");
                } else {
                    warn!(identity = %self.config.identity, lease = %self.config.name, "lost the lease: stopping reconciles");
                }
                leader.send_replace(now_leading);
            }
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
        if *leader.borrow() {
            *self.until.lock().expect("lease deadline lock") = None;
            leader.send_replace(false);
            self.release().await;
        }
    }

    async fn release(&self) {
        let Ok(Some(lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let mut l = lease.clone();
        let spec = l.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now());
        l.metadata.managed_fields = None;
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &l)
            .await
        {
            Ok(_) => info!(lease = %self.config.name, "released the lease"),
            Err(e) => warn!(error = %e, "releasing the lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Duration = Duration::from_secs(15);

    #[test]
    fn leadership_ends_at_the_renew_deadline_without_waiting_for_the_elector() {
        let (tx, rx) = watch::channel(true);
        let until = Arc::new(Mutex::new(Some(Instant::now() + Duration::from_secs(60))));
        let l = Leadership {
            flag: rx,
            until: Some(until.clone()),
        };
        assert!(l.leading());
        // The deadline passes while the flag still says leading.
        assert_eq!(l.standby(), None);
        *until.lock().unwrap() = Some(Instant::now() - Duration::from_millis(1));
        assert!(!l.leading() && l.lapsed());
        // Lapsed: no take-over would bring skipped work back, so it comes back itself.
        assert_eq!(l.standby(), Some(Next::RequeueAfter(LAPSED_RETRY)));
        *until.lock().unwrap() = Some(Instant::now() + Duration::from_secs(60));
        tx.send_replace(false);
        assert!(!l.leading() && !l.lapsed());
        assert_eq!(l.standby(), Some(Next::AwaitChange));
        assert!(Leadership::always().leading());
        assert!(!Leadership::following(watch::channel(false).1).leading());
    }

    /// Counts `follow`'s take-overs under an election while its flag goes
    /// through `steps`.
    async fn takeovers(initial: bool, steps: &[bool]) -> (usize, i64) {
        let (tx, rx) = watch::channel(initial);
        let elected = Leadership {
            flag: rx,
            until: Some(Arc::default()),
        };
        followed(elected, tx, steps).await
    }

    async fn followed(
        leadership: Leadership,
        tx: watch::Sender<bool>,
        steps: &[bool],
    ) -> (usize, i64) {
        let gauge = prometheus_client::metrics::gauge::Gauge::default();
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = count.clone();
        let task = tokio::spawn(follow(leadership, gauge.clone(), move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        tokio::task::yield_now().await;
        for &step in steps {
            tx.send_replace(step);
            tokio::task::yield_now().await;
        }
        drop(tx);
        task.await.expect("follow ends with the elector");
        (count.load(std::sync::atomic::Ordering::SeqCst), gauge.get())
    }

    #[tokio::test]
    async fn a_lease_won_before_the_first_look_is_a_takeover() {
        // The elector won before `follow` first ran: the standby's skipped
        // keys must still be looked at again.
        assert_eq!(takeovers(true, &[]).await, (1, 1));
        assert_eq!(takeovers(false, &[]).await, (0, 0));
        // Each false -> true is one take-over; renewals (true -> true) are not.
        assert_eq!(takeovers(false, &[true, true, false, true]).await, (2, 1));
        assert_eq!(takeovers(true, &[false]).await, (1, 0));
        // Without an election (always leading) nothing was skipped: no take-over.
        let (tx, rx) = watch::channel(true);
        assert!(!Leadership::following(rx.clone()).elected());
        assert_eq!(followed(Leadership::following(rx), tx, &[]).await, (0, 1));
    }

    #[test]
    fn holder_renews_free_lease_is_acquired() {
        assert_eq!(decide(Some("me"), "me", Duration::ZERO, D), Step::Renew);
        assert_eq!(decide(None, "me", Duration::ZERO, D), Step::Acquire);
        assert_eq!(decide(Some(""), "me", Duration::ZERO, D), Step::Acquire);
    }

    #[test]
    fn another_holder_is_followed_until_its_record_is_stale() {
        assert_eq!(
            decide(Some("other"), "me", Duration::from_secs(14), D),
            Step::Follow
        );
        assert_eq!(decide(Some("other"), "me", D, D), Step::Acquire);
    }
}
