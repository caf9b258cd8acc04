//! Rendering a [`Selection`] for `image-update policy`: a text summary for
//! people and a JSON object for scripts. Pure functions; the caller prints.
//!
//! # JSON schema
//!
//! One object, keys in this order:
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `image` | string | the image as given on the command line |
//! | `tag` | string or null | the chosen original tag; `null` when the supply-chain gate passed no candidate |
//! | `digest` | string or null | `sha256:…` when the caller resolved it (under the gate: the digest that was verified), else `null` |
//! | `unverified_pick` | string | only when the supply-chain gate passed no candidate: the tag the selection ranked first, which nobody verified (never to be deployed) |
//! | `strategy` | string | `semver`, `alphabetical`, `numerical`, `newest-build` or `digest` |
//! | `policy` | string | the strategy with its parameter, e.g. `semver range ">=1.0"` |
//! | `candidates` | array | the top candidates, best first; each `{"tag", "key", "created"?}`: `key` is what was ranked (the `filterTags` extraction or the tag), `created` (RFC 3339, UTC) only for newest-build |
//! | `listed` | number | tags listed before any filter |
//! | `eligible` | number | tags that were ranked |
//! | `dropped` | object | counts per filter, see below |
//! | `platforms` | array of strings | the platform filters carried by the policy |
//! | `digest_reflection` | string | `Never`, `IfNotPresent` or `Always` |
//! | `supply_chain` | object | only when the supply-chain gate applies: its verdict on each candidate (`reflector::verdicts`) |
//!
//! `dropped` has, in this order: `duplicate_tag`, `excluded` (total),
//! `excluded_by` (array of `{"pattern", "count"}` in configuration order),
//! `allow_tags`, `ignore_tags`, `filter_pattern`, `duplicate_key`,
//! `not_candidate`, `outside_range`, `no_created_time`, `no_platform`
//! (newest-build: no image for any of the policy's platforms), all numbers. Each
//! listed tag is counted once, under the first step that dropped it, so
//! `listed == eligible + sum(dropped counts)` (with `excluded` standing for
//! `excluded_by`).

use std::fmt::Write as _;

use serde::Serialize;

use super::select::{Candidate, Drops, PatternCount, Selection, thousands};
use super::spec::PolicySpec;
use crate::escape::Shown;

/// What a report names as the result of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice<'a> {
    /// The selection's tag (under the supply-chain gate, the one that
    /// passed it), with its digest when known.
    Tag { digest: Option<&'a str> },
    /// The supply-chain gate passed no candidate: no tag and no digest;
    /// the selection's own pick is shown only as unverified.
    NonePassed,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    image: &'a str,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unverified_pick: Option<&'a str>,
    strategy: &'static str,
    policy: String,
    candidates: &'a [Candidate],
    listed: usize,
    eligible: usize,
    dropped: JsonDrops<'a>,
    platforms: &'a [String],
    digest_reflection: String,
    /// The supply-chain gate's verdicts (`reflector::verdicts`), when a
    /// requirement applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    supply_chain: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct JsonDrops<'a> {
    duplicate_tag: usize,
    excluded: usize,
    excluded_by: &'a [PatternCount],
    allow_tags: usize,
    ignore_tags: usize,
    filter_pattern: usize,
    duplicate_key: usize,
    not_candidate: usize,
    outside_range: usize,
    no_created_time: usize,
    no_platform: usize,
}

impl<'a> From<&'a Drops> for JsonDrops<'a> {
    fn from(d: &'a Drops) -> Self {
        Self {
            duplicate_tag: d.duplicate_tag,
            excluded: d.excluded_total(),
            excluded_by: &d.excluded,
            allow_tags: d.allow_tags,
            ignore_tags: d.ignore_tags,
            filter_pattern: d.filter_pattern,
            duplicate_key: d.duplicate_key,
            not_candidate: d.not_candidate,
            outside_range: d.outside_range,
            no_created_time: d.no_created_time,
            no_platform: d.no_platform,
        }
    }
}

/// The JSON report (pretty-printed, newline-terminated; the characters a
/// terminal would act on as JSON escapes, [`crate::escape::json`]);
/// schema in the module docs.
///
/// # Errors
/// Only if serialisation itself fails, which plain strings and numbers do
/// not; the `Result` keeps panics out of library code.
pub fn render_json(
    image: &str,
    spec: &PolicySpec,
    selection: &Selection,
    digest: Option<&str>,
) -> Result<String, serde_json::Error> {
    render_json_with(image, spec, selection, Choice::Tag { digest }, None)
}

