//! The certificate Secrets' format, reading them for the decisions
//! (`lifecycle`), and carrying out an action on them.
//!
//! | Secret | key | what |
//! |---|---|---|
//! | serving (`--webhook-cert-secret`) | `tls.crt`, `tls.key` | the serving certificate every replica serves |
//! | serving | `ca.crt` | the CA bundle the apiserver must trust (the configuration's caBundle) |
//! | CA (`--webhook-ca-secret`) | `ca-signing.crt`, `ca-signing.key` | the CA that signs serving certificates |
//! | CA | `ca-next.crt`, `ca-next.key` | during a rollover: the next CA, in `ca.crt` but not signing yet |
//!
//! Every replica reads the serving Secret; only the leader's manager reads
//! and writes the CA Secret, so only it holds a CA key. Releases before
//! issue 26 kept the CA keys in the serving Secret: while no CA Secret
//! exists they are read from there, and the next write moves them
//! ([`writes`]: the CA Secret first, then the serving Secret without them).
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

/// The PEMs of both Secrets (absent or unreadable keys are None).
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

type Data = BTreeMap<String, ByteString>;

fn put(out: &mut Data, pairs: &[(&Option<Pair>, &str, &str)]) {
    for (p, crt, key) in pairs {
        if let Some(p) = p {
            out.insert(crt.to_string(), ByteString(p.cert.as_bytes().to_vec()));
            out.insert(key.to_string(), ByteString(p.key.as_bytes().to_vec()));
        }
    }
}

impl Stored {
    /// The state from the serving Secret's data and the CA Secret's (None:
    /// no CA Secret). Once a CA Secret exists, CA keys are read only from it.
    pub fn from_secrets(serving: &Data, ca: Option<&Data>) -> Self {
        let keys = ca.unwrap_or(serving);
        Stored {
            leaf: pair(serving, TLS_CRT, TLS_KEY),
            signing: pair(keys, SIGNING_CRT, SIGNING_KEY),
            next: pair(keys, NEXT_CRT, NEXT_KEY),
            bundle: text(serving, CA_BUNDLE).unwrap_or_default(),
        }
    }

    /// What every replica reads: no CA key.
    pub fn serving_data(&self) -> Data {
        let mut out = BTreeMap::new();
        put(&mut out, &[(&self.leaf, TLS_CRT, TLS_KEY)]);
        out.insert(
            CA_BUNDLE.to_string(),
            ByteString(self.bundle.as_bytes().to_vec()),
        );
        out
    }

    /// What only the leader reads: the CA pairs.
    pub fn ca_data(&self) -> Data {
        let mut out = BTreeMap::new();
        put(
            &mut out,
            &[
                (&self.signing, SIGNING_CRT, SIGNING_KEY),
                (&self.next, NEXT_CRT, NEXT_KEY),
            ],
        );
        out
    }

    /// The single Secret of releases before issue 26 (tests plant it).
    pub fn legacy_data(&self) -> Data {
        let mut out = self.serving_data();
        out.append(&mut self.ca_data());
        out
    }
}

/// The writes that make the Secrets hold `next`, in order: the CA Secret
/// (when it differs or is missing), then the serving Secret (when it
/// differs, which includes holding legacy CA keys). The CA goes first so a
/// serving certificate or bundle is never stored before the CA behind it;
/// if the second write fails, the next decision starts from the first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    pub ca: Option<Data>,
    pub serving: Option<Data>,
}

pub fn writes(serving: Option<&Data>, ca: Option<&Data>, next: &Stored) -> Writes {
    let (want_ca, want_serving) = (next.ca_data(), next.serving_data());
    Writes {
        ca: (ca != Some(&want_ca) && !(ca.is_none() && want_ca.is_empty())).then_some(want_ca),
        serving: (serving != Some(&want_serving)).then_some(want_serving),
    }
}

