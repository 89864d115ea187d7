//! Annotation mode: `annotated::rules::plan` on an arbitrary Secret (as JSON,
//! the way the webhook and the API hand it over), as a CREATE and as an
//! UPDATE of itself.
#![no_main]

use k8s_openapi::api::core::v1::Secret;
use libfuzzer_sys::fuzz_target;
use randomsecret::annotated::rules::{Plan, ROTATE, ROTATED, plan, value_of as value};

fuzz_target!(|data: &[u8]| {
    let Ok(secret) = serde_json::from_slice::<Secret>(data) else {
        return;
    };
    let first = plan(&secret, None);
    match &first {
        Plan::Invalid(why) => {
            // What to fix, never a value: no stored value of 8+ bytes is quoted.
            for v in secret.data.iter().flatten().map(|(_, v)| v.0.as_slice()) {
                if v.len() >= 8 {
                    if let Ok(v) = std::str::from_utf8(v) {
                        assert!(!why.contains(v), "a value in the message: {why}");
                    }
                }
            }
        }
        Plan::Fill(f) => {
            if !f.is_rotation() {
                for k in f.keys() {
                    assert!(
                        value(&secret, k).is_none_or(<[u8]>::is_empty),
                        "would overwrite {k}"
                    );
                }
            }
            // Idempotent: the filled Secret needs nothing more (small
            // values only and no RSA key or bcrypt, for speed).
            if !f.costly() && f.size() <= 65536 {
                let mut done = secret.clone();
                let values = f.values().expect("OS random source");
                for (k, v) in values {
                    if let Some(sd) = done.string_data.as_mut() {
                        sd.remove(&k);
                    }
                    done.data.get_or_insert_default().insert(k, v);
                }
                if let Some(t) = f.rotated() {
                    done.metadata
                        .annotations
                        .get_or_insert_default()
                        .insert(ROTATED.into(), t.into());
                }
                assert_eq!(plan(&done, None), Plan::Complete, "not idempotent");
            }
        }
        Plan::NotManaged | Plan::Complete | Plan::Refused(_) => {}
    }
    // Deterministic (a fill's values differ, its shape does not).
    let again = plan(&secret, None);
    match (&first, &again) {
        (Plan::Fill(a), Plan::Fill(b)) => assert_eq!(a.keys(), b.keys()),
        (a, b) => assert_eq!(a, b),
    }
    // An UPDATE of itself copies nothing it already has.
    if let Plan::Fill(f) = plan(&secret, Some(&secret)) {
        assert!(f.copied_keys().count() == 0, "copied a key it already has");
    }
    // An UPDATE to a manifest without the rotation token (kubectl replace,
    // helm upgrade --force) never rotates.
    let mut without = secret.clone();
    if let Some(a) = without.metadata.annotations.as_mut() {
        a.remove(ROTATE);
        a.remove(ROTATED);
    }
    if let Plan::Fill(f) = plan(&without, Some(&secret)) {
        assert!(!f.is_rotation(), "rotated without a token");
    }
});
