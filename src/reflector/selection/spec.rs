//! What a policy asks for ([`PolicyConfig`], plain data) and its validated,
//! compiled form ([`PolicySpec`]).
//!
//! The split exists so that every regex, range and glob is compiled exactly
//! once, when the policy is built, and so that a bad value is reported there
//! with the field it came from, instead of surfacing later as "no tag found".

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use super::allow::AllowTags;
use super::filter::TagFilter;
use super::glob::Glob;
use super::semver::Range;

/// The exclusion rule applied when none is configured: drop cosign
/// signature tags. This is Flux ImageRepository's default `exclusionList`.
pub(crate) const DEFAULT_EXCLUDE: &str = r"^.*\.sig$";

/// Sort direction for alphabetical and numerical policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Pick the greatest (the last in ascending order).
    #[default]
    Asc,
    /// Pick the smallest.
    Desc,
}

impl FromStr for Order {
    type Err = SpecError;
    /// Accepts `asc`/`desc` in any case; the empty string means `asc`, as in
    /// Flux, which upper-cases the CRD value and defaults an empty one.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        if s.is_empty() || s.eq_ignore_ascii_case("asc") {
            Ok(Self::Asc)
        } else if s.eq_ignore_ascii_case("desc") {
            Ok(Self::Desc)
        } else {
            Err(SpecError::new("order", s, "expected `asc` or `desc`"))
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Asc => "asc",
            Self::Desc => "desc",
        })
    }
}

/// How the winning tag is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// Greatest version satisfying a Masterminds range (Flux `semver`, Argo
    /// `semver`).
    SemVer {
        /// The range, e.g. `>=1.0.0 <2.0.0`, `^1.2`, `1.x`.
        range: String,
    },
    /// Byte-wise order of the tag (or of the extracted key).
    Alphabetical {
        /// `Asc` picks the greatest.
        order: Order,
    },
    /// Tags read as floats.
    Numerical {
        /// `Asc` picks the greatest.
        order: Order,
    },
    /// The most recently built image (Argo CD `newest-build`); needs the
    /// creation time of every surviving tag from the caller.
    NewestBuild,
    /// Follow one mutable tag (Argo CD `digest`); the caller resolves its
    /// digest.
    Digest {
        /// The tag to follow, e.g. `latest`.
        tag: String,
    },
}

impl Strategy {
    /// Short name used in messages and JSON: `semver`, `alphabetical`,
    /// `numerical`, `newest-build`, `digest`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SemVer { .. } => "semver",
            Self::Alphabetical { .. } => "alphabetical",
            Self::Numerical { .. } => "numerical",
            Self::NewestBuild => "newest-build",
            Self::Digest { .. } => "digest",
        }
    }
}

impl fmt::Display for Strategy {
    /// `semver range ">=1.0"`, `alphabetical (asc)`, `digest of tag "latest"`…
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SemVer { range } => write!(f, "semver range \"{range}\""),
            Self::Alphabetical { order } => write!(f, "alphabetical ({order})"),
            Self::Numerical { order } => write!(f, "numerical ({order})"),
            Self::NewestBuild => f.write_str("newest-build"),
            Self::Digest { tag } => write!(f, "digest of tag \"{tag}\""),
        }
    }
}

/// Flux `digestReflectionPolicy`: when the digest of the chosen tag is
/// looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DigestReflection {
    /// Never record a digest (Flux default).
    #[default]
    Never,
    /// Look the digest up when the chosen image changed or none is recorded.
    IfNotPresent,
    /// Look the digest up on every run, to follow mutable tags.
    Always,
}

impl FromStr for DigestReflection {
    type Err = SpecError;
    /// Accepts Flux's names (`Never`, `IfNotPresent`, `Always`) and the CLI
    /// spellings (`never`, `if-not-present`, `always`), in any case. The
    /// empty string means `Never`, as an unset Flux field does.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let folded: String = s.chars().filter(|c| *c != '-' && *c != '_').collect();
        if folded.is_empty() || folded.eq_ignore_ascii_case("never") {
            Ok(Self::Never)
        } else if folded.eq_ignore_ascii_case("ifnotpresent") {
            Ok(Self::IfNotPresent)
        } else if folded.eq_ignore_ascii_case("always") {
            Ok(Self::Always)
        } else {
            Err(SpecError::new(
                "digestReflectionPolicy",
                s,
                "expected `Never`, `IfNotPresent` or `Always`",
            ))
        }
    }
}

impl fmt::Display for DigestReflection {
    /// Flux's spelling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Never => "Never",
            Self::IfNotPresent => "IfNotPresent",
            Self::Always => "Always",
        })
    }
}

