//! `image-update policy IMAGE`: the image reflector on the command line.
//!
//! With `--tags-file` the policy is evaluated offline
//! (`policy_offline::evaluate_offline`); otherwise the tags come from the
//! registry, with creation times for newest-build and a digest for the
//! digest strategy and `--digest-reflection if-not-present|always`. The
//! report goes to stdout; no qualifying tag is an error (exit 1) whose
//! message is the engine's explanation.
//!
//! When the supply-chain gate applies (the registry settings' rules, the
//! `--verify-*`/`--min-age` flags, `--alias`), the report is followed by
//! each shown candidate's verdict (signed or unsigned, old enough or too
//! young, matching the alias or not) and the tag is the gate's choice; when
//! no candidate passes, the report names no tag and no digest (the
//! selection's pick only as `unverified_pick`), the verdicts are printed,
//! and the command fails.

use std::io::Write;

use super::policy_args::OutputFormat;
use super::policy_offline::{OfflineError, evaluate_offline};
use super::{Exit, PolicyCommandArgs};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::operation::client_settings;
use crate::reflector::fetch::choose;
use crate::reflector::gate::{self, Gates};
use crate::reflector::selection::render::{Choice, render_json_with, render_text_with};
use crate::reflector::selection::{
    AliasConfig, DEFAULT_ALIAS_REQUESTS, GateConfig, parse_tags_file,
};
use crate::reflector::verdicts::{self, JsonVerdicts, evaluate};
use image_update_registry::{RegistryClient, Repository};

/// Run `policy`.
///
/// # Errors
/// Bad options (usage errors), an unreadable tags file, a registry failure,
/// or no qualifying tag.
pub(crate) fn run(args: &PolicyCommandArgs) -> Result<Exit, Error> {
    let rendered = if let Some(file) = &args.policy.tags_file {
        offline(args, file)?
    } else {
        let spec = args
            .policy
            .to_spec()
            .map_err(|e| Error::Usage(e.to_string()))?;
        let repo = Repository::parse(&args.image).map_err(|e| Error::Usage(e.to_string()))?;
        let settings = client_settings(&args.registry.fetch_settings()?)?;
        let own = GateConfig {
            alias: args.alias.clone().map(|tag| AliasConfig {
                tag,
                platform: args.alias_platform.clone(),
                max_requests: DEFAULT_ALIAS_REQUESTS,
            }),
            ..GateConfig::default()
        };
        let chain = gate::chain(&settings, &repo, &own, &args.image, &mut Gates::default())
            .map_err(Error::Usage)?;
        let client = RegistryClient::new(settings).map_err(|e| Error::Registry(Box::new(e)))?;
        let tags = client
            .list_tags(&repo)
            .map_err(|e| Error::failed(format!("cannot list the tags of {repo}"), e))?;
        let top = if chain.is_empty() {
            args.policy.top
        } else {
            args.policy.top.max(chain.candidates_needed())
        };
        let (mut selection, latest) = choose(&client, &repo, &args.image, &spec, &tags, None, top)
            .map_err(|e| Error::Other(Box::new(e)))?;
        let mut digest = Some(latest.digest).filter(|d| !d.is_empty());
        let provenance = |tag: &str, digest: Option<&str>, gate: Option<&gate::GateOutcome>| {
            args.registry.provenance.then(|| {
                let image = crate::policies::ImageRef::new(&args.image, tag)
                    .with_digest(digest.unwrap_or_default());
                crate::provenance::of_image(&client, &repo, &image, spec.platforms().first(), gate)
            })
        };
        if chain.is_empty() {
            let choice = Choice::Tag {
                digest: digest.as_deref(),
            };
            let text = rendered_selection(args, &spec, &selection, choice, None)?;
            with_provenance(
                args,
                text,
                provenance(&selection.tag, digest.as_deref(), None),
            )?
        } else {
            // Every candidate shown gets its verdict; the chosen tag is the
            // gate's (none: the verdicts are shown, then the error).
            let verdicts = evaluate(
                &client,
                &repo,
                &args.image,
                &selection,
                &chain,
                args.policy.top,
            )
            .map_err(|e| Error::Other(Box::new(e)))?;
            let passed = gate::pass(&client, &repo, &args.image, &selection, &chain);
            let chosen = match &passed {
                Ok((tag, gated, _)) => {
                    selection.tag.clone_from(tag);
                    digest = Some(gated.clone());
                    Ok(tag.as_str())
                }
                Err(e) => Err(crate::diagnostic::one_line(e)),
            };
            selection.candidates.truncate(args.policy.top);
            // No candidate passed: no tag and no digest are named (the
            // selection's pick was not verified, and a script reading
            // `.tag` must not deploy it).
            let choice = if passed.is_ok() {
                Choice::Tag {
                    digest: digest.as_deref(),
                }
            } else {
                Choice::NonePassed
            };
            let mut text = match args.policy.output {
                OutputFormat::Text => {
                    let mut text = rendered_selection(args, &spec, &selection, choice, None)?;
                    text.push_str(&verdicts::render_text(&chain, &verdicts, chosen.clone()));
                    text
                }
                OutputFormat::Json => {
                    let view =
                        serde_json::to_value(JsonVerdicts::new(&chain, &verdicts, chosen.clone()))
                            .map_err(|e| Error::Internal(e.to_string()))?;
                    rendered_selection(args, &spec, &selection, choice, Some(view))?
                }
            };
            if let Err(e) = passed {
                // The report is printed, then the run fails as `update`
                // would.
                print(&std::mem::take(&mut text))?;
                return Err(Error::Other(Box::new(e)));
            }
            let found = passed.as_ref().ok().map(|(_, _, g)| g);
            with_provenance(
                args,
                text,
                provenance(&selection.tag, digest.as_deref(), found),
            )?
        }
    };
    print(&rendered)?;
    Ok(Exit::Success)
}

