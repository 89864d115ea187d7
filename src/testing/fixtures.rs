//! Fixtures: a RandomSecret `shop/db` and its version Secrets as the
//! apiserver stores them, built by chained calls (`Rs::test().with_x()`),
//! and the answers and statuses the tests compare with.

use super::Harness;
use crate::api::{
    ANNOTATION_CREATED, LABEL_HASH, LABEL_MANAGED_BY, LABEL_NAME, MANAGED_BY, RandomSecretSpec,
};
use crate::cache::Key;
use crate::cache::slim::RandomSecretObject;
use crate::proof::{ANNOTATION_PROOF, ProofKey};
use crate::version::Version;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

pub(crate) const NS: &str = "shop";
pub(crate) const RS_NAME: &str = "db";
pub(crate) const RS_UID: &str = "0f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
/// An earlier RandomSecret of the same name, deleted with its versions orphaned.
pub(crate) const EARLIER_RS_UID: &str = "9f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
pub(crate) const SECRET_UID: &str = "2f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
pub(crate) const OLD_SECRET_UID: &str = "3f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
pub(crate) const REPLICASET_UID: &str = "4f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

pub(crate) const SECRETS: &str = "/api/v1/namespaces/shop/secrets";
pub(crate) const OBJECT: &str = "/apis/randomsecret.io/v1/namespaces/shop/randomsecrets/db";
pub(crate) const STATUS: &str = "/apis/randomsecret.io/v1/namespaces/shop/randomsecrets/db/status";

pub(crate) fn key() -> Key {
    Key::new(NS, RS_NAME)
}

/// The controller's proof key in every test (fixtures sign with it).
pub(crate) fn proof_key() -> ProofKey {
    ProofKey::from_bytes(&[7; crate::proof::KEY_LEN]).unwrap()
}

pub(crate) fn owner_ref(uid: &str) -> Value {
    json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "name": RS_NAME, "uid": uid, "controller": true})
}

// ---------------------------------------------------------------- fixtures

/// A RandomSecret `shop/db` as the apiserver stores it.
#[derive(Clone)]
pub(crate) struct Rs {
    pub(crate) spec: Value,
    pub(crate) status: Option<Value>,
    pub(crate) generation: i64,
    pub(crate) resource_version: u64,
    pub(crate) deletion: bool,
    /// More metadata (finalizers, annotations, a deletionTimestamp of its own).
    pub(crate) meta: serde_json::Map<String, Value>,
}

impl Rs {
    /// Two generated keys and a static one; no status yet.
    pub(crate) fn test() -> Self {
        Rs {
            spec: json!({
                "keys": {"password": {"length": 16}, "token": {"length": 8, "charset": "hex"}},
                "static": {"user": "app"},
            }),
            status: None,
            generation: 1,
            resource_version: 100,
            deletion: false,
            meta: Default::default(),
        }
    }

    /// A spec this controller cannot make a version of (a length of 0).
    pub(crate) fn invalid() -> Self {
        Rs {
            spec: json!({"keys": {"password": {"length": 0}}}),
            ..Rs::test()
        }
    }

    /// Being deleted (the garbage collector removes what it owns).
    pub(crate) fn deleting(mut self) -> Self {
        self.deletion = true;
        self
    }

    /// The spec edited by the user: a new generation and resourceVersion.
    pub(crate) fn edited(mut self, spec: &Rs) -> Self {
        self.spec = spec.spec.clone();
        self.generation += 1;
        self.resource_version += 1;
        self
    }

    pub(crate) fn with_rotation(mut self, rotation: &str) -> Self {
        self.spec["rotation"] = json!(rotation);
        self
    }

    pub(crate) fn with_status(mut self, status: Value) -> Self {
        self.status = Some(status);
        self
    }

    pub(crate) fn with_meta(mut self, field: &str, value: Value) -> Self {
        self.meta.insert(field.into(), value);
        self
    }

    /// Pushes to `push` (the `spec.push` object).
    pub(crate) fn with_push(mut self, push: Value) -> Self {
        self.spec["push"] = push;
        self
    }

    /// Deleted `ago` before now (the deletion's wait counts from it).
    pub(crate) fn deleted_ago(self, ago: std::time::Duration) -> Self {
        let at = k8s_openapi::jiff::Timestamp::now() - ago;
        self.deleting()
            .with_meta("deletionTimestamp", json!(at.to_string()))
    }

