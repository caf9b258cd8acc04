//! Command-line options of `image-update policy IMAGE`, and their
//! translation into a [`PolicyConfig`].
//!
//! Each option maps onto one field of the selection engine's
//! [`PolicyConfig`]; the conversion lives here, next to the options, so
//! that help text and semantics cannot drift apart.
//!
//! Strategy choice: at most one of `--semver`, `--alphabetical`,
//! `--numerical`, `--newest-build`, `--digest`. With none, the policy is
//! `--semver '*'` (the newest stable semver tag), as Argo CD defaults to
//! semver; Flux requires an explicit choice, but a command-line probe is
//! more useful with a sensible default.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::reflector::selection::spec::{
    DEFAULT_EXCLUDE, DigestReflection, FilterTagsConfig, Order, PolicyConfig, PolicySpec,
    SpecError, Strategy,
};

/// `asc` / `desc` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// Pick the greatest.
    Asc,
    /// Pick the smallest.
    Desc,
}

impl From<OrderArg> for Order {
    fn from(o: OrderArg) -> Self {
        match o {
            OrderArg::Asc => Order::Asc,
            OrderArg::Desc => Order::Desc,
        }
    }
}

/// `--digest-reflection` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DigestReflectionArg {
    /// Never record a digest.
    #[default]
    Never,
    /// Look the digest up only when the chosen image changed.
    IfNotPresent,
    /// Look the digest up on every run.
    Always,
}

impl From<DigestReflectionArg> for DigestReflection {
    fn from(d: DigestReflectionArg) -> Self {
        match d {
            DigestReflectionArg::Never => DigestReflection::Never,
            DigestReflectionArg::IfNotPresent => DigestReflection::IfNotPresent,
            DigestReflectionArg::Always => DigestReflection::Always,
        }
    }
}

/// `--output` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum OutputFormat {
    /// Human-readable summary.
    #[default]
    Text,
    /// One JSON object (schema in docs/policies.md)
    Json,
}

/// Options of `image-update policy IMAGE`.
///
/// `Default` gives the same values as an empty command line (notably
/// `top = 10`), so code and tests can build options without clap.
#[derive(Debug, Clone, Args)]
pub(crate) struct PolicyArgs {
    /// Choose the greatest version satisfying a Masterminds semver RANGE
    /// (e.g. '>=1.2 <2', '^1.4', '1.x'); the default strategy, with '*'
    #[arg(
        long,
        value_name = "RANGE",
        help_heading = "Strategy (pick one)",
        group = "strategy"
    )]
    pub semver: Option<String>,

    /// Choose by byte-wise order of the tag: asc picks the greatest
    #[arg(
        long,
        value_name = "ORDER",
        help_heading = "Strategy (pick one)",
        group = "strategy"
    )]
    pub alphabetical: Option<OrderArg>,

    /// Choose by the tag read as a number: asc picks the greatest
    #[arg(
        long,
        value_name = "ORDER",
        help_heading = "Strategy (pick one)",
        group = "strategy"
    )]
    pub numerical: Option<OrderArg>,

    /// Choose the most recently built image (needs creation times)
    #[arg(long, help_heading = "Strategy (pick one)", group = "strategy")]
    pub newest_build: bool,

    /// Follow one mutable TAG (e.g. latest); its digest is resolved
    #[arg(
        long,
        value_name = "TAG",
        help_heading = "Strategy (pick one)",
        group = "strategy"
    )]
    pub digest: Option<String>,

    /// Keep only tags in which this regex finds a match (unanchored)
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    pub filter_pattern: Option<String>,

    /// Rank by this expansion of the filter pattern's first match ($1, ${name}, $$)
    #[arg(
        long,
        value_name = "TPL",
        help_heading = "Filters",
        requires = "filter_pattern"
    )]
    pub filter_extract: Option<String>,

    /// Drop tags matching RE (repeatable; write --exclude=-x for a leading
    /// '-'). Giving any replaces the default '^.*\.sig$'; --exclude '' alone
    /// excludes nothing
    #[arg(long, value_name = "RE", help_heading = "Filters")]
    pub exclude: Vec<String>,

    /// Do not apply the default '^.*\.sig$' exclusion
    #[arg(long, help_heading = "Filters")]
    pub no_default_exclude: bool,

    /// Argo CD allow-tags: 'regexp:RE' (unanchored search) or 'any'
    #[arg(long, value_name = "MATCH", help_heading = "Filters")]
    pub allow_tags: Option<String>,

    /// Drop tags matching a glob (* ? [..]); repeatable or comma-separated
    #[arg(
        long,
        value_name = "GLOB",
        help_heading = "Filters",
        value_delimiter = ','
    )]
    pub ignore_tags: Vec<String>,

    /// Platform os/arch[/variant] for metadata lookups; repeatable or comma-separated
    #[arg(long, value_name = "PLATFORM", value_delimiter = ',')]
    pub platform: Vec<String>,

    /// When to look up the chosen tag's digest
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = DigestReflectionArg::Never)]
    pub digest_reflection: DigestReflectionArg,

    /// Read tags from FILE ('-' for stdin) instead of the registry: one tag
    /// per line, optionally followed by an RFC 3339 creation time
    #[arg(long, value_name = "FILE")]
    pub tags_file: Option<PathBuf>,

    /// Output format
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// How many top candidates to show
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
}

