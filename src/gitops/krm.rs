//! `randomsecret kustomize`: [`resolve`] as a KRM
//! function (a ResourceList in, the same out), for `kustomize build
//! --enable-alpha-plugins --enable-exec`.

use super::manifests::ManifestError;
use super::resolve::resolve;
use super::yaml;
use crate::references::custom::CustomKind;
use serde_json::Value;

/// What the KRM function writes: the ResourceList, and whether it failed
/// (then the command exits non-zero, as the KRM functions spec asks).
#[derive(Debug)]
pub struct KrmOutput {
    pub list: String,
    /// References rewritten.
    pub changed: usize,
    /// The error also appended to `results`.
    pub error: Option<String>,
}

/// `randomsecret kustomize`: a KRM function. The ResourceList's (or v1
/// List's) items are rewritten in place (every annotation kept, nothing
/// renamed). A problem (an invalid RandomSecret, a plain scalar whose meaning
/// would change, input that is not a list of items) is appended to
/// `results`, after any results of earlier functions, and the items go out
/// unchanged. Input that is not a YAML mapping at all is an `Err`.
pub fn krm_function(input: &str) -> Result<KrmOutput, ManifestError> {
    let mut list: Value = yaml::read(input)?;
    if !list.is_object() {
        return Err(ManifestError::Input(
            "the KRM function's input is not a ResourceList (not a mapping)".into(),
        ));
    }
    let kind = list.get("kind").and_then(Value::as_str).unwrap_or_default();
    // The custom kinds the function's config lists (`spec.references`,
    // the strings `resolve --reference` takes).
    let custom = references_of(&list);
    let outcome = if kind != "ResourceList" && kind != "List" {
        Err(ManifestError::Input(format!(
            "the KRM function's input is a {kind:?}, not a ResourceList (or v1 List)"
        )))
    } else {
        match list.get_mut("items") {
            // Rewritten, the whole list is written anew: every scalar must
            // mean to kubectl what it means here. Else it goes out as it came.
            Some(Value::Array(items)) => {
                let mut rewritten = items.clone();
                match custom.and_then(|custom| resolve(&mut rewritten, &custom)) {
                    Ok(0) => Ok(0),
                    Ok(n) => yaml::check_plain_scalars(input)
                        .map(|()| {
                            *items = rewritten;
                            n
                        })
                        .map_err(ManifestError::from),
                    Err(e) => Err(e),
                }
            }
            None | Some(Value::Null) => Ok(0),
            Some(_) => Err(ManifestError::Input(
                "the ResourceList's items is not a list".into(),
            )),
        }
    };
    match outcome {
        // Nothing to rewrite: the list goes out as it came in (without a
        // leading byte-order mark, which kustomize need not expect).
        Ok(0) => Ok(KrmOutput {
            list: input.strip_prefix('\u{feff}').unwrap_or(input).to_string(),
            changed: 0,
            error: None,
        }),
        Ok(changed) => {
            // Written anew anyway: what was left alone on purpose is said.
            let items = list["items"].as_array().cloned().unwrap_or_default();
            for note in super::resolve::notes(&items) {
                append_result(
                    &mut list,
                    serde_json::json!({"message": note, "severity": "info"}),
                );
            }
            Ok(KrmOutput {
                list: yaml::write(&list)?,
                changed,
                error: None,
            })
        }
        Err(e) => {
            let result = result_of(&e, &list);
            append_result(&mut list, result);
            Ok(KrmOutput {
                list: yaml::write(&list)?,
                changed: 0,
                error: Some(e.to_string()),
            })
        }
    }
}

/// The custom kinds of the function config's `spec.references`: a list of
/// `GROUP/VERSION/KIND=PATH[,PATH...]`.
fn references_of(list: &Value) -> Result<Vec<CustomKind>, ManifestError> {
    let Some(refs) = list.pointer("/functionConfig/spec/references") else {
        return Ok(Vec::new());
    };
    let texts: Vec<String> = serde_json::from_value(refs.clone()).map_err(|_| {
        ManifestError::Input(
            "the function config's spec.references is not a list of strings (GROUP/VERSION/KIND=PATH[,PATH...])".into(),
        )
    })?;
    crate::references::custom::parse_all(&texts).map_err(ManifestError::Input)
}

