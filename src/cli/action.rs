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
    "registry-config",
    "registry-provider",
    "allow-credential-program",
    "verify-key",
    "verify-identity",
    "verify-identity-regexp",
    "verify-issuer",
    "verify-issuer-regexp",
    "trusted-root",
    "verify-require",
    "min-age",
    "age-source",
    "pull-request",
    "pull-request-base",
    "pull-request-branch",
    "pull-request-title",
    "pull-request-body",
    "pull-request-labels",
    "pull-request-assignees",
    "pull-request-reviewers",
    "pull-request-team-reviewers",
    "pull-request-draft",
    "pull-request-auto-merge",
    "pull-request-close-when-nothing-to-do",
    "token",
    "github-app-id",
    "github-app-private-key",
    "author-name",
    "author-email",
];

/// The inputs of the supply-chain gate (they need `fetch`).
const SUPPLY_CHAIN_INPUTS: &[&str] = &[
    "verify-key",
    "verify-identity",
    "verify-identity-regexp",
    "verify-issuer",
    "verify-issuer-regexp",
    "trusted-root",
    "verify-require",
    "min-age",
    "age-source",
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
  registry-config   with fetch: the registry settings file (docs/registry.md)
  registry-provider with fetch: HOST=aws|gcp|azure per line: log in with the job's cloud identity
  allow-credential-program  with fetch: [HOST=]PATH per line an Argo CD ext: pull secret may run
The supply-chain gate, with fetch (for every fetched policy; see docs/security.md):
  verify-key        public keys (PEM files) that must have signed, one per line
  verify-identity   keyless signer identities (certificate subjects), one per line
  verify-identity-regexp   the same as regular expressions matching the whole identity
  verify-issuer     the OIDC issuer of the keyless identities
  verify-issuer-regexp     the same as a regular expression matching the whole issuer
  trusted-root      Sigstore trusted_root.json for keyless signatures
  verify-require    any (default) or all of the signers
  min-age           skip tags released less than this long ago (72h, 7d)
  age-source        registry (default: the vendor's push time) or builder
  pull-request      true: instead of editing the workspace, clone the repository
                    (GITHUB_SERVER_URL/GITHUB_REPOSITORY) at the base branch, update it, commit,
                    push a head branch and open the pull request, or update the open one
  pull-request-base the request's base branch (default: the branch the workflow runs on, else
                    the repository's default branch)
  pull-request-branch  the head branch: a template, or change-set (default
                    image-update/NAMESPACE-NAME of the automation, else image-update/BASE)
  pull-request-title   the title's template (default: the commit message's first line)
  pull-request-body    the body's template (default: a table of the changes and the report)
  pull-request-labels  labels to add, one per line or comma-separated
  pull-request-assignees  users to assign
  pull-request-reviewers  users asked for a review when the request is created or reopened
  pull-request-team-reviewers  teams asked for a review (their slugs)
  pull-request-draft   true: open it as a draft
  pull-request-auto-merge  merge, squash or rebase: merge it when its checks pass
  pull-request-close-when-nothing-to-do  true: close the open request when nothing is left to do
  token             the token that pushes and calls the API (default: the workflow's token)
  github-app-id     a GitHub App's ID (or client ID), instead of the token
  github-app-private-key  that App's private key (PEM)
  author-name       the commit author (default: the automation's, else github-actions[bot])
  author-email      the author's email
Booleans are true, True, TRUE, false, False or FALSE.

Outputs, appended to GITHUB_OUTPUT:
  changed           true when a field changed (under dry-run: would change), else false
  changed-files     JSON array of the files that changed (or would), relative to the workspace
  changes           the ResultV2 report as compact JSON (its paths are relative to `path`)
  commit-message    the rendered commit message (empty when nothing changed)
  summary           one line, e.g. `updated 3 fields in 2 files (1 warning)`
  pull-request-url     with pull-request: the request's web page (empty when none is open)
  pull-request-number  its number
  pull-request-action  created, updated, unchanged, reopened or closed (empty when none)
  pull-request-branch  the head branch
  commit            the commit pushed to it (empty when nothing was pushed)
A table of the changes and the warnings is appended to GITHUB_STEP_SUMMARY. Every warning is also
printed as a ::warning workflow command with its file, line and column; errors as ::error.

Exit status: 0 on success (with or without changes); 1 on an error, and with fail-on-warnings when a
warning was raised; with pull-request, also when the request could not be opened or updated (the
head branch keeps the change for the next run).";

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
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// The input as given; `None` when it is only whitespace.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// The input's lines, trimmed, without blank ones.
    pub(crate) fn lines(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0
            .get(name)
            .into_iter()
            .flat_map(|v| v.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
    }

    /// The input's items: one per line, or comma-separated.
    #[cfg(feature = "job")]
    pub(crate) fn list(&self, name: &str) -> Vec<String> {
        self.lines(name)
            .flat_map(|l| l.split(','))
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// A boolean input (GitHub's YAML 1.2 core schema spellings); unset is
    /// false.
    pub(crate) fn flag(&self, name: &str) -> Result<bool, Error> {
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
    /// `pull-request: true` (and no `dry-run`): propose the update as a
    /// pull request instead of editing the workspace.
    pub pull_request: bool,
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
        fetch: fetch_settings(inputs, workspace)?,
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
        let path = workspace.join(file);
        let automation = crate::automation_file::read_file(&path, update.max_file_size)?;
        update = update.with_automation(automation);
        super::args::add_updater_definitions(&mut update, &path);
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
    let pull_request = inputs.flag("pull-request")? && update.mode == Mode::Apply;
    if pull_request && !cfg!(feature = "job") {
        return Err(Error::Usage(
            "input pull-request: this build has no git support (the `job` feature)".to_owned(),
        ));
    }
    // A request's body shows where each image was built from.
    if let (true, Some(fetch)) = (pull_request, update.fetch.as_mut()) {
        fetch.provenance = true;
    }
    Ok(ActionConfig {
        update,
        path,
        pull_request,
    })
}

/// The registry and supply-chain settings of the `fetch` input.
///
/// # Errors
/// Supply-chain inputs without `fetch`; a value that is wrong (named by its
/// input).
fn fetch_settings(inputs: &Inputs, workspace: &Path) -> Result<Option<FetchSettings>, Error> {
    use crate::operation::config;
    use image_update_verify::{KeySource, Pattern, RootSource, SignerNames, SignerValues};
    if !inputs.flag("fetch")? {
        return match SUPPLY_CHAIN_INPUTS
            .iter()
            .chain(&[
                "registry-config",
                "registry-provider",
                "allow-credential-program",
            ])
            .find(|name| inputs.value(name).is_some())
        {
            Some(name) => Err(Error::Usage(format!(
                "input {name} applies to the policies fetched from registries: set fetch to true"
            ))),
            None => Ok(None),
        };
    }
    let usage =
        |input: &str, e: &dyn std::fmt::Display| Error::Usage(format!("input {input}: {e}"));
    let signers = SignerValues {
        keys: inputs
            .lines("verify-key")
            .map(|f| KeySource::File(workspace.join(f)))
            .collect(),
        identities: inputs
            .lines("verify-identity")
            .map(|s| Pattern::Exact(s.to_owned()))
            .chain(
                inputs
                    .lines("verify-identity-regexp")
                    .map(|s| Pattern::Regexp(s.to_owned())),
            )
            .collect(),
        issuer: match (
            inputs.value("verify-issuer"),
            inputs.value("verify-issuer-regexp"),
        ) {
            (Some(_), Some(_)) => {
                return Err(Error::Usage(
                    "inputs verify-issuer and verify-issuer-regexp: give one".to_owned(),
                ));
            }
            (exact, regexp) => exact
                .map(|s| Pattern::Exact(s.to_owned()))
                .or(regexp.map(|s| Pattern::Regexp(s.to_owned()))),
        },
        trusted_root: inputs
            .value("trusted-root")
            .map(|f| RootSource::File(workspace.join(f))),
        require: inputs
            .value("verify-require")
            .map(|v| config::verify_require(v).map_err(|e| usage("verify-require", &e)))
            .transpose()?,
    };
    let min_age = inputs
        .value("min-age")
        .map(|v| config::duration(v).map_err(|e| usage("min-age", &e)))
        .transpose()?;
    let age_source = inputs
        .value("age-source")
        .map(|v| config::age_source(v).map_err(|e| usage("age-source", &e)))
        .transpose()?;
    let names = SignerNames {
        key: "input verify-key",
        identity: "input verify-identity",
        identity_regexp: "input verify-identity-regexp",
        issuer: "input verify-issuer",
        issuer_regexp: "input verify-issuer-regexp",
        trusted_root: "input trusted-root",
        require: "input verify-require",
    };
    let supply_chain =
        config::supply_chain(signers, &names, min_age, age_source, "the verify-* inputs")
            .map_err(|e| Error::Usage(e.to_string()))?;
    let providers = inputs
        .lines("registry-provider")
        .map(|line| {
            image_update_registry::cloud::parse_host_provider(line)
                .map_err(|e| usage("registry-provider", &e))
        })
        .collect::<Result<_, _>>()?;
    let allowed_programs = inputs
        .lines("allow-credential-program")
        .map(|line| {
            line.parse()
                .map_err(|e: String| usage("allow-credential-program", &e))
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(FetchSettings {
        registry_config: inputs.value("registry-config").map(|f| workspace.join(f)),
        supply_chain,
        providers,
        allowed_programs,
        ..FetchSettings::default()
    }))
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
    /// `GITHUB_SERVER_URL` (`https://github.com`, or a GitHub Enterprise
    /// server), `GITHUB_REPOSITORY` (`OWNER/NAME`), `GITHUB_API_URL` and
    /// `GITHUB_REF`, for `pull-request`.
    pub github: GitHubContext,
}

/// Where the workflow runs, as the runner's variables say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GitHubContext {
    pub server_url: Option<String>,
    pub repository: Option<String>,
    pub api_url: Option<String>,
    /// `refs/heads/main`, `refs/pull/7/merge`, `refs/tags/v1`.
    pub git_ref: Option<String>,
}

impl Runner {
    /// The runner's settings from the process environment.
    ///
    /// # Errors
    /// No `GITHUB_WORKSPACE` and no current directory.
    pub(crate) fn from_env() -> Result<Self, Error> {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let text = |name: &str| set(name).map(|v| v.to_string_lossy().into_owned());
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
            github: GitHubContext {
                server_url: text("GITHUB_SERVER_URL"),
                repository: text("GITHUB_REPOSITORY"),
                api_url: text("GITHUB_API_URL"),
                git_ref: text("GITHUB_REF"),
            },
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
    let (inputs, config) = match Inputs::from_env()
        .and_then(|inputs| config(&inputs, &runner.workspace).map(|config| (inputs, config)))
    {
        Ok(read) => read,
        Err(error) => return fail(&runner, &error, None),
    };
    if config.pull_request {
        // (`config` refuses `pull-request` in a build without the Job.)
        #[cfg(feature = "job")]
        return super::action_pull_request::run(&runner, &inputs, &config);
    }
    let _ = &inputs;
    match operation::run(&config.update, Input::Tree(&config.path)) {
        Ok(outcome) => finish(&runner, &config, &outcome, None),
        Err(error) => fail(&runner, &error, None),
    }
}

/// Render a finished run (with `pull-request`, with what it proposed).
pub(crate) fn finish(
    runner: &Runner,
    config: &ActionConfig,
    outcome: &Outcome,
    proposed: Option<&github::Proposed>,
) -> Result<Exit, Error> {
    let ws = &runner.workspace;
    let delimiter = runner.test_delimiter.as_deref();
    let mut outputs = github::outputs(outcome, ws, delimiter)?;
    let mut summary = github::step_summary(outcome, ws);
    let mut log = github::log(outcome, ws);
    if let Some(proposed) = proposed {
        outputs.push_str(&github::request_outputs(proposed, delimiter)?);
        summary.push_str(&github::request_summary(proposed));
        log.push_str(&github::request_log(proposed, ws));
    }
    if let Some(file) = &runner.output {
        append(file, &outputs)?;
    }
    if let Some(file) = &runner.step_summary {
        append(file, &summary)?;
    }
    print(&log)?;
    let warned = outcome.warnings().next().is_some();
    if outcome.held_back || (config.update.fail_on_warnings && warned) {
        Ok(Exit::Failed)
    } else {
        Ok(Exit::Success)
    }
}

/// Report a run that stopped: `::error` annotations, the error on stderr,
/// a line in the step summary; exit status 1. `moved`: the prefix of the
/// paths the error names (the temporary clone of `pull-request`, with its
/// `/`) and what to show instead (its place in the workspace).
pub(crate) fn fail(
    runner: &Runner,
    error: &Error,
    moved: Option<(&str, &str)>,
) -> Result<Exit, Error> {
    let ws = &runner.workspace;
    let shown = |text: String| match moved {
        Some((from, to)) => text.replace(from, to),
        None => text,
    };
    let paint = super::stderr_paint(super::ColorChoice::from_args());
    let _ = super::stdio::stderr()
        .write_all(shown(crate::render::terminal::error(error, paint)).as_bytes());
    if let Some(file) = &runner.step_summary {
        append(file, &shown(github::failure_step_summary(error, ws)))?;
    }
    print(&shown(github::failure_commands(error, ws)))?;
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

pub(crate) fn print(text: &str) -> Result<(), Error> {
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
