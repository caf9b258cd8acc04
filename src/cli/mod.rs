//! The command line: clap definitions, one module per subcommand, and the
//! rendering of errors.
//!
//! Modes, and which one runs when:
//! * no arguments and a ResourceList on stdin (not a terminal): the KRM
//!   function, as kpt runs a container (`kpt fn eval --image`, `kpt fn
//!   render`); also `image-update fn`;
//! * every other mode is an explicit subcommand: `update` (a directory or
//!   file), `policy` (choose a tag), `message` (a commit message), `action`
//!   (the GitHub Action: inputs from `INPUT_*`, results in the runner's
//!   files).
//!
//! `--help` with no subcommand ends with the function's documentation,
//! because `kpt fn doc --image IMAGE` runs the image with `--help` and
//! shows what it prints.
//!
//! Each subcommand turns its flags into an [`crate::operation::UpdateConfig`]
//! (or its own small config), runs, renders the outcome on stdout/stderr and
//! chooses the exit status.

use std::path::PathBuf;

pub mod action;
pub mod completions;
#[cfg(feature = "job")]
pub mod job;
pub mod krm;
pub mod message;
pub mod policy;
mod policy_args;
mod policy_offline;
pub mod update;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::Error;
use crate::input::SizeLimit;
use crate::render::terminal::Paint;

/// The version `--version` prints: the package version, plus the git
/// commit and its date when built from a checkout (see `build.rs`), e.g.
/// `0.1.0 (commit abcdef1, 2026-11-23)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    env!("IMAGE_UPDATE_VERSION_SUFFIX")
);

/// Byte-preserving GitOps image automation: rewrites the fields marked with
/// `# {"$imagepolicy": "NAMESPACE:NAME"}` comments, and nothing else.
#[derive(Debug, Parser)]
#[command(
    name = "image-update",
    version = VERSION,
    about,
    long_about = None,
    after_help = MODES_HELP,
    after_long_help = top_long_help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Which mode runs (the end of `-h`).
const MODES_HELP: &str = "Which mode runs: with no arguments and a ResourceList on stdin (not a \
                          terminal), the binary is the KRM function (kpt fn eval / kpt fn render; \
                          same as `image-update fn`, see `image-update fn --help`). Every other mode \
                          is a subcommand.";

/// The end of `--help`: which mode runs, then the KRM function's
/// documentation, which `kpt fn doc --image IMAGE` shows.
fn top_long_help() -> String {
    format!("{MODES_HELP}\n\nThe KRM function (`image-update fn`):\n\n{FN_HELP}")
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Update marked fields in a directory or file.
    #[command(after_help = UPDATE_AFTER_HELP)]
    Update(UpdateArgs),
    /// Run as a KRM function: ResourceList on stdin, ResourceList on stdout.
    #[command(long_about = FN_HELP)]
    Fn(FnArgs),
    /// Choose the latest tag of IMAGE with a policy (from a registry, or
    /// offline with --tags-file).
    Policy(PolicyCommandArgs),
    /// Render a commit message (Flux's messageTemplate) from a saved report.
    Message(MessageCommandArgs),
    /// Run as the GitHub Action (action.yml): inputs from INPUT_*
    /// variables, results in GITHUB_OUTPUT and GITHUB_STEP_SUMMARY.
    #[command(long_about = action::HELP)]
    Action(ActionArgs),
    /// Clone a git repository, update it, commit (signed), push: Flux's
    /// image automation as a Kubernetes Job.
    #[cfg(feature = "job")]
    #[command(after_help = job::AFTER_HELP)]
    Job(Box<job::JobArgs>),
    /// Print a shell completion script on stdout (bash, zsh, fish, elvish,
    /// powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout: the program's, or COMMAND's.
    Man(ManArgs),
}

/// `image-update completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `image-update man [COMMAND]`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand whose page to print (image-update-COMMAND(1)) instead
    /// of the program's.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// `image-update action` takes no arguments: its inputs come from the
/// runner's `INPUT_*` variables.
#[derive(Debug, Args)]
pub struct ActionArgs {}

/// Registry client options (`update --fetch`, `policy`).
#[derive(Debug, Clone, Default, Args)]
pub struct RegistryArgs {
    /// Registry settings file (per-registry insecure, CA file, page size,
    /// concurrency, rate; retries; cache; exclusion list); see docs/registry.md.
    #[arg(long, value_name = "FILE", help_heading = "Registry")]
    pub registry_config: Option<PathBuf>,

