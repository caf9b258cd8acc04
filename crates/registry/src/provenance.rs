//! Where an image was built from: its source repository, revision and
//! version, as the OCI annotation keys (`org.opencontainers.image.source`,
//! `.revision`, `.version`) or the older Label Schema keys
//! (`org.label-schema.vcs-url`, `.vcs-ref`, `.version`) record them.
//!
//! Each fact is read from the first place that has it, in this order (the
//! most specific first): the chosen index descriptor's annotations, the
//! platform manifest's annotations, the index's annotations, then the image
//! config's labels; a Label Schema key is used only when no place has the
//! OCI key. The config blob is fetched only when a fact is still missing
//! after the manifests, so an image annotated by its builder costs one or
//! two requests, and none of them is made again when the run already made it
//! (with [`ClientSettings::remember_documents`](crate::ClientSettings::remember_documents)).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::manifest::{ManifestKind, select_child};
use crate::{Error, MAX_CONFIG, Platform, RegistryClient, Repository, Result, reference};

/// `org.opencontainers.image.source`.
pub const SOURCE: &str = "org.opencontainers.image.source";
/// `org.opencontainers.image.revision`.
pub const REVISION: &str = "org.opencontainers.image.revision";
/// `org.opencontainers.image.version`.
pub const VERSION: &str = "org.opencontainers.image.version";
/// Label Schema's source URL key.
pub const LS_VCS_URL: &str = "org.label-schema.vcs-url";
/// Label Schema's revision key.
pub const LS_VCS_REF: &str = "org.label-schema.vcs-ref";
/// Label Schema's version key.
pub const LS_VERSION: &str = "org.label-schema.version";

/// The longest value kept (longer ones are cut); what a registry serves is
/// untrusted and ends up in request bodies.
pub const MAX_VALUE: usize = 1024;

/// Where a fact was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// The chosen entry of an image index (its descriptor's annotations).
    Descriptor,
    /// The platform image manifest's annotations.
    Manifest,
    /// The image index's own annotations.
    Index,
    /// The image config's labels.
    Config,
}

impl Tier {
    /// The name reports use: `descriptor`, `manifest`, `index`, `config`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Descriptor => "descriptor",
            Tier::Manifest => "manifest",
            Tier::Index => "index",
            Tier::Config => "config",
        }
    }
}

/// One fact and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub value: String,
    pub tier: Tier,
    /// The key it was read under.
    pub key: &'static str,
}

/// What an image says of where it was built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageFacts {
    /// The digest of the manifest the reference named (an index's, for a
    /// multi-platform image).
    pub digest: String,
    pub source: Option<Fact>,
    pub revision: Option<Fact>,
    pub version: Option<Fact>,
    /// Requests sent for these facts (those answered from documents the run
    /// had already fetched not counted).
    pub requests: usize,
}

/// The annotations or labels of one place, by key.
pub type Keys = BTreeMap<String, String>;

/// The three facts from `places`, most specific first: for each, the first
/// place with its OCI key, else the first with its Label Schema key. Empty
/// values count as missing; values are cut to [`MAX_VALUE`] bytes (at a
/// character boundary) and trimmed.
#[must_use]
pub fn pick(places: &[(Tier, &Keys)]) -> [Option<Fact>; 3] {
    let find = |oci: &'static str, label_schema: &'static str| {
        [oci, label_schema].into_iter().find_map(|key| {
            places.iter().find_map(|(tier, keys)| {
                let v = keys.get(key).map(|v| cut(v.trim()))?;
                if v.is_empty() {
                    None
                } else {
                    Some(Fact {
                        value: v,
                        tier: *tier,
                        key,
                    })
                }
            })
        })
    };
    [
        find(SOURCE, LS_VCS_URL),
        find(REVISION, LS_VCS_REF),
        find(VERSION, LS_VERSION),
    ]
}

