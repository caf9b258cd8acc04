//! PyPI's `kubernetes-validate`: Kubernetes manifests checked against the
//! API server's own OpenAPI schemas (built-in kinds only), for the latest
//! Kubernetes minor versions the installed release knows. `.ci/run`
//! installs it; [`trials`] turns a check into one trial per version, ignored
//! (or failed with `CI`) when the program is missing.

use std::path::PathBuf;
use std::process::Command;

use libtest_mimic::{Failed, Trial};

/// The program.
pub const PROGRAM: &str = "kubernetes-validate";

/// The two latest Kubernetes minor versions the installed
/// `kubernetes-validate` knows (asked of its own Python), or, when it is not
/// installed, the two its pinned release (`.ci/run`) knows, so that the
/// trials still have names.
#[must_use]
pub fn versions() -> Vec<String> {
    let from_tool = crate::find_program(PROGRAM).and_then(|bin| {
        let script = fs_err::read_to_string(bin).ok()?;
        let python = script.lines().next()?.strip_prefix("#!")?.trim().to_owned();
        let out = Command::new(python)
            .args([
                "-c",
                "from kubernetes_validate import utils\n\
                 from packaging.version import Version\n\
                 known = sorted({utils.major_minor(v) for v in utils.all_versions()}, key=Version)\n\
                 print(' '.join(known[-2:]))",
            ])
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let versions: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        (out.status.success() && versions.len() == 2).then_some(versions)
    });
    from_tool.unwrap_or_else(|| vec!["1.36".to_owned(), "1.37".to_owned()])
}

/// Validate every manifest of `paths` for Kubernetes `version`, strictly
/// (unknown fields are errors); the failure quotes the tool.
///
/// # Errors
/// The tool's report when a manifest fails, or when it cannot run.
pub fn check(paths: &[PathBuf], version: &str) -> Result<(), Failed> {
    let out = Command::new(PROGRAM)
        .args(["--strict", "-k", version])
        .args(paths)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || !text.contains("passed") || text.contains("ERROR") {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "{PROGRAM} --strict -k {version} {}:\n{text}",
            names.join(" ")
        )
        .into());
    }
    Ok(())
}

/// One trial per version of [`versions`]: `make` gives the manifests to
/// check (it may write them, e.g. into a temporary directory it keeps alive
/// in the returned guard).
pub fn trials<G: 'static>(
    name: &str,
    make: impl Fn() -> (G, Vec<PathBuf>) + Send + Sync + Clone + 'static,
) -> Vec<Trial> {
    versions()
        .into_iter()
        .map(|version| {
            let make = make.clone();
            crate::trial_with(
                format!("{name} (Kubernetes {version})"),
                &[PROGRAM],
                move || {
                    let (_guard, paths) = make();
                    check(&paths, &version)
                },
            )
        })
        .collect()
}
