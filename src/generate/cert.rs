//! Certificates (`keys.<k>.certificate`): a private key (PKCS#8 PEM, from
//! [`pair`]) and an X.509 certificate for it (rcgen), self-signed or signed
//! by a CA certificate of the same version.

use super::keypair::KeyError;
use super::pair;
use crate::api::{CertificateUsage, KeyEncoding};
use crate::version::{Certificate, PrivateKey};
use rand::TryRng;
use rand::rngs::SysRng;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber,
};
use x509_parser::prelude::{FromDer, X509Certificate};

/// A certificate and its private key, PEM.
#[derive(Debug)]
pub struct Issued {
    pub cert: String,
    pub key: String,
}

/// The CA that signs: its certificate and private key, PEM.
#[derive(Clone, Copy, Debug)]
pub struct Signer<'a> {
    pub cert: &'a str,
    pub key: &'a str,
}

fn failed(e: &dyn std::fmt::Display) -> KeyError {
    KeyError::Generate("certificate", e.to_string())
}

/// A new key and certificate for `c` (named `key` in keys), valid from
/// `now` (unix seconds) for its duration, and no longer than `signer`'s
/// certificate when a CA signs it.
pub fn issue(
    key: &str,
    c: &Certificate,
    signer: Option<Signer>,
    now: i64,
) -> Result<Issued, KeyError> {
    let private = pair::pem_private(&PrivateKey {
        shape: c.key,
        encoding: KeyEncoding::Pkcs8,
        public_key: String::new(),
    })?;
    let key_pair = KeyPair::from_pem(&private).map_err(|e| failed(&e))?;
    let mut p = CertificateParams::default();
    p.distinguished_name = rcgen::DistinguishedName::new();
    let cn = match (c.common_name.is_empty(), c.is_ca) {
        (false, _) => c.common_name.clone(),
        // A CA needs a subject that names it apart from the certificates it signs.
        (true, true) => format!("{key} CA"),
        (true, false) => String::new(),
    };
    if !cn.is_empty() {
        p.distinguished_name.push(DnType::CommonName, cn);
    }
    p.subject_alt_names = c
        .dns_names
        .iter()
        .map(|d| Ok(SanType::DnsName(d.clone().try_into()?)))
        .chain(c.ip_addresses.iter().map(|a| {
            a.parse()
                .map(SanType::IpAddress)
                .map_err(|_| rcgen::Error::InvalidIpAddressOctetLength(0))
        }))
        .collect::<Result<_, rcgen::Error>>()
        .map_err(|e| failed(&e))?;
    p.is_ca = if c.is_ca {
        // A root that signs end-entity certificates only.
        IsCa::Ca(BasicConstraints::Constrained(0))
    } else {
        IsCa::ExplicitNoCa
    };
    for u in &c.usages {
        match usage(*u) {
            Usage::Key(k) => p.key_usages.push(k),
            Usage::Extended(e) => p.extended_key_usages.push(e),
        }
    }
    let mut serial = [0u8; 16];
    SysRng.try_fill_bytes(&mut serial).map_err(|e| failed(&e))?;
    serial[0] &= 0x7f; // positive, as RFC 5280 asks
    p.serial_number = Some(SerialNumber::from_slice(&serial));
    let mut not_after = now.saturating_add(c.seconds as i64);
    if let Some(s) = signer {
        not_after = not_after.min(
            not_after_of(s.cert)
                .ok_or_else(|| failed(&"the issuer's certificate does not parse"))?,
        );
    }
    p.not_before = time(now)?;
    p.not_after = time(not_after)?;
    let cert = match signer {
        None => p.self_signed(&key_pair),
        Some(s) => {
            p.use_authority_key_identifier_extension = true;
            let ca_key = KeyPair::from_pem(s.key).map_err(|e| failed(&e))?;
            let issuer = rcgen::Issuer::from_ca_cert_pem(s.cert, ca_key).map_err(|e| failed(&e))?;
            p.signed_by(&key_pair, &issuer)
        }
    }
    .map_err(|e| failed(&e))?;
    Ok(Issued {
        cert: cert.pem(),
        key: private,
    })
}

fn time(unix: i64) -> Result<time::OffsetDateTime, KeyError> {
    time::OffsetDateTime::from_unix_timestamp(unix).map_err(|e| failed(&e))
}

enum Usage {
    Key(KeyUsagePurpose),
    Extended(ExtendedKeyUsagePurpose),
}

