//! `randomsecret resolve`: rewrites references to a RandomSecret's base name
//! in workloads into its versioned name, before anything reaches the cluster.
//! A reference to an older version of the same base (`<base>-<hash>`, say from
//! a base layer that ran the function before an overlay rotated) is moved to
//! the current version too.

use super::manifests::{
    Found, ManifestError, namespace, random_secrets, random_secrets_across, random_secrets_in,
};
use super::yaml;
use crate::references::custom::CustomKind;
use crate::references::rewrite_pod_spec;
use serde_json::Value;
use std::collections::HashMap;

/// Base name -> versioned name, per namespace (None: no namespace in the
/// manifest); the custom kinds whose references are rewritten too; and the
/// names of ClusterRandomSecrets with a namespace selector, which may stamp
/// into any namespace (the selector is the cluster's to evaluate).
#[derive(Debug, Default)]
pub struct Names(
    HashMap<(Option<String>, String), String>,
    Vec<CustomKind>,
    HashMap<String, String>,
);

impl Names {
    /// The versioned names of every RandomSecret among `docs` (two with the
    /// same namespace and base name are an error).
    pub fn collect(docs: &[Value]) -> Result<Self, ManifestError> {
        Ok(Self::of(random_secrets(docs)?))
    }

    /// A namespace's own RandomSecret comes first: where one has the name
    /// a ClusterRandomSecret stamps, the cluster keeps it (NameConflict).
    fn of(found: Vec<Found>) -> Self {
        let (stamped, own): (Vec<Found>, Vec<Found>) =
            found.into_iter().partition(|f| f.stamps.is_some());
        let mut names: HashMap<_, _> = own
            .into_iter()
            .map(|f| ((f.namespace, f.version.base), f.version.secret_name))
            .collect();
        let mut anywhere = HashMap::new();
        for f in stamped {
            let stamps = f.stamps.expect("partitioned");
            for ns in stamps.namespaces {
                names
                    .entry((Some(ns), f.version.base.clone()))
                    .or_insert_with(|| f.version.secret_name.clone());
            }
            if stamps.by_selector {
                anywhere.insert(f.version.base, f.version.secret_name);
            }
        }
        Names(names, Vec::new(), anywhere)
    }

    /// Also rewrites the references of these custom kinds (`--reference`).
    pub fn with_custom(mut self, kinds: &[CustomKind]) -> Self {
        self.1 = kinds.to_vec();
        self
    }

    /// The current versioned name for a reference to a base name, or to any
    /// version of it (`<base>-<hash>`, as an earlier layer may have written).
    fn versioned(&self, ns: &Option<String>, name: &str) -> Option<String> {
        let lookup = |base: &str| {
            let here = self.0.get(&(ns.clone(), base.to_string()));
            here.or_else(|| self.2.get(base)).cloned()
        };
        lookup(name).or_else(|| {
            let (base, _) = name.rsplit_once('-')?;
            crate::tracking::refers_to(name, base).then(|| lookup(base))?
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty() && self.2.is_empty()
    }

    /// Rewrites one document's Secret references in its own namespace; returns how many changed.
    pub fn rewrite(&self, doc: &mut Value) -> usize {
        let ns = namespace(doc);
        let map = |name: &str| self.versioned(&ns, name);
        let kind = doc
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut changed = 0;
        for pointer in pod_spec_pointers(api_group(doc), &kind) {
            if let Some(spec) = doc.pointer_mut(pointer) {
                changed += rewrite_pod_spec(spec, &map);
            }
        }
        for custom in &self.1 {
            if custom.matches(doc) {
                changed += custom.rewrite(doc, &map);
            }
        }
        if kind == "Ingress" {
            for tls in doc
                .pointer_mut("/spec/tls")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(Value::String(name)) = tls.get_mut("secretName")
                    && let Some(new) = map(name)
                {
                    *name = new;
                    changed += 1;
                }
            }
        }
        changed
    }
}

/// Where each workload kind keeps its pod spec: the built-in kinds, and
/// Argo Rollouts' Rollout (group `argoproj.io`; one with `spec.workloadRef`
/// has no template of its own, see [`notes`]).
fn pod_spec_pointers(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("argoproj.io", "Rollout") => &["/spec/template/spec"],
        ("argoproj.io", _) => &[],
        (_, "Pod") => &["/spec"],
        (
            _,
            "Deployment"
            | "ReplicaSet"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "ReplicationController",
        ) => &["/spec/template/spec"],
        (_, "PodTemplate") => &["/template/spec"],
        (_, "CronJob") => &["/spec/jobTemplate/spec/template/spec"],
        _ => &[],
    }
}

