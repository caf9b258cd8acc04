//! Writes and reads of a hostile tree: symlinks out of it (the file, or a directory on its way),
//! Application names and namespaces that are paths, source paths that climb out, FIFOs where a
//! write-back target is read, a Secret name that is a path. Every front end that reads a tree
//! (`update`, `--output-dir`, `--dry-run`, `--fetch`, the Action) refuses them with the file and
//! position, writes nothing anywhere, and does not hang.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use libtest_mimic::Trial;

use crate::support::{bin, bounded, snapshot, stderr, stdout, write};

pub fn trials() -> Vec<Trial> {
    [
        (
            "symlinked_targets_out_of_the_tree",
            symlinked_targets_out_of_the_tree as fn(),
        ),
        (
            "a_symlinked_directory_on_the_way_out",
            a_symlinked_directory_on_the_way_out,
        ),
        (
            "application_names_that_are_paths",
            application_names_that_are_paths,
        ),
        (
            "a_source_path_out_of_the_repository",
            a_source_path_out_of_the_repository,
        ),
        ("fifos_where_targets_are_read", fifos_where_targets_are_read),
        (
            "markers_through_a_link_out_never_reach_an_output_dir",
            markers_through_a_link_out_never_reach_an_output_dir,
        ),
        ("a_secret_name_that_is_a_path", a_secret_name_that_is_a_path),
        (
            "the_action_refuses_a_link_out_of_the_workspace",
            the_action_refuses_a_link_out_of_the_workspace,
        ),
    ]
    .into_iter()
    .map(|(name, test)| crate::support::trial(&format!("writes::{name}"), test))
    .collect()
}

const LIMIT: Duration = Duration::from_secs(30);

/// An Application of `name` (in `namespace`) writing back to git, its source at `path`, with
/// `extra` annotations.
fn application(name: &str, namespace: &str, path: &str, extra: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name:?}
  namespace: {namespace:?}
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=ghcr.io/acme/web:~2
    argocd-image-updater.argoproj.io/write-back-method: git
{extra}spec:
  source:
    repoURL: https://github.com/acme/repo
    path: {path}
    kustomize: {{}}
"
    )
}

/// A scratch directory holding `repo/` (the tree) and `outside/x.yaml` (a file an attacker wants
/// changed, or copied somewhere they can read it).
fn scratch() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fs_err::create_dir_all(repo.join("apps")).unwrap();
    write(dir.path(), "outside/x.yaml", "secret: kept out\n");
    (dir, repo)
}

/// Run `update` with `args` in `dir`, bounded; returns (exit code, stderr).
fn update(dir: &Path, args: &[&str]) -> (i32, String) {
    let mut c = bin();
    c.current_dir(dir).arg("update").args(args);
    let out = bounded(&c, LIMIT);
    (out.status.code().unwrap_or(-1), stderr(&out))
}

/// Every byte of the scratch directory.
fn state(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    snapshot(dir)
}

/// A scratch directory whose tree holds `apps/web.yaml`, the Application `web` (source at
/// `path`, `extra` annotations).
fn with_web(path: &str, extra: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, repo) = scratch();
    write(
        &repo,
        "apps/web.yaml",
        application("web", "argocd", path, extra),
    );
    (dir, repo)
}

/// `update repo --policy ... ARGS` in `dir` exits 1 with `expected` on stderr, and changes no
/// byte of `dir`; returns stderr.
fn refused(dir: &Path, more: &[&str], expected: &str) -> String {
    let before = state(dir);
    let mut args = vec!["repo", "--policy", "argocd:web/web=ghcr.io/acme/web:2.5.1"];
    args.extend(more.iter().copied());
    let (code, err) = update(dir, &args);
    assert_eq!(code, 1, "{more:?}: {err}");
    assert!(
        err.contains(expected),
        "{more:?}: expected {expected:?}:\n{err}"
    );
    assert_eq!(state(dir), before, "{more:?}: something was written");
    err
}

