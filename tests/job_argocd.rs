//! `image-update job` for Argo CD users, end to end through the binary: the git server is
//! testkit's (lighttpd + git-http-backend on 127.0.0.1, results read back with the git CLI), the
//! registry Debian's `docker-registry` (started by testkit). The Applications of `--policies`
//! give the repository and base branch; the write-back goes to the write branch of their
//! `base:write` setting, with Argo CD Image Updater's commit message (its default, or
//! `--argocd-commit-template`). Applications naming two repositories are refused before
//! anything is cloned. An ImageUpdater's `gitConfig.pullRequest` opens, then leaves or updates,
//! the request on testkit's fake GitHub and GitLab (`image_update_testkit::forge`).
//!
//! A trial whose servers or tools are missing is ignored with the reason (failed with `CI`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use fs_err as fs;
use image_update_testkit::forge::{FakeForge, Flavor, PullState};
use image_update_testkit::git::{Env, Fixture, HTTP_PASSWORD, HTTP_USER, Need, TestResult, ensure};
use image_update_testkit::registry::{Auth, ImageSpec, Registry};
use libtest_mimic::{Arguments, Completion, Trial};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn main() {
    let args = Arguments::from_args();
    let (env, servers, temp) = match Env::start_with(&[Need::Http]) {
        Ok(started) => started,
        Err(reason) => panic!("cannot set up the test bed: {reason}"),
    };
    let mut trials = vec![
        trial(
            &env,
            "applications_give_repository_branches_and_message",
            true,
            applications_give_repository_branches_and_message,
        ),
        trial(
            &env,
            "image_updater_git_config_and_long_branch",
            true,
            image_updater_git_config_and_long_branch,
        ),
        trial(
            &env,
            "the_policy_files_application_is_in_the_clone_too",
            true,
            the_policy_files_application_is_in_the_clone_too,
        ),
        trial(
            &env,
            "images_verification_with_the_key_mounted",
            true,
            images_verification_with_the_key_mounted,
        ),
        trial(
            &env,
            "applications_name_two_repositories",
            false,
            applications_name_two_repositories,
        ),
        trial(
            &env,
            "a_repository_spelt_another_way_is_the_clone_another_one_is_named",
            true,
            a_repository_spelt_another_way_is_the_clone_another_one_is_named,
        ),
        trial(
            &env,
            "a_local_repository_names_its_application",
            false,
            a_local_repository_names_its_application,
        ),
        trial(
            &env,
            "a_committed_link_out_of_the_clone_is_not_written",
            false,
            a_committed_link_out_of_the_clone_is_not_written,
        ),
    ];
    for flavor in [Flavor::GitHub, Flavor::GitLab] {
        trials.push(forge_trial(
            &env,
            &format!("image_updater_pull_request/{}", flavor.name()),
            flavor,
        ));
    }
    let conclusion = libtest_mimic::run(&args, trials);
    drop(env);
    drop(servers);
    drop(temp);
    conclusion.exit();
}

/// A trial needing the HTTP git server, and `docker-registry` when `registry`.
fn trial(env: &Arc<Env>, name: &str, registry: bool, test: fn(&Env) -> TestResult) -> Trial {
    gated(env, name, registry, None, test)
}

/// [`trial`] for [`image_updater_pull_request`] on `flavor`, which also needs the provider's API
/// description (for the fake forge).
fn forge_trial(env: &Arc<Env>, name: &str, flavor: Flavor) -> Trial {
    gated(env, name, true, Some(flavor), move |env| {
        image_updater_pull_request(env, flavor)
    })
}

/// A trial run only when what it needs is here: ignored with the reason otherwise (failed when
/// `CI` is set).
fn gated(
    env: &Arc<Env>,
    name: &str,
    registry: bool,
    forge: Option<Flavor>,
    test: impl FnOnce(&Env) -> TestResult + Send + 'static,
) -> Trial {
    let env = Arc::clone(env);
    Trial::ignorable_test(name, move || {
        let mut missing = env.missing(&[Need::Http]);
        if missing.is_none() && registry {
            missing = image_update_testkit::missing(&["docker-registry"])
                .first()
                .map(|m| format!("needs {m}"));
        }
        let description = forge.map(Flavor::description_path);
        if let Some(path) = description.filter(|p| missing.is_none() && !p.is_file()) {
            missing = Some(format!(
                "{} (scripts/api-descriptions.sh installs it)",
                path.display()
            ));
        }
        match missing {
            Some(reason) if std::env::var_os("CI").is_some() => {
                Err(format!("{reason}; CI is set, so this is a failure").into())
            }
            Some(reason) => Ok(Completion::ignored_with(reason)),
            None => test(&env).map(|()| Completion::Completed),
        }
    })
}

