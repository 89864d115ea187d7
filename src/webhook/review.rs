//! Reading an AdmissionReview: one pass over the body, borrowing from it, that
//! keeps only what the rules read (pure; fuzzed: `fuzz/fuzz_targets/admission.rs`).
//!
//! The body is whatever reached the webhook's port, so nothing here grows
//! with it beyond a fixed bound: of the labels only annotation mode's two;
//! of the annotations only the keys the rules read, and none once they
//! exceed what the apiserver stores (256 KiB); of `data` and `stringData`
//! the values of the listed keys (decoded) and the size of the others. The
//! apiserver writes `metadata` before `data`, so the listing is known when
//! the values come; in any other order at most [`MAX_PENDING`] entries are
//! held until it is. The uid is kept as soon as it is read, so a request
//! that turns out unreadable is still answered with it. Errors name a
//! category and a position, never the input (it may hold a value).

use crate::annotated::rules;
use crate::api::LABEL_NAME;
use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// The most annotation bytes (keys and values) the apiserver stores: an
/// object with more is refused after admission, so it is never filled.
pub const MAX_ANNOTATION_BYTES: usize = 256 * 1024;
/// Values held before the object's annotations say which keys matter (only
/// when `data` comes before `metadata`, which the apiserver never writes).
pub const MAX_PENDING: usize = 4096;
/// A uid longer than this is not echoed (the apiserver's are 36 characters).
pub const MAX_UID: usize = 128;

/// One review as read: the uid to answer with, and the request or why it
/// could not be read.
#[derive(Debug)]
pub struct Review {
    /// `request.uid`, or "" when absent, not a string or too long.
    pub uid: String,
    pub request: Result<Request, String>,
}

/// What the webhook acts on.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub operation: Operation,
    pub dry_run: bool,
    /// `kind` is core/v1 Secret.
    pub secret: bool,
    pub namespace: Option<String>,
    pub object: Option<Object>,
    pub old_object: Option<Object>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    /// DELETE, CONNECT, or anything else: never acted on.
    Other,
}

/// What the rules read of one Secret in a review ([`rules::Object`]).
#[derive(Debug, Default, PartialEq)]
pub struct Object {
    /// Name, namespace, annotation mode's labels, the annotations the rules read.
    pub meta: ObjectMeta,
    pub immutable: bool,
    /// Whether the object has a `data` map (the patch adds to it, or adds it).
    pub has_data: bool,
    /// The listed keys' values (decoded), `stringData` winning over `data`.
    values: BTreeMap<String, Vec<u8>>,
    /// Bytes of the values of every other key.
    others: usize,
    /// Why the webhook leaves it alone, when it does: its annotations exceed
    /// what the apiserver stores, or too many values came before them.
    pub unfit: Option<&'static str>,
}

impl Object {
    /// The keys its own annotations list (empty when they list none or are invalid).
    pub fn listed(&self) -> Vec<String> {
        listing(&self.meta)
    }
}

impl rules::Object for Object {
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn is_immutable(&self) -> bool {
        self.immutable
    }
    fn value(&self, key: &str) -> Option<&[u8]> {
        self.values.get(key).map(Vec::as_slice)
    }
    /// Exact for its own listing, the only one the rules ask about.
    fn bytes_besides(&self, keys: &[String]) -> usize {
        self.others
            + self
                .values
                .iter()
                .filter(|(k, _)| !keys.contains(k))
                .map(|(_, v)| v.len())
                .sum::<usize>()
    }
}

/// Reads one review. Never fails: what cannot be read is the `Err` of
/// [`Review::request`].
pub fn read(body: &[u8]) -> Review {
    let mut uid = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    let request = Top { uid: &mut uid }
        .deserialize(&mut de)
        .and_then(|r| de.end().map(|()| r))
        .map_err(|e| {
            format!(
                "{:?} error at line {} column {}",
                e.classify(),
                e.line(),
                e.column()
            )
        })
        .and_then(|r| r.ok_or_else(|| "no request".to_string()));
    Review {
        uid: uid.unwrap_or_default(),
        request,
    }
}

/// The keys an object's annotations list, when they parse.
fn listing(meta: &ObjectMeta) -> Vec<String> {
    match meta.annotations.as_ref().map(rules::parse) {
        Some(Ok(Some(r))) => r.keys,
        _ => Vec::new(),
    }
}

/// A string, borrowed from the body unless it had escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// `{"request": ...}`, everything else skipped.
struct Top<'u> {
    uid: &'u mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Option<Request>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Option<Request>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AdmissionReview")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut request = None;
        while let Some(key) = map.next_key::<Text>()? {
            if key.0 == "request" {
                request = map.next_value_seed(Optional(RequestSeed {
                    uid: &mut *self.uid,
                }))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(request)
    }
}

