//! Carry-over: a generated value changes when, and only when, it is rotated.
//!
//! A new version starts from the values of the version it supersedes: each
//! generated key whose generator is unchanged and that nothing rotated keeps
//! its value. What rotates a key: `spec.rotation`, a new `rotateEvery`
//! period, the key's own `keys.<k>.rotation` or `keys.<k>.rotateEvery`
//! period, or a change of its generator
//! (length, charset, symbols, password rules; bytes' length or encoding; a
//! signing key's algorithm; a key pair's algorithm, size, SSH comment or
//! PEM encoding; a change of kind). A key new to the spec starts fresh. A
//! signing key's `keep` and `jwksKey` change its JWKS, not its private key;
//! a key pair's `publicKey` is where its public key goes, likewise kept.
//! Derived keys (htpasswd lines, templates) are computed anew for every
//! version from its own values: they have no lineage.
//!
//! [`Lineage`] is what that decision needs to know about a version: every
//! version records its own (signed, `crate::version::record`), and the next
//! one is planned from it with [`plan`], a pure function that `name
//! --explain` and `diff` use too.

use super::spec::{Class, Generated, Kind, VersionSpec};
use crate::api::{
    CertificateUsage, Charset, Encoding, KeyAlgorithm, KeyEncoding, SigningAlgorithm,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What decides whether a version's generated values carry over.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    /// `spec.rotation`.
    #[serde(default)]
    pub rotation: String,
    /// The `rotateEvery` period's number, with rotateEvery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// Each generated key's generator.
    #[serde(default)]
    pub keys: BTreeMap<String, KeyLineage>,
}

/// One generated key's generator and its own rotation token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLineage {
    #[serde(flatten)]
    pub generator: GeneratorLineage,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rotation: String,
    /// The number of its own `rotateEvery` period, with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
}

/// What a key generates, as far as keeping its value goes. Untagged, so
/// that the records written before signing keys (a string's fields at the
/// top level) still read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GeneratorLineage {
    SigningKey {
        #[serde(rename = "signingKey")]
        signing_key: SigningLineage,
    },
    SshKeyPair {
        #[serde(rename = "sshKeyPair")]
        ssh_key_pair: PairLineage,
    },
    PrivateKey {
        #[serde(rename = "privateKey")]
        private_key: PairLineage,
    },
    Certificate {
        certificate: CertificateLineage,
    },
    Bytes {
        bytes: BytesLineage,
    },
    Uuid {
        /// Always true: it tells the variant apart.
        uuid: bool,
    },
    Chars {
        length: usize,
        charset: Charset,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        symbols: String,
        /// Password rules: digits, lower, upper, symbols (absent: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<[usize; 4]>,
    },
}

/// Random bytes' generator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytesLineage {
    pub length: usize,
    pub encoding: Encoding,
}

/// A signing key's algorithm, and where its JWKS is (the next version
/// starts its JWKS from that one's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SigningLineage {
    pub algorithm: SigningAlgorithm,
    pub jwks_key: String,
}

/// A key pair's generator: what its private key's bytes depend on (the
/// public key's data key does not count). `comment` is an SSH key's, inside
/// its private key file; `encoding` a PEM private key's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairLineage {
    pub algorithm: KeyAlgorithm,
    pub size: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<KeyEncoding>,
}

/// A certificate's generator: everything its bytes depend on, and where
/// its private key is (kept with it: the next version reads it there).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertificateLineage {
    #[serde(default, rename = "isCA")]
    pub is_ca: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    #[serde(default)]
    pub common_name: String,
    #[serde(default)]
    pub dns_names: Vec<String>,
    #[serde(default)]
    pub ip_addresses: Vec<String>,
    pub usages: Vec<CertificateUsage>,
    pub duration: String,
    pub algorithm: KeyAlgorithm,
    pub size: u32,
    pub private_key: String,
}

