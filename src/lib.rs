//! randomsecret: turns `RandomSecret` objects into versioned, immutable Secrets
//! whose names carry a hash of their spec.
//!
//! - [`api`]: the CRD types. [`version`]: the version and naming contract
//!   (canonical form, hash, name). [`generate`]: random values.
//! - [`references`]: which Secrets a pod template names (read and rewrite).
//!   [`tracking`]: tracking mode's annotation and rewrite.
//! - [`proof`]: the mark that proves this controller created a Secret.
//! - [`cache`]: compact caches and indexes of our own, fed by the watches.
//! - [`reconciler`]: one reconcile as a chain of steps, pure decisions
//!   (retention plan, desired status) beside the IO that carries them out.
//! - [`controller`]: the composition root (the process top to bottom, its
//!   watches and runners), imported by `main.rs` only.
//! - [`runtime`]: the infrastructure under every wing: client, runner,
//!   leader election, shutdown, admin servers, metrics, Events, logging.
//! - [`push`]: pushing versions elsewhere (Vault / OpenBao KV v2), apart
//!   from the reconcile, with its own runner, condition and field manager.
//! - [`stamp`]: ClusterRandomSecrets, one RandomSecret kept in each
//!   selected namespace, apart from the reconcile, with its own runner.
//! - [`annotated`]: annotation mode, random keys in ordinary Secrets (the
//!   rules shared by the controller path and the webhook).
//! - [`webhook`]: the optional mutating webhook of annotation mode and its
//!   certificates.
//! - [`gitops`], [`manifests`]: YAML streams for the CLI (`name`, `resolve`,
//!   the KRM function). [`cli`]: the command line.
//! - [`shard`]: sharding by label selector (`--shard-selector`).
//! - [`rotate`]: `randomsecret rotate`, a new rotation token.
//! - [`check`]: `randomsecret check`, whether it is installed and working.
//! - [`docgen`]: the generated pages of the book (CLI and CRD references).
//! - [`views`]: `randomsecret status`, the versions of each RandomSecret and
//!   what holds them.

pub mod annotated;
pub mod api;
pub mod cache;
pub mod check;
pub mod cli;
pub mod controller;
pub mod docgen;
pub mod generate;
pub mod gitops;
pub use gitops::manifests;
pub mod proof;
pub mod push;
pub mod reconciler;
pub mod references;
pub mod release;
pub mod rotate;
pub mod runtime;
pub mod shard;
pub mod stamp;
pub mod template;
#[cfg(test)]
mod testing;
pub mod tracking;
pub mod version;
pub mod views;
pub mod webhook;
