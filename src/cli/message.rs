//! `image-update message`: render a commit message from a saved report, so
//! that CI can update in one step and commit in another. The same rendering
//! serves `update --commit-message-file`, the KRM function, the Action and
//! the Job ([`crate::render::message`]).

use crate::input::SizeLimit;
use std::io::Write;

use super::{Exit, MessageCommandArgs};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::render::report::Report;

/// Run `message`.
///
/// # Errors
/// Usage errors, an unreadable report or template, a report that is not a
/// report, a template that fails (Flux's messages), stdout that cannot be
/// written.
pub(crate) fn run(args: &MessageCommandArgs) -> Result<Exit, Error> {
    let stdin = std::path::Path::new("-");
    if args.report == stdin && args.message.template.as_deref() == Some(stdin) {
        return Err(Error::Usage(
            "--report - and --template - both read stdin; pick one".to_owned(),
        ));
    }
    let automation = args
        .automation
        .as_deref()
        .map(|file| crate::automation_file::read_file(file, args.max_file_size))
        .transpose()?;
    let config = args
        .message
        .message_config(automation.as_ref(), args.max_file_size)?;
    let report = read_report(&args.report, args.max_file_size)?;
    let message = config.render(&report)?;
    let paint = super::stderr_paint(super::ColorChoice::from_args());
    let warnings: String = config
        .warnings()
        .iter()
        .map(|w| crate::render::terminal::diagnostic(w, paint))
        .collect();
    // One write, so that lines of concurrent processes do not interleave.
    let _ = super::stdio::stderr().write_all(warnings.as_bytes());
    let mut out = super::stdio::stdout().lock();
    out.write_all(message.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the message",
            source,
        })?;
    Ok(Exit::Success)
}

/// A report saved by `update --report` (JSON or YAML).
fn read_report(file: &std::path::Path, limit: SizeLimit) -> Result<Report, Error> {
    let origin = crate::input::name(file);
    let text = crate::input::read_text(file, limit)?;
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
