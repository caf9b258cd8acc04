//! `image-update update [PATH]`: the directory mode. Flags become an
//! [`UpdateConfig`](crate::operation::UpdateConfig); the outcome becomes stderr lines, a diff or outputs on
//! stdout, and an exit status.

use std::io::Write;
use std::path::Path;

use super::{Exit, UpdateArgs};
use crate::error::Error;
use crate::operation::config::Observer;
use crate::operation::{self, Input};
use crate::outcome::{Mode, Outcome};
use crate::render::progress::{MonotonicClock, ProgressRenderer, Style};
use crate::render::terminal::{self, Lines, Paint};

/// Run `update`.
///
/// # Errors
/// Usage errors for malformed flags; whatever the operation fails with;
/// stdout that cannot be written.
pub(crate) fn run(args: &UpdateArgs) -> Result<Exit, Error> {
    let mut config = args.config()?;
    let lines = Lines {
        quiet: args.quiet,
        verbose: args.verbose,
        check: config.mode == Mode::Check,
        paint: super::stderr_paint(args.color),
    };
    // Everything the user asked to see comes before any file is renamed
    // into place: a closed pipe or a full disk then changes nothing.
    let mut show = |outcome: &Outcome| -> Result<(), Error> {
        let _ = super::stdio::stderr().write_all(lines.before(outcome).as_bytes());
        if args.diff {
            use std::io::IsTerminal;
            let paint = Paint(args.color.enabled(super::stdio::stdout().is_terminal()));
            print_diffs(outcome, paint).map_err(|source| Error::Stdout {
                what: "the diff",
                source,
            })?;
        }
        for output in &outcome.stdout {
            let mut out = super::stdio::stdout().lock();
            out.write_all(output.text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|source| Error::Stdout {
                    what: output.what,
                    source,
                })?;
        }
        Ok(())
    };
    let outcome = match config.fetch.as_mut().filter(|_| !args.quiet) {
        Some(fetch) => {
            use std::io::IsTerminal;
            let progress = std::sync::Arc::new(ProgressRenderer::new(
                super::stdio::stderr(),
                MonotonicClock::new(),
                Style::for_terminal(super::stdio::stderr().is_terminal()),
            ));
            fetch.observer = Some(Observer(progress.clone()));
            // The fetch is over when the outcome is shown: its line goes first.
            let mut show = |outcome: &Outcome| {
                progress.finish();
                show(outcome)
            };
            progress.during(|| operation::run_then(&config, Input::Tree(&args.path), &mut show))?
        }
        None => operation::run_then(&config, Input::Tree(&args.path), &mut show)?,
    };
    if let Some(line) = lines.summary(&outcome) {
        let _ = super::stdio::stderr().write_all(line.as_bytes());
    }
    let exit = if outcome.held_back {
        Exit::Failed
    } else if config.mode == Mode::Check && outcome.has_changes() {
        Exit::ChangesPending
    } else {
        Exit::Success
    };
    crate::teardown::release((outcome, config));
    Ok(exit)
}

/// A unified diff of every changed file on stdout, with the paths the
/// stderr lines use when the tree lies below the current directory (so
/// `git apply` works from where the command ran), else paths relative to
/// the tree.
fn print_diffs(outcome: &Outcome, paint: Paint) -> std::io::Result<()> {
    let mut out = super::stdio::stdout().lock();
    for u in &outcome.files {
        let shown = outcome.display(&u.rel);
        let path = if Path::new(&shown).is_relative() {
            shown
        } else {
            u.rel.clone()
        };
        out.write_all(terminal::diff(u, &path, paint).as_bytes())?;
    }
    out.flush()
}
