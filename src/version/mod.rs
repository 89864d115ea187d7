//! The version-defining part of a spec, its canonical serialization, and the
//! versioned Secret name `<secretName>-<hash>`. Pure functions, no IO.
//!
//! - `spec`: [`VersionSpec::from_spec`] applies the defaults and validates
//!   (the same rules as the CRD's schema), with [`SpecError`] saying what to fix;
//! - `name`: the canonical form, the hash, and [`Version`] (the name offline,
//!   or at a point in time with `rotateEvery`);
//! - `period`: `rotateEvery` parsing and epoch arithmetic (its range, and the
//!   CRD's CEL rule for it, are in `crate::api::rules`);
//! - `carry`: which generated values a new version keeps from the one it
//!   supersedes ([`carry::plan`]), and `record`: what each version records
//!   about that, signed, on its Secret.
//!
//! The canonical form is the contract shared with the Helm helper and the
//! kustomize function (docs/src/rotation.md#how-names-are-computed); the fixture
//! `testdata/name-vectors.yaml` pins it. Changing it renames every version.

pub mod carry;
mod name;
mod period;
pub mod record;
mod spec;

pub use name::{
    Version, base_name, generate_line, hash_alphabet_contains, hash_canonical, hash_in_name,
};
pub use period::{parse_period, seconds_of};
pub use spec::{
    Bytes, Certificate, Chars, Class, Generated, Htpasswd, KeyShape, Kind, MAX_ROTATION,
    MAX_SECRET_BYTES, Minimums, PREVIOUS_SUFFIX, PrivateKey, SigningKey, SpecError, SshKeyPair,
    VersionSpec, previous_key, templates_of,
};