/// A document's API group (`apps` of `apps/v1`; empty for the core group).
fn api_group(doc: &Value) -> &str {
    doc.get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/'))
        .map_or("", |(group, _)| group)
}

/// What `resolve` and the KRM function say of documents they leave alone on
/// purpose: an Argo Rollout that takes its pod template from another
/// workload (`spec.workloadRef`) has no references of its own to rewrite;
/// they are rewritten in that workload, where it is in the input.
pub fn notes<'a>(docs: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    docs.into_iter()
        .filter(|d| api_group(d) == "argoproj.io" && d["kind"] == "Rollout")
        .filter(|d| d.pointer("/spec/template").is_none())
        .filter_map(|d| {
            let r = d.pointer("/spec/workloadRef")?;
            let name = d.pointer("/metadata/name").and_then(Value::as_str)?;
            let kind = r.get("kind").and_then(Value::as_str).unwrap_or("workload");
            let target = r.get("name").and_then(Value::as_str).unwrap_or("?");
            Some(format!(
                "Rollout {name} takes its pod template from {kind} {target} (spec.workloadRef): its Secret references are rewritten in that {kind}, if it is in the input, not in the Rollout"
            ))
        })
        .collect()
}

/// Rewrites the documents in place (the built-in kinds and `custom`);
/// returns how many references changed.
pub fn resolve(docs: &mut [Value], custom: &[CustomKind]) -> Result<usize, ManifestError> {
    let names = Names::collect(docs)?.with_custom(custom);
    Ok(docs.iter_mut().map(|d| names.rewrite(d)).sum())
}

/// `randomsecret resolve`: a YAML stream in, the same stream out. A
/// document with nothing to rewrite goes out as it came in, byte for byte
/// (comments included; only byte-order marks are dropped); a rewritten one
/// is written anew (document and key order kept, comments inside it not).
/// A plain scalar that kubectl reads otherwise than this reader is refused
/// ([`yaml::check_plain_scalars`]) in what is written anew and in every
/// RandomSecret (as `name` refuses it).
pub fn resolve_stream(input: &str) -> Result<(String, usize), ManifestError> {
    let stream = yaml::read_documents(input)?;
    // The RandomSecrets first: their names are computed from what they mean
    // here (and every document of ours is checked, as `name` checks it).
    let names = Names::of(random_secrets_in(&stream)?);
    rewrite_stream(&stream, &names)
}

/// [`notes`] of every document of the YAML streams `inputs` (those that
/// do not parse are left to [`resolve_sources`] to report).
pub fn notes_of(inputs: &[&str]) -> Vec<String> {
    inputs
        .iter()
        .filter_map(|text| yaml::read_documents(text).ok())
        .flat_map(|stream| notes(stream.docs.iter().filter_map(|d| d.value.as_ref())))
        .collect()
}

/// `randomsecret resolve -f a.yaml -f dir/`: [`resolve_stream`] over
/// several sources read together. Each is checked alone (an error comes with
/// its index), references are resolved against the RandomSecrets of all of
/// them (a base name in two is an error, as within one), and each comes out
/// as [`resolve_stream`] writes it. `names[i]` names source `i` in errors.
pub fn resolve_sources(
    inputs: &[&str],
    names: &[String],
    custom: &[CustomKind],
) -> Result<(Vec<String>, usize), (usize, ManifestError)> {
    let streams = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| yaml::read_documents(text).map_err(|e| (i, e.into())))
        .collect::<Result<Vec<_>, _>>()?;
    let found = random_secrets_across(&streams, names)?;
    let names = Names::of(found.into_iter().flatten().collect()).with_custom(custom);
    let mut changed = 0;
    let mut outs = Vec::with_capacity(streams.len());
    for (i, stream) in streams.iter().enumerate() {
        let (out, n) = rewrite_stream(stream, &names).map_err(|e| (i, e))?;
        changed += n;
        outs.push(out);
    }
    Ok((outs, changed))
}