fn symlinked_targets_out_of_the_tree() {
    // The override file, a Helm values file and a kustomization, each a link out of the tree.
    let cases = [
        ("", "deploy/web/.argocd-source-web.yaml"),
        (
            "    argocd-image-updater.argoproj.io/write-back-target: helmvalues\n",
            "deploy/web/values.yaml",
        ),
        (
            "    argocd-image-updater.argoproj.io/write-back-target: kustomization\n",
            "deploy/web/kustomization.yaml",
        ),
    ];
    for (extra, link) in cases {
        for mode in [
            &[][..],
            &["--dry-run"],
            &["--output-dir", "out"],
            &["--diff"],
        ] {
            let (dir, repo) = with_web("deploy/web", extra);
            fs_err::create_dir_all(repo.join("deploy/web")).unwrap();
            // Relative (as a committed link is) and absolute (a file of the machine).
            let target = if link.ends_with("values.yaml") {
                dir.path().join("outside/x.yaml").display().to_string()
            } else {
                "../../../outside/x.yaml".to_owned()
            };
            symlink(&target, repo.join(link)).unwrap();
            let err = refused(
                dir.path(),
                mode,
                &format!("{link} is a symlink that resolves outside the tree"),
            );
            assert!(err.contains("repo/apps/web.yaml:"), "{err}");
        }
    }
}

fn a_symlinked_directory_on_the_way_out() {
    let (dir, repo) = with_web("deploy/web", "");
    symlink("../outside", repo.join("deploy")).unwrap();
    refused(
        dir.path(),
        &[],
        "resolves outside the tree through the symlink deploy",
    );
    assert!(!dir.path().join("outside/web").exists());
}

fn application_names_that_are_paths() {
    // (name, namespace, the error's position)
    let cases = [
        ("x/../../../../../../../PWNED", "argocd", "4:9"),
        ("x/../../../../outside/x", "argocd", "4:9"),
        ("x/../../apps/other", "argocd", "4:9"),
        ("web", "../../../../PWNED", "5:14"),
        ("Web", "argocd", "4:9"),
        ("web\n::error file=x::forged", "argocd", "4:9"),
    ];
    for (name, namespace, position) in cases {
        for args in [
            &["repo", "--policy", "argocd:web/web=ghcr.io/acme/web:2.5.1"][..],
            // With --fetch the Application's own image list is enough to reach the write-back.
            &["repo", "--fetch", "--dry-run"],
        ] {
            let (dir, repo) = scratch();
            write(
                &repo,
                "apps/web.yaml",
                application(name, namespace, "deploy/web", ""),
            );
            write(&repo, "apps/other.yaml", "kind: ConfigMap\n");
            fs_err::create_dir_all(repo.join("deploy/web")).unwrap();
            let before = state(dir.path());
            let (code, err) = update(dir.path(), args);
            assert_eq!(code, 1, "{name:?} {namespace:?} {args:?}: {err}");
            assert!(
                err.contains(&format!("repo/apps/web.yaml:{position}: error: ")),
                "{name:?} {namespace:?}: {err}"
            );
            assert!(
                err.contains("is not a valid Kubernetes"),
                "{name:?} {namespace:?}: {err}"
            );
            assert_eq!(state(dir.path()), before, "{name:?} {namespace:?}");
            for above in dir.path().ancestors() {
                for created in ["PWNED.yaml", ".argocd-source-argocd_PWNED.yaml"] {
                    assert!(
                        !above.join(created).exists(),
                        "{created} in {}",
                        above.display()
                    );
                }
            }
        }
    }
}

fn a_source_path_out_of_the_repository() {
    for path in ["../outside", "deploy/../../outside", "/../outside"] {
        let (dir, _) = with_web(path, "");
        refused(
            dir.path(),
            &[],
            "repo/apps/web.yaml:12:11: error: the source path",
        );
    }
}

