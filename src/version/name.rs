//! The versioned Secret name `<secretName>-<hash>`: the canonical
//! serialization of a [`VersionSpec`], its hash, and the base name.
//!
//! The canonical form is the contract shared with the Helm helper and the
//! kustomize function (docs/src/rotation.md#how-names-are-computed); the fixture
//! `testdata/name-vectors.yaml` pins it. Changing it renames every version.

use super::period::{epoch_at, parse_period};
use super::spec::{Generated, Kind, SpecError, VersionSpec};
use crate::api::{MAX_BASE_NAME, MAX_OBJECT_NAME, RandomSecretSpec};
use sha2::{Digest, Sha256};

impl VersionSpec {
    /// The canonical serialization (docs/src/rotation.md#how-names-are-computed).
    /// Strings are length-prefixed (`<bytes>:<text>`), so no escaping is needed
    /// and every tool produces the same bytes; maps are sorted by key bytes.
    pub fn canonical(&self) -> String {
        // Spelled out, not crate::api::API_VERSION: the canonical form is the
        // name contract (the CLI, kustomize and Helm compute it offline).
        let mut out = String::from("randomsecret.io/v1\n");
        out.push_str("type:");
        s(&mut out, &self.secret_type);
        out.push_str("\nrotation:");
        s(&mut out, &self.rotation);
        out.push('\n');
        for (k, g) in &self.generated {
            out.push_str(&generate_line(k, g));
            out.push('\n');
        }
        for (k, v) in &self.statics {
            out.push_str("static:");
            s(&mut out, k);
            out.push(':');
            s(&mut out, v);
            out.push('\n');
        }
        if let Some(epoch) = self.epoch {
            out.push_str(&format!("epoch:{epoch}\n"));
        }
        out
    }

    /// The 10-character version hash.
    pub fn hash(&self) -> String {
        hash_canonical(&self.canonical())
    }
}

/// A length-prefixed string of the canonical form: `<bytes>:<text>`.
fn s(out: &mut String, v: &str) {
    out.push_str(&v.len().to_string());
    out.push(':');
    out.push_str(v);
}

/// The canonical line of generated key `k` (without its newline).
pub fn generate_line(k: &str, g: &Generated) -> String {
    let mut out = String::from("generate:");
    s(&mut out, k);
    match &g.kind {
        Kind::Chars(c) => {
            out.push_str(&format!(":{}:{}:", c.length, c.charset.as_str()));
            s(&mut out, &c.symbols);
            // Only with a rule, so no name from before them changed.
            if !c.min.is_empty() {
                let m = c.min;
                out.push_str(&format!(
                    ":min:{}:{}:{}:{}",
                    m.digits, m.lower, m.upper, m.symbols
                ));
            }
        }
        // A word where a string's length stands: no string's line reads so.
        Kind::Bytes(b) => {
            out.push_str(&format!(":bytes:{}:{}", b.length, b.encoding.as_str()));
        }
        Kind::Uuid => out.push_str(":uuid"),
        Kind::SigningKey(k) => {
            out.push_str(&format!(":signingKey:{}:{}:", k.algorithm.as_str(), k.keep));
            s(&mut out, &k.jwks_key);
        }
        Kind::SshKeyPair(p) => {
            let shape = p.shape;
            out.push_str(&format!(
                ":sshKeyPair:{}:{}:",
                shape.algorithm.as_str(),
                shape.size
            ));
            s(&mut out, &p.comment);
            out.push(':');
            s(&mut out, &p.public_key);
        }
        Kind::PrivateKey(p) => {
            let shape = p.shape;
            out.push_str(&format!(
                ":privateKey:{}:{}:{}:",
                shape.algorithm.as_str(),
                shape.size,
                p.encoding.as_str()
            ));
            s(&mut out, &p.public_key);
        }
        // Derived kinds take no rotation, period or overlap of their own.
        Kind::Htpasswd(h) => {
            out.push_str(&format!(":htpasswd:bcrypt:{}:", h.cost));
            s(&mut out, &h.username);
            out.push(':');
            s(&mut out, &h.password_from);
        }
        Kind::Template(t) => {
            out.push_str(":template:");
            s(&mut out, t);
        }
        Kind::Certificate(c) => {
            out.push_str(if c.is_ca {
                ":certificate:ca:"
            } else {
                ":certificate:leaf:"
            });
            s(&mut out, c.issuer.as_deref().unwrap_or(""));
            out.push(':');
            s(&mut out, &c.common_name);
            // Each list: its length, then its entries, as written.
            for list in [&c.dns_names, &c.ip_addresses] {
                out.push_str(&format!(":{}", list.len()));
                for entry in list {
                    out.push(':');
                    s(&mut out, entry);
                }
            }
            let usages: Vec<&str> = c.usages.iter().map(|u| u.as_str()).collect();
            out.push_str(&format!(":{}:", usages.join(",")));
            s(&mut out, &c.duration);
            out.push_str(&format!(":{}:{}:", c.key.algorithm.as_str(), c.key.size));
            s(&mut out, &c.private_key);
            out.push(':');
            s(&mut out, c.ca_certificate.as_deref().unwrap_or(""));
        }
    }
    // Only when on, so every name from before overlap existed stays.
    if g.previous {
        out.push_str(":previous");
    }
    // Likewise only when set: a key's own rotation token.
    if !g.rotation.is_empty() {
        out.push_str(":rotation:");
        s(&mut out, &g.rotation);
    }
    // And a key's own period's number (`keys.<k>.rotateEvery`).
    if let Some(epoch) = g.epoch {
        out.push_str(&format!(":epoch:{epoch}"));
    }
    out
}