/// One stream with its references rewritten (see [`resolve_stream`]).
fn rewrite_stream(stream: &yaml::Stream, names: &Names) -> Result<(String, usize), ManifestError> {
    let rewritten: Vec<(Option<Value>, usize)> = stream
        .docs
        .iter()
        .map(|doc| {
            let mut value = doc.value.clone();
            let n = value.as_mut().map_or(0, |v| names.rewrite(v));
            (value, n)
        })
        .collect();
    let changed = rewritten.iter().map(|(_, n)| n).sum();
    // What is written anew must mean to kubectl what it means here; the rest
    // goes out as it came. Documents are numbered as `name` numbers them.
    let mut number = 0;
    for (doc, (_, n)) in stream.docs.iter().zip(&rewritten) {
        let Some(value) = &doc.value else { continue };
        number += 1;
        if *n > 0 {
            stream
                .check(doc)
                .map_err(|e| ManifestError::of(number, value, None, e.to_string()))?;
        }
    }
    let mut out = String::with_capacity(stream.text.len());
    let mut after_rewrite = false;
    for (doc, (value, n)) in stream.docs.iter().zip(rewritten) {
        // A document written anew loses its closing `...`: one that followed
        // it without a `---` of its own would run into it.
        if after_rewrite && !starts_with_separator(stream.text_of(doc)) {
            out.push_str("---\n");
        }
        after_rewrite = false;
        match value {
            Some(value) if n > 0 => {
                // What came before its content (comments, `---`), then it, written anew.
                out.push_str(&stream.text[doc.range.start..doc.body]);
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&yaml::write(&value)?);
                after_rewrite = true;
            }
            _ => out.push_str(stream.text_of(doc)),
        }
    }
    out.push_str(stream.trailer());
    Ok((out, changed))
}

