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
//!
//! Values from the input are escaped ([`super::escape()`]) in every line of
//! the log, in a command's message and `file` property (then escaped as
//! the runner's toolkit escapes them, [`escape_data`], [`escape_property`])
//! and in the step summary's Markdown, so that no value starts a line, a
//! workflow command or markup of its own. (A file whose name holds a
//! control character is named escaped, so its annotation is not linked to
//! it.) `GITHUB_OUTPUT` values are data, kept exact: a multi-line one goes
//! in a heredoc whose delimiter it does not contain ([`output_entry`]), and
//! the JSON ones are JSON.

use std::fmt::Write as _;
use std::path::{Component, Path};

use super::{Summary, Unit, change_text, fetched_line};
use crate::diagnostic::{Diagnostic, Location, Severity, one_line};
use crate::error::{Error, Part};
use crate::escape::{Shown, escape, line_start};
use crate::outcome::Outcome;

/// The outputs the Action writes, in the order it writes them (the last
/// five only with `pull-request`: [`request_outputs`]).
pub const OUTPUTS: &[&str] = &[
    "changed",
    "changed-files",
    "changes",
    "commit-message",
    "summary",
    "pull-request-url",
    "pull-request-number",
    "pull-request-action",
    "pull-request-branch",
    "commit",
];

/// What a run with `pull-request` proposed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Proposed {
    /// `pull request` or `merge request`.
    pub noun: String,
    /// The request's web page; empty when there is none.
    pub url: String,
    /// Its number, when there is one.
    pub number: Option<u64>,
    /// `created`, `updated`, `unchanged`, `reopened` or `closed`; empty
    /// when there is no request.
    pub action: String,
    /// The head branch.
    pub branch: String,
    /// The commit pushed to it; empty when nothing was pushed.
    pub commit: String,
    /// What failed once the request existed (labels, reviewers...).
    pub warnings: Vec<String>,
}

/// The request's `GITHUB_OUTPUT` lines: `pull-request-url`,
/// `pull-request-number`, `pull-request-action`, `pull-request-branch`,
/// `commit` (each empty when there is nothing to say).
///
/// # Errors
/// As [`output_entry`].
pub(crate) fn request_outputs(
    proposed: &Proposed,
    delimiter: Option<&str>,
) -> Result<String, Error> {
    let number = proposed.number.map(|n| n.to_string()).unwrap_or_default();
    let values = [
        ("pull-request-url", proposed.url.as_str()),
        ("pull-request-number", number.as_str()),
        ("pull-request-action", proposed.action.as_str()),
        ("pull-request-branch", proposed.branch.as_str()),
        ("commit", proposed.commit.as_str()),
    ];
    let mut out = String::new();
    for (name, value) in values {
        out.push_str(&output_entry(name, value, delimiter)?);
    }
    Ok(out)
}

/// The request's lines in the log: what became of it, and a `::warning`
/// per failed call once it existed.
#[must_use]
pub(crate) fn request_log(proposed: &Proposed, workspace: &Path) -> String {
    let mut out = String::new();
    match proposed.number {
        Some(number) => {
            let _ = writeln!(
                out,
                "{} #{number} {}: {}",
                Shown(&proposed.noun),
                Shown(&proposed.action),
                Shown(&proposed.url)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "no {} is open from {}",
                Shown(&proposed.noun),
                Shown(&proposed.branch)
            );
        }
    }
    for warning in &proposed.warnings {
        out.push_str(&command("warning", None, workspace, warning, None));
    }
    out
}

/// The request's paragraph of the step summary.
#[must_use]
pub(crate) fn request_summary(proposed: &Proposed) -> String {
    let noun = markdown_text(&proposed.noun);
    let branch = code(&proposed.branch);
    let mut md = match proposed.number {
        Some(number) => {
            let mut md = String::new();
            let mut chars = noun.chars();
            if let Some(first) = chars.next() {
                md.extend(first.to_uppercase());
                md.push_str(chars.as_str());
            }
            let _ = write!(
                md,
                " [#{number}]({}) {} (branch {branch}",
                escape(&proposed.url).replace(['(', ')', ' '], ""),
                markdown_text(&proposed.action)
            );
            if !proposed.commit.is_empty() {
                let _ = write!(md, ", commit {}", code(&proposed.commit));
            }
            md.push_str(").\n\n");
            md
        }
        None => format!("No {noun} is open from {branch}.\n\n"),
    };
    for warning in &proposed.warnings {
        let _ = writeln!(md, "- {}", markdown_text(warning));
    }
    if !proposed.warnings.is_empty() {
        md.push('\n');
    }
    md
}

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

