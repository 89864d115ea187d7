//! Which RandomSecrets have push work: those with `spec.push` or our
//! finalizer. A push is due when what it depends on changes (spec, deletion,
//! the current version, the finalizer), not on the push's own status writes.

use crate::api::push::{CLUSTERS_FINALIZER, VAULT_FINALIZER};
use crate::cache::Key;
use crate::cache::slim::RandomSecretObject;
use kube::runtime::watcher::Event;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

#[derive(Default)]
pub struct Index(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    /// What each push depends on (hashed), and whether it has cluster work
    /// (`spec.push.clusters`, or the cluster push's finalizer).
    map: HashMap<Key, (u64, bool)>,
    /// Keys seen since the current (re)list began: what it did not list is gone.
    relisting: Option<std::collections::HashSet<Key>>,
}

/// What a push depends on, hashed, and whether it has cluster work;
/// None: no push work.
fn fingerprint(obj: &RandomSecretObject) -> Option<(u64, bool)> {
    let m = &obj.metadata;
    let ours = |name: &str| m.finalizers.iter().flatten().any(|f| f == name);
    let finalizer = ours(VAULT_FINALIZER) || ours(CLUSTERS_FINALIZER);
    let push = obj.spec.get("push").is_some_and(|p| !p.is_null());
    if !push && !finalizer {
        return None;
    }
    let clusters = ours(CLUSTERS_FINALIZER)
        || obj
            .spec
            .get("push")
            .and_then(|p| p.get("clusters"))
            .and_then(|c| c.as_array())
            .is_some_and(|c| !c.is_empty());
    let status = obj.status.as_ref();
    let field = |k: &str| status.and_then(|s| s.get(k)).map(|v| v.to_string());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        &m.uid,
        m.generation,
        push,
        m.deletion_timestamp.is_some(),
        m.finalizers.as_ref(),
        field("secretName"),
        field("observedGeneration"),
    )
        .hash(&mut h);
    Some((h.finish(), clusters))
}

impl Index {
    /// Applies one watch event of the RandomSecrets; returns the keys to push.
    pub fn handle(&self, ev: &Event<RandomSecretObject>) -> Vec<Key> {
        let mut inner = self.0.lock().expect("push index lock");
        let Inner { map, relisting } = &mut *inner;
        match ev {
            Event::InitApply(obj) | Event::Apply(obj) => {
                let key = Key::of(&obj.metadata);
                if let (Event::InitApply(_), Some(seen)) = (ev, relisting.as_mut()) {
                    seen.insert(key.clone());
                }
                match fingerprint(obj) {
                    None => {
                        map.remove(&key);
                        Vec::new()
                    }
                    Some(f) => {
                        if map.insert(key.clone(), f) == Some(f) {
                            Vec::new()
                        } else {
                            vec![key]
                        }
                    }
                }
            }
            Event::Delete(obj) => {
                // Gone: a cluster push forgets what it recorded of it.
                let key = Key::of(&obj.metadata);
                match map.remove(&key) {
                    Some((_, true)) => vec![key],
                    _ => Vec::new(),
                }
            }
            Event::Init => {
                *relisting = Some(Default::default());
                Vec::new()
            }
            Event::InitDone => {
                if let Some(seen) = relisting.take() {
                    map.retain(|k, _| seen.contains(k));
                }
                Vec::new()
            }
        }
    }

    /// Whether RandomSecret `key` has cluster work (`push::clusters`).
    pub fn wants_clusters(&self, key: &Key) -> bool {
        self.0
            .lock()
            .expect("push index lock")
            .map
            .get(key)
            .is_some_and(|(_, c)| *c)
    }

