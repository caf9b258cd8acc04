//! Policy results: from a marker's setter to the value it writes.
//!
//! A [`PolicyTable`] holds the latest image of every policy in scope, keyed
//! by `NAMESPACE:NAME`, wherever it came from (a `--policy` flag, an
//! ImagePolicy object, a function config, a registry). Each entry remembers
//! its source, so a conflict names both. A [`Scope`] (an automation's
//! namespace, label selectors) decides which ImagePolicies are in it; the
//! ones it leaves out are remembered too, so a marker naming one is told
//! why it is left alone.

pub(crate) mod image_policy;
pub(crate) mod image_ref;
pub(crate) mod selector;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) use self::image_ref::{ImageRef, RefError};
pub(crate) use self::selector::Selector;
use crate::diagnostic::Location;
use crate::yaml::{Document, Object};

/// A YAML document that may hold ImagePolicies, policy definitions or the
/// Secrets they name, and where it came from.
#[derive(Debug, Clone)]
pub struct PolicyDocument {
    pub document: Document,
    /// The file as the user knows it: a path as given, `stdin`, a
    /// ResourceList item's path annotation.
    pub origin: String,
    /// Whether the document's positions are lines of `origin` (not for a
    /// ResourceList item, whose text is a slice of the list).
    pub positions: bool,
    /// The directory that relative secret file paths are resolved against;
    /// `None` where there is no filesystem (a ResourceList).
    pub dir: Option<PathBuf>,
    /// Whether ImagePolicies with a status here are supplied results
    /// (policy files, ResourceList items), or only definitions are read
    /// (a tree searched for definitions).
    pub supplies: bool,
}

impl PolicyDocument {
    /// The location of `field` (a JSON pointer relative to `object`).
    #[must_use]
    pub fn location(&self, object: &Object<'_>, field: &str) -> Location {
        Location::new(
            self.origin.clone(),
            self.positions.then(|| object.position(field)).flatten(),
        )
    }
}
use crate::setter::{Field, Setter};

/// `NAMESPACE:NAME`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyKey {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for PolicyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.namespace, self.name)
    }
}

impl PolicyKey {
    /// Parse `NAMESPACE:NAME`.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let (namespace, name) = text.split_once(':')?;
        if namespace.is_empty() || name.is_empty() || name.contains(':') {
            return None;
        }
        Some(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })
    }
}

#[derive(Debug, Clone)]
struct Entry {
    latest: Option<ImageRef>,
    source: String,
    /// A marker or an Argo CD Application asked for it.
    asked: Asked,
}

/// Whether an entry was asked for: set by lookups on several threads at
/// once, with no lock (a large list has thousands of markers).
#[derive(Debug, Default)]
struct Asked(AtomicBool);

impl Asked {
    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Clone for Asked {
    fn clone(&self) -> Self {
        Self(AtomicBool::new(self.get()))
    }
}

/// Two sources give different latest images for one policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "policy {key} is given twice with different values: {first_value} by {first_source}, {second_value} by {second_source}"
)]
pub struct ConflictError {
    pub key: String,
    pub first_value: String,
    pub first_source: String,
    pub second_value: String,
    pub second_source: String,
}

/// What a setter resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Write this value.
    Value(String),
    /// Leave the field alone, for this reason (a warning).
    Skip(String),
    /// No policy has the setter's key: leave the field alone (a warning),
    /// with the nearest key there is as a hint.
    Unknown {
        message: String,
        hint: Option<String>,
    },
}

/// Which ImagePolicies a run uses: those in the namespace (an
/// automation's) that every selector matches. Policies given as values
/// (`--policy`, a functionConfig's `policies`) are always in scope.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Only policies in this namespace.
    pub namespace: Option<ScopeNamespace>,
    /// Each selector, with what it comes from (`--selector`,
    /// `ImageUpdateAutomation flux-system/apps spec.policySelector`).
    pub selectors: Vec<(String, Selector)>,
}

