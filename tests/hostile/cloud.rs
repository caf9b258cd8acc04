//! What a repository's author can make the cloud logins and credential programs do: an Argo CD
//! `pull-secret: ext:PATH` runs nothing the operator did not allow (by exact path, for its
//! registry), never a program inside the tree (symlinks resolved either way), and a program that
//! hangs or floods is stopped; a definition's `spec.provider` sends the workload's cloud token
//! to its own cloud's registry only, so naming a provider for a host of the author's choosing
//! sends nothing anywhere.

use std::path::Path;
use std::time::Duration;

use image_update_testkit::registry::{FakeServer, Reply};
use libtest_mimic::Trial;

use super::support::{bin, bounded, snapshot, stderr, write};

const LIMIT: Duration = Duration::from_secs(60);

pub fn trials() -> Vec<Trial> {
    [
        (
            "cloud::a_program_named_by_the_repository_is_not_run",
            a_program_named_by_the_repository_is_not_run as fn(),
        ),
        (
            "cloud::a_program_inside_the_tree_never_runs_even_allowed",
            a_program_inside_the_tree_never_runs_even_allowed,
        ),
        (
            "cloud::an_allowed_program_answers_for_its_registry_only",
            an_allowed_program_answers_for_its_registry_only,
        ),
        (
            "cloud::a_program_that_hangs_or_floods_is_stopped",
            a_program_that_hangs_or_floods_is_stopped,
        ),
        (
            "cloud::a_provider_for_a_foreign_host_sends_nothing",
            a_provider_for_a_foreign_host_sends_nothing,
        ),
    ]
    .into_iter()
    .map(|(name, test)| super::support::trial(name, test))
    .collect()
}

/// An executable shell script at `path` that leaves `ran` behind when run, then does `body`.
fn program(path: &Path, ran: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(
        path.parent().unwrap(),
        path.file_name().unwrap().to_str().unwrap(),
        format!("#!/bin/sh\ntouch '{}'\n{body}\n", ran.display()),
    );
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A tree whose Argo CD Application asks for `ext:{program}` for an image on `host`.
fn tree(root: &Path, host: &str, program: &str) {
    write(
        root,
        "apps/web.yaml",
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web={host}/team/web:^1\n    argocd-image-updater.argoproj.io/web.pull-secret: ext:{program}\nspec:\n  source: {{repoURL: https://git.example.test/fleet.git, path: web, kustomize: {{}}}}\n  destination: {{namespace: web}}\n"
        ),
    );
    write(root, "web/kustomization.yaml", "resources: []\n");
}

fn fetch(root: &Path, extra: &[&str]) -> std::process::Output {
    let mut c = bin();
    c.args(["update", "--fetch"]).arg(root).args(extra);
    bounded(&c, LIMIT)
}

fn a_program_named_by_the_repository_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let (outside, root) = (dir.path().join("outside"), dir.path().join("repo"));
    let ran = dir.path().join("ran");
    let creds = outside.join("creds");
    program(&creds, &ran, "echo user:password");
    tree(&root, "127.0.0.1:9", creds.to_str().unwrap());
    let before = snapshot(&root);
    let out = fetch(&root, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not allowed to run")
            && stderr(&out).contains("--allow-credential-program"),
        "{}",
        stderr(&out)
    );
    assert!(!ran.exists(), "the program ran");
    assert_eq!(snapshot(&root), before);
    // An allowed program of another path is not this one.
    let other = outside.join("other");
    program(&other, &ran, "echo user:password");
    let out = fetch(
        &root,
        &["--allow-credential-program", other.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!ran.exists(), "a program ran");
}

fn a_program_inside_the_tree_never_runs_even_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let ran = dir.path().join("ran");
    let inside = root.join("tools/creds");
    program(&inside, &ran, "echo user:password");
    // Named directly, and through a link outside the tree that points in.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    for named in [&inside, &link] {
        tree(&root, "127.0.0.1:9", named.to_str().unwrap());
        for allowed in [&inside, &link] {
            let out = fetch(
                &root,
                &["--allow-credential-program", allowed.to_str().unwrap()],
            );
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(
                stderr(&out).contains("inside the tree being updated"),
                "{}",
                stderr(&out)
            );
            assert!(!ran.exists(), "the program ran");
        }
    }
}

fn an_allowed_program_answers_for_its_registry_only() {
    let dir = tempfile::tempdir().unwrap();
    let (outside, root) = (dir.path().join("outside"), dir.path().join("repo"));
    let ran = dir.path().join("ran");
    let creds = outside.join("creds");
    program(&creds, &ran, "echo user:password");
    // The annotation names the attacker's registry; the operator allowed the program for
    // another one.
    let attacker = FakeServer::start(|_| Reply::status(401));
    tree(&root, &attacker.authority(), creds.to_str().unwrap());
    let out = fetch(
        &root,
        &[
            "--allow-credential-program",
            &format!("registry.example.test={}", creds.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is allowed for registry.example.test, not for"),
        "{}",
        stderr(&out)
    );
    assert!(!ran.exists(), "the program ran");
    assert!(attacker.requests().is_empty());
}

fn a_program_that_hangs_or_floods_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (outside, root) = (dir.path().join("outside"), dir.path().join("repo"));
    let ran = dir.path().join("ran");
    for (name, body, says) in [
        ("hangs", "exec sleep 3600", "did not answer in time"),
        (
            "floods",
            "exec yes user:password",
            "printed more than 65536 bytes",
        ),
        ("fails", "echo user:secret-output; exit 3", "exited with"),
        (
            "mumbles",
            "echo no-colon-here",
            "did not print USER:PASSWORD",
        ),
    ] {
        let creds = outside.join(name);
        program(&creds, &ran, body);
        tree(&root, "127.0.0.1:9", creds.to_str().unwrap());
        let started = std::time::Instant::now();
        let out = fetch(
            &root,
            &["--allow-credential-program", creds.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{name}: {}", stderr(&out));
        assert!(!stderr(&out).contains("secret-output"), "{}", stderr(&out));
        assert!(ran.exists(), "{name} did not run");
        assert!(started.elapsed() < Duration::from_secs(30), "{name}");
        fs_err::remove_file(&ran).unwrap();
    }
}

fn a_provider_for_a_foreign_host_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    // Every endpoint and the "registry" are the attacker's server.
    let attacker = FakeServer::start(|_| Reply::json(200, "{}"));
    let host = attacker.authority();
    for provider in ["aws", "gcp", "azure"] {
        write(
            &root,
            "flux/images.yaml",
            format!(
                "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: web, namespace: ns}}\nspec: {{image: {host}/team/web, provider: {provider}}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: web, namespace: ns}}\nspec:\n  imageRepositoryRef: {{name: web}}\n  policy: {{semver: {{range: '^1'}}}}\n"
            ),
        );
        let url = attacker.url("");
        let mut c = bin();
        c.args(["update", "--fetch"])
            .arg(&root)
            .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", "workload-secret")
            .env("AWS_ENDPOINT_URL", &url)
            .env("GCE_METADATA_HOST", &host)
            .env("AZURE_AUTHORITY_HOST", &url)
            .env("AZURE_CLIENT_ID", "c")
            .env("AZURE_TENANT_ID", "t")
            .env("AZURE_CLIENT_SECRET", "workload-secret");
        let out = bounded(&c, LIMIT);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{provider} login failed: {host} is not")),
            "{}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("workload-secret"));
    }
    assert!(attacker.requests().is_empty(), "{:?}", attacker.requests());
}
