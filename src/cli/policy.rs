//! `image-update policy IMAGE`: the image reflector on the command line.
//!
//! With `--tags-file` the policy is evaluated offline
//! (`policy_offline::evaluate_offline`); otherwise the tags come from the
//! registry, with creation times for newest-build and a digest for the
//! digest strategy and `--digest-reflection if-not-present|always`. The
//! report goes to stdout; no qualifying tag is an error (exit 1) whose
//! message is the engine's explanation.

use std::io::Write;

use super::policy_args::OutputFormat;
use super::policy_offline::{OfflineError, evaluate_offline};
use super::{Exit, PolicyCommandArgs};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::operation::client_settings;
use crate::reflector::fetch::choose;
use crate::reflector::selection::parse_tags_file;
use crate::reflector::selection::render::{render_json, render_text};
use image_update_registry::{RegistryClient, Repository};

/// Run `policy`.
///
/// # Errors
/// Bad options (usage errors), an unreadable tags file, a registry failure,
/// or no qualifying tag.
pub(crate) fn run(args: &PolicyCommandArgs) -> Result<Exit, Error> {
    let rendered = if let Some(file) = &args.policy.tags_file {
        let text = crate::input::read_text(file, args.max_file_size)?;
        let tags = parse_tags_file(&text).map_err(|e| {
            Error::invalid(vec![
                Diagnostic::error(e.to_string()).at(Location::new(crate::input::name(file), None)),
            ])
        })?;
        match evaluate_offline(&args.policy, &args.image, tags) {
            Ok(rendered) => rendered,
            Err(OfflineError::Args(e)) => return Err(Error::Usage(e.to_string())),
            Err(OfflineError::Select(e)) => return Err(Error::Other(Box::new(e))),
            Err(e) => return Err(Error::Internal(e.to_string())),
        }
    } else {
        let spec = args
            .policy
            .to_spec()
            .map_err(|e| Error::Usage(e.to_string()))?;
        let repo = Repository::parse(&args.image).map_err(|e| Error::Usage(e.to_string()))?;
        let settings = client_settings(&args.registry.fetch_settings())?;
        let client = RegistryClient::new(settings).map_err(|e| Error::Registry(Box::new(e)))?;
        let tags = client
            .list_tags(&repo)
            .map_err(|e| Error::failed(format!("cannot list the tags of {repo}"), e))?;
        let (selection, latest) = choose(
            &client,
            &repo,
            &args.image,
            &spec,
            &tags,
            None,
            args.policy.top,
        )
        .map_err(|e| Error::Other(Box::new(e)))?;
        let digest = Some(latest.digest.as_str()).filter(|d| !d.is_empty());
        match args.policy.output {
            OutputFormat::Text => render_text(&args.image, &spec, &selection, digest),
            OutputFormat::Json => render_json(&args.image, &spec, &selection, digest)
                .map_err(|e| Error::Internal(e.to_string()))?,
        }
    };
    let mut out = super::stdio::stdout().lock();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the report",
            source,
        })?;
    Ok(Exit::Success)
}