    pub(crate) fn with_resource_version(mut self, rv: u64) -> Self {
        self.resource_version = rv;
        self
    }

    pub(crate) fn json(&self) -> Value {
        let mut v = json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
            "metadata": {"name": RS_NAME, "namespace": NS, "uid": RS_UID,
                "resourceVersion": self.resource_version.to_string(), "generation": self.generation,
                "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": self.spec,
        });
        if let Some(s) = &self.status {
            v["status"] = s.clone();
        }
        if self.deletion {
            v["metadata"]["deletionTimestamp"] = json!("2026-03-01T00:00:00Z");
        }
        for (k, m) in &self.meta {
            v["metadata"][k] = m.clone();
        }
        v
    }

    /// The version its spec names (computed by the same pure function).
    pub(crate) fn version(&self) -> Version {
        let spec: RandomSecretSpec = serde_json::from_value(self.spec.clone()).unwrap();
        Version::of(&spec, RS_NAME).unwrap()
    }

    /// The apiserver's answer to a status apply of `status`.
    pub(crate) fn applied(&self, status: &Value) -> Value {
        self.clone()
            .with_status(status.clone())
            .with_resource_version(self.resource_version + 1)
            .json()
    }

    /// Delivers it to the cache as a watch event.
    pub(crate) fn cached_in(self, h: &Harness) -> Self {
        let obj: RandomSecretObject = serde_json::from_value(self.json()).unwrap();
        h.caches.randomsecrets.handle(&Event::Apply(obj));
        self
    }
}

/// A version Secret: its metadata (all the cache holds), and its values as
/// a whole read returns them.
#[derive(Clone)]
pub(crate) struct VersionSecret {
    pub(crate) meta: Value,
}

/// The values of every fixture version.
pub(crate) fn data() -> Value {
    json!({"password": "eA=="})
}

impl VersionSecret {
    /// The version `rs` names, created (and signed) by this controller for this RandomSecret.
    pub(crate) fn of(rs: &Rs) -> Self {
        let v = rs.version();
        let mut s = VersionSecret {
            meta: json!({
                "name": v.secret_name, "namespace": NS, "uid": SECRET_UID, "resourceVersion": "50",
                "creationTimestamp": "2026-01-02T00:00:00Z",
                "labels": {LABEL_NAME: RS_NAME, LABEL_HASH: v.hash, LABEL_MANAGED_BY: MANAGED_BY},
                "annotations": {ANNOTATION_CREATED: "2026-01-02T00:00:00.5Z"},
                "ownerReferences": [owner_ref(RS_UID)],
                "finalizers": [crate::api::FINALIZER_IN_USE],
            }),
        };
        // How its values were generated, as every version made since carry-over records.
        let record = crate::version::record::Record {
            lineage: crate::version::carry::Lineage::of(&v.spec),
            rotated: Vec::new(),
            uncarried: false,
            not_after: None,
        };
        s.meta["annotations"][crate::version::record::ANNOTATION_LINEAGE] =
            json!(record.sign(&proof_key(), NS, &v.secret_name));
        let whole = serde_json::from_value(s.whole()).unwrap();
        s.meta["annotations"][ANNOTATION_PROOF] = json!(proof_key().sign(&whole));
        s
    }

    /// Deleted (by a person, by the garbage collector) and Terminating:
    /// a finalizer holds it. The delete wrote it: resourceVersion 60.
    pub(crate) fn terminating(mut self) -> Self {
        self.meta["deletionTimestamp"] = json!("2026-01-03T00:00:00Z");
        self.meta["resourceVersion"] = json!("60");
        self
    }

    /// With these finalizers (a version made before deletion protection has none).
    pub(crate) fn with_finalizers(mut self, finalizers: &[&str]) -> Self {
        self.meta["finalizers"] = json!(finalizers);
        self
    }