/// [`render_json`] of `choice`, with the supply-chain gate's verdicts as
/// its `supply_chain` key.
///
/// # Errors
/// As [`render_json`].
pub(crate) fn render_json_with(
    image: &str,
    spec: &PolicySpec,
    selection: &Selection,
    choice: Choice<'_>,
    supply_chain: Option<serde_json::Value>,
) -> Result<String, serde_json::Error> {
    let (tag, digest, unverified_pick) = match choice {
        Choice::Tag { digest } => (Some(selection.tag.as_str()), digest, None),
        Choice::NonePassed => (None, None, Some(selection.tag.as_str())),
    };
    let report = JsonReport {
        image,
        tag,
        digest,
        unverified_pick,
        strategy: spec.strategy().name(),
        policy: spec.strategy().to_string(),
        candidates: &selection.candidates,
        listed: selection.listed,
        eligible: selection.eligible,
        dropped: JsonDrops::from(&selection.drops),
        platforms: &spec.config().platforms,
        digest_reflection: spec.digest_reflection().to_string(),
        supply_chain,
    };
    let mut out = crate::escape::json(serde_json::to_string_pretty(&report)?);
    out.push('\n');
    Ok(out)
}

/// The text summary:
///
/// ```text
/// image:  ghcr.io/acme/app
/// policy: semver range "^1.2"
/// tag:    1.4.2
/// digest: sha256:…                      (only when known)
/// candidates (top 3 of 57):
///   1. 1.4.2
///   2. 1.4.1
///   3. 1.4.0
/// tags: 1,204 listed, 57 eligible
/// dropped:
///   3 excluded by ^.*\.sig$
///   1,144 not semver
/// ```
///
/// A candidate whose ranking key differs from its tag shows it as
/// `tag (key 1700000000)`; newest-build candidates show `created <time>`.
/// Values (the registry's tags, patterns) are escaped
/// ([`crate::escape`]): each line is one line.
pub fn render_text(
    image: &str,
    spec: &PolicySpec,
    selection: &Selection,
    digest: Option<&str>,
) -> String {
    render_text_with(image, spec, selection, Choice::Tag { digest })
}

