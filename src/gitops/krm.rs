//! `randomsecret kustomize`: [`resolve`] as a KRM
//! function (a ResourceList in, the same out), for `kustomize build
//! --enable-alpha-plugins --enable-exec`.

use super::manifests::ManifestError;
use super::resolve::resolve;
use super::yaml;
use serde_json::Value;

/// `randomsecret kustomize`: a KRM function. The ResourceList's items are
/// rewritten in place (every annotation kept, nothing renamed); problems
/// (an invalid RandomSecret, a plain scalar whose meaning would change) go to
/// `results` (in input that is not a mapping, they are the error).
pub fn krm_function(input: &str) -> Result<(String, usize), ManifestError> {
    let mut list: Value = yaml::read(input)?;
    let outcome = yaml::check_plain_scalars(input)
        .map_err(ManifestError::from)
        .and_then(
            |()| match list.get_mut("items").and_then(Value::as_array_mut) {
                Some(items) => resolve(items),
                None => Ok(0),
            },
        );
    match outcome {
        Ok(changed) => Ok((yaml::write(&list)?, changed)),
        // Not a ResourceList (a list, a scalar): no `results` to report to.
        Err(e) if !(list.is_object() || list.is_null()) => Err(e),
        Err(e) => {
            let result = serde_json::json!({"message": e.to_string(), "severity": "error"});
            list["results"] = Value::Array(vec![result]);
            Ok((yaml::write(&list)?, 0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn versioned(name: &str) -> String {
        let rs = json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
                        "metadata": {"name": name}, "spec": {"keys": {"k": {"length": 8}}}});
        let r: crate::api::RandomSecret = serde_json::from_value(rs).unwrap();
        crate::version::Version::of(&r.spec, name)
            .unwrap()
            .secret_name
    }

    #[test]
    fn krm_function_rewrites_items_and_reports_errors_as_results() {
        let list = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\
            - apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata:\n    name: db\n    annotations: {config.kubernetes.io/index: '0', internal.config.kubernetes.io/path: rs.yaml}\n  spec: {keys: {k: {length: 8}}}\n\
            - kind: Pod\n  metadata: {name: p, annotations: {config.kubernetes.io/index: '1'}}\n  spec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\n";
        let (out, n) = krm_function(list).unwrap();
        assert_eq!(n, 1);
        let v: Value = yaml::read(&out).unwrap();
        assert_eq!(
            v["items"][0]["metadata"]["annotations"]["internal.config.kubernetes.io/path"],
            "rs.yaml"
        );
        assert_eq!(
            v["items"][1]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            json!(versioned("db"))
        );
        let bad = "kind: ResourceList\nitems:\n- apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata: {name: db}\n  spec: {keys: {k: {length: 0}}}\n";
        let (out, _) = krm_function(bad).unwrap();
        let v: Value = yaml::read(&out).unwrap();
        assert_eq!(v["results"][0]["severity"], "error");
        assert!(
            v["results"][0]["message"]
                .as_str()
                .unwrap()
                .contains("length 0")
        );
    }

    #[test]
    fn plain_scalars_kubectl_reads_otherwise_are_reported() {
        let list = "kind: ResourceList\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n  data: {a: 0X1F}\n";
        let (out, n) = krm_function(list).unwrap();
        assert_eq!(n, 0);
        let v: Value = yaml::read(&out).unwrap();
        assert_eq!(v["results"][0]["severity"], "error");
        let message = v["results"][0]["message"].as_str().unwrap();
        assert!(message.contains("0X1F (line 5, column 13)"), "{message}");
        assert_eq!(v["items"][0]["data"]["a"], "0X1F", "nothing rewritten");
    }

    /// Found by fuzzing (`fuzz/`, target kustomize): a problem in input that
    /// is not a mapping (a list, a scalar) has no `results` to go to; it is
    /// the function's error, not a panic.
    #[test]
    fn problems_in_input_that_is_not_a_mapping_are_errors() {
        for input in [
            "- 0X1F\n",
            "0X1F\n",
            "- kind: ConfigMap\n  data: {a: 0X1F}\n",
        ] {
            let e = krm_function(input).unwrap_err().to_string();
            assert!(e.contains("0X1F"), "{input:?}: {e}");
        }
        assert!(krm_function("- 1\n").is_ok(), "nothing to report");
    }
}