/// `null` as None, else the seed's value.
struct Optional<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Optional<S> {
    type Value = Option<S::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Optional<S> {
    type Value = Option<S::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("null or a value")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(borrow, default)]
    group: Option<Text<'a>>,
    #[serde(borrow, default)]
    kind: Option<Text<'a>>,
}

struct RequestSeed<'u> {
    uid: &'u mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = Request;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Request, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_> {
    type Value = Request;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an admission request")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Request, A::Error> {
        let mut r = Request {
            operation: Operation::Other,
            dry_run: false,
            secret: false,
            namespace: None,
            object: None,
            old_object: None,
        };
        while let Some(key) = map.next_key::<Text>()? {
            match &*key.0 {
                "uid" => {
                    // Kept at once: what follows may be unreadable.
                    let uid = map.next_value::<Option<Text>>()?;
                    *self.uid = uid
                        .map(|u| u.0)
                        .filter(|u| u.len() <= MAX_UID)
                        .map(Into::into);
                }
                "kind" => {
                    let k = map.next_value::<Option<Kind>>()?;
                    r.secret = k.is_some_and(|k| {
                        k.group.is_none_or(|g| g.0.is_empty())
                            && k.kind.is_some_and(|k| k.0 == "Secret")
                    });
                }
                "operation" => {
                    r.operation = match map.next_value::<Option<Text>>()?.as_ref().map(|t| &*t.0) {
                        Some("CREATE") => Operation::Create,
                        Some("UPDATE") => Operation::Update,
                        _ => Operation::Other,
                    }
                }
                "dryRun" => r.dry_run = map.next_value::<Option<bool>>()?.unwrap_or(false),
                "namespace" => r.namespace = map.next_value::<Option<Text>>()?.map(|t| t.0.into()),
                "object" => r.object = map.next_value_seed(Optional(ObjectSeed))?,
                "oldObject" => r.old_object = map.next_value_seed(Optional(ObjectSeed))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(r)
    }
}

struct ObjectSeed;

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Object;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Object, D::Error> {
        d.deserialize_map(self)
    }
}

/// Values read before the listing was known: (key, value, base64).
type Pending<'de> = Vec<(Text<'de>, Text<'de>, bool)>;

impl<'de> Visitor<'de> for ObjectSeed {
    type Value = Object;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Secret")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
        let mut o = Object::default();
        let mut listed: Option<Vec<String>> = None;
        let mut pending: Pending<'de> = Vec::new();
        // stringData wins over data: its values are applied last.
        let mut string_data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut string_sizes: BTreeMap<String, usize> = BTreeMap::new();
        let mut data_sizes: BTreeMap<String, usize> = BTreeMap::new();
        while let Some(key) = map.next_key::<Text>()? {
            match &*key.0 {
                "metadata" => {
                    let (meta, unfit) =
                        map.next_value_seed(Optional(MetaSeed))?.unwrap_or_default();
                    o.meta = meta;
                    o.unfit = o.unfit.or(unfit);
                    listed = Some(listing(&o.meta));
                }
                "immutable" => o.immutable = map.next_value::<Option<bool>>()?.unwrap_or(false),
                field @ ("data" | "stringData") => {
                    let base64 = field == "data";
                    o.has_data |= base64;
                    let seed = ValuesSeed {
                        listed: listed.as_deref(),
                        base64,
                        pending: &mut pending,
                        kept: if base64 {
                            &mut o.values
                        } else {
                            &mut string_data
                        },
                        sizes: if base64 {
                            &mut data_sizes
                        } else {
                            &mut string_sizes
                        },
                    };
                    if map.next_value_seed(Optional(seed))?.is_none() && base64 {
                        o.has_data = false;
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if pending.len() > MAX_PENDING {
            o.unfit = o
                .unfit
                .or(Some("it has too many values before its annotations"));
        }
        let listed = listed.unwrap_or_default();
        for (k, v, base64) in pending {
            let (kept, sizes) = if base64 {
                (&mut o.values, &mut data_sizes)
            } else {
                (&mut string_data, &mut string_sizes)
            };
            keep(&listed, k.0, &v.0, base64, kept, sizes).map_err(de::Error::custom)?;
        }
        // stringData replaces data's value of the same key when stored.
        for k in string_sizes.keys() {
            data_sizes.remove(k);
        }
        for (k, v) in string_data {
            o.values.insert(k, v);
        }
        o.others = data_sizes.values().chain(string_sizes.values()).sum();
        Ok(o)
    }
}

/// The size a base64 text decodes to (the apiserver decoded it already).
fn decoded_len(v: &str) -> usize {
    let pad = v.bytes().rev().take_while(|b| *b == b'=').count();
    (v.len() / 4 * 3).saturating_sub(pad.min(2))
}

/// One value: decoded and kept when its key is listed, else only its size.
fn keep(
    listed: &[String],
    key: Cow<'_, str>,
    value: &str,
    base64: bool,
    kept: &mut BTreeMap<String, Vec<u8>>,
    sizes: &mut BTreeMap<String, usize>,
) -> Result<(), &'static str> {
    if listed.iter().any(|l| *l == key) {
        let v = if base64 {
            ByteString::deserialize(de::value::BorrowedStrDeserializer::<de::value::Error>::new(
                value,
            ))
            .map_err(|_| "a listed key's value is not base64")?
            .0
        } else {
            value.as_bytes().to_vec()
        };
        kept.insert(key.into_owned(), v);
    } else {
        let n = if base64 {
            decoded_len(value)
        } else {
            value.len()
        };
        // A repeated key counts once, as the apiserver stores it.
        if let Some(old) = sizes.get_mut(&*key) {
            *old = n;
        } else if sizes.len() < MAX_SIZES {
            sizes.insert(key.into_owned(), n);
        } else {
            *sizes.entry(String::new()).or_default() += n;
        }
    }
    Ok(())
}

/// Keys whose sizes are kept apart (beyond: summed under one entry).
const MAX_SIZES: usize = 4096;

struct ValuesSeed<'a, 'de> {
    listed: Option<&'a [String]>,
    base64: bool,
    pending: &'a mut Pending<'de>,
    kept: &'a mut BTreeMap<String, Vec<u8>>,
    sizes: &'a mut BTreeMap<String, usize>,
}

impl<'de> DeserializeSeed<'de> for ValuesSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ValuesSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(k) = map.next_key::<Text>()? {
            let v = map.next_value::<Text>()?;
            match self.listed {
                Some(listed) => keep(listed, k.0, &v.0, self.base64, self.kept, self.sizes)
                    .map_err(de::Error::custom)?,
                // Beyond the bound: dropped (the object is unfit).
                None if self.pending.len() > MAX_PENDING => {}
                None => self.pending.push((k, v, self.base64)),
            }
        }
        Ok(())
    }
}

