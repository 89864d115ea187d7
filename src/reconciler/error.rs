//! The one reconcile error type. Each error knows its condition reason,
//! whether retrying can help, the Event action it belongs to, and what to
//! tell the user; logs, metrics, Events and conditions all say the same thing.

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
    #[error("the operating system's random source failed: {0}")]
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

    /// The condition reason (and the metric label): bounded, never a name.
    pub fn reason(&self) -> &'static str {
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

    /// Whether only a change (of the spec, or of the conflicting Secret) can
    /// help: reported as Stalled, not retried with backoff.
    pub fn permanent(&self) -> bool {
        !matches!(self, ReconcileError::Api { .. } | ReconcileError::Random(_))
    }

    /// When a permanent problem is looked at again without a change
    /// (None: only on a change).
    pub fn recheck(&self) -> Option<Duration> {
        matches!(self, ReconcileError::NameConflict(_)).then_some(CONFLICT_RECHECK)
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
            (spec.reason(), spec.permanent(), spec.recheck()),
            ("NoKeys", true, None)
        );
        assert_eq!(spec.action(), "Validate");
        let lost = ReconcileError::VersionLost("db-x".into());
        assert_eq!(
            (lost.reason(), lost.permanent(), lost.recheck()),
            ("VersionLost", true, None)
        );
        assert!(lost.to_string().contains("spec.rotation"));
        let conflict = ReconcileError::NameConflict("taken".into());
        assert_eq!(conflict.recheck(), Some(CONFLICT_RECHECK));
        let api = api_error(500, None);
        assert_eq!((api.reason(), api.permanent()), ("ApiError", false));
        assert!(api.to_string().starts_with("creating Secret x: "));
    }

    #[test]
    fn namespace_termination_is_read_from_the_cause_not_the_message() {
        assert!(api_error(403, Some("NamespaceTerminating")).namespace_terminating());
        assert!(!api_error(403, None).namespace_terminating());
        assert!(!ReconcileError::NameConflict("x".into()).namespace_terminating());
    }
}