/// The binary's `job` with a commit author, HTTP credentials, no credentials from the caller's
/// environment, and a private work parent (returned: it must be empty afterwards).
fn job(env: &Env, name: &str) -> (Command, std::path::PathBuf) {
    let parent = env.root.join("job-work").join(name);
    fs::create_dir_all(&parent).unwrap();
    let mut command = Command::new(BIN);
    for var in [
        "IMAGE_UPDATE_GIT_TOKEN",
        "IMAGE_UPDATE_GIT_BEARER_TOKEN",
        "IMAGE_UPDATE_GIT_SSH_KEY",
        "IMAGE_UPDATE_SIGNING_KEY",
        "DOCKER_CONFIG",
        "REGISTRY_AUTH_FILE",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    command
        .env("HOME", env.root.join("home"))
        .env("NO_COLOR", "1")
        .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
        .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD)
        .args(["job", "--work-dir"])
        .arg(&parent)
        .args([
            "--author-name",
            "Image Updater",
            "--author-email",
            "updater@example.com",
        ]);
    (command, parent)
}

struct Ran {
    code: Option<i32>,
    status: Value,
    stderr: String,
}

fn run(command: &mut Command) -> Result<Ran, libtest_mimic::Failed> {
    let output: Output = command.stdin(Stdio::null()).output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if stdout.contains(HTTP_PASSWORD) || stderr.contains(HTTP_PASSWORD) {
        return Err(format!("the password leaked:\n{stdout}\n{stderr}").into());
    }
    let status = serde_json::from_str(&stdout).map_err(|e| {
        format!("stdout is not one JSON object ({e}):\n{stdout}\nstderr:\n{stderr}")
    })?;
    Ok(Ran {
        code: output.status.code(),
        status,
        stderr,
    })
}

fn git(env: &Env, fixture: &Fixture, args: &[&str]) -> Result<String, libtest_mimic::Failed> {
    env.git_out(&fixture.bare, args)
}

fn empty_dir(dir: &Path) -> TestResult {
    let left: Vec<_> = fs::read_dir(dir)?.collect();
    ensure(left.is_empty(), || {
        format!("{} is not empty: {left:?}", dir.display())
    })
}

/// A repository whose `main` holds a Kustomize directory with Argo CD Image Updater's override
/// file and an Application that writes back elsewhere; `release` is one commit ahead.
fn fleet(env: &Env, name: &str, host: &str) -> Result<(Fixture, String), libtest_mimic::Failed> {
    let tree = env.root.join("trees").join(name);
    fs::create_dir_all(tree.join("deploy/web"))?;
    fs::create_dir_all(tree.join("apps"))?;
    fs::write(
        tree.join("deploy/web/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\n",
    )?;
    fs::write(
        tree.join("deploy/web/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
    )?;
    fs::write(
        tree.join("deploy/web/.argocd-source-web.yaml"),
        format!("kustomize:\n  images:\n  - {host}/team/web:1.0.0 # set by the image updater\n"),
    )?;
    // An Application of the repository that writes back to another one: left alone.
    fs::write(
        tree.join("apps/elsewhere.yaml"),
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: elsewhere\n  \
             namespace: argocd\n  annotations:\n    \
             argocd-image-updater.argoproj.io/image-list: web={host}/team/web:~1\n    \
             argocd-image-updater.argoproj.io/write-back-method: git\nspec:\n  source:\n    \
             repoURL: https://git.example.test/other.git\n    targetRevision: main\n    \
             path: deploy/web\n"
        ),
    )?;
    let fixture = env.fixture_from_tree(name, &tree)?;
    let seed = env.cli_clone(&fixture, &format!("{name}-release"))?;
    env.git_out(&seed, &["checkout", "-q", "-b", "release"])?;
    fs::write(seed.join("RELEASE"), "1\n")?;
    env.git_out(&seed, &["add", "RELEASE"])?;
    env.git_out(&seed, &["commit", "-q", "-m", "release"])?;
    env.git_out(&seed, &["push", "-q", "origin", "release"])?;
    let release = git(env, &fixture, &["rev-parse", "release"])?;
    Ok((fixture, release))
}

/// The Application of the policy file: repository and base branch from it, the write branch a
/// template over Argo CD Image Updater's fields.
fn application(url: &str, host: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
  annotations:
    argocd-image-updater.argoproj.io/image-list: web={host}/team/web:~1
    argocd-image-updater.argoproj.io/write-back-method: git
    argocd-image-updater.argoproj.io/git-branch: 'release:image-updater/{{{{.AppNamespace}}}}/{{{{.AppName}}}}{{{{range .Images}}}}-{{{{.Alias}}}}-{{{{.NewTag}}}}{{{{end}}}}'
spec:
  project: default
  source:
    repoURL: {url}
    targetRevision: main
    path: deploy/web
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"
    )
}

