//! What an annotated Secret's keys hold (one kind per Secret) and how their
//! values are made: with the generators every RandomSecret uses
//! (`crate::generate`), never with ones of their own. [`rules`] decides which
//! keys get which; this file only makes values (and knows their sizes).
//!
//! [`rules`]: super::rules

use crate::api::{DEFAULT_BCRYPT_COST, Encoding, KeyAlgorithm};
use crate::generate;
use crate::version::{Bytes, Chars, KeyShape, SshKeyPair};

/// `randomsecret.io/type` (and mittwald's `/type`): the kinds of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    Bytes,
    Uuid,
    SshKeyPair,
    BasicAuth,
}

impl Type {
    /// Ours: every kind. mittwald's `/type` takes the first, third and fifth.
    pub const ALL: [Type; 5] = [
        Type::String,
        Type::Bytes,
        Type::Uuid,
        Type::SshKeyPair,
        Type::BasicAuth,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Uuid => "uuid",
            Type::SshKeyPair => "ssh-keypair",
            Type::BasicAuth => "basic-auth",
        }
    }

    /// Whether mittwald's generator has it (its `Type.Validate`).
    pub fn in_mittwald(self) -> bool {
        matches!(self, Type::String | Type::SshKeyPair | Type::BasicAuth)
    }
}

/// What each key (or group of keys) of a Secret gets, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Random characters drawn uniformly from an alphabet.
    Chars(Chars),
    /// mittwald's string: `length` random bytes, encoded, cut to `length`
    /// characters (each uniform over the encoding's alphabet); `raw`: the
    /// bytes themselves.
    Cut(Bytes),
    /// Random bytes, encoded whole (mittwald's `<n>B` length).
    Bytes(Bytes),
    /// A random UUID, version 4.
    Uuid,
    /// An SSH key pair: private key (OpenSSH format), public key
    /// (authorized_keys line), made together.
    SshKeyPair(KeyShape),
    /// `username`, `password` and `auth` (an htpasswd line of them, bcrypt).
    BasicAuth(BasicAuth),
}

/// A basic-auth Secret's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasicAuth {
    /// The user when the `username` key is empty: mittwald's
    /// `/basic-auth-username`, else `admin`.
    pub username: String,
    /// Whether an annotation named the user (then a `username` value must
    /// be the same user).
    pub named: bool,
    /// The password's kind: `Chars`, `Cut` or `Bytes`, always text.
    pub password: Box<Kind>,
}

/// The data keys of a basic-auth Secret (`kubernetes.io/basic-auth`'s
/// `username` and `password`, and ingress-nginx's `auth`), as mittwald writes them.
pub const USERNAME_KEY: &str = "username";
pub const PASSWORD_KEY: &str = "password";
pub const AUTH_KEY: &str = "auth";
/// The data keys of an SSH key pair when no key is listed
/// (`kubernetes.io/ssh-auth`'s private key, as mittwald writes them).
pub const SSH_PRIVATE_KEY: &str = "ssh-privatekey";
pub const SSH_PUBLIC_KEY: &str = "ssh-publickey";
/// The user of a basic-auth Secret when nothing names one (mittwald's).
pub const DEFAULT_USERNAME: &str = "admin";

/// Bounds on a key pair's sizes, for the 1 MiB check: an RSA-4096 private
/// key in OpenSSH format is about 3.4 kB, its public key about 0.75 kB.
const SSH_PRIVATE_MAX: usize = 8192;
const SSH_PUBLIC_MAX: usize = 2048;
/// An htpasswd line: the user, ':', a bcrypt hash (60) and a newline.
const HTPASSWD_EXTRA: usize = 62;

/// The public key's data key of the private key `private`: `ssh-publickey`
/// beside `ssh-privatekey` (the convention mittwald and
/// `kubernetes.io/ssh-auth` use), else `<private>.pub` (a RandomSecret's).
pub fn public_key_of(private: &str) -> String {
    if private == SSH_PRIVATE_KEY {
        SSH_PUBLIC_KEY.to_string()
    } else {
        format!("{private}{}", crate::api::PUBLIC_KEY_SUFFIX)
    }
}

/// A value could not be made: why (never a value).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GenerateError(String);

impl GenerateError {
    pub(crate) fn text(why: &str) -> Self {
        GenerateError(why.to_string())
    }
}

fn random(e: rand::rngs::SysError) -> GenerateError {
    GenerateError(format!("the operating system's random source failed: {e}"))
}

impl Kind {
    /// The most bytes one value of a one-key kind takes (a pair or
    /// basic-auth: see [`Kind::key_sizes`]).
    pub fn size(&self) -> usize {
        match self {
            Kind::Chars(c) => c.length,
            Kind::Cut(b) => b.length,
            Kind::Bytes(b) => b.encoded_len(),
            Kind::Uuid => 36,
            Kind::SshKeyPair(_) => SSH_PRIVATE_MAX + SSH_PUBLIC_MAX,
            Kind::BasicAuth(a) => {
                a.username.len() + a.password.size() + Kind::auth_size(&a.username)
            }
        }
    }

    /// The most bytes a pair's private and public key take.
    pub fn pair_sizes() -> (usize, usize) {
        (SSH_PRIVATE_MAX, SSH_PUBLIC_MAX)
    }

