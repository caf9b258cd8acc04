//! The command line: clap definitions, one module per subcommand, and the
//! rendering of errors.
//!
//! Modes, and which one runs when:
//! * no arguments and a ResourceList on stdin (not a terminal): the KRM
//!   function, as kpt runs a container (`kpt fn eval --image`, `kpt fn
//!   render`); also `image-update fn`;
//! * every other mode is an explicit subcommand: `update` (a directory or
//!   file), `policy` (choose a tag).
//!
//! Each subcommand turns its flags into an [`crate::operation::UpdateConfig`]
//! (or its own small config), runs, renders the outcome on stdout/stderr and
//! chooses the exit status.

use std::path::PathBuf;

pub mod krm;
pub mod policy;
mod policy_args;
mod policy_offline;
pub mod update;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::error::Error;
use crate::input::SizeLimit;

/// Byte-preserving GitOps image automation: rewrites the fields marked with
/// `# {"$imagepolicy": "NAMESPACE:NAME"}` comments, and nothing else.
#[derive(Debug, Parser)]
#[command(
    name = "image-update",
    version,
    about,
    long_about = None,
    after_help = "Which mode runs: with no arguments and a ResourceList on stdin (not a terminal), the \
                  binary is the KRM function (kpt fn eval / kpt fn render; same as `image-update fn`, \
                  see `image-update fn --help`). Every other mode is a subcommand."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Update marked fields in a directory or file.
    Update(UpdateArgs),
    /// Run as a KRM function: ResourceList on stdin, ResourceList on stdout.
    #[command(long_about = FN_HELP)]
    Fn(FnArgs),
    /// Choose the latest tag of IMAGE with a policy (from a registry, or
    /// offline with --tags-file).
    Policy(PolicyCommandArgs),
}

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

    /// Print only warnings and errors.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

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
}

/// Formats of the change report on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReportFormat {
    #[default]
    Json,
    Yaml,
}

impl From<ReportFormat> for crate::updater::report::Format {
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
    /// The output was written, and it reports errors (`fn`).
    Failed,
}

impl Exit {
    /// The process exit status.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::ChangesPending => 3,
            Exit::Failed => 1,
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

/// Print `error` on stderr: located diagnostics as `path:line:col: error:
/// message`, each with its hint; anything else as `error: message` followed
/// by one `caused by:` line per cause.
pub fn print_error(error: &Error) {
    let mut out = String::new();
    match error {
        Error::Invalid {
            summary,
            diagnostics,
        } => {
            if !summary.is_empty() {
                out.push_str(&format!("error: {summary}\n"));
            }
            for d in &diagnostics.0 {
                out.push_str(&format!("{d}\n"));
                if let Some(hint) = &d.hint {
                    out.push_str(&format!("  hint: {hint}\n"));
                }
            }
        }
        other => {
            out.push_str(&format!("error: {other}\n"));
            let mut next = std::error::Error::source(other);
            while let Some(cause) = next {
                out.push_str(&format!("  caused by: {cause}\n"));
                next = cause.source();
            }
        }
    }
    // One write, so that lines of concurrent processes do not interleave.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), out.as_bytes());
}