    /// Cache tag lists under DIR (overrides the settings file).
    #[arg(long, value_name = "DIR", help_heading = "Registry")]
    pub cache_dir: Option<PathBuf>,

    /// How long a cached tag list is used, e.g. 5m, 1h (default 5m).
    #[arg(long, value_name = "DURATION", help_heading = "Registry", value_parser = parse_duration)]
    pub cache_ttl: Option<std::time::Duration>,

    /// Give up fetching after DURATION in all (every registry, every
    /// retry), e.g. 2m; 0 for no limit (default 5m, or the settings file's
    /// `deadline`).
    #[arg(long, value_name = "DURATION", help_heading = "Registry", value_parser = parse_duration)]
    pub fetch_timeout: Option<std::time::Duration>,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    image_update_registry::settings::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration like 30s, 5m or 1h"))
}

/// `image-update policy IMAGE`.
#[derive(Debug, Clone, Args)]
pub struct PolicyCommandArgs {
    /// The image repository, without tag (e.g. ghcr.io/acme/app, nginx).
    pub image: String,

    #[command(flatten)]
    pub policy: policy_args::PolicyArgs,

    #[command(flatten)]
    pub registry: RegistryArgs,

    /// The most bytes read from --tags-file.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,
}

/// `image-update fn` takes no arguments: everything comes in the
/// ResourceList's functionConfig.
#[derive(Debug, Args)]
pub struct FnArgs {}

/// The function's documentation (`kpt fn doc`, `image-update fn --help`).
pub const FN_HELP: &str = "\
Run as a KRM function (kpt fn eval / kpt fn render).

Reads one ResourceList (config.kubernetes.io/v1, v1beta1 or v1alpha1, or a v1 List) from stdin and
writes it back on stdout, with the same apiVersion, with only the scalars marked by
`# {\"$imagepolicy\": \"NAMESPACE:NAME[:tag|:name|:digest]\"}` comments replaced, and `results` set:
a summary first, then one info result per changed field and one warning per problem. Everything
else in the input (comments, annotations, quoting, indentation, functionConfig) is kept byte for
byte. The binary run with no arguments and a ResourceList on stdin does the same.

Policy results come from, merged (a policy given twice with different values is an error):
  * ImagePolicy objects (image.toolkit.fluxcd.io) with a status among the items (left untouched);
  * the functionConfig, one of:
    - v1 ConfigMap: `data` maps NAMESPACE:NAME to IMAGE:TAG[@DIGEST]; keys without a `:` are
      options (policySelector, path, check, dryRun, fetch; values are strings). This is what
      `kpt fn eval ... -- NAMESPACE:NAME=IMAGE:TAG` sends.
    - fn.image-update.dev/v1alpha1 ImageUpdate:
        policies:        {NAMESPACE:NAME: IMAGE:TAG[@DIGEST]}
        policySelector:  kubectl selector string (`env=prod,tier in (web)`) or LabelSelector
                         {matchLabels, matchExpressions}; selects among the ImagePolicies in the items
        path:            only items whose path annotation lies under this directory are edited
        check: true      edit nothing; every pending change is an error result (exit 1)
        noDowngrade: true  leave alone (with a warning) a change that moves a tag backwards
        dryRun: true     edit nothing; report what would change
        fetch: true      compute policy results from the ImageRepository/ImagePolicy and KubeSphere
                         ImageUpdater items by asking their registries (needs network: under kpt use
                         --exec or a network-enabled runtime; containers get --network none)
    - image.toolkit.fluxcd.io/v1 ImageUpdateAutomation: uses the ImagePolicies among the items in
      the automation's namespace (default: default) that match spec.policySelector; edits only
      items under spec.update.path; spec.suspend: true edits nothing.

Exit status: 0 when the list was processed (warnings included); 1 when the input or the
functionConfig is invalid, or check found pending changes: stdout then carries error results
and kpt writes nothing.

Examples:
  kpt fn eval --exec image-update PKG -- flux-system:podinfo=ghcr.io/stefanprodan/podinfo:6.7.0
  kpt fn eval --exec image-update PKG --fn-config automation.yaml
  kpt fn render PKG --allow-exec
      with, in the Kptfile: pipeline: {mutators: [{exec: image-update, configPath: FILE}]}";

