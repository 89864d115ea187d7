//! `randomsecret resolve`: a YAML stream in, the same stream with references rewritten out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use randomsecret::gitops::resolve_stream;

fuzz_target!(|data: &[u8]| {
    // The CLI reads its input into a String: anything not UTF-8 is refused before parsing.
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((out, _)) = resolve_stream(input) else {
        return;
    };
    // Its own output reads back and goes through unchanged (a RandomSecret
    // keeps its name after the round trip; nothing is left to rewrite).
    match resolve_stream(&out) {
        Ok((again, _)) => assert_eq!(again, out, "resolve is not idempotent\ninput:\n{input}"),
        Err(e) => panic!("resolve refuses its own output: {e}\ninput:\n{input}\noutput:\n{out}"),
    }
});
