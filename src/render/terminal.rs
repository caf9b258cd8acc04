//! A person at a terminal (or a log): the lines `update` and `job` print on
//! stderr, the error of a run that stopped, and `--diff`.
//!
//! * a change: `path:line:col: OLD -> NEW (SETTER)` ([`change_line`]);
//! * a diagnostic: `path:line:col: warning: message`, then `  hint: ...`
//!   ([`diagnostic`]);
//! * an error: located problems as diagnostics, anything else as `error:
//!   message` and one `  caused by: ...` line per cause ([`error`]);
//! * the summary: `updated 3 fields in 2 files (1 warning)` ([`Lines::summary`]);
//! * the Job's progress ([`job_event`]).
//!
//! Colour is a [`Paint`]: ANSI codes or none, decided by the front end.

use std::fmt::Write as _;

use super::{Summary, Unit, change_text, fetched_line};
use crate::diagnostic::{Diagnostic, Severity};
use crate::error::{Error, Part};
use crate::outcome::{Change, Outcome};
use crate::updater::tree::FileUpdate;

/// ANSI colours, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Paint(pub bool);

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// `error`, `warning` or `note`, coloured.
    #[must_use]
    pub(crate) fn severity(self, severity: Severity) -> String {
        let code = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Note => "1;36",
        };
        self.wrap(code, severity.as_str())
    }

    /// A new value, coloured.
    #[must_use]
    pub(crate) fn added(self, text: &str) -> String {
        self.wrap("32", text)
    }

    /// A removed value or diff line, coloured.
    #[must_use]
    pub(crate) fn removed(self, text: &str) -> String {
        self.wrap("31", text)
    }

    /// A hint or diff hunk header, coloured.
    #[must_use]
    pub(crate) fn aside(self, text: &str) -> String {
        self.wrap("36", text)
    }
}

/// One diagnostic: `path:line:col: severity: message`, then `  hint: ...`
/// when it has one.
#[must_use]
pub(crate) fn diagnostic(d: &Diagnostic, paint: Paint) -> String {
    let mut out = String::new();
    if let Some(location) = &d.location {
        let _ = write!(out, "{location}: ");
    }
    let _ = writeln!(out, "{}: {}", paint.severity(d.severity), d.full_message());
    if let Some(hint) = &d.hint {
        let _ = writeln!(out, "  {}: {hint}", paint.aside("hint"));
    }
    out
}

/// The error of a run that stopped: located problems as `path:line:col:
/// error: message` (each with its hint), anything else as `error: message`
/// followed by one `  caused by: ...` line per cause.
#[must_use]
pub(crate) fn error(error: &Error, paint: Paint) -> String {
    let label = paint.severity(Severity::Error);
    let mut out = String::new();
    for part in error.parts() {
        match part {
            Part::Summary(summary) => {
                let _ = writeln!(out, "{label}: {summary}");
            }
            Part::Located(d) => out.push_str(&diagnostic(d, paint)),
            Part::Failure(e) => {
                let mut last = e.to_string();
                let _ = writeln!(out, "{label}: {last}");
                let mut next = std::error::Error::source(e);
                while let Some(cause) = next {
                    let text = cause.to_string();
                    // A message that already quotes its cause adds no line.
                    if !last.ends_with(&text) {
                        let _ = writeln!(out, "  caused by: {text}");
                    }
                    last = text;
                    next = cause.source();
                }
            }
        }
    }
    out
}

/// One change: `path:line:col: OLD -> NEW (SETTER)`, the path as the user
/// knows the file.
#[must_use]
pub(crate) fn change_line(c: &Change, paint: Paint) -> String {
    format!(
        "{}:{}:{}: {}\n",
        c.display,
        c.position.line,
        c.position.column,
        change_text(c, &paint.added(&c.new_value))
    )
}

/// The stderr lines of `update`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lines {
    /// Only warnings and errors (`-q`).
    pub quiet: bool,
    /// Also skipped files and counts (`-v`).
    pub verbose: bool,
    /// `--check`: the pending changes are printed even with `-q`, so that a
    /// CI log says why it failed.
    pub check: bool,
    pub paint: Paint,
}

