//! PyPI's `kubernetes-validate`: Kubernetes manifests checked against the
//! API server's own OpenAPI schemas (built-in kinds only), for every
//! Kubernetes minor version image-update supports ([`OLDEST`] to the newest
//! the installed release knows). `.ci/run` installs it; [`trials`] turns a
//! check into one trial per version, ignored (or failed with `CI`) when the
//! program is missing.

use std::path::PathBuf;
use std::process::Command;

use libtest_mimic::{Failed, Trial};

/// The program.
pub const PROGRAM: &str = "kubernetes-validate";

/// The oldest Kubernetes minor version the generated manifests must be
/// valid for.
pub const OLDEST: (u32, u32) = (1, 30);

/// The newest minor version the pinned release (`.ci/run`) knows: the end
/// of the range when the tool is not installed, so that the trials still
/// have names.
const NEWEST_PINNED: (u32, u32) = (1, 37);

/// Every Kubernetes minor version from [`OLDEST`] to the newest the
/// installed `kubernetes-validate` knows (asked of its own Python), and at
/// least to the newest its pinned release knows (so that the trials have
/// names when it is not installed, and an older install fails the versions
/// it lacks rather than skipping them).
#[must_use]
pub fn versions() -> Vec<String> {
    let from_tool = crate::find_program(PROGRAM).and_then(|bin| {
        let script = fs_err::read_to_string(bin).ok()?;
        let python = script.lines().next()?.strip_prefix("#!")?.trim().to_owned();
        let out = Command::new(python)
            .args([
                "-c",
                "from kubernetes_validate import utils\n\
                 print(' '.join(sorted({utils.major_minor(v) for v in utils.all_versions()})))",
            ])
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let newest = text
            .split_whitespace()
            .filter_map(parse)
            .filter(|(major, _)| *major == OLDEST.0)
            .max();
        newest.filter(|_| out.status.success())
    });
    let newest = from_tool.map_or(NEWEST_PINNED, |v| v.max(NEWEST_PINNED));
    (OLDEST.1..=newest.1)
        .map(|minor| format!("{}.{minor}", OLDEST.0))
        .collect()
}

/// `1.30` as `(1, 30)`.
fn parse(version: &str) -> Option<(u32, u32)> {
    let (major, minor) = version.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
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
