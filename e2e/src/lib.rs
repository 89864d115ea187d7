//! Helpers for the end-to-end suites: they run against the real local control
//! plane of `e2e/cluster.sh` (or any cluster that `KUBECONFIG` points at).
//!
//! - [`cluster`]: a client, a namespace per test, waiting for objects and Events.
//! - [`randomsecrets`]: creating, patching and rotating RandomSecrets; their conditions.
//! - [`values`]: generated values, and recording them for the log check.
//! - [`workloads`]: pod templates, Deployments, rollouts, missing-Secret checks.
//! - [`controller`]: controller processes of a test's own; leader checks.
//! - [`tools`]: the binary under test, kubectl and other tools.
//! - [`invariants`]: the fault suite's invariants.
//! - [`protection`]: deletion protection's finalizer; deleting a version for good.
//! - [`openbao`]: an OpenBao dev server of a test's own, for the Vault push.
//! - [`downstream`]: a second control plane of a test's own, for the cluster push.
//! - [`realnode`]: the real node of `e2e/realnode.sh` (real pods), for `make realnode-test`.
//! - [`admission`]: AdmissionReviews sent straight to a webhook (floods, slow clients).
//! - [`process`]: a process's memory (RSS now, and its peak).
//!
//! Everything is re-exported at the top, so suites `use randomsecret_e2e::*`.

pub mod admission;
pub mod cluster;
pub mod controller;
pub mod downstream;
pub mod invariants;
pub mod openbao;
pub mod process;
pub mod protection;
pub mod randomsecrets;
pub mod realnode;
pub mod tools;
pub mod values;
pub mod workloads;

pub use cluster::*;
pub use controller::*;
pub use openbao::OpenBao;
pub use process::*;
pub use protection::*;
pub use randomsecrets::*;
pub use tools::*;
pub use values::*;
pub use workloads::*;
