//! The keys a version derives from its own values when it is made, never on
//! a later reconcile, so a version's bytes never change: a signing key's
//! JWKS, a key pair's public key, a certificate's issuer certificate,
//! htpasswd lines, then templates (which may read every other value).

use super::{Failed, jwks, keypair, pair};
use crate::template::{self, TemplateError};
use crate::version::{Kind, VersionSpec};
use k8s_openapi::ByteString;
use rand::TryRng;
use rand::rngs::SysRng;
use std::collections::BTreeMap;

/// Why a version's derived keys could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    /// A template failed on this version's values: the spec's to fix.
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("keys.{key}: {why}")]
    Failed { key: String, why: String },
}

/// Whether deriving `spec`'s keys takes enough CPU (bcrypt) to belong off
/// the async runtime's threads.
pub fn costly(spec: &VersionSpec) -> bool {
    spec.generated
        .values()
        .any(|g| matches!(g.kind, Kind::Htpasswd(_)))
}

/// Adds `spec`'s derived keys to `data`, which holds every generated key's
/// value (kept or new). `previous_jwks`: per signing key, the JWKS of the
/// version it supersedes (its earlier public keys).
pub fn all(
    spec: &VersionSpec,
    data: &mut BTreeMap<String, ByteString>,
    previous_jwks: &BTreeMap<String, ByteString>,
) -> Result<(), DeriveError> {
    let text = |data: &BTreeMap<String, ByteString>, key: &str| -> Result<String, DeriveError> {
        data.get(key)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
            .ok_or_else(|| DeriveError::Failed {
                key: key.to_string(),
                why: "its value is missing or not text".into(),
            })
    };
    let fail = |key: &str| {
        let key = key.to_string();
        move |e: &dyn std::fmt::Display| DeriveError::Failed {
            key: key.clone(),
            why: e.to_string(),
        }
    };
    for (key, g) in &spec.generated {
        let (name, value) = match &g.kind {
            Kind::SigningKey(s) => {
                let jwk = keypair::public_jwk(s.algorithm, &text(data, key)?)
                    .map_err(|e| fail(key)(&e))?;
                let previous = previous_jwks.get(key).map(|b| b.0.as_slice());
                (s.jwks_key.clone(), jwks::next(&jwk, previous, s.keep))
            }
            Kind::SshKeyPair(p) => {
                let public = pair::ssh_public(&text(data, key)?).map_err(|e| fail(key)(&e))?;
                (p.public_key.clone(), public.into_bytes())
            }
            Kind::PrivateKey(p) => {
                let public = pair::pem_public(p, &text(data, key)?).map_err(|e| fail(key)(&e))?;
                (p.public_key.clone(), public.into_bytes())
            }
            Kind::Certificate(c) => {
                let Some(name) = &c.ca_certificate else {
                    continue;
                };
                let ca = text(data, c.issuer.as_deref().unwrap_or(key))?;
                (name.clone(), ca.into_bytes())
            }
            _ => continue,
        };
        data.insert(name, ByteString(value));
    }
    for (key, g) in &spec.generated {
        if let Kind::Htpasswd(h) = &g.kind {
            let password = text(data, &h.password_from)?;
            let line = htpasswd(&h.username, &password, h.cost).map_err(|e| fail(key)(&e))?;
            data.insert(key.clone(), ByteString(line.into_bytes()));
        }
    }
    let templates = crate::version::templates_of(&spec.generated);
    if templates.is_empty() {
        return Ok(());
    }
    // What templates may read: every value keys writes, overlap pairs
    // aside (a first version has none, so the spec check refuses them).
    let values = data
        .iter()
        .filter(|(k, _)| !k.ends_with(crate::version::PREVIOUS_SUFFIX))
        .map(|(k, v)| (k.clone(), String::from_utf8(v.0.clone()).ok()))
        .collect();
    for (key, out) in template::render_all(&templates, values, &spec.statics)? {
        data.insert(key, ByteString(out.into_bytes()));
    }
    Ok(())
}

/// One htpasswd line: `user:$2y$<cost>$<salt and hash>` and a newline, with
/// a salt from the operating system's CSPRNG.
pub fn htpasswd(user: &str, password: &str, cost: u32) -> Result<String, Failed> {
    let mut salt = [0u8; 16];
    SysRng
        .try_fill_bytes(&mut salt)
        .map_err(super::random_source)?;
    let hash = bcrypt::non_truncating_hash_with_salt(password, cost, salt)
        .map_err(|e| Failed(format!("bcrypt: {e}")))?;
    Ok(format!(
        "{user}:{}\n",
        hash.format_for_version(bcrypt::Version::TwoY)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RandomSecretSpec;

    fn spec(yaml: &str) -> VersionSpec {
        let spec: RandomSecretSpec = crate::gitops::yaml::read(yaml).unwrap();
        VersionSpec::from_spec(&spec).unwrap()
    }

    #[test]
    fn htpasswd_lines_verify_with_bcrypt_and_differ_by_salt() {
        let a = htpasswd("admin", "s3cret", 4).unwrap();
        let b = htpasswd("admin", "s3cret", 4).unwrap();
        assert_ne!(a, b);
        let hash = a.strip_prefix("admin:").unwrap().trim_end();
        assert!(hash.starts_with("$2y$04$") && hash.len() == 60, "{hash}");
        assert!(bcrypt::verify("s3cret", hash).unwrap());
        assert!(!bcrypt::verify("s3creT", hash).unwrap());
    }

    #[test]
    fn every_derived_key_comes_from_the_values_given() {
        let v = spec(
            r#"
keys:
  password: {length: 20}
  auth: {htpasswd: {username: admin, passwordFrom: password, cost: 4}}
  deploy: {sshKeyPair: {comment: ci}}
  dsn: {template: "postgres://{{ static.user }}:{{ keys.password }}@db/{{ keys.name }}"}
  name: {template: "app-{{ keys['deploy.pub'] | length > 0 }}"}
static: {user: app}
"#,
        );
        let mut data = BTreeMap::new();
        data.insert("password".to_string(), ByteString(b"pw".to_vec()));
        let private = pair::ssh_private(match &v.generated["deploy"].kind {
            Kind::SshKeyPair(p) => p,
            _ => unreachable!(),
        })
        .unwrap();
        data.insert("deploy".to_string(), ByteString(private.into_bytes()));
        all(&v, &mut data, &BTreeMap::new()).unwrap();
        let s = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
        assert_eq!(s("dsn"), "postgres://app:pw@db/app-True");
        assert!(s("deploy.pub").ends_with(" ci\n"));
        let hash = s("auth");
        assert!(bcrypt::verify("pw", hash.trim_end().strip_prefix("admin:").unwrap()).unwrap());
    }
}
