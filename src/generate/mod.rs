//! Random values from the OS CSPRNG: strings with unbiased (rejection)
//! sampling and password rules, bytes and UUIDs (this file), signing keys
//! and their public JWKs ([`keypair`]), a signing key's JWKS across
//! versions ([`jwks`], pure), SSH and PEM key pairs ([`pair`]), X.509
//! certificates ([`cert`]), and what a version derives from its values
//! when it is made ([`derive`]).

pub mod cert;
pub mod derive;
pub mod jwks;
pub mod keypair;
pub mod pair;

use crate::version::{Bytes, Chars, Class, Kind};
use rand::rngs::SysRng;
use rand::seq::SliceRandom;
use rand::{SeedableRng, TryRng};

/// A value could not be generated: the message says why (never a value).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failed(String);

fn random_source(e: rand::rngs::SysError) -> Failed {
    Failed(format!("the operating system's random source failed: {e}"))
}

/// The value of a version's generated key of kind `kind` (its own key; a
/// signing key's JWKS is derived from it by [`jwks`]).
pub fn key_value(kind: &Kind) -> Result<Vec<u8>, Failed> {
    match kind {
        Kind::Chars(c) => value(c).map(String::into_bytes).map_err(random_source),
        Kind::Bytes(b) => bytes(b).map_err(random_source),
        Kind::Uuid => uuid().map(String::into_bytes).map_err(random_source),
        Kind::SigningKey(s) => keypair::generate(s.algorithm)
            .map(String::into_bytes)
            .map_err(|e| Failed(e.to_string())),
        Kind::SshKeyPair(p) => pair::ssh_private(p)
            .map(String::into_bytes)
            .map_err(|e| Failed(e.to_string())),
        Kind::PrivateKey(p) => pair::pem_private(p)
            .map(String::into_bytes)
            .map_err(|e| Failed(e.to_string())),
        Kind::Htpasswd(_) | Kind::Template(_) => Err(Failed(
            "derived from other values, not generated (derive::all)".into(),
        )),
        // Two values (and maybe a signer): cert::issue.
        Kind::Certificate(_) => Err(Failed(
            "a certificate comes with its private key (cert::issue)".into(),
        )),
    }
}

/// Whether generating a value of `kind` takes enough CPU (tens of
/// milliseconds to seconds: RSA) to belong off the async runtime's threads.
pub fn costly(kind: &Kind) -> bool {
    use crate::api::KeyAlgorithm::Rsa;
    match kind {
        Kind::SigningKey(s) => s.algorithm == crate::api::SigningAlgorithm::RS256,
        Kind::SshKeyPair(p) => p.shape.algorithm == Rsa,
        Kind::PrivateKey(p) => p.shape.algorithm == Rsa,
        Kind::Certificate(c) => c.key.algorithm == Rsa,
        _ => false,
    }
}

