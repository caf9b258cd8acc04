//! From a marker's setter to the value it writes.
//!
//! A [`PolicyTable`] holds the latest image of every policy in scope, keyed
//! by `NAMESPACE:NAME`, wherever it came from (a `--policy` flag, an
//! ImagePolicy object, a function config, a registry). Each entry remembers
//! its source, so a conflict names both.

pub mod image_policy;
pub mod image_ref;
pub mod selector;

use std::collections::BTreeMap;

pub use self::image_ref::{LatestRef, RefError};
use crate::updater::scan::marker::{Field, Setter};

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
    latest: Option<LatestRef>,
    source: String,
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
}

/// The latest image of every policy in scope.
#[derive(Debug, Clone, Default)]
pub struct PolicyTable {
    entries: BTreeMap<PolicyKey, Entry>,
}

impl PolicyTable {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a policy; `latest` is `None` for a policy without a latest image
    /// (markers naming it are then reported, not applied).
    ///
    /// # Errors
    /// When the same policy was added before with a different value.
    pub fn insert(
        &mut self,
        key: PolicyKey,
        latest: Option<LatestRef>,
        source: &str,
    ) -> Result<(), ConflictError> {
        if let Some(old) = self.entries.get(&key) {
            if old.latest == latest {
                return Ok(());
            }
            let show = |l: &Option<LatestRef>| {
                l.as_ref()
                    .map_or_else(|| "no latest image".to_owned(), LatestRef::image)
            };
            return Err(ConflictError {
                key: key.to_string(),
                first_value: show(&old.latest),
                first_source: old.source.clone(),
                second_value: show(&latest),
                second_source: source.to_owned(),
            });
        }
        self.entries.insert(
            key,
            Entry {
                latest,
                source: source.to_owned(),
            },
        );
        Ok(())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Policies with a latest image, in key order.
    pub fn observed(&self) -> impl Iterator<Item = (&PolicyKey, &LatestRef)> {
        self.entries
            .iter()
            .filter_map(|(k, e)| e.latest.as_ref().map(|l| (k, l)))
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
    pub fn resolve(&self, setter_text: &str) -> Resolution {
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
            return Resolution::Skip(self.unknown(&key));
        };
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

    fn unknown(&self, key: &PolicyKey) -> String {
        let elsewhere: Vec<String> = self
            .entries
            .keys()
            .filter(|k| k.name == key.name && k.namespace != key.namespace)
            .map(ToString::to_string)
            .collect();
        if elsewhere.is_empty() {
            format!("no policy {key} was supplied, so this marker is left alone")
        } else {
            format!(
                "no policy {key} was supplied (a policy of that name exists as {}), so this marker is left alone",
                elsewhere.join(", ")
            )
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
            Some(LatestRef::parse(&format!("img:v1@{digest}")).unwrap()),
            "a",
        )
        .unwrap();
        t.insert(key("ns:q"), Some(LatestRef::parse("img:v2").unwrap()), "a")
            .unwrap();
        t.insert(key("ns:none"), None, "a").unwrap();
        assert_eq!(
            t.resolve("ns:p"),
            Resolution::Value(format!("img:v1@{digest}"))
        );
        assert_eq!(t.resolve("ns:p:tag"), Resolution::Value("v1".into()));
        assert_eq!(t.resolve("ns:p:name"), Resolution::Value("img".into()));
        assert_eq!(t.resolve("ns:p:digest"), Resolution::Value(digest));
        assert!(matches!(t.resolve("ns:q:digest"), Resolution::Skip(m) if m.contains("no digest")));
        assert!(
            matches!(t.resolve("ns:none"), Resolution::Skip(m) if m.contains("no latest image"))
        );
        assert!(
            matches!(t.resolve("other:p"), Resolution::Skip(m) if m.contains("exists as ns:p"))
        );
        assert!(
            matches!(t.resolve("ns:p:registry"), Resolution::Skip(m) if m.contains("is not NAMESPACE:NAME"))
        );
    }

    #[test]
    fn conflicts_name_both_sources() {
        let mut t = PolicyTable::new();
        t.insert(
            key("ns:p"),
            Some(LatestRef::parse("img:v1").unwrap()),
            "--policy",
        )
        .unwrap();
        t.insert(
            key("ns:p"),
            Some(LatestRef::parse("img:v1").unwrap()),
            "file",
        )
        .unwrap();
        let err = t
            .insert(
                key("ns:p"),
                Some(LatestRef::parse("img:v2").unwrap()),
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