/// `branch` holds the override file with the new tag, its comment kept.
fn expect_override(env: &Env, fixture: &Fixture, branch: &str, host: &str) -> TestResult {
    let path = format!("{branch}:deploy/web/.argocd-source-web.yaml");
    let file = git(env, fixture, &["show", &path])?;
    let expected =
        format!("kustomize:\n  images:\n  - {host}/team/web:1.2.0 # set by the image updater");
    ensure(file == expected, || format!("{path}:\n{file}"))
}

fn applications_give_repository_branches_and_message(env: &Env) -> TestResult {
    let registry = Registry::start(Auth::Anonymous);
    push_web(&registry);
    let host = registry.authority();
    let (fixture, release) = fleet(env, "argocd-fleet", &host)?;
    let main = git(env, &fixture, &["rev-parse", "main"])?;
    let policies = env.root.join("trees").join("argocd-fleet-app.yaml");
    fs::write(&policies, application(&env.http_url(&fixture), &host))?;
    let branch = "image-updater/argocd/web-web-1.2.0";

    // No --url, no --branch: the Application gives both; the default message.
    let (mut command, parent) = job(env, "argocd-default");
    let ran = run(command.arg("--policies").arg(&policies).arg("--fetch"))?;
    ensure(
        ran.code == Some(0) && ran.status["result"] == "pushed",
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    let pushed = git(env, &fixture, &["rev-parse", branch])?;
    ensure(ran.status["lastPushCommit"] == pushed.as_str(), || {
        format!("{:#}", ran.status)
    })?;
    let base = git(env, &fixture, &["rev-parse", &format!("{branch}~1")])?;
    ensure(base == release, || {
        format!("the write branch is not on top of release ({release}): {base}")
    })?;
    // Only the Application of this repository was written (not apps/elsewhere.yaml's, which
    // would have made deploy/web/.argocd-source-elsewhere.yaml).
    let changed = git(env, &fixture, &["diff", "--name-only", "release", branch])?;
    ensure(changed == "deploy/web/.argocd-source-web.yaml", || {
        format!("changed files: {changed}")
    })?;
    expect_override(env, &fixture, branch, &host)?;
    let message = git(env, &fixture, &["log", "-1", "--format=%B", branch])?;
    let default = "build: automatic update of web

updates image team/web tag '1.0.0' to '1.2.0'";
    ensure(message == default, || format!("message: {message:?}"))?;
    ensure(
        git(env, &fixture, &["rev-parse", "release"])? == release
            && git(env, &fixture, &["rev-parse", "main"])? == main,
        || "the base branches moved".to_owned(),
    )?;
    empty_dir(&parent)?;

    // The configured template; the write branch is made again from release and forced.
    let template = env.root.join("trees").join("argocd-commit.template");
    fs::write(
        &template,
        "{{.AppName}}:{{range .AppChanges}} {{.Image}} {{.OldTag}} -> {{.NewTag}}{{end}}\n",
    )?;
    let (mut command, parent) = job(env, "argocd-template");
    let ran = run(command
        .arg("--policies")
        .arg(&policies)
        .arg("--fetch")
        .arg("--argocd-commit-template")
        .arg(&template))?;
    ensure(
        ran.code == Some(0) && ran.status["result"] == "pushed",
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    let message = git(env, &fixture, &["log", "-1", "--format=%B", branch])?;
    ensure(message == "web: team/web 1.0.0 -> 1.2.0", || {
        format!("message: {message:?}")
    })?;
    let base = git(env, &fixture, &["rev-parse", &format!("{branch}~1")])?;
    ensure(base == release, || format!("not on top of release: {base}"))?;
    ensure(
        git(env, &fixture, &["rev-parse", branch])? != pushed,
        || "the write branch did not move".to_owned(),
    )?;
    empty_dir(&parent)
}

/// A policy file: the Application `argocd/web` (its source `app_repo`, `main`, `deploy/web`) and
/// an ImageUpdater for its image `web` (`HOST/team/web:~1`) with `git_config`, the indented lines
/// of `writeBackConfig.gitConfig`.
fn updater(app_repo: &str, git_config: &str, host: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: web, namespace: argocd}}
spec:
  source:
    repoURL: {app_repo}
    targetRevision: main
    path: deploy/web
---
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {{name: fleet, namespace: argocd}}
spec:
  writeBackConfig:
    method: git
    gitConfig:
{git_config}  applicationRefs:
  - namePattern: web
    images:
    - {{alias: web, imageName: '{host}/team/web:~1'}}
"
    )
}

/// `registry` with `team/web` 1.0.0, 1.2.0 and 2.0.0.
fn push_web(registry: &Registry) {
    for (i, tag) in ["1.0.0", "1.2.0", "2.0.0"].iter().enumerate() {
        let created = format!("2024-01-{:02}T00:00:00Z", i + 1);
        registry.push_image(
            "team/web",
            tag,
            &ImageSpec::new("linux", "amd64", None, &created),
        );
    }
}

