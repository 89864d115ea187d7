//! Certificate material: issuing a CA and a serving certificate (ECDSA P-256,
//! rcgen) and reading what a PEM holds (x509-parser). No decisions here; see
//! `lifecycle`.

use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, Issuer, KeyPair, KeyUsagePurpose, NameConstraints, PublicKeyData,
    SanType,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
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
    /// A CA's name constraints, when they are exactly the shape [`issue_ca`]
    /// writes: the DNS names and single IP addresses it permits, sorted.
    /// None: no constraints, or others (not critical, ranges, other kinds).
    pub limited_to: Option<Vec<String>>,
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
        limited_to: limited_to(&c),
        der: der.to_vec(),
    })
}

/// The names a CA's constraints permit, if they are what [`name_constraints`]
/// makes of them; anything else reads as None.
fn limited_to(c: &X509Certificate<'_>) -> Option<Vec<String>> {
    let ext = c.name_constraints().ok()??;
    if !ext.critical {
        return None;
    }
    let mut names = Vec::new();
    for s in ext.value.permitted_subtrees.as_deref().unwrap_or_default() {
        names.push(match &s.base {
            GeneralName::DNSName(d) if !d.is_empty() => d.to_string(),
            GeneralName::IPAddress(b) => single_ip(b)?.to_string(),
            _ => return None,
        });
    }
    names.sort();
    let excluded: Vec<GeneralSubtree> = ext
        .value
        .excluded_subtrees
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|s| match &s.base {
            GeneralName::DNSName(d) => Some(GeneralSubtree::DnsName(d.to_string())),
            GeneralName::IPAddress(b) if b.len() == 8 => Some(GeneralSubtree::IpAddress(
                CidrSubnet::V4(b[..4].try_into().ok()?, b[4..].try_into().ok()?),
            )),
            GeneralName::IPAddress(b) if b.len() == 32 => Some(GeneralSubtree::IpAddress(
                CidrSubnet::V6(b[..16].try_into().ok()?, b[16..].try_into().ok()?),
            )),
            _ => None,
        })
        .collect::<Option<_>>()?;
    (excluded == name_constraints(&names).excluded_subtrees).then_some(names)
}

/// An address with a full mask (a /32 or /128 subtree).
fn single_ip(b: &[u8]) -> Option<IpAddr> {
    let (addr, mask) = b.split_at(b.len() / 2);
    mask.iter().all(|m| *m == 0xff).then(|| ip(addr))?
}

/// The constraints of a CA for `names` (the serving certificate's SANs):
/// each DNS name (and, as RFC 5280 has it, the names under it) and each IP
/// address alone. A kind with no name permitted is excluded whole (a
/// permitted list constrains only its own kind), so the CA's key cannot
/// sign for any other name or address.
pub fn name_constraints(names: &[String]) -> NameConstraints {
    let mut permitted = Vec::new();
    let (mut dns, mut v4, mut v6) = (false, false, false);
    for n in names {
        permitted.push(match n.parse::<IpAddr>() {
            Ok(ip) => {
                v4 |= ip.is_ipv4();
                v6 |= ip.is_ipv6();
                GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(
                    ip,
                    if ip.is_ipv4() { 32 } else { 128 },
                ))
            }
            Err(_) => {
                dns = true;
                GeneralSubtree::DnsName(n.clone())
            }
        });
    }
    let mut excluded = Vec::new();
    if !dns {
        // An empty dNSName constraint matches every DNS name.
        excluded.push(GeneralSubtree::DnsName(String::new()));
    }
    if !v4 {
        excluded.push(GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            0,
        )));
    }
    if !v6 {
        excluded.push(GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(
            IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            0,
        )));
    }
    NameConstraints {
        permitted_subtrees: permitted,
        excluded_subtrees: excluded,
    }
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