/// Whether a document's text opens with `---` (after comments, blank lines
/// and directives).
fn starts_with_separator(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .lines()
        .map(str::trim_start)
        .find(|l| !(l.is_empty() || l.starts_with('#') || l.starts_with('%')))
        .is_some_and(|l| l.starts_with("---"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(name: &str, ns: Option<&str>) -> Value {
        let mut v = json!({"apiVersion": "randomsecret.io/v1", "kind": "RandomSecret",
                           "metadata": {"name": name}, "spec": {"keys": {"k": {"length": 8}}}});
        if let Some(ns) = ns {
            v["metadata"]["namespace"] = json!(ns);
        }
        v
    }

    fn versioned(name: &str) -> String {
        let r: crate::api::RandomSecret = serde_json::from_value(rs(name, None)).unwrap();
        crate::version::Version::of(&r.spec, name)
            .unwrap()
            .secret_name
    }

    fn env_from(secret: &str) -> Value {
        json!({"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": secret}}]}]})
    }

    #[test]
    fn every_workload_kind_is_rewritten() {
        let db = versioned("db");
        let mut docs = vec![
            rs("db", None),
            json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": env_from("db")}),
            json!({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": env_from("db")}}}),
            json!({"kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"template": {"spec": env_from("db")}}}),
            json!({"kind": "DaemonSet", "metadata": {"name": "s"}, "spec": {"template": {"spec": env_from("db")}}}),
            json!({"kind": "ReplicaSet", "metadata": {"name": "s"}, "spec": {"template": {"spec": env_from("db")}}}),
            json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": env_from("db")}}}),
            json!({"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": env_from("db")}}}}}),
            json!({"kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": env_from("db")}}),
            json!({"kind": "Ingress", "metadata": {"name": "i"}, "spec": {"tls": [{"hosts": ["a"], "secretName": "db"}]}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "db"}, "data": {"secretName": "db"}}),
        ];
        assert_eq!(resolve(&mut docs, &[]).unwrap(), 9);
        assert_eq!(
            docs[2]["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            json!(db)
        );
        assert_eq!(docs[9]["spec"]["tls"][0]["secretName"], json!(db));
        assert_eq!(
            docs[10]["data"]["secretName"], "db",
            "other kinds are left alone"
        );
        assert_eq!(
            docs[0]["metadata"]["name"], "db",
            "the RandomSecret is not renamed"
        );
    }

    #[test]
    fn an_argo_rollouts_template_is_rewritten_and_a_workload_ref_noted() {
        let db = versioned("db");
        let rollout = |spec: Value| {
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                   "metadata": {"name": "web"}, "spec": spec})
        };
        let mut docs = vec![
            rs("db", None),
            rollout(json!({"template": {"spec": env_from("db")}})),
            rollout(
                json!({"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}),
            ),
            // Another group's "Rollout" is not Argo's: left alone.
            json!({"apiVersion": "example.com/v1", "kind": "Rollout", "metadata": {"name": "x"},
                   "spec": {"template": {"spec": env_from("db")}}}),
        ];
        assert_eq!(resolve(&mut docs, &[]).unwrap(), 1);
        assert_eq!(
            docs[1]["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            json!(db)
        );
        assert_eq!(
            docs[3]["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "db"
        );
        let notes = notes(&docs);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("Rollout web") && notes[0].contains("Deployment web"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn a_custom_kind_is_rewritten_at_its_paths_only_when_listed() {
        let db = versioned("db");
        let worker = json!({"apiVersion": "example.com/v1", "kind": "Worker", "metadata": {"name": "w"},
            "spec": {"template": {"spec": env_from("db")}, "credentials": {"secretName": "db"}}});
        let mut docs = vec![rs("db", None), worker.clone()];
        assert_eq!(
            resolve(&mut docs, &[]).unwrap(),
            0,
            "not listed: left alone"
        );
        let kind = CustomKind::parse(
            "example.com/v1/Worker=spec/template/spec,spec/credentials/secretName",
        )
        .unwrap();
        assert_eq!(resolve(&mut docs, &[kind]).unwrap(), 2);
        assert_eq!(docs[1]["spec"]["credentials"]["secretName"], json!(db));
        assert_eq!(
            docs[1]["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            json!(db)
        );
    }

    #[test]
    fn other_namespaces_and_unknown_names_are_left_alone() {
        let mut docs = vec![
            rs("db", Some("a")),
            json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "b"}, "spec": env_from("db")}),
            json!({"kind": "Pod", "metadata": {"name": "q", "namespace": "a"}, "spec": env_from("other")}),
            json!({"kind": "Pod", "metadata": {"name": "r", "namespace": "a"}, "spec": env_from("db")}),
            json!({"kind": "Pod", "metadata": {"name": "s", "namespace": "a"}, "spec": env_from("db-hgkm245tbc")}),
            json!({"kind": "Pod", "metadata": {"name": "t", "namespace": "a"}, "spec": env_from("db-creds")}),
        ];
        assert_eq!(resolve(&mut docs, &[]).unwrap(), 2);
        let current = docs[3]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"].clone();
        assert_eq!(
            docs[4]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"], current,
            "an older version moves to the current one"
        );
        assert_eq!(
            docs[5]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "db-creds"
        );
        assert_eq!(
            docs[1]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "db"
        );
        assert_eq!(
            docs[2]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "other"
        );
        assert_ne!(
            docs[3]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
            "db"
        );
    }

    /// A ClusterRandomSecret names the same version in every namespace it
    /// stamps: those it lists, and with a selector any; a namespace's own
    /// RandomSecret of that name comes first (the cluster keeps it).
    #[test]
    fn a_clusterrandomsecret_resolves_where_it_stamps() {
        let crs = |name: &str, spec: Value| {
            let mut template = rs(name, None);
            template["kind"] = json!("ClusterRandomSecret");
            let mut s = spec;
            s["template"] = json!({"spec": template["spec"].take()});
            template["spec"] = s;
            template
        };
        let pod = |ns: &str, secret: &str| json!({"kind": "Pod", "metadata": {"name": "p", "namespace": ns}, "spec": env_from(secret)});
        let name_in =
            |d: &Value| d["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"].clone();
        let mut own = rs("db", Some("c"));
        own["spec"]["keys"]["k"]["length"] = json!(9);
        let mut docs = vec![
            crs("db", json!({"namespaces": ["a", "c"]})),
            own,
            pod("a", "db"),
            pod("b", "db"),
            pod("c", "db"),
        ];
        assert_eq!(resolve(&mut docs, &[]).unwrap(), 2);
        assert_eq!(
            name_in(&docs[2]),
            json!(versioned("db")),
            "the same name as a RandomSecret of that spec"
        );
        assert_eq!(name_in(&docs[3]), json!("db"), "b is not stamped");
        let own_name = name_in(&docs[4]);
        assert!(
            own_name != json!("db") && own_name != json!(versioned("db")),
            "c's own: {own_name}"
        );

        let mut docs = vec![
            pod("b", "db"),
            crs(
                "db",
                json!({"namespaceSelector": {"matchLabels": {"tenant": "yes"}}}),
            ),
        ];
        assert_eq!(resolve(&mut docs, &[]).unwrap(), 1);
        assert_eq!(name_in(&docs[0]), json!(versioned("db")));
    }

    #[test]
    fn a_template_error_names_the_template_field() {
        let doc = json!({"apiVersion": "randomsecret.io/v1", "kind": "ClusterRandomSecret",
            "metadata": {"name": "db"},
            "spec": {"namespaces": ["a"], "template": {"spec": {"keys": {"k": {"length": 8}}, "rotateEvery": "24h"}}}});
        let e = resolve(&mut [doc.clone()], &[]).unwrap_err().to_string();
        assert!(e.starts_with("document 1: ClusterRandomSecret db: "), "{e}");
        assert!(e.contains("time"), "{e}");
        let ManifestError::Document { field, .. } = Names::collect(&[doc]).unwrap_err() else {
            panic!("a document error");
        };
        assert_eq!(field.as_deref(), Some("spec.template.spec.rotateEvery"));
    }

    #[test]
    fn the_same_base_name_twice_in_a_namespace_is_an_error() {
        let mut other = rs("other", Some("a"));
        other["spec"]["secretName"] = json!("db");
        let mut docs = vec![rs("db", Some("a")), other];
        let e = resolve(&mut docs, &[]).unwrap_err().to_string();
        assert!(
            e.contains("RandomSecret a/other") && e.contains("RandomSecret db in document 1"),
            "{e}"
        );
    }

    /// Issue 32: what `name` refuses, `resolve` refuses: an unknown field,
    /// and a RandomSecret of the original operator, whose references it
    /// would otherwise leave as they are.
    #[test]
    fn unknown_fields_and_the_original_operators_group_are_refused() {
        let pod = "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\n---\n";
        let rs = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: db}\nspec: {keys: {k: {length: 8}}}\n";
        assert_eq!(resolve_stream(&format!("{pod}{rs}")).unwrap().1, 1);
        let typo = rs.replace("{length: 8}", "{length: 8, symbol: true}");
        assert_eq!(
            resolve_stream(&format!("{pod}{typo}"))
                .unwrap_err()
                .to_string(),
            "document 2: RandomSecret db: unknown field spec.keys.k.symbol: did you mean spec.keys.k.symbols?"
        );
        let legacy = rs.replace("randomsecret.io/v1", "secret.a-cup-of.coffee/v1");
        let e = resolve_stream(&format!("{pod}{legacy}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("document 2: RandomSecret db: apiVersion \"secret.a-cup-of.coffee/v1\" is the original operator's: change it to randomsecret.io/v1"),
            "{e}"
        );
        assert!(
            e.contains(&format!("will be named {}, not db", versioned("db"))),
            "{e}"
        );
    }

    #[test]
    fn stream_keeps_document_and_key_order() {
        let input = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]\n---\n\
            apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: db}\nspec: {keys: {k: {length: 8}}}\n";
        let (out, n) = resolve_stream(input).unwrap();
        assert_eq!(n, 1);
        let kinds: Vec<&str> = out.lines().filter(|l| l.starts_with("kind:")).collect();
        assert_eq!(kinds, ["kind: Pod", "kind: RandomSecret"]);
        assert!(
            out.find("kind: Pod").unwrap() < out.find("metadata:").unwrap(),
            "key order kept:\n{out}"
        );
        assert!(out.contains(&versioned("db")));
    }

    /// What `resolve` writes reads, for kubectl (Go, YAML 1.1), as what it
    /// read: quoted look-alikes stay quoted strings, plain ones are written as
    /// the booleans and numbers kubectl takes them for. (serde_yaml wrote a
    /// quoted "on" back plain, a boolean for kubectl, and a plain 0644 as the
    /// string '0644'.)
    #[test]
    fn output_means_to_kubectl_what_the_input_meant() {
        // The first document is rewritten too (its Pod spec refers to db), so written anew.
        let input = "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\n\
            spec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\ndata:\n\
            \x20 a: \"on\"\n  b: 'yes'\n  c: \"y\"\n  d: \"n\"\n  e: \"off\"\n  f: \"1_000\"\n  g: \"017\"\n\
            \x20 h: \".inf\"\n  i: \"2024-01-01\"\n  j: 2024-01-01\n  k: yEs\n  l: \"0x1F\"\n  m: \"12:30\"\n---\n\
            apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n\
            \x20     volumes: [{name: v, secret: {secretName: db, defaultMode: 0644}}]\n\
            \x20     containers: [{name: a, tty: yes, stdin: on, args: [on, \"on\", 1_000, \"1_000\", 017, n, N]}]\n---\n\
            apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: db}\nspec: {keys: {k: {length: 8}}}\n";
        let (out, n) = resolve_stream(input).unwrap();
        assert_eq!(n, 2);
        for line in [
            "  a: \"on\"",
            "  b: \"yes\"",
            "  c: \"y\"",
            "  d: \"n\"",
            "  e: \"off\"",
            "  f: \"1_000\"",
            "  g: \"017\"",
            "  h: \".inf\"",
            "  i: \"2024-01-01\"",
            "  j: \"2024-01-01\"",
            "  k: \"yEs\"",
            "  l: \"0x1F\"",
            "  m: \"12:30\"",
            "          defaultMode: 420",
            "        tty: true",
            "        stdin: true",
        ] {
            assert!(out.lines().any(|l| l == line), "{line:?} in\n{out}");
        }
        let docs = crate::gitops::yaml::read_stream(&out).unwrap();
        assert_eq!(
            docs[1]["spec"]["template"]["spec"]["containers"][0]["args"],
            json!([true, "on", 1000, "1_000", 15, false, false])
        );
        assert_eq!(
            docs[1]["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
            json!(versioned("db"))
        );
        // Its own output goes through unchanged.
        assert_eq!(resolve_stream(&out).unwrap().0, out);
    }

    #[test]
    fn plain_scalars_kubectl_reads_otherwise_are_refused() {
        let pod = "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\n";
        let rs = "---\napiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: db}\nspec: {length: 9}\n";
        let e = resolve_stream(&format!("{pod}data:\n  on: x\n{rs}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "document 1: Pod p: the plain key on (line 5, column 3) means \"true\" to kubectl"
            ),
            "{e}"
        );
        assert!(resolve_stream(&format!("{pod}data:\n  'on': x\n{rs}")).is_ok());
        // In a RandomSecret: its name would be another (as `name` says).
        let bad = rs.replace("{length: 9}", "{static: {1.0: x}}");
        let e = resolve_stream(&format!("{pod}{bad}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("plain key 1.0 (line 8, column 17)"), "{e}");
        // Not rewritten, so not written anew: it goes through, meaning untouched.
        let other = "kind: Pod\nmetadata: {name: q}\nspec: {containers: [{name: a, envFrom: [{secretRef: {name: x}}]}]}\ndata: {on: x, a: 0X1F}\n";
        let (out, n) = resolve_stream(&format!("{pod}---\n{other}{rs}")).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains(other), "{out}");
        let untouched = "kind: ConfigMap\nmetadata: {name: c}\ndata:\n  on: x\n";
        assert_eq!(
            resolve_stream(untouched).unwrap(),
            (untouched.to_string(), 0)
        );
    }

    /// A document with nothing to rewrite goes out byte for byte (comments,
    /// quoting, flow style, CRLF, tags); a rewritten one is written anew.
    #[test]
    fn documents_with_nothing_to_rewrite_pass_through_unchanged() {
        let untouched = [
            "# a comment\napiVersion: v1\nkind: ConfigMap # trailing\nmetadata: {name: c}\ndata: {a: 'on', b: yes, c: !!str 017, d: 1_000}\n",
            "---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: crlf\r\n",
            "--- # marker comment\nkind: Pod\nmetadata: {name: q}\nspec: {containers: [{name: a, envFrom: [{secretRef: {name: other}}]}]}\n",
            "---\napiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: db}\nspec: {keys: {k: {length: 8}}}  # the RandomSecret\n",
        ];
        let rewritten = "---\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, envFrom: [{secretRef: {name: db}}]}]}\n";
        let input = format!(
            "{}{}{}{}{}...\n# the end\n",
            untouched[0], untouched[1], rewritten, untouched[2], untouched[3]
        );
        let (out, n) = resolve_stream(&input).unwrap();
        assert_eq!(n, 1);
        for doc in untouched {
            assert!(
                out.contains(doc.trim_end_matches('\n')),
                "{doc:?} in\n{out}"
            );
        }
        assert!(!out.contains(rewritten), "{out}");
        assert!(out.contains(&versioned("db")), "{out}");
        assert!(out.ends_with("...\n# the end\n"), "{out}");
        // Nothing to rewrite at all: the very same bytes.
        let none = format!("{}{}", untouched[0], untouched[1]);
        assert_eq!(resolve_stream(&none).unwrap(), (none.clone(), 0));
        // And what comes out reads as what went in, rewritten reference aside.
        let before = yaml::read_stream(&input).unwrap();
        let after = yaml::read_stream(&out).unwrap();
        assert_eq!(before.len(), after.len());
        for (i, (b, a)) in before.iter().zip(&after).enumerate() {
            if i != 2 {
                assert_eq!(a, b);
            }
        }
    }
}