impl CertificateLineage {
    /// The first field that differs: (what, from, to).
    fn changed(&self, new: &CertificateLineage) -> Option<(&'static str, String, String)> {
        let fields = |c: &CertificateLineage| {
            [
                ("isCA", c.is_ca.to_string()),
                ("issuer", format!("{:?}", c.issuer.as_deref().unwrap_or(""))),
                ("commonName", format!("{:?}", c.common_name)),
                ("dnsNames", format!("{:?}", c.dns_names)),
                ("ipAddresses", format!("{:?}", c.ip_addresses)),
                (
                    "usages",
                    c.usages
                        .iter()
                        .map(|u| u.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                ("duration", c.duration.clone()),
                ("key", format!("{} {}", c.algorithm.as_str(), c.size)),
            ]
        };
        fields(self)
            .into_iter()
            .zip(fields(new))
            .find(|((_, a), (_, b))| a != b)
            .map(|((what, a), (_, b))| (what, a, b))
    }
}

impl KeyLineage {
    /// `None` for a derived key: it is computed anew, never carried.
    fn of(g: &Generated) -> Option<Self> {
        let generator = match &g.kind {
            Kind::Chars(c) => GeneratorLineage::Chars {
                length: c.length,
                charset: c.charset,
                symbols: c.symbols.clone(),
                min: (!c.min.is_empty()).then_some([
                    c.min.digits,
                    c.min.lower,
                    c.min.upper,
                    c.min.symbols,
                ]),
            },
            Kind::Bytes(b) => GeneratorLineage::Bytes {
                bytes: BytesLineage {
                    length: b.length,
                    encoding: b.encoding,
                },
            },
            Kind::Uuid => GeneratorLineage::Uuid { uuid: true },
            Kind::SigningKey(s) => GeneratorLineage::SigningKey {
                signing_key: SigningLineage {
                    algorithm: s.algorithm,
                    jwks_key: s.jwks_key.clone(),
                },
            },
            Kind::SshKeyPair(p) => GeneratorLineage::SshKeyPair {
                ssh_key_pair: PairLineage {
                    algorithm: p.shape.algorithm,
                    size: p.shape.size,
                    comment: p.comment.clone(),
                    encoding: None,
                },
            },
            Kind::PrivateKey(p) => GeneratorLineage::PrivateKey {
                private_key: PairLineage {
                    algorithm: p.shape.algorithm,
                    size: p.shape.size,
                    comment: String::new(),
                    encoding: Some(p.encoding),
                },
            },
            Kind::Certificate(c) => GeneratorLineage::Certificate {
                certificate: CertificateLineage {
                    is_ca: c.is_ca,
                    issuer: c.issuer.clone(),
                    common_name: c.common_name.clone(),
                    dns_names: c.dns_names.clone(),
                    ip_addresses: c.ip_addresses.clone(),
                    usages: c.usages.clone(),
                    duration: c.duration.clone(),
                    algorithm: c.key.algorithm,
                    size: c.key.size,
                    private_key: c.private_key.clone(),
                },
            },
            Kind::Htpasswd(_) | Kind::Template(_) => return None,
        };
        Some(KeyLineage {
            generator,
            rotation: g.rotation.clone(),
            epoch: g.epoch,
        })
    }
}

impl GeneratorLineage {
    /// What it generates, as a user reads it in a sentence.
    fn describe(&self) -> String {
        match self {
            GeneratorLineage::Chars { .. } => "a random string".into(),
            GeneratorLineage::Bytes { .. } => "bytes".into(),
            GeneratorLineage::Uuid { .. } => "uuid".into(),
            GeneratorLineage::SigningKey { signing_key } => {
                format!("signingKey {}", signing_key.algorithm.as_str())
            }
            GeneratorLineage::SshKeyPair { .. } => "sshKeyPair".into(),
            GeneratorLineage::PrivateKey { .. } => "privateKey".into(),
            GeneratorLineage::Certificate { .. } => "certificate".into(),
        }
    }

    /// Which parameter changed between `self` and `new` such that the value
    /// cannot be kept: (what, from, to). `None`: the value is kept (a
    /// signing key's `keep` and `jwksKey` only change its JWKS).
    fn changed(&self, new: &GeneratorLineage) -> Option<(&'static str, String, String)> {
        use GeneratorLineage as G;
        match (self, new) {
            (
                G::Chars {
                    length: ol,
                    charset: oc,
                    symbols: os,
                    min: om,
                },
                G::Chars {
                    length: nl,
                    charset: nc,
                    symbols: ns,
                    min: nm,
                },
            ) => {
                if ol != nl {
                    Some(("length", ol.to_string(), nl.to_string()))
                } else if oc != nc {
                    Some(("charset", oc.as_str().into(), nc.as_str().into()))
                } else if os != ns {
                    Some(("symbols", symbols(os), symbols(ns)))
                } else {
                    let (o, n) = (om.unwrap_or_default(), nm.unwrap_or_default());
                    Class::ALL
                        .iter()
                        .zip(o.iter().zip(n))
                        .find(|(_, (a, b))| *a != b)
                        .map(|(class, (a, b))| (class.field(), a.to_string(), b.to_string()))
                }
            }
            (G::Bytes { bytes: o }, G::Bytes { bytes: n }) => {
                if o.length != n.length {
                    Some(("bytes.length", o.length.to_string(), n.length.to_string()))
                } else {
                    // Another encoding of the same bytes would be a value
                    // that changed while "kept": the encoding rotates too.
                    (o.encoding != n.encoding).then(|| {
                        (
                            "bytes.encoding",
                            o.encoding.as_str().into(),
                            n.encoding.as_str().into(),
                        )
                    })
                }
            }
            (G::Uuid { .. }, G::Uuid { .. }) => None,
            (G::SigningKey { signing_key: o }, G::SigningKey { signing_key: n }) => {
                (o.algorithm != n.algorithm).then(|| {
                    (
                        "algorithm",
                        o.algorithm.as_str().into(),
                        n.algorithm.as_str().into(),
                    )
                })
            }
            (G::SshKeyPair { ssh_key_pair: o }, G::SshKeyPair { ssh_key_pair: n })
            | (G::PrivateKey { private_key: o }, G::PrivateKey { private_key: n }) => o.changed(n),
            (G::Certificate { certificate: o }, G::Certificate { certificate: n }) => o.changed(n),
            (o, n) => Some(("kind", o.describe(), n.describe())),
        }
    }
}

impl PairLineage {
    /// The first parameter that differs: (what, from, to).
    fn changed(&self, new: &PairLineage) -> Option<(&'static str, String, String)> {
        let shape = |p: &PairLineage| format!("{} {}", p.algorithm.as_str(), p.size);
        let encoding = |p: &PairLineage| p.encoding.map_or("", KeyEncoding::as_str).to_string();
        if (self.algorithm, self.size) != (new.algorithm, new.size) {
            Some(("algorithm and size", shape(self), shape(new)))
        } else if self.comment != new.comment {
            Some((
                "comment",
                format!("{:?}", self.comment),
                format!("{:?}", new.comment),
            ))
        } else if self.encoding != new.encoding {
            Some(("encoding", encoding(self), encoding(new)))
        } else {
            None
        }
    }
}

impl Lineage {
    /// Derived keys (htpasswd, templates) have none: never carried over.
    pub fn of(spec: &VersionSpec) -> Self {
        Lineage {
            rotation: spec.rotation.clone(),
            epoch: spec.epoch,
            keys: spec
                .generated
                .iter()
                .filter_map(|(k, g)| Some((k.clone(), KeyLineage::of(g)?)))
                .collect(),
        }
    }

    /// A digest of what rotates every key at once (`spec.rotation` and the
    /// epoch): when two versions' differ, nothing carries over, and the
    /// previous version need not be read. Never 0 (0 is "unknown").
    /// 32 bits: two different tokens with one seed only cost a GET.
    pub fn seed(&self) -> u32 {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update((self.rotation.len() as u64).to_be_bytes());
        h.update(self.rotation.as_bytes());
        match self.epoch {
            Some(e) => h.update([1u8].into_iter().chain(e.to_be_bytes()).collect::<Vec<_>>()),
            None => h.update([0u8]),
        }
        let d = h.finalize();
        u32::from_be_bytes(d[..4].try_into().expect("4 bytes")).max(1)
    }
}

/// Why a key rotates in a new version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rotated {
    /// Not in the previous version (or there is none).
    New,
    /// `spec.rotation` changed.
    Rotation { from: String, to: String },
    /// A new `rotateEvery` period (or rotateEvery turned on or off).
    Period,
    /// `spec.rotation` or the period changed, as the cached record of the
    /// previous version showed (its exact tokens were not read).
    Every,
    /// `keys.<k>.rotation` changed.
    KeyRotation { from: String, to: String },
    /// A new period of `keys.<k>.rotateEvery` (or it was turned on or off).
    KeyPeriod,
    /// Its issuer, a CA of the same version, has a new certificate.
    Issuer { issuer: String },
    /// The generator changed: which parameter, from, to.
    Generator {
        what: &'static str,
        from: String,
        to: String,
    },
}

/// What a new version does with one generated key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Kept,
    Rotated(Rotated),
}

