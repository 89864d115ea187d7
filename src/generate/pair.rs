//! Key pairs (`sshKeyPair`, `privateKey`): a private key from the OS
//! CSPRNG, written in OpenSSH format or as PEM, and the public key derived
//! from the stored private key (so a kept private key gives the same public
//! key in every version, byte for byte).
//!
//! Ed25519 PEM keys come from ring, like signing keys (written as PKCS#8
//! version 1, which OpenSSL reads); ECDSA keys from the RustCrypto curves
//! (ring has no P-521); RSA keys from the `rsa` crate; the OpenSSH formats
//! from `ssh-key`.

use super::keypair::{self, KeyError};
use crate::api::{KeyAlgorithm, KeyEncoding, SigningAlgorithm};
use crate::version::{KeyShape, PrivateKey, SshKeyPair};
use rand::SeedableRng;
use rand::rngs::{StdRng, SysRng};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use ssh_key::private::{EcdsaKeypair, Ed25519Keypair, KeypairData, RsaKeypair};

fn failed(what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> KeyError {
    move |e| KeyError::Generate(what, e.to_string())
}

/// A CSPRNG seeded from the operating system's (the curves' and ssh-key's
/// generators take an infallible one; the seeding is where it can fail).
fn rng(what: &'static str) -> Result<StdRng, KeyError> {
    StdRng::try_from_rng(&mut SysRng).map_err(|e| failed(what)(&e))
}

fn rsa_key(bits: u32) -> Result<rsa::PrivateKey, KeyError> {
    rsa::PrivateKey::new(&mut SysRng, bits as usize).map_err(|e| failed("RSA")(&e))
}

/// A new key of curve crate `$c` as PEM: SEC1 when `$sec1`, else PKCS#8.
macro_rules! ec_pem {
    ($c:ident, $sec1:expr) => {{
        use p256::elliptic_curve::Generate;
        let key = $c::SecretKey::try_generate_from_rng(&mut SysRng).map_err(|e| e.to_string())?;
        if $sec1 {
            key.to_sec1_pem(LineEnding::LF)
                .map(|p| p.to_string())
                .map_err(|e| e.to_string())
        } else {
            key.to_pkcs8_pem(LineEnding::LF)
                .map(|p| p.to_string())
                .map_err(|e| e.to_string())
        }
    }};
}

/// The public key PEM of the `$c` private key PEM `$private` (`None`: it
/// does not parse as one).
macro_rules! ec_public {
    ($c:ident, $private:expr, $sec1:expr) => {{
        let key = if $sec1 {
            $c::SecretKey::from_sec1_pem($private).ok()
        } else {
            $c::SecretKey::from_pkcs8_pem($private).ok()
        };
        key.map(|k| k.public_key().to_public_key_pem(LineEnding::LF))
    }};
}

/// A new SSH private key for `p`, in OpenSSH format, with its comment.
pub fn ssh_private(p: &SshKeyPair) -> Result<String, KeyError> {
    let data: KeypairData = match p.shape.algorithm {
        KeyAlgorithm::Ed25519 => {
            let mut seed = [0u8; 32];
            rand::TryRng::try_fill_bytes(&mut SysRng, &mut seed)
                .map_err(|e| failed("Ed25519")(&e))?;
            Ed25519Keypair::from_seed(&seed).into()
        }
        KeyAlgorithm::Ecdsa => {
            let curve = match p.shape.size {
                384 => ssh_key::EcdsaCurve::NistP384,
                521 => ssh_key::EcdsaCurve::NistP521,
                _ => ssh_key::EcdsaCurve::NistP256,
            };
            EcdsaKeypair::random(&mut rng("ECDSA")?, curve)
                .map_err(|e| failed("ECDSA")(&e))?
                .into()
        }
        KeyAlgorithm::Rsa => RsaKeypair::try_from(rsa_key(p.shape.size)?)
            .map_err(|e| failed("RSA")(&e))?
            .into(),
    };
    let key = ssh_key::PrivateKey::new(data, p.comment.as_str()).map_err(|e| failed("SSH")(&e))?;
    key.to_openssh(ssh_key::LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|e| failed("SSH")(&e))
}

/// The authorized_keys line of the OpenSSH private key `private`.
pub fn ssh_public(private: &str) -> Result<String, KeyError> {
    let key = ssh_key::PrivateKey::from_openssh(private).map_err(|_| KeyError::Parse("SSH"))?;
    let line = key
        .public_key()
        .to_openssh()
        .map_err(|_| KeyError::Parse("SSH"))?;
    Ok(format!("{line}\n"))
}

/// A new PEM private key for `p`.
pub fn pem_private(p: &PrivateKey) -> Result<String, KeyError> {
    let KeyShape { algorithm, size } = p.shape;
    match (algorithm, p.encoding) {
        // ring's key, written as PKCS#8 version 1 (the only encoding).
        (KeyAlgorithm::Ed25519, _) => keypair::generate(SigningAlgorithm::EdDSA),
        (KeyAlgorithm::Rsa, encoding) => {
            let key = rsa_key(size)?;
            let pem = if encoding == KeyEncoding::Pkcs1 {
                key.to_pkcs1_pem(LineEnding::LF)
                    .map(|p| p.to_string())
                    .map_err(|e| e.to_string())
            } else {
                key.to_pkcs8_pem(LineEnding::LF)
                    .map(|p| p.to_string())
                    .map_err(|e| e.to_string())
            };
            pem.map_err(|e| failed("RSA")(&e))
        }
        (KeyAlgorithm::Ecdsa, encoding) => {
            let sec1 = encoding == KeyEncoding::Sec1;
            let pem = || -> Result<String, String> {
                match size {
                    384 => ec_pem!(p384, sec1),
                    521 => ec_pem!(p521, sec1),
                    _ => ec_pem!(p256, sec1),
                }
            };
            pem().map_err(|e| failed("ECDSA")(&e))
        }
    }
}

/// The public key (PEM SubjectPublicKeyInfo) of the PEM private key
/// `private` of shape `p`.
pub fn pem_public(p: &PrivateKey, private: &str) -> Result<String, KeyError> {
    let KeyShape { algorithm, size } = p.shape;
    let unparsable = || KeyError::Parse(algorithm.as_str());
    let sec1 = p.encoding == KeyEncoding::Sec1;
    let public = match algorithm {
        KeyAlgorithm::Ed25519 => {
            let key = rcgen::KeyPair::from_pem_and_sign_algo(private, &rcgen::PKCS_ED25519)
                .map_err(|_| unparsable())?;
            return Ok(key.public_key_pem());
        }
        KeyAlgorithm::Rsa => {
            let key = if p.encoding == KeyEncoding::Pkcs1 {
                rsa::PrivateKey::from_pkcs1_pem(private).map_err(|_| unparsable())?
            } else {
                rsa::PrivateKey::from_pkcs8_pem(private).map_err(|_| unparsable())?
            };
            key.to_public_key().to_public_key_pem(LineEnding::LF)
        }
        KeyAlgorithm::Ecdsa => match size {
            384 => ec_public!(p384, private, sec1).ok_or_else(unparsable)?,
            521 => ec_public!(p521, private, sec1).ok_or_else(unparsable)?,
            _ => ec_public!(p256, private, sec1).ok_or_else(unparsable)?,
        },
    };
    public.map_err(|_| unparsable())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(algorithm: KeyAlgorithm, size: u32) -> KeyShape {
        KeyShape { algorithm, size }
    }

    fn ssh(algorithm: KeyAlgorithm, size: u32, comment: &str) -> SshKeyPair {
        SshKeyPair {
            shape: shape(algorithm, size),
            comment: comment.into(),
            public_key: "k.pub".into(),
        }
    }

    fn pem(algorithm: KeyAlgorithm, size: u32, encoding: KeyEncoding) -> PrivateKey {
        PrivateKey {
            shape: shape(algorithm, size),
            encoding,
            public_key: "k.pub".into(),
        }
    }

    #[test]
    fn ssh_keys_of_each_type_read_back_with_their_public_key_and_comment() {
        for (alg, size, prefix) in [
            (KeyAlgorithm::Ed25519, 0, "ssh-ed25519 "),
            (KeyAlgorithm::Ecdsa, 256, "ecdsa-sha2-nistp256 "),
            (KeyAlgorithm::Ecdsa, 384, "ecdsa-sha2-nistp384 "),
            (KeyAlgorithm::Ecdsa, 521, "ecdsa-sha2-nistp521 "),
            (KeyAlgorithm::Rsa, 2048, "ssh-rsa "),
        ] {
            let p = ssh(alg, size, "deploy@ci");
            let private = ssh_private(&p).unwrap();
            assert!(private.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
            let public = ssh_public(&private).unwrap();
            assert!(public.starts_with(prefix), "{public}");
            assert!(public.ends_with(" deploy@ci\n"), "{public}");
            // Derived again from the same private key: the same bytes.
            assert_eq!(ssh_public(&private).unwrap(), public);
            assert_ne!(ssh_private(&p).unwrap(), private, "fresh each time");
        }
        let bare = ssh_public(&ssh_private(&ssh(KeyAlgorithm::Ed25519, 0, "")).unwrap()).unwrap();
        assert_eq!(bare.split(' ').count(), 2, "no comment field: {bare}");
    }

    #[test]
    fn pem_keys_have_the_header_of_their_encoding_and_a_public_key() {
        for (alg, size, encoding, header) in [
            (KeyAlgorithm::Ed25519, 0, KeyEncoding::Pkcs8, "PRIVATE KEY"),
            (KeyAlgorithm::Ecdsa, 256, KeyEncoding::Pkcs8, "PRIVATE KEY"),
            (
                KeyAlgorithm::Ecdsa,
                384,
                KeyEncoding::Sec1,
                "EC PRIVATE KEY",
            ),
            (KeyAlgorithm::Ecdsa, 521, KeyEncoding::Pkcs8, "PRIVATE KEY"),
            (
                KeyAlgorithm::Rsa,
                2048,
                KeyEncoding::Pkcs1,
                "RSA PRIVATE KEY",
            ),
            (KeyAlgorithm::Rsa, 2048, KeyEncoding::Pkcs8, "PRIVATE KEY"),
        ] {
            let p = pem(alg, size, encoding);
            let private = pem_private(&p).unwrap();
            assert!(
                private.starts_with(&format!("-----BEGIN {header}-----\n")),
                "{alg:?} {encoding:?}"
            );
            let public = pem_public(&p, &private).unwrap();
            assert!(
                public.starts_with("-----BEGIN PUBLIC KEY-----\n"),
                "{public}"
            );
            assert_eq!(pem_public(&p, &private).unwrap(), public);
        }
    }

    #[test]
    fn a_private_key_of_another_shape_is_not_read_as_this_one() {
        let p384 = pem(KeyAlgorithm::Ecdsa, 384, KeyEncoding::Pkcs8);
        let private = pem_private(&p384).unwrap();
        let p256 = pem(KeyAlgorithm::Ecdsa, 256, KeyEncoding::Pkcs8);
        assert!(pem_public(&p256, &private).is_err());
        assert!(ssh_public("not a key").is_err());
    }
}
