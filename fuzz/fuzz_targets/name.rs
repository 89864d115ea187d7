//! `randomsecret name`: the versioned name of each RandomSecret in a YAML stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use randomsecret::manifests::versioned_names;
use randomsecret::version::hash_alphabet_contains;

/// A DNS-1123 subdomain of at most 253 characters (what the apiserver takes as a Secret name).
fn dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

fuzz_target!(|data: &[u8]| {
    // The CLI reads its input into a String: anything not UTF-8 is refused before parsing.
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(names) = versioned_names(input) else {
        return;
    };
    for name in &names {
        assert!(dns_subdomain(name), "not a Secret name: {name:?}");
        let (base, hash) = name.rsplit_once('-').expect("<base>-<hash>");
        assert!(!base.is_empty(), "{name:?}");
        assert!(
            hash.len() == 10 && hash.chars().all(hash_alphabet_contains),
            "not a version hash: {name:?}"
        );
    }
    assert_eq!(versioned_names(input).ok(), Some(names), "deterministic");
});
