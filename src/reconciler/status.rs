//! What the status should say: pure functions from an outcome to the desired
//! `status`, kstatus-compatible (Ready always present; Reconciling and Stalled
//! say why it is not Ready), from the few facts about the stored status that
//! the cache keeps ([`Previous`]).

use crate::api::{CARRIED_OVER, READY, RECONCILING, STALLED, WORKLOADS_PINNED};
use crate::api::{RandomSecretStatus, VersionStatus};
use crate::cache::previous::Previous;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// How many pinned workloads `status.pinnedWorkloads` lists.
pub const PINNED_LISTED: usize = 20;

/// The result of one reconcile, as far as the status is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The current version exists and is ours. `uncarried`: its record says
    /// it could not carry values over from the version it superseded.
    Ready {
        secret_name: String,
        uncarried: bool,
        /// With a period: when the next version is due (`status.nextRotation`).
        next_rotation: Option<Time>,
    },
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

impl Versions {
    /// The versions a stored status lists.
    pub fn listed(status: Option<&RandomSecretStatus>) -> Self {
        Versions {
            live: status.map(|s| s.versions.clone()).unwrap_or_default(),
            released: status.map(|s| s.released.clone()).unwrap_or_default(),
        }
    }
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
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// The status for `outcome`. Conditions keep their `lastTransitionTime` while
/// their status is unchanged, so an unchanged outcome gives an equal status
/// (and no write). `versions` are the live and released versions to list.
pub fn desired(
    previous: &Previous,
    generation: Option<i64>,
    outcome: &Outcome,
    versions: Versions,
    now: &Time,
) -> RandomSecretStatus {
    let g = generation;
    let last_good = || previous.secret_name.as_deref().map(String::from);
    let (conditions, secret_name) = match outcome {
        Outcome::Ready {
            secret_name,
            uncarried,
            ..
        } => {
            let mut c = vec![
                condition(
                    READY,
                    true,
                    "VersionReady",
                    &format!("Secret {secret_name} is the current version"),
                    g,
                ),
                condition(RECONCILING, false, "VersionReady", "", g),
                condition(STALLED, false, "VersionReady", "", g),
            ];
            if *uncarried {
                c.push(condition(
                    CARRIED_OVER,
                    false,
                    "PreviousUnavailable",
                    &format!(
                        "Secret {secret_name} holds new values for every generated key: the version it superseded could not be read and proven when it was made (see the PreviousUnavailable Event); the next version carries its values over"
                    ),
                    g,
                ));
            }
            (c, Some(secret_name.clone()))
        }
        Outcome::Stalled { reason, message } => (
            vec![
                condition(READY, false, reason, message, g),
                condition(RECONCILING, false, reason, "", g),
                condition(STALLED, true, reason, message, g),
            ],
            last_good(),
        ),
        Outcome::Retrying { reason, message } => (
            vec![
                condition(READY, false, reason, message, g),
                condition(RECONCILING, true, reason, message, g),
                condition(STALLED, false, reason, "", g),
            ],
            last_good(),
        ),
    };
    let conditions = conditions
        .into_iter()
        .map(|mut c| {
            c.last_transition_time = previous
                .transition(&c.type_, c.status == "True")
                .unwrap_or_else(|| now.clone());
            c
        })
        .collect();
    let next_rotation = match outcome {
        Outcome::Ready { next_rotation, .. } => next_rotation.clone(),
        _ => None,
    };
    RandomSecretStatus {
        observed_generation: generation,
        next_rotation,
        secret_name,
        live_versions: versions.live.len() as i32,
        versions: versions.live,
        released: versions.released,
        conditions,
        // Written by the push under its own field manager (crate::push).
        push: None,
        // Written by tracking mode under its own field manager.
        pinned_workloads: Vec::new(),
    }
}

/// The WorkloadsPinned condition (True) saying `message`; its transition
/// time stays while a stored one was True.
pub fn pinned_condition(
    message: &str,
    generation: Option<i64>,
    stored: Option<&Condition>,
    now: &Time,
) -> Condition {
    let mut c = condition(WORKLOADS_PINNED, true, "RolledBack", message, generation);
    c.last_transition_time = stored
        .filter(|s| s.status == "True")
        .map_or_else(|| now.clone(), |s| s.last_transition_time.clone());
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PinnedWorkload;
    use crate::cache::previous::{conditions_fingerprint, fingerprint, pinned_fingerprint};

    fn t(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap())
    }

