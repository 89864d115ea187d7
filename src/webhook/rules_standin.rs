//! TEMPORARY stand-in for `crate::annotated::rules` (branch h-annot), with
//! the same interface; deleted when that module is merged.

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use std::collections::BTreeMap;

pub const MANAGED_LABEL: &str = "randomsecret.io/managed";
pub const ROTATED: &str = "randomsecret.io/rotated";

pub struct Refusal(String);
impl Refusal {
    pub fn message(&self) -> String {
        self.0.clone()
    }
}

pub struct Fill {
    copied: BTreeMap<String, ByteString>,
    generate: Vec<String>,
    length: usize,
}

impl Fill {
    pub fn rotated(&self) -> Option<&str> {
        None
    }

    pub fn values(&self) -> Result<BTreeMap<String, ByteString>, String> {
        let mut out = self.copied.clone();
        for k in &self.generate {
            let g = crate::version::Generated {
                length: self.length,
                charset: crate::api::Charset::Alphanumeric,
                symbols: String::new(),
            };
            let v = crate::generate::value(&g).map_err(|e| e.to_string())?;
            out.insert(k.clone(), ByteString(v.into_bytes()));
        }
        Ok(out)
    }
}

pub enum Plan {
    NotManaged,
    Complete,
    Refused(Refusal),
    Invalid(String),
    Fill(Fill),
}

pub fn plan(new: &Secret, old: Option<&Secret>) -> Plan {
    let labels = new.metadata.labels.clone().unwrap_or_default();
    if labels.get(MANAGED_LABEL).map(String::as_str) != Some("true") {
        return Plan::NotManaged;
    }
    if new.immutable == Some(true) {
        return Plan::Refused(Refusal("immutable Secret: not filled".into()));
    }
    let ann = new.metadata.annotations.clone().unwrap_or_default();
    let Some(keys) = ann.get("randomsecret.io/generate") else {
        return Plan::NotManaged;
    };
    let length = match ann
        .get("randomsecret.io/length")
        .map(|l| l.parse::<usize>())
    {
        None => 32,
        Some(Ok(n)) if (1..=4096).contains(&n) => n,
        _ => return Plan::Invalid("randomsecret.io/length must be 1..4096".into()),
    };
    if let Some(c) = ann.get("randomsecret.io/charset")
        && c != "alphanumeric"
    {
        return Plan::Invalid(format!("randomsecret.io/charset {c:?} is unknown"));
    }
    let data = new.data.clone().unwrap_or_default();
    let old_data = old.and_then(|o| o.data.clone()).unwrap_or_default();
    let (mut copied, mut generate) = (BTreeMap::new(), Vec::new());
    for k in keys.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        if !crate::version::valid_data_key(k) {
            return Plan::Invalid(format!("{k:?} is not a valid data key"));
        }
        if data.get(k).is_some_and(|v| !v.0.is_empty()) {
            continue;
        }
        match old_data.get(k).filter(|v| !v.0.is_empty()) {
            Some(v) => drop(copied.insert(k.to_string(), v.clone())),
            None => generate.push(k.to_string()),
        }
    }
    if copied.is_empty() && generate.is_empty() {
        return Plan::Complete;
    }
    Plan::Fill(Fill {
        copied,
        generate,
        length,
    })
}