/// `length` characters drawn uniformly from `alphabet` (at most 256 entries).
///
/// Each character comes from one random byte `b`; bytes at or above the largest
/// multiple of the alphabet size are rejected, so `b % n` is exactly uniform.
pub fn random_string<R: TryRng>(
    rng: &mut R,
    alphabet: &[char],
    length: usize,
) -> Result<String, R::Error> {
    let n = alphabet.len();
    assert!((1..=256).contains(&n), "alphabet size {n} out of range");
    let limit = 256 - 256 % n; // largest multiple of n that fits in a byte
    let mut out = String::with_capacity(length);
    let mut buf = [0u8; 256];
    let mut produced = 0;
    while produced < length {
        rng.try_fill_bytes(&mut buf)?;
        for &b in &buf {
            if (b as usize) < limit {
                out.push(alphabet[b as usize % n]);
                produced += 1;
                if produced == length {
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// A random string, from the operating system's CSPRNG. With password
/// rules: each class's minimum drawn uniformly from the alphabet's
/// characters of that class, the rest uniformly from the whole alphabet,
/// then the positions shuffled (Fisher-Yates, with a CSPRNG seeded from the
/// operating system's).
pub fn value(g: &Chars) -> Result<String, rand::rngs::SysError> {
    let alphabet = g.alphabet();
    if g.min.is_empty() {
        return random_string(&mut SysRng, &alphabet, g.length);
    }
    let mut chars: Vec<char> = Vec::with_capacity(g.length);
    for class in Class::ALL {
        let n = g.min.of(class);
        if n > 0 {
            let own: Vec<char> = alphabet
                .iter()
                .copied()
                .filter(|c| Class::of(*c) == class)
                .collect();
            chars.extend(random_string(&mut SysRng, &own, n)?.chars());
        }
    }
    let rest = g.length.saturating_sub(chars.len());
    chars.extend(random_string(&mut SysRng, &alphabet, rest)?.chars());
    let mut rng = rand::rngs::StdRng::try_from_rng(&mut SysRng)?;
    chars.shuffle(&mut rng);
    Ok(chars.into_iter().collect())
}

/// `b.length` random bytes from the operating system's CSPRNG, encoded.
pub fn bytes(b: &Bytes) -> Result<Vec<u8>, rand::rngs::SysError> {
    let mut raw = vec![0u8; b.length];
    SysRng.try_fill_bytes(&mut raw)?;
    Ok(match b.encoding.codec() {
        Some(codec) => codec.encode(&raw).into_bytes(),
        None => raw,
    })
}

/// A UUID of version 4 (RFC 9562) from 16 bytes of the operating system's
/// CSPRNG, lowercase and hyphenated.
pub fn uuid() -> Result<String, rand::rngs::SysError> {
    let mut raw = [0u8; 16];
    SysRng.try_fill_bytes(&mut raw)?;
    Ok(uuid::Builder::from_random_bytes(raw)
        .into_uuid()
        .hyphenated()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Charset, DEFAULT_SYMBOLS, Encoding};
    use crate::version::Minimums;
    use std::collections::{BTreeMap, HashSet};

    fn gen_(charset: Charset, symbols: &str, length: usize) -> Chars {
        Chars {
            length,
            charset,
            symbols: symbols.to_string(),
            min: Minimums::default(),
        }
    }

    /// Pearson's chi-square statistic of the character counts against uniform.
    fn chi_square(alphabet: &[char], sample: &str) -> f64 {
        let mut counts: BTreeMap<char, u64> = alphabet.iter().map(|&c| (c, 0)).collect();
        let mut total = 0u64;
        for c in sample.chars() {
            *counts.get_mut(&c).expect("character outside the alphabet") += 1;
            total += 1;
        }
        let expected = total as f64 / alphabet.len() as f64;
        counts
            .values()
            .map(|&o| (o as f64 - expected).powi(2) / expected)
            .sum()
    }

    /// Critical value of chi-square at p = 1e-6 (Wilson-Hilferty approximation):
    /// a false alarm is negligible, and modulo bias scores in the thousands.
    fn critical(df: f64) -> f64 {
        let z = 4.753; // one-sided p = 1e-6
        df * (1.0 - 2.0 / (9.0 * df) + z * (2.0 / (9.0 * df)).sqrt()).powi(3)
    }

    fn assert_uniform(alphabet: &[char]) {
        let n = 2_000_000;
        let sample = random_string(&mut SysRng, alphabet, n).unwrap();
        let chi = chi_square(alphabet, &sample);
        let crit = critical(alphabet.len() as f64 - 1.0);
        assert!(
            chi < crit,
            "alphabet of {}: chi-square {chi:.1} >= {crit:.1}",
            alphabet.len()
        );
    }

    #[test]
    fn uniform_over_62_and_94_characters() {
        let a62 = gen_(Charset::Alphanumeric, "", 1).alphabet();
        let a94 = gen_(Charset::Ascii, "", 1).alphabet();
        assert_eq!((a62.len(), a94.len()), (62, 94));
        assert_uniform(&a62);
        assert_uniform(&a94);
    }

    /// The test above must be able to fail: plain `byte % 62` (modulo bias,
    /// the first 8 characters come 5/4 as often) is caught.
    #[test]
    fn chi_square_catches_modulo_bias() {
        let a62 = gen_(Charset::Alphanumeric, "", 1).alphabet();
        let mut bytes = vec![0u8; 2_000_000];
        SysRng.try_fill_bytes(&mut bytes).unwrap();
        let biased: String = bytes.iter().map(|b| a62[*b as usize % 62]).collect();
        assert!(chi_square(&a62, &biased) > critical(61.0));
    }

    #[test]
    fn values_have_the_length_and_alphabet_and_do_not_repeat() {
        for charset in Charset::ALL {
            let g = gen_(charset, "", 40);
            let allowed: HashSet<char> = g.alphabet().into_iter().collect();
            let mut seen = HashSet::new();
            for _ in 0..200 {
                let v = value(&g).unwrap();
                assert_eq!(v.chars().count(), 40);
                assert!(v.chars().all(|c| allowed.contains(&c)), "{charset:?}: {v}");
                assert!(seen.insert(v), "{charset:?}: repeated value");
            }
        }
    }

    #[test]
    fn symbols_join_the_alphabet_once() {
        let a = gen_(Charset::Numeric, "!!€9", 1).alphabet();
        assert_eq!(a.iter().collect::<String>(), "0123456789!€");
        let a = gen_(Charset::Alphanumeric, DEFAULT_SYMBOLS, 1).alphabet();
        assert_eq!(a.len(), 62 + DEFAULT_SYMBOLS.len());
        let v = random_string(&mut SysRng, &a, 100_000).unwrap();
        assert!(v.chars().any(|c| DEFAULT_SYMBOLS.contains(c)));
    }

    /// Chi-square of byte counts over all 256 values.
    fn chi_square_bytes(sample: &[u8]) -> f64 {
        let mut counts = [0u64; 256];
        for b in sample {
            counts[*b as usize] += 1;
        }
        let expected = sample.len() as f64 / 256.0;
        counts
            .iter()
            .map(|&o| (o as f64 - expected).powi(2) / expected)
            .sum()
    }

    /// Every encoding decodes back to bytes of the asked length, which are
    /// uniform (chi-square over all 256 values); the encodings are the RFC
    /// 4648 ones.
    #[test]
    fn bytes_are_uniform_and_decode_in_every_encoding() {
        for encoding in Encoding::ALL {
            let b = Bytes {
                length: 250_000,
                encoding,
            };
            let out = bytes(&b).unwrap();
            let raw = match encoding {
                Encoding::Raw => out.clone(),
                Encoding::Base64 => data_encoding::BASE64.decode(&out).unwrap(),
                Encoding::Base64url => data_encoding::BASE64URL.decode(&out).unwrap(),
                Encoding::Base32 => data_encoding::BASE32.decode(&out).unwrap(),
                Encoding::Hex => data_encoding::HEXLOWER.decode(&out).unwrap(),
            };
            assert_eq!(raw.len(), 250_000, "{encoding:?}");
            assert_eq!(out.len(), b.encoded_len(), "{encoding:?}");
            let chi = chi_square_bytes(&raw);
            assert!(chi < critical(255.0), "{encoding:?}: chi-square {chi:.1}");
        }
        // A Fernet key: 32 bytes, URL-safe base64 with its padding.
        let fernet = bytes(&Bytes {
            length: 32,
            encoding: Encoding::Base64url,
        })
        .unwrap();
        assert_eq!((fernet.len(), fernet[43]), (44, b'='));
        assert!(
            chi_square_bytes(&[7u8; 100_000]) > critical(255.0),
            "the test can fail"
        );
    }

    #[test]
    fn uuids_are_version_4_and_distinct() {
        let mut seen = HashSet::new();
        for _ in 0..1000 {
            let u = uuid().unwrap();
            let parsed = ::uuid::Uuid::parse_str(&u).unwrap();
            assert_eq!(parsed.get_version_num(), 4, "{u}");
            assert_eq!(parsed.get_variant(), ::uuid::Variant::RFC4122, "{u}");
            assert_eq!(parsed.hyphenated().to_string(), u, "lowercase, hyphenated");
            assert!(seen.insert(u));
        }
    }

    /// Password rules: every value has its minimums; the free draws are
    /// uniform over the alphabet (the class counts beyond the minimums
    /// follow the alphabet's proportions) and the positions are shuffled
    /// uniformly (a rule's class lands at each position equally often).
    #[test]
    fn password_rules_hold_and_positions_are_uniform() {
        let g = Chars {
            min: Minimums {
                digits: 2,
                lower: 0,
                upper: 1,
                symbols: 1,
            },
            ..gen_(Charset::Alphanumeric, "!#", 8)
        };
        let n = 200_000;
        let mut digit_at = [0u64; 8];
        let mut symbol_at = [0u64; 8];
        for _ in 0..n {
            let v: Vec<char> = value(&g).unwrap().chars().collect();
            assert_eq!(v.len(), 8);
            let count = |class| v.iter().filter(|c| Class::of(**c) == class).count();
            assert!(
                count(Class::Digit) >= 2 && count(Class::Upper) >= 1 && count(Class::Symbol) >= 1
            );
            for (i, c) in v.iter().enumerate() {
                match Class::of(*c) {
                    Class::Digit => digit_at[i] += 1,
                    Class::Symbol => symbol_at[i] += 1,
                    _ => {}
                }
            }
        }
        for at in [digit_at, symbol_at] {
            let total: u64 = at.iter().sum();
            let expected = total as f64 / 8.0;
            let chi: f64 = at
                .iter()
                .map(|&o| (o as f64 - expected).powi(2) / expected)
                .sum();
            assert!(chi < critical(7.0), "positions {at:?}: chi-square {chi:.1}");
        }
        // Unshuffled (the minimums first), the same test fails.
        let mut first = [0u64; 8];
        first[0] = 1000;
        first[1] = 1000;
        let chi: f64 = first
            .iter()
            .map(|&o| (o as f64 - 250.0).powi(2) / 250.0)
            .sum();
        assert!(chi > critical(7.0));
        // The free draws: over the 4 free positions, digits come 10/64 of the time.
        let free_digits = digit_at.iter().sum::<u64>() as f64 - 2.0 * n as f64;
        let share = free_digits / (4.0 * n as f64);
        assert!((share - 10.0 / 64.0).abs() < 0.005, "free digits {share}");
    }
}