/// A new self-signed CA valid from `not_before` to `not_after` (unix seconds),
/// limited to `names` (critical name constraints, [`name_constraints`]);
/// None: unlimited, as releases before issue 26 made them (tests plant such).
/// Its name is unique, so certificates it signs are told apart by issuer.
pub fn issue_ca(
    not_before: i64,
    not_after: i64,
    names: Option<&[String]>,
) -> Result<Pair, CertError> {
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::default();
    let suffix = crate::generate::value(&crate::version::Chars {
        length: 8,
        charset: crate::api::Charset::Lower,
        symbols: String::new(),
        min: Default::default(),
    })
    .map_err(|e| CertError::Parse(e.to_string()))?;
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(
        DnType::CommonName,
        format!("{} webhook CA {not_before}-{suffix}", crate::api::NAME),
    );
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.name_constraints = names.map(name_constraints);
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
    // Not a host name: verifiers that read the CN as one (OpenSSL) would
    // hold it against the CA's name constraints (an address-only CA excludes
    // every DNS name). The names are in the SANs.
    p.distinguished_name.push(
        DnType::CommonName,
        concat!(crate::api::project!(), " webhook"),
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
        let sans = vec!["127.0.0.1".to_string(), "svc.ns.svc".to_string()];
        let ca = issue_ca(1_000, 100_000, Some(&sans)).unwrap();
        let other = issue_ca(1_000, 100_000, Some(&sans)).unwrap();
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
        let a = issue_ca(0, 10_000, None).unwrap();
        let b = issue_ca(0, 10_000, None).unwrap();
        let both = format!("{}{}", a.cert, b.cert);
        assert_eq!(pem_ders(&both).unwrap().len(), 2);
        assert!(matches!(first_der(""), Err(CertError::NoCertificate)));
    }

    /// The extension as the apiserver reads it: critical, the SANs permitted
    /// one by one, every kind without a SAN excluded whole.
    #[test]
    fn a_ca_carries_critical_name_constraints_for_exactly_its_names() {
        use x509_parser::extensions::ParsedExtension;
        let names = vec!["127.0.0.1".to_string(), "svc.ns.svc".to_string()];
        let ca = issue_ca(0, 10_000, Some(&names)).unwrap();
        let der = first_der(&ca.cert).unwrap();
        let (_, c) = X509Certificate::from_der(&der).unwrap();
        let ext = c
            .extensions()
            .iter()
            .find(|e| e.oid == x509_parser::oid_registry::OID_X509_EXT_NAME_CONSTRAINTS)
            .expect("a name constraints extension");
        assert!(ext.critical);
        let ParsedExtension::NameConstraints(nc) = ext.parsed_extension() else {
            panic!("unparsed name constraints");
        };
        let subtrees = |t: &Option<Vec<x509_parser::extensions::GeneralSubtree<'_>>>| {
            t.iter()
                .flatten()
                .map(|s| match &s.base {
                    GeneralName::DNSName(d) => format!("dns {d}"),
                    GeneralName::IPAddress(b) => format!("ip {b:?}"),
                    other => format!("other {other:?}"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            subtrees(&nc.permitted_subtrees),
            ["ip [127, 0, 0, 1, 255, 255, 255, 255]", "dns svc.ns.svc"]
        );
        // No IPv6 address served: every IPv6 address excluded (::/0).
        assert_eq!(
            subtrees(&nc.excluded_subtrees),
            [format!("ip {:?}", [0u8; 32])]
        );
        assert_eq!(info(&der).unwrap().limited_to, Some(names));

        // Only addresses: every DNS name is excluded (an empty dNSName).
        let only_ip = vec!["127.0.0.1".to_string()];
        assert_eq!(
            name_constraints(&only_ip).excluded_subtrees,
            [
                GeneralSubtree::DnsName(String::new()),
                GeneralSubtree::IpAddress(CidrSubnet::V6([0; 16], [0; 16]))
            ]
        );
        let ca = issue_ca(0, 10_000, Some(&only_ip)).unwrap();
        let i = info(&first_der(&ca.cert).unwrap()).unwrap();
        assert_eq!(i.limited_to, Some(only_ip));
        // A leaf for those names still comes from it.
        let leaf = issue_leaf(&ca, &["127.0.0.1".to_string()], 0, 5_000).unwrap();
        assert!(signed_by(
            &first_der(&leaf.cert).unwrap(),
            &first_der(&ca.cert).unwrap()
        ));
    }

    #[test]
    fn a_ca_without_constraints_or_with_others_is_not_limited_to_the_names() {
        let old = issue_ca(0, 10_000, None).unwrap();
        assert_eq!(
            info(&first_der(&old.cert).unwrap()).unwrap().limited_to,
            None
        );
        let renamed = issue_ca(0, 10_000, Some(&["old.ns.svc".to_string()])).unwrap();
        assert_eq!(
            info(&first_der(&renamed.cert).unwrap()).unwrap().limited_to,
            Some(vec!["old.ns.svc".to_string()])
        );
        // A range, not single addresses: not the shape issued here.
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::default();
        p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        p.name_constraints = Some(NameConstraints {
            permitted_subtrees: vec![GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(
                IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)),
                8,
            ))],
            excluded_subtrees: vec![],
        });
        let wide = p.self_signed(&key).unwrap();
        assert_eq!(info(wide.der()).unwrap().limited_to, None);
    }
}