/// The KRM result for an error: its message, and for an item's error the
/// object (`resourceRef`), the field (`field.path`) and the file kustomize
/// read it from (`file`), as the KRM functions spec has them.
fn result_of(e: &ManifestError, list: &Value) -> Value {
    let mut result = serde_json::json!({"message": e.to_string(), "severity": "error"});
    let ManifestError::Document {
        doc, object, field, ..
    } = e
    else {
        return result;
    };
    if let Some(o) = object {
        let reference: serde_json::Map<String, Value> = [
            ("apiVersion", &o.api_version),
            ("kind", &o.kind),
            ("name", &o.name),
            ("namespace", &o.namespace),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), Value::from(v.clone()?))))
        .collect();
        if !reference.is_empty() {
            result["resourceRef"] = Value::Object(reference);
        }
    }
    if let Some(path) = field {
        result["field"] = serde_json::json!({ "path": path });
    }
    let annotations = list
        .pointer(&format!(
            "/items/{}/metadata/annotations",
            doc.saturating_sub(1)
        ))
        .cloned()
        .unwrap_or_default();
    let annotation = |name: &str| {
        [
            format!("internal.config.kubernetes.io/{name}"),
            format!("config.kubernetes.io/{name}"),
        ]
        .iter()
        .find_map(|k| annotations.get(k).and_then(Value::as_str).map(String::from))
    };
    if let Some(path) = annotation("path") {
        result["file"] = serde_json::json!({ "path": path });
        if let Some(index) = annotation("index").and_then(|i| i.parse::<u64>().ok()) {
            result["file"]["index"] = Value::from(index);
        }
    }
    result
}

