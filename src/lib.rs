//! randomsecret: turns `RandomSecret` objects into versioned, immutable Secrets
//! whose names carry a hash of their spec.
//!
//! Pure parts: [`api`] (the CRD types), [`version`] (canonical form, hash,
//! name), [`generate`] (random values), [`status`] (conditions), [`manifests`]
//! and [`gitops`] (YAML streams for the CLI), [`references`], [`index`],
//! [`retention`], [`rewrite`], [`tracking`], [`leader`] (decisions). IO at the edges: [`controller`] (the reconciler), [`events`] (Events),
//! [`manager`] (process wiring), [`admin`] (metrics and health servers).

pub mod admin;
pub mod api;
pub mod cli;
pub mod controller;
pub mod events;
pub mod generate;
pub mod gitops;
pub mod index;
pub mod leader;
pub mod manager;
pub use gitops::manifests;
pub mod metrics;
pub mod references;
pub mod retention;
pub mod rewrite;
pub mod status;
pub mod tracking;
pub mod version;

/// Errors of the controller and the CLI.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("the operating system's random source failed: {0}")]
    Random(String),
}

impl Error {
    /// A short, bounded label for metrics (never a name or a value).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(_)) => "ApiError",
            Error::Kube(_) => "ClientError",
            Error::Random(_) => "RandomSource",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
