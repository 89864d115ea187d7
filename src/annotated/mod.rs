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
//! - the controller path (leader only) and the admission webhook (optional)
//!   both call it.

pub mod rules;
