//! The certificate Secret's format, reading it for the decisions
//! (`lifecycle`), and carrying out an action on it.
//!
//! | key | what |
//! |---|---|
//! | `tls.crt`, `tls.key` | the serving certificate every replica serves |
//! | `ca.crt` | the CA bundle the apiserver must trust (the configuration's caBundle) |
//! | `ca-signing.crt`, `ca-signing.key` | the CA that signs serving certificates |
//! | `ca-next.crt`, `ca-next.key` | during a rollover: the next CA, in `ca.crt` but not signing yet |
//!
//! cert-manager's Secrets have `tls.crt`, `tls.key` and `ca.crt` too, so
//! every replica reads either the same way (`tls`).

use super::certs::{self, BACKDATE_SECONDS, CertError, Pair};
use super::lifecycle::{Action, Cert, Leaf, Observed, Policy, trusted};
use k8s_openapi::ByteString;
use std::collections::BTreeMap;

pub const TLS_CRT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";
pub const CA_BUNDLE: &str = "ca.crt";
const SIGNING_CRT: &str = "ca-signing.crt";
const SIGNING_KEY: &str = "ca-signing.key";
const NEXT_CRT: &str = "ca-next.crt";
const NEXT_KEY: &str = "ca-next.key";

/// The PEMs of the Secret (absent or unreadable keys are None).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    pub leaf: Option<Pair>,
    pub signing: Option<Pair>,
    pub next: Option<Pair>,
    pub bundle: String,
}

fn text(data: &BTreeMap<String, ByteString>, key: &str) -> Option<String> {
    data.get(key)
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .filter(|s| !s.trim().is_empty())
}

fn pair(data: &BTreeMap<String, ByteString>, crt: &str, key: &str) -> Option<Pair> {
    Some(Pair {
        cert: text(data, crt)?,
        key: text(data, key)?,
    })
}

impl Stored {
    pub fn from_data(data: &BTreeMap<String, ByteString>) -> Self {
        Stored {
            leaf: pair(data, TLS_CRT, TLS_KEY),
            signing: pair(data, SIGNING_CRT, SIGNING_KEY),
            next: pair(data, NEXT_CRT, NEXT_KEY),
            bundle: text(data, CA_BUNDLE).unwrap_or_default(),
        }
    }

    pub fn to_data(&self) -> BTreeMap<String, ByteString> {
        let mut out = BTreeMap::new();
        let mut put = |k: &str, v: &str| {
            out.insert(k.to_string(), ByteString(v.as_bytes().to_vec()));
        };
        for (p, crt, key) in [
            (&self.leaf, TLS_CRT, TLS_KEY),
            (&self.signing, SIGNING_CRT, SIGNING_KEY),
            (&self.next, NEXT_CRT, NEXT_KEY),
        ] {
            if let Some(p) = p {
                put(crt, &p.cert);
                put(key, &p.key);
            }
        }
        put(CA_BUNDLE, &self.bundle);
        out
    }
}

fn cert(der: &[u8]) -> Option<Cert> {
    let i = certs::info(der).ok()?;
    Some(Cert {
        not_before: i.not_before,
        not_after: i.not_after,
        der: i.der,
    })
}

/// A CA whose key is there and matches.
fn ca(p: &Option<Pair>) -> Option<Cert> {
    let p = p.as_ref()?;
    let der = certs::first_der(&p.cert).ok()?;
    certs::key_matches(&der, &p.key).then(|| cert(&der))?
}

/// What the decisions need to know of the stored state.
pub fn observe(s: &Stored) -> Observed {
    let signing = ca(&s.signing);
    let leaf = s.leaf.as_ref().and_then(|p| {
        let der = certs::first_der(&p.cert).ok()?;
        let info = certs::info(&der).ok()?;
        if !certs::key_matches(&der, &p.key) {
            return None;
        }
        let signed_by_signing = signing
            .as_ref()
            .is_some_and(|ca| certs::signed_by(&der, &ca.der));
        Some(Leaf {
            cert: cert(&der)?,
            sans: info.sans,
            signed_by_signing,
        })
    });
    let bundle = certs::pem_ders(&s.bundle)
        .unwrap_or_default()
        .iter()
        .filter_map(|d| cert(d))
        .collect();
    Observed {
        signing,
        next: ca(&s.next),
        leaf,
        bundle,
    }
}

