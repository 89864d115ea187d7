//! The one error of reading and writing YAML, with serde-saphyr's turned
//! into messages that name the line and never quote the input.

use super::limits::MAX_DEPTH;
use serde_saphyr::budget::BudgetBreach;

/// Invalid YAML, or YAML that is not JSON (which Kubernetes objects are).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub(super) String);

impl From<serde_saphyr::Error> for Error {
    fn from(e: serde_saphyr::Error) -> Self {
        Error::at_line(e, 0)
    }
}

impl Error {
    /// serde-saphyr's error for text that starts after `lines` lines of the stream.
    pub(super) fn at_line(e: serde_saphyr::Error, lines: usize) -> Self {
        use serde_saphyr::{Error as E, ExternalMessageSource, granit_parser::ErrorKind};
        let at = |what: String, at: &serde_saphyr::Location| {
            Error(format!(
                "{what} at line {}, column {}",
                at.line() + lines as u64,
                at.column()
            ))
        };
        let too_deep = || format!("nested more than {MAX_DEPTH} levels deep");
        // The error itself, out of the wrappers that add a snippet or where an alias was used.
        let mut inner = &e;
        while let E::WithSnippet { error, .. } | E::AliasError { error, .. } = inner {
            inner = error;
        }
        match inner {
            // Block collections (the budget) and flow collections (the parser).
            E::Budget {
                breach: BudgetBreach::Depth { .. },
                location,
            } => at(too_deep(), location),
            E::ExternalMessage {
                source, location, ..
            } if matches!(&**source, ExternalMessageSource::Parser(p)
                    if matches!(p.kind(), ErrorKind::RecursionLimitExceeded)) =>
            {
                at(too_deep(), location)
            }
            E::AliasReplayLimitExceeded { location, .. }
            | E::AliasExpansionLimitExceeded { location, .. }
            | E::AliasReplayStackDepthExceeded { location, .. }
            | E::Budget {
                breach:
                    BudgetBreach::Nodes { .. }
                    | BudgetBreach::Events { .. }
                    | BudgetBreach::Aliases { .. },
                location,
            } => at(
                "aliases expand to more than the input can hold (an alias bomb?)".into(),
                location,
            ),
            E::NonFiniteFloat { value, location } => at(
                format!(
                    "{value} is not a finite number, which JSON (so Kubernetes) cannot carry; quote it for a string"
                ),
                location,
            ),
            E::DuplicateMappingKey { key, location } => at(
                match key {
                    Some(k) => format!("duplicate mapping key {k:?}"),
                    None => "duplicate mapping key".into(),
                },
                location,
            ),
            _ => Error(e.to_string()),
        }
    }
}

impl From<serde_saphyr::SerializeError> for Error {
    fn from(e: serde_saphyr::SerializeError) -> Self {
        Error(format!("writing YAML: {e}"))
    }
}