/// A token as a user reads it in a sentence.
fn token(t: &str) -> String {
    if t.is_empty() {
        "(unset)".into()
    } else {
        t.into()
    }
}

fn symbols(s: &str) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        format!("{s:?}")
    }
}

impl Change {
    /// The reason as `name --explain`, `diff` and the Event say it, for key `key`.
    pub fn why(&self, key: &str) -> String {
        match self {
            Change::Kept => "kept: generator unchanged".into(),
            Change::Rotated(r) => match r {
                Rotated::New => "new key".into(),
                Rotated::Rotation { from, to } => {
                    format!("rotated: rotation {} -> {}", token(from), token(to))
                }
                Rotated::Period => "rotated: a new rotateEvery period".into(),
                Rotated::Every => "rotated: spec.rotation or the rotateEvery period changed".into(),
                Rotated::KeyRotation { from, to } => format!(
                    "rotated: keys.{key}.rotation {} -> {}",
                    token(from),
                    token(to)
                ),
                Rotated::KeyPeriod => format!("rotated: a new keys.{key}.rotateEvery period"),
                Rotated::Generator { what, from, to } => format!("rotated: {what} {from} -> {to}"),
                Rotated::Issuer { issuer } => {
                    format!("rotated: signed again by the new certificate of keys.{issuer}")
                }
            },
        }
    }
}