impl Default for PolicyArgs {
    fn default() -> Self {
        Self {
            semver: None,
            alphabetical: None,
            numerical: None,
            newest_build: false,
            digest: None,
            filter_pattern: None,
            filter_extract: None,
            exclude: Vec::new(),
            no_default_exclude: false,
            allow_tags: None,
            ignore_tags: Vec::new(),
            platform: Vec::new(),
            digest_reflection: DigestReflectionArg::Never,
            tags_file: None,
            output: OutputFormat::Text,
            top: 10,
        }
    }
}

/// A usage error in [`PolicyArgs`], or an invalid value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgsError {
    /// More than one strategy option was given.
    #[error("choose one strategy, not several: {0}")]
    ConflictingStrategies(String),
    /// `--filter-extract` without `--filter-pattern`.
    #[error("--filter-extract needs --filter-pattern")]
    ExtractWithoutPattern,
    /// A value failed validation.
    #[error(transparent)]
    Invalid(#[from] SpecError),
}

impl PolicyArgs {
    /// The strategy options that were given, as flags for messages.
    fn strategies(&self) -> Vec<(&'static str, Strategy)> {
        let mut out = Vec::new();
        if let Some(range) = &self.semver {
            out.push((
                "--semver",
                Strategy::SemVer {
                    range: range.clone(),
                },
            ));
        }
        if let Some(order) = self.alphabetical {
            out.push((
                "--alphabetical",
                Strategy::Alphabetical {
                    order: order.into(),
                },
            ));
        }
        if let Some(order) = self.numerical {
            out.push((
                "--numerical",
                Strategy::Numerical {
                    order: order.into(),
                },
            ));
        }
        if self.newest_build {
            out.push(("--newest-build", Strategy::NewestBuild));
        }
        if let Some(tag) = &self.digest {
            out.push(("--digest", Strategy::Digest { tag: tag.clone() }));
        }
        out
    }

    /// The policy configuration these options describe (not yet validated).
    ///
    /// # Errors
    /// [`ArgsError`] for several strategies or an extract without pattern.
    pub(crate) fn to_config(&self) -> Result<PolicyConfig, ArgsError> {
        let mut strategies = self.strategies();
        if strategies.len() > 1 {
            let flags: Vec<&str> = strategies.iter().map(|(flag, _)| *flag).collect();
            return Err(ArgsError::ConflictingStrategies(flags.join(", ")));
        }
        let strategy = strategies.pop().map_or_else(
            || Strategy::SemVer {
                range: "*".to_owned(),
            },
            |(_, s)| s,
        );
        let filter = match (&self.filter_pattern, &self.filter_extract) {
            (None, Some(_)) => return Err(ArgsError::ExtractWithoutPattern),
            (None, None) => None,
            (Some(pattern), extract) => Some(FilterTagsConfig {
                pattern: pattern.clone(),
                extract: extract.clone().unwrap_or_default(),
            }),
        };
        let exclude = if self.exclude.is_empty() && !self.no_default_exclude {
            vec![DEFAULT_EXCLUDE.to_owned()]
        } else {
            self.exclude
                .iter()
                .filter(|e| !e.is_empty())
                .cloned()
                .collect()
        };
        Ok(PolicyConfig {
            strategy,
            filter,
            exclude,
            allow_tags: self.allow_tags.clone(),
            ignore_tags: self
                .ignore_tags
                .iter()
                .map(|g| g.trim())
                .filter(|g| !g.is_empty())
                .map(str::to_owned)
                .collect(),
            platforms: self
                .platform
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect(),
            digest_reflection: self.digest_reflection.into(),
        })
    }