    fn get<'a>(s: &'a RandomSecretStatus, t: &str) -> &'a Condition {
        s.conditions.iter().find(|c| c.type_ == t).unwrap()
    }

    fn ready(name: &str) -> Outcome {
        Outcome::Ready {
            secret_name: name.into(),
            uncarried: false,
            next_rotation: None,
        }
    }

    /// nextRotation comes with a Ready version that has a period, and goes
    /// with a failure (it describes the current version's schedule).
    #[test]
    fn next_rotation_is_the_ready_versions_due_time() {
        let desire = |before: Option<&RandomSecretStatus>, generation, outcome: &Outcome, at| {
            desired(
                &Previous::of(before),
                Some(generation),
                outcome,
                Versions::default(),
                &t(at),
            )
        };
        let due_at = |at: Option<Time>| Outcome::Ready {
            secret_name: "a-1".into(),
            uncarried: false,
            next_rotation: at,
        };
        let s = desire(None, 1, &due_at(Some(t(3600))), 10);
        assert_eq!(s.next_rotation, Some(t(3600)));
        assert_eq!(desire(None, 1, &ready("a-1"), 10).next_rotation, None);
        let stalled = Outcome::Stalled {
            reason: "InvalidSpec".into(),
            message: "m".into(),
        };
        assert_eq!(desire(Some(&s), 2, &stalled, 20).next_rotation, None);
        // A change of the due time alone is a change of the status (written).
        let s2 = desire(Some(&s), 1, &due_at(Some(t(7200))), 10);
        assert_ne!(
            crate::cache::previous::fingerprint(Some(&s)),
            crate::cache::previous::fingerprint(Some(&s2))
        );
    }

    /// CarriedOver=False only while the current version could not carry
    /// values over; its transition time stays while it stays False.
    #[test]
    fn carried_over_is_false_only_for_a_version_without_carried_values() {
        let plain = desired(
            &Previous::of(None),
            Some(1),
            &ready("a-1"),
            Versions::default(),
            &t(10),
        );
        assert!(!plain.conditions.iter().any(|c| c.type_ == CARRIED_OVER));
        let fresh = Outcome::Ready {
            secret_name: "a-2".into(),
            uncarried: true,
            next_rotation: None,
        };
        let s = desired(
            &Previous::of(Some(&plain)),
            Some(2),
            &fresh,
            Versions::default(),
            &t(20),
        );
        let c = get(&s, CARRIED_OVER);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "PreviousUnavailable")
        );
        assert!(c.message.contains("a-2"), "{}", c.message);
        assert_eq!(c.last_transition_time, t(20));
        let again = desired(
            &Previous::of(Some(&s)),
            Some(2),
            &fresh,
            Versions::default(),
            &t(30),
        );
        assert_eq!(get(&again, CARRIED_OVER).last_transition_time, t(20));
        assert_eq!(fingerprint(Some(&again)), fingerprint(Some(&s)));
        let next = desired(
            &Previous::of(Some(&again)),
            Some(3),
            &ready("a-3"),
            Versions::default(),
            &t(40),
        );
        assert!(!next.conditions.iter().any(|c| c.type_ == CARRIED_OVER));
        assert_ne!(fingerprint(Some(&next)), fingerprint(Some(&again)));
    }

    #[test]
    fn ready_outcome_sets_ready_true_and_the_name() {
        let s = desired(
            &Previous::of(None),
            Some(3),
            &ready("a-hash"),
            Versions::default(),
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
            &Previous::of(None),
            Some(1),
            &ready("a-1"),
            Versions::default(),
            &t(10),
        );
        let bad = Outcome::Stalled {
            reason: "InvalidLength".into(),
            message: "fix it".into(),
        };
        let s = desired(
            &Previous::of(Some(&ok)),
            Some(2),
            &bad,
            Versions::default(),
            &t(20),
        );
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
        assert_eq!(
            get(&s, RECONCILING).last_transition_time,
            t(10),
            "unchanged status keeps its time"
        );
        assert_eq!(
            Previous::of(Some(&s)).ready_reason.as_deref(),
            Some("InvalidLength")
        );
    }

    #[test]
    fn unchanged_outcome_gives_an_equal_status_and_fingerprint() {
        let v = Versions {
            live: vec![VersionStatus {
                name: "a-1".into(),
                created: Some(t(5)),
                ..Default::default()
            }],
            released: vec!["a-0".into()],
        };
        let first = desired(
            &Previous::of(None),
            Some(1),
            &ready("a-1"),
            v.clone(),
            &t(10),
        );
        let prev = Previous::of(Some(&first));
        let again = desired(&prev, Some(1), &ready("a-1"), v.clone(), &t(99));
        assert_eq!(first, again);
        assert_eq!(fingerprint(Some(&again)), prev.fingerprint);
        assert!(prev.released("a-0") && !prev.released("a-1"));
        assert!(prev.was_live("a-1") && !prev.was_live("a-0") && !prev.was_live("a-2"));
        // Written before uids were recorded: by name and creation time.
        assert!(prev.recorded_before_uids("a-1", Some(&t(5))));
        assert!(!prev.recorded_before_uids("a-1", Some(&t(11))));
        assert!(!prev.recorded_before_uids("a-1", None) && !prev.recorded("a-1", "u"));
        assert!(!prev.recorded_before_uids("a-2", Some(&t(5))));
        let mut with_uid = first.clone();
        with_uid.versions[0].uid = Some("u-1".into());
        let prev = Previous::of(Some(&with_uid));
        assert!(prev.recorded("a-1", "u-1") && !prev.recorded("a-1", "u-2"));
        assert!(
            !prev.recorded_before_uids("a-1", Some(&t(5))),
            "the uid decides"
        );
        // Released entries (an old release listed look-alikes so) are not recorded.
        with_uid.versions[0].state = crate::api::VersionState::Released;
        let prev = Previous::of(Some(&with_uid));
        assert!(!prev.recorded("a-1", "u-1") && prev.was_live("a-1"));
        let other = desired(&prev, Some(1), &ready("a-2"), v, &t(99));
        assert_ne!(fingerprint(Some(&other)), prev.fingerprint);
    }

    #[test]
    fn conditions_fingerprint_ignores_versions_and_times() {
        let v = Versions {
            live: vec![VersionStatus {
                name: "a-1".into(),
                ..Default::default()
            }],
            released: vec![],
        };
        let bad = Outcome::Stalled {
            reason: "X".into(),
            message: "y".into(),
        };
        let with = desired(&Previous::of(None), Some(2), &bad, v, &t(1));
        let without = desired(
            &Previous::of(None),
            Some(2),
            &bad,
            Versions::default(),
            &t(5),
        );
        assert_eq!(
            conditions_fingerprint(Some(&with)),
            conditions_fingerprint(Some(&without))
        );
        assert_ne!(fingerprint(Some(&with)), fingerprint(Some(&without)));
        let later = desired(
            &Previous::of(None),
            Some(3),
            &bad,
            Versions::default(),
            &t(5),
        );
        assert_ne!(
            conditions_fingerprint(Some(&later)),
            conditions_fingerprint(Some(&without))
        );
        assert_eq!(Versions::listed(Some(&with)).live.len(), 1);
    }

    #[test]
    fn retrying_is_reconciling() {
        let o = Outcome::Retrying {
            reason: "ApiError".into(),
            message: "x".into(),
        };
        let s = desired(&Previous::of(None), Some(1), &o, Versions::default(), &t(1));
        assert_eq!(get(&s, RECONCILING).status, "True");
        assert_eq!(get(&s, READY).status, "False");
        assert_eq!(
            Previous::of(Some(&s)).ready_reason.as_deref(),
            Some("ApiError")
        );
    }

    /// The push's condition and status are another writer's: they never make
    /// this writer's status look changed (which would write on every reconcile).
    #[test]
    fn the_push_fields_do_not_change_the_fingerprints() {
        let ours = desired(
            &Previous::of(None),
            Some(2),
            &ready("a-1"),
            Versions::default(),
            &t(5),
        );
        let mut both = ours.clone();
        both.conditions
            .push(condition("VaultSynced", true, "Synced", "x", Some(2)));
        both.push = Some(crate::api::push::PushStatus::default());
        assert_eq!(fingerprint(Some(&both)), fingerprint(Some(&ours)));
        assert_eq!(
            conditions_fingerprint(Some(&both)),
            conditions_fingerprint(Some(&ours))
        );
        assert!(
            desired(
                &Previous::of(Some(&both)),
                Some(2),
                &ready("a-1"),
                Versions::default(),
                &t(6)
            )
            .conditions
            .iter()
            .all(|c| c.type_ != "VaultSynced")
        );
    }

    /// Tracking mode's fields are another writer's too: they never make the
    /// version's status look changed, and the cache tells whether they are there.
    #[test]
    fn pinned_workloads_are_tracking_modes_own_part() {
        let ours = desired(
            &Previous::of(None),
            Some(2),
            &ready("a-1"),
            Versions::default(),
            &t(5),
        );
        assert_eq!(Previous::of(Some(&ours)).pinned(), 0, "nothing pinned");
        let list = vec![PinnedWorkload {
            kind: "Deployment".into(),
            name: "web".into(),
            secret_name: "a-0".into(),
        }];
        let mut both = ours.clone();
        both.conditions
            .push(pinned_condition("Deployment web ...", Some(2), None, &t(6)));
        both.pinned_workloads = list.clone();
        assert_eq!(fingerprint(Some(&both)), fingerprint(Some(&ours)));
        assert_eq!(
            conditions_fingerprint(Some(&both)),
            conditions_fingerprint(Some(&ours))
        );
        let prev = Previous::of(Some(&both));
        assert_eq!(prev.pinned(), pinned_fingerprint(&list, Some(2)));
        assert_ne!(prev.pinned(), 0);
        assert_ne!(
            prev.pinned(),
            pinned_fingerprint(&list, Some(3)),
            "a newer generation"
        );
        assert_eq!(pinned_fingerprint(&[], Some(2)), 0);
        // The version's writer neither lists nor keeps them (it does not own them).
        let again = desired(&prev, Some(2), &ready("a-1"), Versions::default(), &t(7));
        assert!(again.pinned_workloads.is_empty());
        assert!(again.conditions.iter().all(|c| c.type_ != WORKLOADS_PINNED));
        // A leftover condition without a list is something to remove.
        both.pinned_workloads.clear();
        assert_ne!(Previous::of(Some(&both)).pinned(), 0);
    }

    #[test]
    fn the_pinned_condition_keeps_its_transition_time_while_true() {
        let first = pinned_condition("m", Some(1), None, &t(10));
        assert_eq!(
            (first.status.as_str(), first.reason.as_str()),
            ("True", "RolledBack")
        );
        assert_eq!(first.last_transition_time, t(10));
        let later = pinned_condition("m2", Some(2), Some(&first), &t(20));
        assert_eq!(later.last_transition_time, t(10));
        assert_eq!(later.observed_generation, Some(2));
    }
}
