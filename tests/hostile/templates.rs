//! Templates from a repository: a commit message template (`message --template`, a Flux
//! ImageUpdateAutomation's or a KubeSphere ImageUpdater's `messageTemplate` with `update
//! --automation` and the Job), Argo CD's commit message template and `git-branch` annotation,
//! and the Job's pull request templates. Each attack asks for gigabytes (a list doubled by
//! `concat` then joined; nested `print` with Go's builtins alone; many values each under the
//! value limit; `until 100000000`; a value that shares or contains itself; recursion through
//! `template`) and must stop at the render limits (docs/security.md: 4 MiB per value, 64 MiB
//! built per render, 16 MiB of output, 50 million steps) with an error that names the limit and
//! the action, under a 1 GiB address space, without an abort.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use image_update_testkit::{trial, trial_with};
use libtest_mimic::{Failed, Trial};

use crate::support::{bin, bounded, stderr, write};

/// Each render stops within milliseconds (a debug build on a loaded machine: seconds).
const TIME: Duration = Duration::from_secs(20);

/// 4,096 references to one 4 MB string, joined: 16 GB.
const CONCAT_JOIN: &str = r#"{{$l := list (repeat 4000000 "x")}}{{range until 12}}{{$l = concat $l $l}}{{end}}{{join "" $l}}"#;

/// The value limit's text in an error.
const VALUE: &str = "limit of 4194304 bytes or elements for one value (max_value_len)";

/// The render budget's text in an error.
const BUDGET: &str = "limit of 67108864 bytes built by one execution (max_built;";

/// Go's builtins alone, dot rebound by `with` (no `:`, which a `git-branch` annotation cannot
/// hold): 64 bytes, then 4 KB, 256 KB, 4 MB, and 1,000 copies of that, 4 GB. 2.5 KB of text.
fn nested_print() -> String {
    format!(
        "{{{{with print \"{}\"}}}}{{{{with print{}}}}}{{{{with print{}}}}}{{{{with print{}}}}}{{{{with print{}}}}}{{{{len .}}}}{{{{end}}}}{{{{end}}}}{{{{end}}}}{{{{end}}}}{{{{end}}}}",
        "x".repeat(64),
        " .".repeat(64),
        " .".repeat(64),
        " .".repeat(16),
        " .".repeat(1000),
    )
}

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        trial(
            "templates: message --template, concat doubling then join",
            &[],
            || {
                message(
                    CONCAT_JOIN,
                    &["1:83", "<join \"\" $l>", "error calling join", VALUE],
                )
            },
        ),
        trial(
            "templates: message --template, many values each under the value limit",
            &[],
            || {
                // 300 values of 4 MB kept in a list: 1.2 GB.
                message(
                    r#"{{$l := list}}{{range until 300}}{{$l = append $l (repeat 4000000 "x")}}{{end}}{{len $l}}"#,
                    &["<repeat 4000000 \"x\">", "error calling repeat", BUDGET],
                );
                // 40 lists of 1,000,000 elements kept: 1.3 GB (each list costs its elements'
                // memory, not one step each).
                message(
                    r#"{{$l := list}}{{range until 40}}{{$l = append $l (until 1000000)}}{{end}}{{len $l}}"#,
                    &[
                        "<until 1000000>",
                        "error calling until: building 1000000 more elements",
                        BUDGET,
                    ],
                );
                // Thrown away as soon as made: the budget counts what is built.
                message(
                    r#"{{range until 300}}{{$x := repeat 4000000 "y"}}{{end}}"#,
                    &["error calling repeat", BUDGET],
                );
            },
        ),
        trial(
            "templates: message --template, until 100000000 and long loops",
            &[],
            || {
                message(
                    "{{range until 100000000}}{{end}}",
                    &["error calling until: result of 100000000 elements", VALUE],
                );
                message(
                    "{{range until 3000000}}{{end}}",
                    &[
                        "error calling until: building 3000000 more elements",
                        BUDGET,
                    ],
                );
                message(
                    "{{range 100000000}}{{end}}",
                    &["limit of 50000000 steps (max_steps)"],
                );
            },
        ),
        trial(
            "templates: message --template, recursion through template",
            &[],
            || {
                message(
                    r#"{{define "r"}}{{template "r" .}}{{template "r" .}}{{end}}{{template "r" .}}"#,
                    &["exceeded maximum template depth (100)"],
                );
                message(
                    r#"{{define "r"}}{{$x := repeat 4000000 "x"}}{{template "r" .}}{{end}}{{template "r" .}}"#,
                    &["executing \"r\"", BUDGET],
                );
            },
        ),
        trial(
            "templates: message --template, nested print, printf widths and repeated arguments",
            &[],
            || {
                message(&nested_print(), &["error calling print", VALUE]);
                message(
                    &format!(
                        r#"{{{{printf "{}"{}}}}}"#,
                        "%1000000d".repeat(1000),
                        " 1".repeat(1000)
                    ),
                    &["error calling printf", VALUE],
                );
                message(
                    &format!(
                        r#"{{{{$s := repeat 4000000 "x"}}}}{{{{printf "{}" $s}}}}"#,
                        "%[1]s".repeat(1000)
                    ),
                    &["error calling printf", VALUE],
                );
            },
        ),
        trial(
            "templates: message --template, values that share or contain themselves",
            &[],
            || {
                let dag = r#"{{$a := list "x"}}{{range until 60}}{{$a = list $a $a}}{{end}}"#;
                for (f, what) in [
                    ("{{deepCopy $a}}", BUDGET),
                    ("{{toJson $a}}", VALUE),
                    ("{{print $a}}", VALUE),
                    ("{{$a}}", "limit of 16777216 bytes (max_output)"),
                ] {
                    message(&format!("{dag}{f}"), &[what]);
                }
                message(
                    r#"{{$d := dict}}{{$_ := set $d "a" $d}}{{$_ := set $d "b" $d}}{{print $d}}"#,
                    &["error calling print", VALUE],
                );
            },
        ),
        trial(
            "templates: update --automation, a Flux ImageUpdateAutomation's messageTemplate",
            &[],
            || automation(&flux_automation(CONCAT_JOIN)),
        ),
        trial(
            "templates: update --automation, a KubeSphere ImageUpdater's messageTemplate",
            &[],
            || automation(&kubesphere_updater(CONCAT_JOIN)),
        ),
        trial(
            "templates: Argo CD git-branch annotation, nested print",
            &[],
            argocd_branch,
        ),
        trial(
            "templates: Argo CD commit message template, nested print",
            &[],
            argocd_commit,
        ),
    ];
    trials.push(trial_with(
        "templates: job, an automation's messageTemplate and the pull request's templates",
        &["lighttpd", "git"],
        job,
    ));
    trials
}

