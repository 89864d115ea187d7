//! The compact cache of opted-in Secrets, fed by a metadata-only watch
//! selected by the label (never data): per Secret its uid and
//! resourceVersion, the resourceVersion last found to need nothing, and the
//! last Warnings posted. A labelled Secret that asks for nothing is kept only
//! while it carries an unknown annotation of ours (a misspelt `generate`),
//! so that the filler can say so.
//!
//! A Secret is sent to the filler only when its resourceVersion is not the
//! one last settled, so a relist (or our own patch's watch event) costs no
//! GET; the first list after a start GETs each opted-in Secret once.

use super::rules;
use crate::cache::{Key, Name, Uid};
use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;
use std::collections::HashMap;
use std::sync::RwLock;

/// One opted-in Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub uid: Option<Uid>,
    pub resource_version: Name,
    /// The resourceVersion the filler last found needing nothing (or wrote).
    pub settled: Option<Name>,
    /// A digest of the last Warning posted about it, so a resync does not repeat it.
    pub warned: Option<u64>,
    /// The same for the Warning about unknown annotations, which comes
    /// beside a fill or another Warning.
    pub warned_unknown: Option<u64>,
    epoch: u32,
}

impl Entry {
    pub fn unsettled(&self) -> bool {
        self.settled.as_ref() != Some(&self.resource_version)
    }
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    /// Bumped at each relist; entries not seen again are dropped at its end.
    epoch: u32,
}

#[derive(Default)]
pub struct Tracked {
    inner: RwLock<Inner>,
    /// Raised at the end of the first list.
    pub listed: crate::cache::Listed,
    /// Namespaces annotation mode leaves alone (`--annotation-exclude-namespaces`):
    /// their Secrets are never kept, so never read nor filled.
    excluded: Vec<String>,
}

impl Tracked {
    /// A cache that ignores the Secrets of `excluded` namespaces.
    pub fn excluding(excluded: Vec<String>) -> Self {
        Tracked {
            excluded,
            ..Default::default()
        }
    }

    fn excluded(&self, meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
        meta.namespace
            .as_ref()
            .is_some_and(|n| self.excluded.contains(n))
    }

    /// Applies a watch event; returns the Secrets the filler should look at.
    pub fn handle(&self, ev: &Event<PartialObjectMeta<Secret>>) -> Vec<Key> {
        let mut inner = self.inner.write().expect("annotated lock");
        match ev {
            Event::Init => {
                inner.epoch = inner.epoch.wrapping_add(1);
                vec![]
            }
            Event::InitApply(s) | Event::Apply(s) if self.excluded(&s.metadata) => vec![],
            Event::InitApply(s) | Event::Apply(s) => inner.apply(&s.metadata).into_iter().collect(),
            Event::Delete(s) => {
                inner.entries.remove(&Key::of(&s.metadata));
                vec![]
            }
            Event::InitDone => {
                let epoch = inner.epoch;
                inner.entries.retain(|_, e| e.epoch == epoch);
                inner.entries.shrink_to_fit();
                self.listed.raise_if(true);
                vec![]
            }
        }
    }

    pub fn get(&self, key: &Key) -> Option<Entry> {
        self.inner
            .read()
            .expect("annotated lock")
            .entries
            .get(key)
            .cloned()
    }

    /// The filler found (or made) `resource_version` of this Secret
    /// needing nothing more (a resourceVersion is opaque: only equality counts).
    pub fn settle(&self, key: &Key, uid: Option<Uid>, resource_version: &str) {
        let mut inner = self.inner.write().expect("annotated lock");
        if let Some(e) = inner.entries.get_mut(key).filter(|e| e.uid == uid) {
            // Its watch event may come before or after: either way, a
            // run for it then finds it settled and skips the GET.
            e.settled = Some(resource_version.into());
        }
    }

    /// Records a Warning about `key`; true when it differs from the last one
    /// posted (post it), false when it repeats it. None clears it.
    pub fn warn(&self, key: &Key, digest: Option<u64>) -> bool {
        self.record(key, digest, |e| &mut e.warned)
    }

    /// [`Tracked::warn`] for the Warning about unknown annotations.
    pub fn warn_unknown(&self, key: &Key, digest: Option<u64>) -> bool {
        self.record(key, digest, |e| &mut e.warned_unknown)
    }

    fn record(
        &self,
        key: &Key,
        digest: Option<u64>,
        slot: fn(&mut Entry) -> &mut Option<u64>,
    ) -> bool {
        let mut inner = self.inner.write().expect("annotated lock");
        match inner.entries.get_mut(key).map(slot) {
            Some(warned) if *warned != digest => {
                *warned = digest;
                digest.is_some()
            }
            _ => false,
        }
    }

    /// Every opted-in Secret not settled at its current resourceVersion.
    pub fn unsettled(&self) -> Vec<Key> {
        let inner = self.inner.read().expect("annotated lock");
        inner
            .entries
            .iter()
            .filter(|(_, e)| e.unsettled())
            .map(|(k, _)| k.clone())
            .collect()
    }

    pub fn listed(&self) -> bool {
        self.listed.is_raised()
    }

