//! The `image-update` binary: set up logging, run the CLI, print the error
//! once, map the outcome to an exit status (0 ok, 1 error, 2 usage, 3 check
//! found changes).

use std::process::ExitCode;

use image_update::cli;

fn main() -> ExitCode {
    // Library diagnostics (registry retries, skipped credential helpers,
    // unusable cache files) go to stderr; `IMAGE_UPDATE_LOG=debug` shows more.
    let filter = tracing_subscriber::EnvFilter::try_from_env("IMAGE_UPDATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let color = cli::ColorChoice::from_args().enabled(cli::stderr_is_terminal());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(color)
        .with_writer(cli::stderr)
        .without_time()
        .with_target(false)
        .init();
    match cli::run() {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(error) => {
            cli::print_error(&error);
            ExitCode::from(cli::error_code(&error))
        }
    }
}
