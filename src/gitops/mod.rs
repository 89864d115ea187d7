//! GitOps filters for the CLI: the versioned name of each RandomSecret in a
//! YAML stream (`randomsecret name`), and references to base names rewritten
//! into versioned names, before anything reaches the cluster.
//!
//! - [`explain`]: `randomsecret name --explain` and `randomsecret diff`, the
//!   canonical form behind a name and which fields changed it.
//! - [`manifests`]: finding the RandomSecrets in a stream and computing their names.
//! - [`fields`]: each document of our API group held to its CRD's schema
//!   (unknown fields, with the nearest valid name).
//! - [`resolve`](mod@resolve): `randomsecret resolve`, a YAML stream in and out (also a Helm post-renderer).
//! - [`krm`]: `randomsecret kustomize`, the same as a KRM function (ResourceList in and out).
//! - [`yaml`]: reading and writing YAML; no other module touches a YAML library.

pub mod explain;
pub mod fields;
pub mod krm;
pub mod manifests;
pub mod resolve;
pub mod yaml;

pub use krm::krm_function;
pub use resolve::{Names, resolve, resolve_sources, resolve_stream};
