//! The log filter: the operator's `--log-level`, with kube's client muted
//! below errors whatever it says.
//!
//! kube's `Client::request` logs a reply it cannot parse whole, at warn
//! (and an error body it cannot parse at debug). A reply that fails to parse
//! may be a Secret (a version read for its overlap keys, a downstream copy) or
//! echo the Secret we sent (a hostile downstream apiserver), so its text may
//! hold values: those lines must never be written. kube's watcher logs every
//! failed list or watch with its error (`{err:?}`: a downstream's Status
//! message, which a hostile cluster fills with what it likes), at warn for a
//! 403: muted too. Our own code logs every error the client returns, without
//! bodies, and a downstream's in fixed words (`push::clusters::ClusterError`).

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::ParseError;

/// Appended to every filter. The most specific directive wins, so an
/// operator's `kube=debug` or `kube_client=trace` keeps the rest of kube's
/// logs (the runtime's) but not the client's nor the watcher's.
const MUTED: &str = "kube_client::client=error,kube_runtime::watcher=error";

/// The filter for `level` (EnvFilter syntax: `info`, `randomsecret=debug,kube=info`).
pub fn filter(level: &str) -> Result<EnvFilter, ParseError> {
    let level = level.trim().trim_end_matches(',');
    EnvFilter::try_new(if level.is_empty() {
        MUTED.to_string()
    } else {
        format!("{level},{MUTED}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a subscriber with `filter(level)` writes for kube's two lines
    /// and one of ours.
    fn written(level: &str) -> String {
        crate::testing::logs::written(Some(filter(level).unwrap()), || {
            tracing::warn!(target: "kube_client::client", "{{\"data\":{{\"password\":\"c2VjcmV0\"}}, EOF");
            tracing::debug!(target: "kube_client::client", "Unsuccessful data error parse: echoed-body");
            tracing::warn!(target: "kube_runtime::watcher", "watch list error with 403: Api(Status {{ message: \"echoed-copy\" }})");
            tracing::warn!(target: "kube_runtime::controller", "runtime-line");
            tracing::warn!(target: "randomsecret::reconciler", "our-line");
        })
    }

    #[test]
    fn kubes_reply_text_is_never_written_at_any_level() {
        for level in [
            "info",
            "debug",
            "trace",
            "kube=trace",
            "kube_client=trace,info",
            "",
        ] {
            let w = written(level);
            assert!(!w.contains("c2VjcmV0"), "{level:?}: {w}");
            assert!(!w.contains("echoed-body"), "{level:?}: {w}");
            assert!(!w.contains("echoed-copy"), "{level:?}: {w}");
        }
    }

    #[test]
    fn the_operators_level_still_applies_to_everything_else() {
        assert!(written("info").contains("our-line"));
        assert!(written("info").contains("runtime-line"));
        assert!(!written("error").contains("our-line"));
        assert!(written("randomsecret=debug").contains("our-line"));
        assert!(filter("randomsecret=loud").is_err());
    }
}
