//! `image-update action`: the GitHub Action, a Docker container action
//! (`action.yml`: `image: Dockerfile`, `args: [action]`).
//!
//! The runner passes the inputs as `INPUT_<NAME>` variables (an input left
//! out is empty) and mounts the workspace (`GITHUB_WORKSPACE`, also the
//! working directory); a non-zero exit status fails the step.
//!
//! Like every front end this one turns its raw input into an
//! [`UpdateConfig`] ([`config`]), once, runs [`operation::run`], and hands
//! the [`Outcome`] to [`crate::render::github`], which renders the outputs,
//! the step summary and the annotations.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{ActionArgs, Exit};
use crate::error::Error;
use crate::operation::config::{FetchSettings, PolicyValue, ValueError, commit_value};
use crate::operation::{self, Input, Outputs, UpdateConfig};
use crate::outcome::{Mode, Outcome};
use crate::policies::selector::Selector;
use crate::render::github::{self, input_variable};
use crate::render::message::MessageConfig;
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

/// For tests only: when this variable is set, multi-line outputs use its
/// value as their heredoc delimiter instead of a random one, so that the
/// `GITHUB_OUTPUT` file can be compared byte for byte. A value containing
/// it is still refused.
pub const TEST_DELIMITER_VARIABLE: &str = "IMAGE_UPDATE_TEST_DELIMITER";

/// `image-update action --help`.
pub(crate) const HELP: &str = "\
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
pub(crate) struct Inputs(BTreeMap<String, String>);

impl Inputs {
    /// The inputs of [`INPUTS`] from the process environment.
    ///
    /// # Errors
    /// A variable that is not UTF-8.
    pub(crate) fn from_env() -> Result<Self, Error> {
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
    #[cfg(test)]
    pub(crate) fn from_pairs<K: Into<String>, V: Into<String>>(
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
pub(crate) struct ActionConfig {
    pub update: UpdateConfig,
    /// The tree to update: the `path` input under the workspace.
    pub path: PathBuf,
}

/// Validate `inputs` into the run's settings; relative paths are taken
/// from `workspace`. A commit message is always rendered (Flux's default
/// without `commit-template` or an automation's template).
///
/// # Errors
/// Usage errors naming the input (a malformed policy line, selector,
/// boolean or `KEY=VALUE`); an unreadable or invalid automation file;
/// an unreadable template.
pub(crate) fn config(inputs: &Inputs, workspace: &Path) -> Result<ActionConfig, Error> {
    let usage = |input: &str, value: &str, e: &ValueError| {
        Error::Usage(format!(
            "input {input} {value:?}: {}",
            crate::diagnostic::one_line(e)
        ))
    };
    let path = workspace.join(inputs.value("path").unwrap_or("."));
    let values = inputs
        .lines("policy")
        .map(|line| {
            PolicyValue::parse(line, format!("input policy {line}"))
                .map_err(|e| usage("policy", line, &e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut update = UpdateConfig {
        values,
        policy_files: inputs
            .lines("policies")
            .map(|f| workspace.join(f))
            .collect(),
        fetch: inputs.flag("fetch")?.then(FetchSettings::default),
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
        fail_on_warnings: inputs.flag("fail-on-warnings")?,
        ..UpdateConfig::default()
    };
    if let Some(expr) = inputs.value("selector") {
        let selector =
            Selector::parse(expr).map_err(|e| Error::Usage(format!("input selector: {e}")))?;
        update.select("input selector", selector);
    }
    if let Some(file) = inputs.value("automation") {
        let automation = crate::automation::read_file(&workspace.join(file), update.max_file_size)?;
        update = update.with_automation(automation);
    }
    let mut message = update
        .automation
        .as_ref()
        .map(MessageConfig::from_automation)
        .unwrap_or_default();
    for line in inputs.lines("commit-values") {
        let (k, v) = commit_value(line).map_err(|e| usage("commit-values", line, &e))?;
        message.values.insert(k, v);
    }
    if let Some(template) = inputs.text("commit-template") {
        message.template = Some(template.to_owned());
    }
    update.message = Some(message);
    Ok(ActionConfig { update, path })
}

/// Where the runner wants the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Runner {
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
    pub(crate) fn from_env() -> Result<Self, Error> {
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
pub(crate) fn run(_args: &ActionArgs) -> Result<Exit, Error> {
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
    let outputs = github::outputs(outcome, ws, runner.test_delimiter.as_deref())?;
    if let Some(file) = &runner.output {
        append(file, &outputs)?;
    }
    if let Some(file) = &runner.step_summary {
        append(file, &github::step_summary(outcome, ws))?;
    }
    print(&github::log(outcome, ws))?;
    let warned = outcome.warnings().next().is_some();
    if outcome.held_back || (config.update.fail_on_warnings && warned) {
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
    if let Some(file) = &runner.step_summary {
        append(file, &github::failure_step_summary(error, ws))?;
    }
    print(&github::failure_commands(error, ws))?;
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
    let mut out = super::stdio::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the workflow commands",
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