/// The namespace of a [`Scope`] and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeNamespace {
    pub namespace: String,
    /// `ImageUpdateAutomation flux-system/apps`.
    pub owner: String,
}

impl Scope {
    /// `None` when a policy with `key` and `labels` is in scope, else why
    /// it is not.
    #[must_use]
    pub fn excludes(&self, key: &PolicyKey, labels: &BTreeMap<String, String>) -> Option<String> {
        if let Some(ns) = &self.namespace
            && ns.namespace != key.namespace
        {
            return Some(format!(
                "it is not in the namespace {} of {}",
                ns.namespace, ns.owner
            ));
        }
        self.selectors
            .iter()
            .find(|(_, s)| !s.matches(labels))
            .map(|(what, _)| format!("its labels do not match {what}"))
    }
}

/// The latest image of every policy in scope.
#[derive(Debug, Clone, Default)]
pub struct PolicyTable {
    entries: BTreeMap<PolicyKey, Entry>,
    /// Policies that were given but are out of scope, and why.
    excluded: BTreeMap<PolicyKey, String>,
    /// The run fetches: its policies are defined (ImageRepository and
    /// ImagePolicy pairs, KubeSphere updaters) as well as supplied.
    defining: bool,
    /// The keys asked for that no entry has (markers naming no policy):
    /// the hints of [`PolicyTable::unasked`].
    unknown_asked: AskedKeys,
    /// The work left for "did you mean" hints.
    hints: crate::diagnostic::HintBudget,
    /// Every entry's key as text, made once for the hints of markers naming
    /// no policy (a tree may have thousands of them).
    key_texts: std::sync::OnceLock<Vec<String>>,
}

/// Keys asked for on several threads (rare: each is also a warning).
#[derive(Debug, Default)]
struct AskedKeys(Mutex<BTreeSet<PolicyKey>>);

impl AskedKeys {
    fn add(&self, key: &PolicyKey) {
        if let Ok(mut keys) = self.0.lock()
            && !keys.contains(key)
        {
            keys.insert(key.clone());
        }
    }

    fn all(&self) -> BTreeSet<PolicyKey> {
        self.0.lock().map(|k| k.clone()).unwrap_or_default()
    }
}

impl Clone for AskedKeys {
    fn clone(&self) -> Self {
        Self(Mutex::new(self.all()))
    }
}

impl PolicyTable {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the run's policies are defined and fetched (`--fetch`), as
    /// well as supplied: the words of a marker naming no policy.
    pub fn set_defining(&mut self, defining: bool) {
        self.defining = defining;
    }