impl Lines {
    /// Everything before the diff: what was fetched, notes, skipped files
    /// (`-v`), one line per change, one per warning.
    #[must_use]
    pub(crate) fn before(&self, outcome: &Outcome) -> String {
        let mut out = String::new();
        if !self.quiet {
            for r in &outcome.fetched {
                let _ = writeln!(out, "{}", fetched_line(r));
            }
            for d in outcome
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Note)
            {
                out.push_str(&diagnostic(d, self.paint));
            }
        }
        if self.verbose {
            for s in &outcome.stats.skipped {
                let _ = writeln!(out, "{}: skipped: {}", outcome.display(&s.rel), s.reason);
            }
        }
        if !self.quiet || self.check {
            for c in &outcome.changes {
                out.push_str(&change_line(c, self.paint));
            }
        }
        for d in outcome.warnings() {
            out.push_str(&diagnostic(d, self.paint));
        }
        out
    }

    /// The last line: `updated 3 fields in 2 files (1 warning)`, `no
    /// changes`; with `-v` the files read; when `--fail-on-warnings` held
    /// every write back, an error saying so. `None` with `-q`, unless
    /// writes were held back.
    #[must_use]
    pub(crate) fn summary(&self, outcome: &Outcome) -> Option<String> {
        if self.quiet && !outcome.held_back {
            return None;
        }
        let summary = Summary::of(outcome);
        let mut line = if summary.fields == 0 {
            "no changes".to_owned()
        } else {
            summary.changed(Unit::Files)
        };
        if summary.warnings > 0 {
            let _ = write!(line, " ({})", summary.warned());
        }
        if self.verbose {
            let _ = write!(
                line,
                "; {} read, {} with markers",
                super::plural(outcome.stats.files_read, "file", "files"),
                outcome.stats.files_screened
            );
        }
        if outcome.held_back {
            line = format!(
                "{}: {line}; nothing was written (--fail-on-warnings)",
                self.paint.severity(Severity::Error)
            );
        }
        line.push('\n');
        Some(line)
    }
}

/// The unified diff of one changed file, its paths `a/PATH` and `b/PATH`.
#[must_use]
pub(crate) fn diff(update: &FileUpdate, path: &str, paint: Paint) -> String {
    let old = update.old_text.as_deref().unwrap_or("");
    let text = similar::TextDiff::from_lines(old, &update.new_text)
        .unified_diff()
        .context_radius(3)
        .header(
            &if update.created {
                "/dev/null".to_owned()
            } else {
                format!("a/{path}")
            },
            &format!("b/{path}"),
        )
        .to_string();
    if !paint.0 {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, eol) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let painted = if line.starts_with("+++") || line.starts_with("---") {
            body.to_owned()
        } else if line.starts_with('+') {
            paint.added(body)
        } else if line.starts_with('-') {
            paint.removed(body)
        } else if line.starts_with("@@") {
            paint.aside(body)
        } else {
            body.to_owned()
        };
        out.push_str(&painted);
        out.push_str(eol);
    }
    out
}

/// The line (or lines) the Job prints on stderr for `event`.
#[cfg(feature = "job")]
#[must_use]
pub(crate) fn job_event(event: &crate::job::Event<'_>, paint: Paint) -> String {
    use crate::job::Event;
    match event {
        Event::Running { reason } => format!("running: {reason}\n"),
        Event::Skipped => "nothing changed since the last run: skipped\n".to_owned(),
        Event::Cloned { url, revision, .. } => format!("cloned {url} at {revision}\n"),
        Event::Updated(_) => String::new(),
        Event::Warning(d) => diagnostic(d, paint),
        Event::Suspended { what } => format!("{what} is suspended: nothing to do\n"),
        Event::NothingToChange => "no marked field needs a change: nothing to do\n".to_owned(),
        Event::TreeUnchanged => "the update left the tree as it was: nothing to do\n".to_owned(),
        Event::Pushed {
            commit,
            branch,
            attempts,
        } => format!("pushed {commit} to {branch} ({attempts} attempt(s))\n"),
        Event::RaceLeftNothing { tip } => {
            format!("after a lost race, the new tip {tip} needs no change: nothing to do\n")
        }
        Event::HeadUpToDate { branch } => {
            format!("{branch} already holds this change: nothing pushed\n")
        }
        Event::PullRequest {
            noun,
            url,
            number,
            action,
        } => {
            let sign = if *noun == "merge request" { '!' } else { '#' };
            format!("{noun} {sign}{number} {action}: {url}\n")
        }
        Event::PullRequestWarning { message } => format!(
            "image-update: {}: {message}\n",
            paint.severity(Severity::Warning)
        ),
        Event::StateNotWritten { path, error } => format!(
            "image-update: {}: cannot write the state file {}: {error}\n",
            paint.severity(Severity::Warning),
            path.display()
        ),
    }
}

/// The line the Job prints when a signal ended it.
#[cfg(feature = "job")]
#[must_use]
pub(crate) fn job_interrupted(signal: i32) -> String {
    format!(
        "image-update: interrupted by {}; the work tree was removed\n",
        crate::sink::interrupt::name(signal)
    )
}

#[cfg(feature = "job")]
/// `error: MESSAGE: CAUSE: ...` on one line, for an error whose causes read
/// best inline (the Job's).
#[must_use]
pub(crate) fn error_line(error: &(dyn std::error::Error + 'static), paint: Paint) -> String {
    format!(
        "{}: {}\n",
        paint.severity(Severity::Error),
        crate::diagnostic::one_line(error)
    )
}
