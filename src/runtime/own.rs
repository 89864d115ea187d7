//! The Secrets randomsecret keeps for itself (the proof key, the webhook's
//! certificate and CA): how they are labelled and what they say they are for.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// The metadata of such a Secret: `app.kubernetes.io/part-of: randomsecret`
/// and the `randomsecret.io/purpose` annotation, which tells whoever finds
/// it in a namespace what it is and what not to do with it.
pub fn meta(name: &str, purpose: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([(
            "app.kubernetes.io/part-of".into(),
            crate::api::NAME.into(),
        )])),
        annotations: Some(BTreeMap::from([(
            crate::api::PURPOSE.into(),
            purpose.into(),
        )])),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn says_whose_and_what_for() {
        let m = super::meta("randomsecret-proof-key", "Signs.");
        assert_eq!(m.name.as_deref(), Some("randomsecret-proof-key"));
        assert_eq!(
            m.labels.unwrap()["app.kubernetes.io/part-of"],
            "randomsecret"
        );
        assert_eq!(m.annotations.unwrap()["randomsecret.io/purpose"], "Signs.");
    }
}
