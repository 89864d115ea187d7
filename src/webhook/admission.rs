//! One admission review: the Secret in the request, the rules' plan, and the
//! answer. Always allowed: a problem is a warning (kubectl prints it as
//! `Warning:`), never a denial; so is a misspelt annotation of ours. No API
//! calls: everything needed is in the request (the old object on UPDATE).

use crate::annotated::rules::{self, Plan};
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use std::collections::BTreeMap;

/// What one review came to (the `result` label of the request metric).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Keys filled by the patch.
    Filled,
    /// Nothing to do (not managed, complete, another operation).
    Unchanged,
    /// Left unchanged with a warning (invalid annotations, refused, unknown
    /// annotations).
    Warned,
    /// The request could not be read; allowed unchanged.
    Unreadable,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Filled => "filled",
            Outcome::Unchanged => "unchanged",
            Outcome::Warned => "warning",
            Outcome::Unreadable => "unreadable",
        }
    }
}

/// Prefix of every warning, so the user knows who speaks.
const WHO: &str = "randomsecret";

/// The response body for a request body, what it came to, and whether the
/// request was a dry run.
pub fn review(body: &[u8]) -> (AdmissionReview<DynamicObject>, Outcome, bool) {
    // Only the error's category and position are kept: serde's message may
    // quote the request, and so a value.
    match serde_json::from_slice::<AdmissionReview<Secret>>(body)
        .map_err(|e| {
            format!(
                "{:?} error at line {} column {}",
                e.classify(),
                e.line(),
                e.column()
            )
        })
        .and_then(|r| r.try_into().map_err(|_| "no request".to_string()))
    {
        Ok(req) => {
            let (resp, outcome) = respond(&req);
            (resp.into_review(), outcome, req.dry_run)
        }
        Err(e) => (
            unreadable(body, &e).into_review(),
            Outcome::Unreadable,
            false,
        ),
    }
}

/// Allowed, with a warning, answering the uid if there is one.
fn unreadable(body: &[u8], error: &str) -> AdmissionResponse {
    let uid = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["request"]["uid"].as_str().map(str::to_string))
        .unwrap_or_default();
    let mut r = AdmissionResponse::invalid("");
    r.allowed = true;
    r.result = Default::default();
    r.uid = uid;
    r.warnings = Some(vec![format!(
        "{WHO}: could not read the admission request ({error}); the Secret was not filled"
    )]);
    r
}

/// The answer to one request: the plan's, with a warning for each unknown
/// annotation of ours after any other.
pub fn respond(req: &AdmissionRequest<Secret>) -> (AdmissionResponse, Outcome) {
    let resp = AdmissionResponse::from(req);
    let new = match (&req.operation, &req.object) {
        (Operation::Create | Operation::Update, Some(new)) => new,
        _ => return (resp, Outcome::Unchanged),
    };
    let unknown = rules::unknown_warnings(&rules::unknown_annotations(&new.metadata));
    let (mut resp, mut outcome) = planned(resp, new, req.old_object.as_ref());
    if !unknown.is_empty() {
        resp.warnings
            .get_or_insert_default()
            .extend(unknown.iter().map(|w| format!("{WHO}: {w}")));
        if outcome == Outcome::Unchanged {
            outcome = Outcome::Warned;
        }
    }
    (resp, outcome)
}

/// The answer the plan gives.
fn planned(
    resp: AdmissionResponse,
    new: &Secret,
    old: Option<&Secret>,
) -> (AdmissionResponse, Outcome) {
    let warn = |mut resp: AdmissionResponse, text: String| {
        resp.warnings = Some(vec![format!("{WHO}: {text}")]);
        (resp, Outcome::Warned)
    };
    match rules::plan(new, old) {
        Plan::NotManaged | Plan::Complete => (resp, Outcome::Unchanged),
        Plan::Refused(r) => warn(resp, r.message()),
        Plan::Invalid(what) => warn(resp, format!("the Secret was not filled: {what}")),
        Plan::Fill(fill) => match fill.values() {
            Err(e) => warn(resp, format!("the Secret was not filled: {e}")),
            Ok(values) if values.is_empty() => (resp, Outcome::Unchanged),
            Ok(values) => match resp
                .clone()
                .with_patch(fill_patch(new, &values, fill.rotated()))
            {
                Ok(r) => (r, Outcome::Filled),
                Err(e) => warn(resp, format!("the Secret was not filled: {e}")),
            },
        },
    }
}

