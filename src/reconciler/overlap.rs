//! Overlap keys (`keys.<k>.previous: true`): a new version also holds the
//! previous version's value of `<k>` under `<k>.previous`, so apps that
//! accept a list of keys (session cookies, token signatures) keep what was
//! issued with the old key valid across a rotation.
//!
//! "Previous" is the version that was current when the new one is created
//! (`status.secretName`), read with one GET at that moment: the controller
//! never caches Secret data. Only that very object counts (the uid the status
//! recorded). If it is gone, or is another object under its name, the new
//! version has no `<k>.previous`: an older value is never put there, and
//! the first version has none either.

use super::{ReconcileError, Subject};
use crate::version::{Version, VersionSpec, previous_key};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use std::collections::BTreeMap;

/// Whether any key of the version asks for overlap.
pub fn wanted(spec: &VersionSpec) -> bool {
    spec.generated.values().any(|g| g.previous)
}

/// The `<k>.previous` entries of a new version, from the previous version's
/// data (None: there is no previous version to take them from).
pub fn entries(
    spec: &VersionSpec,
    previous: Option<&BTreeMap<String, ByteString>>,
) -> BTreeMap<String, ByteString> {
    let Some(previous) = previous else {
        return BTreeMap::new();
    };
    spec.generated
        .iter()
        .filter(|(_, g)| g.previous)
        .filter_map(|(k, _)| Some((previous_key(k), previous.get(k)?.clone())))
        .collect()
}

/// The data of the version that is current until `v` is created, when it
/// still is the object the status recorded (None otherwise, or when no key
/// asks for overlap).
pub async fn previous_data(
    rs: &Subject,
    v: &Version,
    api: &Api<Secret>,
) -> Result<Option<BTreeMap<String, ByteString>>, ReconcileError> {
    if !wanted(&v.spec) {
        return Ok(None);
    }
    let Some(name) = rs
        .status
        .secret_name
        .as_deref()
        .filter(|n| *n != v.secret_name)
    else {
        return Ok(None);
    };
    let read = api
        .get_opt(name)
        .await
        .map_err(ReconcileError::api(format!(
            "reading Secret {name} (the previous version, for overlap keys)"
        )))?;
    Ok(read
        .filter(|s| {
            let m = &s.metadata;
            m.uid.as_deref().is_some_and(|uid| rs.status.recorded(name, uid))
                // A status from before uids were recorded (an upgrade).
                || rs.status.recorded_before_uids(name, m.creation_timestamp.as_ref())
        })
        .and_then(|s| s.data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RandomSecretSpec;

    fn spec(yaml: &str) -> VersionSpec {
        VersionSpec::from_spec(&crate::gitops::yaml::read::<RandomSecretSpec>(yaml).unwrap())
            .unwrap()
    }

    #[test]
    fn only_opted_in_keys_carry_their_previous_value() {
        let s = spec(
            "keys: {session: {length: 8, previous: true}, other: {length: 8}, gone: {length: 4, previous: true}}",
        );
        assert!(wanted(&s));
        let old: BTreeMap<String, ByteString> = [
            ("session".to_string(), ByteString(b"old-session".to_vec())),
            ("other".to_string(), ByteString(b"old-other".to_vec())),
        ]
        .into();
        let e = entries(&s, Some(&old));
        // `gone` was not in the previous version: nothing to carry, no key.
        assert_eq!(
            e,
            BTreeMap::from([(
                "session.previous".to_string(),
                ByteString(b"old-session".to_vec())
            )])
        );
        assert!(entries(&s, None).is_empty(), "no previous version: no key");
        assert!(!wanted(&spec("keys: {a: {length: 8, previous: false}}")));
    }

    #[test]
    fn the_flag_is_part_of_the_name_and_the_previous_key_must_be_free() {
        let on = spec("keys: {k: {length: 8, previous: true}}");
        let off = spec("keys: {k: {length: 8, previous: false}}");
        let absent = spec("keys: {k: {length: 8}}");
        assert_eq!(off.hash(), absent.hash(), "false is the default");
        assert_ne!(on.hash(), absent.hash());
        assert!(
            on.canonical()
                .contains("generate:1:k:8:alphanumeric:0::previous\n")
        );
        let clash = crate::gitops::yaml::read::<RandomSecretSpec>(
            "keys: {k: {length: 8, previous: true}}\nstatic: {k.previous: x}",
        )
        .unwrap();
        assert_eq!(
            VersionSpec::from_spec(&clash),
            Err(crate::version::SpecError::KeyConflict("k.previous".into()))
        );
    }
}
