//! Pure decisions of the Vault push: the path, the data to write, whether a
//! path is ours, what to write (if anything) and what to do on deletion.

use super::client::{Current, Metadata};
use crate::api::MANAGED_BY;
use crate::api::push::{DeletionPolicy, VaultPushStatus, VaultVersion};
use std::collections::BTreeMap;

/// Custom metadata keys that mark a path as ours.
pub const META_MANAGED_BY: &str = "managed-by";
pub const META_NAMESPACE: &str = "source-namespace";
pub const META_NAME: &str = "source-name";
pub const META_UID: &str = "source-uid";
pub const META_SECRET: &str = "secret-name";
/// Which installation wrote the mark: an HMAC under the controller's proof
/// key over the RandomSecret's namespace and name ([`owner_fields`]). Two
/// clusters (or two installations) that share one Vault never take each
/// other's paths, and no one without the key can write a mark of ours.
pub const META_OWNER: &str = "owner-proof";
/// The proof domain of [`META_OWNER`].
pub const OWNER_DOMAIN: &str = "vault-path-owner";

/// The fields [`META_OWNER`] is a proof over.
pub fn owner_fields<'a>(namespace: &'a str, name: &'a str) -> [&'a str; 2] {
    [namespace, name]
}

/// How many Secret versions status.push.vault maps to KV versions.
pub const VERSIONS_KEPT: usize = 10;

/// The RandomSecret a push is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    /// This installation's [`META_OWNER`] for namespace/name.
    pub owner: &'a str,
}

/// The path below the mount: `prefix/path`, both templates; None when a
/// segment would be empty, '.' or '..', or a character is not allowed.
pub fn path(prefix: &str, path: Option<&str>, src: &Source) -> Option<String> {
    let fill = |t: &str| {
        t.replace("{namespace}", src.namespace)
            .replace("{name}", src.name)
    };
    let full = format!(
        "{}/{}",
        fill(prefix).trim_matches('/'),
        fill(path.unwrap_or("{name}")).trim_matches('/')
    );
    let valid = full.split('/').all(|s| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    });
    valid.then_some(full)
}

/// The data to write: the selected keys (default all), renamed with the
/// prefix. Err names a selected key the version does not have.
pub fn data(
    secret: &BTreeMap<String, String>,
    keys: Option<&[String]>,
    prefix: Option<&str>,
) -> Result<BTreeMap<String, String>, String> {
    let prefix = prefix.unwrap_or("");
    match keys {
        None => Ok(secret
            .iter()
            .map(|(k, v)| (format!("{prefix}{k}"), v.clone()))
            .collect()),
        Some(keys) => keys
            .iter()
            .map(|k| {
                secret
                    .get(k)
                    .map(|v| (format!("{prefix}{k}"), v.clone()))
                    .ok_or_else(|| k.clone())
            })
            .collect(),
    }
}

/// The most data one push writes (keys and values): far above what a
/// Secret of credentials holds, and small enough that no RandomSecret can
/// make a shared server slow for everyone else.
pub const MAX_PAYLOAD: usize = 256 << 10;

/// The size of the data to write, keys and values.
pub fn payload_size(data: &BTreeMap<String, String>) -> usize {
    data.iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// The custom metadata that marks the path as ours, naming the version.
pub fn ours(src: &Source, secret_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (META_MANAGED_BY.into(), MANAGED_BY.into()),
        (META_NAMESPACE.into(), src.namespace.into()),
        (META_NAME.into(), src.name.into()),
        (META_UID.into(), src.uid.into()),
        (META_SECRET.into(), secret_name.into()),
        (META_OWNER.into(), src.owner.into()),
    ])
}

/// Whether existing metadata marks the path as ours: written by this
/// installation (its owner proof) for this namespace/name (a RandomSecret
/// deleted with Retain and made again takes its path back, as it adopts its
/// Secrets). A mark written before owner proofs (none) is ours only if it
/// names this very RandomSecret (its uid): another cluster's RandomSecret of
/// the same namespace and name has another uid. Such a mark is rewritten
/// with the proof ([`needs_mark`]).
pub fn is_ours(meta: &Metadata, src: &Source) -> bool {
    let custom = meta.custom_metadata.as_ref();
    let get = |k: &str| custom.and_then(|c| c.get(k)).map(String::as_str);
    let owned = match get(META_OWNER) {
        Some(owner) => owner == src.owner,
        None => get(META_UID) == Some(src.uid),
    };
    get(META_MANAGED_BY) == Some(MANAGED_BY)
        && get(META_NAMESPACE) == Some(src.namespace)
        && get(META_NAME) == Some(src.name)
        && owned
}

