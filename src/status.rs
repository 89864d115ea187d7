//! What the status should say: pure functions from an outcome to the desired
//! `status`, kstatus-compatible (Ready always present; Reconciling and Stalled
//! say why it is not Ready).

use crate::api::{RandomSecretStatus, VersionStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

pub const READY: &str = "Ready";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";

/// The result of one reconcile, as far as the status is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The current version exists and is ours.
    Ready { secret_name: String },
    /// A permanent problem the user has to fix (bad spec, name taken).
    Stalled { reason: String, message: String },
    /// A transient problem; the controller retries.
    Retrying { reason: String, message: String },
}

/// The versions part of the status: live versions and recently released names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Versions {
    pub live: Vec<VersionStatus>,
    pub released: Vec<String>,
}

/// How many released names the status remembers.
pub const RELEASED_KEPT: usize = 10;

fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation: generation,
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    }
}

/// The status for `outcome`. Conditions keep their `lastTransitionTime` while
/// their status is unchanged, so an unchanged outcome gives an equal status
/// (and no write).
pub fn desired(
    current: Option<&RandomSecretStatus>,
    generation: Option<i64>,
    outcome: &Outcome,
    versions: Option<Versions>,
    now: &Time,
) -> RandomSecretStatus {
    let Versions {
        live: versions,
        released,
    } = versions.unwrap_or_else(|| Versions {
        live: current.map(|s| s.versions.clone()).unwrap_or_default(),
        released: current.map(|s| s.released.clone()).unwrap_or_default(),
    });
    let g = generation;
    let (conditions, secret_name) = match outcome {
        Outcome::Ready { secret_name } => (
            vec![
                condition(
                    READY,
                    true,
                    "VersionReady",
                    &format!("Secret {secret_name} is the current version"),
                    g,
                ),
                condition(RECONCILING, false, "VersionReady", "", g),
                condition(STALLED, false, "VersionReady", "", g),
            ],
            Some(secret_name.clone()),
        ),
        Outcome::Stalled { reason, message } => (
            vec![
                condition(READY, false, reason, message, g),
                condition(RECONCILING, false, reason, "", g),
                condition(STALLED, true, reason, message, g),
            ],
            current.and_then(|s| s.secret_name.clone()),
        ),
        Outcome::Retrying { reason, message } => (
            vec![
                condition(READY, false, reason, message, g),
                condition(RECONCILING, true, reason, message, g),
                condition(STALLED, false, reason, "", g),
            ],
            current.and_then(|s| s.secret_name.clone()),
        ),
    };
    let old = current.map(|s| s.conditions.as_slice()).unwrap_or_default();
    let conditions = conditions
        .into_iter()
        .map(|mut c| {
            c.last_transition_time = match old.iter().find(|o| o.type_ == c.type_) {
                Some(o) if o.status == c.status => o.last_transition_time.clone(),
                _ => now.clone(),
            };
            c
        })
        .collect();
    RandomSecretStatus {
        observed_generation: generation,
        secret_name,
        live_versions: versions.len() as i32,
        versions,
        released,
        conditions,
    }
}

/// Statuses this process wrote, until the cache shows a newer object. A
/// reconcile that runs on a cached object older than our own status write
/// (a Secret event often arrives before the RandomSecret's) computes the same
/// status again; writing it would be a wasted request per version.
#[derive(Default)]
pub struct Written(Mutex<HashMap<(String, String), (String, u64)>>);

impl Written {
    /// What the status says, leaving out `lastTransitionTime` (a stale object
    /// gives a fresh "now" for the same transition).
    pub fn fingerprint(status: &RandomSecretStatus) -> u64 {
        let mut s = status.clone();
        for c in &mut s.conditions {
            c.last_transition_time = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        serde_json::to_vec(&s).unwrap_or_default().hash(&mut h);
        h.finish()
    }

    /// Whether `fingerprint` was written from the cached object at `resource_version`.
    pub fn already(
        &self,
        key: &(String, String),
        resource_version: &str,
        fingerprint: u64,
    ) -> bool {
        self.0
            .lock()
            .expect("written lock")
            .get(key)
            .is_some_and(|(rv, f)| rv == resource_version && *f == fingerprint)
    }

    /// Records a status written from the cached object at `resource_version`.
    pub fn record(&self, key: (String, String), resource_version: String, fingerprint: u64) {
        self.0
            .lock()
            .expect("written lock")
            .insert(key, (resource_version, fingerprint));
    }

    /// The object is gone.
    pub fn forget(&self, key: &(String, String)) {
        self.0.lock().expect("written lock").remove(key);
    }

    /// The cache now holds `resource_version` of the object: forget what was
    /// written from an older one.
    pub fn seen(&self, key: &(String, String), resource_version: &str) {
        let mut map = self.0.lock().expect("written lock");
        if map.get(key).is_some_and(|(rv, _)| rv != resource_version) {
            map.remove(key);
        }
    }
}

/// The Ready condition's reason, if any (to tell transitions apart for Events).
pub fn ready_reason(status: Option<&RandomSecretStatus>) -> Option<&str> {
    status?
        .conditions
        .iter()
        .find(|c| c.type_ == READY)
        .map(|c| c.reason.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    fn get<'a>(s: &'a RandomSecretStatus, t: &str) -> &'a Condition {
        s.conditions.iter().find(|c| c.type_ == t).unwrap()
    }

