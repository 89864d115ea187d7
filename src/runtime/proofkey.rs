//! The proof key (`crate::proof`): read from a Secret of the controller's
//! own at start, or made once by whichever replica comes first.
//!
//! The Secret is immutable: changing the key would turn every version into a
//! foreign Secret, so it can only be replaced by deleting it (see SECURITY.md).

use crate::proof::{KEY_LEN, ProofKey};
use crate::runtime::status::Answer as _;
use anyhow::{Context as _, bail};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client};
use std::collections::BTreeMap;
use tracing::info;

/// The data key that holds the key.
const DATA_KEY: &str = "key";

/// Reads the key from `namespace`/`name` (where: `controller::config`),
/// creating its Secret when there is none.
pub async fn load(client: &Client, namespace: &str, name: &str) -> anyhow::Result<ProofKey> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let what = format!("the proof key Secret {namespace}/{name}");
    let secret = match api
        .get_opt(name)
        .await
        .with_context(|| format!("reading {what}"))?
    {
        Some(s) => s,
        None => {
            let fresh = ProofKey::generate().context("generating the proof key")?;
            match api
                .create(&PostParams::default(), &key_secret(name, &fresh))
                .await
            {
                Ok(s) => {
                    info!(secret = %format!("{namespace}/{name}"), "created the proof key");
                    s
                }
                // Another replica made it first.
                Err(kube::Error::Api(s)) if s.already_exists() => api
                    .get(name)
                    .await
                    .with_context(|| format!("reading {what}"))?,
                Err(e) => return Err(e).with_context(|| format!("creating {what}")),
            }
        }
    };
    let bytes = secret.data.as_ref().and_then(|d| d.get(DATA_KEY));
    match bytes.and_then(|b| ProofKey::from_bytes(&b.0)) {
        Some(key) => Ok(key),
        None => bail!(
            "{what} has no {KEY_LEN}-byte data key {DATA_KEY:?}: restore it from a backup \
             (with a new key every existing version would be treated as foreign), \
             or point --proof-key-secret at the right Secret"
        ),
    }
}

fn key_secret(name: &str, key: &ProofKey) -> Secret {
    Secret {
        metadata: super::own::meta(
            name,
            "Signs the Secrets randomsecret creates; see SECURITY.md. Back it up with the cluster; never change it.",
        ),
        immutable: Some(true),
        data: Some(BTreeMap::from([(
            DATA_KEY.into(),
            ByteString(key.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}
