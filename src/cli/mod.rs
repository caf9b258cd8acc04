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

pub(crate) mod action;
#[cfg(feature = "job")]
pub(crate) mod action_pull_request;
pub(crate) mod args;
pub(crate) mod completions;
pub(crate) mod create;
pub(crate) mod deploy;
#[cfg(feature = "job")]
pub(crate) mod job;
pub(crate) mod krm;
pub(crate) mod message;
pub(crate) mod policy;
mod policy_args;
mod policy_offline;
mod stdio;
pub(crate) mod update;

use clap::{Parser, Subcommand};

pub(crate) use self::args::{
    ActionArgs, ColorChoice, CompletionsArgs, FnArgs, ManArgs, MessageCommandArgs,
    PolicyCommandArgs, UpdateArgs,
};
use self::krm::FN_HELP;

use crate::error::Error;
use crate::failure::{EXIT_CHANGES_PENDING, EXIT_SUCCESS, FailureKind};
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
pub(crate) struct Cli {
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
pub(crate) enum Command {
    /// Update marked fields in a directory or file.
    #[command(after_help = args::UPDATE_AFTER_HELP)]
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
    /// Write a Flux ImageRepository, ImagePolicy, ImageUpdateAutomation or
    /// a KubeSphere ImageUpdater as YAML on stdout.
    Create(Box<create::CreateArgs>),
    /// Write the Kubernetes manifests (CronJobs, ConfigMaps) that run
    /// automations on a schedule, with no controller.
    Deploy(deploy::DeployArgs),
    /// Print a shell completion script on stdout (bash, zsh, fish, elvish,
    /// powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout: the program's, or COMMAND's.
    Man(ManArgs),
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Done, with or without changes.
    Success,
    /// `--check` found changes to make.
    ChangesPending,
    /// The run failed after telling so its own way: `fn` wrote a
    /// ResourceList with error results, `action` wrote error annotations.
    Failed,
    /// An exit status the command chose (`job`).
    #[cfg(feature = "job")]
    Code(u8),
}

impl Exit {
    /// The process exit status.
    #[must_use]
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Success => EXIT_SUCCESS,
            Exit::ChangesPending => EXIT_CHANGES_PENDING,
            Exit::Failed => FailureKind::Failed.exit_code(),
            #[cfg(feature = "job")]
            Exit::Code(code) => code,
        }
    }
}

/// The whole program after logging is set up: run the chosen mode, print
/// its error once, and end with its exit status (0 ok, 1 error, 2 usage, 3
/// `--check` found changes, 128 + N a commit rolled back on signal N, and
/// the Job's own statuses).
#[must_use]
pub fn main() -> std::process::ExitCode {
    // The process ends when the command does.
    crate::teardown::exiting();
    match run() {
        Ok(exit) => std::process::ExitCode::from(exit.code()),
        Err(error) => {
            print_error(&error);
            std::process::ExitCode::from(error_code(&error))
        }
    }
}

/// Whether this invocation runs the KRM function: no arguments with input
/// waiting on stdin (how kpt runs the image), or the `fn` command.
#[must_use]
pub fn runs_krm_function() -> bool {
    use std::io::IsTerminal;
    match std::env::args_os().nth(1) {
        None => !std::io::stdin().is_terminal(),
        Some(first) => first == "fn",
    }
}

/// Whether log lines are coloured: as `--color` says (read before clap
/// runs), on a terminal stderr.
#[must_use]
pub fn log_color() -> bool {
    ColorChoice::from_args().enabled(stderr_is_terminal())
}

/// Parse `argv` and run the chosen mode.
///
/// # Errors
/// Whatever the mode fails with; [`Error::Usage`] for usage mistakes.
pub(crate) fn run() -> Result<Exit, Error> {
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
        Some(Command::Create(args)) => create::run(&args),
        Some(Command::Deploy(args)) => deploy::run(&args),
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
pub(crate) fn error_code(error: &Error) -> u8 {
    error.failure_kind().exit_code()
}

/// How the log subscriber `main` sets up shows an event's fields: escaped
/// as every line on stderr ([`crate::render::terminal::log_fields`]).
#[must_use]
pub fn log_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    crate::render::terminal::log_fields()
}

/// Standard error, for the log subscriber `main` sets up.
#[must_use]
pub fn stderr() -> std::io::Stderr {
    stdio::stderr()
}

/// Whether standard error is a terminal.
#[must_use]
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&stdio::stderr())
}

/// ANSI colours for stderr as `choice` says.
#[must_use]
pub(crate) fn stderr_paint(choice: ColorChoice) -> Paint {
    use std::io::IsTerminal;
    Paint(choice.enabled(stdio::stderr().is_terminal()))
}

/// Print `error` on stderr ([`crate::render::terminal::error`]), in one
/// write, so that lines of concurrent processes do not interleave.
pub(crate) fn print_error(error: &Error) {
    let text = crate::render::terminal::error(error, stderr_paint(ColorChoice::from_args()));
    let _ = std::io::Write::write_all(&mut stdio::stderr(), text.as_bytes());
}