/// First 10 hex digits of SHA-256, with 0 1 3 a e mapped to g h k m t (as
/// kustomize's name suffixes do), so a suffix never spells a word or reads as a number.
pub fn hash_canonical(canonical: &str) -> String {
    let digest = Sha256::digest(canonical.as_bytes());
    digest
        .iter()
        .take(5)
        .flat_map(|b| [b >> 4, b & 0xf])
        .map(|n| match n {
            0 => 'g',
            1 => 'h',
            3 => 'k',
            0xa => 'm',
            0xe => 't',
            n => char::from_digit(u32::from(n), 16).expect("a nibble is a hex digit"),
        })
        .collect()
}

/// The hash a version name ends with (`<base>-<hash>`): what its
/// `randomsecret.io/hash` label says, on a version we made.
pub fn hash_in_name(name: &str) -> &str {
    name.rsplit('-').next().unwrap_or_default()
}

/// Whether `c` can appear in a version hash.
pub fn hash_alphabet_contains(c: char) -> bool {
    matches!(
        c,
        'b' | 'c' | 'd' | 'f' | 'g' | 'h' | 'k' | 'm' | 't' | '2' | '4'..='9'
    )
}

/// A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', each label
/// starting and ending with an alphanumeric.
fn dns_subdomain(name: &str) -> bool {
    name.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    })
}

/// The base name: `spec.secretName`, else the object's name, checked to leave
/// room for the suffix.
pub fn base_name<'a>(
    spec: &'a RandomSecretSpec,
    object_name: &'a str,
) -> Result<&'a str, SpecError> {
    let name = spec.secret_name.as_deref().unwrap_or(object_name);
    let why = if name.len() > MAX_BASE_NAME {
        Some(
            "is longer than 242 characters, which leaves no room for the version suffix: set a shorter spec.secretName",
        )
    } else if !dns_subdomain(name) {
        Some(
            "is not a DNS subdomain: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
        )
    } else {
        None
    };
    match why {
        Some(why) => Err(SpecError::InvalidBaseName {
            name: name.to_string(),
            why,
        }),
        None => Ok(name),
    }
}

