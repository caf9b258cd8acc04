//! `image-update action`: the GitHub Action, a Docker container action
//! (`action.yml`: `image: Dockerfile`, `args: [action]`).
//!
//! The runner hands a container action its inputs as `INPUT_<NAME>`
//! variables (the name in capitals, hyphens kept: `INPUT_DRY-RUN`; an input
//! left out is empty), mounts the workspace (`GITHUB_WORKSPACE`, also the
//! working directory) and names two files to append to: `GITHUB_OUTPUT`
//! (`name=value` lines, or `name<<DELIMITER` heredocs for multi-line values)
//! and `GITHUB_STEP_SUMMARY` (Markdown). Workflow commands on stdout
//! (`::warning file=PATH,line=L,col=C::MESSAGE`) become annotations; a
//! non-zero exit status fails the step.
//!
//! Like every front end this one turns its raw input into an
//! [`UpdateConfig`] ([`config`]), once, runs [`operation::run`], and renders
//! the [`Outcome`]: outputs, step summary, annotations and exit status. Paths
//! in outputs and annotations are relative to the workspace.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use super::{ActionArgs, Exit, MessageArgs, RegistryArgs};
use crate::diagnostic::{Diagnostic, Location, Severity};
use crate::error::Error;
use crate::operation::{self, Input, Mode, Outcome, Outputs, UpdateConfig};
use crate::policies::selector::Selector;
use crate::render::report::Format;

/// The inputs `image-update action` reads, as `action.yml` declares them.
pub const INPUTS: &[&str] = &[
    "path",
    "policies",
    "policy",
    "selector",
    "automation",
    "fetch",
    "dry-run",
    "commit-template",
    "commit-values",
    "report-file",
    "fail-on-warnings",
];

/// The outputs `image-update action` writes, in the order it writes them.
pub const OUTPUTS: &[&str] = &[
    "changed",
    "changed-files",
    "changes",
    "commit-message",
    "summary",
];

/// For tests only: when this variable is set, multi-line outputs use its
/// value as their heredoc delimiter instead of a random one, so that the
/// `GITHUB_OUTPUT` file can be compared byte for byte. A value containing
/// it is still refused.
pub const TEST_DELIMITER_VARIABLE: &str = "IMAGE_UPDATE_TEST_DELIMITER";

/// `image-update action --help`.
pub const HELP: &str = "\
Run as the GitHub Action (a Docker container action; see action.yml).