    /// Add a policy; `latest` is `None` for a policy without a latest image
    /// (markers naming it are then reported, not applied).
    ///
    /// # Errors
    /// When the same policy was added before with a different value.
    pub fn insert(
        &mut self,
        key: PolicyKey,
        latest: Option<ImageRef>,
        source: &str,
    ) -> Result<(), ConflictError> {
        self.key_texts = std::sync::OnceLock::new();
        // One search of the map for both the check and the insertion (a run may supply
        // thousands of values).
        match self.entries.entry(key) {
            std::collections::btree_map::Entry::Occupied(old) => {
                let old_entry = old.get();
                if old_entry.latest == latest {
                    return Ok(());
                }
                let show = |l: &Option<ImageRef>| {
                    l.as_ref()
                        .map_or_else(|| "no latest image".to_owned(), ImageRef::image)
                };
                Err(ConflictError {
                    key: old.key().to_string(),
                    first_value: show(&old_entry.latest),
                    first_source: old_entry.source.clone(),
                    second_value: show(&latest),
                    second_source: source.to_owned(),
                })
            }
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(Entry {
                    latest,
                    source: source.to_owned(),
                    asked: Asked::default(),
                });
                Ok(())
            }
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remember that the policy `key` was given but left out of scope,
    /// because `why`.
    pub fn exclude(&mut self, key: PolicyKey, why: &str) {
        self.excluded.entry(key).or_insert_with(|| why.to_owned());
    }

    /// Policies with a latest image, in key order.
    pub fn observed(&self) -> impl Iterator<Item = (&PolicyKey, &ImageRef)> {
        self.entries
            .iter()
            .filter_map(|(k, e)| e.latest.as_ref().map(|l| (k, l)))
    }

    /// The latest image of the policy `key`, when it has one.
    #[must_use]
    pub fn latest(&self, key: &PolicyKey) -> Option<&ImageRef> {
        let Some(entry) = self.entries.get(key) else {
            self.unknown_asked.add(key);
            return None;
        };
        entry.asked.set();
        entry.latest.as_ref()
    }

    /// Of `keys` (a run's policy values, once each), those no marker and no
    /// Argo CD Application asked for, each with the nearest key that was
    /// asked for (a hint at a misspelling).
    #[must_use]
    pub fn unasked<'k>(&self, keys: &[&'k PolicyKey]) -> Vec<(&'k PolicyKey, Option<String>)> {
        let mut asked: BTreeSet<String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.asked.get())
            .map(|(k, _)| k.to_string())
            .collect();
        asked.extend(self.unknown_asked.all().iter().map(ToString::to_string));
        let mut seen = BTreeSet::new();
        keys.iter()
            .filter(|k| seen.insert(**k))
            .filter(|k| !self.entries.get(**k).is_some_and(|e| e.asked.get()))
            .map(|k| {
                let near = crate::diagnostic::nearest(
                    &k.to_string(),
                    asked.iter().map(String::as_str),
                    &self.hints,
                )
                .map(str::to_owned);
                (*k, near)
            })
            .collect()
    }

    /// Policies supplied without a latest image, in key order.
    pub fn without_latest(&self) -> impl Iterator<Item = (&PolicyKey, &str)> {
        self.entries
            .iter()
            .filter(|(_, e)| e.latest.is_none())
            .map(|(k, e)| (k, e.source.as_str()))
    }

    /// The value a marker's setter writes, or why it writes nothing.
    #[must_use]
    pub fn lookup(&self, setter_text: &str) -> Resolution {
        if setter_text.trim() != setter_text {
            return Resolution::Skip(format!(
                "marker {setter_text:?} has spaces around the policy name; markers are used verbatim, so it names no policy"
            ));
        }
        let Some(setter) = Setter::parse(setter_text) else {
            return Resolution::Skip(format!(
                "marker {setter_text:?} is not NAMESPACE:NAME, NAMESPACE:NAME:tag, NAMESPACE:NAME:name or NAMESPACE:NAME:digest"
            ));
        };
        let key = PolicyKey {
            namespace: setter.namespace.to_owned(),
            name: setter.name.to_owned(),
        };
        let Some(entry) = self.entries.get(&key) else {
            self.unknown_asked.add(&key);
            if let Some(why) = self.excluded.get(&key) {
                return Resolution::Skip(format!(
                    "policy {key} was given but is left out ({why}), so this marker is left alone"
                ));
            }
            return self.unknown(&key);
        };
        entry.asked.set();
        let Some(latest) = &entry.latest else {
            return Resolution::Skip(format!(
                "policy {key} has no latest image yet, so {setter} is left alone"
            ));
        };
        match setter.field {
            Field::Image => Resolution::Value(latest.image()),
            Field::Tag => Resolution::Value(latest.tag.clone()),
            Field::Name => Resolution::Value(latest.name.clone()),
            Field::Digest if latest.digest.is_empty() => Resolution::Skip(format!(
                "policy {key} has no digest, so {setter} is left alone (enable digest reflection on the policy)"
            )),
            Field::Digest => Resolution::Value(latest.digest.clone()),
        }
    }

    /// A marker naming `key`, which no policy has: a policy of that name
    /// in another namespace is named in the message, else the nearest key
    /// is the hint.
    fn unknown(&self, key: &PolicyKey) -> Resolution {
        let given = if self.defining {
            "was defined or supplied"
        } else {
            "was supplied"
        };
        let elsewhere: Vec<String> = self
            .entries
            .keys()
            .filter(|k| k.name == key.name && k.namespace != key.namespace)
            .map(ToString::to_string)
            .collect();
        if !elsewhere.is_empty() {
            return Resolution::Unknown {
                message: format!(
                    "no policy {key} {given} (a policy of that name exists as {}), so this marker is left alone",
                    elsewhere.join(", ")
                ),
                hint: None,
            };
        }
        let keys = self
            .key_texts
            .get_or_init(|| self.entries.keys().map(ToString::to_string).collect());
        let hint = crate::diagnostic::nearest(
            &key.to_string(),
            keys.iter().map(String::as_str),
            &self.hints,
        )
        .map(|near| format!("did you mean {near}?"));
        Resolution::Unknown {
            message: format!("no policy {key} {given}, so this marker is left alone"),
            hint,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> PolicyKey {
        PolicyKey::parse(s).unwrap()
    }

    #[test]
    fn resolves_every_field() {
        let mut t = PolicyTable::new();
        let digest = format!("sha256:{}", "a".repeat(64));
        t.insert(
            key("ns:p"),
            Some(ImageRef::parse(&format!("img:v1@{digest}")).unwrap()),
            "a",
        )
        .unwrap();
        t.insert(key("ns:q"), Some(ImageRef::parse("img:v2").unwrap()), "a")
            .unwrap();
        t.insert(key("ns:none"), None, "a").unwrap();
        assert_eq!(
            t.lookup("ns:p"),
            Resolution::Value(format!("img:v1@{digest}"))
        );
        assert_eq!(t.lookup("ns:p:tag"), Resolution::Value("v1".into()));
        assert_eq!(t.lookup("ns:p:name"), Resolution::Value("img".into()));
        assert_eq!(t.lookup("ns:p:digest"), Resolution::Value(digest));
        assert!(matches!(t.lookup("ns:q:digest"), Resolution::Skip(m) if m.contains("no digest")));
        assert!(
            matches!(t.lookup("ns:none"), Resolution::Skip(m) if m.contains("no latest image"))
        );
        assert!(
            matches!(t.lookup("other:p"), Resolution::Unknown { message, hint: None } if message.contains("exists as ns:p"))
        );
        assert_eq!(
            t.lookup("ns:qq"),
            Resolution::Unknown {
                message: "no policy ns:qq was supplied, so this marker is left alone".into(),
                hint: Some("did you mean ns:q?".into()),
            }
        );
        assert_eq!(
            t.lookup("team:database"),
            Resolution::Unknown {
                message: "no policy team:database was supplied, so this marker is left alone"
                    .into(),
                hint: None,
            }
        );
        t.set_defining(true);
        assert!(
            matches!(t.lookup("ns:qq"), Resolution::Unknown { message, .. } if message == "no policy ns:qq was defined or supplied, so this marker is left alone")
        );
        assert!(
            matches!(t.lookup("ns:p:registry"), Resolution::Skip(m) if m.contains("is not NAMESPACE:NAME"))
        );
    }

    #[test]
    fn conflicts_name_both_sources() {
        let mut t = PolicyTable::new();
        t.insert(
            key("ns:p"),
            Some(ImageRef::parse("img:v1").unwrap()),
            "--policy",
        )
        .unwrap();
        t.insert(
            key("ns:p"),
            Some(ImageRef::parse("img:v1").unwrap()),
            "file",
        )
        .unwrap();
        let err = t
            .insert(
                key("ns:p"),
                Some(ImageRef::parse("img:v2").unwrap()),
                "policies.yaml",
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("img:v1 by --policy, img:v2 by policies.yaml"),
            "{err}"
        );
    }
}