/// Whether `places` settle all three facts by their OCI keys, so that a
/// less specific place cannot change them and need not be read. A Label
/// Schema key does not settle a fact: the OCI key may still come later.
fn settled(places: &[(Tier, &Keys)]) -> bool {
    [SOURCE, REVISION, VERSION].iter().all(|key| {
        places
            .iter()
            .any(|(_, keys)| keys.get(*key).is_some_and(|v| !v.trim().is_empty()))
    })
}

fn cut(v: &str) -> String {
    if v.len() <= MAX_VALUE {
        return v.to_owned();
    }
    let mut end = MAX_VALUE;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    v[..end].to_owned()
}

/// The string values of an `annotations` or `Labels` object; a value of
/// another type is left out (a malformed key never fails the lookup).
#[derive(Debug, Default, Deserialize)]
#[serde(transparent)]
struct Strings(Option<BTreeMap<String, serde_json::Value>>);

impl Strings {
    fn keys(self) -> Keys {
        self.0
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| match v {
                serde_json::Value::String(s) => Some((k, s)),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Deserialize)]
struct AnnotatedDescriptor {
    digest: String,
    #[serde(default)]
    annotations: Strings,
}

#[derive(Debug, Deserialize)]
struct AnnotatedDoc {
    #[serde(default)]
    annotations: Strings,
    #[serde(default)]
    manifests: Option<Vec<AnnotatedDescriptor>>,
    #[serde(default)]
    config: Option<AnnotatedDescriptor>,
}

#[derive(Debug, Default, Deserialize)]
struct ConfigLabels {
    #[serde(default)]
    config: Option<ConfigSection>,
}

#[derive(Debug, Default, Deserialize)]
struct ConfigSection {
    #[serde(default, rename = "Labels")]
    labels: Strings,
}

impl RegistryClient {
    /// What the image `reference` (a tag or a digest) of `repo` says of its
    /// source, revision and version; for an index, the image for `platform`
    /// (without one, as [`RegistryClient::created`] chooses). At most three
    /// requests: the manifest, the platform manifest of an index, the config
    /// when still needed.
    ///
    /// # Errors
    /// A manifest that cannot be fetched (a deleted digest: [`Error::is_not_found`]) or read.
    /// A config that cannot be fetched or read is not an error: its facts stay missing.
    pub fn provenance(
        &self,
        repo: &Repository,
        reference: &str,
        platform: Option<&Platform>,
    ) -> Result<ImageFacts> {
        self.boundary(repo, false, || {
            self.provenance_inner(repo, reference, platform)
        })
    }

