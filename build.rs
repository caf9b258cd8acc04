//! Build script: the git commit for `image-update --version`.
//!
//! Built from a git checkout (a `.git` directory, or the `.git` file of a
//! worktree, beside this file), it sets `IMAGE_UPDATE_VERSION_SUFFIX` to
//! ` (commit abcdef1, 2026-11-23)`: the abbreviated commit and its commit
//! date. Anywhere else (a crate tarball, a source archive, no `git`
//! program, git refusing the directory) the suffix is empty and `--version`
//! prints the plain version. It never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let suffix = if root.join(".git").exists() {
        git_suffix(&root).unwrap_or_default()
    } else {
        String::new()
    };
    println!("cargo:rustc-env=IMAGE_UPDATE_VERSION_SUFFIX={suffix}");
}

/// Runs `git ARGS` in `root`; its trimmed stdout when it succeeded.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// ` (commit abcdef1, 2026-11-23)`, and the files whose change means a new
/// commit is checked out (so the script runs again then, and only then).
fn git_suffix(root: &Path) -> Option<String> {
    let commit = git(root, &["rev-parse", "--short=7", "HEAD"])?;
    let date = git(root, &["log", "-1", "--format=%cd", "--date=short", "HEAD"])?;
    let absolute = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { root.join(p) }
    };
    if let Some(git_dir) = git(root, &["rev-parse", "--git-dir"]).map(absolute) {
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    }
    if let (Some(common), Some(reference)) = (
        git(root, &["rev-parse", "--git-common-dir"]).map(absolute),
        git(root, &["symbolic-ref", "-q", "HEAD"]),
    ) {
        for file in [common.join(reference), common.join("packed-refs")] {
            if file.exists() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
    }
    Some(format!(" (commit {commit}, {date})"))
}
