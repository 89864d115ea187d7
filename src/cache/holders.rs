//! The two reference indexes and their entries: who holds which version
//! name (retention, [`Holder`]), and which workloads track which
//! RandomSecret (tracking mode, [`Workload`]). A new holder or workload kind
//! is added here; `references` and `tracking` say what each object holds.

use super::index::{MultiIndex, Stream};
use super::{Key, Name, Namespace, Uid};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::hash::{Hash, Hasher};
use std::sync::RwLock;

/// The holder streams that must have listed before anything is released.
pub const HOLDER_STREAMS: [Stream; 3] = [
    Stream::ReplicaSets,
    Stream::ControllerRevisions,
    Stream::Pods,
];

#[derive(Default)]
pub struct Holders(pub RwLock<MultiIndex<Holder, Key>>);

impl Holders {
    /// Who references Secret `secret`.
    pub fn of(&self, secret: &Key) -> Vec<Holder> {
        self.0
            .read()
            .expect("holders lock")
            .get(secret)
            .cloned()
            .collect()
    }

    /// Whether every holder stream (the custom kinds' too) has listed once.
    pub fn listed(&self) -> bool {
        let custom = crate::references::custom::indexes().map(Stream::Custom);
        let streams: Vec<Stream> = HOLDER_STREAMS.into_iter().chain(custom).collect();
        self.0.read().expect("holders lock").listed(&streams)
    }

    pub fn len(&self) -> usize {
        self.0.read().expect("holders lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Default)]
pub struct Tracking(pub RwLock<MultiIndex<Workload, Key>>);

impl Tracking {
    /// The workloads that track RandomSecret `rs`.
    pub fn of(&self, rs: &Key) -> Vec<Workload> {
        self.0
            .read()
            .expect("tracking lock")
            .get(rs)
            .cloned()
            .collect()
    }
}

/// The kinds that hold references to Secret versions and own them while they do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HolderKind {
    ReplicaSet,
    ControllerRevision,
    Pod,
    /// A kind the user listed (`--reference`): its index among
    /// [`crate::references::custom::registered`].
    Custom(u16),
}

impl HolderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HolderKind::ReplicaSet => "ReplicaSet",
            HolderKind::ControllerRevision => "ControllerRevision",
            HolderKind::Pod => "Pod",
            HolderKind::Custom(i) => custom(i).map_or("Unknown", |k| k.kind.as_str()),
        }
    }
    pub fn api_version(self) -> &'static str {
        match self {
            HolderKind::ReplicaSet | HolderKind::ControllerRevision => "apps/v1",
            HolderKind::Pod => "v1",
            HolderKind::Custom(i) => custom(i).map_or("", |k| k.api_version.as_str()),
        }
    }
    /// The holder kind of an owner reference's `kind` and `apiVersion`.
    pub fn of(kind: &str, api_version: &str) -> Option<Self> {
        let built_in = [
            HolderKind::ReplicaSet,
            HolderKind::ControllerRevision,
            HolderKind::Pod,
        ];
        let custom = crate::references::custom::indexes().map(HolderKind::Custom);
        built_in
            .into_iter()
            .chain(custom)
            .find(|k| k.as_str() == kind && k.api_version() == api_version)
    }
}

fn custom(i: u16) -> Option<&'static crate::references::custom::CustomKind> {
    crate::references::custom::registered().get(usize::from(i))
}

/// Equality, hash and order of `$t` by its `identity()` alone (what the
/// index keys on), not by the payload beside it.
macro_rules! identity_is {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.identity() == other.identity()
            }
        }

        impl Eq for $t {}

        impl Hash for $t {
            fn hash<H: Hasher>(&self, state: &mut H) {
                self.identity().hash(state)
            }
        }

        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $t {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.identity().cmp(&other.identity())
            }
        }
    };
}

/// One object that references Secrets (its uid tells incarnations apart).
/// Its identity (equality, hash, order) is kind, namespace, name and uid;
/// `covered` is what the index calls payload.
#[derive(Clone, Debug)]
pub struct Holder {
    pub kind: HolderKind,
    pub namespace: Namespace,
    pub name: Name,
    pub uid: Uid,
    /// A pod of a ReplicaSet, StatefulSet or DaemonSet, whose history
    /// references the same names. It keeps its versions while it exists (a
    /// Deployment prunes a ReplicaSet while its pods terminate), but owns
    /// only superseded ones (`reconciler::retention`): the current version's
    /// owners do not follow its workload's scaling.
    pub covered: bool,
}

impl Holder {
    fn identity(&self) -> (HolderKind, &Namespace, &str, Uid) {
        (self.kind, &self.namespace, &self.name, self.uid)
    }
}

identity_is!(Holder);

impl super::index::Payload for Holder {
    fn same_payload(&self, other: &Self) -> bool {
        self.covered == other.covered
    }
}

impl Holder {
    /// `Kind/name`, as listed in `status.versions[].referencedBy`.
    pub fn display(&self) -> String {
        format!("{}/{}", self.kind.as_str(), self.name)
    }

    /// A non-controller owner reference: the version lives while this holder does.
    pub fn owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.kind.api_version().into(),
            kind: self.kind.as_str().into(),
            name: self.name.to_string(),
            uid: self.uid.to_string(),
            controller: None,
            block_owner_deletion: None,
        }
    }
}

/// The workload kinds tracking mode rewrites: each keeps its pod template
/// at `spec.template`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
    /// Argo Rollouts' (argoproj.io/v1alpha1), watched once its CRD is
    /// installed; its ReplicaSets hold versions as a Deployment's do.
    Rollout,
}

impl WorkloadKind {
    pub fn api_resource(self) -> kube::core::ApiResource {
        match self {
            WorkloadKind::Deployment => kube::core::ApiResource::erase::<Deployment>(&()),
            WorkloadKind::StatefulSet => kube::core::ApiResource::erase::<StatefulSet>(&()),
            WorkloadKind::DaemonSet => kube::core::ApiResource::erase::<DaemonSet>(&()),
            WorkloadKind::Rollout => {
                kube::core::ApiResource::erase::<crate::cache::slim::RolloutObject>(&())
            }
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Rollout => "Rollout",
        }
    }
    pub fn api_version(self) -> &'static str {
        match self {
            WorkloadKind::Rollout => "argoproj.io/v1alpha1",
            _ => "apps/v1",
        }
    }
}

/// A tracking workload. Its identity (equality, hash, order) is kind,
/// namespace and name; `seen` is what the index calls payload.
#[derive(Clone, Debug)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub namespace: Namespace,
    pub name: Name,
    /// Its generation and record labels, hashed: a new template (a
    /// rollback, a sync) or a record removed by hand reconciles the
    /// RandomSecrets it tracks, not only a change of what it tracks.
    pub seen: u64,
}

impl Workload {
    fn identity(&self) -> (WorkloadKind, &Namespace, &str) {
        (self.kind, &self.namespace, &self.name)
    }
}

identity_is!(Workload);

impl super::index::Payload for Workload {
    fn same_payload(&self, other: &Self) -> bool {
        self.seen == other.seen
    }
}
