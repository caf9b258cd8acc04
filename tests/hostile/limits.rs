//! Inputs sized to make the work quadratic: an Argo CD Image Updater `ImageUpdater` with 20,000
//! `applicationRefs` over 2,000 Applications (4 s with name patterns, 6 s with label selectors in
//! a release build, 71 s in a debug one, when every reference was tried on every Application: over
//! the 10,000 references a CR may list, the error names the reference over it, before any is
//! read; at the limit, the run is linear), and KubeSphere `ImageUpdater`s with 10,000 images
//! written back (each image's write-back scanned the others: 58 s) and 100,000 images (over the
//! 10,000 images an Application may follow: the error names the image over it, before any is
//! read). Each run must finish well within the time the quadratic version took, under the
//! address-space limit.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use image_update_testkit::trial;
use libtest_mimic::Trial;

use crate::support::{bin, bounded, stderr, write};

/// Applications, as measured.
const APPS: usize = 2_000;

/// The time a run may take: about five times the debug build's on a loaded 2-core machine
/// (1.9 s, 2.6 s, 3.2 s, 2.7 s), and a fraction of what the quadratic version took.
const CRD_TIME: Duration = Duration::from_secs(15);
const IMAGES_TIME: Duration = Duration::from_secs(20);
const OVER_TIME: Duration = Duration::from_secs(15);

/// 2,000 Applications (`app-NNNNN`, each labelled `team: team-NNNNN`, each with its kustomization)
/// and an `ImageUpdater` whose first reference selects them all, followed by `refs` references
/// that select none: `write_ref(i)` writes the i-th. Returns the `--policy` arguments for every
/// Application's image.
fn crd_tree(root: &Path, refs: usize, write_ref: impl Fn(usize) -> String) -> Vec<String> {
    let mut apps = String::new();
    let mut policies = Vec::new();
    for i in 0..APPS {
        write!(
            apps,
            "---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: app-{i:05}, namespace: argocd, labels: {{team: team-{i:05}}}}}\nspec:\n  source: {{repoURL: https://git.example.test/acme/deploy.git, path: apps/app-{i:05}, targetRevision: main}}\n"
        )
        .unwrap();
        write(
            root,
            &format!("apps/app-{i:05}/kustomization.yaml"),
            "resources: [deployment.yaml]\nimages:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n",
        );
        policies.push("--policy".to_owned());
        policies.push(format!("argocd:app-{i:05}/web=ghcr.io/acme/web:1.2.3"));
    }
    write(root, "applications.yaml", apps);
    // Ten lines before the references that select nothing.
    let mut updater = "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: big, namespace: argocd}\nspec:\n  writeBackConfig: {method: git, gitConfig: {branch: main, writeBackTarget: kustomization}}\n  applicationRefs:\n  - namePattern: \"app-*\"\n    images:\n    - alias: web\n      imageName: ghcr.io/acme/web:^1\n".to_owned();
    for i in 0..refs {
        updater.push_str(&write_ref(i));
    }
    write(root, "argocd/updater.yaml", updater);
    policies
}

/// A name pattern that matches no Application (two lines).
fn name_pattern(i: usize) -> String {
    format!("  - namePattern: \"other-{i:05}-*\"\n    useAnnotations: true\n")
}

/// A label selector that matches no Application, with the pattern `*` (three lines).
fn label_selector(i: usize) -> String {
    format!(
        "  - namePattern: \"*\"\n    labelSelectors: {{matchLabels: {{team: none-{i:05}}}}}\n    useAnnotations: true\n"
    )
}

/// With the references the limit allows (the one that selects every Application, and 9,999
/// that select none), every Application's image is written back.
fn crd_at_the_limit(write_ref: fn(usize) -> String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let policies = crd_tree(&root, 9_999, write_ref);
    let mut c = bin();
    c.args(["update", "--dry-run"]).arg(&root).args(&policies);
    let out = bounded(&c, CRD_TIME);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.ends_with(&format!("would update {APPS} fields in {APPS} files\n")),
        "{}",
        stderr(&out)
    );
}

