//! The GitHub runner: what a container action's run looks like to it.
//!
//! The runner hands a container action its inputs as `INPUT_<NAME>`
//! variables ([`input_variable`]: the name in capitals, hyphens kept), and
//! names two files to append to: `GITHUB_OUTPUT` (`name=value` lines, or
//! `name<<DELIMITER` heredocs for multi-line values, [`output_entry`]) and
//! `GITHUB_STEP_SUMMARY` (Markdown, [`step_summary`]). Workflow commands on
//! stdout (`::warning file=PATH,line=L,col=C::MESSAGE`, [`command`]) become
//! annotations. Paths in outputs and annotations are relative to the
//! workspace.
//!
//! Everything the Action prints or writes is rendered here from the
//! [`Outcome`] ([`outputs`], [`log`], [`step_summary`]) or from the
//! [`Error`] that stopped the run ([`failure_commands`],
//! [`failure_step_summary`]).

use std::fmt::Write as _;
use std::path::{Component, Path};

use super::{Summary, Unit, change_text, fetched_line};
use crate::diagnostic::{Diagnostic, Location, Severity, one_line};
use crate::error::{Error, Part};
use crate::outcome::Outcome;

/// The outputs the Action writes, in the order it writes them.
pub const OUTPUTS: &[&str] = &[
    "changed",
    "changed-files",
    "changes",
    "commit-message",
    "summary",
];

/// The variable the runner passes input `name` in: `INPUT_` and the name in
/// capitals, spaces as `_`, hyphens kept.
#[must_use]
pub fn input_variable(name: &str) -> String {
    format!("INPUT_{}", name.to_uppercase().replace(' ', "_"))
}

/// The `GITHUB_OUTPUT` lines of a run: single-line values as `name=value`,
/// others as heredocs with a delimiter that does not occur in the value.
///
/// # Errors
/// A value that contains the fixed test delimiter; no random bytes.
pub(crate) fn outputs(
    outcome: &Outcome,
    workspace: &Path,
    delimiter: Option<&str>,
) -> Result<String, Error> {
    let changed_files: Vec<String> = outcome
        .files
        .iter()
        .map(|u| relative(workspace, &outcome.display(&u.rel)))
        .collect();
    let json = |what: &str, value: Result<String, serde_json::Error>| {
        value.map_err(|e| Error::Internal(format!("rendering the {what} output: {e}")))
    };
    let values = [
        ("changed", outcome.has_changes().to_string()),
        (
            "changed-files",
            json("changed-files", serde_json::to_string(&changed_files))?,
        ),
        (
            "changes",
            json("changes", serde_json::to_string(&outcome.report()))?,
        ),
        (
            "commit-message",
            outcome.commit_message.clone().unwrap_or_default(),
        ),
        ("summary", summary_line(outcome)),
    ];
    let mut out = String::new();
    for (name, value) in values {
        out.push_str(&output_entry(name, &value, delimiter)?);
    }
    Ok(out)
}

/// One `GITHUB_OUTPUT` entry.
///
/// # Errors
/// `value` contains the fixed delimiter; no random bytes could be had.
pub(crate) fn output_entry(
    name: &str,
    value: &str,
    delimiter: Option<&str>,
) -> Result<String, Error> {
    if !value.contains(['\n', '\r']) {
        return Ok(format!("{name}={value}\n"));
    }
    let delimiter = match delimiter {
        Some(fixed) if value.contains(fixed) => {
            return Err(Error::Internal(format!(
                "the value of output {name} contains its delimiter {fixed:?}"
            )));
        }
        Some(fixed) => fixed.to_owned(),
        None => loop {
            let candidate = random_delimiter()?;
            if !value.contains(&candidate) {
                break candidate;
            }
        },
    };
    Ok(format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"))
}

/// `ghadelimiter_` and 128 random bits in hex, as the runner's toolkit
/// makes them.
fn random_delimiter() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::failed("cannot get random bytes for an output delimiter", e))?;
    let mut out = String::from("ghadelimiter_");
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    Ok(out)
}