fn usage(u: CertificateUsage) -> Usage {
    use CertificateUsage as U;
    match u {
        U::DigitalSignature => Usage::Key(KeyUsagePurpose::DigitalSignature),
        U::KeyEncipherment => Usage::Key(KeyUsagePurpose::KeyEncipherment),
        U::KeyAgreement => Usage::Key(KeyUsagePurpose::KeyAgreement),
        U::CertSign => Usage::Key(KeyUsagePurpose::KeyCertSign),
        U::CrlSign => Usage::Key(KeyUsagePurpose::CrlSign),
        U::ServerAuth => Usage::Extended(ExtendedKeyUsagePurpose::ServerAuth),
        U::ClientAuth => Usage::Extended(ExtendedKeyUsagePurpose::ClientAuth),
        U::CodeSigning => Usage::Extended(ExtendedKeyUsagePurpose::CodeSigning),
        U::EmailProtection => Usage::Extended(ExtendedKeyUsagePurpose::EmailProtection),
    }
}

/// The end of the first certificate of the PEM `cert`, in unix seconds.
pub fn not_after_of(cert: &str) -> Option<i64> {
    let pem = ::pem::parse(cert).ok()?;
    let (_, c) = X509Certificate::from_der(pem.contents()).ok()?;
    Some(c.validity().not_after.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::KeyAlgorithm;
    use crate::version::KeyShape;

    fn cert(is_ca: bool, issuer: Option<&str>, seconds: u64) -> Certificate {
        Certificate {
            is_ca,
            issuer: issuer.map(String::from),
            common_name: if is_ca { String::new() } else { "db".into() },
            dns_names: if is_ca {
                vec![]
            } else {
                vec!["db.default.svc".into(), "*.db".into()]
            },
            ip_addresses: if is_ca {
                vec![]
            } else {
                vec!["127.0.0.1".into(), "::1".into()]
            },
            usages: if is_ca {
                vec![CertificateUsage::CertSign, CertificateUsage::CrlSign]
            } else {
                vec![
                    CertificateUsage::ServerAuth,
                    CertificateUsage::DigitalSignature,
                ]
            },
            duration: String::new(),
            seconds,
            key: KeyShape {
                algorithm: KeyAlgorithm::Ecdsa,
                size: 256,
            },
            private_key: "tls.key".into(),
            ca_certificate: None,
        }
    }

    #[test]
    fn a_leaf_is_signed_by_its_ca_with_its_names_and_ends_no_later() {
        let now = 1_800_000_000;
        let ca = issue("ca.crt", &cert(true, None, 3600), None, now).unwrap();
        let signer = Signer {
            cert: &ca.cert,
            key: &ca.key,
        };
        let leaf = issue(
            "tls.crt",
            &cert(false, Some("ca.crt"), 7200),
            Some(signer),
            now,
        )
        .unwrap();
        let der = |pem: &str| ::pem::parse(pem).unwrap().contents().to_vec();
        let (ca_der, leaf_der) = (der(&ca.cert), der(&leaf.cert));
        assert!(crate::webhook::certs::signed_by(&leaf_der, &ca_der));
        let info = crate::webhook::certs::info(&leaf_der).unwrap();
        assert_eq!(info.not_before, now);
        assert_eq!(info.not_after, now + 3600, "clamped to the CA's end");
        assert_eq!(info.sans, ["*.db", "127.0.0.1", "::1", "db.default.svc"]);
        assert!(crate::webhook::certs::key_matches(&leaf_der, &leaf.key));
        assert_eq!(not_after_of(&ca.cert), Some(now + 3600));
        assert!(leaf.key.starts_with("-----BEGIN PRIVATE KEY-----"));
    }

    #[test]
    fn every_key_algorithm_signs() {
        for (algorithm, size) in [
            (KeyAlgorithm::Ed25519, 0),
            (KeyAlgorithm::Ecdsa, 384),
            (KeyAlgorithm::Rsa, 2048),
        ] {
            let mut c = cert(true, None, 60);
            c.key = KeyShape { algorithm, size };
            let ca = issue("ca.crt", &c, None, 0).unwrap();
            let mut l = cert(false, Some("ca.crt"), 60);
            l.key = KeyShape { algorithm, size };
            let leaf = issue(
                "l",
                &l,
                Some(Signer {
                    cert: &ca.cert,
                    key: &ca.key,
                }),
                0,
            )
            .unwrap();
            assert!(
                leaf.cert.starts_with("-----BEGIN CERTIFICATE-----"),
                "{algorithm:?}"
            );
        }
    }
}
