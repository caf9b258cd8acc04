//! `image-update policy IMAGE` without a registry: everything except
//! obtaining the tag list.
//!
//! The CLI layer reads `--tags-file` (or asks the registry client for tags
//! and, for newest-build, creation times), then calls [`evaluate_offline`]
//! and prints the text it returns to stdout. Errors go to stderr; a
//! [`OfflineError::Select`] already explains why no tag qualified.

use super::policy_args::{ArgsError, OutputFormat, PolicyArgs};
use crate::reflector::selection::render::{render_json, render_text};
use crate::reflector::selection::select::{SelectError, TagInfo};

/// Why an offline evaluation failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum OfflineError {
    /// Bad options (several strategies, an invalid range or regex, …).
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// No tag qualified, or a numerical tag did not parse.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// JSON serialisation failed (not expected for these types).
    #[error("rendering the JSON report")]
    Render(#[from] serde_json::Error),
}

/// Validates `args`, selects a tag from `tags` (creation times, when
/// present, feed newest-build) and renders the report. No digest is known
/// offline, so the report's digest is absent (`null` in JSON).
///
/// # Errors
/// [`OfflineError`]; every variant's message is ready to show to a user.
pub(super) fn evaluate_offline(
    args: &PolicyArgs,
    image: &str,
    tags: Vec<TagInfo>,
) -> Result<String, OfflineError> {
    let spec = args.to_spec()?;
    let selection = spec.select(&tags, args.top)?;
    Ok(match args.output {
        OutputFormat::Text => render_text(image, &spec, &selection, None),
        OutputFormat::Json => render_json(image, &spec, &selection, None)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::selection::parse_tags_file;

    #[test]
    fn end_to_end_from_tags_file() {
        let tags = parse_tags_file(
            "# nightly builds\n\
             main-100  2024-03-01T00:00:00Z\n\
             main-101  2024-03-02T00:00:00Z\n\
             main-99   2024-03-03T00:00:00Z\n\
             pr-7      2024-03-04T00:00:00Z\n\
             main-101.sig\n",
        )
        .unwrap();
        let args = PolicyArgs {
            newest_build: true,
            allow_tags: Some("regexp:^main-".into()),
            top: 2,
            ..PolicyArgs::default()
        };
        let rendered = evaluate_offline(&args, "ghcr.io/acme/app", tags.clone()).unwrap();
        assert!(
            rendered
                .starts_with("image:  ghcr.io/acme/app\npolicy: newest-build\ntag:    main-99\n"),
            "{rendered}"
        );
        let json = evaluate_offline(
            &PolicyArgs {
                output: OutputFormat::Json,
                ..args
            },
            "ghcr.io/acme/app",
            tags.clone(),
        )
        .unwrap();
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            json["candidates"].as_array().map(Vec::len),
            Some(2),
            "{json}"
        );

        let args = PolicyArgs {
            numerical: Some(crate::cli::policy_args::OrderArg::Asc),
            filter_pattern: Some(r"^main-(\d+)$".into()),
            filter_extract: Some("$1".into()),
            output: OutputFormat::Json,
            top: 10,
            ..PolicyArgs::default()
        };
        let rendered = evaluate_offline(&args, "ghcr.io/acme/app", tags).unwrap();
        let json: serde_json::Value = serde_json::from_str(&rendered).unwrap();
        assert_eq!(json["tag"], "main-101");
        assert_eq!(json["dropped"]["excluded"], 1);
        assert_eq!(json["dropped"]["filter_pattern"], 1);
    }

    #[test]
    fn errors_explain_why() {
        let args = PolicyArgs {
            semver: Some(">=2.0.0".into()),
            ..PolicyArgs::default()
        };
        let mut tags: Vec<TagInfo> = (0..1150)
            .map(|i| TagInfo::new(format!("build-{i}")))
            .collect();
        tags.extend((0..51).map(|i| TagInfo::new(format!("1.{i}.0"))));
        tags.extend((0..3).map(|i| TagInfo::new(format!("sha256-{i}.sig"))));
        let err = evaluate_offline(&args, "app", tags).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no tag satisfies semver range \">=2.0.0\": 1,204 tags listed, 3 excluded by ^.*\\.sig$, \
             1,150 not semver, 51 outside range"
        );
        let args = PolicyArgs {
            semver: Some("1.x".into()),
            alphabetical: Some(crate::cli::policy_args::OrderArg::Asc),
            ..PolicyArgs::default()
        };
        assert!(matches!(
            evaluate_offline(&args, "app", vec![]),
            Err(OfflineError::Args(ArgsError::ConflictingStrategies(_)))
        ));
    }
}
