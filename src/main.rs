//! The `image-update` binary: set up logging, then run the command line
//! (`image_update::cli::main`), which prints the error once and chooses the
//! exit status.

use std::process::ExitCode;

use image_update::cli;

fn main() -> ExitCode {
    // Library diagnostics (registry retries, skipped credential helpers,
    // unusable cache files) go to stderr; `IMAGE_UPDATE_LOG=debug` shows more.
    let filter = tracing_subscriber::EnvFilter::try_from_env("IMAGE_UPDATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(cli::log_color())
        .with_writer(cli::stderr)
        .without_time()
        .with_target(false)
        .init();
    cli::main()
}