/// The one-line summary (output `summary`, the log's last line).
#[must_use]
pub(crate) fn summary_line(outcome: &Outcome) -> String {
    let summary = Summary::of(outcome);
    if outcome.held_back {
        return format!(
            "would update {} in {}, but wrote nothing: {} and fail-on-warnings is set",
            super::plural(summary.fields, "field", "fields"),
            super::plural(summary.files, "file", "files"),
            summary.warned()
        );
    }
    let mut line = if !outcome.has_changes() {
        match &outcome.suspended {
            Some(what) => format!("no changes: {what} is suspended"),
            None => "no changes".to_owned(),
        }
    } else {
        summary.changed(Unit::Files)
    };
    if summary.warnings > 0 {
        let _ = write!(line, " ({})", summary.warned());
    }
    line
}

/// The log on stdout: fetched policies, notes, one line per change, one
/// `::warning` per warning, the summary line.
#[must_use]
pub(crate) fn log(outcome: &Outcome, workspace: &Path) -> String {
    let mut out = String::new();
    for r in &outcome.fetched {
        let _ = writeln!(out, "{}", fetched_line(r));
    }
    for d in outcome
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Note)
    {
        out.push_str(&command(
            "notice",
            d.location.as_ref(),
            workspace,
            &with_hint(d),
        ));
    }
    for c in &outcome.changes {
        let _ = writeln!(
            out,
            "{}:{}:{}: {}",
            relative(workspace, &c.display),
            c.position.line,
            c.position.column,
            change_text(c, &c.new_value)
        );
    }
    for d in outcome.warnings() {
        out.push_str(&command(
            "warning",
            d.location.as_ref(),
            workspace,
            &with_hint(d),
        ));
    }
    out.push_str(&summary_line(outcome));
    out.push('\n');
    out
}

/// The Markdown appended to `GITHUB_STEP_SUMMARY`: the summary line, a
/// table of the changes (file, object, old, new, setter) and the warnings.
#[must_use]
pub(crate) fn step_summary(outcome: &Outcome, workspace: &Path) -> String {
    let mut md = String::from("## image-update\n\n");
    let _ = writeln!(md, "{}\n", markdown_text(&summary_line(outcome)));
    if outcome.has_changes() {
        md.push_str("| File | Object | Old | New | Setter |\n");
        md.push_str("| --- | --- | --- | --- | --- |\n");
        for c in &outcome.changes {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                code(&relative(workspace, &c.display)),
                markdown_text(&c.object.describe()),
                code(c.shown_old_value()),
                code(&c.new_value),
                code(&c.setter)
            );
        }
        md.push('\n');
    }
    let warnings: Vec<&Diagnostic> = outcome.warnings().collect();
    if !warnings.is_empty() {
        md.push_str("### Warnings\n\n");
        for d in warnings {
            let message = markdown_text(&with_hint(d));
            match &d.location {
                Some(at) => {
                    let _ = writeln!(
                        md,
                        "- {}: {message}",
                        code(&relative_location(workspace, at))
                    );
                }
                None => {
                    let _ = writeln!(md, "- {message}");
                }
            }
        }
        md.push('\n');
    }
    md
}

/// The lines that tell about an error that stopped the run, each with its
/// location when it has one.
fn failure_lines(error: &Error) -> Vec<(Option<&Location>, String)> {
    error
        .parts()
        .into_iter()
        .map(|part| match part {
            Part::Summary(summary) => (None, summary.to_owned()),
            Part::Located(d) => (d.location.as_ref(), with_hint(d)),
            Part::Failure(e) => (None, one_line(e)),
        })
        .collect()
}

/// The `::error` annotations of a run that stopped.
#[must_use]
pub(crate) fn failure_commands(error: &Error, workspace: &Path) -> String {
    failure_lines(error)
        .iter()
        .map(|(at, message)| command("error", *at, workspace, message))
        .collect()
}

/// The step summary of a run that stopped: nothing was written, and why.
#[must_use]
pub(crate) fn failure_step_summary(error: &Error, workspace: &Path) -> String {
    let mut md = String::from("## image-update\n\nThe run failed; nothing was written.\n\n");
    for (at, message) in failure_lines(error) {
        let line = match at {
            Some(at) => format!("{}: {message}", relative_location(workspace, at)),
            None => message,
        };
        let _ = writeln!(md, "- {}", markdown_text(&line));
    }
    md.push('\n');
    md
}

/// The diagnostic's message with its causes, and its hint on a line of its
/// own.
fn with_hint(d: &Diagnostic) -> String {
    match &d.hint {
        Some(hint) => format!("{}\nhint: {hint}", d.full_message()),
        None => d.full_message(),
    }
}

