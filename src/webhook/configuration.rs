//! The MutatingWebhookConfiguration's caBundle: whether it carries the
//! stored bundle, and the JSONPatch that makes it so (pure).

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, TestOperation};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;

/// Whether every webhook of the configuration trusts exactly `bundle`.
pub fn carries(c: &MutatingWebhookConfiguration, bundle: &[u8]) -> bool {
    let hooks = c.webhooks.as_deref().unwrap_or_default();
    !hooks.is_empty()
        && hooks.iter().all(|w| {
            w.client_config
                .ca_bundle
                .as_ref()
                .is_some_and(|b| b.0 == bundle)
        })
}

/// Sets the caBundle of each webhook that differs; each `add` is guarded
/// by a `test` of the webhook's name at that index, so a concurrent reorder
/// fails the patch instead of writing into the wrong webhook.
pub fn ca_bundle_patch(c: &MutatingWebhookConfiguration, bundle: &[u8]) -> Option<Patch> {
    let mut ops = Vec::new();
    for (i, w) in c.webhooks.iter().flatten().enumerate() {
        if w.client_config
            .ca_bundle
            .as_ref()
            .is_some_and(|b| b.0 == bundle)
        {
            continue;
        }
        let index = i.to_string();
        ops.push(PatchOperation::Test(TestOperation {
            path: PointerBuf::from_tokens(["webhooks", index.as_str(), "name"]),
            value: w.name.clone().into(),
        }));
        ops.push(PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["webhooks", index.as_str(), "clientConfig", "caBundle"]),
            value: serde_json::to_value(k8s_openapi::ByteString(bundle.to_vec())).ok()?,
        }));
    }
    (!ops.is_empty()).then_some(Patch(ops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(bundles: &[Option<&str>]) -> MutatingWebhookConfiguration {
        let hooks: Vec<_> = bundles
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut cc = json!({"url": "https://127.0.0.1/mutate"});
                if let Some(b) = b {
                    cc["caBundle"] = json!(b);
                }
                json!({"name": format!("h{i}.randomsecret.io"), "clientConfig": cc,
                    "sideEffects": "None", "admissionReviewVersions": ["v1"]})
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "c"}, "webhooks": hooks})).unwrap()
    }

    #[test]
    fn only_differing_webhooks_are_patched() {
        // "YQ==" is "a".
        let c = config(&[Some("YQ=="), None]);
        assert!(!carries(&c, b"a"));
        let p = serde_json::to_value(ca_bundle_patch(&c, b"a").unwrap()).unwrap();
        assert_eq!(
            p,
            json!([
                {"op": "test", "path": "/webhooks/1/name", "value": "h1.randomsecret.io"},
                {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "YQ=="},
            ])
        );
        let mut v = serde_json::to_value(&c).unwrap();
        let p: Patch = serde_json::from_value(p).unwrap();
        json_patch::patch(&mut v, &p.0).unwrap();
        let patched: MutatingWebhookConfiguration = serde_json::from_value(v).unwrap();
        assert!(carries(&patched, b"a"));
        assert!(ca_bundle_patch(&patched, b"a").is_none());
        assert!(!carries(&config(&[]), b"a"));
    }
}
