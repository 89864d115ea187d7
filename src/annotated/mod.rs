//! Annotation mode: random keys in ordinary Secrets.
//!
//! A Secret labelled `randomsecret.io/managed: "true"` with the annotation
//! `randomsecret.io/generate: "key1,key2"` (or the original operator's
//! `secret.a-cup-of.coffee/*` annotations) gets the keys it lacks filled with
//! random values. Two paths obey the same rules:
//!
//! - [`rules`]: the one parser of the annotations and the pure decision
//!   ([`rules::plan`]) of what a Secret needs: nothing, a refusal, a fix of
//!   its annotations, or the keys to copy and to generate. No IO.
//! - the controller path (always on, leader only): a metadata-only,
//!   label-selected watch (`controller::watches::annotated_secrets`) feeds
//!   [`tracked`], a compact cache that sends a Secret on only when its
//!   resourceVersion was not settled yet; [`fill`] GETs that one Secret and
//!   merge-patches only what the plan writes, with a resourceVersion
//!   precondition, run by a second `runtime::runner::Runner` keyed by Secret.
//! - the admission webhook (optional) fills the request itself with the same plan.

pub mod fill;
pub mod rules;
pub mod tracked;
