//! Annotation mode: random keys in ordinary Secrets.
//!
//! A Secret labelled `randomsecret.io/managed: "true"` with the annotation
//! `randomsecret.io/generate: "key1,key2"` (or `randomsecret.io/type`, or the
//! original operator's `secret.a-cup-of.coffee/*` or mittwald's
//! `secret-generator.v1.mittwald.de/*` annotations) gets the keys it lacks
//! filled with random values: strings, bytes, UUIDs, SSH key pairs or
//! basic-auth credentials. Two paths obey the same rules:
//!
//! - [`rules`]: the one parser of the annotations and the pure decision
//!   ([`rules::plan`]) of what a Secret needs: nothing, a refusal, a fix of
//!   its annotations, or the keys to copy and to generate. No IO.
//! - [`kinds`]: what the keys hold and how their values are made (with
//!   `crate::generate`'s generators).
//! - the controller path (always on, leader only): a metadata-only,
//!   label-selected watch (`controller::watches::annotated_secrets`) feeds
//!   [`tracked`], a compact cache that sends a Secret on only when its
//!   resourceVersion was not settled yet; [`fill`] GETs that one Secret and
//!   merge-patches only what the plan writes, with a resourceVersion
//!   precondition, run by a second `runtime::runner::Runner` keyed by Secret.
//! - the admission webhook (optional) fills the request itself with the same
//!   plan, but for RSA key pairs, which it leaves to the controller path.

pub mod fill;
pub mod kinds;
pub mod rules;
pub mod tracked;