    pub fn len(&self) -> usize {
        self.inner.read().expect("annotated lock").entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn apply(
        &mut self,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Option<Key> {
        let key = Key::of(meta);
        if !rules::looked_at(meta) {
            // Labelled but asking for nothing (and no typo to report): nothing to keep.
            self.entries.remove(&key);
            return None;
        }
        let uid = Uid::of(meta);
        let rv: Name = meta.resource_version.as_deref().unwrap_or_default().into();
        let epoch = self.epoch;
        let e = self.entries.entry(key.clone()).or_insert_with(|| Entry {
            uid,
            resource_version: rv.clone(),
            settled: None,
            warned: None,
            warned_unknown: None,
            epoch,
        });
        if e.uid != uid {
            // Deleted and made again under the name: another Secret.
            e.uid = uid;
            e.settled = None;
            e.warned = None;
            e.warned_unknown = None;
        }
        e.resource_version = rv;
        e.epoch = epoch;
        e.unsettled().then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::core::PartialObjectMetaExt;

    const UID: &str = "00000000-0000-0000-0000-000000000001";
    const UID2: &str = "00000000-0000-0000-0000-000000000002";

    fn meta(name: &str, uid: &str, rv: &str, asks: bool) -> PartialObjectMeta<Secret> {
        let mut annotations = std::collections::BTreeMap::new();
        if asks {
            annotations.insert(rules::GENERATE.to_string(), "a".to_string());
        }
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("n".into()),
            uid: Some(uid.into()),
            resource_version: Some(rv.into()),
            labels: Some([(rules::MANAGED_LABEL.to_string(), "true".to_string())].into()),
            annotations: Some(annotations),
            ..Default::default()
        }
        .into_response_partial()
    }

    #[test]
    fn a_settled_version_is_not_looked_at_again() {
        let t = Tracked::default();
        let k = Key::new("n", "s");
        t.handle(&Event::Init);
        assert_eq!(
            t.handle(&Event::InitApply(meta("s", UID, "5", true))),
            std::slice::from_ref(&k)
        );
        t.handle(&Event::InitDone);
        assert!(t.listed() && t.unsettled() == [k.clone()]);
        t.settle(&k, Uid::parse(UID), "5");
        assert!(t.unsettled().is_empty());
        t.settle(&k, Uid::parse(UID), "7"); // our patch's response
        // The watch event of our own patch, and a relist, trigger nothing.
        assert!(
            t.handle(&Event::Apply(meta("s", UID, "7", true)))
                .is_empty()
        );
        t.handle(&Event::Init);
        assert!(
            t.handle(&Event::InitApply(meta("s", UID, "7", true)))
                .is_empty()
        );
        t.handle(&Event::InitDone);
        // Someone else's change does.
        assert_eq!(
            t.handle(&Event::Apply(meta("s", UID, "9", true))),
            std::slice::from_ref(&k)
        );
    }

    #[test]
    fn secrets_of_excluded_namespaces_are_never_kept() {
        let t = Tracked::excluding(vec!["n".into()]);
        t.handle(&Event::Init);
        assert!(
            t.handle(&Event::InitApply(meta("s", UID, "1", true)))
                .is_empty()
        );
        assert!(
            t.handle(&Event::Apply(meta("s", UID, "2", true)))
                .is_empty()
        );
        t.handle(&Event::InitDone);
        assert!(t.is_empty() && t.listed());
    }

    #[test]
    fn secrets_that_ask_for_nothing_or_vanish_are_dropped() {
        let t = Tracked::default();
        assert!(
            t.handle(&Event::Apply(meta("plain", UID, "1", false)))
                .is_empty()
        );
        assert!(t.is_empty());
        t.handle(&Event::Apply(meta("s", UID, "1", true)));
        assert_eq!(t.len(), 1);
        // The annotation removed: gone.
        t.handle(&Event::Apply(meta("s", UID, "2", false)));
        assert!(t.is_empty());
        // Gone during a relist.
        t.handle(&Event::Apply(meta("s", UID, "3", true)));
        t.handle(&Event::Init);
        t.handle(&Event::InitDone);
        assert!(t.is_empty());
    }

    #[test]
    fn a_labelled_secret_with_a_typo_is_kept_until_it_is_fixed() {
        let t = Tracked::default();
        let k = Key::new("n", "s");
        let mut typo = meta("s", UID, "1", false);
        typo.metadata
            .annotations
            .get_or_insert_default()
            .insert("randomsecret.io/generat".into(), "a".into());
        assert_eq!(
            t.handle(&Event::Apply(typo)),
            std::slice::from_ref(&k),
            "looked at, to be told"
        );
        // The two Warnings are remembered apart.
        assert!(t.warn_unknown(&k, Some(1)));
        assert!(t.warn(&k, Some(1)));
        assert!(!t.warn_unknown(&k, Some(1)), "a resync does not repeat it");
        assert!(!t.warn(&k, None));
        assert!(!t.warn_unknown(&k, Some(1)), "kept beside a good fill");
        // Fixed (the annotation removed, nothing asked): dropped.
        t.handle(&Event::Apply(meta("s", UID, "2", false)));
        assert!(t.is_empty());
    }

    #[test]
    fn warnings_repeat_only_when_they_change_or_the_secret_is_new() {
        let t = Tracked::default();
        let k = Key::new("n", "s");
        t.handle(&Event::Apply(meta("s", UID, "1", true)));
        assert!(t.warn(&k, Some(1)));
        assert!(!t.warn(&k, Some(1)), "a resync does not repeat it");
        assert!(t.warn(&k, Some(2)));
        assert!(!t.warn(&k, None));
        assert!(t.warn(&k, Some(2)), "after a good spell, again");
        // Deleted and made again: warned again, looked at again.
        t.settle(&k, Uid::parse(UID), "1");
        assert_eq!(
            t.handle(&Event::Apply(meta("s", UID2, "1", true))),
            std::slice::from_ref(&k)
        );
        assert!(t.warn(&k, Some(2)));
        // A settle for the old incarnation does nothing.
        t.settle(&k, Uid::parse(UID), "1");
        assert_eq!(t.unsettled(), [k]);
    }
}