/// `image-update update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Directory or file to update.
    #[arg(default_value = ".")]
    pub path: PathBuf,

    #[command(flatten)]
    pub source: PolicySourceArgs,

    /// Follow a Flux ImageUpdateAutomation (v1 or v1beta2): its namespace
    /// scopes the ImagePolicies, spec.policySelector selects them,
    /// spec.update.path (under PATH) limits the edits, spec.suspend edits
    /// nothing.
    #[arg(long, value_name = "FILE")]
    pub automation: Option<PathBuf>,

    /// Write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print a unified diff of every change on stdout.
    #[arg(long)]
    pub diff: bool,

    /// Write nothing; exit 3 if any field would change.
    #[arg(long)]
    pub check: bool,

    /// Write changed files under DIR (same relative paths) instead of in place.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dry_run", "check"])]
    pub output_dir: Option<PathBuf>,

    /// Write the change report to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE|-")]
    pub report: Option<PathBuf>,

    /// Format of the change report.
    #[arg(long, value_enum, default_value_t = ReportFormat::Json)]
    pub report_format: ReportFormat,

    /// Print only warnings and errors (and, with --check, the pending
    /// changes).
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

    /// Leave a marker alone, with a warning, when its change would move a
    /// tag backwards (a lower semver); without it such a change is made,
    /// with a warning.
    #[arg(long)]
    pub no_downgrade: bool,

    /// Exit 1, writing nothing, when any warning is raised.
    #[arg(long)]
    pub fail_on_warnings: bool,

    /// Colour stderr (and a --diff on a terminal): auto (when it is a
    /// terminal and NO_COLOR is unset), always or never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Also print skipped files and counts.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// The most bytes read from one file (under PATH, --policies, --automation,
    /// stdin): a larger one is an error. Units KiB, MiB, GiB.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,

    /// Compute policy results from registries: ImageRepository/ImagePolicy
    /// and KubeSphere ImageUpdater definitions in PATH and --policies files
    /// (see docs/fetch.md).
    #[arg(long, help_heading = "Fetching")]
    pub fetch: bool,

    /// Write the fetched ImagePolicies with their computed status to FILE
    /// (multi-document YAML; `-` for stdout).
    #[arg(
        long,
        value_name = "FILE|-",
        requires = "fetch",
        help_heading = "Fetching"
    )]
    pub emit_policies: Option<PathBuf>,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub message: MessageArgs,

    /// Write the rendered commit message to FILE (`-` for stdout; empty
    /// when nothing changed).
    #[arg(long, value_name = "FILE|-", help_heading = "Commit message")]
    pub commit_message_file: Option<PathBuf>,
}

/// Where the policy results come from (`update`, `job`).
#[derive(Debug, Clone, Default, Args)]
pub struct PolicySourceArgs {
    /// A policy result, `NAMESPACE:NAME=IMAGE:TAG[@DIGEST]` (repeatable).
    #[arg(long = "policy", value_name = "NS:NAME=IMAGE:TAG[@DIGEST]")]
    pub policies: Vec<String>,

    /// Flux ImagePolicy objects with status (YAML; `-` reads stdin; repeatable).
    #[arg(long = "policies", value_name = "FILE")]
    pub policy_files: Vec<PathBuf>,

    /// Label selector over the ImagePolicies (from --policies, and the
    /// definitions with --fetch; kubectl -l syntax). --policy values are
    /// always used.
    #[arg(long, short = 'l', value_name = "EXPR")]
    pub selector: Option<String>,
}

/// What a commit message is made of (`update`, `message`).
#[derive(Debug, Clone, Default, Args)]
pub struct MessageArgs {
    /// Go text/template for the commit message, as Flux's
    /// spec.git.commit.messageTemplate (`-` reads stdin); default: the
    /// automation's template, else Flux's default message.
    #[arg(
        long = "commit-template",
        visible_alias = "template",
        value_name = "FILE|-",
        help_heading = "Commit message"
    )]
    pub template: Option<PathBuf>,

    /// A `.Values` entry, KEY=VALUE (repeatable; added to, or replacing,
    /// the automation's messageTemplateValues).
    #[arg(
        long = "commit-value",
        visible_alias = "value",
        value_name = "KEY=VALUE",
        help_heading = "Commit message"
    )]
    pub values: Vec<String>,

    /// `.AutomationObject` when no --automation gives it: NAMESPACE/NAME.
    #[arg(long, value_name = "NAMESPACE/NAME", help_heading = "Commit message")]
    pub automation_object: Option<String>,
}

/// `image-update message`.
#[derive(Debug, Args)]
pub struct MessageCommandArgs {
    /// A report saved by `update --report` (JSON or YAML; `-` reads stdin).
    #[arg(long, value_name = "FILE|-")]
    pub report: PathBuf,