/// Everything the controller and the CLI need to know about the current version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub spec: VersionSpec,
    /// `spec.secretName`, else the object's name.
    pub base: String,
    pub hash: String,
    /// `<base>-<hash>`
    pub secret_name: String,
}

impl Version {
    /// The version a spec names, as computed offline (the CLI and GitOps filters).
    /// With `rotateEvery` there is none, but a spec the controller would
    /// refuse gets the controller's error first (what to fix), like an
    /// out-of-range rotateEvery.
    pub fn of(spec: &RandomSecretSpec, object_name: &str) -> Result<Self, SpecError> {
        let (v, next) = Self::build(spec, object_name, Some((0, 0)))?;
        if next.is_some() {
            let field = match v.spec.generated.iter().find(|(_, g)| g.every.is_some()) {
                _ if spec.rotate_every.is_some() => "rotateEvery".to_string(),
                Some((k, _)) => format!("keys.{k}.rotateEvery"),
                None => "rotateEvery".to_string(),
            };
            return Err(SpecError::TimeBased(field));
        }
        Ok(v)
    }

    /// The version at time `now` (seconds) of a RandomSecret created at
    /// `created`: with `rotateEvery` (and per key, `keys.<k>.rotateEvery`),
    /// one more epoch per period. Also returns when the next epoch starts.
    pub fn at(
        spec: &RandomSecretSpec,
        object_name: &str,
        created: i64,
        now: i64,
    ) -> Result<(Self, Option<i64>), SpecError> {
        Self::build(spec, object_name, Some((created, now)))
    }

