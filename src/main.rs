//! The `image-update` binary: run the CLI, print the error chain once, map
//! the outcome to an exit status (0 ok, 1 error, 2 usage, 3 check found
//! changes).

use std::process::ExitCode;

use image_update::cli::UsageError;

fn main() -> ExitCode {
    // Library diagnostics (registry retries, skipped credential helpers,
    // unusable cache files) go to stderr; `IMAGE_UPDATE_LOG=debug` shows more.
    let filter = tracing_subscriber::EnvFilter::try_from_env("IMAGE_UPDATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
    match image_update::run_cli() {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