/// Whether a path of ours needs its mark written again: it names another
/// version, or has no owner proof yet (written before them).
pub fn needs_mark(meta: Option<&Metadata>, src: &Source, secret_name: &str) -> bool {
    let custom = meta.and_then(|m| m.custom_metadata.as_ref());
    let get = |k: &str| custom.and_then(|c| c.get(k)).map(String::as_str);
    get(META_SECRET) != Some(secret_name) || get(META_OWNER) != Some(src.owner)
}

/// What to do with the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The path exists and is someone else's: never written.
    NotManaged,
    /// The newest KV version holds the data already: nothing is written.
    UpToDate { kv_version: u64 },
    /// Write one new KV version with check-and-set `cas`. `claim`: mark the
    /// path as ours first (a new path). `drift`: the values were changed in
    /// Vault by hand (the version did not change): written back, with a Warning.
    Write { cas: u64, claim: bool, drift: bool },
}

/// Compares first: a resync, a restart or a leader change writes nothing.
pub fn decide(
    meta: Option<&Metadata>,
    current: Option<&Current>,
    desired: &BTreeMap<String, String>,
    src: &Source,
    secret_name: &str,
) -> Decision {
    let Some(meta) = meta else {
        return Decision::Write {
            cas: 0,
            claim: true,
            drift: false,
        };
    };
    if !is_ours(meta, src) {
        return Decision::NotManaged;
    }
    let newest = current.filter(|c| c.version == meta.current_version || meta.current_version == 0);
    if let Some(Current {
        version,
        data: Some(data),
    }) = newest
        && data == desired
    {
        return Decision::UpToDate {
            kv_version: *version,
        };
    }
    let recorded = meta
        .custom_metadata
        .as_ref()
        .and_then(|c| c.get(META_SECRET));
    // Drift: the same version, the same keys, other values. Other keys
    // come from a change of spec.push (keys, keyPrefix), not from a hand edit.
    Decision::Write {
        cas: meta.current_version,
        claim: false,
        drift: recorded.map(String::as_str) == Some(secret_name)
            && newest
                .and_then(|c| c.data.as_ref())
                .is_some_and(|d| d.keys().eq(desired.keys())),
    }
}

/// Whether an unmarked path is our own first write, interrupted before its
/// mark (the data is written first, with check-and-set 0, then the mark):
/// version 1, no custom metadata at all, and exactly the data we would
/// write, including generated values (`random`: those no one else could
/// have written; static values alone prove nothing).
pub fn interrupted_claim(
    meta: Option<&Metadata>,
    current: Option<&Current>,
    desired: &BTreeMap<String, String>,
    random: bool,
) -> bool {
    random
        && meta.is_some_and(|m| {
            m.current_version == 1 && m.custom_metadata.as_ref().is_none_or(|c| c.is_empty())
        })
        && current.is_some_and(|c| c.version == 1 && c.data.as_ref() == Some(desired))
}

/// On deletion of the RandomSecret: whether to remove the path.
pub fn delete_on_cleanup(policy: DeletionPolicy, orphan: bool, skip: bool) -> bool {
    policy == DeletionPolicy::Delete && !orphan && !skip
}

