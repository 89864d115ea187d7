//! Certificate material: issuing a CA and a serving certificate (ECDSA P-256,
//! rcgen) and reading what a PEM holds (x509-parser). No decisions here; see
//! `lifecycle`.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData, SanType,
};
use std::net::IpAddr;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

/// How far back a new certificate's notBefore goes: clocks of the apiserver
/// and the controller may differ a little.
pub const BACKDATE_SECONDS: i64 = 300;

/// A certificate and its private key, PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub cert: String,
    pub key: String,
}

/// What the decisions need to know of one certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub subject: String,
    pub issuer: String,
    pub not_before: i64,
    pub not_after: i64,
    /// DNS names and IP addresses, sorted.
    pub sans: Vec<String>,
    /// The DER, to compare certificates.
    pub der: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("no PEM certificate")]
    NoCertificate,
    #[error("unreadable certificate: {0}")]
    Parse(String),
    #[error("cannot issue a certificate: {0}")]
    Issue(#[from] rcgen::Error),
}

/// Every certificate of a PEM bundle, as DER (in order).
pub fn pem_ders(pem: &str) -> Result<Vec<Vec<u8>>, CertError> {
    let mut out = Vec::new();
    for p in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
        let p = p.map_err(|e| CertError::Parse(e.to_string()))?;
        if p.label == "CERTIFICATE" {
            out.push(p.contents);
        }
    }
    Ok(out)
}

/// The first certificate of a PEM bundle.
pub fn first_der(pem: &str) -> Result<Vec<u8>, CertError> {
    pem_ders(pem)?
        .into_iter()
        .next()
        .ok_or(CertError::NoCertificate)
}

pub fn info(der: &[u8]) -> Result<Info, CertError> {
    let (_, c) = X509Certificate::from_der(der).map_err(|e| CertError::Parse(e.to_string()))?;
    let mut sans: Vec<String> = match c.subject_alternative_name() {
        Ok(Some(ext)) => ext
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some(d.to_string()),
                GeneralName::IPAddress(b) => ip(b).map(|i| i.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    sans.sort();
    Ok(Info {
        subject: c.subject().to_string(),
        issuer: c.issuer().to_string(),
        not_before: c.validity().not_before.timestamp(),
        not_after: c.validity().not_after.timestamp(),
        sans,
        der: der.to_vec(),
    })
}

fn ip(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(b).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(b).ok()?)),
        _ => None,
    }
}

/// Whether `key_pem` is the private key of the certificate `der`.
pub fn key_matches(der: &[u8], key_pem: &str) -> bool {
    let (Ok(key), Ok((_, c))) = (KeyPair::from_pem(key_pem), X509Certificate::from_der(der)) else {
        return false;
    };
    key.subject_public_key_info() == c.public_key().raw
}

/// Whether the certificate `der` carries a valid signature of `ca_der`'s key.
pub fn signed_by(der: &[u8], ca_der: &[u8]) -> bool {
    let (Ok((_, c)), Ok((_, ca))) = (
        X509Certificate::from_der(der),
        X509Certificate::from_der(ca_der),
    ) else {
        return false;
    };
    c.issuer() == ca.subject() && c.verify_signature(Some(ca.public_key())).is_ok()
}

fn time(unix: i64) -> Result<time::OffsetDateTime, CertError> {
    time::OffsetDateTime::from_unix_timestamp(unix).map_err(|e| CertError::Parse(e.to_string()))
}

/// A new self-signed CA valid from `not_before` to `not_after` (unix seconds).
/// Its name is unique, so certificates it signs are told apart by issuer.
pub fn issue_ca(not_before: i64, not_after: i64) -> Result<Pair, CertError> {
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::default();
    let suffix = crate::generate::value(&crate::version::Generated {
        length: 8,
        charset: crate::api::Charset::Lower,
        symbols: String::new(),
        previous: false,
    })
    .map_err(|e| CertError::Parse(e.to_string()))?;
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(
        DnType::CommonName,
        format!("randomsecret webhook CA {not_before}-{suffix}"),
    );
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = time(not_before)?;
    p.not_after = time(not_after)?;
    let cert = p.self_signed(&key)?;
    Ok(Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// A serving certificate for `sans` (DNS names or IP addresses), signed by `ca`.
pub fn issue_leaf(
    ca: &Pair,
    sans: &[String],
    not_before: i64,
    not_after: i64,
) -> Result<Pair, CertError> {
    let ca_key = KeyPair::from_pem(&ca.key)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert, ca_key)?;
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::default();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(
        DnType::CommonName,
        sans.first().map_or("randomsecret-webhook", String::as_str),
    );
    p.subject_alt_names = sans
        .iter()
        .map(|s| match s.parse::<IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => Ok(SanType::DnsName(s.clone().try_into()?)),
        })
        .collect::<Result<_, rcgen::Error>>()?;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.use_authority_key_identifier_extension = true;
    p.not_before = time(not_before)?;
    p.not_after = time(not_after)?;
    let cert = p.signed_by(&key, &issuer)?;
    Ok(Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_is_signed_by_its_ca_and_carries_its_names() {
        let ca = issue_ca(1_000, 100_000).unwrap();
        let other = issue_ca(1_000, 100_000).unwrap();
        let sans = vec!["127.0.0.1".to_string(), "svc.ns.svc".to_string()];
        let leaf = issue_leaf(&ca, &sans, 2_000, 50_000).unwrap();
        let (l, c) = (first_der(&leaf.cert).unwrap(), first_der(&ca.cert).unwrap());
        let i = info(&l).unwrap();
        assert_eq!((i.not_before, i.not_after), (2_000, 50_000));
        assert_eq!(i.sans, sans);
        assert!(signed_by(&l, &c));
        assert!(!signed_by(&l, &first_der(&other.cert).unwrap()));
        assert!(key_matches(&l, &leaf.key));
        assert!(!key_matches(&l, &ca.key));
        assert_ne!(
            info(&c).unwrap().subject,
            info(&first_der(&other.cert).unwrap()).unwrap().subject
        );
    }

    #[test]
    fn bundles_split_into_certificates() {
        let a = issue_ca(0, 10_000).unwrap();
        let b = issue_ca(0, 10_000).unwrap();
        let both = format!("{}{}", a.cert, b.cert);
        assert_eq!(pem_ders(&both).unwrap().len(), 2);
        assert!(matches!(first_der(""), Err(CertError::NoCertificate)));
    }
}