    /// The version, with every period's epoch at `clock` (created, now);
    /// and when the next epoch of any of them starts (`None`: no period).
    fn build(
        spec: &RandomSecretSpec,
        object_name: &str,
        clock: Option<(i64, i64)>,
    ) -> Result<(Self, Option<i64>), SpecError> {
        if object_name.len() > MAX_OBJECT_NAME {
            return Err(SpecError::NameTooLong(object_name.to_string()));
        }
        let base = base_name(spec, object_name)?;
        let mut vspec = VersionSpec::from_spec(spec)?;
        let mut next: Option<i64> = None;
        let mut soonest = |n: i64| next = Some(next.map_or(n, |x| x.min(n)));
        if let (Some(every), Some((created, now))) = (spec.rotate_every.as_deref(), clock) {
            let (epoch, n) = epoch_at(parse_period(every)?, created, now);
            vspec.epoch = Some(epoch);
            soonest(n);
        }
        for g in vspec.generated.values_mut() {
            if let (Some(period), Some((created, now))) = (g.every, clock) {
                let (epoch, n) = epoch_at(period, created, now);
                g.epoch = Some(epoch);
                soonest(n);
            }
        }
        let hash = vspec.hash();
        Ok((
            Version {
                secret_name: format!("{base}-{hash}"),
                base: base.to_string(),
                hash,
                spec: vspec,
            },
            next,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> RandomSecretSpec {
        crate::gitops::yaml::read(yaml).unwrap()
    }

    #[test]
    fn hash_is_ten_dns_safe_chars_without_vowels() {
        let h = hash_canonical("anything");
        assert_eq!(h.len(), 10);
        assert!(h.chars().all(|c| "bcdfghkmt2456789".contains(c)), "{h}");
        assert!(h.chars().all(hash_alphabet_contains));
        assert!(
            "aeijlnopqrsuvwxyz013"
                .chars()
                .all(|c| !hash_alphabet_contains(c))
        );
    }

    #[test]
    fn every_version_defining_field_changes_the_hash() {
        let base = "keys: {k: {length: 8}}\nstatic: {s: v}\n";
        let variants = [
            "keys: {k: {length: 9}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, charset: hex}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, symbols: true}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, symbolCharacters: '!'}}\nstatic: {s: v}\n",
            "keys: {k2: {length: 8}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8}}\nstatic: {s: w}\n",
            "keys: {k: {length: 8}}\nstatic: {s2: v}\n",
            "keys: {k: {length: 8}}\nstatic: {s: v}\nrotation: '2'\n",
            "keys: {k: {length: 8}}\nstatic: {s: v}\ntype: example.com/x\n",
            "keys: {k: {length: 8, rotation: '2'}}\nstatic: {s: v}\n",
            "keys: {k: {length: 8, rotation: '3'}}\nstatic: {s: v}\n",
        ];
        let h0 = Version::of(&spec(base), "x").unwrap().hash;
        let mut seen = std::collections::BTreeSet::from([h0]);
        for v in variants {
            assert!(
                seen.insert(Version::of(&spec(v), "x").unwrap().hash),
                "{v} collides"
            );
        }
    }

    #[test]
    fn canonical_form_is_length_prefixed_and_sorted() {
        let s = spec(
            "keys: {b: {length: 3, symbolCharacters: '<>&'}, a: {length: 1, charset: hex}}\nstatic: {z: \"é\\n\"}\nrotation: r1",
        );
        let v = VersionSpec::from_spec(&s).unwrap();
        assert_eq!(
            v.canonical(),
            "randomsecret.io/v1\ntype:6:Opaque\nrotation:2:r1\ngenerate:1:a:1:hex:0:\ngenerate:1:b:3:alphanumeric:3:<>&\nstatic:1:z:3:é\n\n"
        );
    }

    #[test]
    fn secret_name_defaults_to_object_name() {
        let v = Version::of(&spec("keys: {k: {length: 8}}"), "db-creds").unwrap();
        assert!(
            v.secret_name.starts_with("db-creds-") && v.secret_name.len() == "db-creds-".len() + 10
        );
        let v = Version::of(
            &spec("secretName: other\nkeys: {k: {length: 8}}"),
            "db-creds",
        )
        .unwrap();
        assert!(v.secret_name.starts_with("other-"));
    }

    /// A period out of range is refused by the controller (`at`) and the CLI
    /// (`of`) alike, with what to fix; a valid one is TimeBased offline.
    #[test]
    fn rotate_every_out_of_range_is_refused() {
        for every in [
            "18446744073709551615s",
            "9999999999999999999h",
            "876001h",
            "59s",
        ] {
            let s = spec(&format!("keys: {{k: {{length: 8}}}}\nrotateEvery: {every}"));
            let at = Version::at(&s, "x", 0, 10).expect_err(every);
            assert_eq!(at, SpecError::InvalidRotateEvery(every.to_string()));
            assert_eq!(Version::of(&s, "x").unwrap_err(), at, "{every}");
        }
        for every in ["876000h", "1m", "1h30m"] {
            let s = spec(&format!("keys: {{k: {{length: 8}}}}\nrotateEvery: {every}"));
            assert_eq!(
                Version::of(&s, "x").unwrap_err(),
                SpecError::TimeBased("rotateEvery".into())
            );
            let (v, next) = Version::at(&s, "x", 0, 10).unwrap();
            assert_eq!(v.spec.epoch, Some(0), "{every}");
            assert_eq!(next, Some(parse_period(every).unwrap() as i64), "{every}");
        }
        // The longest period, a century from an ordinary creation time.
        let s = spec("keys: {k: {length: 8}}\nrotateEvery: 876000h");
        let created = 1_750_000_000;
        let (v, next) = Version::at(&s, "x", created, created + 1).unwrap();
        assert_eq!(
            (v.spec.epoch, next),
            (Some(0), Some(created + 3_153_600_000))
        );
        // Other errors of a time-based spec come before TimeBased offline, as in the controller.
        let s = spec("keys: {k: {length: 0}}\nrotateEvery: 1h");
        assert_eq!(Version::of(&s, "x").unwrap_err().reason(), "InvalidLength");
    }

    /// The shared fixture: every implementation of the name must agree with it.
    #[test]
    fn fixture_vectors() {
        #[derive(serde::Deserialize)]
        struct Vector {
            description: String,
            name: String,
            spec: RandomSecretSpec,
            canonical: String,
            #[serde(rename = "secretName")]
            secret_name: String,
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/name-vectors.yaml");
        let vectors: Vec<Vector> =
            crate::gitops::yaml::read(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(vectors.len() >= 10);
        for v in vectors {
            let got =
                Version::of(&v.spec, &v.name).unwrap_or_else(|e| panic!("{}: {e}", v.description));
            assert_eq!(got.spec.canonical(), v.canonical, "{}", v.description);
            assert_eq!(got.secret_name, v.secret_name, "{}", v.description);
        }
    }

    #[test]
    fn rotate_every_changes_the_name_once_per_period() {
        let s = spec("keys: {k: {length: 8}}\nrotateEvery: 1h");
        assert_eq!(
            Version::of(&s, "x").unwrap_err(),
            SpecError::TimeBased("rotateEvery".into())
        );
        let (a, next_a) = Version::at(&s, "x", 1000, 1000).unwrap();
        let (b, _) = Version::at(&s, "x", 1000, 1000 + 3599).unwrap();
        let (c, next_c) = Version::at(&s, "x", 1000, 1000 + 3600).unwrap();
        assert_eq!(a.secret_name, b.secret_name);
        assert_ne!(a.secret_name, c.secret_name);
        assert_eq!((next_a, next_c), (Some(4600), Some(8200)));
        // Created after now (clock skew): the first epoch, due one period after creation.
        let (d, next_d) = Version::at(&s, "x", 5000, 1000).unwrap();
        assert_eq!((d.secret_name, next_d), (a.secret_name, Some(8600)));
        // Without rotateEvery, the controller's version is the offline one.
        let plain = spec("keys: {k: {length: 8}}");
        assert_eq!(
            Version::at(&plain, "x", 1, 99999).unwrap().0,
            Version::of(&plain, "x").unwrap()
        );
    }

    /// A key's own period: the name changes at the soonest of every period,
    /// and the key's epoch is in its canonical line alone.
    #[test]
    fn a_keys_own_period_changes_the_name_once_per_period() {
        let s = spec("keys: {k: {length: 8, rotateEvery: 1h}, other: {length: 8}}");
        assert_eq!(
            Version::of(&s, "x").unwrap_err(),
            SpecError::TimeBased("keys.k.rotateEvery".into())
        );
        let (a, next_a) = Version::at(&s, "x", 1000, 1000).unwrap();
        let (b, _) = Version::at(&s, "x", 1000, 1000 + 3599).unwrap();
        let (c, _) = Version::at(&s, "x", 1000, 1000 + 3600).unwrap();
        assert_eq!(a.secret_name, b.secret_name);
        assert_ne!(a.secret_name, c.secret_name);
        assert_eq!(next_a, Some(4600));
        assert_eq!(c.spec.generated["k"].epoch, Some(1));
        assert_eq!(c.spec.generated["other"].epoch, None);
        assert!(
            c.spec.canonical().contains(":epoch:1\n"),
            "{}",
            c.spec.canonical()
        );
        assert_eq!(c.spec.epoch, None);
        // Two periods: the soonest one is next.
        let both = spec("keys: {k: {length: 8, rotateEvery: 1h}}\nrotateEvery: 30m");
        assert_eq!(Version::at(&both, "x", 0, 10).unwrap().1, Some(1800));
        // A bad period is refused with the key named, before TimeBased.
        let bad = spec("keys: {k: {length: 8, rotateEvery: 1d}}");
        let e = Version::of(&bad, "x").unwrap_err();
        assert_eq!(e.reason(), "InvalidRotateEvery");
        assert!(
            e.to_string().starts_with("keys.k.rotateEvery \"1d\""),
            "{e}"
        );
        let short = spec("keys: {k: {length: 8, rotateEvery: 30s}}");
        assert_eq!(
            Version::of(&short, "x").unwrap_err().reason(),
            "InvalidRotateEvery"
        );
    }
}