/// Run `c` bounded; it must fail as a bad template does (exit 1) with every part of `parts` in
/// its stderr.
fn refused(c: &Command, parts: &[&str]) -> String {
    refused_with(c, 1, parts)
}

/// [`refused`] with the exit status `code`.
fn refused_with(c: &Command, code: i32, parts: &[&str]) -> String {
    let out = bounded(c, TIME);
    // The whole of stderr: the action an error names may be long.
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    for p in parts {
        assert!(err.contains(p), "{p:?} not in:\n{}", stderr(&out));
    }
    err
}

/// `message --template` over an empty report.
fn message(template: &str, parts: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let report = write(dir.path(), "r.json", r#"{"version":"v1","changes":[]}"#);
    let t = write(dir.path(), "t.tmpl", template);
    let mut c = bin();
    c.args(["message", "--report"])
        .arg(&report)
        .arg("--template")
        .arg(&t);
    let err = refused(&c, parts);
    assert!(err.contains("template: commit message:1:"), "{err}");
}

fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn flux_automation(template: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1m\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    checkout:\n      ref:\n        branch: main\n    commit:\n      author:\n        name: bot\n        email: bot@example.com\n      messageTemplate: {}\n  update:\n    path: ./\n    strategy: Setters\n",
        yaml_string(template)
    )
}

fn kubesphere_updater(template: &str) -> String {
    format!(
        "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  images:\n  - nginx\n  kind: fluxcd\n  fluxcd:\n    interval: 1m\n    sourceRef:\n      kind: GitRepository\n      name: fleet\n    git:\n      checkout:\n        ref:\n          branch: main\n      commit:\n        author:\n          email: bot@example.com\n          name: bot\n        messageTemplate: {}\n      push:\n        branch: main\n    update:\n      path: ./\n      strategy: Setters\n",
        yaml_string(template)
    )
}

const MARKED: &str = "kind: Deployment\nmetadata: {name: app, namespace: apps}\nspec:\n  image: nginx:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n";

/// `update --automation` over a marked tree: refused, and nothing written.
fn automation(object: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    write(&tree, "app.yaml", MARKED);
    let auto = write(dir.path(), "auto.yaml", object);
    let msg = dir.path().join("msg.txt");
    let mut c = bin();
    c.arg("update")
        .arg(&tree)
        .arg("--automation")
        .arg(&auto)
        .args([
            "--policy",
            "flux-system:app=nginx:1.1.0",
            "--commit-message-file",
        ])
        .arg(&msg);
    refused(
        &c,
        &["template: commit message:1:83", "error calling join", VALUE],
    );
    assert_eq!(
        fs_err::read_to_string(tree.join("app.yaml")).unwrap(),
        MARKED
    );
    assert!(!msg.exists());
}

