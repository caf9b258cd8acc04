//! Test support shared by the crates of the workspace.
//!
//! * [`trial`] and [`gated`]: a test that needs external programs
//!   (`docker-registry`, `kpt`, `podman`, `lighttpd`...), a built image or a
//!   capability of the machine becomes a `libtest-mimic` trial that is
//!   **ignored, with the reason**, when it cannot run, and that **fails**
//!   when what is missing is something CI must provide and `CI` is set
//!   ([`Unmet`]). A test never passes without having run, not even under
//!   `--include-ignored`.
//! * [`golden`]: the one way golden expectations are regenerated
//!   (`UPDATE_EXPECT=1`, refused when `CI` is set).
//! * [`scratch`]: filesystems the fault trials need (one where `chattr +i`
//!   works, a small one to fill), as `.ci/run` prepares them.
//! * [`registry`]: a real Debian `docker-registry` on a free 127.0.0.1 port,
//!   a token service, an image pusher and a fault-injecting fake HTTP server.
//! * [`cloud`]: moto (a real STS, IAM and ECR endpoint), a CONNECT proxy
//!   taking a cloud registry's name to a loopback registry, a counting
//!   forwarder.
//! * [`sigstore`]: signing images as cosign does (keys, a test Fulcio and
//!   transparency log minted per run) and pushing the signatures.
//! * [`proxy`]: an HTTPS proxy that answers for real host names (`ghcr.io`, `github.com`) with
//!   the servers above, so that documented commands run as written.
//! * [`git`]: lighttpd + `git-http-backend` with Basic auth, sshd with keys, GnuPG keys, and
//!   bare repositories to clone from and push to.
//! * [`world`]: the registry, the git bed and the fake GitHub behind the proxy, by the names
//!   users type (`ghcr.io`, `github.com/acme/fleet`).
//! * [`job`]: `image-update job`'s outcome, and a CronJob's container run as the kubelet runs
//!   it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::missing_panics_doc,
    clippy::new_without_default
)]

pub mod cloud;
pub mod forge;
pub mod forge_graphql;
pub mod git;
pub mod golden;
pub mod job;
pub mod kube;
pub mod openapi;
pub mod proxy;
pub mod registry;
pub mod scratch;
pub mod sigstore;
pub mod world;

use std::path::PathBuf;

use libtest_mimic::{Completion, Failed, Trial};

/// Where `program` is on `PATH`, if anywhere (or `program` itself, when it
/// is an absolute path to a file).
#[must_use]
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.starts_with('/') {
        let path = PathBuf::from(program);
        return path.is_file().then_some(path);
    }
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

/// Whether `CI` is set: then a trial that cannot run for want of something
/// CI must provide is a failure, not an ignored trial.
#[must_use]
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Why a trial cannot run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmet {
    /// Something the suite's environment must provide and does not: a
    /// program, a built image, a prepared filesystem. Ignored with the
    /// reason; a failure when `CI` is set (`.ci/run` provides all of them).
    Missing(String),
    /// Something this machine does not allow whoever runs the suite: not
    /// running as root, no permission to mount. Ignored with the reason,
    /// also when `CI` is set (there is nothing CI could install).
    NotAllowed(String),
    /// Deferred to a later command of the same run, which provides what is
    /// still missing: `.ci/run` runs the suite while the container image is
    /// being built, then the image trials once it is. Ignored with the
    /// reason, also when `CI` is set; the later command fails them if it
    /// still cannot run them.
    Later(String),
}

impl Unmet {
    /// The programs of `needs` that are not on `PATH`, as one [`Unmet`].
    ///
    /// # Errors
    /// [`Unmet::Missing`] naming every missing program.
    pub fn programs(needs: &[&str]) -> Result<(), Unmet> {
        let missing = missing(needs);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Unmet::Missing(format!(
                "needs {}, which {} not installed",
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            )))
        }
    }

    /// The reason, as shown.
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            Unmet::Missing(reason) | Unmet::NotAllowed(reason) | Unmet::Later(reason) => reason,
        }
    }
}

/// A trial that first checks what it needs (`gate`, run when the trial
/// runs, so that a probe costs nothing for trials not selected) and then
/// runs `runner` with what the gate found.
///
/// When the gate fails, the trial is reported as ignored with the reason
/// (`name ... ignored (needs kpt, which is not installed)`), also under
/// `--include-ignored`: it never passes without having run. With `CI` set,
/// an [`Unmet::Missing`] is a failure naming what is missing.
pub fn gated<T>(
    name: impl Into<String>,
    gate: impl FnOnce() -> Result<T, Unmet> + Send + 'static,
    runner: impl FnOnce(T) -> Result<(), Failed> + Send + 'static,
) -> Trial {
    Trial::ignorable_test(name, move || match gate() {
        Ok(found) => runner(found).map(|()| Completion::Completed),
        Err(Unmet::Missing(reason)) if under_ci() => {
            Err(format!("{reason}; CI is set, so this trial must run").into())
        }
        Err(unmet) => Ok(Completion::ignored_with(unmet.reason())),
    })
}

/// A trial running `test` (which may panic to fail), that needs the
/// programs `needs` on `PATH`. Without them it is ignored with the reason
/// (`... ignored (needs docker-registry, which is not installed)`); with
/// `CI` set it fails instead, naming them.
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
    let needs: Vec<String> = needs.iter().map(|n| (*n).to_owned()).collect();
    gated(
        name,
        move || Unmet::programs(&needs.iter().map(String::as_str).collect::<Vec<_>>()),
        move |()| runner(),
    )
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

/// Run `command` with `input` on its stdin, its stdout and stderr captured.
///
/// # Panics
/// When it cannot be started.
pub fn output_with_stdin(
    command: &mut std::process::Command,
    input: &[u8],
) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut stdin) = child.stdin.take() {
        // A program that exits without reading all of it is not an error here.
        let _ = stdin.write_all(input);
    }
    child.wait_with_output().unwrap()
}

/// Run `trials` with the command line's arguments, and exit.
pub fn run(trials: Vec<Trial>) -> ! {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, trials).exit()
}
