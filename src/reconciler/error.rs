//! The one reconcile error type. Each error knows its condition reason,
//! whether retrying can help, the Event action it belongs to, and what to
//! tell the user; logs, metrics, Events and conditions all say the same thing.

use crate::runtime::outcome::Outcome;
use crate::runtime::runner::Next;
use crate::version::SpecError;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{0}")]
    Spec(#[from] SpecError),
    #[error("the spec cannot be read ({0}): fix it")]
    UnreadableSpec(String),
    #[error("{0}")]
    NameConflict(String),
    /// Outside what the cluster's operators allow (`--allow-*`).
    #[error("{0}")]
    NotAllowed(String),
    #[error(
        "Secret {0} was a live version and is gone (deleted by hand, or lost in a restore). It is not created again: pods and kubelets may still hold its old values under that name. Change spec.rotation to roll out a new version; restore the Secret from a backup if pods still need it"
    )]
    VersionLost(String),
    #[error("the apiserver rejected Secret {name}: {message}: fix the spec")]
    SecretRejected { name: String, message: String },
    #[error("{doing}: {source}")]
    Api {
        doing: String,
        #[source]
        source: kube::Error,
    },
    /// A value could not be generated (the random source, a key).
    #[error("generating a value failed: {0}")]
    Random(String),
    /// Leadership became uncertain mid-reconcile: stop, write nothing.
    #[error("no longer sure to lead: stopped before writing")]
    NotLeading,
    /// A conditional write lost to another writer (the garbage collector
    /// removing a deleted holder, a workload's status update): what the
    /// reconcile reads next is newer, so it runs again, quietly. Names the
    /// object ("Secret db-…", "Deployment web").
    #[error("{0} changed since it was read: looking again")]
    Stale(String),
}

/// How often a RandomSecret whose Secret name is taken is checked again (the
/// other Secret may be deleted).
pub const CONFLICT_RECHECK: Duration = Duration::from_secs(60);

impl ReconcileError {
    /// An API error while `doing` something.
    pub fn api(doing: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        move |source| ReconcileError::Api {
            doing: doing.into(),
            source,
        }
    }

    /// The Event action the problem belongs to.
    pub fn action(&self) -> &'static str {
        match self {
            ReconcileError::Spec(_)
            | ReconcileError::UnreadableSpec(_)
            | ReconcileError::NotAllowed(_) => "Validate",
            _ => "CreateVersion",
        }
    }

    /// Whether the apiserver refused because the namespace is being deleted
    /// (its typed cause, not the message's text): nothing to retry.
    pub fn namespace_terminating(&self) -> bool {
        let ReconcileError::Api {
            source: kube::Error::Api(s),
            ..
        } = self
        else {
            return false;
        };
        s.details
            .iter()
            .flat_map(|d| d.causes.iter())
            .any(|c| c.reason == "NamespaceTerminating")
    }
}

impl Outcome for ReconcileError {
    fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Spec(e) => e.reason(),
            ReconcileError::UnreadableSpec(_) => "InvalidSpec",
            ReconcileError::NameConflict(_) => "SecretNameConflict",
            ReconcileError::NotAllowed(_) => "NotAllowed",
            ReconcileError::VersionLost(_) => "VersionLost",
            ReconcileError::SecretRejected { .. } => "SecretRejected",
            ReconcileError::Api { .. } => "ApiError",
            ReconcileError::Random(_) => "RandomSource",
            ReconcileError::NotLeading => "NotLeading",
            ReconcileError::Stale(_) => "Conflict",
        }
    }

    /// A transient failure backs off; a permanent one waits for a change,
    /// except a taken name, looked at again every [`CONFLICT_RECHECK`] (the
    /// other Secret may be deleted). Not leading: what the lease says
    /// (`Leadership::standby`), decided by the reporter.
    fn next(&self) -> Next {
        match self {
            ReconcileError::Api { .. } | ReconcileError::Random(_) | ReconcileError::Stale(_) => {
                Next::Retry
            }
            ReconcileError::NameConflict(_) => Next::RequeueAfter(CONFLICT_RECHECK),
            _ => Next::AwaitChange,
        }
    }

    /// Only a change (of the spec, or of the conflicting Secret) can help:
    /// reported as Stalled, not retried with backoff.
    fn permanent(&self) -> bool {
        !matches!(
            self,
            ReconcileError::Api { .. }
                | ReconcileError::Random(_)
                | ReconcileError::Stale(_)
                | ReconcileError::NotLeading
        )
    }

    /// A lost race or a lost lease is no problem to report.
    fn quiet(&self) -> bool {
        matches!(self, ReconcileError::Stale(_) | ReconcileError::NotLeading)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, cause: Option<&str>) -> ReconcileError {
        let causes: Vec<_> = cause
            .into_iter()
            .map(|c| serde_json::json!({"reason": c}))
            .collect();
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "code": code,
            "message": "unable to create new content in namespace x because it is being terminated",
            "details": {"causes": causes},
        }))
        .unwrap();
        ReconcileError::api("creating Secret x")(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn each_error_knows_its_reason_and_whether_to_retry() {
        let spec = ReconcileError::from(SpecError::NoKeys);
        assert_eq!(
            (spec.reason(), spec.permanent(), spec.next()),
            ("NoKeys", true, Next::AwaitChange)
        );
        assert_eq!(spec.action(), "Validate");
        let lost = ReconcileError::VersionLost("db-x".into());
        assert_eq!(
            (lost.reason(), lost.permanent(), lost.next()),
            ("VersionLost", true, Next::AwaitChange)
        );
        assert!(lost.to_string().contains("spec.rotation"));
        let conflict = ReconcileError::NameConflict("taken".into());
        assert_eq!(
            (conflict.reason(), conflict.next()),
            ("SecretNameConflict", Next::RequeueAfter(CONFLICT_RECHECK))
        );
        let api = api_error(500, None);
        assert_eq!(
            (api.reason(), api.permanent(), api.next()),
            ("ApiError", false, Next::Retry)
        );
        assert!(api.to_string().starts_with("creating Secret x: "));
        let random = ReconcileError::Random("x".into());
        assert_eq!(
            (random.reason(), random.permanent(), random.next()),
            ("RandomSource", false, Next::Retry)
        );
        for (e, reason) in [
            (ReconcileError::Stale("Secret db-x".into()), "Conflict"),
            (ReconcileError::NotLeading, "NotLeading"),
        ] {
            assert_eq!(
                (e.reason(), e.permanent(), e.quiet()),
                (reason, false, true)
            );
        }
        for (e, reason) in [
            (ReconcileError::UnreadableSpec("x".into()), "InvalidSpec"),
            (ReconcileError::NotAllowed("x".into()), "NotAllowed"),
            (
                ReconcileError::SecretRejected {
                    name: "db-x".into(),
                    message: "m".into(),
                },
                "SecretRejected",
            ),
        ] {
            assert_eq!(
                (e.reason(), e.permanent(), e.quiet(), e.next()),
                (reason, true, false, Next::AwaitChange)
            );
        }
    }

    #[test]
    fn namespace_termination_is_read_from_the_cause_not_the_message() {
        assert!(api_error(403, Some("NamespaceTerminating")).namespace_terminating());
        assert!(!api_error(403, None).namespace_terminating());
        assert!(!ReconcileError::NameConflict("x".into()).namespace_terminating());
    }
}
