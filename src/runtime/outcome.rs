//! One outcome contract. Every wing's error (the reconciler's, the Vault
//! push's, the cluster push's) says from one place its condition reason
//! (also the metric label), when to look again, whether only a person can
//! help, and whether it is news; one [`Reporter`] turns it into the metric,
//! the warning log line and the Warning Event, by the same rules for all.

use crate::runtime::events::{EventType, Events};
use crate::runtime::metrics::ReasonLabel;
use crate::runtime::runner::Next;
use k8s_openapi::api::core::v1::ObjectReference;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tracing::warn;

/// What every wing's error tells about itself. Its `Display` is the text a
/// user reads (condition message, Event note): fixed words and our own
/// names, never a foreign server's text.
pub trait Outcome: std::fmt::Display {
    /// The condition reason and the metric label: bounded, never a name.
    fn reason(&self) -> &'static str;
    /// When to look again.
    fn next(&self) -> Next;
    /// Whether no retry can fix it by itself: someone must change the spec,
    /// a connection or a policy (reported as stalled; a waiting deletion
    /// gives up on it after a while).
    fn permanent(&self) -> bool;
    /// Whether it is no news (a lost race, a wait): counted, never warned of.
    fn quiet(&self) -> bool {
        false
    }
}

/// Whether `outcome` is told (a warning and a Warning Event): not quiet,
/// and not the reason told last (`last_reason`), so a failure that repeats
/// on every retry is told once, not once per retry.
pub fn is_news(outcome: &dyn Outcome, last_reason: Option<&str>) -> bool {
    !outcome.quiet() && last_reason != Some(outcome.reason())
}

/// The one failure reporter, as a wing uses it: where its failures are
/// counted and told (borrowed: made where it is needed, for nothing).
#[derive(Clone, Copy)]
pub struct Reporter<'a> {
    events: &'a Events,
    /// Failures by reason (None: the wing counts its results elsewhere).
    errors: Option<&'a Family<ReasonLabel, Counter>>,
    /// The wing, first words of its log lines ("push", "cluster push").
    wing: &'static str,
}

/// One failure to tell of: about what, in which Event action, in which words.
pub struct Failure<'a> {
    pub outcome: &'a dyn Outcome,
    /// The RandomSecret (its namespace/name), for the log line.
    pub subject: &'a dyn std::fmt::Display,
    /// The connection, when the failure is one cluster's.
    pub connection: Option<&'a str>,
    pub regarding: ObjectReference,
    pub action: &'static str,
    /// The step that failed, for the log line ("failed", "cleanup failed").
    pub what: &'static str,
    /// What is said: the outcome's text, or that text in its context.
    pub message: String,
}

impl<'a> Reporter<'a> {
    pub fn new(
        events: &'a Events,
        errors: Option<&'a Family<ReasonLabel, Counter>>,
        wing: &'static str,
    ) -> Self {
        Reporter {
            events,
            errors,
            wing,
        }
    }

    /// Counts `outcome` by its reason.
    pub fn count(&self, outcome: &dyn Outcome) {
        if let Some(errors) = self.errors {
            errors
                .get_or_create(&ReasonLabel {
                    reason: outcome.reason().to_string(),
                })
                .inc();
        }
    }

    /// Tells of `f` (a warning and a Warning Event) when it is news after
    /// `last_reason`; returns whether it did. Not counted: see [`Self::failed`].
    pub fn tell(&self, f: Failure<'_>, last_reason: Option<&str>) -> bool {
        if !is_news(f.outcome, last_reason) {
            return false;
        }
        let reason = f.outcome.reason();
        warn!(
            randomsecret = %f.subject,
            connection = f.connection,
            reason,
            "{} {}: {}",
            self.wing,
            f.what,
            f.message
        );
        self.events
            .publish(f.regarding, EventType::Warning, reason, f.action, f.message);
        true
    }

    /// Counts `f` and tells of it when it is news.
    pub fn failed(&self, f: Failure<'_>, last_reason: Option<&str>) -> bool {
        self.count(f.outcome);
        self.tell(f, last_reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(&'static str, bool);
    impl std::fmt::Display for Fake {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("fake")
        }
    }
    impl Outcome for Fake {
        fn reason(&self) -> &'static str {
            self.0
        }
        fn next(&self) -> Next {
            Next::Retry
        }
        fn permanent(&self) -> bool {
            false
        }
        fn quiet(&self) -> bool {
            self.1
        }
    }

    #[test]
    fn a_failure_is_told_once_per_reason_and_a_quiet_one_never() {
        assert!(is_news(&Fake("Unreachable", false), None));
        assert!(is_news(&Fake("Unreachable", false), Some("Forbidden")));
        assert!(!is_news(&Fake("Unreachable", false), Some("Unreachable")));
        assert!(!is_news(&Fake("Waiting", true), None));
    }
}
