//! Signing keys: a private key from the OS CSPRNG as PEM (PKCS#8), and the
//! public JWK of such a key with its RFC 7638 thumbprint as `kid`.
//!
//! ES256 and EdDSA keys come from ring (through rcgen, already here for the
//! webhook's certificates); ring cannot generate RSA keys, so RS256 keys
//! come from the RustCrypto `rsa` crate.

use crate::api::SigningAlgorithm;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// RSA modulus size of RS256 keys, in bits (RFC 7518 asks for at least 2048).
pub const RSA_BITS: usize = 2048;

/// Why a key could not be made or read: never the key itself.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("generating a {0} key: {1}")]
    Generate(&'static str, String),
    #[error("the {0} private key does not parse as PKCS#8 PEM of that algorithm")]
    Parse(&'static str),
}

/// A public JWK (RFC 7517) of a signing key: the key type's members, then
/// `kid` (its RFC 7638 thumbprint), `alg` and `use`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crv: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
    pub kid: String,
    pub alg: String,
    #[serde(rename = "use")]
    pub use_: String,
}

fn b64(bytes: &[u8]) -> String {
    data_encoding::BASE64URL_NOPAD.encode(bytes)
}

/// A new private key for `alg`, as PKCS#8 PEM.
pub fn generate(alg: SigningAlgorithm) -> Result<String, KeyError> {
    let name = alg.as_str();
    let failed = |e: &dyn std::fmt::Display| KeyError::Generate(name, e.to_string());
    match alg {
        SigningAlgorithm::ES256 => rcgen::KeyPair::generate_for(ring_algorithm(alg))
            .map(|k| k.serialize_pem())
            .map_err(|e| failed(&e)),
        SigningAlgorithm::EdDSA => {
            let key = rcgen::KeyPair::generate_for(ring_algorithm(alg)).map_err(|e| failed(&e))?;
            version_1(key.serialized_der()).map_err(|e| failed(&e))
        }
        SigningAlgorithm::RS256 => {
            let key =
                rsa::PrivateKey::new(&mut rand::rngs::SysRng, RSA_BITS).map_err(|e| failed(&e))?;
            key.to_pkcs8_pem(LineEnding::LF)
                .map(|pem| pem.to_string())
                .map_err(|e| failed(&e))
        }
    }
}

/// A PKCS#8 document written again as version 1 (RFC 5208), without the
/// public key that version 2 (RFC 5958) may carry: ring writes Ed25519 keys
/// as version 2, which OpenSSL 3.0 and pyca/cryptography do not read.
fn version_1(der: &[u8]) -> Result<String, pkcs8::Error> {
    use pkcs8::EncodePrivateKey;
    let info = pkcs8::PrivateKeyInfoRef::try_from(der)?;
    let v1 = pkcs8::PrivateKeyInfoRef::new(info.algorithm, info.private_key);
    Ok(v1.to_pkcs8_pem(pkcs8::LineEnding::LF)?.to_string())
}

fn ring_algorithm(alg: SigningAlgorithm) -> &'static rcgen::SignatureAlgorithm {
    match alg {
        SigningAlgorithm::ES256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        SigningAlgorithm::EdDSA => &rcgen::PKCS_ED25519,
        SigningAlgorithm::RS256 => &rcgen::PKCS_RSA_SHA256,
    }
}

/// The public JWK of the `alg` private key `pem`.
pub fn public_jwk(alg: SigningAlgorithm, pem: &str) -> Result<Jwk, KeyError> {
    let name = alg.as_str();
    let unparsable = || KeyError::Parse(name);
    let mut jwk = Jwk {
        kty: String::new(),
        crv: None,
        x: None,
        y: None,
        n: None,
        e: None,
        kid: String::new(),
        alg: name.to_string(),
        use_: "sig".to_string(),
    };
    match alg {
        SigningAlgorithm::ES256 | SigningAlgorithm::EdDSA => {
            let key = rcgen::KeyPair::from_pem_and_sign_algo(pem, ring_algorithm(alg))
                .map_err(|_| unparsable())?;
            let raw = key.public_key_raw();
            if alg == SigningAlgorithm::ES256 {
                // The uncompressed point: 0x04, then x and y of 32 bytes each.
                if raw.len() != 65 || raw[0] != 4 {
                    return Err(unparsable());
                }
                jwk.kty = "EC".into();
                jwk.crv = Some("P-256".into());
                jwk.x = Some(b64(&raw[1..33]));
                jwk.y = Some(b64(&raw[33..]));
            } else {
                jwk.kty = "OKP".into();
                jwk.crv = Some("Ed25519".into());
                jwk.x = Some(b64(raw));
            }
        }
        SigningAlgorithm::RS256 => {
            let key = rsa::PrivateKey::from_pkcs8_pem(pem).map_err(|_| unparsable())?;
            jwk.kty = "RSA".into();
            jwk.n = Some(b64(&key.n_bytes()));
            jwk.e = Some(b64(&key.e_bytes()));
        }
    }
    jwk.kid = thumbprint(&jwk);
    Ok(jwk)
}