fn argocd_app(annotations: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: api=ghcr.io/acme/web\n    argocd-image-updater.argoproj.io/write-back-method: git\n{annotations}spec:\n  project: default\n  source:\n    repoURL: https://git.example.test/acme/deploy.git\n    targetRevision: main\n    path: web\n    kustomize: {{}}\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: apps\n"
    )
}

fn argocd_update(repo: &Path) -> Command {
    let mut c = bin();
    c.arg("update")
        .arg(repo)
        .arg("--policy=argocd:web/api=ghcr.io/acme/web:1.2.0");
    c
}

/// A 2.5 KB `git-branch` annotation (`BASE:WRITE`) of Go's builtins: refused at its line, and
/// nothing written.
fn argocd_branch() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let branch = format!("main:b{}", nested_print());
    assert!(branch.len() < 16 * 1024);
    let app = argocd_app(&format!(
        "    argocd-image-updater.argoproj.io/git-branch: {}\n",
        yaml_string(&branch)
    ));
    write(&repo, "apps/web.yaml", &app);
    fs_err::create_dir_all(repo.join("web")).unwrap();
    let before = crate::support::snapshot(&repo);
    refused(
        &argocd_update(&repo),
        &[
            "apps/web.yaml:9:",
            "git branch template fails: template: branchName:1:",
            "error calling print",
            VALUE,
        ],
    );
    assert_eq!(crate::support::snapshot(&repo), before);
}

/// Argo CD's commit message template: as in Argo CD, a template that fails gives the fallback
/// message, with a warning that names the limit.
fn argocd_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write(&repo, "apps/web.yaml", argocd_app(""));
    fs_err::create_dir_all(repo.join("web")).unwrap();
    let t = write(dir.path(), "commit.tmpl", nested_print());
    let msg = dir.path().join("msg.txt");
    let mut c = argocd_update(&repo);
    c.arg("--argocd-commit-template")
        .arg(&t)
        .arg("--commit-message-file")
        .arg(&msg);
    refused_with(
        &c,
        0,
        &[
            "warning: the Argo CD commit message template fails for Application argocd/web, so \
             its message is Argo CD Image Updater's fallback: template: commitMessage:1:",
            "error calling print",
            VALUE,
        ],
    );
    assert_eq!(
        fs_err::read_to_string(&msg).unwrap(),
        "build: update of application web"
    );
}

/// The Job over the git test bed: an automation's messageTemplate (a failed run, exit 1), then
/// the pull request's head branch, title and body templates (rendered before any forge call, so
/// the forge's address is never reached; a configuration error, exit 2, as for a template that
/// does not parse). Each run fails with the limit's error, and nothing is pushed.
fn job() -> Result<(), Failed> {
    use image_update_testkit::git::{Env, HTTP_PASSWORD, HTTP_USER, Need};
    let (env, _servers, _temp) = Env::start_with(&[Need::Http])?;
    if let Some(reason) = env.missing(&[Need::Http]) {
        return Err(reason.into());
    }
    let fixture = env.fixture("hostile-templates")?;
    let head = env.git_out(&fixture.bare, &["rev-parse", "main"])?;
    let work = env.root.join("job-work");
    fs_err::create_dir_all(&work)?;
    let job = || {
        let mut c = bin();
        c.env("HOME", env.root.join("home"))
            .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
            .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD)
            .args(["job", "--work-dir"])
            .arg(&work)
            .args(["--url", &env.http_url(&fixture)])
            .args(["--policy", "flux-system:app=ghcr.io/example/app:2.0.0"]);
        c
    };
    let automation = write(
        &env.root,
        "automation.yaml",
        flux_automation(CONCAT_JOIN).replace("path: ./\n", "path: ./deploy\n"),
    );
    let mut c = job();
    c.arg("--automation").arg(&automation);
    refused(
        &c,
        &["template: commit message:1:83", "error calling join", VALUE],
    );
    let pr = |flag: &str, template: &str, parts: &[&str]| {
        let mut c = job();
        c.args(["--author-name", "bot", "--author-email", "bot@example.com"])
            .args(["--pull-request", "--forge", "github"])
            .args(["--forge-api-url", "http://127.0.0.1:9/"])
            .env("IMAGE_UPDATE_FORGE_TOKEN", "forge-token-never-used")
            .arg(flag)
            .arg(template);
        refused_with(&c, 2, parts);
    };
    pr(
        "--pull-request-branch",
        CONCAT_JOIN,
        &["head branch", "error calling join", VALUE],
    );
    pr(
        "--pull-request-title",
        &nested_print(),
        &["pull request title", "error calling print", VALUE],
    );
    pr(
        "--pull-request-body",
        CONCAT_JOIN,
        &["pull request body", "error calling join", VALUE],
    );
    let after = env.git_out(
        &fixture.bare,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    )?;
    if after
        .lines()
        .any(|l| l.starts_with("refs/heads/") && !l.ends_with(&head))
    {
        return Err(format!("a branch was pushed: {after}").into());
    }
    Ok(())
}