struct MetaSeed;

impl<'de> DeserializeSeed<'de> for MetaSeed {
    type Value = (ObjectMeta, Option<&'static str>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = (ObjectMeta, Option<&'static str>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("object metadata")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = ObjectMeta::default();
        let mut unfit = None;
        while let Some(key) = map.next_key::<Text>()? {
            match &*key.0 {
                "name" => meta.name = map.next_value::<Option<Text>>()?.map(|t| t.0.into()),
                "namespace" => {
                    meta.namespace = map.next_value::<Option<Text>>()?.map(|t| t.0.into())
                }
                "labels" => {
                    let labels = map.next_value_seed(Optional(Entries {
                        keep: |k: &str| k == rules::MANAGED_LABEL || k == LABEL_NAME,
                        budget: None,
                    }))?;
                    meta.labels = labels.map(|(l, _)| l);
                }
                "annotations" => {
                    let annotations = map.next_value_seed(Optional(Entries {
                        keep: rules::read_by_rules,
                        budget: Some(MAX_ANNOTATION_BYTES),
                    }))?;
                    if annotations.as_ref().is_some_and(|(_, over)| *over) {
                        unfit = Some("its annotations exceed the 256 KiB the apiserver stores");
                    }
                    meta.annotations = annotations.map(|(a, _)| a);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((meta, unfit))
    }
}

/// A map of strings, keeping the entries `keep` wants while the bytes of
/// all (keys and values) stay within `budget`; true when they did not.
struct Entries<F> {
    keep: F,
    budget: Option<usize>,
}

impl<'de, F: Fn(&str) -> bool> DeserializeSeed<'de> for Entries<F> {
    type Value = (BTreeMap<String, String>, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: Fn(&str) -> bool> Visitor<'de> for Entries<F> {
    type Value = (BTreeMap<String, String>, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut out, mut used) = (BTreeMap::new(), 0usize);
        while let Some(k) = map.next_key::<Text>()? {
            let v = map.next_value::<Text>()?;
            used = used.saturating_add(k.0.len() + v.0.len());
            let within = self.budget.is_none_or(|b| used <= b);
            if within && (self.keep)(&k.0) {
                out.insert(k.0.into_owned(), v.0.into_owned());
            }
        }
        let over = self.budget.is_some_and(|b| used > b);
        if over {
            out.clear();
        }
        Ok((out, over))
    }
}