/// The RFC 7638 thumbprint: SHA-256 of the required members in
/// lexicographic order without white space, base64url without padding.
pub fn thumbprint(jwk: &Jwk) -> String {
    let m =
        |v: &Option<String>| serde_json::to_string(v.as_deref().unwrap_or("")).expect("a string");
    let canonical = match jwk.kty.as_str() {
        "EC" => format!(
            r#"{{"crv":{},"kty":"EC","x":{},"y":{}}}"#,
            m(&jwk.crv),
            m(&jwk.x),
            m(&jwk.y)
        ),
        "OKP" => format!(r#"{{"crv":{},"kty":"OKP","x":{}}}"#, m(&jwk.crv), m(&jwk.x)),
        _ => format!(r#"{{"e":{},"kty":"RSA","n":{}}}"#, m(&jwk.e), m(&jwk.n)),
    };
    b64(&Sha256::digest(canonical.as_bytes()))
}

/// Upper bounds, in bytes, of an `alg` private key's PEM and of its public
/// JWK as a JWKS holds it (the Secret's size check).
pub fn max_sizes(alg: SigningAlgorithm) -> (usize, usize) {
    match alg {
        SigningAlgorithm::ES256 => (320, 256),
        SigningAlgorithm::EdDSA => (256, 192),
        SigningAlgorithm::RS256 => (1800, 512),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_algorithm_makes_distinct_keys_whose_jwk_fits_and_reads_back() {
        for alg in SigningAlgorithm::ALL {
            let (a, b) = (generate(alg).unwrap(), generate(alg).unwrap());
            // PKCS#8 version 1 (no public key inside): what every reader takes.
            let der = pem::parse(&a).unwrap();
            let info = pkcs8::PrivateKeyInfoRef::try_from(der.contents()).unwrap();
            assert!(info.public_key.is_none(), "{alg:?}: a version 2 document");
            assert_ne!(a, b, "{alg:?}: two keys alike");
            assert!(
                a.starts_with("-----BEGIN PRIVATE KEY-----\n"),
                "{alg:?}: {}",
                &a[..30]
            );
            let jwk = public_jwk(alg, &a).unwrap();
            let (pem_max, jwk_max) = max_sizes(alg);
            assert!(a.len() <= pem_max, "{alg:?}: PEM of {} bytes", a.len());
            let json = serde_json::to_string(&jwk).unwrap();
            assert!(
                json.len() <= jwk_max,
                "{alg:?}: JWK of {} bytes",
                json.len()
            );
            assert_eq!(jwk.alg, alg.as_str());
            // The same key reads back to the same JWK; another key to another kid.
            assert_eq!(public_jwk(alg, &a).unwrap(), jwk);
            assert_ne!(public_jwk(alg, &b).unwrap().kid, jwk.kid);
            // A key of another algorithm is refused, not misread.
            let other = SigningAlgorithm::ALL
                .into_iter()
                .find(|o| *o != alg)
                .unwrap();
            assert!(public_jwk(other, &a).is_err(), "{alg:?} read as {other:?}");
        }
    }

    #[test]
    fn members_have_their_sizes() {
        let ec = public_jwk(
            SigningAlgorithm::ES256,
            &generate(SigningAlgorithm::ES256).unwrap(),
        )
        .unwrap();
        assert_eq!((ec.kty.as_str(), ec.crv.as_deref()), ("EC", Some("P-256")));
        assert_eq!((ec.x.unwrap().len(), ec.y.unwrap().len()), (43, 43));
        let ed = public_jwk(
            SigningAlgorithm::EdDSA,
            &generate(SigningAlgorithm::EdDSA).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (ed.kty.as_str(), ed.crv.as_deref(), ed.x.unwrap().len()),
            ("OKP", Some("Ed25519"), 43)
        );
        let rsa = public_jwk(
            SigningAlgorithm::RS256,
            &generate(SigningAlgorithm::RS256).unwrap(),
        )
        .unwrap();
        // 2048 bits: 256 bytes, 342 base64url characters; e = 65537.
        assert_eq!(
            (rsa.n.unwrap().len(), rsa.e.as_deref()),
            (342, Some("AQAB"))
        );
    }

    /// RFC 7638 section 3.1's example key and thumbprint.
    #[test]
    fn thumbprint_of_the_rfc_example() {
        let jwk = Jwk {
            kty: "RSA".into(),
            crv: None,
            x: None,
            y: None,
            n: Some("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw".into()),
            e: Some("AQAB".into()),
            kid: String::new(),
            alg: "RS256".into(),
            use_: "sig".into(),
        };
        assert_eq!(
            thumbprint(&jwk),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }
}