    /// Every RandomSecret with push work (on taking over the lead).
    pub fn keys(&self) -> Vec<Key> {
        self.0
            .lock()
            .expect("push index lock")
            .map
            .keys()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(
        spec: serde_json::Value,
        status: serde_json::Value,
        finalizers: &[&str],
    ) -> RandomSecretObject {
        serde_json::from_value(json!({
            "apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
            "metadata": {"name": "a", "namespace": "n", "uid": "u", "generation": 1,
                         "finalizers": finalizers},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn pushes_on_what_it_depends_on_not_on_its_own_status() {
        let idx = Index::default();
        let push = json!({"keys": {"k": {"length": 4}}, "push": {"vault": {"connectionRef": {"name": "c"}}}});
        let plain = json!({"keys": {"k": {"length": 4}}});
        assert!(
            idx.handle(&Event::Apply(obj(plain.clone(), json!({}), &[])))
                .is_empty()
        );
        assert_eq!(
            idx.handle(&Event::Apply(obj(push.clone(), json!({}), &[])))
                .len(),
            1
        );
        // The version became current: push.
        let v1 = json!({"secretName": "a-1", "observedGeneration": 1});
        assert_eq!(
            idx.handle(&Event::Apply(obj(push.clone(), v1.clone(), &[])))
                .len(),
            1
        );
        // The push's own status write changes nothing it depends on.
        let mut written = v1.clone();
        written["push"] = json!({"vault": {"connection": "c", "path": "p", "versions": []}});
        assert!(
            idx.handle(&Event::Apply(obj(push.clone(), written, &[])))
                .is_empty()
        );
        // The finalizer appeared: push (the first push waits for it).
        assert_eq!(
            idx.handle(&Event::Apply(obj(push, v1.clone(), &[VAULT_FINALIZER])))
                .len(),
            1
        );
        // push removed, finalizer still there: work (remove the finalizer).
        assert_eq!(
            idx.handle(&Event::Apply(obj(
                plain.clone(),
                v1.clone(),
                &[VAULT_FINALIZER]
            )))
            .len(),
            1
        );
        // Neither: forgotten.
        assert!(
            idx.handle(&Event::Apply(obj(plain, v1.clone(), &[])))
                .is_empty()
        );
        assert!(idx.keys().is_empty());
        // A relist that no longer lists an object forgets it.
        let f = json!({"keys": {"k": {"length": 4}}, "push": {"vault": {"connectionRef": {"name": "c"}}}});
        idx.handle(&Event::Apply(obj(f, v1, &[VAULT_FINALIZER])));
        assert_eq!(idx.keys().len(), 1);
        idx.handle(&Event::Init);
        idx.handle(&Event::InitDone);
        assert!(idx.keys().is_empty(), "gone during a watch gap");
    }

    #[test]
    fn cluster_work_is_a_target_or_the_cluster_finalizer() {
        let idx = Index::default();
        let key = Key::new("n", "a");
        let vault = json!({"push": {"vault": {"connectionRef": {"name": "c"}}}});
        let clusters = json!({"push": {"clusters": [{"connectionRef": {"name": "east"}}]}});
        idx.handle(&Event::Apply(obj(
            vault.clone(),
            json!({}),
            &[VAULT_FINALIZER],
        )));
        assert!(!idx.wants_clusters(&key));
        assert_eq!(
            idx.handle(&Event::Apply(obj(clusters, json!({}), &[])))
                .len(),
            1
        );
        assert!(idx.wants_clusters(&key));
        // Target removed, its finalizer left: still work (remove it).
        let finalizer = CLUSTERS_FINALIZER;
        assert_eq!(
            idx.handle(&Event::Apply(obj(json!({}), json!({}), &[finalizer])))
                .len(),
            1
        );
        assert!(idx.wants_clusters(&key));
        idx.handle(&Event::Apply(obj(json!({}), json!({}), &[])));
        assert!(!idx.wants_clusters(&key));
        // Deleted with cluster work: its key goes out once more (to forget it).
        let clusters = json!({"push": {"clusters": [{"connectionRef": {"name": "east"}}]}});
        idx.handle(&Event::Apply(obj(clusters.clone(), json!({}), &[])));
        assert_eq!(
            idx.handle(&Event::Delete(obj(clusters, json!({}), &[]))),
            vec![key.clone()]
        );
        assert!(
            idx.handle(&Event::Delete(obj(json!({}), json!({}), &[])))
                .is_empty()
        );
    }
}