    fn provenance_inner(
        &self,
        repo: &Repository,
        reference: &str,
        platform: Option<&Platform>,
    ) -> Result<ImageFacts> {
        let mut requests = 0;
        let mut fetch = |r: &str| {
            if !self.remembered(repo, r) {
                requests += 1;
            }
            self.manifest_inner(repo, r)
        };
        let top = fetch(reference)?;
        let ctx = crate::context(repo);
        let parse = |m: &crate::Manifest| {
            serde_json::from_slice::<AnnotatedDoc>(&m.bytes).map_err(|e| Error::InvalidResponse {
                context: Box::new(ctx.clone()),
                url: m.digest.clone(),
                message: format!("malformed manifest JSON: {e}"),
            })
        };
        let top_doc = parse(&top)?;
        let mut owned: Vec<(Tier, Keys)> = Vec::new();
        let image_doc = match top.kind {
            ManifestKind::Image => {
                let mut doc = top_doc;
                owned.push((Tier::Manifest, std::mem::take(&mut doc.annotations).keys()));
                Some(doc)
            }
            ManifestKind::Index => {
                let plain = crate::parse_doc(&ctx, &top, reference)?;
                let children = plain.manifests.unwrap_or_default();
                let chosen = select_child(&children, platform).map(|d| d.digest.clone());
                let mut descriptors = top_doc.manifests.unwrap_or_default();
                let index_keys = top_doc.annotations.keys();
                let mut image = None;
                if let Some(digest) = chosen {
                    let keys = descriptors
                        .iter_mut()
                        .find(|d| d.digest == digest)
                        .map(|d| std::mem::take(&mut d.annotations).keys())
                        .unwrap_or_default();
                    owned.push((Tier::Descriptor, keys));
                    let so_far: Vec<(Tier, &Keys)> = owned.iter().map(|(t, k)| (*t, k)).collect();
                    if !settled(&so_far) && reference::valid_digest(&digest) {
                        let m = fetch(&digest)?;
                        if m.kind == ManifestKind::Image {
                            let mut doc = parse(&m)?;
                            owned.push((
                                Tier::Manifest,
                                std::mem::take(&mut doc.annotations).keys(),
                            ));
                            image = Some(doc);
                        }
                    }
                }
                owned.push((Tier::Index, index_keys));
                image
            }
        };
        let so_far: Vec<(Tier, &Keys)> = owned.iter().map(|(t, k)| (*t, k)).collect();
        if !settled(&so_far)
            && let Some(config) = image_doc.and_then(|d| d.config)
        {
            if !self.remembered(repo, &config.digest) {
                requests += 1;
            }
            // A config that cannot be read leaves its facts missing.
            if let Ok(bytes) = self.blob_inner(repo, &config.digest, MAX_CONFIG) {
                let labels = serde_json::from_slice::<ConfigLabels>(&bytes)
                    .unwrap_or_default()
                    .config
                    .unwrap_or_default()
                    .labels
                    .keys();
                owned.push((Tier::Config, labels));
            }
        }
        let places: Vec<(Tier, &Keys)> = owned.iter().map(|(t, k)| (*t, k)).collect();
        let [source, revision, version] = pick(&places);
        Ok(ImageFacts {
            digest: top.digest,
            source,
            revision,
            version,
            requests,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> Keys {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn most_specific_place_wins_and_label_schema_is_a_fallback() {
        let descriptor = keys(&[(REVISION, "d")]);
        let manifest = keys(&[(REVISION, "m"), (VERSION, " ")]);
        let index = keys(&[(SOURCE, "https://github.com/acme/web"), (VERSION, "1.0")]);
        let config = keys(&[
            (SOURCE, "https://github.com/other/x"),
            (LS_VCS_URL, "https://github.com/ls/x"),
            (LS_VERSION, "0.9"),
        ]);
        let [s, r, v] = pick(&[
            (Tier::Descriptor, &descriptor),
            (Tier::Manifest, &manifest),
            (Tier::Index, &index),
            (Tier::Config, &config),
        ]);
        let s = s.unwrap();
        assert_eq!(
            (s.value.as_str(), s.tier),
            ("https://github.com/acme/web", Tier::Index)
        );
        let r = r.unwrap();
        assert_eq!((r.value.as_str(), r.tier), ("d", Tier::Descriptor));
        let v = v.unwrap();
        assert_eq!(
            (v.value.as_str(), v.tier, v.key),
            ("1.0", Tier::Index, VERSION)
        );
        let only_ls = keys(&[(LS_VCS_REF, "abc"), (LS_VCS_URL, "git@github.com:a/b.git")]);
        let [s, r, v] = pick(&[(Tier::Config, &only_ls)]);
        assert_eq!(s.unwrap().key, LS_VCS_URL);
        assert_eq!(r.unwrap().value, "abc");
        assert!(v.is_none());
    }

    #[test]
    fn long_values_are_cut_at_a_character() {
        let long = "é".repeat(MAX_VALUE);
        let k = keys(&[(SOURCE, &long)]);
        let [s, _, _] = pick(&[(Tier::Config, &k)]);
        let s = s.unwrap().value;
        assert!(s.len() <= MAX_VALUE && s.len() >= MAX_VALUE - 1);
    }

    #[test]
    fn non_string_values_are_left_out() {
        let doc: AnnotatedDoc =
            serde_json::from_str(r#"{"annotations": {"a": 1, "b": "x"}}"#).unwrap();
        assert_eq!(doc.annotations.keys(), keys(&[("b", "x")]));
        let doc: AnnotatedDoc = serde_json::from_str(r#"{"annotations": null}"#).unwrap();
        assert!(doc.annotations.keys().is_empty());
    }
}