/// Flux `filterTags`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterTagsConfig {
    /// Regex searched (unanchored) in each tag; empty matches all.
    pub pattern: String,
    /// Go-style template producing the ranking key; empty: the whole tag.
    pub extract: String,
}

/// A policy as configured, before validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// How the winner is chosen.
    pub strategy: Strategy,
    /// Optional `filterTags`.
    pub filter: Option<FilterTagsConfig>,
    /// Regexes; a tag in which any finds a match is dropped first. Defaults
    /// to [`DEFAULT_EXCLUDE`]; an empty list excludes nothing.
    pub exclude: Vec<String>,
    /// Argo CD `allow-tags` (`regexp:<re>` or `any`); `None` allows all.
    pub allow_tags: Option<String>,
    /// Argo CD `ignore-tags` globs; a tag matching any is dropped.
    pub ignore_tags: Vec<String>,
    /// `os/arch[/variant]` filters for the registry client; the policy
    /// engine only carries them.
    pub platforms: Vec<String>,
    /// When the caller should look up the chosen tag's digest.
    pub digest_reflection: DigestReflection,
}

impl PolicyConfig {
    /// A config with the given strategy and defaults for everything else
    /// (the `.sig` exclusion, no filters, `Never` digest reflection).
    pub fn new(strategy: Strategy) -> Self {
        Self {
            strategy,
            filter: None,
            exclude: vec![DEFAULT_EXCLUDE.to_owned()],
            allow_tags: None,
            ignore_tags: Vec::new(),
            platforms: Vec::new(),
            digest_reflection: DigestReflection::Never,
        }
    }
}

/// A value that failed validation, with the field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field} '{value}': {reason}")]
pub struct SpecError {
    /// The configuration field, e.g. `semver range`, `filterTags.pattern`.
    pub field: &'static str,
    /// The offending value as given.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SpecError {
    pub(crate) fn new(field: &'static str, value: &str, reason: impl fmt::Display) -> Self {
        Self {
            field,
            value: value.to_owned(),
            reason: reason.to_string(),
        }
    }
}

/// The strategy with its range compiled.
#[derive(Debug, Clone)]
pub(crate) enum Compiled {
    SemVer(Range),
    Alphabetical(Order),
    Numerical(Order),
    NewestBuild,
    Digest(String),
}

/// A validated policy: every pattern compiled, ready for selection.
#[derive(Debug, Clone)]
pub struct PolicySpec {
    pub(crate) config: PolicyConfig,
    pub(crate) compiled: Compiled,
    pub(crate) filter: Option<TagFilter>,
    pub(crate) exclude: Vec<Regex>,
    pub(crate) allow: Option<AllowTags>,
    pub(crate) ignore: Vec<Glob>,
    /// `config.platforms`, parsed.
    pub(crate) platforms: Vec<image_update_registry::Platform>,
}