/// A workflow command line: `::KIND file=F,line=L,col=C::MESSAGE`, with the
/// file relative to the workspace and everything escaped as the runner
/// requires.
#[must_use]
pub(crate) fn command(
    kind: &str,
    location: Option<&Location>,
    workspace: &Path,
    message: &str,
) -> String {
    let mut properties = Vec::new();
    if let Some(at) = location.filter(|at| !at.path.is_empty()) {
        properties.push(format!(
            "file={}",
            escape_property(&relative(workspace, &at.path))
        ));
        if let Some(p) = at.position {
            properties.push(format!("line={}", p.line));
            properties.push(format!("col={}", p.column));
        }
    }
    let separator = if properties.is_empty() { "" } else { " " };
    format!(
        "::{kind}{separator}{}::{}\n",
        properties.join(","),
        escape_data(message)
    )
}

/// A workflow command's message: `%`, CR and LF escaped.
#[must_use]
pub(crate) fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: as [`escape_data`], and `:` and
/// `,` too.
#[must_use]
pub(crate) fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `path` relative to `workspace` with `/` separators when it lies under
/// it; otherwise as given.
#[must_use]
pub(crate) fn relative(workspace: &Path, path: &str) -> String {
    let p = Path::new(path);
    match p.strip_prefix(workspace) {
        Ok(rest) => {
            let parts: Vec<String> = rest
                .components()
                .filter(|c| !matches!(c, Component::CurDir))
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.is_empty() {
                ".".to_owned()
            } else {
                parts.join("/")
            }
        }
        Err(_) => path.to_owned(),
    }
}

/// `path:line:col` with the path relative to the workspace.
fn relative_location(workspace: &Path, at: &Location) -> String {
    let mut at = at.clone();
    at.path = relative(workspace, &at.path);
    at.to_string()
}

/// Text for Markdown: the characters that would start markup are escaped,
/// line breaks become `<br>`.
fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '&' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' => out.push_str("<br>"),
            '\r' => {}
            _ => out.push(ch),
        }
    }
    out
}

/// A Markdown code span that survives in a table cell (`|` escaped).
fn code(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let span = if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    };
    span.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_variables_keep_hyphens() {
        assert_eq!(input_variable("dry-run"), "INPUT_DRY-RUN");
        assert_eq!(input_variable("path"), "INPUT_PATH");
        assert_eq!(input_variable("a b"), "INPUT_A_B");
    }

    #[test]
    fn commands_escape_data_and_properties() {
        assert_eq!(escape_data("50% a\r\nb:c,d"), "50%25 a%0D%0Ab:c,d");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        let at = Location::new(
            "/ws/apps/a,b:c.yaml",
            Some(crate::text::Position { line: 3, column: 9 }),
        );
        assert_eq!(
            command("warning", Some(&at), Path::new("/ws"), "two\nlines"),
            "::warning file=apps/a%2Cb%3Ac.yaml,line=3,col=9::two%0Alines\n"
        );
        assert_eq!(
            command("error", None, Path::new("/ws"), "x"),
            "::error::x\n"
        );
    }

    #[test]
    fn paths_are_relative_to_the_workspace() {
        let ws = Path::new("/github/workspace");
        assert_eq!(
            relative(ws, "/github/workspace/./apps/a.yaml"),
            "apps/a.yaml"
        );
        assert_eq!(relative(ws, "/github/workspace"), ".");
        assert_eq!(relative(ws, "/elsewhere/a.yaml"), "/elsewhere/a.yaml");
        assert_eq!(relative(ws, "relative.yaml"), "relative.yaml");
    }

    #[test]
    fn multi_line_outputs_use_a_delimiter_not_in_the_value() {
        assert_eq!(output_entry("a", "one", None).unwrap(), "a=one\n");
        assert_eq!(
            output_entry("m", "x\ny", Some("EOF_1")).unwrap(),
            "m<<EOF_1\nx\ny\nEOF_1\n"
        );
        assert!(output_entry("m", "x\nEOF_1\n", Some("EOF_1")).is_err());
        let random = output_entry("m", "x\ny", None).unwrap();
        let first = random.lines().next().unwrap();
        let delimiter = first.strip_prefix("m<<ghadelimiter_").unwrap();
        assert_eq!(delimiter.len(), 32);
        assert!(random.ends_with(&format!("\nghadelimiter_{delimiter}\n")));
        assert_ne!(random, output_entry("m", "x\ny", None).unwrap());
    }

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(markdown_text("*x* <y>\nz"), "\\*x\\* \\<y\\><br>z");
    }
}
