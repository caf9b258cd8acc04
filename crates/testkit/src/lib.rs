//! Test support shared by the crates of the workspace.
//!
//! * [`trial`]: a test that needs external programs (`docker-registry`,
//!   `kpt`, `podman`, `lighttpd`...) becomes a `libtest-mimic` trial that is
//!   **ignored, with the reason in its name**, when a program is missing, and
//!   that **fails** when it is missing and `CI` is set. A test never passes
//!   without having run.
//! * [`registry`]: a real Debian `docker-registry` on a free 127.0.0.1 port,
//!   a token service, an image pusher and a fault-injecting fake HTTP server.
//! * [`git`]: lighttpd + `git-http-backend` with Basic auth, sshd with keys, GnuPG keys, and
//!   bare repositories to clone from and push to.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::missing_panics_doc,
    clippy::new_without_default
)]

pub mod forge;
pub mod forge_graphql;
pub mod git;
pub mod openapi;
pub mod registry;

use std::path::PathBuf;

use libtest_mimic::{Failed, Trial};

/// Where `program` is on `PATH`, if anywhere.
#[must_use]
pub fn find_program(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The programs of `needs` that are not on `PATH`.
#[must_use]
pub fn missing(needs: &[&str]) -> Vec<String> {
    needs
        .iter()
        .filter(|p| find_program(p).is_none())
        .map(|p| (*p).to_owned())
        .collect()
}

/// A trial running `test` (which may panic to fail), that needs the
/// programs `needs` on `PATH`. Without them it is ignored, and its kind says
/// what is missing (`[needs docker-registry] name ... ignored`); with `CI`
/// set it fails instead, naming them.
pub fn trial(name: impl Into<String>, needs: &[&str], test: fn()) -> Trial {
    trial_with(name, needs, move || {
        test();
        Ok(())
    })
}

/// [`trial`] for a runner that returns its failure instead of panicking.
pub fn trial_with(
    name: impl Into<String>,
    needs: &[&str],
    runner: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    let name = name.into();
    let missing = missing(needs);
    if missing.is_empty() {
        return Trial::test(name, runner);
    }
    let what = missing.join(", ");
    if std::env::var_os("CI").is_some() {
        return Trial::test(name, move || {
            Err(format!("needs {what}, which is not installed, and CI is set").into())
        });
    }
    Trial::test(name, runner)
        .with_kind(format!("needs {what}"))
        .with_ignored_flag(true)
}

/// A trial that needs `files` (data installed by a script, such as the providers' API
/// descriptions of `scripts/api-descriptions.sh`): ignored with the reason when one is missing,
/// failed instead when `CI` is set.
pub fn trial_with_files(
    name: impl Into<String>,
    files: &[PathBuf],
    hint: &str,
    runner: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    let name = name.into();
    let missing: Vec<String> = files
        .iter()
        .filter(|f| !f.is_file())
        .map(|f| f.display().to_string())
        .collect();
    if missing.is_empty() {
        return Trial::test(name, runner);
    }
    let what = format!("{} ({hint})", missing.join(", "));
    if std::env::var_os("CI").is_some() {
        return Trial::test(name, move || {
            Err(format!("needs {what}, which is missing, and CI is set").into())
        });
    }
    Trial::test(name, runner)
        .with_kind("needs API descriptions")
        .with_ignored_flag(true)
}

/// Run `trials` with the command line's arguments, and exit.
pub fn run(trials: Vec<Trial>) -> ! {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, trials).exit()
}