    /// Made by someone else, with our labels (and no proof).
    pub(crate) fn unproven(mut self) -> Self {
        self.meta["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(ANNOTATION_PROOF);
        self
    }

    /// With one more annotation (not covered by the proof).
    pub(crate) fn annotated(mut self, name: &str, value: &str) -> Self {
        self.meta["annotations"][name] = json!(value);
        self
    }

    /// As a whole GET returns it.
    pub(crate) fn whole(&self) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": self.meta,
            "type": "Opaque", "immutable": true, "data": data()})
    }

    pub(crate) fn with_uid(mut self, uid: &str) -> Self {
        self.meta["uid"] = json!(uid);
        self
    }

    pub(crate) fn created_at(mut self, second: &str) -> Self {
        self.meta["creationTimestamp"] = json!(format!("{second}Z"));
        self.meta["annotations"][ANNOTATION_CREATED] = json!(format!("{second}.5Z"));
        self
    }

    /// Owned by another RandomSecret object of the same name.
    pub(crate) fn owned_by(mut self, uid: &str) -> Self {
        self.meta["ownerReferences"] = json!([owner_ref(uid)]);
        self
    }

    /// Someone else's Secret that happens to have the version's name.
    pub(crate) fn foreign(mut self) -> Self {
        let m = self.meta.as_object_mut().unwrap();
        for field in ["labels", "annotations", "ownerReferences"] {
            m.remove(field);
        }
        self
    }

    pub(crate) fn name(&self) -> String {
        self.meta["name"].as_str().unwrap().to_string()
    }

    pub(crate) fn hash(&self) -> String {
        self.meta["labels"][LABEL_HASH]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub(crate) fn created(&self) -> Value {
        self.meta["creationTimestamp"].clone()
    }

    /// As a metadata GET or PATCH returns it.
    pub(crate) fn metadata_response(&self) -> Value {
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": self.meta})
    }

    /// Delivers it to the cache as an event of the metadata-only watch.
    pub(crate) fn cached_in(self, h: &Harness) -> Self {
        let metadata: ObjectMeta = serde_json::from_value(self.meta.clone()).unwrap();
        h.caches.secrets.handle(&Event::Apply(PartialObjectMeta {
            metadata,
            ..Default::default()
        }));
        self
    }
}

/// The status this controller writes when `current` is Ready, as stored.
pub(crate) fn ready_status(current: &VersionSecret, released: &[String]) -> Value {
    let name = current.name();
    let not = |t: &str| json!({"type": t, "status": "False", "reason": "VersionReady", "message": "", "observedGeneration": 1, "lastTransitionTime": "2026-01-02T00:00:01Z"});
    json!({
        "observedGeneration": 1,
        "secretName": name,
        "versions": [{"name": name, "hash": current.hash(), "created": current.created(), "uid": current.meta["uid"], "state": "current", "referencedBy": []}],
        "released": released,
        "liveVersions": 1,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "VersionReady",
                "message": format!("Secret {name} is the current version"),
                "observedGeneration": 1, "lastTransitionTime": "2026-01-02T00:00:01Z"},
            not("Reconciling"),
            not("Stalled"),
        ],
    })
}

/// An apiserver error response.
pub(crate) fn failure(code: u16, reason: &str, message: &str, causes: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
        "details": {"kind": "secrets", "causes": causes}})
}

/// What the apiserver makes of a Secret create: the body, stored.
pub(crate) fn stored(mut body: Value, uid: &str, created: &str) -> Value {
    let m = &mut body["metadata"];
    m["uid"] = json!(uid);
    m["resourceVersion"] = json!("60");
    m["creationTimestamp"] = json!(created);
    body
}

/// The condition of `type_` in a status.
pub(crate) fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {status}"))
}

/// (status, reason) of each of Ready, Reconciling, Stalled.
pub(crate) fn conditions(status: &Value) -> Vec<(String, String)> {
    ["Ready", "Reconciling", "Stalled"]
        .iter()
        .map(|t| {
            let c = condition(status, t);
            (
                c["status"].as_str().unwrap().to_string(),
                c["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// A hasher under which every key shares one hash: the caches keyed by
/// hashes must stay right when keys collide.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Collide;

impl std::hash::BuildHasher for Collide {
    type Hasher = Collide;
    fn build_hasher(&self) -> Collide {
        Collide
    }
}

impl std::hash::Hasher for Collide {
    fn finish(&self) -> u64 {
        7
    }
    fn write(&mut self, _: &[u8]) {}
}