fn fifos_where_targets_are_read() {
    let cases = [
        ("", "deploy/web/.argocd-source-web.yaml"),
        (
            "    argocd-image-updater.argoproj.io/write-back-target: helmvalues\n",
            "deploy/web/values.yaml",
        ),
    ];
    for (extra, fifo) in cases {
        for mode in [&["--dry-run"][..], &[]] {
            let (dir, repo) = with_web("deploy/web", extra);
            fs_err::create_dir_all(repo.join("deploy/web")).unwrap();
            let status = std::process::Command::new("mkfifo")
                .arg(repo.join(fifo))
                .status()
                .unwrap();
            assert!(status.success());
            // A hang is a failure of `bounded`.
            refused(
                dir.path(),
                mode,
                &format!("{fifo} is a FIFO, not a regular file"),
            );
        }
    }
}

fn markers_through_a_link_out_never_reach_an_output_dir() {
    let (dir, repo) = scratch();
    write(
        dir.path(),
        "outside/pod.yaml",
        "kind: Pod\nimage: nginx:1.0 # {\"$imagepolicy\": \"ns:p\"}\ntoken: s3cr3t\n",
    );
    symlink("../../outside/pod.yaml", repo.join("apps/pod.yaml")).unwrap();
    for mode in [&["--output-dir", "out"][..], &["--dry-run", "--diff"], &[]] {
        let before = state(dir.path());
        let mut c = bin();
        c.current_dir(dir.path())
            .args(["update", "repo", "--policy", "ns:p=nginx:1.1"])
            .args(mode);
        let out = bounded(&c, LIMIT);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("lies outside"), "{}", stderr(&out));
        assert!(
            !stdout(&out).contains("s3cr3t"),
            "{mode:?}: the outside file was shown"
        );
        assert_eq!(state(dir.path()), before, "{mode:?}: something was written");
    }
}

fn a_secret_name_that_is_a_path() {
    for name in ["../../outside/x.yaml", "/etc/passwd", "x/../../outside"] {
        let (dir, repo) = scratch();
        write(
            &repo,
            "flux/images.yaml",
            format!(
                "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: web
  namespace: flux-system
spec:
  image: 127.0.0.1:9/acme/web
  secretRef:
    name: {name:?}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: web
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: web
  policy:
    semver:
      range: 1.x
"
            ),
        );
        write(
            &repo,
            "apps/pod.yaml",
            "kind: Pod\nimage: web:1.0 # {\"$imagepolicy\": \"flux-system:web\"}\n",
        );
        let (code, err) = update(dir.path(), &["repo", "--fetch", "--dry-run"]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(
            err.contains("is not a valid Kubernetes Secret name"),
            "{name}: {err}"
        );
        assert!(err.contains("repo/flux/images.yaml:9:"), "{name}: {err}");
    }
}

fn the_action_refuses_a_link_out_of_the_workspace() {
    let (dir, repo) = with_web("deploy/web", "");
    fs_err::create_dir_all(repo.join("deploy/web")).unwrap();
    symlink(
        dir.path().join("outside/x.yaml"),
        repo.join("deploy/web/.argocd-source-web.yaml"),
    )
    .unwrap();
    write(dir.path(), "runner/output", "");
    write(dir.path(), "runner/summary", "");
    let before = state(&dir.path().join("outside"));
    let mut c = bin();
    c.current_dir(&repo)
        .arg("action")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", &repo)
        .env("GITHUB_OUTPUT", dir.path().join("runner/output"))
        .env("GITHUB_STEP_SUMMARY", dir.path().join("runner/summary"))
        .env("INPUT_PATH", ".")
        .env("INPUT_POLICY", "argocd:web/web=ghcr.io/acme/web:2.5.1");
    let out = bounded(&c, LIMIT);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("is a symlink that resolves outside the tree"),
        "{all}"
    );
    assert_eq!(state(&dir.path().join("outside")), before);
}
