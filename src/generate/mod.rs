//! Random values from the OS CSPRNG: strings with unbiased (rejection)
//! sampling (this file), signing keys and their public JWKs ([`keypair`]),
//! and a signing key's JWKS across versions ([`jwks`], pure).

pub mod jwks;
pub mod keypair;

use crate::version::{Chars, Kind};
use rand::TryRng;
use rand::rngs::SysRng;

/// A value could not be generated: the message says why (never a value).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failed(String);

/// The value of a version's generated key of kind `kind` (its own key; a
/// signing key's JWKS is derived from it by [`jwks`]).
pub fn key_value(kind: &Kind) -> Result<Vec<u8>, Failed> {
    match kind {
        Kind::Chars(c) => value(c)
            .map(String::into_bytes)
            .map_err(|e| Failed(format!("the operating system's random source failed: {e}"))),
        Kind::SigningKey(s) => keypair::generate(s.algorithm)
            .map(String::into_bytes)
            .map_err(|e| Failed(e.to_string())),
    }
}

/// Whether generating a value of `kind` takes enough CPU (tens to hundreds
/// of milliseconds: RSA) to belong off the async runtime's threads.
pub fn costly(kind: &Kind) -> bool {
    matches!(kind, Kind::SigningKey(s) if s.algorithm == crate::api::SigningAlgorithm::RS256)
}

/// The alphabet of a generator: the charset's characters, then each symbol
/// character not already in it (duplicates would bias the draw).
pub fn alphabet(g: &Chars) -> Vec<char> {
    let mut out: Vec<char> = g.charset.chars().chars().collect();
    for c in g.symbols.chars() {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
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

/// A value for one generated key, from the operating system's CSPRNG.
pub fn value(g: &Chars) -> Result<String, rand::rngs::SysError> {
    random_string(&mut SysRng, &alphabet(g), g.length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Charset, DEFAULT_SYMBOLS};
    use std::collections::{BTreeMap, HashSet};

    fn gen_(charset: Charset, symbols: &str, length: usize) -> Chars {
        Chars {
            length,
            charset,
            symbols: symbols.to_string(),
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
        let a62 = alphabet(&gen_(Charset::Alphanumeric, "", 1));
        let a94 = alphabet(&gen_(Charset::Ascii, "", 1));
        assert_eq!((a62.len(), a94.len()), (62, 94));
        assert_uniform(&a62);
        assert_uniform(&a94);
    }

    /// The test above must be able to fail: plain `byte % 62` (modulo bias,
    /// the first 8 characters come 5/4 as often) is caught.
    #[test]
    fn chi_square_catches_modulo_bias() {
        let a62 = alphabet(&gen_(Charset::Alphanumeric, "", 1));
        let mut bytes = vec![0u8; 2_000_000];
        SysRng.try_fill_bytes(&mut bytes).unwrap();
        let biased: String = bytes.iter().map(|b| a62[*b as usize % 62]).collect();
        assert!(chi_square(&a62, &biased) > critical(61.0));
    }

    #[test]
    fn values_have_the_length_and_alphabet_and_do_not_repeat() {
        for charset in Charset::ALL {
            let g = gen_(charset, "", 40);
            let allowed: HashSet<char> = alphabet(&g).into_iter().collect();
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
        let a = alphabet(&gen_(Charset::Numeric, "!!€9", 1));
        assert_eq!(a.iter().collect::<String>(), "0123456789!€");
        let a = alphabet(&gen_(Charset::Alphanumeric, DEFAULT_SYMBOLS, 1));
        assert_eq!(a.len(), 62 + DEFAULT_SYMBOLS.len());
        let v = random_string(&mut SysRng, &a, 100_000).unwrap();
        assert!(v.chars().any(|c| DEFAULT_SYMBOLS.contains(c)));
    }
}
