//! image-update: byte-preserving GitOps image automation.
//!
//! ```text
//! source ──> scan ──> resolve ──> rewrite ──> report ──> sink
//! (files,    (markers, (policy    (splice     (ResultV2, (atomic
//!  stdin)     spans)    table)     values)     results)   writes)
//! ```
//!
//! [`update::plan`] is the pure core shared by every front end: it scans one
//! YAML text for `$imagepolicy` markers, resolves each against a
//! [`resolve::PolicyTable`] and splices the new values into the original
//! bytes. Only `source`, `sink` and `commands` do IO.

pub mod cli;
pub mod krm;
pub mod policies;
pub mod reflector;
pub mod text;
pub mod updater;

use clap::Parser;

/// Parse `argv` and run the chosen command; returns the exit status.
///
/// # Errors
/// Any failure of the command; [`cli::UsageError`] marks usage errors.
pub fn run_cli() -> anyhow::Result<cli::Exit> {
    use std::io::IsTerminal;
    // A KRM function container gets no argv: with no arguments and input
    // waiting on stdin, act as `fn` (kpt fn eval --image, kpt fn render).
    if std::env::args_os().len() == 1 && !std::io::stdin().is_terminal() {
        return cli::krm::run();
    }
    let cli = cli::Cli::parse();
    match cli.command {
        Some(cli::Command::Update(args)) => cli::update::run(&args),
        Some(cli::Command::Fn(_)) => cli::krm::run(),
        Some(cli::Command::Policy(args)) => cli::policy::run(&args),
        None => Err(cli::UsageError(
            "no command given; try `image-update update --help`".to_owned(),
        )
        .into()),
    }
}
