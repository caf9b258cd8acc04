//! Command-line arguments (clap derive only; the commands live in
//! `commands/`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::Format;

/// Byte-preserving GitOps image automation: rewrites the fields marked with
/// `# {"$imagepolicy": "NAMESPACE:NAME"}` comments, and nothing else.
#[derive(Debug, Parser)]
#[command(name = "image-update", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Update marked fields in a directory or file.
    Update(UpdateArgs),
}

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

    /// Label selector over the ImagePolicies from --policies (kubectl -l syntax).
    #[arg(long, short = 'l', value_name = "EXPR")]
    pub selector: Option<String>,

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
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub report_format: Format,

    /// Print only warnings and errors.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,

    /// Also print skipped files and counts.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}
