//! The verifier harness shared by the tests of every wing that talks to the
//! apiserver (as kube-rs/controller-rs tests its reconciler): the caches are
//! filled as the watches would fill them, the code under test runs once, and
//! a strict mocked apiserver answers every request in order, asserting its
//! method, path, query and body; any request after the expected ones fails
//! the test. Events go to a second mocked server, so their order (they are
//! posted in the background) never mixes with the requests under test.
//!
//! - [`apiserver`]: the mocked apiserver and one request on it.
//! - [`fixtures`]: `Rs` (a RandomSecret), `VersionSecret`, stored answers.
//! - [`harness`]: the listed caches, one run and what it left behind.
//! - [`vault`]: a mocked Vault on 127.0.0.1, as strict.
//! - [`logs`]: what the code under test writes to the log.

pub(crate) mod apiserver;
pub(crate) mod fixtures;
pub(crate) mod harness;
pub(crate) mod logs;
pub(crate) mod vault;

pub(crate) use apiserver::{ApiServer, Call};
pub(crate) use fixtures::*;
pub(crate) use harness::{Harness, LIMIT, Run, Wiring};