    /// The most bytes an htpasswd line of `user` takes.
    pub fn auth_size(user: &str) -> usize {
        user.len() + HTPASSWD_EXTRA
    }

    /// Whether making it takes enough CPU to belong off the async runtime
    /// (RSA; bcrypt for basic-auth).
    pub fn costly(&self) -> bool {
        match self {
            Kind::SshKeyPair(shape) => shape.algorithm == KeyAlgorithm::Rsa,
            Kind::BasicAuth(_) => true,
            _ => false,
        }
    }

    /// One value of a one-key kind (a string, bytes, a UUID; a password).
    pub fn value(&self) -> Result<Vec<u8>, GenerateError> {
        match self {
            Kind::Chars(c) => generate::value(c).map(String::into_bytes).map_err(random),
            Kind::Cut(b) => {
                let mut v = generate::bytes(b).map_err(random)?;
                if b.encoding != Encoding::Raw {
                    // Encoded text is ASCII: the first `length` characters.
                    v.truncate(b.length);
                }
                Ok(v)
            }
            Kind::Bytes(b) => generate::bytes(b).map_err(random),
            Kind::Uuid => generate::uuid().map(String::into_bytes).map_err(random),
            Kind::SshKeyPair(_) | Kind::BasicAuth(_) => Err(GenerateError(
                "a key pair and basic-auth make several keys at once".into(),
            )),
        }
    }
}

/// A new SSH key pair of `shape`: the private key (OpenSSH format, no
/// comment) and its public key (an authorized_keys line ending in a newline).
pub fn ssh_pair(shape: KeyShape, public_key: &str) -> Result<(String, String), GenerateError> {
    let p = SshKeyPair {
        shape,
        comment: String::new(),
        public_key: public_key.to_string(),
    };
    let private = generate::pair::ssh_private(&p).map_err(|e| GenerateError(e.to_string()))?;
    let public = generate::pair::ssh_public(&private).map_err(|e| GenerateError(e.to_string()))?;
    Ok((private, public))
}

/// The htpasswd line of `user` and `password` (bcrypt at the default cost,
/// `$2y$`, newline-terminated), as a RandomSecret's `htpasswd` key writes it.
pub fn htpasswd(user: &str, password: &str) -> Result<String, GenerateError> {
    generate::derive::htpasswd(user, password, DEFAULT_BCRYPT_COST as u32)
        .map_err(|e| GenerateError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Charset;

    fn bytes(length: usize, encoding: Encoding) -> Bytes {
        Bytes { length, encoding }
    }

    #[test]
    fn a_cut_value_is_length_characters_of_the_encoding() {
        for (encoding, alphabet) in [
            (Encoding::Base64, Charset::Base64.chars().to_string()),
            (Encoding::Base64url, Charset::Base64url.chars().to_string()),
            (Encoding::Hex, Charset::Hex.chars().to_string()),
            (
                Encoding::Base32,
                "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".to_string(),
            ),
        ] {
            for length in [1, 2, 7, 40, 41] {
                let v = Kind::Cut(bytes(length, encoding)).value().unwrap();
                assert_eq!(v.len(), length, "{encoding:?}");
                assert!(
                    v.iter().all(|b| alphabet.contains(*b as char)),
                    "{encoding:?}: {}",
                    String::from_utf8_lossy(&v)
                );
            }
        }
        // raw: the bytes themselves, not cut.
        assert_eq!(
            Kind::Cut(bytes(40, Encoding::Raw)).value().unwrap().len(),
            40
        );
    }

    #[test]
    fn bytes_are_encoded_whole() {
        let v = Kind::Bytes(bytes(32, Encoding::Base64)).value().unwrap();
        let raw = data_encoding::BASE64.decode(&v).unwrap();
        assert_eq!((v.len(), raw.len()), (44, 32));
        let v = Kind::Bytes(bytes(32, Encoding::Hex)).value().unwrap();
        assert_eq!(v.len(), 64);
    }

    #[test]
    fn a_uuid_is_version_4() {
        let v = String::from_utf8(Kind::Uuid.value().unwrap()).unwrap();
        let u = uuid::Uuid::parse_str(&v).unwrap();
        assert_eq!(u.get_version_num(), 4);
    }

    #[test]
    fn a_pair_is_made_together_and_matches() {
        let shape = KeyShape {
            algorithm: KeyAlgorithm::Ed25519,
            size: 0,
        };
        let (private, public) = ssh_pair(shape, SSH_PUBLIC_KEY).unwrap();
        assert!(private.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
        assert!(public.starts_with("ssh-ed25519 ") && public.ends_with('\n'));
        assert_eq!(generate::pair::ssh_public(&private).unwrap(), public);
        assert_eq!(public_key_of(SSH_PRIVATE_KEY), SSH_PUBLIC_KEY);
        assert_eq!(public_key_of("id"), "id.pub");
        assert!(
            Kind::SshKeyPair(KeyShape {
                algorithm: KeyAlgorithm::Rsa,
                size: 2048
            })
            .costly()
        );
        assert!(!Kind::SshKeyPair(shape).costly());
    }

    #[test]
    fn an_htpasswd_line_verifies() {
        let line = htpasswd("admin", "pw").unwrap();
        let hash = line.strip_prefix("admin:").unwrap().trim_end();
        assert!(hash.starts_with("$2y$10$"), "{hash}");
        assert!(bcrypt::verify("pw", hash).unwrap());
    }
}