/// The status after `secret_name` is held by `kv_version` at `path`.
pub fn status(
    previous: Option<&VaultPushStatus>,
    connection: &str,
    path: &str,
    secret_name: &str,
    kv_version: u64,
) -> VaultPushStatus {
    let same_target = previous.filter(|p| p.connection == connection && p.path == path);
    let mut versions = vec![VaultVersion {
        secret_name: secret_name.into(),
        kv_version,
    }];
    versions.extend(
        same_target
            .iter()
            .flat_map(|p| p.versions.iter())
            .filter(|v| v.kv_version != kv_version)
            .cloned(),
    );
    versions.truncate(VERSIONS_KEPT);
    VaultPushStatus {
        connection: connection.into(),
        path: path.into(),
        versions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Source = Source {
        namespace: "team",
        name: "db",
        uid: "u1",
        owner: "v1.this-installation",
    };

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn meta(version: u64, custom: Option<BTreeMap<String, String>>) -> Metadata {
        Metadata {
            current_version: version,
            custom_metadata: custom,
        }
    }

    #[test]
    fn paths_fill_templates_and_refuse_escapes() {
        assert_eq!(
            path("randomsecret/{namespace}", None, &SRC).as_deref(),
            Some("randomsecret/team/db")
        );
        assert_eq!(
            path("/p/", Some("apps/{name}-{namespace}"), &SRC).as_deref(),
            Some("p/apps/db-team")
        );
        assert_eq!(path("p", Some("../x"), &SRC), None);
        assert_eq!(path("p", Some("a//b"), &SRC), None);
        assert_eq!(path("p?x", None, &SRC), None);
    }

    #[test]
    fn the_payload_counts_keys_and_values() {
        assert_eq!(payload_size(&map(&[("ab", "123"), ("c", "")])), 6);
        let big = map(&[("k", &"x".repeat(MAX_PAYLOAD))]);
        assert!(payload_size(&big) > MAX_PAYLOAD);
    }

    #[test]
    fn data_selects_and_prefixes_keys() {
        let s = map(&[("a", "1"), ("b", "2")]);
        assert_eq!(data(&s, None, None).unwrap(), s);
        assert_eq!(
            data(&s, Some(&["b".into()]), Some("DB_")).unwrap(),
            map(&[("DB_b", "2")])
        );
        assert_eq!(data(&s, Some(&["c".into()]), None).unwrap_err(), "c");
    }

    #[test]
    fn a_new_path_is_claimed_then_written_with_cas_zero() {
        assert_eq!(
            decide(None, None, &map(&[("a", "1")]), &SRC, "db-1"),
            Decision::Write {
                cas: 0,
                claim: true,
                drift: false
            }
        );
    }

    #[test]
    fn equal_data_writes_nothing() {
        let m = meta(3, Some(ours(&SRC, "db-1")));
        let c = Current {
            version: 3,
            data: Some(map(&[("a", "1")])),
        };
        assert_eq!(
            decide(Some(&m), Some(&c), &map(&[("a", "1")]), &SRC, "db-1"),
            Decision::UpToDate { kv_version: 3 }
        );
    }

    #[test]
    fn a_new_version_or_a_revert_is_one_cas_write() {
        let m = meta(3, Some(ours(&SRC, "db-1")));
        let c = Current {
            version: 3,
            data: Some(map(&[("a", "1")])),
        };
        // The current version changed (a rotation, or a revert to older values).
        assert_eq!(
            decide(Some(&m), Some(&c), &map(&[("a", "2")]), &SRC, "db-2"),
            Decision::Write {
                cas: 3,
                claim: false,
                drift: false
            }
        );
        // Same version, other values in Vault: changed by hand.
        assert_eq!(
            decide(Some(&m), Some(&c), &map(&[("a", "2")]), &SRC, "db-1"),
            Decision::Write {
                cas: 3,
                claim: false,
                drift: true
            }
        );
        // Same version, other keys (spec.push.vault.keys or keyPrefix
        // changed): written, but no hand edit to report.
        assert_eq!(
            decide(Some(&m), Some(&c), &map(&[("DB_a", "1")]), &SRC, "db-1"),
            Decision::Write {
                cas: 3,
                claim: false,
                drift: false
            }
        );
        // A deleted newest version is written again (no drift to report).
        let gone = Current {
            version: 3,
            data: None,
        };
        assert_eq!(
            decide(Some(&m), Some(&gone), &map(&[("a", "1")]), &SRC, "db-1"),
            Decision::Write {
                cas: 3,
                claim: false,
                drift: false
            }
        );
    }

    #[test]
    fn a_path_of_someone_else_is_never_written() {
        let c = Current {
            version: 1,
            data: Some(map(&[("a", "1")])),
        };
        for custom in [
            None,
            Some(map(&[("owner", "ci")])),
            Some(ours(
                &Source {
                    namespace: "other",
                    ..SRC
                },
                "db-1",
            )),
        ] {
            assert_eq!(
                decide(
                    Some(&meta(1, custom.clone())),
                    Some(&c),
                    &map(&[("a", "1")]),
                    &SRC,
                    "db-1"
                ),
                Decision::NotManaged,
                "{custom:?}"
            );
        }
        // Our own path, from a RandomSecret of the same name made again: ours.
        let again = ours(&Source { uid: "u0", ..SRC }, "db-1");
        assert!(is_ours(&meta(1, Some(again)), &SRC));
    }

    /// Two clusters, one Vault: a RandomSecret of the same namespace and
    /// name in another cluster (another proof key) marks the path with its
    /// own owner proof; the path is not ours, never written nor deleted.
    #[test]
    fn another_installations_path_is_not_ours() {
        let c = Current {
            version: 1,
            data: Some(map(&[("a", "1")])),
        };
        let theirs = ours(
            &Source {
                uid: "other-cluster-uid",
                owner: "v1.other-installation",
                ..SRC
            },
            "db-1",
        );
        let m = meta(1, Some(theirs));
        assert!(!is_ours(&m, &SRC));
        assert_eq!(
            decide(Some(&m), Some(&c), &map(&[("a", "1")]), &SRC, "db-1"),
            Decision::NotManaged
        );
        // Same uid but another installation's proof: not ours either.
        let forged = ours(
            &Source {
                owner: "v1.forged",
                ..SRC
            },
            "db-1",
        );
        assert!(!is_ours(&meta(1, Some(forged)), &SRC));
    }

    /// A mark written before owner proofs: ours only for the very
    /// RandomSecret it names (uid), then marked again with the proof.
    #[test]
    fn a_mark_without_owner_proof_is_adopted_by_its_own_randomsecret_only() {
        let mut legacy = ours(&SRC, "db-1");
        legacy.remove(META_OWNER);
        let m = meta(1, Some(legacy.clone()));
        assert!(is_ours(&m, &SRC));
        assert!(needs_mark(Some(&m), &SRC, "db-1"));
        let other_cluster = Source {
            uid: "u-elsewhere",
            ..SRC
        };
        assert!(!is_ours(&m, &other_cluster));
        let marked = meta(1, Some(ours(&SRC, "db-1")));
        assert!(!needs_mark(Some(&marked), &SRC, "db-1"));
        assert!(needs_mark(Some(&marked), &SRC, "db-2"));
    }

    #[test]
    fn cleanup_deletes_only_with_delete_and_no_orphan_or_skip() {
        assert!(delete_on_cleanup(DeletionPolicy::Delete, false, false));
        assert!(!delete_on_cleanup(DeletionPolicy::Retain, false, false));
        assert!(!delete_on_cleanup(DeletionPolicy::Delete, true, false));
        assert!(!delete_on_cleanup(DeletionPolicy::Delete, false, true));
    }

    #[test]
    fn status_maps_versions_newest_first_per_target() {
        let s1 = status(None, "c", "m/p", "db-1", 1);
        let s2 = status(Some(&s1), "c", "m/p", "db-2", 2);
        assert_eq!(
            s2.versions
                .iter()
                .map(|v| (v.secret_name.as_str(), v.kv_version))
                .collect::<Vec<_>>(),
            vec![("db-2", 2), ("db-1", 1)]
        );
        // The same KV version again (a resync) is not listed twice.
        assert_eq!(status(Some(&s2), "c", "m/p", "db-2", 2).versions.len(), 2);
        // Another target starts a new list.
        assert_eq!(status(Some(&s2), "c", "m/q", "db-2", 1).versions.len(), 1);
        let many = (1..=15).fold(None, |p: Option<VaultPushStatus>, n| {
            Some(status(p.as_ref(), "c", "m/p", &format!("db-{n}"), n))
        });
        assert_eq!(many.unwrap().versions.len(), VERSIONS_KEPT);
    }

    #[test]
    fn only_our_own_interrupted_first_write_is_taken_as_ours() {
        let desired = map(&[("a", "generated")]);
        let unmarked = Metadata {
            current_version: 1,
            custom_metadata: None,
        };
        let first = Current {
            version: 1,
            data: Some(desired.clone()),
        };
        assert!(interrupted_claim(
            Some(&unmarked),
            Some(&first),
            &desired,
            true
        ));
        // Static values alone prove nothing; other data, a later version or
        // someone's metadata is someone else's path.
        assert!(!interrupted_claim(
            Some(&unmarked),
            Some(&first),
            &desired,
            false
        ));
        let other = Current {
            version: 1,
            data: Some(map(&[("a", "theirs")])),
        };
        assert!(!interrupted_claim(
            Some(&unmarked),
            Some(&other),
            &desired,
            true
        ));
        let second = Metadata {
            current_version: 2,
            custom_metadata: None,
        };
        assert!(!interrupted_claim(
            Some(&second),
            Some(&first),
            &desired,
            true
        ));
        let theirs = Metadata {
            current_version: 1,
            custom_metadata: Some(map(&[("owner", "ci")])),
        };
        assert!(!interrupted_claim(
            Some(&theirs),
            Some(&first),
            &desired,
            true
        ));
        assert!(!interrupted_claim(None, None, &desired, true));
    }
}
