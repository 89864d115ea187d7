//! The webhook's reader and answer (`webhook::admission::review`) on any
//! body, as anything that reaches the webhook's port could send it, and so
//! annotation mode's parsers on the annotations in it: never a panic, always
//! an allowed answer with the uid the reader found, and the answer's
//! warnings never quote a stored value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use randomsecret::annotated::rules;
use randomsecret::webhook::{admission, review};

fuzz_target!(|data: &[u8]| {
    let read = review::read(data);
    let (answer, _outcome, _dry_run) = admission::review(data, &|ns| ns == "kube-system");
    let out = serde_json::to_value(&answer).expect("an answer serializes");
    assert_eq!(out["response"]["allowed"], true, "a denial");
    assert_eq!(out["response"]["uid"], read.uid.as_str(), "another uid");
    assert!(read.uid.len() <= review::MAX_UID);
    // Warnings name keys and annotation values, never a value of data: any
    // listed value of 8+ bytes the reader kept is absent from them.
    if let Ok(req) = &read.request {
        for o in req.object.iter().chain(req.old_object.iter()) {
            for k in o.listed() {
                if let Some(v) = rules::Object::value(o, &k).filter(|v| v.len() >= 8) {
                    if let Ok(v) = std::str::from_utf8(v) {
                        for w in out["response"]["warnings"].as_array().into_iter().flatten() {
                            assert!(!w.as_str().unwrap_or_default().contains(v), "a value in {w}");
                        }
                    }
                }
            }
            // The annotation parser alone, on what the reader kept.
            if let Some(a) = o.meta.annotations.as_ref() {
                let _ = rules::parse(a);
                let _ = rules::unknown_warnings(&rules::unknown_annotations(&o.meta));
            }
        }
    }
});