/// The one-line summary (output `summary`, the log's last line), its
/// values escaped.
#[must_use]
pub(crate) fn summary_line(outcome: &Outcome) -> String {
    let summary = Summary::of(outcome);
    if outcome.held_back {
        return summary.held_back("fail-on-warnings");
    }
    let mut line = if !outcome.has_changes() {
        match &outcome.suspended {
            Some(what) => format!("no changes: {} is suspended", Shown(what)),
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
        out.push_str(&diagnostic_command("notice", d, workspace));
    }
    for c in &outcome.changes {
        let _ = writeln!(
            out,
            "{}:{}:{}: {}",
            line_start(&relative(workspace, &c.display)),
            c.position.line,
            c.position.column,
            change_text(c, &escape(&c.new_value))
        );
    }
    for d in outcome.warnings() {
        out.push_str(&diagnostic_command("warning", d, workspace));
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
    md.push_str(&provenance_summary(outcome));
    let warnings: Vec<&Diagnostic> = outcome.warnings().collect();
    if !warnings.is_empty() {
        md.push_str("### Warnings\n\n");
        for d in warnings {
            let message = markdown_message(&d.full_message(), d.hint.as_deref());
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

/// The step summary's provenance (when gathered): per distinct old -> new image, the source's
/// compare or commit link, the signer and the notes. Values from images are code spans; links
/// are only those `provenance::links` built.
fn provenance_summary(outcome: &Outcome) -> String {
    let mut md = String::new();
    let mut seen = std::collections::HashSet::new();
    for c in &outcome.changes {
        let key = (c.old_value.clone(), c.new_value.clone(), c.setter.clone());
        let Some(p) = outcome.provenance.get(&key) else {
            continue;
        };
        if !seen.insert((c.old_value.as_str(), c.new_value.as_str())) {
            continue;
        }
        if md.is_empty() {
            md.push_str("### Provenance\n\n");
        }
        let _ = write!(
            md,
            "- {} → {}",
            code(c.shown_old_value()),
            code(&c.new_value)
        );
        if !p.compare_url.is_empty() {
            let _ = write!(md, ": [compare]({})", p.compare_url);
        } else if !p.commit_url.is_empty() {
            let _ = write!(md, ": [commit]({})", p.commit_url);
        } else if !p.source_url.is_empty() {
            let _ = write!(md, ": <{}>", p.source_url);
        }
        if let Some(who) = p.signer.describe(code) {
            let _ = write!(md, "; signed by {who}");
        }
        md.push('\n');
        for note in &p.notes {
            let _ = writeln!(md, "  - {}", code(note));
        }
    }
    if !md.is_empty() {
        md.push('\n');
    }
    md
}

/// One thing to tell about an error that stopped the run: its location
/// when it has one, its message, its hint.
type FailureLine<'a> = (Option<&'a Location>, String, Option<&'a str>);

/// The lines that tell about an error that stopped the run.
fn failure_lines(error: &Error) -> Vec<FailureLine<'_>> {
    error
        .parts()
        .into_iter()
        .map(|part| match part {
            Part::Summary(summary) => (None, summary.to_owned(), None),
            Part::Located(d) => (d.location.as_ref(), d.full_message(), d.hint.as_deref()),
            Part::Failure(e) => (None, one_line(e), None),
        })
        .collect()
}

/// The `::error` annotations of a run that stopped.
#[must_use]
pub(crate) fn failure_commands(error: &Error, workspace: &Path) -> String {
    failure_lines(error)
        .iter()
        .map(|(at, message, hint)| command("error", *at, workspace, message, *hint))
        .collect()
}

/// The step summary of a run that stopped: nothing was written, and why.
#[must_use]
pub(crate) fn failure_step_summary(error: &Error, workspace: &Path) -> String {
    let mut md = String::from("## image-update\n\nThe run failed; nothing was written.\n\n");
    for (at, message, hint) in failure_lines(error) {
        md.push_str("- ");
        if let Some(at) = at {
            let _ = write!(md, "{}: ", markdown_text(&relative_location(workspace, at)));
        }
        md.push_str(&markdown_message(&message, hint));
        md.push('\n');
    }
    md.push('\n');
    md
}

/// A diagnostic's annotation: its message with its causes, and its hint.
fn diagnostic_command(kind: &str, d: &Diagnostic, workspace: &Path) -> String {
    command(
        kind,
        d.location.as_ref(),
        workspace,
        &d.full_message(),
        d.hint.as_deref(),
    )
}

/// A message and its hint in Markdown, the hint after a line break.
fn markdown_message(message: &str, hint: Option<&str>) -> String {
    let mut md = markdown_text(message);
    if let Some(hint) = hint {
        let _ = write!(md, "<br>hint: {}", markdown_text(hint));
    }
    md
}

/// A workflow command line: `::KIND file=F,line=L,col=C::MESSAGE`, with the
/// file relative to the workspace, the file and the message (and the hint,
/// on a line of its own) escaped ([`super::escape()`]), and everything
/// escaped as the runner requires.
#[must_use]
pub(crate) fn command(
    kind: &str,
    location: Option<&Location>,
    workspace: &Path,
    message: &str,
    hint: Option<&str>,
) -> String {
    let mut properties = Vec::new();
    if let Some(at) = location.filter(|at| !at.path.is_empty()) {
        properties.push(format!(
            "file={}",
            escape_property(&escape(&relative(workspace, &at.path)))
        ));
        if let Some(p) = at.position {
            properties.push(format!("line={}", p.line));
            properties.push(format!("col={}", p.column));
        }
    }
    let separator = if properties.is_empty() { "" } else { " " };
    let mut data = escape(message).into_owned();
    if let Some(hint) = hint {
        let _ = write!(data, "\nhint: {}", Shown(hint));
    }
    format!(
        "::{kind}{separator}{}::{}\n",
        properties.join(","),
        escape_data(&data)
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

/// Text for Markdown: escaped ([`super::escape()`]: one line, no controls),
/// then the characters that would start markup escaped.
fn markdown_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in escape(text).chars() {
        if matches!(
            ch,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '&'
        ) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// A Markdown code span that survives in a table cell (`|` escaped), its
/// text escaped ([`super::escape()`]).
fn code(text: &str) -> String {
    let text = escape(text);
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

    /// Each distinct image change's provenance: its best link, the signer, the notes as code.
    #[test]
    fn step_summary_shows_provenance() {
        use image_update_template::provenance::{Provenance, Signer};
        let change = crate::outcome::Change {
            file: "a.yaml".into(),
            display: "/ws/a.yaml".into(),
            object: crate::object::ObjectId::default(),
            object_index: 0,
            index: None,
            field_path: "image".into(),
            old_value: "ghcr.io/acme/web:1.4.2".into(),
            new_value: "ghcr.io/acme/web:1.5.0".into(),
            setter: "apps:web".into(),
            position: crate::text::Position { line: 1, column: 8 },
        };
        let mut outcome = Outcome {
            changes: vec![change.clone(), change.clone()],
            ..Outcome::default()
        };
        outcome.provenance.insert(
            (change.old_value, change.new_value, change.setter),
            Provenance {
                compare_url: "https://github.com/acme/web/compare/v1.4.2...v1.5.0".into(),
                signer: Signer {
                    kind: "key".into(),
                    name: "cosign.pub".into(),
                    fingerprint: "sha256:ab".into(),
                    ..Signer::default()
                },
                notes: vec!["<b>@team</b>".into()],
                ..Provenance::default()
            },
        );
        let md = step_summary(&outcome, Path::new("/ws"));
        assert!(
            md.contains(
                "### Provenance\n\n- `ghcr.io/acme/web:1.4.2` → `ghcr.io/acme/web:1.5.0`: [compare](https://github.com/acme/web/compare/v1.4.2...v1.5.0); signed by key `cosign.pub` `sha256:ab`\n  - `<b>@team</b>`\n\n"
            ),
            "{md}"
        );
        assert_eq!(md.matches("- `ghcr.io").count(), 1, "{md}");
    }

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
            command("warning", Some(&at), Path::new("/ws"), "50%", Some("two")),
            "::warning file=apps/a%2Cb%3Ac.yaml,line=3,col=9::50%25%0Ahint: two\n"
        );
        assert_eq!(
            command("error", None, Path::new("/ws"), "x", None),
            "::error::x\n"
        );
        // A value from the input cannot end the command or start another.
        let forged = Location::new("/ws/a\n::error title=F::x\u{1b}.yaml", None);
        assert_eq!(
            command(
                "warning",
                Some(&forged),
                Path::new("/ws"),
                "web\n::error title=F::forged\r\u{202e}",
                Some("h\n::notice::n")
            ),
            "::warning file=a\\n%3A%3Aerror title=F%3A%3Ax\\x1b.yaml::\
             web\\n::error title=F::forged\\r\\u{202e}%0Ahint: h\\n::notice::n\n"
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
        assert_eq!(markdown_text("*x* <y>\nz"), "\\*x\\* \\<y\\>\\\\nz");
        assert_eq!(
            markdown_message("a\n## b", Some("c\u{202e}")),
            "a\\\\n\\#\\# b<br>hint: c\\\\u{202e}"
        );
        assert_eq!(code("a\nb\u{1b}"), "`a\\nb\\x1b`");
    }
}
