//! Rewriting the Secret names a pod spec references, on untyped JSON/YAML
//! values, so that everything else in the object is kept exactly as it was.
//! Used by tracking mode and by the GitOps filters; [`super::SecretRefs`] reads
//! the same fields (a test below checks that the two agree).

use serde_json::Value;

/// Where a pod spec names Secrets: (list, path inside each item).
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

fn rename(slot: Option<&mut Value>, map: &dyn Fn(&str) -> Option<String>, changed: &mut usize) {
    if let Some(Value::String(name)) = slot
        && let Some(new) = map(name)
        && new != *name
    {
        *name = new;
        *changed += 1;
    }
}

fn items<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// Renames every Secret reference in `pod_spec` (a PodSpec as JSON) for which
/// `map` returns a new name; returns how many were changed.
pub fn rewrite_pod_spec(pod_spec: &mut Value, map: &dyn Fn(&str) -> Option<String>) -> usize {
    let mut changed = 0;
    for list in CONTAINER_LISTS {
        for c in items(pod_spec, list) {
            for e in items(c, "env") {
                rename(
                    e.pointer_mut("/valueFrom/secretKeyRef/name"),
                    map,
                    &mut changed,
                );
            }
            for e in items(c, "envFrom") {
                rename(e.pointer_mut("/secretRef/name"), map, &mut changed);
            }
        }
    }
    for v in items(pod_spec, "volumes") {
        rename(v.pointer_mut("/secret/secretName"), map, &mut changed);
        if let Some(p) = v.get_mut("projected") {
            for s in items(p, "sources") {
                rename(s.pointer_mut("/secret/name"), map, &mut changed);
            }
        }
    }
    for r in items(pod_spec, "imagePullSecrets") {
        rename(r.get_mut("name"), map, &mut changed);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renames_every_reference_field_and_nothing_else() {
        let mut spec = json!({
            "containers": [{"name": "db", "image": "db",
                "env": [{"name": "db", "valueFrom": {"secretKeyRef": {"name": "db", "key": "db"}}},
                        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "db", "key": "k"}}}],
                "envFrom": [{"secretRef": {"name": "db"}}, {"configMapRef": {"name": "db"}}]}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "db"}}]}],
            "volumes": [{"name": "db", "secret": {"secretName": "db"}},
                        {"name": "p", "projected": {"sources": [{"secret": {"name": "db"}}, {"configMap": {"name": "db"}}]}},
                        {"name": "c", "configMap": {"name": "db"}}],
            "imagePullSecrets": [{"name": "db"}, {"name": "other"}],
        });
        let n = rewrite_pod_spec(&mut spec, &|s| (s == "db").then(|| "db-v2".to_string()));
        assert_eq!(n, 6);
        let text = spec.to_string();
        assert_eq!(text.matches("db-v2").count(), 6);
        // Container, key, env and volume names, and ConfigMap references stay.
        assert_eq!(spec["containers"][0]["env"][0]["name"], "db");
        assert_eq!(
            spec["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["key"],
            "db"
        );
        assert_eq!(
            spec["containers"][0]["env"][1]["valueFrom"]["configMapKeyRef"]["name"],
            "db"
        );
        assert_eq!(spec["volumes"][2]["configMap"]["name"], "db");
        assert_eq!(spec["imagePullSecrets"][1]["name"], "other");
        // Idempotent.
        assert_eq!(
            rewrite_pod_spec(&mut spec, &|s| (s == "db").then(|| "db-v2".to_string())),
            0
        );
    }
}