/// The ImageUpdater CRD's `writeBackConfig.gitConfig` names the repository (the Application's
/// `repoURL` is another) and the `base:write` branch, whose rendering, over 255 characters, is
/// cut to 255.
fn image_updater_git_config_and_long_branch(env: &Env) -> TestResult {
    use sha2::{Digest, Sha256};
    let registry = Registry::start(Auth::Anonymous);
    push_web(&registry);
    let host = registry.authority();
    let (fixture, release) = fleet(env, "argocd-crd", &host)?;
    let url = env.http_url(&fixture);
    let policies = env.root.join("trees").join("argocd-crd-updater.yaml");
    fs::write(
        &policies,
        updater(
            "https://mirror.example.test/fleet.git",
            &format!(
                "      repository: {url}
      branch: 'release:u/{{{{.SHA256}}}}/{{{{.SHA256}}}}/{{{{.SHA256}}}}/{{{{.SHA256}}}}'
"
            ),
            &host,
        ),
    )?;
    let sha = format!("{:x}", Sha256::digest(b"team/web-1.0.0-1.2.0,".as_slice()));
    // 261 characters rendered, cut to 255 (each path component stays short enough for a file).
    let branch = format!("u/{sha}/{sha}/{sha}/{sha}")[..255].to_owned();
    let (mut command, parent) = job(env, "argocd-crd");
    let ran = run(command.arg("--policies").arg(&policies).arg("--fetch"))?;
    ensure(
        ran.code == Some(0) && ran.status["result"] == "pushed",
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    let heads = git(
        env,
        &fixture,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads/u/"],
    )?;
    ensure(heads == branch, || {
        format!("write branches: {heads:?}, expected {branch:?}")
    })?;
    ensure(
        git(env, &fixture, &["rev-parse", &format!("{branch}~1")])? == release,
        || "the write branch is not on top of release".to_owned(),
    )?;
    expect_override(env, &fixture, &branch, &host)?;
    empty_dir(&parent)
}

/// Mounts `pem` as the key `cosign.pub` of the Secret `web-key` under `dir`, as the kubelet
/// mounts a Secret volume at `dir/web-key`: the key a link to `..data/cosign.pub`, `..data` a
/// link to the timestamped directory holding the files.
fn mount_key(dir: &Path, pem: &str) -> std::io::Result<()> {
    let secret = dir.join("web-key");
    if secret.exists() {
        fs::remove_dir_all(&secret)?;
    }
    let files = secret.join("..2026_01_01_00_00_00.000000001");
    fs::create_dir_all(&files)?;
    fs::write(files.join("cosign.pub"), pem)?;
    std::os::unix::fs::symlink("..2026_01_01_00_00_00.000000001", secret.join("..data"))?;
    std::os::unix::fs::symlink("..data/cosign.pub", secret.join("cosign.pub"))
}

/// Argo CD Image Updater's `imagesVerification` through the Job: the CR's `cosignKey` Secret is
/// mounted as files (`--secrets-dir`); signed with another key, no candidate passes, the run fails
/// and nothing is pushed; with the right key, the newest signed tag (not the newer unsigned one)
/// is written back with the digest that was verified.
fn images_verification_with_the_key_mounted(env: &Env) -> TestResult {
    use image_update_testkit::sigstore::{self as ts, TestKey};
    let registry = Registry::start(Auth::Anonymous);
    let host = registry.authority();
    let image = |day: u32| {
        ImageSpec::new(
            "linux",
            "amd64",
            None,
            &format!("2024-01-{day:02}T00:00:00Z"),
        )
    };
    registry.push_image("team/web", "1.0.0", &image(1));
    let (_, signed) = registry.push_image("team/web", "1.2.0", &image(2));
    registry.push_image("team/web", "1.3.0", &image(3));
    let key = TestKey::p256();
    registry.push_sig_tag("team/web", &signed, &[ts::legacy_key_layer(&signed, &key)]);
    let name = "argocd-verify";
    let (fixture, _) = fleet(env, name, &host)?;
    let url = env.http_url(&fixture);
    let main = git(env, &fixture, &["rev-parse", "main"])?;
    let policies = env.root.join("trees").join(format!("{name}-updater.yaml"));
    fs::write(
        &policies,
        updater(&url, "      branch: main\n", &host).replace(
            "spec:\n  writeBackConfig:",
            "spec:\n  imagesVerification:\n    cosignKey: {secretName: web-key, key: cosign.pub}\n  writeBackConfig:",
        ),
    )?;
    let secrets = env.root.join("secrets").join(name);
    // The Job with the key `pem` mounted.
    let with_key =
        |run_name: &str, pem: &str| -> Result<(Ran, std::path::PathBuf), libtest_mimic::Failed> {
            mount_key(&secrets, pem)?;
            let (mut command, parent) = job(env, run_name);
            command
                .arg("--policies")
                .arg(&policies)
                .args(["--fetch", "--secrets-dir"])
                .arg(&secrets);
            Ok((run(&mut command)?, parent))
        };

    let (ran, parent) = with_key(&format!("{name}-other-key"), &TestKey::p256().public_pem())?;
    let error = ran.status["error"]["message"].to_string();
    ensure(
        ran.code == Some(1)
            && ran.status["result"] == "failed"
            && error.contains("no candidate passed the supply-chain gate")
            && error.contains("1.3.0 unsigned: no signature found")
            && error.contains("1.2.0 unsigned: no valid signature"),
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    ensure(git(env, &fixture, &["rev-parse", "main"])? == main, || {
        "main moved".to_owned()
    })?;
    empty_dir(&parent)?;

    let (ran, parent) = with_key(name, &key.public_pem())?;
    ensure(
        ran.code == Some(0) && ran.status["result"] == "pushed",
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    let file = git(
        env,
        &fixture,
        &["show", "main:deploy/web/.argocd-source-web.yaml"],
    )?;
    let expected = format!(
        "kustomize:\n  images:\n  - {host}/team/web:1.2.0@{signed} # set by the image updater"
    );
    ensure(file == expected, || {
        format!("{file}\nexpected:\n{expected}")
    })?;
    let chain = ran.status["supplyChain"].to_string();
    ensure(
        chain.contains("cosign.pub of Secret argocd/web-key") && chain.contains("1.3.0"),
        || format!("{:#}", ran.status),
    )?;
    empty_dir(&parent)
}

fn applications_name_two_repositories(env: &Env) -> TestResult {
    let (fixture, _) = fleet(env, "argocd-two", "127.0.0.1:1")?;
    let refs = || {
        git(
            env,
            &fixture,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
    };
    let before = refs()?;
    let policies = env.root.join("trees").join("argocd-two-apps.yaml");
    let other = application("https://git.example.test/other.git", "127.0.0.1:1")
        .replace("name: web\n", "name: api\n");
    fs::write(
        &policies,
        format!(
            "{}---\n{other}",
            application(&env.http_url(&fixture), "127.0.0.1:1")
        ),
    )?;
    let (mut command, parent) = job(env, "argocd-two");
    let ran = run(command.arg("--policies").arg(&policies).arg("--fetch"))?;
    ensure(ran.code == Some(2), || {
        format!("exit {:?}, expected 2:\n{}", ran.code, ran.stderr)
    })?;
    ensure(
        ran.status["result"] == "failed" && ran.status["error"]["kind"] == "configuration",
        || format!("{:#}", ran.status),
    )?;
    let name = policies.display().to_string();
    for (line, what) in [(4, "argocd/web"), (23, "argocd/api")] {
        ensure(
            ran.stderr.contains(&format!("{name}:{line}:")) && ran.stderr.contains(what),
            || format!("no error at {name}:{line} for {what}:\n{}", ran.stderr),
        )?;
    }
    ensure(ran.stderr.contains("different repositories"), || {
        ran.stderr.clone()
    })?;
    ensure(refs()? == before, || "a ref moved".to_owned())?;
    empty_dir(&parent)
}

/// The Job clones `http://127.0.0.1:PORT/git/NAME.git`: an Application whose `repoURL` spells
/// the same repository another way (`ssh://`, a user, port 22, no `.git`, a trailing `/`) is
/// updated; one whose `repoURL` is the bare repository's `file://` URL is
/// left alone with a warning at its `repoURL` naming it and the clone URL, on stderr and in the
/// status's `changes.warnings`.
fn a_repository_spelt_another_way_is_the_clone_another_one_is_named(env: &Env) -> TestResult {
    let registry = Registry::start(Auth::Anonymous);
    push_web(&registry);
    let host = registry.authority();
    let (fixture, release) = fleet(env, "argocd-spelling", &host)?;
    let url = env.http_url(&fixture);
    let spelt = format!("ssh://git@127.0.0.1:22/git/{}/", fixture.name);
    let local = format!("file://{}", fixture.bare.display());
    let policies = env.root.join("trees").join("argocd-spelling-apps.yaml");
    let elsewhere = application(&local, &host)
        .replace("name: web\n", "name: local\n")
        .replace(
            "    argocd-image-updater.argoproj.io/git-branch",
            "    x-unused",
        );
    fs::write(
        &policies,
        format!("{}---\n{elsewhere}", application(&spelt, &host)),
    )?;
    let (mut command, parent) = job(env, "argocd-spelling");
    let ran = run(command
        .arg("--url")
        .arg(&url)
        .arg("--policies")
        .arg(&policies)
        .arg("--fetch"))?;
    ensure(
        ran.code == Some(0) && ran.status["result"] == "pushed",
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    let branch = "image-updater/argocd/web-web-1.2.0";
    expect_override(env, &fixture, branch, &host)?;
    ensure(
        git(env, &fixture, &["rev-parse", &format!("{branch}~1")])? == release,
        || "the write branch is not on top of release".to_owned(),
    )?;
    // The second Application's repoURL (line 13 of its document, which starts at line 20).
    let at = format!(
        "{}:32:14: warning: Application argocd/local",
        policies.display()
    );
    let named = format!(
        "writes back to {local} (its repoURL), not to the repository this run cloned ({url})"
    );
    ensure(
        ran.stderr.contains(&at) && ran.stderr.contains(&named),
        || format!("no warning {at} ... {named}:\n{}", ran.stderr),
    )?;
    let warnings = ran.status["changes"]["warnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure(
        warnings.iter().any(|w| {
            w["line"] == 32
                && w["column"] == 14
                && w["message"].as_str().is_some_and(|m| m.contains(&named))
        }),
        || format!("the status's warnings: {warnings:#?}"),
    )?;
    empty_dir(&parent)
}

/// Without `--url`, an Application whose repository is a `file://` URL is refused (exit 2), the
/// message naming the flag that allows it and the Application the URL came from.
fn a_local_repository_names_its_application(env: &Env) -> TestResult {
    let (fixture, _) = fleet(env, "argocd-local", "127.0.0.1:1")?;
    let url = format!("file://{}", fixture.bare.display());
    let policies = env.root.join("trees").join("argocd-local-app.yaml");
    fs::write(&policies, application(&url, "127.0.0.1:1"))?;
    let (mut command, parent) = job(env, "argocd-local");
    let ran = run(command.arg("--policies").arg(&policies))?;
    ensure(ran.code == Some(2), || {
        format!("exit {:?}, expected 2:\n{}", ran.code, ran.stderr)
    })?;
    let expected = format!(
        "{}:4:9: the repository Argo CD Application argocd/web writes back to: refusing the local \
         repository `{url}`: file:// URLs and local paths need --allow-local",
        policies.display()
    );
    ensure(ran.stderr.contains(&expected), || {
        format!("expected {expected:?} in:\n{}", ran.stderr)
    })?;
    empty_dir(&parent)
}

/// A repository whose override file is a committed symlink to a file of the machine the Job runs
/// on: the Job refuses the write-back (exit 1, the link named), the file outside is unchanged, and
/// nothing is pushed; it does not say that the tree was left as it was.
fn a_committed_link_out_of_the_clone_is_not_written(env: &Env) -> TestResult {
    let outside = env.root.join("outside-of-the-clone.yaml");
    fs::write(&outside, "kept: as it is\n")?;
    let tree = env.root.join("trees").join("argocd-link-out");
    fs::create_dir_all(tree.join("deploy/web"))?;
    fs::create_dir_all(tree.join("apps"))?;
    fs::write(
        tree.join("deploy/web/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
    )?;
    std::os::unix::fs::symlink(&outside, tree.join("deploy/web/.argocd-source-web.yaml"))?;
    let fixture = env.fixture_from_tree("argocd-link-out", &tree)?;
    fs::write(
        tree.join("apps/web.yaml"),
        application(&env.http_url(&fixture), "127.0.0.1:1").replace(
            "    argocd-image-updater.argoproj.io/git-branch",
            "    x-unused",
        ),
    )?;
    let seed = env.cli_clone(&fixture, "argocd-link-out-seed")?;
    fs::create_dir_all(seed.join("apps"))?;
    fs::copy(tree.join("apps/web.yaml"), seed.join("apps/web.yaml"))?;
    env.git_out(&seed, &["add", "apps/web.yaml"])?;
    env.git_out(&seed, &["commit", "-q", "-m", "the Application"])?;
    env.git_out(&seed, &["push", "-q", "origin", "HEAD:main"])?;
    let before = git(env, &fixture, &["rev-parse", "main"])?;
    let (mut command, parent) = job(env, "argocd-link-out");
    let ran = run(command.arg("--url").arg(env.http_url(&fixture)).args([
        "--branch",
        "main",
        "--policy",
        "argocd:web/web=127.0.0.1:1/team/web:1.2.0",
    ]))?;
    ensure(ran.code == Some(1), || {
        format!("exit {:?}, expected 1:\n{}", ran.code, ran.stderr)
    })?;
    ensure(
        ran.stderr.contains(
            "deploy/web/.argocd-source-web.yaml is a symlink that resolves outside the tree",
        ),
        || ran.stderr.clone(),
    )?;
    ensure(!ran.stderr.contains("left the tree as it was"), || {
        ran.stderr.clone()
    })?;
    ensure(fs::read_to_string(&outside)? == "kept: as it is\n", || {
        "the file outside the clone was changed".to_owned()
    })?;
    ensure(
        git(env, &fixture, &["rev-parse", "main"])? == before,
        || "main moved".to_owned(),
    )?;
    empty_dir(&parent)
}

/// An ImageUpdater whose `gitConfig.pullRequest` names the provider (GitHub or GitLab) and
/// labels: the Job, given a token for the forge's API and no `--pull-request`, pushes the change
/// set's head branch `image-updater-TARGETKEY-SHA256` and opens the request into the base
/// branch, titled with the commit message's first line, its body the rest, the labels
/// de-duplicated with the empty one dropped; a second run updates nothing and opens no second
/// request. The provider comes from the ImageUpdater (no `--forge`).
fn image_updater_pull_request(env: &Env, flavor: Flavor) -> TestResult {
    use sha2::{Digest, Sha256};
    let registry = Registry::start(Auth::Anonymous);
    push_web(&registry);
    let host = registry.authority();
    let name = format!("argocd-pr-{}", flavor.name());
    let (fixture, _) = fleet(env, &name, &host)?;
    let main = git(env, &fixture, &["rev-parse", "main"])?;
    let token = format!("forge-tok-{}-n3ver-shown", flavor.name());
    let fake = FakeForge::start_for(flavor, &format!("git/{}", fixture.name), &token, None)?;
    fake.track_branches(&fixture.bare);
    let url = env.http_url(&fixture);
    let policies = env.root.join("trees").join(format!("{name}.yaml"));
    fs::write(
        &policies,
        updater(
            &url,
            &format!(
                "      branch: main
      pullRequest:
        {}: {{}}
        labels: [images, '', images, automated]
",
                flavor.name()
            ),
            &host,
        ),
    )?;
    let sha = format!("{:x}", Sha256::digest(b"team/web-1.0.0-1.2.0,".as_slice()));
    let run_job = |label: &str, extra: &[&str]| -> Result<Ran, libtest_mimic::Failed> {
        let (mut command, parent) = job(env, &format!("{name}-{label}"));
        let ran = run(command
            .args(extra)
            .arg("--policies")
            .arg(&policies)
            .arg("--fetch")
            .args(["--forge-api-url", &fake.api_url()])
            .env("IMAGE_UPDATE_FORGE_TOKEN", &token))?;
        ensure(
            !ran.stderr.contains(&token) && !ran.status.to_string().contains(&token),
            || "the forge token leaked".to_owned(),
        )?;
        empty_dir(&parent)?;
        Ok(ran)
    };

    let first = run_job("first", &[])?;
    let pr = &first.status["pullRequest"];
    let head = pr["head"].as_str().unwrap_or_default().to_owned();
    ensure(
        first.code == Some(0)
            && first.status["result"] == "pushed"
            && pr["action"] == "created"
            && pr["base"] == "main"
            && pr["provider"] == flavor.name(),
        || format!("{:?} {:#}\n{}", first.code, first.status, first.stderr),
    )?;
    let key = head
        .strip_prefix("image-updater-")
        .and_then(|rest| rest.strip_suffix(&format!("-{sha}")))
        .unwrap_or_default();
    ensure(
        key.len() == 8 && key.bytes().all(|b| b.is_ascii_hexdigit()),
        || format!("head branch {head:?} is not image-updater-TARGETKEY-{sha}"),
    )?;
    ensure(
        git(env, &fixture, &["rev-parse", &format!("{head}~1")])? == main
            && git(env, &fixture, &["rev-parse", "main"])? == main,
        || "the head branch is not one commit on main, or main moved".to_owned(),
    )?;
    expect_override(env, &fixture, &head, &host)?;
    let pulls = fake.pulls();
    ensure(
        pulls.len() == 1
            && pulls[0].state == PullState::Open
            && pulls[0].head == head
            && pulls[0].base == "main"
            && pulls[0].title == "build: automatic update of web"
            && pulls[0].body == "updates image team/web tag '1.0.0' to '1.2.0'"
            && pulls[0].labels == ["images", "automated"],
        || format!("{pulls:#?}"),
    )?;
    let violations = fake.violations();
    ensure(violations.is_empty(), || format!("{violations:#?}"))?;

    // Again: the head branch holds the change already; the one request is left as it is.
    let tip = git(env, &fixture, &["rev-parse", &head])?;
    let second = run_job("second", &[])?;
    ensure(
        second.code == Some(0)
            && second.status["pullRequest"]["action"] == "unchanged"
            && second.status["pullRequest"]["head"] == head.as_str(),
        || format!("{:?} {:#}\n{}", second.code, second.status, second.stderr),
    )?;
    ensure(
        git(env, &fixture, &["rev-parse", &head])? == tip && fake.pulls().len() == 1,
        || format!("a second push or request: {:#?}", fake.pulls()),
    )?;

    // --push-branch wins: the commit goes there, no request, and a warning says so.
    let direct = run_job("direct", &["--push-branch", "argo-direct"])?;
    ensure(
        direct.code == Some(0)
            && direct.status["result"] == "pushed"
            && direct.status.get("pullRequest").is_none()
            && direct.stderr.contains(
                "Application argocd/web asks for a pull request: --push-branch sends the commit \
                 to argo-direct instead, and none is opened",
            ),
        || format!("{:?} {:#}\n{}", direct.code, direct.status, direct.stderr),
    )?;
    expect_override(env, &fixture, "argo-direct", &host)?;
    ensure(fake.pulls().len() == 1, || format!("{:#?}", fake.pulls()))?;

    // A one-line commit message: the same tree (nothing pushed), the request retitled, its body
    // the line naming the Application.
    let template = env
        .root
        .join("trees")
        .join(format!("{name}-one-line.template"));
    fs::write(
        &template,
        "{{.AppName}} to{{range .AppChanges}} {{.NewTag}}{{end}}\n",
    )?;
    let template = template.display().to_string();
    let one_line = run_job("one-line", &["--argocd-commit-template", &template])?;
    let pulls = fake.pulls();
    ensure(
        one_line.code == Some(0)
            && one_line.status["pullRequest"]["action"] == "updated"
            && git(env, &fixture, &["rev-parse", &head])? == tip
            && pulls.len() == 1
            && pulls[0].title == "web to 1.2.0"
            && pulls[0].body == "Opened by image-update for the Argo CD Application argocd/web.",
        || {
            format!(
                "{:?} {:#}\n{}\n{pulls:#?}",
                one_line.code, one_line.status, one_line.stderr
            )
        },
    )?;
    ensure(fake.violations().is_empty(), || {
        format!("{:#?}", fake.violations())
    })
}

/// The README's form, `job --policies argocd/web.yaml --fetch`, where the repository holds that
/// same Application (as Argo CD's own repository does): one Application, written back once. A
/// copy in the repository that differs is an error naming both places, and nothing is pushed.
fn the_policy_files_application_is_in_the_clone_too(env: &Env) -> TestResult {
    let registry = Registry::start(Auth::Anonymous);
    push_web(&registry);
    let host = registry.authority();
    let name = "argocd-twice";
    let (fixture, release) = fleet(env, name, &host)?;
    let app = application(&env.http_url(&fixture), &host);
    let seed = env.cli_clone(&fixture, &format!("{name}-app"))?;
    env.git_out(&seed, &["checkout", "-q", "release"])?;
    fs::create_dir_all(seed.join("argocd"))?;
    // The repository's copy, written differently: the same object.
    let copy = app.replacen(
        "metadata:\n  name: web\n  namespace: argocd\n",
        "metadata:\n  namespace: argocd\n  name: web\n",
        1,
    );
    fs::write(
        seed.join("argocd/web.yaml"),
        format!("# Argo CD's copy\n{copy}"),
    )?;
    env.git_out(&seed, &["add", "argocd/web.yaml"])?;
    env.git_out(&seed, &["commit", "-q", "-m", "the Application"])?;
    env.git_out(&seed, &["push", "-q", "origin", "release"])?;
    let release_with_app = git(env, &fixture, &["rev-parse", "release"])?;
    ensure(release_with_app != release, || "not pushed".to_owned())?;
    let policies = env.root.join("trees").join(format!("{name}-web.yaml"));
    fs::write(&policies, &app)?;
    let branch = "image-updater/argocd/web-web-1.2.0";

    let (mut command, parent) = job(env, name);
    let ran = run(command.arg("--policies").arg(&policies).arg("--fetch"))?;
    ensure(
        ran.code == Some(0) && ran.status["result"] == "pushed",
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    let changed = git(env, &fixture, &["diff", "--name-only", "release", branch])?;
    ensure(changed == "deploy/web/.argocd-source-web.yaml", || {
        format!("changed files: {changed}")
    })?;
    expect_override(env, &fixture, branch, &host)?;
    empty_dir(&parent)?;

    // The policy file's Application differs from the repository's: both places, the field.
    let pushed = git(env, &fixture, &["rev-parse", branch])?;
    let differs = app.replace(
        &format!("web={host}/team/web:~1"),
        &format!("web={host}/team/web:~2"),
    );
    ensure(differs != app, || "no change".to_owned())?;
    fs::write(&policies, differs)?;
    let (mut command, parent) = job(env, &format!("{name}-differs"));
    let ran = run(command.arg("--policies").arg(&policies).arg("--fetch"))?;
    let error = ran.status["error"].to_string();
    ensure(
        ran.code == Some(1)
            && error.contains("Application argocd/web is defined twice, and the definitions differ: /metadata/annotations/argocd-image-updater.argoproj.io~1image-list is")
            && error.contains(&policies.display().to_string())
            && error.contains("argocd/web.yaml:"),
        || format!("{:?} {:#}\n{}", ran.code, ran.status, ran.stderr),
    )?;
    ensure(
        git(env, &fixture, &["rev-parse", branch])? == pushed,
        || "the write branch moved".to_owned(),
    )?;
    empty_dir(&parent)
}
