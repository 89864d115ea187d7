//! What an apiserver's error answer (a `Status`) says, decided by its reason
//! as client-go does: the code counts only when the reason is not one
//! Kubernetes defines (an older server, a proxy). kube's `Status::is_*`
//! helpers decide by the reason alone (their code fallback tests the
//! constant, not the answer's reason), so each helper here is kube's plus
//! that fallback. Never by the message's text.

use kube::core::Status;
use kube::core::response::reason;

/// The apiserver's answer to one call, decided.
pub trait Answer {
    /// The object (or its namespace) does not exist.
    fn not_found(&self) -> bool;
    /// A create found the name taken (409 AlreadyExists).
    fn already_exists(&self) -> bool;
    /// A write with a precondition (resourceVersion, uid) lost to another
    /// writer (409 Conflict).
    fn conflict(&self) -> bool;
    /// Either 409: the name was taken or the object moved on.
    fn conflict_or_exists(&self) -> bool {
        self.already_exists() || self.conflict()
    }
    fn forbidden(&self) -> bool;
    /// The credentials were refused (401) or the call was (403).
    fn refused(&self) -> bool;
    /// The object was refused as invalid (422).
    fn invalid(&self) -> bool;
    /// A client error (4xx) other than throttling (429): retrying the same
    /// call cannot help.
    fn client_error(&self) -> bool;
    /// The kind named by the answer's details ("namespaces" when the
    /// namespace is what is missing).
    fn about_kind(&self, kind: &str) -> bool;
    /// A create refused because its namespace is being deleted (403 with
    /// the cause NamespaceTerminating).
    fn namespace_terminating(&self) -> bool;
}

fn or_code(s: &Status, by_reason: bool, code: u16) -> bool {
    by_reason || (!reason::is_known(&s.reason) && s.code == code)
}

impl Answer for Status {
    fn not_found(&self) -> bool {
        or_code(self, self.is_not_found(), 404)
    }
    fn already_exists(&self) -> bool {
        // 409 is Conflict's code too: only the reason tells them apart.
        self.is_already_exists()
    }
    fn conflict(&self) -> bool {
        or_code(self, self.is_conflict(), 409)
    }
    fn forbidden(&self) -> bool {
        or_code(self, self.is_forbidden(), 403)
    }
    fn refused(&self) -> bool {
        self.forbidden() || or_code(self, self.reason == reason::UNAUTHORIZED, 401)
    }
    fn invalid(&self) -> bool {
        or_code(self, self.is_invalid(), 422)
    }
    fn client_error(&self) -> bool {
        (400..500).contains(&self.code) && self.code != 429
    }
    fn about_kind(&self, kind: &str) -> bool {
        self.details.as_ref().is_some_and(|d| d.kind == kind)
    }
    fn namespace_terminating(&self) -> bool {
        self.forbidden()
            && self
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
    }
}

/// The answer, when `e` is one from the apiserver.
pub fn answer(e: &kube::Error) -> Option<&Status> {
    match e {
        kube::Error::Api(s) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) fn recorded(code: u16, reason: &str, kind: &str) -> Status {
    serde_json::from_value(serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "m", "reason": reason, "code": code,
        "details": {"name": "x", "kind": kind},
    }))
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_409_is_a_conflict_or_a_taken_name_by_its_reason() {
        let exists = recorded(409, "AlreadyExists", "secrets");
        assert!(exists.already_exists() && !exists.conflict() && exists.conflict_or_exists());
        let conflict = recorded(409, "Conflict", "secrets");
        assert!(conflict.conflict() && !conflict.already_exists());
        // No reason Kubernetes defines: the code decides (as client-go).
        let bare = recorded(409, "", "");
        assert!(bare.conflict() && !bare.already_exists());
        assert!(recorded(404, "", "").not_found());
        assert!(recorded(401, "Unauthorized", "").refused());
        assert!(recorded(403, "", "").refused());
        assert!(!recorded(404, "NotFound", "").refused());
        assert!(recorded(422, "Invalid", "secrets").invalid());
        // A known reason is never overruled by the code.
        assert!(!recorded(404, "Forbidden", "").not_found());
        assert!(recorded(400, "BadRequest", "").client_error());
        assert!(!recorded(429, "TooManyRequests", "").client_error());
        assert!(!recorded(500, "InternalError", "").client_error());
    }

    /// The answer to an Event's create in a namespace being deleted, as
    /// kube-apiserver 1.34 sends it; a 403 without that cause is not it.
    #[test]
    fn a_create_in_a_namespace_being_deleted_is_told_by_its_cause() {
        let terminating: Status = serde_json::from_str(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"events.events.k8s.io \"x1\" is forbidden: unable to create new content in namespace t1 because it is being terminated","reason":"Forbidden","details":{"name":"x1","group":"events.k8s.io","kind":"events","causes":[{"reason":"NamespaceTerminating","message":"namespace t1 is being terminated","field":"metadata.namespace"}]},"code":403}"#,
        )
        .unwrap();
        assert!(terminating.namespace_terminating());
        assert!(!recorded(403, "Forbidden", "events").namespace_terminating());
        assert!(!recorded(404, "NotFound", "namespaces").namespace_terminating());
    }
}