Inputs come from the runner's INPUT_<NAME> variables (hyphens kept, e.g. INPUT_DRY-RUN; empty means
not set); paths are relative to GITHUB_WORKSPACE (default: the current directory):
  path              directory (or file) to update (default .)
  policies          Flux ImagePolicy files with status, one per line
  policy            policy results, one NAMESPACE:NAME=IMAGE:TAG[@DIGEST] per line
  selector          label selector over the ImagePolicies (kubectl -l syntax)
  automation        a file holding one Flux ImageUpdateAutomation to follow
  fetch             true: compute policy results from registries (see docs/fetch.md)
  dry-run           true: write nothing
  commit-template   the commit message template (Go text/template, as Flux's messageTemplate)
  commit-values     .Values for the template, one KEY=VALUE per line
  report-file       also write the ResultV2 report (JSON) to this file
  fail-on-warnings  true: when the run raises a warning, write nothing and exit 1
Booleans are true, True, TRUE, false, False or FALSE.

Outputs, appended to GITHUB_OUTPUT:
  changed           true when a field changed (under dry-run: would change), else false
  changed-files     JSON array of the files that changed (or would), relative to the workspace
  changes           the ResultV2 report as compact JSON (its paths are relative to `path`)
  commit-message    the rendered commit message (empty when nothing changed)
  summary           one line, e.g. `updated 3 fields in 2 files (1 warning)`
A table of the changes and the warnings is appended to GITHUB_STEP_SUMMARY. Every warning is also
printed as a ::warning workflow command with its file, line and column; errors as ::error.

Exit status: 0 on success (with or without changes); 1 on an error, and with fail-on-warnings when a
warning was raised.";

/// The Action's inputs, as the runner passed them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs(BTreeMap<String, String>);

/// The variable the runner passes input `name` in: `INPUT_` and the name in
/// capitals, spaces as `_`, hyphens kept.
#[must_use]
pub fn input_variable(name: &str) -> String {
    format!("INPUT_{}", name.to_uppercase().replace(' ', "_"))
}

impl Inputs {
    /// The inputs of [`INPUTS`] from the process environment.
    ///
    /// # Errors
    /// A variable that is not UTF-8.
    pub fn from_env() -> Result<Self, Error> {
        let mut values = BTreeMap::new();
        for name in INPUTS {
            let variable = input_variable(name);
            match std::env::var(&variable) {
                Ok(value) => {
                    values.insert((*name).to_owned(), value);
                }
                Err(std::env::VarError::NotPresent) => {}
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(Error::Usage(format!("{variable} is not UTF-8")));
                }
            }
        }
        Ok(Self(values))
    }

    /// Inputs from `(name, value)` pairs.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// The input without surrounding whitespace; `None` when empty.
    fn value(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// The input as given; `None` when it is only whitespace.
    fn text(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// The input's lines, trimmed, without blank ones.
    fn lines(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0
            .get(name)
            .into_iter()
            .flat_map(|v| v.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
    }

    /// A boolean input (GitHub's YAML 1.2 core schema spellings); unset is
    /// false.
    fn flag(&self, name: &str) -> Result<bool, Error> {
        match self.value(name) {
            None | Some("false" | "False" | "FALSE") => Ok(false),
            Some("true" | "True" | "TRUE") => Ok(true),
            Some(other) => Err(Error::Usage(format!(
                "input {name}: {other:?} is not a boolean (true or false)"
            ))),
        }
    }
}

/// The settings of one Action run.
#[derive(Debug, Clone)]
pub struct ActionConfig {
    pub update: UpdateConfig,
    /// The tree to update: the `path` input under the workspace.
    pub path: PathBuf,
    /// Exit 1 (and write nothing) when the run raises a warning.
    pub fail_on_warnings: bool,
}

/// Validate `inputs` into the run's settings; relative paths are taken
/// from `workspace`. A commit message is always rendered (Flux's default
/// without `commit-template` or an automation's template).
///
/// # Errors
/// Usage errors naming the input (a malformed policy line, selector,
/// boolean or `KEY=VALUE`); an unreadable or invalid automation file;
/// an unreadable template.
pub fn config(inputs: &Inputs, workspace: &Path) -> Result<ActionConfig, Error> {
    let path = workspace.join(inputs.value("path").unwrap_or("."));
    let values = inputs
        .lines("policy")
        .map(|line| super::update::policy_value_from("input policy", line))
        .collect::<Result<Vec<_>, _>>()?;
    let fail_on_warnings = inputs.flag("fail-on-warnings")?;
    let mut update = UpdateConfig {
        values,
        policy_files: inputs
            .lines("policies")
            .map(|f| workspace.join(f))
            .collect(),
        fetch: inputs
            .flag("fetch")?
            .then(|| super::update::fetch_settings(&RegistryArgs::default())),
        mode: if inputs.flag("dry-run")? {
            Mode::DryRun
        } else {
            Mode::Apply
        },
        outputs: Outputs {
            report: inputs
                .value("report-file")
                .map(|f| (workspace.join(f), Format::Json)),
            ..Outputs::default()
        },
        fail_on_warnings,
        ..UpdateConfig::default()
    };
    if let Some(expr) = inputs.value("selector") {
        let selector =
            Selector::parse(expr).map_err(|e| Error::Usage(format!("input selector: {e}")))?;
        update
            .scope
            .selectors
            .push(("input selector".to_owned(), selector));
    }
    if let Some(file) = inputs.value("automation") {
        let automation =
            super::update::read_automation(&workspace.join(file), update.max_file_size)?;
        update = update.with_automation(automation);
    }
    let values = inputs
        .lines("commit-values")
        .map(|line| {
            if line.contains('=') {
                Ok(line.to_owned())
            } else {
                Err(Error::Usage(format!(
                    "input commit-values: {line:?} is not KEY=VALUE"
                )))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let message_args = MessageArgs {
        values,
        ..MessageArgs::default()
    };
    let mut message = super::message::message_config(&message_args, update.automation.as_ref())?;
    if let Some(template) = inputs.text("commit-template") {
        message.template = Some(template.to_owned());
    }
    update.message = Some(message);
    Ok(ActionConfig {
        update,
        path,
        fail_on_warnings,
    })
}

/// Where the runner wants the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runner {
    /// `GITHUB_WORKSPACE`, else the current directory.
    pub workspace: PathBuf,
    /// `GITHUB_OUTPUT`, when set.
    pub output: Option<PathBuf>,
    /// `GITHUB_STEP_SUMMARY`, when set.
    pub step_summary: Option<PathBuf>,
    /// The fixed delimiter of [`TEST_DELIMITER_VARIABLE`], when set.
    pub test_delimiter: Option<String>,
}

impl Runner {
    /// The runner's settings from the process environment.
    ///
    /// # Errors
    /// No `GITHUB_WORKSPACE` and no current directory.
    pub fn from_env() -> Result<Self, Error> {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let workspace = match set("GITHUB_WORKSPACE") {
            Some(ws) => PathBuf::from(ws),
            None => std::env::current_dir()
                .map_err(|e| Error::failed("cannot find the current directory", e))?,
        };
        Ok(Self {
            workspace,
            output: set("GITHUB_OUTPUT").map(PathBuf::from),
            step_summary: set("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            test_delimiter: set(TEST_DELIMITER_VARIABLE).map(|v| v.to_string_lossy().into_owned()),
        })
    }
}

/// Run the Action: read the inputs, update, write the outputs and the step
/// summary, print the annotations.
///
/// # Errors
/// The runner's files or stdout cannot be written. Errors of the run itself
/// are reported as `::error` annotations (and on stderr), with exit status 1.
pub fn run(_args: &ActionArgs) -> Result<Exit, Error> {
    let runner = Runner::from_env()?;
    let result = Inputs::from_env()
        .and_then(|inputs| config(&inputs, &runner.workspace))
        .and_then(|config| {
            let outcome = operation::run(&config.update, Input::Tree(&config.path))?;
            Ok((config, outcome))
        });
    match result {
        Ok((config, outcome)) => finish(&runner, &config, &outcome),
        Err(error) => fail(&runner, &error),
    }
}

/// Render a finished run.
fn finish(runner: &Runner, config: &ActionConfig, outcome: &Outcome) -> Result<Exit, Error> {
    let ws = &runner.workspace;
    let outputs = outputs(outcome, ws, runner.test_delimiter.as_deref())?;
    if let Some(file) = &runner.output {
        append(file, &outputs)?;
    }
    if let Some(file) = &runner.step_summary {
        append(file, &step_summary(outcome, ws))?;
    }
    print(&log(outcome, ws))?;
    let warned = outcome.warnings().next().is_some();
    if outcome.held_back || (config.fail_on_warnings && warned) {
        Ok(Exit::Failed)
    } else {
        Ok(Exit::Success)
    }
}

/// Report a run that stopped: `::error` annotations, the error on stderr,
/// a line in the step summary; exit status 1.
fn fail(runner: &Runner, error: &Error) -> Result<Exit, Error> {
    super::print_error(error);
    let ws = &runner.workspace;
    let mut commands = String::new();
    let mut lines = Vec::new();
    match error {
        Error::Invalid {
            summary,
            diagnostics,
        } => {
            if !summary.is_empty() {
                commands.push_str(&command("error", None, ws, summary));
                lines.push(summary.clone());
            }
            for d in &diagnostics.0 {
                let message = with_hint(d);
                commands.push_str(&command("error", d.location.as_ref(), ws, &message));
                lines.push(match &d.location {
                    Some(at) => format!("{}: {message}", relative_location(ws, at)),
                    None => message,
                });
            }
        }
        other => {
            let message = crate::diagnostic::one_line(other);
            commands.push_str(&command("error", None, ws, &message));
            lines.push(message);
        }
    }
    if let Some(file) = &runner.step_summary {
        let mut md = String::from("## image-update\n\nThe run failed; nothing was written.\n\n");
        for line in &lines {
            let _ = writeln!(md, "- {}", markdown_text(line));
        }
        md.push('\n');
        append(file, &md)?;
    }
    print(&commands)?;
    Ok(Exit::Failed)
}

/// Append `text` to the runner's file `path`.
fn append(path: &Path, text: &str) -> Result<(), Error> {
    let mut file = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(())
}

fn print(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the workflow commands",
            source,
        })
}

/// The `GITHUB_OUTPUT` lines of a run: single-line values as `name=value`,
/// others as heredocs with a delimiter that does not occur in the value.
///
/// # Errors
/// A value that contains the fixed test delimiter; no random bytes.
pub fn outputs(
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
pub fn output_entry(name: &str, value: &str, delimiter: Option<&str>) -> Result<String, Error> {
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
pub fn summary_line(outcome: &Outcome) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let fields = plural(outcome.changes.len(), "field", "fields");
    let files = plural(outcome.files.len(), "file", "files");
    let warnings = outcome.warnings().count();
    let warned = plural(warnings, "warning", "warnings");
    if outcome.held_back {
        return format!(
            "would update {fields} in {files}, but wrote nothing: {warned} and fail-on-warnings is set"
        );
    }
    let mut line = if !outcome.has_changes() {
        match &outcome.suspended {
            Some(what) => format!("no changes: {what} is suspended"),
            None => "no changes".to_owned(),
        }
    } else if outcome.mode.writes() {
        format!("updated {fields} in {files}")
    } else {
        format!("would update {fields} in {files}")
    };
    if warnings > 0 {
        let _ = write!(line, " ({warned})");
    }
    line
}

/// The log on stdout: fetched policies, notes, one line per change, one
/// `::warning` per warning, the summary line.
#[must_use]
pub fn log(outcome: &Outcome, workspace: &Path) -> String {
    let mut out = String::new();
    for r in &outcome.fetched {
        let _ = writeln!(out, "fetched {}", r.summary());
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
        let old = c.shown_old_value();
        let _ = writeln!(
            out,
            "{}:{}:{}: {old} -> {} ({})",
            relative(workspace, &c.display),
            c.position.line,
            c.position.column,
            c.new_value,
            c.setter
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
pub fn step_summary(outcome: &Outcome, workspace: &Path) -> String {
    let mut md = String::from("## image-update\n\n");
    let _ = writeln!(md, "{}\n", markdown_text(&summary_line(outcome)));
    if outcome.has_changes() {
        md.push_str("| File | Object | Old | New | Setter |\n");
        md.push_str("| --- | --- | --- | --- | --- |\n");
        for c in &outcome.changes {
            let old = c.shown_old_value();
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                code(&relative(workspace, &c.display)),
                markdown_text(&c.object.describe()),
                code(old),
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
pub fn command(kind: &str, location: Option<&Location>, workspace: &Path, message: &str) -> String {
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
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: as [`escape_data`], and `:` and
/// `,` too.
#[must_use]
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `path` relative to `workspace` with `/` separators when it lies under
/// it; otherwise as given.
#[must_use]
pub fn relative(workspace: &Path, path: &str) -> String {
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
    fn booleans_follow_the_core_schema() {
        let inputs = Inputs::from_pairs([("fetch", " TRUE "), ("dry-run", "yes")]);
        assert!(inputs.flag("fetch").unwrap());
        assert!(!inputs.flag("fail-on-warnings").unwrap());
        let error = inputs.flag("dry-run").unwrap_err().to_string();
        assert_eq!(
            error,
            "input dry-run: \"yes\" is not a boolean (true or false)"
        );
    }

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(markdown_text("*x* <y>\nz"), "\\*x\\* \\<y\\><br>z");
    }
}
