//! A ClusterConnection's credentials: `push::clusters::kubeconfig::parse`
//! (the kubeconfig reader, the Argo CD cluster Secret reader and `check`)
//! on arbitrary Secret data. The first byte chooses the format and whether
//! insecure TLS is allowed; for Argo CD, a NUL splits `server` from `config`.
//! What is accepted is also made into a client (`push::clusters::client_for`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use randomsecret::api::connections::KubeconfigFormat;
use randomsecret::push::clusters::kubeconfig::{check, parse};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One runtime for every input (the client needs one to be built).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let allow_insecure = mode & 2 != 0;
    let (format, data) = if mode & 1 == 0 {
        (
            KubeconfigFormat::Kubeconfig,
            BTreeMap::from([("value".to_string(), rest.to_vec())]),
        )
    } else {
        let (server, config) = match rest.iter().position(|b| *b == 0) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &b"{}"[..]),
        };
        (
            KubeconfigFormat::ArgoCD,
            BTreeMap::from([
                ("server".to_string(), server.to_vec()),
                ("config".to_string(), config.to_vec()),
            ]),
        )
    };
    match parse(format, "value", &data, allow_insecure) {
        Ok(kc) => {
            // What was accepted passes the check again, and runs nothing.
            check(&kc, allow_insecure).expect("accepted, then refused");
            for a in kc.auth_infos.iter().filter_map(|a| a.auth_info.as_ref()) {
                assert!(a.exec.is_none() && a.auth_provider.is_none());
                assert!(a.token_file.is_none() && a.client_certificate.is_none());
                assert!(a.client_key.is_none());
            }
            for c in kc.clusters.iter().filter_map(|c| c.cluster.as_ref()) {
                assert!(c.certificate_authority.is_none());
                assert!(allow_insecure || c.insecure_skip_tls_verify != Some(true));
            }
            // Building its client fails or succeeds, never panics (a token
            // with a line break once did, in the authorization layer).
            let built = runtime().block_on(randomsecret::push::clusters::client_for(
                kc,
                std::time::Duration::from_secs(1),
            ));
            if let Err(e) = built {
                assert!(!e.chars().any(char::is_control), "a control character: {e:?}");
            }
        }
        Err(e) => {
            // A message for a status: short, and no control character (the
            // input's names are shown cut and escaped).
            assert!(e.len() < 2048, "a long message: {} bytes", e.len());
            assert!(!e.chars().any(char::is_control), "a control character: {e:?}");
        }
    }
});
