//! `image-update policy IMAGE`: the image reflector on the command line.
//!
//! With `--tags-file` the policy is evaluated offline
//! ([`crate::reflector::selection::evaluate_offline`]); otherwise the tags come from the
//! registry, with creation times for newest-build and a digest for the
//! digest strategy and `--digest-reflection if-not-present|always`. The
//! report goes to stdout; no qualifying tag is an error (exit 1) whose
//! message is the engine's explanation.

use std::io::Write;

use anyhow::Context;

use super::policy_args::OutputFormat;
use super::policy_offline::{OfflineError, evaluate_offline};
use super::update::registry_settings;
use super::{Exit, UsageError, read_input};
use crate::cli::PolicyCommandArgs;
use crate::reflector::fetch::choose;
use crate::reflector::selection::{parse_tags_file, render_json, render_text};
use image_update_registry::{RegistryClient, Repository};

/// Run `policy`.
///
/// # Errors
/// Bad options (usage errors), an unreadable tags file, a registry failure,
/// or no qualifying tag.
pub fn run(args: &PolicyCommandArgs) -> anyhow::Result<Exit> {
    let rendered = if let Some(file) = &args.policy.tags_file {
        let text = read_input(file)?;
        let tags = parse_tags_file(&text).map_err(|e| {
            let name = if file.as_os_str() == "-" {
                "stdin".to_owned()
            } else {
                file.display().to_string()
            };
            anyhow::anyhow!("{name}: {e}")
        })?;
        match evaluate_offline(&args.policy, &args.image, tags) {
            Ok(evaluation) => evaluation.rendered,
            Err(OfflineError::Args(e)) => {
                return Err(UsageError(e.to_string()).into());
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        let spec = args
            .policy
            .to_spec()
            .map_err(|e| UsageError(e.to_string()))?;
        let repo = Repository::parse(&args.image).map_err(|e| UsageError(e.to_string()))?;
        let client = RegistryClient::new(registry_settings(&args.registry)?)
            .map_err(|e| anyhow::anyhow!("registry settings: {e}"))?;
        let tags = client
            .list_tags(&repo)
            .with_context(|| format!("cannot list the tags of {repo}"))?;
        let (selection, latest) = choose(
            &client,
            &repo,
            &args.image,
            &spec,
            &tags,
            None,
            args.policy.top,
        )?;
        let digest = Some(latest.digest.as_str()).filter(|d| !d.is_empty());
        match args.policy.output {
            OutputFormat::Text => render_text(&args.image, &spec, &selection, digest),
            OutputFormat::Json => render_json(&args.image, &spec, &selection, digest)?,
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the report to stdout")?;
    Ok(Exit::Success)
}
