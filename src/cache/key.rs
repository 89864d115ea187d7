//! The key of a namespaced object, and uids as numbers.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

/// A name held in a cache: up to 24 bytes inline (most object names fit),
/// so most names cost no allocation of their own.
pub type Name = compact_str::CompactString;

/// A namespace name, interned: ten thousand objects in one namespace share one
/// allocation of its name, behind a pointer of 8 bytes (a `Key` is 32).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace(Arc<Box<str>>);

/// The interner, and its size when it was last pruned.
static NAMESPACES: LazyLock<Mutex<(HashSet<Interned>, usize)>> = LazyLock::new(Default::default);

/// An interned name, looked up by `&str` (its hash is the string's).
#[derive(PartialEq, Eq, Hash)]
struct Interned(Arc<Box<str>>);

impl std::borrow::Borrow<str> for Interned {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Namespace {
    pub fn new(name: &str) -> Self {
        let mut guard = NAMESPACES.lock().expect("namespace interner");
        let (known, pruned_at) = &mut *guard;
        if let Some(n) = known.get(name) {
            return Namespace(n.0.clone());
        }
        // Namespaces come and go: forget those nothing refers to any more,
        // each time the set has doubled (amortized; bounded by what is live).
        if known.len() >= 2 * (*pruned_at).max(64) {
            known.retain(|n| Arc::strong_count(&n.0) > 1);
            *pruned_at = known.len();
        }
        let n: Arc<Box<str>> = Arc::new(name.into());
        known.insert(Interned(n.clone()));
        Namespace(n)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A namespaced object's identity within its kind: namespace and name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub namespace: Namespace,
    pub name: Name,
}

impl Key {
    pub fn new(namespace: &str, name: &str) -> Self {
        Key {
            namespace: Namespace::new(namespace),
            name: name.into(),
        }
    }

    /// The key of an object's metadata (namespace "" for a cluster-scoped one).
    pub fn of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Self {
        Key::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    /// Another object's key in the same namespace.
    pub fn sibling(&self, name: &str) -> Self {
        Key {
            namespace: self.namespace.clone(),
            name: name.into(),
        }
    }

    pub fn ns(&self) -> &str {
        self.namespace.as_str()
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// An object's uid as a number (16 bytes instead of a 36-character string).
/// The apiserver's uids are UUIDs; anything else is kept as its hash, which
/// is enough to tell incarnations apart but cannot be written back.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uid(u128);

impl Uid {
    pub fn parse(text: &str) -> Option<Self> {
        let hex: String = text.chars().filter(|c| *c != '-').collect();
        if text.len() != 36 || hex.len() != 32 {
            return None;
        }
        u128::from_str_radix(&hex, 16).ok().map(Uid)
    }

    /// The uid of `meta`, if it has a well-formed one.
    pub fn of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<Self> {
        Uid::parse(meta.uid.as_deref()?)
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = format!("{:032x}", self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn namespaces_are_shared_and_forgotten_when_unused() {
        use super::*;
        let a = Namespace::new("interned-a");
        let b = Namespace::new("interned-a");
        assert!(Arc::ptr_eq(&a.0, &b.0) && a.as_str() == "interned-a");
        assert_eq!(std::mem::size_of::<Key>(), 32);
        drop((a, b));
        // Enough new namespaces to prune: the unused one is gone, a live one stays.
        let live = Namespace::new("interned-live");
        let many: Vec<Namespace> = (0..300)
            .map(|i| Namespace::new(&format!("ns-{i}")))
            .collect();
        let known = NAMESPACES.lock().unwrap();
        assert!(!known.0.contains("interned-a"));
        assert!(known.0.contains(live.as_str()));
        drop(many);
    }

    use super::*;

    #[test]
    fn uids_round_trip_and_junk_is_refused() {
        let text = "6f1c0a2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
        assert_eq!(Uid::parse(text).unwrap().to_string(), text);
        assert_eq!(
            Uid::parse("6F1C0A2E-3B4D-4E5F-8A9B-0C1D2E3F4A5B")
                .unwrap()
                .to_string(),
            text
        );
        assert!(Uid::parse("not-a-uid").is_none());
        assert!(Uid::parse("6f1c0a2e3b4d4e5f8a9b0c1d2e3f4a5b").is_none());
    }

    #[test]
    fn namespaces_are_interned() {
        let (a, b) = (Key::new("shop", "a"), Key::new("shop", "b"));
        assert!(Arc::ptr_eq(&a.namespace.0, &b.namespace.0));
        assert_eq!(a.sibling("b"), b);
        assert_eq!(a.to_string(), "shop/a");
    }
}