/// The report of a policy over the tags of `file` (`--tags-file`): no registry, so no gate.
fn offline(args: &PolicyCommandArgs, file: &std::path::Path) -> Result<String, Error> {
    let gate_flag = args
        .registry
        .supply_chain
        .first_given()
        .or(args.alias.as_ref().map(|_| "--alias"));
    if let Some(flag) = gate_flag {
        return Err(Error::Usage(format!(
            "{flag} needs the registry: it cannot be checked with --tags-file"
        )));
    }
    let text = crate::input::read_text(file, args.max_file_size)?;
    let tags = parse_tags_file(&text).map_err(|e| {
        Error::invalid(vec![
            Diagnostic::error(e.to_string()).at(Location::new(crate::input::name(file), None)),
        ])
    })?;
    match evaluate_offline(&args.policy, &args.image, tags) {
        Ok(rendered) => Ok(rendered),
        Err(OfflineError::Args(e)) => Err(Error::Usage(e.to_string())),
        Err(OfflineError::Select(e)) => Err(Error::Other(Box::new(e))),
        Err(e) => Err(Error::Internal(e.to_string())),
    }
}

/// The selection's report in the chosen format.
fn rendered_selection(
    args: &PolicyCommandArgs,
    spec: &crate::reflector::selection::PolicySpec,
    selection: &crate::reflector::selection::Selection,
    choice: Choice<'_>,
    supply_chain: Option<serde_json::Value>,
) -> Result<String, Error> {
    Ok(match args.policy.output {
        OutputFormat::Text => render_text_with(&args.image, spec, selection, choice),
        OutputFormat::Json => render_json_with(&args.image, spec, selection, choice, supply_chain)
            .map_err(|e| Error::Internal(e.to_string()))?,
    })
}

/// The report with the chosen image's provenance (`--provenance`): JSON gets a `provenance`
/// field (the report's provenance shape, the image as `new`), text a block of lines.
fn with_provenance(
    args: &PolicyCommandArgs,
    mut rendered: String,
    provenance: Option<image_update_template::provenance::Provenance>,
) -> Result<String, Error> {
    let Some(p) = provenance else {
        return Ok(rendered);
    };
    match args.policy.output {
        OutputFormat::Json => {
            let mut value: serde_json::Value =
                serde_json::from_str(&rendered).map_err(|e| Error::Internal(e.to_string()))?;
            if let Some(object) = value.as_object_mut() {
                object.insert(
                    "provenance".to_owned(),
                    serde_json::to_value(&p).map_err(|e| Error::Internal(e.to_string()))?,
                );
            }
            let text =
                serde_json::to_string_pretty(&value).map_err(|e| Error::Internal(e.to_string()))?;
            let mut out = crate::escape::json(text);
            out.push('\n');
            Ok(out)
        }
        OutputFormat::Text => {
            rendered.push_str(&crate::render::terminal::provenance_text(&p));
            Ok(rendered)
        }
    }
}

fn print(rendered: &str) -> Result<(), Error> {
    let mut out = super::stdio::stdout().lock();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the report",
            source,
        })
}
