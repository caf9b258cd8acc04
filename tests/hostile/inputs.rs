//! Inputs shaped to exhaust a reader: nesting a thousand levels deep (each YAML reader recurses
//! per level: it must refuse before a worker thread's stack runs out), and alias bombs (a billion
//! laughs: each alias doubles what is expanded). Every reader that a repository or stdin reaches:
//! the definitions of the tree (`--fetch`), a `--policies` file, the KRM function's ResourceList,
//! Argo CD Applications, a marked file. Each run must end (bounded) with a clear message, never a
//! crash.

use std::time::Duration;

use libtest_mimic::Trial;

use crate::support::{bin, bounded, stderr, stdout, trial, write};

pub fn trials() -> Vec<Trial> {
    [
        (
            "deep_nesting_in_every_reader",
            deep_nesting_in_every_reader as fn(),
        ),
        ("alias_bombs_in_every_reader", alias_bombs_in_every_reader),
    ]
    .into_iter()
    .map(|(name, test)| trial(&format!("inputs::{name}"), test))
    .collect()
}

const LIMIT: Duration = Duration::from_secs(60);

/// The files of a tree, each with `value` as a field of its object.
fn tree(root: &std::path::Path, value: &str) {
    write(
        root,
        "flux/policy.yaml",
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: web, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: web}}\n  x: {value}\n"
        ),
    );
    write(
        root,
        "apps/app.yaml",
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: web, namespace: argocd}}\nspec:\n  source: {{repoURL: https://x.test/r.git, path: p}}\n  x: {value}\n"
        ),
    );
    write(
        root,
        "apps/pod.yaml",
        format!(
            "kind: Pod\nimage: nginx:1.0 # {{\"$imagepolicy\": \"flux-system:web\"}}\nx: {value}\n"
        ),
    );
}

/// Every reader over a tree holding `value`: the run ends, without a signal, saying why.
fn every_reader(value: &str) {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), value);
    let runs: [&[&str]; 3] = [
        &["update", ".", "--fetch", "--dry-run"],
        &[
            "update",
            "apps",
            "--policies",
            "flux/policy.yaml",
            "--dry-run",
        ],
        &[
            "update",
            "apps",
            "--policy",
            "flux-system:web=nginx:1.1",
            "--dry-run",
        ],
    ];
    for args in runs {
        let mut c = bin();
        c.current_dir(dir.path()).args(args);
        let out = bounded(&c, LIMIT);
        assert!(out.status.code().is_some(), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty(), "{args:?}: nothing said");
    }
    // The KRM function, the same objects as items.
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImagePolicy\n  metadata: {{name: web, namespace: flux-system}}\n  x: {value}\n- kind: Pod\n  metadata: {{name: p}}\n  image: nginx:1.0 # {{\"$imagepolicy\": \"flux-system:web\"}}\n  x: {value}\n"
    );
    let input = write(dir.path(), "list.yaml", list);
    let mut c = bin();
    c.arg("fn");
    let out = crate::support::bounded_with_stdin(&c, LIMIT, &input);
    assert!(out.status.code().is_some(), "fn: {}", stderr(&out));
    let answer = stdout(&out);
    assert!(
        answer.contains("ResourceList") || !stderr(&out).is_empty(),
        "fn said nothing"
    );
}

fn deep_nesting_in_every_reader() {
    for depth in [60, 1_000, 100_000] {
        every_reader(&format!("{}1{}", "{a: ".repeat(depth), "}".repeat(depth)));
        every_reader(&format!("{}1{}", "[".repeat(depth), "]".repeat(depth)));
    }
}

fn alias_bombs_in_every_reader() {
    // Ten levels of ten aliases each: 10^10 nodes if expanded.
    let mut value = String::from("&a0 [x, x, x, x, x, x, x, x, x, x]");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        value = format!(
            "{{n: {value}, m: &a{i} [{}]}}",
            [prev.as_str(); 10].join(", ")
        );
    }
    every_reader(&value);
}
