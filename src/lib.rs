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
pub mod commands;
pub mod fetch;
pub mod function;
pub mod pipeline;
pub mod policy;
pub mod report;
pub mod resolve;
pub mod rewrite;
pub mod scan;
pub mod sink;
pub mod source;
pub mod text;
pub mod update;

use clap::Parser;

/// Parse `argv` and run the chosen command; returns the exit status.
///
/// # Errors
/// Any failure of the command; [`commands::UsageError`] marks usage errors.
pub fn run_cli() -> anyhow::Result<commands::Exit> {
    use std::io::IsTerminal;
    // A KRM function container gets no argv: with no arguments and input
    // waiting on stdin, act as `fn` (kpt fn eval --image, kpt fn render).
    if std::env::args_os().len() == 1 && !std::io::stdin().is_terminal() {
        return commands::function::run();
    }
    let cli = cli::Cli::parse();
    match cli.command {
        Some(cli::Command::Update(args)) => commands::update::run(&args),
        Some(cli::Command::Fn(_)) => commands::function::run(),
        Some(cli::Command::Policy(args)) => commands::policy::run(&args),
        None => Err(commands::UsageError(
            "no command given; try `image-update update --help`".to_owned(),
        )
        .into()),
    }
}
