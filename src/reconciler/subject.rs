//! The RandomSecret being reconciled, as read from the cache.

use super::ReconcileError;
use crate::api::RandomSecretSpec;
use crate::cache::previous::Previous;
use crate::cache::randomsecrets::Entry;
use crate::cache::{Key, Uid};
use crate::stamp::claim::Claim;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

#[derive(Clone, Debug)]
pub struct Subject {
    pub key: Key,
    pub uid: Uid,
    pub generation: i64,
    /// Creation time in seconds.
    pub created: i64,
    pub spec: RandomSecretSpec,
    pub status: Previous,
    /// Its unproven claim to be stamped with shared values (`shared`).
    pub shared: Option<Box<Claim>>,
    /// Its shard labels, which its versions carry (`crate::shard`).
    pub shard: crate::shard::ShardLabels,
}

impl Subject {
    /// The RandomSecret as cached, with its spec decoded (a spec that cannot
    /// be read is an error to report, with what else is known).
    pub fn read(key: Key, entry: Entry) -> (Self, Option<ReconcileError>) {
        let spec = entry.spec();
        let labelled = entry.labelled.map(|l| *l);
        let rs = Subject {
            key,
            uid: entry.uid,
            generation: entry.generation,
            created: entry.created,
            spec: RandomSecretSpec::default(),
            status: entry.status,
            shared: labelled
                .as_ref()
                .and_then(|l| l.shared.clone())
                .map(Box::new),
            shard: labelled.map(|l| l.shard).unwrap_or_default(),
        };
        match spec {
            Ok(spec) => (Subject { spec, ..rs }, None),
            // Where, not serde's text: that can quote the value (a static value, say).
            Err(e) => (
                rs,
                Some(ReconcileError::UnreadableSpec(format!(
                    "{:?} error at line {} column {}",
                    e.classify(),
                    e.line(),
                    e.column()
                ))),
            ),
        }
    }

    /// The controller owner reference its versions carry while it owns them.
    pub fn owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: crate::api::API_VERSION.into(),
            kind: "RandomSecret".into(),
            name: self.key.name.to_string(),
            uid: self.uid.to_string(),
            controller: Some(true),
            // blockOwnerDeletion would need update on randomsecrets/finalizers; not needed.
            block_owner_deletion: None,
        }
    }

    /// What Events about it regard.
    pub fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(crate::api::API_VERSION.into()),
            kind: Some("RandomSecret".into()),
            name: Some(self.key.name.to_string()),
            namespace: Some(self.key.ns().to_string()),
            uid: Some(self.uid.to_string()),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::randomsecrets::RandomSecrets;
    use crate::runtime::outcome::Outcome as _;
    use kube::runtime::watcher::Event;

    /// A spec this version cannot read is reported by where it fails, never by
    /// serde's text, which quotes the offending value.
    #[test]
    fn an_unreadable_spec_is_reported_without_its_values() {
        let obj = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db", "namespace": "n", "uid": "6f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"},
            "spec": {"static": {"password": ["hunter2-secret"]}},
        }))
        .unwrap();
        let cache = RandomSecrets::default();
        cache.handle(&Event::Apply(obj));
        let key = Key::new("n", "db");
        let (rs, err) = Subject::read(key.clone(), cache.get(&key).unwrap());
        let err = err.expect("unreadable");
        assert_eq!((rs.key, err.reason()), (key, "InvalidSpec"));
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains("line 1"), "{err}");
    }
}