/// What the new version `new` does with each of its generated keys, given
/// the lineage of the version it supersedes (`None`: the first version).
pub fn plan(previous: Option<&Lineage>, new: &Lineage) -> BTreeMap<String, Change> {
    let mut out: BTreeMap<String, Change> = new
        .keys
        .iter()
        .map(|(k, n)| (k.clone(), change(previous, new, k, n)))
        .collect();
    // A certificate signed by a CA that gets a new certificate is signed
    // again (the CA is a root, so one pass is the whole chain).
    for (k, n) in &new.keys {
        let GeneratorLineage::Certificate { certificate } = &n.generator else {
            continue;
        };
        let Some(issuer) = &certificate.issuer else {
            continue;
        };
        let issuer_rotated = matches!(out.get(issuer), Some(Change::Rotated(_)));
        if issuer_rotated && out.get(k) == Some(&Change::Kept) {
            out.insert(
                k.clone(),
                Change::Rotated(Rotated::Issuer {
                    issuer: issuer.clone(),
                }),
            );
        }
    }
    out
}

fn change(previous: Option<&Lineage>, new: &Lineage, key: &str, n: &KeyLineage) -> Change {
    let Some(p) = previous else {
        return Change::Rotated(Rotated::New);
    };
    if p.rotation != new.rotation {
        return Change::Rotated(Rotated::Rotation {
            from: p.rotation.clone(),
            to: new.rotation.clone(),
        });
    }
    if p.epoch != new.epoch {
        return Change::Rotated(Rotated::Period);
    }
    let Some(o) = p.keys.get(key) else {
        return Change::Rotated(Rotated::New);
    };
    if o.rotation != n.rotation {
        return Change::Rotated(Rotated::KeyRotation {
            from: o.rotation.clone(),
            to: n.rotation.clone(),
        });
    }
    if o.epoch != n.epoch {
        return Change::Rotated(Rotated::KeyPeriod);
    }
    match o.generator.changed(&n.generator) {
        Some((what, from, to)) => Change::Rotated(Rotated::Generator { what, from, to }),
        None => Change::Kept,
    }
}

