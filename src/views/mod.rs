//! `randomsecret status`: which version is current, what holds each one, and
//! why a superseded version is still kept.
//!
//! - [`model`]: the view (what the command shows and `-o json|yaml` prints),
//!   assembled by a pure function from what was read, with the retention
//!   plan of `reconciler::retention`, so the command says what the
//!   controller decides.
//! - [`render`]: the view as a tree (coloured on a terminal), JSON or YAML.
//! - [`fetch`]: the reads (RandomSecrets; Secrets as metadata only, never
//!   their data; ReplicaSets, ControllerRevisions and Pods through the
//!   project's pod-spec walkers), and `--watch`.

pub mod fetch;
pub mod model;
pub mod render;

pub use model::{Kept, RandomSecretView, SecretPresence, StatusList, VersionView};