    #[test]
    fn ready_outcome_sets_ready_true_and_the_name() {
        let s = desired(
            None,
            Some(3),
            &Outcome::Ready {
                secret_name: "a-hash".into(),
            },
            None,
            &t(10),
        );
        assert_eq!(s.secret_name.as_deref(), Some("a-hash"));
        assert_eq!(s.observed_generation, Some(3));
        assert_eq!(get(&s, READY).status, "True");
        assert_eq!(get(&s, STALLED).status, "False");
        assert_eq!(get(&s, RECONCILING).status, "False");
        assert!(
            s.conditions
                .iter()
                .all(|c| c.observed_generation == Some(3))
        );
    }

    #[test]
    fn stalled_keeps_the_last_good_name_and_says_why() {
        let ok = desired(
            None,
            Some(1),
            &Outcome::Ready {
                secret_name: "a-1".into(),
            },
            None,
            &t(10),
        );
        let bad = Outcome::Stalled {
            reason: "InvalidLength".into(),
            message: "fix it".into(),
        };
        let s = desired(Some(&ok), Some(2), &bad, None, &t(20));
        assert_eq!(s.secret_name.as_deref(), Some("a-1"));
        assert_eq!(
            (
                get(&s, READY).status.as_str(),
                get(&s, READY).reason.as_str()
            ),
            ("False", "InvalidLength")
        );
        assert_eq!(get(&s, STALLED).status, "True");
        assert_eq!(get(&s, STALLED).message, "fix it");
        assert_eq!(get(&s, READY).last_transition_time, t(20));
    }

    #[test]
    fn unchanged_outcome_gives_an_equal_status() {
        let o = Outcome::Ready {
            secret_name: "a-1".into(),
        };
        let first = desired(None, Some(1), &o, None, &t(10));
        let again = desired(Some(&first), Some(1), &o, None, &t(99));
        assert_eq!(first, again);
    }

    #[test]
    fn no_versions_keeps_the_listed_ones() {
        let v = Versions {
            live: vec![VersionStatus {
                name: "a-1".into(),
                ..Default::default()
            }],
            released: vec!["a-0".into()],
        };
        let ok = desired(
            None,
            Some(1),
            &Outcome::Ready {
                secret_name: "a-1".into(),
            },
            Some(v.clone()),
            &t(1),
        );
        assert_eq!(
            (ok.live_versions, ok.released.clone()),
            (1, vec!["a-0".to_string()])
        );
        let bad = Outcome::Stalled {
            reason: "X".into(),
            message: "y".into(),
        };
        let s = desired(Some(&ok), Some(2), &bad, None, &t(2));
        assert_eq!((s.versions, s.released), (v.live, v.released));
    }

    #[test]
    fn written_skips_only_the_same_status_from_the_same_cached_object() {
        let w = Written::default();
        let key = ("ns".to_string(), "a".to_string());
        let ready = |at: i64| {
            desired(
                None,
                Some(1),
                &Outcome::Ready {
                    secret_name: "a-1".into(),
                },
                None,
                &t(at),
            )
        };
        let f = Written::fingerprint(&ready(10));
        assert_eq!(
            f,
            Written::fingerprint(&ready(20)),
            "transition times do not count"
        );
        assert!(!w.already(&key, "5", f));
        w.record(key.clone(), "5".into(), f);
        assert!(w.already(&key, "5", f));
        let stalled = desired(
            None,
            Some(1),
            &Outcome::Stalled {
                reason: "X".into(),
                message: "m".into(),
            },
            None,
            &t(10),
        );
        assert!(!w.already(&key, "5", Written::fingerprint(&stalled)));
        w.seen(&key, "5");
        assert!(w.already(&key, "5", f), "the same object again keeps it");
        w.seen(&key, "6");
        assert!(!w.already(&key, "5", f), "a newer object forgets it");
    }

    #[test]
    fn retrying_is_reconciling() {
        let o = Outcome::Retrying {
            reason: "ApiError".into(),
            message: "x".into(),
        };
        let s = desired(None, Some(1), &o, None, &t(1));
        assert_eq!(get(&s, RECONCILING).status, "True");
        assert_eq!(get(&s, READY).status, "False");
        assert_eq!(ready_reason(Some(&s)), Some("ApiError"));
    }
}