/// Appends a result to `results`: a list (config.kubernetes.io/v1), or the
/// `results` list inside it (the v1beta1 shape); anything else there is kept
/// under a list of our own.
fn append_result(list: &mut Value, ours: Value) {
    let results = &mut list["results"];
    match results {
        Value::Array(a) => a.push(ours),
        Value::Object(o) if matches!(o.get("results"), Some(Value::Array(_))) => {
            if let Some(Value::Array(a)) = o.get_mut("results") {
                a.push(ours);
            }
        }
        Value::Null => *results = Value::Array(vec![ours]),
        other => *other = Value::Array(vec![other.take(), ours]),
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
        let KrmOutput {
            list: out,
            changed: n,
            error,
        } = krm_function(list).unwrap();
        assert_eq!((n, error), (1, None));
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
        let out = krm_function(bad).unwrap();
        assert!(out.error.unwrap().contains("length 0"));
        let v: Value = yaml::read(&out.list).unwrap();
        assert_eq!(v["results"][0]["severity"], "error");
        assert!(
            v["results"][0]["message"]
                .as_str()
                .unwrap()
                .contains("length 0")
        );
    }

    #[test]
    fn the_function_config_lists_custom_references() {
        let list = |refs: &str| {
            format!(
                "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: randomsecret.io/v1\n  kind: ResolveNames\n  spec: {{references: {refs}}}\nitems:\n\
            - apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata: {{name: db}}\n  spec: {{keys: {{k: {{length: 8}}}}}}\n\
            - apiVersion: example.com/v1\n  kind: Worker\n  metadata: {{name: w}}\n  spec: {{credentials: {{secretName: db}}}}\n"
            )
        };
        let out = krm_function(&list(
            "['example.com/v1/Worker=spec/credentials/secretName']",
        ))
        .unwrap();
        assert_eq!((out.changed, out.error), (1, None));
        let v: Value = yaml::read(&out.list).unwrap();
        assert_eq!(
            v["items"][1]["spec"]["credentials"]["secretName"],
            json!(versioned("db"))
        );
        let bad = krm_function(&list("['Worker=spec']")).unwrap();
        assert!(
            bad.error.unwrap().contains("not GROUP/VERSION/KIND"),
            "a bad reference is an error result"
        );
    }

    #[test]
    fn a_rollout_with_a_workload_ref_is_an_info_result() {
        let list = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\
            - apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata: {name: db}\n  spec: {keys: {k: {length: 8}}}\n\
            - apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n  spec: {template: {spec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}}}\n\
            - apiVersion: argoproj.io/v1alpha1\n  kind: Rollout\n  metadata: {name: web}\n  spec: {workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web}}\n";
        let out = krm_function(list).unwrap();
        assert_eq!((out.changed, out.error), (1, None));
        let v: Value = yaml::read(&out.list).unwrap();
        assert_eq!(v["results"][0]["severity"], "info");
        let message = v["results"][0]["message"].as_str().unwrap();
        assert!(message.contains("spec.workloadRef"), "{message}");
    }

    #[test]
    fn plain_scalars_kubectl_reads_otherwise_are_reported() {
        let list = "kind: ResourceList\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n  data: {a: 0X1F}\n\
            - kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\n\
            - apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata: {name: db}\n  spec: {length: 9}\n";
        let out = krm_function(list).unwrap();
        assert_eq!(out.changed, 0);
        let v: Value = yaml::read(&out.list).unwrap();
        assert_eq!(v["results"][0]["severity"], "error");
        let message = v["results"][0]["message"].as_str().unwrap();
        assert!(message.contains("0X1F (line 5, column 13)"), "{message}");
        assert_eq!(v["items"][0]["data"]["a"], "0X1F", "nothing rewritten");
        assert_eq!(
            v["items"][1]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"], "db",
            "nothing rewritten"
        );
        // Nothing to rewrite: the list goes out as it came, so nothing changes meaning.
        let untouched = "kind: ResourceList\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n  data: {a: 0X1F}\n";
        let out = krm_function(untouched).unwrap();
        assert_eq!((out.list.as_str(), out.error), (untouched, None));
    }

    /// Issue 32: an unknown field is an error result that names the item,
    /// the field's path and the file kustomize read it from.
    #[test]
    fn unknown_fields_are_results_with_the_object_and_the_field() {
        let list = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\
            - kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\n\
            - apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata:\n    name: db\n    namespace: prod\n\
            \x20   annotations: {internal.config.kubernetes.io/path: base/rs.yaml, internal.config.kubernetes.io/index: '1'}\n\
            \x20 spec: {keys: {k: {length: 8}}, rotaton: '2'}\n";
        let out = krm_function(list).unwrap();
        let message = "document 2: RandomSecret prod/db: unknown field spec.rotaton: did you mean spec.rotation?";
        assert_eq!(out.error.as_deref(), Some(message));
        let v: Value = yaml::read(&out.list).unwrap();
        assert_eq!(
            v["results"][0],
            json!({"message": message, "severity": "error",
                   "resourceRef": {"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret", "name": "db", "namespace": "prod"},
                   "field": {"path": "spec.rotaton"},
                   "file": {"path": "base/rs.yaml", "index": 1}})
        );
        assert_eq!(
            v["items"][0]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"], "db",
            "nothing rewritten"
        );
    }

    /// Results of earlier functions in the pipeline are kept; ours come after.
    #[test]
    fn errors_are_appended_to_existing_results() {
        let bad_item = "- apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata: {name: db}\n  spec: {keys: {k: {length: 0}}}\n";
        let list = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nresults:\n- {{message: earlier, severity: warning}}\nitems:\n{bad_item}"
        );
        let out = krm_function(&list).unwrap();
        assert!(out.error.is_some());
        let v: Value = yaml::read(&out.list).unwrap();
        assert_eq!(
            v["results"][0],
            json!({"message": "earlier", "severity": "warning"})
        );
        assert_eq!(v["results"][1]["severity"], "error");
        assert_eq!(v["results"].as_array().unwrap().len(), 2);
        // The v1beta1 shape: results inside results.
        let list = format!(
            "kind: ResourceList\nresults:\n  name: f\n  results: [{{message: earlier}}]\nitems:\n{bad_item}"
        );
        let v: Value = yaml::read(&krm_function(&list).unwrap().list).unwrap();
        assert_eq!(v["results"]["name"], "f");
        assert_eq!(v["results"]["results"][0]["message"], "earlier");
        assert_eq!(v["results"]["results"][1]["severity"], "error");
    }

    /// Input that is not a ResourceList is a failure, not a silent pass.
    #[test]
    fn input_that_is_not_a_resource_list_fails() {
        for (input, says) in [
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
                "not a ResourceList",
            ),
            ("kind: ResourceList\nitems: {a: b}\n", "items is not a list"),
        ] {
            let out = krm_function(input).unwrap();
            let error = out.error.unwrap();
            assert!(error.contains(says), "{error}");
            let v: Value = yaml::read(&out.list).unwrap();
            assert_eq!(v["results"][0]["severity"], "error");
        }
        assert!(krm_function("[a, b]\n").is_err());
        // A v1 List is accepted, as the spec asks.
        let list = "apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n";
        assert!(krm_function(list).unwrap().error.is_none());
    }

    /// Nothing to rewrite: the ResourceList goes out byte for byte.
    #[test]
    fn a_list_with_nothing_to_rewrite_passes_through_unchanged() {
        let list = "# from kustomize\napiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\
            - kind: ConfigMap  # kept\n  metadata: {name: c, annotations: {config.kubernetes.io/index: '0'}}\n  data: {a: 'on', b: !!str 017}\n";
        let out = krm_function(list).unwrap();
        assert_eq!((out.list.as_str(), out.changed, out.error), (list, 0, None));
        let out = krm_function(&format!("\u{feff}{list}")).unwrap();
        assert_eq!(out.list, list, "a leading byte-order mark is dropped");
    }

    /// Found by fuzzing (`fuzz/`, target kustomize): input that is not a
    /// mapping (a list, a scalar) has no `results` to report to; it is the
    /// function's error, never a panic.
    #[test]
    fn problems_in_input_that_is_not_a_mapping_are_errors() {
        for input in [
            "- 0X1F\n",
            "0X1F\n",
            "- kind: ConfigMap\n  data: {a: 0X1F}\n",
            "- 1\n",
        ] {
            let e = krm_function(input).unwrap_err().to_string();
            assert!(e.contains("not a mapping"), "{input:?}: {e}");
        }
    }
}