/// The keys a plan rotates, in key order.
pub fn rotated(plan: &BTreeMap<String, Change>) -> Vec<String> {
    plan.iter()
        .filter(|(_, c)| **c != Change::Kept)
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RandomSecretSpec;

    fn lineage(yaml: &str) -> Lineage {
        let spec: RandomSecretSpec = crate::gitops::yaml::read(yaml).unwrap();
        Lineage::of(&VersionSpec::from_spec(&spec).unwrap())
    }

    fn whys(old: &str, new: &str) -> Vec<String> {
        let (o, n) = (lineage(old), lineage(new));
        plan(Some(&o), &n)
            .iter()
            .map(|(k, c)| format!("{k}: {}", c.why(k)))
            .collect()
    }

    const BASE: &str = "keys: {password: {length: 32}, pin: {length: 4, charset: numeric}}\nstatic: {username: app}\nrotation: '1'";

    /// Every kind of edit, and what it does to each generated value.
    #[test]
    fn each_edit_keeps_or_rotates_the_values_it_should() {
        let kept = [
            "password: kept: generator unchanged",
            "pin: kept: generator unchanged",
        ];
        for edit in [
            // Anything that is not a rotation or a generator keeps every value.
            BASE.replace("username: app", "username: app2"),
            BASE.replace(
                "static: {username: app}",
                "static: {username: app, host: db}",
            ),
            format!("{BASE}\ntype: example.com/x"),
            format!("{BASE}\nsecretLabels: {{a: b}}\nsecretAnnotations: {{c: d}}\nhistory: 3"),
            BASE.replace("{length: 32}", "{length: 32, previous: true}"),
            // A key's own token written empty is the same as none.
            BASE.replace("{length: 32}", "{length: 32, rotation: ''}"),
            BASE.replace(
                "{length: 32}",
                "{length: 32, charset: alphanumeric, symbols: false}",
            ),
        ] {
            assert_eq!(whys(BASE, &edit), kept, "{edit}");
        }
        let cases: &[(&str, &str, [&str; 2])] = &[
            (
                "rotation: '1'",
                "rotation: '2'",
                [
                    "password: rotated: rotation 1 -> 2",
                    "pin: rotated: rotation 1 -> 2",
                ],
            ),
            (
                "rotation: '1'",
                "rotation: ''",
                [
                    "password: rotated: rotation 1 -> (unset)",
                    "pin: rotated: rotation 1 -> (unset)",
                ],
            ),
            (
                "{length: 32}",
                "{length: 32, rotation: '2'}",
                [
                    "password: rotated: keys.password.rotation (unset) -> 2",
                    "pin: kept: generator unchanged",
                ],
            ),
            (
                "{length: 32}",
                "{length: 48}",
                [
                    "password: rotated: length 32 -> 48",
                    "pin: kept: generator unchanged",
                ],
            ),
            (
                "{length: 32}",
                "{length: 32, charset: hex}",
                [
                    "password: rotated: charset alphanumeric -> hex",
                    "pin: kept: generator unchanged",
                ],
            ),
            (
                "{length: 32}",
                "{length: 32, symbolCharacters: '!'}",
                [
                    "password: rotated: symbols none -> \"!\"",
                    "pin: kept: generator unchanged",
                ],
            ),
            (
                "pin: {length: 4, charset: numeric}",
                "pin2: {length: 4, charset: numeric}",
                ["password: kept: generator unchanged", "pin2: new key"],
            ),
        ];
        for (from, to, want) in cases {
            assert!(BASE.contains(from), "{from}");
            assert_eq!(whys(BASE, &BASE.replace(from, to)), want, "{to}");
        }
        // A key's token changed again rotates it again; back to a token it
        // had is also a change (from the previous version's point of view).
        let two = BASE.replace("{length: 32}", "{length: 32, rotation: '2'}");
        let three = BASE.replace("{length: 32}", "{length: 32, rotation: '3'}");
        assert_eq!(
            whys(&two, &three)[0],
            "password: rotated: keys.password.rotation 2 -> 3"
        );
        assert_eq!(
            whys(&three, BASE)[0],
            "password: rotated: keys.password.rotation 3 -> (unset)"
        );
    }

    #[test]
    fn the_first_version_and_a_new_period_rotate_everything() {
        let n = lineage(BASE);
        assert!(
            plan(None, &n)
                .values()
                .all(|c| *c == Change::Rotated(Rotated::New))
        );
        let mut later = n.clone();
        later.epoch = Some(4);
        let mut earlier = n.clone();
        earlier.epoch = Some(3);
        let p = plan(Some(&earlier), &later);
        assert!(p.values().all(|c| *c == Change::Rotated(Rotated::Period)));
        assert_eq!(rotated(&p), ["password", "pin"]);
        assert!(rotated(&plan(Some(&n), &n)).is_empty());
    }

    #[test]
    fn the_seed_changes_with_rotation_and_epoch_only() {
        let a = lineage(BASE);
        let b = lineage(&BASE.replace("{length: 32}", "{length: 48, rotation: x}"));
        assert_eq!(a.seed(), b.seed());
        let c = lineage(&BASE.replace("rotation: '1'", "rotation: '2'"));
        assert_ne!(a.seed(), c.seed());
        let mut d = a.clone();
        d.epoch = Some(0);
        let mut e = a.clone();
        e.epoch = Some(1);
        assert!(a.seed() != d.seed() && d.seed() != e.seed() && a.seed() != e.seed());
        // Length-prefixed: "" then epoch is not a rotation that spells the epoch.
        assert_ne!(a.seed(), 0);
    }

    #[test]
    fn lineage_round_trips_as_json() {
        let l = lineage(
            "keys: {a: {length: 3, symbolCharacters: '<>', rotation: r}, b: {length: 1}}\nrotation: x",
        );
        let text = serde_json::to_string(&l).unwrap();
        assert_eq!(
            text,
            r#"{"rotation":"x","keys":{"a":{"length":3,"charset":"alphanumeric","symbols":"<>","rotation":"r"},"b":{"length":1,"charset":"alphanumeric"}}}"#
        );
        assert_eq!(serde_json::from_str::<Lineage>(&text).unwrap(), l);
    }

    /// A signing key rotates with its algorithm, its token or a change of
    /// kind; its `keep` and `jwksKey` only change the JWKS.
    #[test]
    fn a_signing_key_is_kept_unless_its_algorithm_or_kind_changes() {
        let base = "keys: {sig: {signingKey: {algorithm: ES256}}, pw: {length: 8}}";
        for edit in [
            base.replace("ES256}", "ES256, keep: 3}"),
            base.replace("ES256}", "ES256, jwksKey: keys.json}"),
            format!("{base}\nstatic: {{u: x}}"),
        ] {
            assert_eq!(
                whys(base, &edit),
                [
                    "pw: kept: generator unchanged",
                    "sig: kept: generator unchanged"
                ],
                "{edit}"
            );
        }
        assert_eq!(
            whys(base, &base.replace("ES256", "EdDSA"))[1],
            "sig: rotated: algorithm ES256 -> EdDSA"
        );
        assert_eq!(
            whys(
                base,
                &base.replace("{algorithm: ES256}", "{algorithm: ES256}, rotation: '2'")
            )[1],
            "sig: rotated: keys.sig.rotation (unset) -> 2"
        );
        assert_eq!(
            whys(
                base,
                &base.replace("{signingKey: {algorithm: ES256}}", "{length: 8}")
            )[1],
            "sig: rotated: kind signingKey ES256 -> a random string"
        );
        assert_eq!(
            whys(
                &base.replace("{signingKey: {algorithm: ES256}}", "{length: 8}"),
                base
            )[1],
            "sig: rotated: kind a random string -> signingKey ES256"
        );
    }

    /// The record of a signing key, and records written before signing
    /// keys existed, read back.
    #[test]
    fn signing_key_lineage_round_trips_and_old_records_still_read() {
        let l = lineage("keys: {sig: {signingKey: {algorithm: RS256, keep: 4}, rotation: r}}");
        let text = serde_json::to_string(&l).unwrap();
        assert_eq!(
            text,
            r#"{"rotation":"","keys":{"sig":{"signingKey":{"algorithm":"RS256","jwksKey":"jwks.json"},"rotation":"r"}}}"#
        );
        assert_eq!(serde_json::from_str::<Lineage>(&text).unwrap(), l);
        let old = r#"{"rotation":"1","keys":{"pw":{"length":8,"charset":"hex","rotation":"2"}}}"#;
        assert_eq!(
            serde_json::from_str::<Lineage>(old).unwrap(),
            lineage("keys: {pw: {length: 8, charset: hex, rotation: '2'}}\nrotation: '1'")
        );
    }

    /// Bytes, UUIDs and password rules: kept by an unrelated edit, rotated
    /// by a change of their own generator (another encoding of the same
    /// bytes would be another value), and recorded so that a record reads
    /// back the same.
    #[test]
    fn bytes_uuids_and_password_rules_keep_or_rotate() {
        let base = "keys: {b: {bytes: {length: 16}}, u: {uuid: {}}, p: {length: 8, minDigits: 2}}";
        let kept = [
            "b: kept: generator unchanged",
            "p: kept: generator unchanged",
            "u: kept: generator unchanged",
        ];
        assert_eq!(whys(base, &format!("{base}\nstatic: {{x: z}}")), kept);
        assert_eq!(
            whys(
                base,
                &base.replace("{length: 16}", "{length: 16, encoding: base64}")
            ),
            kept,
            "the default written out"
        );
        for (from, to, want) in [
            (
                "{length: 16}",
                "{length: 24}",
                "b: rotated: bytes.length 16 -> 24",
            ),
            (
                "{length: 16}",
                "{length: 16, encoding: hex}",
                "b: rotated: bytes.encoding base64 -> hex",
            ),
            (
                "minDigits: 2",
                "minDigits: 3",
                "p: rotated: minDigits 2 -> 3",
            ),
            (
                "minDigits: 2",
                "minDigits: 2, minUpper: 1",
                "p: rotated: minUpper 0 -> 1",
            ),
            (
                "minDigits: 2",
                "minDigits: 0",
                "p: rotated: minDigits 2 -> 0",
            ),
            (
                "u: {uuid: {}}",
                "u: {length: 36}",
                "u: rotated: kind uuid -> a random string",
            ),
            (
                "b: {bytes: {length: 16}}",
                "b: {uuid: {}}",
                "b: rotated: kind bytes -> uuid",
            ),
        ] {
            let edited = base.replace(from, to);
            let got = whys(base, &edited);
            assert!(got.contains(&want.to_string()), "{to}: {got:?}");
            assert_eq!(
                got.iter().filter(|w| w.contains("rotated")).count(),
                1,
                "{to}: {got:?}"
            );
        }
        let l = lineage(base);
        let text = serde_json::to_string(&l).unwrap();
        assert_eq!(
            text,
            r#"{"rotation":"","keys":{"b":{"bytes":{"length":16,"encoding":"base64"}},"p":{"length":8,"charset":"alphanumeric","min":[2,0,0,0]},"u":{"uuid":true}}}"#
        );
        assert_eq!(serde_json::from_str::<Lineage>(&text).unwrap(), l);
    }

    /// A key's own period rotates that key alone.
    #[test]
    fn a_keys_own_new_period_rotates_it_alone() {
        let spec = |now: i64| {
            let s: RandomSecretSpec = crate::gitops::yaml::read(
                "keys: {password: {length: 32, rotateEvery: 1h}, pin: {length: 4}}",
            )
            .unwrap();
            Lineage::of(&crate::version::Version::at(&s, "x", 0, now).unwrap().0.spec)
        };
        let (o, n) = (spec(10), spec(3600));
        let whys: Vec<String> = plan(Some(&o), &n)
            .iter()
            .map(|(k, c)| format!("{k}: {}", c.why(k)))
            .collect();
        assert_eq!(
            whys,
            [
                "password: rotated: a new keys.password.rotateEvery period",
                "pin: kept: generator unchanged"
            ]
        );
        // Within the period, nothing rotates.
        assert!(rotated(&plan(Some(&o), &spec(3599))).is_empty());
    }
}
