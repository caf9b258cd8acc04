//! A KubeSphere ImageUpdater in the repository is read once, by the value reader every policy
//! file goes through (`kubesphere::read`), for the Argo CD write-back too: the Argo CD catalog
//! parses such a file a second time, as values, with that reader's limits. A file the span tree
//! reads but the value reader refuses (nested past its depth, an alias bomb past its node budget)
//! is passed over with a warning at its line, within the time and memory bounds, nothing written.

use std::fmt::Write as _;
use std::time::Duration;

use libtest_mimic::Trial;

use crate::support::{bin, bounded, snapshot, stderr, trial, write};

/// Far above what a refused file costs (well under a second in a release build; a few seconds in
/// a debug build for the alias bomb, expanded up to the reader's node budget).
const TIME: Duration = Duration::from_secs(30);

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "readers: a KubeSphere ImageUpdater nested past the value reader's depth is passed over",
            updater_nested_too_deep,
        ),
        trial(
            "readers: a KubeSphere ImageUpdater with an alias bomb is passed over within bounds",
            updater_alias_bomb,
        ),
    ]
}

const APP: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop, namespace: demo}\nspec:\n  source: {repoURL: https://example.com/r.git, path: apps, targetRevision: main}\n";

const HEAD: &str = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: demo}\n";

/// `update --dry-run` over a repository holding `updater` and its Application: exit 0, the
/// warning `want` in the output, the tree as it was.
fn passed_over(updater: &str, want: &str) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "repo/app.yaml", APP);
    write(dir.path(), "repo/updater.yaml", updater);
    let before = snapshot(dir.path());
    let mut c = bin();
    c.args(["update", "--dry-run"]).arg(dir.path().join("repo"));
    let out = bounded(&c, TIME);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(want), "{}", stderr(&out));
    assert_eq!(snapshot(dir.path()), before);
}

fn updater_nested_too_deep() {
    let deep = format!("{}{}", "[".repeat(45), "]".repeat(45));
    let updater = format!(
        "{HEAD}spec:\n  kind: argocd\n  images: [web=ghcr.io/acme/web]\n  argocd:\n    app: {{name: shop}}\n    deep: {deep}\n"
    );
    passed_over(
        &updater,
        "updater.yaml:9:48: warning: holds a KubeSphere ImageUpdater but is not valid YAML, so it is not read: nested more than 40 levels deep",
    );
}

fn updater_alias_bomb() {
    // Ten to the twelfth strings once expanded.
    let mut updater = format!("{HEAD}x0: &a0 [{}]\n", ["lol"; 10].join(", "));
    for i in 1..12 {
        let prev = format!("*a{}", i - 1);
        writeln!(updater, "x{i}: &a{i} [{}]", vec![prev; 10].join(", ")).unwrap();
    }
    updater.push_str(
        "spec:\n  kind: argocd\n  images: [web=ghcr.io/acme/web]\n  argocd:\n    app: {name: shop}\n    bomb: *a11\n",
    );
    passed_over(
        &updater,
        "updater.yaml:9:15: warning: holds a KubeSphere ImageUpdater but is not valid YAML, so it is not read:",
    );
}