/// The JSONPatch that adds `values` to the Secret's data: one `add` of the
/// whole map when there is no `data`, else one `add` per key (which also
/// replaces an empty value), and records a rotation (`rotated`) in its
/// annotation. Keys are escaped as RFC 6901 says.
pub fn fill_patch(
    secret: &Secret,
    values: &BTreeMap<String, ByteString>,
    rotated: Option<&str>,
) -> Patch {
    let json = |v: &ByteString| serde_json::to_value(v).unwrap_or_default();
    let add = |path: PointerBuf, value| PatchOperation::Add(AddOperation { path, value });
    let mut ops = if secret.data.is_none() {
        let all: serde_json::Map<String, serde_json::Value> =
            values.iter().map(|(k, v)| (k.clone(), json(v))).collect();
        vec![add(PointerBuf::from_tokens(["data"]), all.into())]
    } else {
        values
            .iter()
            .map(|(k, v)| add(PointerBuf::from_tokens(["data", k.as_str()]), json(v)))
            .collect()
    };
    if let Some(token) = rotated {
        ops.push(match secret.metadata.annotations {
            Some(_) => add(
                PointerBuf::from_tokens(["metadata", "annotations", rules::ROTATED]),
                token.into(),
            ),
            None => add(
                PointerBuf::from_tokens(["metadata", "annotations"]),
                serde_json::json!({ rules::ROTATED: token }),
            ),
        });
    }
    Patch(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(op: &str, object: serde_json::Value, old: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": "", "version": "v1", "kind": "Secret"},
                "resource": {"group": "", "version": "v1", "resource": "secrets"},
                "namespace": "ns",
                "operation": op,
                "userInfo": {"username": "me"},
                "object": object,
                "oldObject": old,
                "dryRun": false,
            }
        }))
        .unwrap()
    }

    fn secret(data: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns",
                "labels": {"randomsecret.io/managed": "true"},
                "annotations": {"randomsecret.io/generate": "password,token"}},
            "data": data,
        })
    }

    /// The patched object, as the apiserver would apply the patch.
    fn patched(body: &[u8]) -> (serde_json::Value, Outcome, serde_json::Value) {
        let (review, outcome, _) = review(body);
        let out = serde_json::to_value(&review).unwrap();
        let resp = &out["response"];
        let mut obj: serde_json::Value =
            serde_json::from_slice::<serde_json::Value>(body).unwrap()["request"]["object"].clone();
        // kube-core writes the patch as an array of bytes (Go reads it as []byte too).
        if let Some(p) = resp.get("patch") {
            let raw: Vec<u8> = serde_json::from_value(p.clone()).unwrap();
            let patch: Patch = serde_json::from_slice(&raw).unwrap();
            json_patch::patch(&mut obj, &patch.0).unwrap();
        }
        (obj, outcome, out)
    }

    #[test]
    fn missing_keys_are_added_and_present_ones_kept() {
        let (obj, outcome, out) = patched(&request(
            "CREATE",
            secret(json!({"password": "cHJlc2V0"})),
            serde_json::Value::Null,
        ));
        assert_eq!(outcome, Outcome::Filled);
        assert_eq!(out["response"]["uid"], "u-1");
        assert_eq!(out["response"]["allowed"], true);
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        assert_eq!(obj["data"]["password"], "cHJlc2V0");
        assert!(obj["data"]["token"].as_str().is_some_and(|t| t.len() > 40));
    }

    #[test]
    fn a_secret_without_data_gets_the_data_map() {
        let mut s = secret(serde_json::Value::Null);
        s.as_object_mut().unwrap().remove("data");
        let (obj, outcome, _) = patched(&request("CREATE", s, serde_json::Value::Null));
        assert_eq!(outcome, Outcome::Filled);
        assert_eq!(obj["data"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn an_update_without_a_key_keeps_the_old_value() {
        let old = secret(json!({"password": "b2xk", "token": "dG9r"}));
        let (obj, _, _) = patched(&request("UPDATE", secret(json!({"token": "dG9r"})), old));
        assert_eq!(obj["data"]["password"], "b2xk");
    }

    #[test]
    fn bad_annotations_and_unreadable_requests_are_allowed_with_a_warning() {
        let mut s = secret(json!({}));
        s["metadata"]["annotations"]["randomsecret.io/length"] = json!("0");
        let (obj, outcome, out) = patched(&request("CREATE", s.clone(), serde_json::Value::Null));
        assert_eq!(outcome, Outcome::Warned);
        assert_eq!(obj, s);
        assert_eq!(out["response"]["allowed"], true);
        assert!(
            out["response"]["warnings"][0]
                .as_str()
                .unwrap()
                .starts_with("randomsecret: ")
        );
        let (review, outcome, _) = review(br#"{"request": {"uid": "u-2", "object": 5}}"#);
        let out = serde_json::to_value(&review).unwrap();
        assert_eq!(outcome, Outcome::Unreadable);
        assert_eq!(
            (
                out["response"]["uid"].as_str(),
                out["response"]["allowed"].as_bool()
            ),
            (Some("u-2"), Some(true))
        );
        // A value the request carries is never echoed back in the warning.
        let (echoed, _, _) = super::review(
            br#"{"request": {"uid": "u-3", "object": {"stringData": "SECRETVALUE"}}}"#,
        );
        let warning = serde_json::to_value(&echoed).unwrap()["response"]["warnings"][0].to_string();
        assert!(!warning.contains("SECRETVALUE"), "{warning}");
    }

    #[test]
    fn a_misspelt_annotation_is_a_warning_beside_the_fill() {
        let mut s = secret(json!({}));
        s["metadata"]["annotations"]["randomsecret.io/lenght"] = json!("12");
        let (obj, outcome, out) = patched(&request("CREATE", s, serde_json::Value::Null));
        assert_eq!(outcome, Outcome::Filled);
        assert_eq!(out["response"]["allowed"], true);
        assert_eq!(
            out["response"]["warnings"],
            json!([
                "randomsecret: unknown annotation \"randomsecret.io/lenght\" is ignored: did you mean randomsecret.io/length?"
            ])
        );
        // Filled all the same, with the default length (32 bytes, base64 in JSON).
        let token: ByteString = serde_json::from_value(obj["data"]["token"].clone()).unwrap();
        assert_eq!(token.0.len(), 32);
        // After the plan's own warning, on an UPDATE of a complete Secret too.
        let mut bad = secret(json!({}));
        bad["metadata"]["annotations"]["randomsecret.io/length"] = json!("0");
        bad["metadata"]["annotations"]["secret.a-cup-of.coffee/lenght"] = json!("8");
        let (_, outcome, out) = patched(&request("CREATE", bad, serde_json::Value::Null));
        assert_eq!(outcome, Outcome::Warned);
        let warnings = out["response"]["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[1]
                .as_str()
                .unwrap()
                .ends_with("did you mean secret.a-cup-of.coffee/length?"),
            "{warnings:?}"
        );
        let mut full = secret(json!({"password": "YQ==", "token": "Yg=="}));
        full["metadata"]["annotations"]["randomsecret.io/generat"] = json!("x");
        let (obj, outcome, out) = patched(&request("UPDATE", full.clone(), full.clone()));
        assert_eq!((outcome, obj), (Outcome::Warned, full));
        assert!(out["response"].get("patch").is_none());
        assert_eq!(out["response"]["warnings"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn unmanaged_and_complete_secrets_are_untouched() {
        let mut s = secret(json!({}));
        s["metadata"]["labels"] = json!({});
        let (_, outcome, out) = patched(&request("CREATE", s, serde_json::Value::Null));
        assert_eq!(outcome, Outcome::Unchanged);
        assert!(out["response"].get("patch").is_none());
        let full = secret(json!({"password": "YQ==", "token": "Yg=="}));
        assert_eq!(
            patched(&request("CREATE", full, serde_json::Value::Null)).1,
            Outcome::Unchanged
        );
    }

    #[test]
    fn keys_are_escaped_as_json_pointers() {
        let s: Secret = serde_json::from_value(secret(json!({}))).unwrap();
        let values = BTreeMap::from([("a~b/c".to_string(), ByteString(b"x".to_vec()))]);
        let p = serde_json::to_value(fill_patch(&s, &values, Some("2"))).unwrap();
        assert_eq!(p[0]["path"], "/data/a~0b~1c");
        assert_eq!(
            p[1]["path"],
            "/metadata/annotations/randomsecret.io~1rotated"
        );
        assert_eq!(p[1]["value"], "2");
    }
}