/// With 20,000 references, the error is at the 10,001st (written on `line`).
fn crd_over_the_limit(write_ref: fn(usize) -> String, line: usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let policies = crd_tree(&root, 20_000, write_ref);
    let mut c = bin();
    c.args(["update", "--dry-run"]).arg(&root).args(&policies);
    let out = bounded(&c, OVER_TIME);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = format!(
        "argocd/updater.yaml:{line}:5: error: ImageUpdater argocd/big: spec.applicationRefs lists 20001 references; at most 10000 are read per ImageUpdater (split them over several)"
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
}

/// Name patterns: the 10,001st reference is the 10,000th that selects nothing.
fn crd_name_patterns() {
    crd_at_the_limit(name_pattern);
    crd_over_the_limit(name_pattern, 11 + 2 * 9_999);
}

/// Label selectors.
fn crd_label_selectors() {
    crd_at_the_limit(label_selector);
    crd_over_the_limit(label_selector, 11 + 3 * 9_999);
}

/// A KubeSphere `ImageUpdater` of `images` images for the Application `demo/demo` (written back
/// to git, to its override file) in `root/repo`, and with `policies` the ImagePolicies with a
/// result for each (files of 10,000 in `root`).
fn kubesphere_tree(root: &Path, images: usize, policies: bool) -> Vec<std::path::PathBuf> {
    let mut updater = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: big, namespace: demo}\nspec:\n  kind: argocd\n  argocd:\n    app: {name: demo, namespace: demo}\n    write: git\n  images:\n".to_owned();
    let mut files = Vec::new();
    let mut items = String::new();
    for i in 0..images {
        writeln!(
            updater,
            "  - img{i:06}=registry.example.test/acme/image-{i:06}:^1"
        )
        .unwrap();
        if !policies {
            continue;
        }
        writeln!(
            items,
            "- {{apiVersion: image.toolkit.fluxcd.io/v1, kind: ImagePolicy, metadata: {{name: img{i:06}, namespace: demo}}, status: {{latestRef: {{name: registry.example.test/acme/image-{i:06}, tag: 1.2.3}}}}}}"
        )
        .unwrap();
        if (i + 1) % 10_000 == 0 || i + 1 == images {
            let file = format!("policies-{}.yaml", files.len());
            files.push(write(
                root,
                &file,
                format!("apiVersion: v1\nkind: List\nitems:\n{items}"),
            ));
            items.clear();
        }
    }
    let repo = root.join("repo");
    write(&repo, "kubesphere/updater.yaml", updater);
    write(
        &repo,
        "demo/application.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: demo, namespace: demo}\nspec:\n  source: {repoURL: https://git.example.test/acme/deploy.git, path: demo, targetRevision: main}\n",
    );
    write(
        &repo,
        "demo/kustomization.yaml",
        "resources: [deployment.yaml]\n",
    );
    files
}

/// 10,000 images, the most an Application may follow, are all written back.
fn kubesphere_images_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let policies = kubesphere_tree(dir.path(), 10_000, true);
    let mut c = bin();
    c.args(["update", "--dry-run"]).arg(dir.path().join("repo"));
    for p in &policies {
        c.arg("--policies").arg(p);
    }
    let out = bounded(&c, IMAGES_TIME);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.ends_with("would update 10000 fields in 1 file\n"),
        "{}",
        stderr(&out)
    );
}

/// 100,000 images: the error names the first image over the limit (file, line, column) and the
/// limit, and the images are not read; so with `--fetch`, before any registry is asked.
fn kubesphere_images_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    kubesphere_tree(dir.path(), 100_000, false);
    for fetch in [false, true] {
        let mut c = bin();
        c.args(["update", "--dry-run"]).arg(dir.path().join("repo"));
        if fetch {
            c.args(["--fetch", "--fetch-timeout", "5s"]);
        }
        let out = bounded(&c, OVER_TIME);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        // The 10,001st image is on line 10 + 10,000.
        let want = "kubesphere/updater.yaml:10010:5: error: ImageUpdater demo/big: spec.images lists 100000 images; at most 10000 are read per Application (split them over several)";
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
    }
    // A Flux one, whose images are policies to fetch: none is asked for.
    let flux = dir.path().join("flux");
    let mut updater = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: flux, namespace: demo}\nspec:\n  kind: fluxcd\n  fluxcd: {interval: 1m, sourceRef: {kind: GitRepository, name: repo}}\n  images:\n".to_owned();
    for i in 0..100_000 {
        writeln!(
            updater,
            "  - img{i:06}=registry.example.test/acme/image-{i:06}:^1"
        )
        .unwrap();
    }
    write(&flux, "updater.yaml", updater);
    let mut c = bin();
    c.args(["update", "--dry-run", "--fetch"]).arg(&flux);
    let out = bounded(&c, OVER_TIME);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = "updater.yaml:10008:5: error: ImageUpdater demo/flux: spec.images lists 100000 images; at most 10000 are read per ImageUpdater (split them over several)";
    assert!(stderr(&out).contains(want), "{}", stderr(&out));
}

/// An `image-list` annotation of 10,001 images: the error is at the annotation.
fn image_list_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let list: Vec<String> = (0..10_001)
        .map(|i| format!("i{i}=ghcr.io/acme/image-{i}"))
        .collect();
    write(
        &root,
        "app.yaml",
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: many\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: {}\nspec:\n  source: {{repoURL: https://git.example.test/acme/deploy.git, path: many}}\n",
            list.join(",")
        ),
    );
    let mut c = bin();
    c.args(["update", "--dry-run"]).arg(&root);
    let out = bounded(&c, OVER_TIME);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("app.yaml:7:50: error: argocd-image-updater.argoproj.io/image-list lists 10001 images; at most 10000 are read per Application"),
        "{}",
        stderr(&out)
    );
}

pub fn trials() -> Vec<Trial> {
    vec![
        trial("limits_crd_name_patterns", &["prlimit"], crd_name_patterns),
        trial(
            "limits_crd_label_selectors",
            &["prlimit"],
            crd_label_selectors,
        ),
        trial(
            "limits_kubesphere_images_at_the_limit",
            &["prlimit"],
            kubesphere_images_at_the_limit,
        ),
        trial(
            "limits_kubesphere_images_over_the_limit",
            &["prlimit"],
            kubesphere_images_over_the_limit,
        ),
        trial(
            "limits_image_list_over_the_limit",
            &["prlimit"],
            image_list_over_the_limit,
        ),
    ]
}
