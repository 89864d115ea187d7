//! A signing key's JWKS across versions (pure): the current key's public
//! JWK first, then the public keys of the previous version's JWKS, newest
//! first, up to `keep` of them. So a token signed with a key that was
//! rotated away stays verifiable while its key is among the kept ones.

use super::keypair::Jwk;
use serde_json::{Map, Value, json};

/// The JWKS (compact JSON) of a version whose signing key's public JWK is
/// `current`, given the previous version's JWKS (`None`: no proven
/// previous version, or it had no JWKS for this key). A previous entry
/// with the current key's `kid` is the current key: it is not repeated.
/// Entries are copied as the previous version wrote them.
pub fn next(current: &Jwk, previous: Option<&[u8]>, keep: usize) -> Vec<u8> {
    let mut keys = vec![serde_json::to_value(current).expect("a JWK serializes")];
    keys.extend(
        previous
            .map(entries)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.get("kid").and_then(Value::as_str) != Some(current.kid.as_str()))
            .take(keep)
            .map(Value::Object),
    );
    serde_json::to_vec(&json!({ "keys": keys })).expect("a JWKS serializes")
}

/// The `kid`s of a JWKS, in order.
#[cfg(test)]
fn kids(jwks: &[u8]) -> Vec<String> {
    entries(jwks)
        .iter()
        .filter_map(|e| e.get("kid").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The key objects of a JWKS; none when it does not parse.
fn entries(jwks: &[u8]) -> Vec<Map<String, Value>> {
    let Ok(Value::Object(mut set)) = serde_json::from_slice::<Value>(jwks) else {
        return Vec::new();
    };
    match set.remove("keys") {
        Some(Value::Array(keys)) => keys
            .into_iter()
            .filter_map(|k| match k {
                Value::Object(o) if o.get("kid").is_some_and(Value::is_string) => Some(o),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwk(kid: &str) -> Jwk {
        Jwk {
            kty: "OKP".into(),
            crv: Some("Ed25519".into()),
            x: Some(format!("x-{kid}")),
            y: None,
            n: None,
            e: None,
            kid: kid.into(),
            alg: "EdDSA".into(),
            use_: "sig".into(),
        }
    }

    #[test]
    fn rotations_put_the_new_key_first_and_keep_up_to_keep_old_ones() {
        let v1 = next(&jwk("a"), None, 2);
        assert_eq!(kids(&v1), ["a"]);
        let v2 = next(&jwk("b"), Some(&v1), 2);
        assert_eq!(kids(&v2), ["b", "a"]);
        let v3 = next(&jwk("c"), Some(&v2), 2);
        assert_eq!(kids(&v3), ["c", "b", "a"]);
        let v4 = next(&jwk("d"), Some(&v3), 2);
        assert_eq!(kids(&v4), ["d", "c", "b"]);
        // keep 1: only the last one.
        assert_eq!(kids(&next(&jwk("d"), Some(&v3), 1)), ["d", "c"]);
        assert_eq!(kids(&next(&jwk("d"), Some(&v3), 0)), ["d"]);
    }

    #[test]
    fn a_kept_key_is_not_repeated_and_its_jwks_comes_out_byte_for_byte() {
        let v2 = next(&jwk("b"), Some(&next(&jwk("a"), None, 2)), 2);
        assert_eq!(next(&jwk("b"), Some(&v2), 2), v2);
        // A lower keep drops the oldest.
        assert_eq!(kids(&next(&jwk("b"), Some(&v2), 0)), ["b"]);
    }

    #[test]
    fn previous_entries_are_copied_as_written_and_junk_is_ignored() {
        let prev = br#"{"keys":[{"kid":"old","kty":"EC","extra":1},{"nokid":true},7]}"#;
        let out: Value = serde_json::from_slice(&next(&jwk("new"), Some(prev), 5)).unwrap();
        assert_eq!(
            out["keys"][1],
            json!({"kid": "old", "kty": "EC", "extra": 1})
        );
        assert_eq!(out["keys"].as_array().unwrap().len(), 2);
        assert_eq!(kids(&next(&jwk("new"), Some(b"not json"), 5)), ["new"]);
        // The current key: every member, `use` spelled so.
        assert_eq!(out["keys"][0]["use"], "sig");
        assert_eq!(out["keys"][0]["kid"], "new");
    }
}
