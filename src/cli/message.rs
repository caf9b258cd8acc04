//! `image-update message`: render a commit message from a saved report, so
//! that CI can update in one step and commit in another. The same rendering
//! serves `update --commit-message-file`, the KRM function, the Action and
//! the Job ([`crate::message`]).

use crate::input::SizeLimit;
use std::io::Write;

use super::{Exit, MessageArgs, MessageCommandArgs};
use crate::automation::Automation;
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::message::MessageConfig;
use crate::render::report::Report;

/// Run `message`.
///
/// # Errors
/// Usage errors, an unreadable report or template, a report that is not a
/// report, a template that fails (Flux's messages), stdout that cannot be
/// written.
pub fn run(args: &MessageCommandArgs) -> Result<Exit, Error> {
    let stdin = std::path::Path::new("-");
    if args.report == stdin && args.message.template.as_deref() == Some(stdin) {
        return Err(Error::Usage(
            "--report - and --template - both read stdin; pick one".to_owned(),
        ));
    }
    let automation = args
        .automation
        .as_deref()
        .map(|file| super::update::read_automation(file, SizeLimit::default()))
        .transpose()?;
    let config = message_config(&args.message, automation.as_ref())?;
    let report = read_report(&args.report)?;
    let message = config
        .render(&report)
        .map_err(|e| Error::Other(Box::new(e)))?;
    let mut out = std::io::stdout().lock();
    out.write_all(message.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the message",
            source,
        })?;
    Ok(Exit::Success)
}

/// The message settings from the flags, over the automation's.
///
/// # Errors
/// A malformed `--commit-value` or `--automation-object`; an unreadable
/// template file.
pub fn message_config(
    args: &MessageArgs,
    automation: Option<&Automation>,
) -> Result<MessageConfig, Error> {
    let mut config = automation
        .map(MessageConfig::from_automation)
        .unwrap_or_default();
    if let Some(file) = &args.template {
        config.template = Some(crate::input::read_text(file, SizeLimit::default())?);
    }
    for pair in &args.values {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--commit-value {pair:?}: expected KEY=VALUE")))?;
        config.values.insert(k.to_owned(), v.to_owned());
    }
    if config.automation_object.is_none()
        && let Some(object) = &args.automation_object
    {
        let (ns, name) = object
            .split_once('/')
            .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains('/'))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--automation-object {object:?}: expected NAMESPACE/NAME"
                ))
            })?;
        config.automation_object = Some((ns.to_owned(), name.to_owned()));
    }
    Ok(config)
}

/// A report saved by `update --report` (JSON or YAML).
fn read_report(file: &std::path::Path) -> Result<Report, Error> {
    let origin = crate::input::name(file);
    let text = crate::input::read_text(file, SizeLimit::default())?;
    let document = crate::yaml::parse_one(&text).map_err(|e| {
        Error::invalid(vec![
            Diagnostic::error(format!("not valid JSON or YAML: {}", e.message))
                .at(Location::new(origin.clone(), e.position)),
        ])
    })?;
    serde_json::from_value(document.value).map_err(|e| {
        Error::invalid(vec![
            Diagnostic::error("not an image-update report (ResultV2)")
                .at(Location::new(origin, None))
                .caused_by(e),
        ])
    })
}