impl PolicySpec {
    /// Validates `config` and compiles its patterns.
    ///
    /// # Errors
    /// [`SpecError`] naming the first invalid field and its value: the semver
    /// range, an empty digest tag, `filterTags.pattern`, an `exclude`
    /// regex, `allow-tags`, an `ignore-tags` glob or a platform (the one
    /// parser of `os/arch[/variant]`, for every front end and definition).
    pub fn new(config: PolicyConfig) -> Result<Self, SpecError> {
        let compiled = match &config.strategy {
            Strategy::SemVer { range } => Compiled::SemVer(
                Range::parse(range).map_err(|e| SpecError::new("semver range", range, e))?,
            ),
            Strategy::Alphabetical { order } => Compiled::Alphabetical(*order),
            Strategy::Numerical { order } => Compiled::Numerical(*order),
            Strategy::NewestBuild => Compiled::NewestBuild,
            Strategy::Digest { tag } => {
                if tag.is_empty() {
                    return Err(SpecError::new(
                        "digest tag",
                        tag,
                        "the digest strategy needs the tag to follow",
                    ));
                }
                Compiled::Digest(tag.clone())
            }
        };
        let filter = config
            .filter
            .as_ref()
            .map(|f| {
                TagFilter::new(&f.pattern, &f.extract)
                    .map_err(|e| SpecError::new("filterTags.pattern", &f.pattern, e))
            })
            .transpose()?;
        let exclude = config
            .exclude
            .iter()
            .map(|p| Regex::new(p).map_err(|e| SpecError::new("exclude pattern", p, e)))
            .collect::<Result<_, _>>()?;
        let allow = config
            .allow_tags
            .as_deref()
            .map(|a| AllowTags::parse(a).map_err(|e| SpecError::new("allow-tags", a, e)))
            .transpose()?;
        let ignore = config
            .ignore_tags
            .iter()
            .map(|g| Glob::new(g).map_err(|e| SpecError::new("ignore-tags glob", g, e)))
            .collect::<Result<_, _>>()?;
        let platforms = config
            .platforms
            .iter()
            .map(|p| {
                p.parse().map_err(|_| {
                    SpecError::new(
                        "platform",
                        p,
                        "expected os/arch[/variant], e.g. linux/arm64/v8",
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            config,
            compiled,
            filter,
            exclude,
            allow,
            ignore,
            platforms,
        })
    }

    /// The configuration this spec was built from.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The strategy.
    pub fn strategy(&self) -> &Strategy {
        &self.config.strategy
    }

    /// The platform filters, parsed, for the registry client.
    pub fn platforms(&self) -> &[image_update_registry::Platform] {
        &self.platforms
    }

    /// The digest reflection policy.
    pub fn digest_reflection(&self) -> DigestReflection {
        self.config.digest_reflection
    }

    /// Whether step 2 needs creation times from the caller (only
    /// newest-build does).
    pub fn needs_created_time(&self) -> bool {
        matches!(self.compiled, Compiled::NewestBuild)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_parsing() {
        assert_eq!("".parse::<Order>().unwrap(), Order::Asc);
        assert_eq!("ASC".parse::<Order>().unwrap(), Order::Asc);
        assert_eq!("desc".parse::<Order>().unwrap(), Order::Desc);
        assert_eq!("DESC".parse::<Order>().unwrap(), Order::Desc);
        let err = "invalid".parse::<Order>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid order 'invalid': expected `asc` or `desc`"
        );
    }

    #[test]
    fn digest_reflection_parsing() {
        for (text, want) in [
            ("", DigestReflection::Never),
            ("Never", DigestReflection::Never),
            ("never", DigestReflection::Never),
            ("IfNotPresent", DigestReflection::IfNotPresent),
            ("if-not-present", DigestReflection::IfNotPresent),
            ("Always", DigestReflection::Always),
            ("ALWAYS", DigestReflection::Always),
        ] {
            assert_eq!(text.parse::<DigestReflection>().unwrap(), want, "{text}");
        }
        assert!("sometimes".parse::<DigestReflection>().is_err());
        assert_eq!(DigestReflection::IfNotPresent.to_string(), "IfNotPresent");
    }

    /// Flux `TestFactory_PolicerFromSpec` plus our other validated fields.
    #[test]
    fn validation_names_field_and_value() {
        let semver = |range: &str| {
            PolicyConfig::new(Strategy::SemVer {
                range: range.into(),
            })
        };
        assert!(PolicySpec::new(semver("1.0.x")).is_ok());
        assert!(
            PolicySpec::new(PolicyConfig::new(Strategy::Alphabetical {
                order: Order::Asc
            }))
            .is_ok()
        );
        let err = PolicySpec::new(semver("*-*")).unwrap_err();
        assert_eq!(err.field, "semver range");
        assert_eq!(err.value, "*-*");
        assert!(
            err.to_string()
                .starts_with("invalid semver range '*-*': improper constraint")
        );

        let mut bad_filter = semver("*");
        bad_filter.filter = Some(FilterTagsConfig {
            pattern: "[=".into(),
            extract: String::new(),
        });
        let err = PolicySpec::new(bad_filter).unwrap_err();
        assert_eq!(
            (err.field, err.value.as_str()),
            ("filterTags.pattern", "[=")
        );

        let mut bad_exclude = semver("*");
        bad_exclude.exclude = vec!["ok".into(), "(".into()];
        assert_eq!(
            PolicySpec::new(bad_exclude).unwrap_err().field,
            "exclude pattern"
        );

        let mut bad_allow = semver("*");
        bad_allow.allow_tags = Some("not-regexp:a-z".into());
        assert_eq!(PolicySpec::new(bad_allow).unwrap_err().field, "allow-tags");

        let mut bad_ignore = semver("*");
        bad_ignore.ignore_tags = vec!["*-dev".into(), "[".into()];
        let err = PolicySpec::new(bad_ignore).unwrap_err();
        assert_eq!((err.field, err.value.as_str()), ("ignore-tags glob", "["));

        let err = PolicySpec::new(PolicyConfig::new(Strategy::Digest { tag: String::new() }))
            .unwrap_err();
        assert_eq!(err.field, "digest tag");
    }

    #[test]
    fn only_newest_build_needs_times() {
        let spec = |s| {
            PolicySpec::new(PolicyConfig::new(s))
                .unwrap()
                .needs_created_time()
        };
        assert!(spec(Strategy::NewestBuild));
        assert!(!spec(Strategy::SemVer { range: "*".into() }));
        assert!(!spec(Strategy::Digest {
            tag: "latest".into()
        }));
        assert!(!spec(Strategy::Numerical { order: Order::Asc }));
    }
}
