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
//! use image_update::reflector::selection::{NoCreatedTimes, PolicyConfig, PolicySpec, Strategy};
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

pub mod allow;
pub mod alphabetical;
mod fasthash;
pub mod filter;
pub mod glob;
pub mod numerical;
pub mod reflection;
pub mod render;
pub mod select;
pub mod semver;
pub mod spec;
pub mod tags_file;

pub use image_update_registry::time::{TimeError, Timestamp};
pub use reflection::{DigestAction, ImageRef, digest_action, next_observed_previous};
pub use render::{render_json, render_text};
pub use select::{
    Candidate, Created, CreatedLookup, Drops, Filtered, LookupError, NoCreatedTimes, NoTag,
    PatternCount, SelectError, Selection, TagInfo,
};
pub use spec::{
    DEFAULT_EXCLUDE, DigestReflection, FilterTagsConfig, Order, PolicyConfig, PolicySpec,
    SpecError, Strategy,
};
pub use tags_file::{TagsFileError, parse_tags_file};

#[cfg(test)]
pub(crate) mod test_support {
    use super::{PolicyConfig, PolicySpec, TagInfo};

    /// Runs both steps over plain tags; `None` when selection fails.
    pub fn select_keys(config: PolicyConfig, tags: &[&str]) -> Option<String> {
        let spec = PolicySpec::new(config).unwrap();
        let tags: Vec<TagInfo> = tags.iter().map(|t| TagInfo::new(*t)).collect();
        spec.select(&tags, 10).ok().map(|s| s.tag)
    }
}

#[cfg(test)]
mod tests;
