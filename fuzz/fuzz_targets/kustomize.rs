//! `randomsecret kustomize`: the KRM function, a ResourceList in and out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use randomsecret::gitops::{krm_function, yaml};
use serde_json::Value;

fn has_results(out: &str) -> bool {
    let list: Value = yaml::read(out).expect("the function's output reads back");
    list.get("results").is_some()
}

fuzz_target!(|data: &[u8]| {
    // The CLI reads standard input into a String: anything not UTF-8 is refused before parsing.
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(out) = krm_function(input) else {
        return;
    };
    let out = out.list;
    let again = match krm_function(&out) {
        Ok(again) => again.list,
        Err(e) => panic!("refuses its own output: {e}\ninput:\n{input}\noutput:\n{out}"),
    };
    // Without results (none reported, none passed on), its own output goes
    // through unchanged. With them, not so: only the first problem is
    // reported, and the next run may report the one behind it; but results
    // stay.
    if has_results(&out) {
        assert!(has_results(&again), "results lost\ninput:\n{input}");
    } else {
        assert_eq!(again, out, "not idempotent\ninput:\n{input}");
    }
});