    /// The validated policy these options describe.
    ///
    /// # Errors
    /// [`ArgsError`] for a usage problem or an invalid value (the message
    /// names the field and the value).
    pub(crate) fn to_spec(&self) -> Result<PolicySpec, ArgsError> {
        Ok(PolicySpec::new(self.to_config()?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        image: String,
        #[command(flatten)]
        args: PolicyArgs,
    }

    fn parse(argv: &[&str]) -> Result<PolicyArgs, clap::Error> {
        let mut full = vec!["policy", "ghcr.io/acme/app"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).map(|c| c.args)
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn help_lists_every_option() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        for flag in [
            "--semver <RANGE>",
            "--alphabetical <ORDER>",
            "--numerical <ORDER>",
            "--newest-build",
            "--digest <TAG>",
            "--filter-pattern <RE>",
            "--filter-extract <TPL>",
            "--exclude <RE>",
            "--no-default-exclude",
            "--allow-tags <MATCH>",
            "--ignore-tags <GLOB>",
            "--platform <PLATFORM>",
            "--digest-reflection <WHEN>",
            "--tags-file <FILE>",
            "--output <FORMAT>",
            "--top <N>",
        ] {
            assert!(help.contains(flag), "{flag} missing from help");
        }
    }

    #[test]
    fn default_matches_empty_command_line() {
        let parsed = parse(&[]).unwrap();
        let default = PolicyArgs::default();
        assert_eq!(format!("{parsed:?}"), format!("{default:?}"));
    }

    #[test]
    fn default_is_semver_star_with_sig_exclusion() {
        let config = parse(&[]).unwrap().to_config().unwrap();
        assert_eq!(config.strategy, Strategy::SemVer { range: "*".into() });
        assert_eq!(config.exclude, vec![DEFAULT_EXCLUDE.to_owned()]);
        assert_eq!(config.digest_reflection, DigestReflection::Never);
        assert_eq!(parse(&[]).unwrap().top, 10);
    }

    #[test]
    fn every_option_maps_to_the_config() {
        let args = parse(&[
            "--numerical",
            "desc",
            "--filter-pattern",
            r"^main-(?P<ts>\d+)$",
            "--filter-extract",
            "$ts",
            "--exclude=-debug$",
            "--exclude",
            r"\.att$",
            "--allow-tags",
            "regexp:^main-",
            "--ignore-tags",
            "main-0*, *-old",
            "--ignore-tags",
            "x?",
            "--platform",
            "linux/amd64,linux/arm64/v8",
            "--digest-reflection",
            "if-not-present",
            "--tags-file",
            "-",
            "--output",
            "json",
            "--top",
            "3",
        ])
        .unwrap();
        assert_eq!(args.output, OutputFormat::Json);
        assert_eq!(args.top, 3);
        assert_eq!(args.tags_file.as_deref(), Some(std::path::Path::new("-")));
        let config = args.to_config().unwrap();
        assert_eq!(config.strategy, Strategy::Numerical { order: Order::Desc });
        assert_eq!(
            config.filter,
            Some(FilterTagsConfig {
                pattern: r"^main-(?P<ts>\d+)$".into(),
                extract: "$ts".into()
            })
        );
        assert_eq!(
            config.exclude,
            vec!["-debug$".to_owned(), r"\.att$".to_owned()]
        );
        assert_eq!(config.allow_tags.as_deref(), Some("regexp:^main-"));
        assert_eq!(config.ignore_tags, vec!["main-0*", "*-old", "x?"]);
        assert_eq!(config.platforms, vec!["linux/amd64", "linux/arm64/v8"]);
        assert_eq!(config.digest_reflection, DigestReflection::IfNotPresent);
        assert!(args.to_spec().is_ok());
    }

    #[test]
    fn clearing_the_default_exclusion() {
        let empty = parse(&["--exclude", ""]).unwrap().to_config().unwrap();
        assert!(empty.exclude.is_empty());
        let flag = parse(&["--no-default-exclude"])
            .unwrap()
            .to_config()
            .unwrap();
        assert!(flag.exclude.is_empty());
        let extra = parse(&["--no-default-exclude", "--exclude", "rc"])
            .unwrap()
            .to_config()
            .unwrap();
        assert_eq!(extra.exclude, vec!["rc"]);
    }

    #[test]
    fn strategies_are_exclusive() {
        assert!(
            parse(&["--semver", "1.x", "--newest-build"]).is_err(),
            "clap group"
        );
        let args = PolicyArgs {
            semver: Some("1.x".into()),
            digest: Some("latest".into()),
            ..PolicyArgs::default()
        };
        assert_eq!(
            args.to_config().unwrap_err().to_string(),
            "choose one strategy, not several: --semver, --digest"
        );
        for (argv, want) in [
            (
                &["--alphabetical", "desc"][..],
                Strategy::Alphabetical { order: Order::Desc },
            ),
            (&["--newest-build"][..], Strategy::NewestBuild),
            (
                &["--digest", "stable"][..],
                Strategy::Digest {
                    tag: "stable".into(),
                },
            ),
            (
                &["--semver", "~1.2"][..],
                Strategy::SemVer {
                    range: "~1.2".into(),
                },
            ),
        ] {
            assert_eq!(
                parse(argv).unwrap().to_config().unwrap().strategy,
                want,
                "{argv:?}"
            );
        }
    }

    #[test]
    fn invalid_values_name_the_field() {
        let err = parse(&["--semver", "latest"])
            .unwrap()
            .to_spec()
            .unwrap_err();
        assert!(
            err.to_string().starts_with("invalid semver range 'latest'"),
            "{err}"
        );
        let err = parse(&["--filter-pattern", "[="])
            .unwrap()
            .to_spec()
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid filterTags.pattern '[='"),
            "{err}"
        );
        assert!(
            parse(&["--filter-extract", "$1"]).is_err(),
            "clap requires the pattern"
        );
        let args = PolicyArgs {
            filter_extract: Some("$1".into()),
            ..PolicyArgs::default()
        };
        assert_eq!(
            args.to_config().unwrap_err(),
            ArgsError::ExtractWithoutPattern
        );
        assert!(parse(&["--alphabetical", "up"]).is_err());
        assert!(parse(&["--digest-reflection", "sometimes"]).is_err());
    }
}