    /// The ImageUpdateAutomation whose template, values and name are used
    /// (flags override them).
    #[arg(long, value_name = "FILE")]
    pub automation: Option<PathBuf>,

    #[command(flatten)]
    pub message: MessageArgs,
}

/// `update --help`, after the options.
const UPDATE_AFTER_HELP: &str = "\
Exit status:
  0  done (with or without changes; warnings included unless --fail-on-warnings)
  1  error: invalid input or policies, a registry failure, a write failure, or
     --fail-on-warnings with warnings (nothing is written then)
  2  usage error (a malformed flag)
  3  --check found fields that would change

Examples:
  image-update update ./clusters/prod --policy flux-system:app=ghcr.io/acme/app:1.4.2
  kubectl get imagepolicies -A -o yaml | image-update update . --policies - --selector env=prod
  image-update update . --fetch --check -q           # CI gate: fail when manifests lag behind
  image-update update . --automation flux/automation.yaml --policies flux/policies.yaml \\
      --commit-message-file msg.txt --report report.json";

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream that is (or is not) a terminal: `auto`
    /// colours terminals when `NO_COLOR` is unset or empty.
    #[must_use]
    pub fn enabled(self, is_terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }

    /// The `--color` of the command line, read before clap runs (the log
    /// subscriber is set up first): `auto` when absent or unreadable.
    #[must_use]
    pub fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let value = args.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix("--color=")
                .map(str::to_owned)
                .or_else(|| (a == "--color").then(|| args.get(i + 1).cloned()).flatten())
        });
        match value.as_deref() {
            Some("always") => ColorChoice::Always,
            Some("never") => ColorChoice::Never,
            _ => ColorChoice::Auto,
        }
    }
}

/// Formats of the change report on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReportFormat {
    #[default]
    Json,
    Yaml,
}

impl From<ReportFormat> for crate::render::report::Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Json => Self::Json,
            ReportFormat::Yaml => Self::Yaml,
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done, with or without changes.
    Success,
    /// `--check` found changes to make.
    ChangesPending,
    /// The run failed after telling so its own way: `fn` wrote a
    /// ResourceList with error results, `action` wrote error annotations.
    Failed,
    /// An exit status the command chose (`job`).
    Code(u8),
}

impl Exit {
    /// The process exit status.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::ChangesPending => 3,
            Exit::Failed => 1,
            Exit::Code(code) => code,
        }
    }
}

/// Parse `argv` and run the chosen mode.
///
/// # Errors
/// Whatever the mode fails with; [`Error::Usage`] for usage mistakes.
pub fn run() -> Result<Exit, Error> {
    use std::io::IsTerminal;
    // A KRM function container gets no argv: with no arguments and input
    // waiting on stdin, act as `fn` (kpt fn eval --image, kpt fn render).
    if std::env::args_os().len() == 1 && !std::io::stdin().is_terminal() {
        return krm::run();
    }
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Update(args)) => update::run(&args),
        Some(Command::Fn(_)) => krm::run(),
        Some(Command::Policy(args)) => policy::run(&args),
        Some(Command::Message(args)) => message::run(&args),
        Some(Command::Action(args)) => action::run(&args),
        #[cfg(feature = "job")]
        Some(Command::Job(args)) => job::run(&args),
        Some(Command::Completions(args)) => completions::run_completions(&args),
        Some(Command::Man(args)) => completions::run_man(&args),
        None => Err(Error::Usage(
            "no command given; try `image-update --help`".to_owned(),
        )),
    }
}

/// The exit status for `error`: 2 for usage mistakes, 128 + the signal for
/// a commit interrupted by a signal (as a shell reports a process killed by
/// it), 1 otherwise.
#[must_use]
pub fn error_code(error: &Error) -> u8 {
    if error.is_usage() {
        return 2;
    }
    if let Error::Other(e) = error
        && let Some(signal) = e
            .downcast_ref::<crate::updater::sink::dir::CommitError>()
            .and_then(crate::updater::sink::dir::CommitError::signal)
    {
        return u8::try_from(128 + signal).unwrap_or(1);
    }
    1
}

/// ANSI colours for stderr as `choice` says.
#[must_use]
pub fn stderr_paint(choice: ColorChoice) -> Paint {
    use std::io::IsTerminal;
    Paint(choice.enabled(std::io::stderr().is_terminal()))
}

/// Print `error` on stderr ([`crate::render::terminal::error`]), in one
/// write, so that lines of concurrent processes do not interleave.
pub fn print_error(error: &Error) {
    let text = crate::render::terminal::error(error, stderr_paint(ColorChoice::from_args()));
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
}