fn cert(der: &[u8]) -> Option<Cert> {
    let i = certs::info(der).ok()?;
    Some(Cert {
        not_before: i.not_before,
        not_after: i.not_after,
        der: i.der,
        limited_to: i.limited_to,
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
    let new_ca = || certs::issue_ca(now - BACKDATE_SECONDS, now + p.ca_validity, Some(&p.sans));
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
        assert_eq!(
            Stored::from_secrets(&s.serving_data(), Some(&s.ca_data())),
            s
        );
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

    #[test]
    fn the_serving_secret_holds_no_ca_key() {
        let s = apply(&Stored::default(), Action::Create, 1_000_000, &policy()).unwrap();
        let serving = s.serving_data();
        assert_eq!(
            serving.keys().collect::<Vec<_>>(),
            [CA_BUNDLE, TLS_CRT, TLS_KEY]
        );
        assert!(
            !serving
                .values()
                .any(|v| String::from_utf8_lossy(&v.0).contains(&s.signing.as_ref().unwrap().key))
        );
        assert_eq!(
            s.ca_data().keys().collect::<Vec<_>>(),
            [SIGNING_CRT, SIGNING_KEY]
        );
        // Once a CA Secret exists, CA keys left in the serving Secret are ignored.
        let other = apply(&Stored::default(), Action::Create, 1_000_000, &policy()).unwrap();
        let read = Stored::from_secrets(&other.legacy_data(), Some(&s.ca_data()));
        assert_eq!(read.signing, s.signing);
    }

    /// An upgrade from the single Secret: the same CA, moved (the CA Secret
    /// written first), the serving Secret rewritten without the CA keys.
    #[test]
    fn a_combined_secret_is_split_without_a_new_ca() {
        let p = policy();
        let now = 1_000_000;
        let old = apply(&Stored::default(), Action::Create, now, &p).unwrap();
        let legacy = old.legacy_data();
        let read = Stored::from_secrets(&legacy, None);
        assert_eq!(read, old);
        assert_eq!(
            decide(&observe(&read), now + 10, &p, Some(100)).action,
            Action::Nothing
        );
        let w = writes(Some(&legacy), None, &read);
        assert_eq!(w.ca, Some(old.ca_data()));
        assert_eq!(w.serving, Some(old.serving_data()));
        // Once split, nothing more to write.
        let w = writes(Some(&old.serving_data()), Some(&old.ca_data()), &read);
        assert_eq!(w, Writes::default());
        // A half-done split (the serving write failed): only the serving Secret.
        let w = writes(Some(&legacy), Some(&old.ca_data()), &read);
        assert_eq!((w.ca, w.serving), (None, Some(old.serving_data())));
        // External mode's state has no CA: no CA Secret is made.
        let leaf_only = Stored {
            signing: None,
            next: None,
            ..old.clone()
        };
        assert_eq!(writes(None, None, &leaf_only).ca, None);
    }

    /// The previous release's CA (no name constraints) in the old single
    /// Secret: moved, then rolled over to a constrained CA that is published
    /// before it signs.
    #[test]
    fn an_unconstrained_ca_from_the_old_secret_is_rolled_over() {
        let p = policy();
        let now = 1_000_000;
        let ca = certs::issue_ca(now - 100, now + 10_000, None).unwrap();
        let leaf = certs::issue_leaf(&ca, &p.sans, now - 100, now + 100).unwrap();
        let old = Stored {
            leaf: Some(leaf),
            signing: Some(ca.clone()),
            next: None,
            bundle: ca.cert.clone(),
        };
        let read = Stored::from_secrets(&old.legacy_data(), None);
        let d = decide(&observe(&read), now, &p, Some(100));
        assert_eq!(d.action, Action::StartRollover);
        let s = apply(&read, d.action, now, &p).unwrap();
        let o = observe(&s);
        assert_eq!(o.next.as_ref().unwrap().limited_to, Some(p.sans.clone()));
        assert_eq!(o.bundle.len(), 2);
        assert_eq!(s.signing, Some(ca));
        let s = apply(&s, Action::Promote, now + 5, &p).unwrap();
        let o = observe(&s);
        assert_eq!(o.signing.as_ref().unwrap().limited_to, Some(p.sans.clone()));
        assert!(o.leaf.as_ref().unwrap().signed_by_signing);
        assert_eq!(decide(&o, now + 6, &p, Some(6)).action, Action::Nothing);
    }
}
