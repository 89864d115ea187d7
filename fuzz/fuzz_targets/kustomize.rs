//! `randomsecret kustomize`: the KRM function, a ResourceList in and out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use randomsecret::gitops::krm_function;

fuzz_target!(|data: &[u8]| {
    // The CLI reads standard input into a String: anything not UTF-8 is refused before parsing.
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((out, _)) = krm_function(input) else {
        return;
    };
    // Its own output goes through unchanged (errors reported in `results` again, alike).
    match krm_function(&out) {
        Ok((again, _)) => assert_eq!(again, out, "not idempotent\ninput:\n{input}"),
        Err(e) => panic!("refuses its own output: {e}\ninput:\n{input}\noutput:\n{out}"),
    }
});
