//! Tag selection: which tag of an image a policy chooses.
//!
//! This module is the pure policy engine behind `$imagepolicy` markers and
//! the `image-update policy IMAGE` command. It never touches the network or
//! the filesystem: the caller lists tags (from a registry or a tags file),
//! and, for newest-build only, answers creation-time questions about the
//! tags that survive filtering. Keeping IO out is what lets every rule here
//! be tested with plain tables.
//!
//! The strategies follow Flux's image-reflector-controller (semver,
//! alphabetical, numerical, `filterTags`, digest reflection) and Argo CD
//! Image Updater (newest-build, digest, `allow-tags`, `ignore-tags`);
//! `docs/policies.md` lists where we deliberately differ.
//!
//! Typical use:
//! ```
//! use image_update::api::selection::{NoCreatedTimes, PolicyConfig, PolicySpec, Strategy};
//!
//! let spec = PolicySpec::new(PolicyConfig::new(Strategy::SemVer { range: "^1.2".into() }))?;
//! let tags = ["1.1.0", "1.2.0", "1.4.2", "2.0.0", "1.4.2.sig", "latest"];
//! let filtered = spec.filter_tags(tags)?; // step 1: counts drops
//! let selection = spec.choose(filtered, &mut NoCreatedTimes, 10)?; // step 2
//! assert_eq!(selection.tag, "1.4.2");
//! assert_eq!(selection.drops.excluded_total(), 1);
//! assert_eq!(selection.drops.not_candidate, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod allow;
pub(crate) mod alphabetical;
mod fasthash;
pub(crate) mod filter;
pub(crate) mod glob;
pub(crate) mod numerical;
pub(crate) mod reflection;
pub(crate) mod render;
pub(crate) mod select;
pub(crate) mod semver;
pub(crate) mod spec;
pub(crate) mod tags_file;

#[cfg(test)]
pub(crate) use image_update_registry::time::Timestamp;
pub(crate) use reflection::{DigestAction, ImageRef, digest_action, next_observed_previous};
#[cfg(test)]
pub(crate) use select::TagInfo;
pub(crate) use select::{Created, LookupError, NoCreatedTimes, SelectError, Selection};
pub(crate) use spec::{
    DigestReflection, FilterTagsConfig, Order, PolicyConfig, PolicySpec, Strategy,
};
pub(crate) use tags_file::parse_tags_file;

#[cfg(test)]
pub(crate) mod test_support {
    use super::{PolicyConfig, PolicySpec, TagInfo};

    /// Runs both steps over plain tags; `None` when selection fails.
    pub(crate) fn select_keys(config: PolicyConfig, tags: &[&str]) -> Option<String> {
        let spec = PolicySpec::new(config).unwrap();
        let tags: Vec<TagInfo> = tags.iter().map(|t| TagInfo::new(*t)).collect();
        spec.select(&tags, 10).ok().map(|s| s.tag)
    }
}

#[cfg(test)]
mod tests;
