//! Kubernetes Events (events.k8s.io/v1) about RandomSecrets, posted in the
//! background, each once.
//!
//! Not kube-runtime's `Recorder`: it keeps every Event it sent for six minutes
//! (to patch a repeat into a series) and scans that cache on every publish. At
//! 10,000 new versions that is megabytes held and quadratic work, for Events
//! that never repeat: each names its own Secret, and a Warning is sent only
//! when the Stalled reason changes.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};
use tracing::warn;

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

#[derive(Clone)]
pub struct Events {
    client: Client,
    controller: String,
    instance: String,
}

impl Events {
    /// `instance`: this replica (the pod name), defaulting to `controller`.
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        Events {
            client,
            controller: controller.to_string(),
            instance: instance.unwrap_or_else(|| controller.to_string()),
        }
    }

    /// The Event, named like kubectl's and client-go's (`<object>.<hex time>`).
    pub fn build(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) -> Event {
        let now = k8s_openapi::jiff::Timestamp::now();
        Event {
            metadata: ObjectMeta {
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(&self.controller),
                    now.as_nanosecond()
                )),
                namespace: regarding.namespace.clone(),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some(action.to_string()),
            reason: Some(reason.to_string()),
            note: Some(note),
            type_: Some(format!("{type_:?}")),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            regarding: Some(regarding),
            ..Default::default()
        }
    }

    /// Posts the Event without waiting for it: Events are best effort, and a
    /// reconcile (a rotation, say) should not wait for one.
    pub fn publish(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let ev = self.build(regarding, type_, reason, action, note);
        let api: Api<Event> = Api::namespaced(
            self.client.clone(),
            ev.metadata.namespace.as_deref().unwrap_or("default"),
        );
        tokio::spawn(async move {
            if let Err(e) = api.create(&PostParams::default(), &ev).await {
                warn!(error = %e, "publishing event");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn builds_a_complete_events_v1_event() {
        // A client is needed to construct Events, not to build one.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let events = Events::new(Client::try_from(config).unwrap(), "randomsecret", None);
        let regarding = ObjectReference {
            api_version: Some("randomsecret.io/v1".into()),
            kind: Some("RandomSecret".into()),
            name: Some("db".into()),
            namespace: Some("shop".into()),
            ..Default::default()
        };
        let ev = events.build(
            regarding,
            EventType::Warning,
            "Bad",
            "Validate",
            "fix it".into(),
        );
        assert!(ev.metadata.name.as_deref().unwrap().starts_with("db."));
        assert_eq!(ev.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(ev.type_.as_deref(), Some("Warning"));
        assert_eq!(ev.reporting_instance.as_deref(), Some("randomsecret"));
        assert_eq!(ev.reporting_controller.as_deref(), Some("randomsecret"));
        assert!(ev.event_time.is_some() && ev.regarding.is_some());
    }
}
