//! Target `tags`: tags files and tag selection.
//!
//! Input: a `--tags-file` text. Checks that [`parse_tags_file`] never
//! panics and returns only valid tags, and that selecting over the parsed
//! tags with each of [`configs`] (semver ranges, alphabetical both ways,
//! numerical with and without `filterTags`, newest-build, digest,
//! `allow-tags`/`ignore-tags`) never panics and chooses sensibly:
//! * the chosen tag is one of the listed tags and the first candidate;
//! * every listing is counted once: `listed == eligible + drops.total()`;
//! * a semver choice parses strictly and satisfies the range;
//! * an alphabetical (ascending) choice without filters is the greatest tag
//!   that is not a `.sig`;
//! * the JSON and text renderings of the choice succeed.

use std::sync::OnceLock;

use image_update::api::selection::is_valid_tag;
use image_update::api::selection::{
    FilterTagsConfig, Order, PolicyConfig, PolicySpec, SelectError, Strategy, parse_tags_file,
    render_json, render_text,
};
use image_update::api::selection::{Range, parse_tag};

/// The policies every tag list is selected with.
#[must_use]
pub fn configs() -> Vec<PolicyConfig> {
    let semver = |range: &str| {
        PolicyConfig::new(Strategy::SemVer {
            range: range.to_owned(),
        })
    };
    let numerical_filtered = PolicyConfig {
        filter: Some(FilterTagsConfig {
            pattern: "^main-[a-fA-F0-9]+-(?P<ts>[0-9]+)".to_owned(),
            extract: "$ts".to_owned(),
        }),
        ..PolicyConfig::new(Strategy::Numerical { order: Order::Asc })
    };
    let alphabetical_filtered = PolicyConfig {
        filter: Some(FilterTagsConfig {
            pattern: "^(?P<v>[a-z]+)-(?P<n>.*)$".to_owned(),
            extract: "$n-$v".to_owned(),
        }),
        allow_tags: Some("regexp:^[a-z]".to_owned()),
        ignore_tags: vec!["*-rc*".to_owned(), "?.sig".to_owned()],
        ..PolicyConfig::new(Strategy::Alphabetical { order: Order::Desc })
    };
    vec![
        semver("^1.0"),
        semver(">=1.0.0-0 <2.0.0 || 3.x"),
        semver("*"),
        PolicyConfig::new(Strategy::Alphabetical { order: Order::Asc }),
        alphabetical_filtered,
        numerical_filtered,
        PolicyConfig::new(Strategy::Numerical { order: Order::Desc }),
        PolicyConfig::new(Strategy::NewestBuild),
        PolicyConfig::new(Strategy::Digest {
            tag: "latest".to_owned(),
        }),
    ]
}

fn specs() -> &'static [PolicySpec] {
    static SPECS: OnceLock<Vec<PolicySpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        configs()
            .into_iter()
            .filter_map(|c| PolicySpec::new(c).ok())
            .collect()
    })
}

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(tags) = parse_tags_file(text) else {
        return;
    };
    for tag in &tags {
        assert!(
            is_valid_tag(&tag.tag),
            "invalid tag accepted: {:?}",
            tag.tag
        );
    }
    for spec in specs() {
        let selection = match spec.select(&tags, 5) {
            Ok(selection) => selection,
            Err(SelectError::NoTag(why)) => {
                assert_eq!(why.listed, tags.len());
                assert_eq!(why.drops.total(), tags.len(), "{why}");
                continue;
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                continue;
            }
        };
        let chosen = &selection.tag;
        assert!(
            tags.iter().any(|t| t.tag == *chosen),
            "{}: chose {chosen:?}, not a listed tag",
            spec.strategy()
        );
        assert_eq!(selection.candidates.first().map(|c| &c.tag), Some(chosen));
        assert!(selection.candidates.len() <= 5);
        assert_eq!(selection.listed, tags.len());
        assert_eq!(
            selection.listed,
            selection.eligible + selection.drops.total(),
            "{}: listings not counted once: {:?}",
            spec.strategy(),
            selection.drops
        );
        match spec.strategy() {
            Strategy::SemVer { range } => {
                let version = parse_tag(chosen);
                assert!(version.is_some(), "semver chose {chosen:?}");
                let matches = Range::parse(range)
                    .ok()
                    .zip(version)
                    .is_some_and(|(r, v)| r.matches(&v));
                assert!(matches, "{chosen:?} does not satisfy {range:?}");
            }
            Strategy::Alphabetical { order: Order::Asc } if spec.config().filter.is_none() => {
                let greatest = tags
                    .iter()
                    .map(|t| t.tag.as_str())
                    .filter(|t| !t.ends_with(".sig"))
                    .max();
                assert_eq!(greatest, Some(chosen.as_str()));
            }
            _ => {}
        }
        assert!(render_json("app", spec, &selection, None).is_ok());
        assert!(!render_text("app", spec, &selection, Some("sha256:00")).is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_config_compiles() {
        assert_eq!(specs().len(), configs().len());
    }
}