fn pem(der: &[u8]) -> String {
    pem::encode_config(
        &pem::Pem::new("CERTIFICATE", der.to_vec()),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

/// The state after `action` at `now` (new keys and certificates come from here).
pub fn apply(s: &Stored, action: Action, now: i64, p: &Policy) -> Result<Stored, CertError> {
    let new_ca = || certs::issue_ca(now - BACKDATE_SECONDS, now + p.ca_validity);
    let leaf_from = |ca: &Pair| -> Result<Pair, CertError> {
        let ca_end = certs::info(&certs::first_der(&ca.cert)?)?.not_after;
        let end = (now + p.cert_validity).min(ca_end);
        certs::issue_leaf(ca, &p.sans, now - BACKDATE_SECONDS, end)
    };
    let mut out = s.clone();
    match action {
        Action::Nothing | Action::Rebundle => {}
        Action::Create => {
            let ca = new_ca()?;
            out = Stored {
                leaf: Some(leaf_from(&ca)?),
                signing: Some(ca),
                next: None,
                bundle: String::new(),
            };
        }
        Action::StartRollover => out.next = Some(new_ca()?),
        Action::Promote => {
            let next = out.next.take().ok_or(CertError::NoCertificate)?;
            out.leaf = Some(leaf_from(&next)?);
            out.signing = Some(next);
        }
        Action::Reissue => {
            let signing = out.signing.clone().ok_or(CertError::NoCertificate)?;
            out.leaf = Some(leaf_from(&signing)?);
        }
    }
    out.bundle = trusted(&observe(&out), now)
        .iter()
        .map(|c| pem(&c.der))
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::lifecycle::decide;

    fn policy() -> Policy {
        Policy {
            ca_validity: 1000,
            ca_renew_before: 400,
            cert_validity: 100,
            cert_renew_before: 30,
            settle: 5,
            sans: vec!["127.0.0.1".into(), "svc.ns.svc".into()],
        }
    }

    /// Runs the decisions against real certificates through a whole rollover.
    #[test]
    fn a_rollover_with_real_certificates() {
        let p = policy();
        let mut now = 1_000_000;
        let mut s = apply(&Stored::default(), Action::Create, now, &p).unwrap();
        assert_eq!(Stored::from_data(&s.to_data()), s);
        let first_ca = s.signing.clone().unwrap();
        assert_eq!(
            decide(&observe(&s), now, &p, Some(100)).action,
            Action::Nothing
        );
        let mut seen = Vec::new();
        // Step through time: the configuration always carries the bundle for 10 s.
        while now < 1_000_000 + 1500 {
            now += 10;
            let d = decide(&observe(&s), now, &p, Some(10));
            if d.action != Action::Nothing {
                seen.push(d.action);
                s = apply(&s, d.action, now, &p).unwrap();
                // Never serving a certificate whose CA is not in the bundle.
                let o = observe(&s);
                assert!(o.leaf.as_ref().unwrap().signed_by_signing);
                assert!(o.bundle.contains(o.signing.as_ref().unwrap()));
            }
            let o = observe(&s);
            let l = &o.leaf.as_ref().unwrap().cert;
            assert!(
                l.not_before <= now && now < l.not_after,
                "served an invalid certificate at {now}"
            );
        }
        assert!(seen.contains(&Action::StartRollover), "{seen:?}");
        assert!(seen.contains(&Action::Promote));
        assert!(seen.contains(&Action::Rebundle));
        assert!(seen.iter().filter(|a| **a == Action::Reissue).count() >= 3);
        assert_ne!(s.signing.unwrap(), first_ca);
    }

    #[test]
    fn bundle_pem_round_trips() {
        let s = apply(&Stored::default(), Action::Create, 1_000_000, &policy()).unwrap();
        let ders = certs::pem_ders(&s.bundle).unwrap();
        assert_eq!(
            ders,
            vec![certs::first_der(&s.signing.unwrap().cert).unwrap()]
        );
    }
}