/// [`render_text`] of `choice`: when the supply-chain gate passed no
/// candidate, the `tag:` line says so and the selection's pick is shown
/// apart, as unverified:
///
/// ```text
/// tag:    none (no candidate passed the supply-chain gate)
/// unverified pick: 1.7.0 (ranked first, rejected by the supply-chain gate)
/// ```
pub(crate) fn render_text_with(
    image: &str,
    spec: &PolicySpec,
    selection: &Selection,
    choice: Choice<'_>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "image:  {}", Shown(image));
    let _ = writeln!(out, "policy: {}", Shown(&spec.strategy().to_string()));
    match choice {
        Choice::Tag { digest } => {
            let _ = writeln!(out, "tag:    {}", Shown(&selection.tag));
            if let Some(digest) = digest {
                let _ = writeln!(out, "digest: {}", Shown(digest));
            }
        }
        Choice::NonePassed => {
            out.push_str("tag:    none (no candidate passed the supply-chain gate)\n");
            let _ = writeln!(
                out,
                "unverified pick: {} (ranked first, rejected by the supply-chain gate)",
                Shown(&selection.tag)
            );
        }
    }
    let _ = writeln!(
        out,
        "candidates (top {} of {}):",
        selection.candidates.len(),
        thousands(selection.eligible)
    );
    let width = selection.candidates.len().to_string().len();
    for (i, c) in selection.candidates.iter().enumerate() {
        let _ = write!(out, "  {:>width$}. {}", i + 1, Shown(&c.tag));
        if c.key != c.tag {
            let _ = write!(out, " (key {})", Shown(&c.key));
        }
        if let Some(t) = c.created {
            let _ = write!(out, "  created {t}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "tags: {} listed, {} eligible",
        thousands(selection.listed),
        thousands(selection.eligible)
    );
    let config = spec.config();
    let parts = selection.drops.describe(
        spec.strategy(),
        config.allow_tags.as_deref(),
        config.filter.as_ref().map(|f| f.pattern.as_str()),
        &config.platforms,
    );
    if parts.is_empty() {
        out.push_str("dropped: none\n");
    } else {
        out.push_str("dropped:\n");
        for part in parts {
            let _ = writeln!(out, "  {}", Shown(&part));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::selection::{
        FilterTagsConfig, Order, PolicyConfig, Strategy, TagInfo, Timestamp,
    };

    fn tags(list: &[&str]) -> Vec<TagInfo> {
        list.iter().map(|t| TagInfo::new(*t)).collect()
    }

    #[test]
    fn text_report() {
        let spec = PolicySpec::new(PolicyConfig::new(Strategy::SemVer {
            range: "^1.2".into(),
        }))
        .unwrap();
        let sel = spec
            .select(
                &tags(&[
                    "1.2.0",
                    "1.4.2",
                    "1.4.1",
                    "2.0.0",
                    "1.4.2.sig",
                    "latest",
                    "1.3.0",
                ]),
                3,
            )
            .unwrap();
        let text = render_text("ghcr.io/acme/app", &spec, &sel, Some("sha256:abc"));
        assert_eq!(
            text,
            "image:  ghcr.io/acme/app\n\
             policy: semver range \"^1.2\"\n\
             tag:    1.4.2\n\
             digest: sha256:abc\n\
             candidates (top 3 of 4):\n\
             \x20 1. 1.4.2\n\
             \x20 2. 1.4.1\n\
             \x20 3. 1.3.0\n\
             tags: 7 listed, 4 eligible\n\
             dropped:\n\
             \x20 1 excluded by ^.*\\.sig$\n\
             \x20 1 not semver\n\
             \x20 1 outside range\n"
        );
    }

    /// The registry client leaves out tags outside the tag grammar; one that reaches the
    /// selection anyway (a tags file is checked too, so only a test can) holding a line break and
    /// an escape sequence is shown escaped, on its own line, and exact in JSON.
    #[test]
    fn tags_from_a_registry_are_shown_escaped() {
        let spec = PolicySpec::new(PolicyConfig::new(Strategy::Alphabetical {
            order: Order::Asc,
        }))
        .unwrap();
        let tag = "z\n::error::x\u{1b}[2J\u{202e}";
        let sel = spec.select(&tags(&["a", tag]), 2).unwrap();
        let text = render_text("ghcr.io/acme/app", &spec, &sel, None);
        assert!(
            text.contains("tag:    z\\n::error::x\\x1b[2J\\u{202e}\n"),
            "{text}"
        );
        assert!(
            text.contains("  1. z\\n::error::x\\x1b[2J\\u{202e}\n"),
            "{text}"
        );
        assert!(!text.lines().any(|l| l.starts_with("::")), "{text}");
        let json = render_json("ghcr.io/acme/app", &spec, &sel, None).unwrap();
        assert!(
            json.contains(r#""tag": "z\n::error::x\u001b[2J\u202e""#),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["tag"], tag);
    }

    #[test]
    fn text_shows_keys_and_times() {
        let mut config = PolicyConfig::new(Strategy::NewestBuild);
        config.filter = Some(FilterTagsConfig {
            pattern: "^main-".into(),
            extract: String::new(),
        });
        let spec = PolicySpec::new(config).unwrap();
        let list = vec![
            TagInfo {
                tag: "main-a".into(),
                created: Some(Timestamp::from_unix(1_700_000_000, 0)),
            },
            TagInfo::new("dev-b"),
        ];
        let sel = spec.select(&list, 10).unwrap();
        let text = render_text("app", &spec, &sel, None);
        assert!(
            text.contains("  1. main-a  created 2023-11-14T22:13:20Z\n"),
            "{text}"
        );
        assert!(
            text.contains("  1 not matching filterTags pattern ^main-\n"),
            "{text}"
        );
        assert!(!text.contains("digest:"), "{text}");

        let mut config = PolicyConfig::new(Strategy::Numerical { order: Order::Asc });
        config.filter = Some(FilterTagsConfig {
            pattern: r"^b-(\d+)$".into(),
            extract: "$1".into(),
        });
        let spec = PolicySpec::new(config).unwrap();
        let sel = spec.select(&tags(&["b-7", "b-12"]), 10).unwrap();
        let text = render_text("app", &spec, &sel, None);
        assert!(
            text.contains("  1. b-12 (key 12)\n  2. b-7 (key 7)\n"),
            "{text}"
        );
        assert!(text.ends_with("dropped: none\n"), "{text}");
    }

    #[test]
    fn platform_drops_in_text_and_json() {
        let mut config = PolicyConfig::new(Strategy::NewestBuild);
        config.platforms = vec!["linux/arm64".into()];
        let spec = PolicySpec::new(config).unwrap();
        let mut lookup = |tag: &str| -> Result<
            crate::reflector::selection::Created,
            crate::reflector::selection::LookupError,
        > {
            use crate::reflector::selection::Created;
            Ok(match tag {
                "a" => Created::At(Timestamp::from_unix(1_700_000_000, 0)),
                "b" => Created::Unknown,
                _ => Created::NoPlatform,
            })
        };
        let filtered = spec.filter_tags(["a", "b", "c", "d"]).unwrap();
        let sel = spec.choose(filtered, &mut lookup, 10).unwrap();
        let text = render_text("app", &spec, &sel, None);
        assert!(
            text.ends_with(
                "tags: 4 listed, 1 eligible\ndropped:\n  1 without a creation time\n  2 without an image for linux/arm64\n"
            ),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&render_json("app", &spec, &sel, None).unwrap()).unwrap();
        assert_eq!(json["dropped"]["no_platform"], 2);
        assert_eq!(json["dropped"]["no_created_time"], 1);
        assert_eq!(json["platforms"], serde_json::json!(["linux/arm64"]));
    }

    /// When the supply-chain gate passes nothing, no tag and no digest are
    /// named: the selection's pick is shown only as unverified.
    #[test]
    fn no_tag_when_the_gate_passes_nothing() {
        let spec = PolicySpec::new(PolicyConfig::new(Strategy::SemVer {
            range: ">=1.0.0".into(),
        }))
        .unwrap();
        let sel = spec.select(&tags(&["1.5.0", "1.7.0"]), 10).unwrap();
        let json: serde_json::Value = serde_json::from_str(
            &render_json_with("app", &spec, &sel, Choice::NonePassed, None).unwrap(),
        )
        .unwrap();
        assert_eq!(json["tag"], serde_json::Value::Null);
        assert_eq!(json["digest"], serde_json::Value::Null);
        assert_eq!(json["unverified_pick"], "1.7.0");
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys[..4], ["image", "tag", "digest", "unverified_pick"]);
        let text = render_text_with("app", &spec, &sel, Choice::NonePassed);
        assert!(
            text.starts_with(
                "image:  app\npolicy: semver range \">=1.0.0\"\n\
                 tag:    none (no candidate passed the supply-chain gate)\n\
                 unverified pick: 1.7.0 (ranked first, rejected by the supply-chain gate)\n\
                 candidates (top 2 of 2):\n"
            ),
            "{text}"
        );
        let chosen = Choice::Tag {
            digest: Some("sha256:00"),
        };
        let json: serde_json::Value =
            serde_json::from_str(&render_json_with("app", &spec, &sel, chosen, None).unwrap())
                .unwrap();
        assert_eq!(json["tag"], "1.7.0");
        assert_eq!(json["digest"], "sha256:00");
        assert!(json.get("unverified_pick").is_none());
    }

    #[test]
    fn json_report_schema() {
        let mut config = PolicyConfig::new(Strategy::SemVer {
            range: ">=1.0.0".into(),
        });
        config.platforms = vec!["linux/amd64".into()];
        config.exclude.push("-debug$".into());
        let spec = PolicySpec::new(config).unwrap();
        let sel = spec
            .select(
                &tags(&[
                    "1.0.0",
                    "v1.1.0",
                    "1.1.0-debug",
                    "x.sig",
                    "0.9.0",
                    "nightly",
                ]),
                10,
            )
            .unwrap();
        let json = render_json("ghcr.io/acme/app", &spec, &sel, None).unwrap();
        assert!(json.ends_with("}\n"));
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let want = serde_json::json!({
            "image": "ghcr.io/acme/app",
            "tag": "v1.1.0",
            "digest": null,
            "strategy": "semver",
            "policy": "semver range \">=1.0.0\"",
            "candidates": [{"tag": "v1.1.0", "key": "v1.1.0"}, {"tag": "1.0.0", "key": "1.0.0"}],
            "listed": 6,
            "eligible": 2,
            "dropped": {
                "duplicate_tag": 0,
                "excluded": 2,
                "excluded_by": [{"pattern": "^.*\\.sig$", "count": 1}, {"pattern": "-debug$", "count": 1}],
                "allow_tags": 0,
                "ignore_tags": 0,
                "filter_pattern": 0,
                "duplicate_key": 0,
                "not_candidate": 1,
                "outside_range": 1,
                "no_created_time": 0,
                "no_platform": 0
            },
            "platforms": ["linux/amd64"],
            "digest_reflection": "Never"
        });
        assert_eq!(value, want);
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "image",
                "tag",
                "digest",
                "strategy",
                "policy",
                "candidates",
                "listed",
                "eligible",
                "dropped",
                "platforms",
                "digest_reflection"
            ]
        );
    }
}
