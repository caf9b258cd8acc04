//! `image-update job` end to end, through the binary, against real git servers on 127.0.0.1
//! (`image_update_testkit::git`: lighttpd + git-http-backend with Basic auth, sshd with keys,
//! gpg), each result checked with the git CLI: clone, update, commit, sign (OpenPGP and SSH,
//! `git verify-commit`), push, push branches (created and force-pushed), races with other
//! writers (retried and re-applied; a conflict on the marked line itself; attempts running out),
//! failures (credentials, host keys, local URLs), the status and exit codes, and SIGTERM.
//!
//! A trial whose servers or tools are missing is ignored with the reason (failed with `CI`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use fs_err as fs;
use image_update_testkit::git::{
    APP_YAML, Env, Fixture, GPG_PASSPHRASE, HTTP_PASSWORD, HTTP_USER, Need, SECRETS,
    SSH_PASSPHRASE, TestResult, ensure, run,
};
use libtest_mimic::Arguments;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

const HTTP: &[Need] = &[Need::Http];
const SSH: &[Need] = &[Need::Ssh];
const HTTP_GPG: &[Need] = &[Need::Http, Need::Gpg];
const NONE: &[Need] = &[];

const POLICY_2: &str = "flux-system:app=ghcr.io/example/app:2.0.0";

fn main() {
    let args = Arguments::from_args();
    let (env, servers, temp) = match Env::start() {
        Ok(started) => started,
        Err(reason) => panic!("cannot set up the test bed: {reason}"),
    };
    let trials = vec![
        env.trial("http_basic_auth_push", HTTP, http_basic_auth_push),
        env.trial(
            "https_ca_from_the_secret_or_flag",
            &[Need::Https],
            https_ca_from_the_secret_or_flag,
        ),
        env.trial("nothing_to_do_exit_codes", HTTP, nothing_to_do_exit_codes),
        env.trial(
            "unused_policy_value_is_named",
            HTTP,
            unused_policy_value_is_named,
        ),
        env.trial("token_as_basic_password", HTTP, token_as_basic_password),
        env.trial("gpg_signed_commit", HTTP_GPG, gpg_signed_commit),
        env.trial(
            "ssh_clone_and_ssh_signed_commit",
            SSH,
            ssh_clone_and_ssh_signed_commit,
        ),
        env.trial(
            "push_branch_created_and_forced",
            HTTP,
            push_branch_created_and_forced,
        ),
        env.trial(
            "automation_gives_git_settings",
            HTTP,
            automation_gives_git_settings,
        ),
        env.trial("race_with_another_writer", HTTP, race_with_another_writer),
        env.trial("race_on_the_marked_line", HTTP, race_on_the_marked_line),
        env.trial("race_attempts_run_out", HTTP, race_attempts_run_out),
        env.trial("wrong_credentials", HTTP, wrong_credentials),
        env.trial("unknown_host_key", SSH, unknown_host_key),
        env.trial("local_urls_refused", NONE, local_urls_refused),
        env.trial("tag_needs_push_branch", NONE, tag_needs_push_branch),
        env.trial(
            "sigterm_removes_the_work_tree",
            HTTP,
            sigterm_removes_the_work_tree,
        ),
        env.trial("termination_log", HTTP, termination_log),
        env.trial(
            "flux_objects_over_http_signed",
            HTTP_GPG,
            flux_objects_over_http_signed,
        ),
        env.trial(
            "flux_objects_with_credentials_from_the_environment",
            HTTP_GPG,
            flux_objects_with_credentials_from_the_environment,
        ),
        env.trial(
            "flux_objects_over_ssh_semver",
            SSH,
            flux_objects_over_ssh_semver,
        ),
        env.trial(
            "flux_objects_unsupported_fields",
            NONE,
            flux_objects_unsupported_fields,
        ),
        env.trial("state_short_circuit", HTTP, state_short_circuit),
        env.trial(
            "sigterm_during_a_stalled_clone",
            NONE,
            sigterm_during_a_stalled_clone,
        ),
        env.trial(
            "git_timeout_ends_a_stalled_clone",
            NONE,
            git_timeout_ends_a_stalled_clone,
        ),
        registry_trial(&env, "supply_chain_gate_before_the_push", supply_chain_gate),
        registry_trial(
            &env,
            "deployed_cronjob_runs_on_a_flux_repository",
            deployed_cronjob_runs_on_a_flux_repository,
        ),
        cloud_trial(
            &env,
            "provider_aws_logs_in_with_the_pods_identity",
            provider_aws_logs_in_with_the_pods_identity,
        ),
    ];
    let conclusion = libtest_mimic::run(&args, trials);
    drop(env);
    drop(servers);
    drop(temp);
    conclusion.exit();
}

/// The binary with a commit author, no credentials from the caller's environment, and a private
/// work parent.
fn job(env: &Env, name: &str) -> (Command, PathBuf) {
    let (mut command, parent) = job_without_author(env, name);
    command.args([
        "--author-name",
        "Flux Bot",
        "--author-email",
        "bot@example.com",
    ]);
    (command, parent)
}

fn job_without_author(env: &Env, name: &str) -> (Command, PathBuf) {
    let parent = env.root.join("job-work").join(name);
    fs::create_dir_all(&parent).unwrap();
    let mut command = Command::new(BIN);
    for var in [
        "IMAGE_UPDATE_GIT_USERNAME",
        "IMAGE_UPDATE_GIT_PASSWORD",
        "IMAGE_UPDATE_GIT_TOKEN",
        "IMAGE_UPDATE_GIT_BEARER_TOKEN",
        "IMAGE_UPDATE_GIT_SSH_KEY",
        "IMAGE_UPDATE_GIT_SSH_KEY_PASSPHRASE",
        "IMAGE_UPDATE_GIT_KNOWN_HOSTS",
        "IMAGE_UPDATE_GIT_CA_CERT",
        "IMAGE_UPDATE_SIGNING_KEY",
        "IMAGE_UPDATE_SIGNING_PASSPHRASE",
    ] {
        command.env_remove(var);
    }
    command
        .env("HOME", env.root.join("home"))
        .arg("job")
        .arg("--work-dir")
        .arg(&parent);
    (command, parent)
}

fn http_job(env: &Env, fixture: &Fixture) -> (Command, PathBuf) {
    over_http(
        env,
        job(env, &fixture.name),
        fixture,
        "IMAGE_UPDATE_GIT_PASSWORD",
        HTTP_PASSWORD,
    )
}

/// `job` cloning `fixture` over HTTP as the user `alice`, with `secret` in the variable `var`.
fn over_http(
    env: &Env,
    (mut command, parent): (Command, PathBuf),
    fixture: &Fixture,
    var: &str,
    secret: &str,
) -> (Command, PathBuf) {
    command
        .args(["--url", &env.http_url(fixture)])
        .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
        .env(var, secret);
    (command, parent)
}

fn output(command: &mut Command) -> Output {
    command.stdin(Stdio::null()).output().unwrap()
}

struct Ran {
    code: Option<i32>,
    status: Value,
    stderr: String,
}

fn parse(output: &Output) -> Result<Ran, String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for secret in SECRETS {
        if stdout.contains(secret) || stderr.contains(secret) {
            return Err(format!("a secret leaked:\n{stdout}\n{stderr}"));
        }
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

fn expect_code(ran: &Ran, code: i32) -> TestResult {
    ensure(ran.code == Some(code), || {
        format!(
            "exit {:?}, expected {code}\nstatus: {:#}\nstderr:\n{}",
            ran.code, ran.status, ran.stderr
        )
    })
}

fn expect_result(ran: &Ran, code: i32, result: &str) -> TestResult {
    expect_code(ran, code)?;
    ensure(ran.status["result"] == result, || {
        format!("result is not {result}: {:#}", ran.status)
    })
}

fn empty_dir(dir: &Path) -> TestResult {
    let left: Vec<_> = fs::read_dir(dir)?.map(|e| e.unwrap().file_name()).collect();
    ensure(left.is_empty(), || {
        format!(
            "the work tree was left behind in {}: {left:?}",
            dir.display()
        )
    })
}

fn show(env: &Env, fixture: &Fixture, what: &str) -> Result<String, libtest_mimic::Failed> {
    env.git_out(&fixture.bare, &["show", what])
}

fn rev(env: &Env, fixture: &Fixture, what: &str) -> Result<String, libtest_mimic::Failed> {
    env.git_out(&fixture.bare, &["rev-parse", what])
}

fn http_basic_auth_push(env: &Env) -> TestResult {
    let fixture = env.fixture("job-http")?;
    let (mut command, parent) = http_job(env, &fixture);
    let ran = parse(&output(
        command.args(["--branch", "main", "--policy", POLICY_2]),
    ))?;
    expect_code(&ran, 0)?;
    let head = rev(env, &fixture, "main")?;
    ensure(ran.status["result"] == "pushed", || {
        format!("{:#}", ran.status)
    })?;
    ensure(ran.status["lastPushCommit"] == head.as_str(), || {
        format!("lastPushCommit is not main ({head}): {:#}", ran.status)
    })?;
    ensure(
        ran.status["observedSourceRevision"] == format!("main@sha1:{head}").as_str(),
        || format!("{:#}", ran.status),
    )?;
    ensure(ran.status["attempts"] == 1, || format!("{:#}", ran.status))?;
    ensure(
        ran.status["observedPolicies"]["app"]
            == serde_json::json!({"name": "ghcr.io/example/app", "tag": "2.0.0"}),
        || format!("{:#}", ran.status),
    )?;
    ensure(
        ran.status["lastPushTime"]
            .as_str()
            .is_some_and(|t| t.len() == 20 && t.ends_with('Z')),
        || format!("{:#}", ran.status),
    )?;
    ensure(
        ran.status["changes"]["fileChanges"]["deploy/app.yaml"].is_array(),
        || format!("{:#}", ran.status),
    )?;
    let app = show(env, &fixture, "main:deploy/app.yaml")?;
    ensure(
        app == APP_YAML.replace("app:1.0.0", "app:2.0.0").trim_end(),
        || app.clone(),
    )?;
    let parent_commit = rev(env, &fixture, "main~1")?;
    ensure(parent_commit == fixture.commits[2], || {
        "not on top of main".to_owned()
    })?;
    let author = env.git_out(
        &fixture.bare,
        &["log", "-1", "--format=%an <%ae>|%cn", "main"],
    )?;
    ensure(author == "Flux Bot <bot@example.com>|Flux Bot", || {
        author.clone()
    })?;
    let message = env.git_out(&fixture.bare, &["log", "-1", "--format=%B", "main"])?;
    ensure(
        ran.status["commitMessage"].as_str().map(str::trim) == Some(message.as_str()),
        || format!("message {message:?} vs {:#}", ran.status),
    )?;
    empty_dir(&parent)
}

fn nothing_to_do_exit_codes(env: &Env) -> TestResult {
    let fixture = env.fixture("job-nothing")?;
    let same = "flux-system:app=ghcr.io/example/app:1.0.0";
    let (mut command, parent) = http_job(env, &fixture);
    let first = parse(&output(command.args(["--policy", same])))?;
    expect_result(&first, 0, "nothingToDo")?;
    ensure(first.status.get("lastPushCommit").is_none(), || {
        format!("{:#}", first.status)
    })?;
    ensure(
        first.status["observedSourceRevision"]
            == format!("main@sha1:{}", fixture.commits[2]).as_str(),
        || format!("{:#}", first.status),
    )?;
    let (mut command, _) = http_job(env, &fixture);
    let second = parse(&output(command.args([
        "--policy",
        same,
        "--exit-code-unchanged",
        "3",
    ])))?;
    expect_code(&second, 3)?;
    ensure(rev(env, &fixture, "main")? == fixture.commits[2], || {
        "main moved".to_owned()
    })?;
    empty_dir(&parent)
}

/// A `--policy` value no marker uses: a warning on stderr and in the status's `changes.warnings`,
/// with the key the marker names as a hint; the run is otherwise the same.
fn unused_policy_value_is_named(env: &Env) -> TestResult {
    let fixture = env.fixture("job-unused-value")?;
    let (mut command, parent) = http_job(env, &fixture);
    let ran = parse(&output(command.args([
        "--policy",
        "flux-system:app=ghcr.io/example/app:1.0.0",
        "--policy",
        "flux-system:ap=ghcr.io/example/app:2.0.0",
    ])))?;
    expect_result(&ran, 0, "nothingToDo")?;
    let message = "policy flux-system:ap (--policy flux-system:ap=ghcr.io/example/app:2.0.0) is used \
                   by no marker or Argo CD Application, so it changes nothing";
    ensure(
        ran.stderr.contains(&format!(
            "warning: {message}\n  hint: did you mean flux-system:app? (a marker or Application names it)\n"
        )),
        || ran.stderr.clone(),
    )?;
    let warnings = ran.status["changes"]["warnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure(
        warnings.len() == 1 && warnings[0]["message"] == message,
        || format!("{:#}", ran.status),
    )?;
    empty_dir(&parent)
}

fn token_as_basic_password(env: &Env) -> TestResult {
    // lighttpd's user file has the user `alice`; the token rides as her password.
    let fixture = env.fixture("job-token")?;
    let (mut command, _) = over_http(
        env,
        job(env, &fixture.name),
        &fixture,
        "IMAGE_UPDATE_GIT_TOKEN",
        HTTP_PASSWORD,
    );
    let ran = parse(&output(command.args(["--policy", POLICY_2])))?;
    expect_code(&ran, 0)?;
    ensure(ran.status["result"] == "pushed", || {
        format!("{:#}", ran.status)
    })
}

fn gpg_signed_commit(env: &Env) -> TestResult {
    let fixture = env.fixture("job-gpg")?;
    let (mut command, _) = http_job(env, &fixture);
    let ran = parse(&output(
        command
            .args(["--policy", POLICY_2, "--signing-key-type", "gpg"])
            .env("IMAGE_UPDATE_SIGNING_KEY", &env.gpg().ed25519_armored)
            .env("IMAGE_UPDATE_SIGNING_PASSPHRASE", GPG_PASSPHRASE),
    ))?;
    expect_code(&ran, 0)?;
    let verified = env
        .git(&fixture.bare)
        .env("GNUPGHOME", &env.gpg().home)
        .args(["verify-commit", "-v", "main"])
        .output()?;
    let said = String::from_utf8_lossy(&verified.stderr).into_owned();
    ensure(
        verified.status.success() && said.contains("Good signature"),
        || format!("git verify-commit: {said}"),
    )?;
    // A wrong passphrase is a configuration error: nothing is cloned or pushed.
    let (mut command, _) = http_job(env, &fixture);
    let wrong = parse(&output(
        command
            .args(["--policy", "flux-system:app=ghcr.io/example/app:3.0.0"])
            .env("IMAGE_UPDATE_SIGNING_KEY", &env.gpg().ed25519_armored)
            .env("IMAGE_UPDATE_SIGNING_PASSPHRASE", "not-the-passphrase"),
    ))?;
    expect_code(&wrong, 2)?;
    ensure(wrong.status["error"]["kind"] == "configuration", || {
        format!("{:#}", wrong.status)
    })
}

fn ssh_clone_and_ssh_signed_commit(env: &Env) -> TestResult {
    let fixture = env.fixture("job-ssh")?;
    let ssh = env.ssh();
    let (mut command, parent) = job(env, &fixture.name);
    let ran = parse(&output(
        command
            .args(["--url", &env.ssh_url(&fixture), "--policy", POLICY_2])
            .args(["--signing-key-type", "ssh"])
            .env("IMAGE_UPDATE_GIT_SSH_KEY", &ssh.ed25519_key)
            .env("IMAGE_UPDATE_GIT_SSH_KEY_PASSPHRASE", SSH_PASSPHRASE)
            .env("IMAGE_UPDATE_GIT_KNOWN_HOSTS", env.known_hosts())
            .env("IMAGE_UPDATE_SIGNING_KEY", &ssh.rsa_key),
    ))?;
    expect_result(&ran, 0, "pushed")?;
    let allowed = env.root.join("allowed_signers");
    fs::write(&allowed, format!("bot@example.com {}\n", ssh.rsa_pub))?;
    let verified = env
        .git(&fixture.bare)
        .args([
            "-c",
            &format!("gpg.ssh.allowedSignersFile={}", allowed.display()),
        ])
        .args(["verify-commit", "-v", "main"])
        .output()?;
    let said = String::from_utf8_lossy(&verified.stderr).into_owned();
    ensure(
        verified.status.success() && said.contains("Good \"git\" signature"),
        || format!("git verify-commit: {said}"),
    )?;
    empty_dir(&parent)
}

fn push_branch_created_and_forced(env: &Env) -> TestResult {
    let fixture = env.fixture("job-push-branch")?;
    let (mut command, _) = http_job(env, &fixture);
    let first = parse(&output(command.args([
        "--branch",
        "main",
        "--push-branch",
        "auto",
        "--policy",
        POLICY_2,
    ])))?;
    expect_code(&first, 0)?;
    let auto = rev(env, &fixture, "auto")?;
    ensure(first.status["lastPushCommit"] == auto.as_str(), || {
        format!("{:#}", first.status)
    })?;
    // Flux: the checked-out commit when the push went to another branch.
    ensure(
        first.status["observedSourceRevision"]
            == format!("main@sha1:{}", fixture.commits[2]).as_str(),
        || format!("{:#}", first.status),
    )?;
    ensure(rev(env, &fixture, "main")? == fixture.commits[2], || {
        "main moved".to_owned()
    })?;
    ensure(rev(env, &fixture, "auto~1")? == fixture.commits[2], || {
        "auto is not made from main".to_owned()
    })?;
    // main moves on; the next run makes `auto` again from the new main and force-pushes it.
    let moved = env.cli_push_change(
        &fixture,
        "job-push-branch-cli",
        "README.md",
        "new\n",
        "moved",
    )?;
    let (mut command, _) = http_job(env, &fixture);
    let second = parse(&output(command.args([
        "--push-branch",
        "auto",
        "--policy",
        "flux-system:app=ghcr.io/example/app:3.0.0",
    ])))?;
    expect_code(&second, 0)?;
    ensure(rev(env, &fixture, "auto~1")? == moved, || {
        "auto was not rebuilt on main".to_owned()
    })?;
    let count = env.git_out(&fixture.bare, &["rev-list", "--count", "auto"])?;
    ensure(count == "5", || {
        format!("auto has {count} commits, expected main's 4 + 1")
    })
}

fn automation_gives_git_settings(env: &Env) -> TestResult {
    let fixture = env.fixture("job-automation")?;
    let automation = env.root.join("automation.yaml");
    fs::write(
        &automation,
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 5m\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    checkout:\n      ref:\n        branch: main\n    commit:\n      author:\n        name: Automation Bot\n        email: automation@example.com\n      messageTemplate: 'auto: {{ range .Changed.Changes }}{{ .NewValue }}{{ end }}'\n    push:\n      branch: automation\n  update:\n    path: ./deploy\n    strategy: Setters\n",
    )?;
    // No --author-*: they come from the automation.
    let (mut command, _) = over_http(
        env,
        job_without_author(env, &fixture.name),
        &fixture,
        "IMAGE_UPDATE_GIT_PASSWORD",
        HTTP_PASSWORD,
    );
    command
        .args(["--policy", POLICY_2, "--automation"])
        .arg(&automation);
    let ran = parse(&output(&mut command))?;
    expect_code(&ran, 0)?;
    let log = env.git_out(
        &fixture.bare,
        &["log", "-1", "--format=%an <%ae>|%B", "automation"],
    )?;
    ensure(
        log == "Automation Bot <automation@example.com>|auto: ghcr.io/example/app:2.0.0",
        || log.clone(),
    )
}

/// Starts a job reading its policies from stdin (it reads them after the clone), waits until it
/// has cloned, lets `between` push as another writer, then hands over the policies.
fn job_with_race(
    mut command: Command,
    policies: &str,
    between: impl FnOnce() -> TestResult,
) -> Result<Output, libtest_mimic::Failed> {
    let mut child = command
        .args(["--policies", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line)? == 0 {
            let _ = child.kill();
            return Err(format!("the job ended before cloning: {seen}").into());
        }
        seen.push_str(&line);
        if line.starts_with("cloned ") {
            break;
        }
    }
    between()?;
    child.stdin.take().unwrap().write_all(policies.as_bytes())?;
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
    let mut output = child.wait_with_output()?;
    seen.push_str(&rest.join().unwrap());
    output.stderr = seen.into_bytes();
    Ok(output)
}

fn image_policy(tag: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app\n  namespace: flux-system\nstatus:\n  latestRef: {{name: ghcr.io/example/app, tag: \"{tag}\"}}\n"
    )
}

fn race_with_another_writer(env: &Env) -> TestResult {
    let fixture = env.fixture("job-race")?;
    let (command, parent) = http_job(env, &fixture);
    let mut competing = String::new();
    let output = job_with_race(command, &image_policy("2.0.0"), || {
        competing = env.cli_push_change(
            &fixture,
            "job-race-cli",
            "README.md",
            "# app\n\nEdited by a person.\n",
            "competing",
        )?;
        Ok(())
    })?;
    let ran = parse(&output)?;
    expect_code(&ran, 0)?;
    ensure(ran.status["attempts"] == 2, || format!("{:#}", ran.status))?;
    ensure(rev(env, &fixture, "main~1")? == competing, || {
        "the pushed commit is not on top of the competing one".to_owned()
    })?;
    let readme = show(env, &fixture, "main:README.md")?;
    ensure(readme.contains("Edited by a person."), || readme.clone())?;
    let app = show(env, &fixture, "main:deploy/app.yaml")?;
    ensure(app.contains("app:2.0.0"), || app.clone())?;
    empty_dir(&parent)
}

fn race_on_the_marked_line(env: &Env) -> TestResult {
    // Someone sets the marked line to another value between clone and push: the retry resolves
    // it from the policy again (2.0.0), it does not merge.
    let fixture = env.fixture("job-race-line")?;
    let (command, _) = http_job(env, &fixture);
    let theirs = APP_YAML.replace("app:1.0.0", "app:1.5.0");
    let output = job_with_race(command, &image_policy("2.0.0"), || {
        env.cli_push_change(
            &fixture,
            "job-race-line-cli",
            "deploy/app.yaml",
            &theirs,
            "theirs",
        )?;
        Ok(())
    })?;
    let ran = parse(&output)?;
    expect_code(&ran, 0)?;
    let app = show(env, &fixture, "main:deploy/app.yaml")?;
    ensure(
        app == APP_YAML.replace("app:1.0.0", "app:2.0.0").trim_end(),
        || app.clone(),
    )?;
    let changes = ran.status["changes"].to_string();
    ensure(changes.contains("1.5.0"), || {
        format!("the status's changes are not the re-applied ones: {changes}")
    })
}

fn race_attempts_run_out(env: &Env) -> TestResult {
    let fixture = env.fixture("job-race-out")?;
    let (mut command, parent) = http_job(env, &fixture);
    command.args(["--max-attempts", "1"]);
    let output = job_with_race(command, &image_policy("2.0.0"), || {
        env.cli_push_change(
            &fixture,
            "job-race-out-cli",
            "README.md",
            "x\n",
            "competing",
        )?;
        Ok(())
    })?;
    let ran = parse(&output)?;
    expect_result(&ran, 4, "failed")?;
    ensure(ran.status["error"]["kind"] == "conflict", || {
        format!("{:#}", ran.status)
    })?;
    ensure(ran.status["error"]["exitCode"] == 4, || {
        format!("{:#}", ran.status)
    })?;
    empty_dir(&parent)
}

fn wrong_credentials(env: &Env) -> TestResult {
    let fixture = env.fixture("job-wrong")?;
    let (mut command, parent) = over_http(
        env,
        job(env, &fixture.name),
        &fixture,
        "IMAGE_UPDATE_GIT_PASSWORD",
        SSH_PASSPHRASE,
    );
    let ran = parse(&output(command.args(["--policy", POLICY_2])))?;
    expect_code(&ran, 1)?;
    let message = ran.status["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    ensure(
        message.contains("authentication") || message.contains("credentials"),
        || format!("{:#}\n{}", ran.status, ran.stderr),
    )?;
    empty_dir(&parent)
}

fn unknown_host_key(env: &Env) -> TestResult {
    let fixture = env.fixture("job-hostkey")?;
    let (mut command, parent) = job(env, &fixture.name);
    let ran = parse(&output(
        command
            .args(["--url", &env.ssh_url(&fixture), "--policy", POLICY_2])
            .env("IMAGE_UPDATE_GIT_SSH_KEY", &env.ssh().rsa_key)
            .env("IMAGE_UPDATE_GIT_KNOWN_HOSTS", "# nobody\n"),
    ))?;
    expect_code(&ran, 1)?;
    let message = ran.status["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure(
        message.contains("host key") && message.contains(&env.ssh().host_fingerprint),
        || format!("{:#}\n{}", ran.status, ran.stderr),
    )?;
    empty_dir(&parent)
}

fn local_urls_refused(env: &Env) -> TestResult {
    let fixture = env.fixture("job-local")?;
    for url in [
        format!("file://{}", fixture.bare.display()),
        fixture.bare.display().to_string(),
    ] {
        let (mut command, _) = job(env, &fixture.name);
        let ran = parse(&output(command.args(["--url", &url, "--policy", POLICY_2])))?;
        expect_code(&ran, 2)?;
        ensure(
            ran.stderr.contains(&format!(
                "--url: refusing the local repository `{url}`: file:// URLs and local paths need \
                 --allow-local"
            )),
            || ran.stderr.clone(),
        )?;
    }
    // Without --url, the message says where the URL came from: the GitRepository's spec.url.
    let url = format!("file://{}", fixture.bare.display());
    let repository = env.root.join("job-local-gitrepository.yaml");
    fs::write(
        &repository,
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: fleet, namespace: flux-system}}\nspec:\n  url: {url}\n  ref: {{branch: main}}\n"
        ),
    )?;
    let (mut command, _) = job(env, &fixture.name);
    let ran = parse(&output(
        command
            .arg("--git-repository")
            .arg(&repository)
            .args(["--policy", POLICY_2]),
    ))?;
    expect_code(&ran, 2)?;
    ensure(
        ran.stderr.contains(&format!(
            "{}:5:8: GitRepository flux-system/fleet spec.url: refusing the local repository `{url}`: \
             file:// URLs and local paths need --allow-local",
            repository.display()
        )),
        || ran.stderr.clone(),
    )?;
    let (mut command, _) = job(env, &fixture.name);
    let url = format!("file://{}", fixture.bare.display());
    let ran = parse(&output(command.args([
        "--url",
        &url,
        "--allow-local",
        "--policy",
        POLICY_2,
    ])))?;
    expect_code(&ran, 0)?;
    ensure(ran.status["result"] == "pushed", || {
        format!("{:#}", ran.status)
    })
}

fn tag_needs_push_branch(env: &Env) -> TestResult {
    let (mut command, _) = job(env, "tag");
    let ran = parse(&output(command.args([
        "--url",
        "https://127.0.0.1:1/x.git",
        "--tag",
        "v1.0.0",
        "--policy",
        POLICY_2,
    ])))?;
    expect_code(&ran, 2)?;
    ensure(ran.stderr.contains("--push-branch"), || ran.stderr.clone())
}

fn sigterm_removes_the_work_tree(env: &Env) -> TestResult {
    let fixture = env.fixture("job-sigterm")?;
    let (mut command, parent) = http_job(env, &fixture);
    let mut child: Child = command
        .args(["--policies", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("cloned ") {
        line.clear();
        if stderr.read_line(&mut line)? == 0 {
            return Err("the job ended before cloning".into());
        }
    }
    // The clone is on disk, and the job waits for its policies on stdin.
    ensure(fs::read_dir(&parent)?.count() == 1, || {
        "no work tree while running".to_owned()
    })?;
    run(Command::new("kill").args(["-TERM", &child.id().to_string()]))?;
    let status = wait_timeout(&mut child, Duration::from_secs(10))?;
    ensure(status.code() == Some(143), || {
        format!("exit {status:?}, expected 143")
    })?;
    empty_dir(&parent)?;
    ensure(rev(env, &fixture, "main")? == fixture.commits[2], || {
        "main moved".to_owned()
    })
}

fn wait_timeout(
    child: &mut Child,
    limit: Duration,
) -> Result<std::process::ExitStatus, libtest_mimic::Failed> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return Err("the job did not end after SIGTERM".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn termination_log(env: &Env) -> TestResult {
    let fixture = env.fixture("job-termination")?;
    let log = env.root.join("termination-log");
    let (mut command, _) = http_job(env, &fixture);
    let ran = parse(&output(
        command
            .args(["--policy", POLICY_2])
            .arg("--termination-log")
            .arg(&log),
    ))?;
    expect_code(&ran, 0)?;
    let text = fs::read_to_string(&log)?;
    ensure(text.len() <= 4096 && !text.contains('\n'), || text.clone())?;
    let written: Value = serde_json::from_str(&text)?;
    ensure(written == ran.status, || {
        format!("{written:#} vs {:#}", ran.status)
    })
}

fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// `text` indented by `n` spaces, for a YAML block scalar.
fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

fn automation_yaml(extra_commit: &str, push_branch: &str) -> String {
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    commit:\n      author:\n        name: Flux\n        email: flux@example.com\n{extra_commit}    push:\n      branch: {push_branch}\n  update:\n    strategy: Setters\n"
    )
}

fn flux_objects_over_http_signed(env: &Env) -> TestResult {
    let fixture = env.fixture("job-flux-http")?;
    let dir = env.root.join("flux-http");
    fs::create_dir_all(&dir)?;
    fs::write(
        dir.join("repository.yaml"),
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: git-auth\n",
            env.http_url(&fixture)
        ),
    )?;
    fs::write(
        dir.join("automation.yaml"),
        automation_yaml(
            "      signingKey:\n        secretRef:\n          name: signing\n",
            "main",
        ),
    )?;
    fs::write(
        dir.join("secrets.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-auth\n  namespace: flux-system\ndata:\n  username: {}\n  password: {}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: signing\n  namespace: flux-system\nstringData:\n  passphrase: {GPG_PASSPHRASE}\n  git.asc: |\n{}",
            b64(HTTP_USER),
            b64(HTTP_PASSWORD),
            indent(&env.gpg().ed25519_armored, 4)
        ),
    )?;
    let (mut command, parent) = job_without_author(env, &fixture.name);
    let ran = parse(&output(
        command
            .arg("--git-repository")
            .arg(dir.join("repository.yaml"))
            .arg("--automation")
            .arg(dir.join("automation.yaml"))
            .arg("--secret")
            .arg(dir.join("secrets.yaml"))
            .args(["--policy", POLICY_2]),
    ))?;
    expect_code(&ran, 0)?;
    let author = env.git_out(&fixture.bare, &["log", "-1", "--format=%an <%ae>", "main"])?;
    ensure(author == "Flux <flux@example.com>", || author.clone())?;
    let verified = env
        .git(&fixture.bare)
        .env("GNUPGHOME", &env.gpg().home)
        .args(["verify-commit", "main"])
        .output()?;
    ensure(verified.status.success(), || {
        String::from_utf8_lossy(&verified.stderr).into_owned()
    })?;
    empty_dir(&parent)
}

/// The GitRepository's `secretRef` and the automation's `signingKey` with no `--secret` file:
/// the git credentials and the signing key come from the environment (as the CronJobs `deploy`
/// writes give them, from the Secrets' keys, and as a terminal does), which take precedence, so
/// the Secrets' manifests are not needed. Without them, the error says what else would do.
fn flux_objects_with_credentials_from_the_environment(env: &Env) -> TestResult {
    let fixture = env.fixture("job-flux-env")?;
    let dir = env.root.join("flux-env");
    fs::create_dir_all(&dir)?;
    fs::write(
        dir.join("repository.yaml"),
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: git-auth\n",
            env.http_url(&fixture)
        ),
    )?;
    fs::write(
        dir.join("automation.yaml"),
        automation_yaml(
            "      signingKey:\n        secretRef:\n          name: signing\n",
            "main",
        ),
    )?;
    let command = || {
        let (mut command, _) = job_without_author(env, &fixture.name);
        command
            .arg("--git-repository")
            .arg(dir.join("repository.yaml"))
            .arg("--automation")
            .arg(dir.join("automation.yaml"))
            .args(["--policy", POLICY_2]);
        command
    };
    // Without them: the Secret's manifest, or the environment.
    let ran = parse(&output(&mut command()))?;
    expect_code(&ran, 2)?;
    ensure(
        ran.stderr.contains("references Secret flux-system/git-auth, which no --secret file holds: give its manifest with --secret FILE, or the credentials in the environment"),
        || ran.stderr.clone(),
    )?;
    let ran = parse(&output(
        command()
            .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
            .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD)
            .env("IMAGE_UPDATE_SIGNING_KEY", &env.gpg().ed25519_armored)
            .env("IMAGE_UPDATE_SIGNING_PASSPHRASE", GPG_PASSPHRASE),
    ))?;
    expect_code(&ran, 0)?;
    let verified = env
        .git(&fixture.bare)
        .env("GNUPGHOME", &env.gpg().home)
        .args(["verify-commit", "main"])
        .output()?;
    ensure(verified.status.success(), || {
        String::from_utf8_lossy(&verified.stderr).into_owned()
    })
}

/// HTTPS to a server whose certificate a private CA signed: the CA comes from the GitRepository
/// Secret's `ca.crt`, or from `--ca-file`; without it the job fails as untrusted (exit 1), and
/// a file that holds no certificate is a configuration error (exit 2).
fn https_ca_from_the_secret_or_flag(env: &Env) -> TestResult {
    let fixture = env.fixture("job-https-secret")?;
    let dir = env.root.join("job-https");
    fs::create_dir_all(&dir)?;
    fs::write(
        dir.join("repository.yaml"),
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: git-auth\n",
            env.https_url(&fixture)
        ),
    )?;
    fs::write(
        dir.join("secrets.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-auth\n  namespace: flux-system\ndata:\n  username: {}\n  password: {}\n  ca.crt: {}\n",
            b64(HTTP_USER),
            b64(HTTP_PASSWORD),
            b64(env.https_ca())
        ),
    )?;
    let (mut command, parent) = job(env, &fixture.name);
    let ran = parse(&output(
        command
            .arg("--git-repository")
            .arg(dir.join("repository.yaml"))
            .arg("--secret")
            .arg(dir.join("secrets.yaml"))
            .args(["--policy", POLICY_2]),
    ))?;
    expect_result(&ran, 0, "pushed")?;
    let app = show(env, &fixture, "main:deploy/app.yaml")?;
    ensure(app.contains("app:2.0.0"), || app.clone())?;
    empty_dir(&parent)?;

    let fixture = env.fixture("job-https-flag")?;
    let with_url = |command: &mut Command| {
        command
            .args(["--url", &env.https_url(&fixture), "--branch", "main"])
            .args(["--policy", POLICY_2])
            .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
            .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD);
    };
    let (mut command, parent) = job(env, &fixture.name);
    with_url(&mut command);
    let ran = parse(&output(&mut command))?;
    expect_result(&ran, 1, "failed")?;
    ensure(ran.stderr.contains("not trusted"), || ran.stderr.clone())?;
    empty_dir(&parent)?;
    let not_a_ca = dir.join("not-a-ca.pem");
    fs::write(&not_a_ca, "just text\n")?;
    let (mut command, _) = job(env, &fixture.name);
    with_url(&mut command);
    let ran = parse(&output(command.arg("--ca-file").arg(&not_a_ca)))?;
    expect_code(&ran, 2)?;
    ensure(ran.stderr.contains("CA certificates"), || {
        ran.stderr.clone()
    })?;
    let ca = dir.join("ca.pem");
    fs::write(&ca, env.https_ca())?;
    let (mut command, parent) = job(env, &fixture.name);
    with_url(&mut command);
    let ran = parse(&output(command.arg("--ca-file").arg(&ca)))?;
    expect_result(&ran, 0, "pushed")?;
    ensure(
        show(env, &fixture, "main:deploy/app.yaml")?.contains("app:2.0.0"),
        || "not pushed".to_owned(),
    )?;
    empty_dir(&parent)
}

fn flux_objects_over_ssh_semver(env: &Env) -> TestResult {
    // spec.ref.semver picks the tag v1.0.0 (the second commit); the push goes to a new branch.
    let fixture = env.fixture("job-flux-ssh")?;
    let ssh = env.ssh();
    let dir = env.root.join("flux-ssh");
    fs::create_dir_all(&dir)?;
    fs::write(
        dir.join("objects.yaml"),
        format!(
            "{}---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  url: {}\n  ref:\n    semver: \">=1.0.0 <2.0.0\"\n  secretRef:\n    name: ssh-auth\n",
            automation_yaml("", "release-auto"),
            env.ssh_url(&fixture)
        ),
    )?;
    fs::write(
        dir.join("secret.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ssh-auth\n  namespace: flux-system\ndata:\n  identity: {}\n  password: {}\n  known_hosts: {}\n",
            b64(&ssh.ed25519_key),
            b64(SSH_PASSPHRASE),
            b64(&env.known_hosts())
        ),
    )?;
    let (mut command, _) = job_without_author(env, &fixture.name);
    let ran = parse(&output(
        command
            .arg("--git-repository")
            .arg(dir.join("objects.yaml"))
            .arg("--automation")
            .arg(dir.join("objects.yaml"))
            .arg("--secret")
            .arg(dir.join("secret.yaml"))
            .args(["--policy", POLICY_2]),
    ))?;
    expect_code(&ran, 0)?;
    ensure(
        ran.status["observedSourceRevision"]
            == format!("v1.0.0@sha1:{}", fixture.commits[1]).as_str(),
        || format!("{:#}", ran.status),
    )?;
    ensure(
        rev(env, &fixture, "release-auto~1")? == fixture.commits[1],
        || "release-auto is not made from the tag".to_owned(),
    )
}

fn flux_objects_unsupported_fields(env: &Env) -> TestResult {
    let dir = env.root.join("flux-unsupported");
    fs::create_dir_all(&dir)?;
    let repository = dir.join("repository.yaml");
    fs::write(
        &repository,
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  url: https://github.com/acme/fleet\n  provider: azure\n  verify:\n    mode: HEAD\n",
    )?;
    let (mut command, _) = job(env, "unsupported");
    let ran = parse(&output(
        command
            .arg("--git-repository")
            .arg(&repository)
            .args(["--policy", POLICY_2]),
    ))?;
    expect_code(&ran, 2)?;
    let shown = repository.display().to_string();
    ensure(
        ran.stderr.contains(&format!("{shown}:8:"))
            && ran.stderr.contains("spec.provider")
            && ran.stderr.contains(&format!("{shown}:10:"))
            && ran.stderr.contains("spec.verify"),
        || ran.stderr.clone(),
    )?;
    // A GitRepository whose Secret is missing from the --secret files.
    fs::write(
        &repository,
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  url: https://github.com/acme/fleet\n  secretRef:\n    name: nowhere\n",
    )?;
    let (mut command, _) = job(env, "unsupported");
    let ran = parse(&output(
        command
            .arg("--git-repository")
            .arg(&repository)
            .args(["--policy", POLICY_2]),
    ))?;
    expect_code(&ran, 2)?;
    ensure(ran.stderr.contains("flux-system/nowhere"), || {
        ran.stderr.clone()
    })
}

fn state_short_circuit(env: &Env) -> TestResult {
    let fixture = env.fixture("job-state")?;
    let dir = env.root.join("state");
    fs::create_dir_all(&dir)?;
    let state = dir.join("state.json");
    let policies = dir.join("policies.yaml");
    fs::write(&policies, image_policy("2.0.0"))?;
    let run_job = |extra: &[&str]| -> Result<Ran, libtest_mimic::Failed> {
        let (mut command, _) = http_job(env, &fixture);
        Ok(parse(&output(
            command
                .arg("--state")
                .arg(&state)
                .arg("--policies")
                .arg(&policies)
                .args(extra),
        ))?)
    };
    let short = |ran: &Ran| {
        ran.status["shortCircuit"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    let first = run_job(&[])?;
    expect_result(&first, 0, "pushed")?;
    ensure(short(&first).contains("no state"), || {
        format!("{:#}", first.status)
    })?;
    ensure(state.exists(), || "no state file written".to_owned())?;
    let pushed = rev(env, &fixture, "main")?;

    let second = run_job(&["--exit-code-unchanged", "3"])?;
    expect_result(&second, 3, "skipped")?;
    ensure(second.status["lastPushCommit"] == pushed.as_str(), || {
        format!("{:#}", second.status)
    })?;
    ensure(!second.stderr.contains("cloned "), || second.stderr.clone())?;

    // Someone else pushes: the remote head changed, so the job runs (and finds nothing to do).
    env.cli_push_change(&fixture, "job-state-cli", "README.md", "other\n", "other")?;
    let third = run_job(&[])?;
    expect_result(&third, 0, "nothingToDo")?;
    ensure(short(&third).contains("remote changed"), || {
        format!("{:#}", third.status)
    })?;
    let fourth = run_job(&[])?;
    ensure(fourth.status["result"] == "skipped", || {
        format!("{:#}", fourth.status)
    })?;

    // A new latest image: the policies changed.
    fs::write(&policies, image_policy("3.0.0"))?;
    let fifth = run_job(&[])?;
    ensure(fifth.status["result"] == "pushed", || {
        format!("{:#}", fifth.status)
    })?;
    ensure(short(&fifth).contains("policies changed"), || {
        format!("{:#}", fifth.status)
    })?;
    // Another setting (the message template): the configuration changed.
    let sixth = run_job(&["--commit-value", "k=v"])?;
    ensure(sixth.status["result"] == "nothingToDo", || {
        format!("{:#}", sixth.status)
    })?;
    ensure(short(&sixth).contains("configuration changed"), || {
        format!("{:#}", sixth.status)
    })?;
    let seventh = run_job(&["--commit-value", "k=v"])?;
    ensure(seventh.status["result"] == "skipped", || {
        format!("{:#}", seventh.status)
    })
}

/// Fault injection: a server on 127.0.0.1 that accepts and never answers, so a clone hangs in
/// a read. Returns its port and a receiver told of each connection.
fn stalled_server() -> Result<(u16, std::sync::mpsc::Receiver<()>), libtest_mimic::Failed> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
            let _ = accepted_tx.send(());
        }
    });
    Ok((port, accepted_rx))
}

fn git_timeout_ends_a_stalled_clone(env: &Env) -> TestResult {
    let (port, _accepted) = stalled_server()?;
    let (mut command, parent) = job(env, "timeout");
    let started = std::time::Instant::now();
    let ran = parse(&output(
        command
            .args(["--url", &format!("http://127.0.0.1:{port}/stalled.git")])
            .args(["--policy", POLICY_2, "--git-timeout", "1s"]),
    ))?;
    let took = started.elapsed();
    expect_code(&ran, 1)?;
    ensure(took < Duration::from_secs(20), || {
        format!("took {took:?} with --git-timeout 1s")
    })?;
    empty_dir(&parent)
}

fn sigterm_during_a_stalled_clone(env: &Env) -> TestResult {
    let (port, accepted_rx) = stalled_server()?;
    let (mut command, parent) = job(env, "stalled");
    let mut child = command
        .args(["--url", &format!("http://127.0.0.1:{port}/stalled.git")])
        .args(["--policy", POLICY_2])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if accepted_rx.recv_timeout(Duration::from_secs(10)).is_err() {
        let _ = child.kill();
        return Err("the job never connected".into());
    }
    std::thread::sleep(Duration::from_millis(200));
    ensure(fs::read_dir(&parent)?.count() == 1, || {
        "no work tree while cloning".to_owned()
    })?;
    run(Command::new("kill").args(["-TERM", &child.id().to_string()]))?;
    let status = wait_timeout(&mut child, Duration::from_secs(5))?;
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said)?;
    ensure(status.code() == Some(143), || {
        format!("exit {status:?}, expected 143; stderr:\n{said}")
    })?;
    empty_dir(&parent)
}

/// A trial that needs the HTTP git server and Debian's `docker-registry`.
fn registry_trial(
    env: &std::sync::Arc<Env>,
    name: &str,
    test: fn(&Env) -> TestResult,
) -> libtest_mimic::Trial {
    if image_update_testkit::missing(&["docker-registry"]).is_empty() {
        env.trial(name, HTTP, test)
    } else {
        image_update_testkit::trial_with(name, &["docker-registry"], || Ok(()))
    }
}

/// A trial that needs the HTTP git server, Debian's `docker-registry` and PyPI's `moto_server`.
fn cloud_trial(
    env: &std::sync::Arc<Env>,
    name: &str,
    test: fn(&Env) -> TestResult,
) -> libtest_mimic::Trial {
    let needs = ["docker-registry", image_update_testkit::cloud::MOTO_BIN];
    if image_update_testkit::missing(&needs).is_empty() {
        env.trial(name, HTTP, test)
    } else {
        image_update_testkit::trial_with(name, &needs, || Ok(()))
    }
}

/// `job --fetch` over an ImageRepository with `provider: aws` and nothing but the Pod's AWS
/// identity in the environment (keys here; IRSA and Pod Identity take the same path once they
/// have keys, crates/registry/tests/cloud.rs): moto's ECR signs the password off, the registry
/// under its ECR name (through `HTTPS_PROXY`, TLS with `SSL_CERT_FILE`) accepts only that
/// password, and the update is committed and pushed after one `GetAuthorizationToken`.
fn provider_aws_logs_in_with_the_pods_identity(env: &Env) -> TestResult {
    use image_update_testkit::cloud::{ConnectProxy, EcrBed, isolate};
    use image_update_testkit::registry::{ImageSpec, TestCa};
    const ECR: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
    let ca = TestCa::for_names(&[ECR, "127.0.0.1"]);
    let bed = EcrBed::start(Some(&ca));
    let reg = &bed.registry;
    let spec = ImageSpec::new("linux", "amd64", None, "2026-01-01T00:00:00Z");
    reg.push_image("team/app", "1.0.0", &spec);
    reg.push_image("team/app", "1.5.0", &spec);
    let proxy = ConnectProxy::start(&[(ECR, reg.authority())]);

    let name = "job-cloud-aws";
    let tree = env.root.join("trees").join(name);
    fs::create_dir_all(tree.join("deploy"))?;
    fs::write(
        tree.join("deploy/app.yaml"),
        format!("image: {ECR}/team/app:1.0.0 # {{\"$imagepolicy\": \"flux-system:app\"}}\n"),
    )?;
    let fixture = env.fixture_from_tree(name, &tree)?;
    let files = env.root.join("job-cloud-aws-files");
    fs::create_dir_all(&files)?;
    let policies = files.join("policies.yaml");
    fs::write(
        &policies,
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: flux-system}}\nspec: {{image: {ECR}/team/app, provider: aws}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n"
        ),
    )?;
    let ca_file = files.join("ca.pem");
    fs::write(&ca_file, &ca.ca_pem)?;
    let (mut command, _) = http_job(env, &fixture);
    isolate(&mut command);
    command
        .args(["--branch", "main", "--fetch", "--policies"])
        .arg(&policies)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env("HTTPS_PROXY", proxy.url())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("SSL_CERT_FILE", &ca_file)
        .env("AWS_ACCESS_KEY_ID", &bed.id)
        .env("AWS_SECRET_ACCESS_KEY", &bed.secret)
        .env("AWS_ENDPOINT_URL_ECR", bed.front.url(""));
    let ran = parse(&output(&mut command))?;
    expect_result(&ran, 0, "pushed")?;
    let app = show(env, &fixture, "main:deploy/app.yaml")?;
    ensure(app.contains(&format!("{ECR}/team/app:1.5.0 #")), || {
        app.clone()
    })?;
    let logins = bed.logins();
    ensure(logins == 1, || {
        format!("{logins} GetAuthorizationToken calls")
    })?;
    ensure(
        proxy.connects().iter().all(|c| c == &format!("{ECR}:443")),
        || format!("{:?}", proxy.connects()),
    )?;
    Ok(())
}

/// `job --fetch` with the supply-chain flags: the newer unsigned tag is
/// skipped, the signed one is committed and pushed; the status and the
/// commit message (`.SupplyChain`) say who signed it; with another key
/// nothing is pushed and the Job fails.
fn supply_chain_gate(env: &Env) -> TestResult {
    use image_update_testkit::registry::{Auth, ImageSpec, Registry};
    use image_update_testkit::sigstore::{TestKey, legacy_key_layer};
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let key = TestKey::p256();
    let spec = |created: &str| ImageSpec::new("linux", "amd64", None, created);
    let (_, signed) = reg.push_image("example/app", "1.5.0", &spec("2026-01-01T00:00:00Z"));
    reg.push_image("example/app", "2.0.0", &spec("2026-02-01T00:00:00Z"));
    reg.push_sig_tag("example/app", &signed, &[legacy_key_layer(&signed, &key)]);
    let fixture = env.fixture("job-gate")?;
    let files = env.root.join("job-gate-files");
    fs::create_dir_all(&files)?;
    let policies = files.join("policies.yaml");
    fs::write(
        &policies,
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: app, namespace: flux-system}}\nspec: {{image: {host}/example/app}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: app, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: app}}\n  policy: {{semver: {{range: '>=1.0.0'}}}}\n"
        ),
    )?;
    let template = files.join("message.tmpl");
    fs::write(
        &template,
        "Update images\n{{ range .SupplyChain }}\n{{ .Policy }}: {{ .Tag }} signed by {{ range .SignedBy }}{{ .Name }}{{ end }}{{ range .Skipped }}, skipped {{ .Tag }} ({{ .Kind }}){{ end }}{{ end }}\n",
    )?;
    fs::write(files.join("cosign.pub"), key.public_pem())?;
    fs::write(files.join("other.pub"), TestKey::p256().public_pem())?;
    let before = rev(env, &fixture, "main")?;
    let run_with = |key_file: &str| -> Result<Ran, libtest_mimic::Failed> {
        let (mut command, _) = http_job(env, &fixture);
        let ran = parse(&output(
            command
                .args(["--branch", "main", "--fetch", "--policies"])
                .arg(&policies)
                .arg("--verify-key")
                .arg(files.join(key_file))
                .arg("--commit-template")
                .arg(&template),
        ))?;
        Ok(ran)
    };
    let ran = run_with("other.pub")?;
    expect_code(&ran, 1)?;
    ensure(rev(env, &fixture, "main")? == before, || {
        "pushed without an acceptable signature".to_owned()
    })?;
    ensure(
        ran.status["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no candidate passed the supply-chain gate")),
        || format!("{:#}", ran.status),
    )?;

    let ran = run_with("cosign.pub")?;
    expect_result(&ran, 0, "pushed")?;
    let app = show(env, &fixture, "main:deploy/app.yaml")?;
    ensure(
        app.contains(&format!("image: {host}/example/app:1.5.0@{signed} #")),
        || app.clone(),
    )?;
    let entry = &ran.status["supplyChain"]["flux-system:app"];
    ensure(
        entry["signedBy"][0]["name"] == "cosign.pub"
            && entry["skipped"][0]["tag"] == "2.0.0"
            && ran.status["changes"]["supplyChain"]["flux-system:app"] == *entry,
        || format!("{:#}", ran.status),
    )?;
    let message = env.git_out(&fixture.bare, &["log", "-1", "--format=%B", "main"])?;
    ensure(
        message.trim()
            == "Update images\n\nflux-system:app: 1.5.0 signed by cosign.pub, skipped 2.0.0 (unsigned)",
        || message.clone(),
    )?;
    Ok(())
}

/// `image-update deploy` over a Flux repository's objects (automation, GitRepository,
/// ImageRepository and ImagePolicy), then the CronJob's container command as Kubernetes runs it:
/// the ConfigMap's files where `/config` would be, against the repository served over HTTP (its
/// clone holds the same definitions as the ConfigMap) and a registry with a newer tag. The first
/// run pushes the update, the second has nothing to do; a ConfigMap whose definition differs
/// from the clone's is an error naming both, and nothing is pushed.
fn deployed_cronjob_runs_on_a_flux_repository(env: &Env) -> TestResult {
    use image_update_testkit::registry::{Auth, ImageSpec, Registry};
    let reg = Registry::start(Auth::Anonymous);
    let host = reg.authority();
    let spec = ImageSpec::new("linux", "amd64", None, "2026-01-01T00:00:00Z");
    reg.push_image("acme/web", "1.0.0", &spec);
    reg.push_image("acme/web", "1.2.0", &spec);
    let name = "job-deployed";
    let url = format!("http://127.0.0.1:{}/git/{name}.git", env.http_port());
    let tree = env.root.join("trees").join(name);
    fs::create_dir_all(tree.join("clusters/prod"))?;
    fs::create_dir_all(tree.join("apps"))?;
    fs::write(
        tree.join("clusters/prod/automation.yaml"),
        "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    checkout: {ref: {branch: main}}
    commit:
      author: {name: Flux Bot, email: bot@example.com}
      messageTemplate: 'Update images'
    push: {branch: main}
  update: {path: ./apps, strategy: Setters}
",
    )?;
    fs::write(
        tree.join("clusters/prod/gitrepository.yaml"),
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {{name: fleet, namespace: flux-system}}
spec:
  interval: 1m
  url: {url}
  ref: {{branch: main}}
  secretRef: {{name: git-auth}}
"
        ),
    )?;
    let images = format!(
        "apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {{name: web, namespace: flux-system}}
spec: {{image: {host}/acme/web, interval: 5m}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {{name: web, namespace: flux-system}}
spec:
  imageRepositoryRef: {{name: web}}
  policy: {{semver: {{range: '>=1.0.0'}}}}
"
    );
    fs::write(tree.join("clusters/prod/images.yaml"), &images)?;
    let web = |tag: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: web}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: {host}/acme/web:{tag} # {{\"$imagepolicy\": \"flux-system:web\"}}\n"
        )
    };
    fs::write(tree.join("apps/web.yaml"), web("1.0.0"))?;
    let fixture = env.fixture_from_tree(name, &tree)?;

    // The manifests, from the repository's files.
    let generated = Command::new(BIN)
        .arg("deploy")
        .args(
            ["automation.yaml", "gitrepository.yaml", "images.yaml"]
                .map(|f| tree.join("clusters/prod").join(f)),
        )
        .stdin(Stdio::null())
        .output()?;
    ensure(generated.status.success(), || {
        String::from_utf8_lossy(&generated.stderr).into_owned()
    })?;
    let objects = image_update::api::yaml::parse_values(&String::from_utf8(generated.stdout)?)?;
    let of_kind = |kind: &str| objects.iter().find(|o| o["kind"] == kind).cloned();
    let config_map = of_kind("ConfigMap").ok_or("no ConfigMap")?;
    let cron = of_kind("CronJob").ok_or("no CronJob")?;
    let container = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = serde_json::from_value(container["args"].clone())?;
    ensure(args.iter().any(|a| a == "/config/policies.yaml"), || {
        format!("{args:?}")
    })?;

    // `/config` as the Pod sees it, and the container's command with its paths there.
    let config = env.root.join("job-deployed-config");
    fs::create_dir_all(&config)?;
    let data = config_map["data"].as_object().ok_or("no data")?;
    for (key, text) in data {
        fs::write(config.join(key), text.as_str().ok_or("not a string")?)?;
    }
    let local: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("/config/") {
            Some(key) => config.join(key).to_string_lossy().into_owned(),
            None if a == "/dev/termination-log" => config
                .join("termination-log")
                .to_string_lossy()
                .into_owned(),
            None => a.clone(),
        })
        .collect();
    let work = env.root.join("job-work").join(name);
    fs::create_dir_all(&work)?;
    let cronjob_run = || -> Result<Ran, libtest_mimic::Failed> {
        let mut command = Command::new(BIN);
        for var in [
            "IMAGE_UPDATE_GIT_TOKEN",
            "IMAGE_UPDATE_SIGNING_KEY",
            "DOCKER_CONFIG",
            "REGISTRY_AUTH_FILE",
        ] {
            command.env_remove(var);
        }
        // The Secret `git-auth`'s keys, as the CronJob's environment takes them.
        command
            .args(&local)
            .env("HOME", env.root.join("home"))
            .env("TMPDIR", &work)
            .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
            .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD);
        Ok(parse(&output(&mut command))?)
    };

    let before = rev(env, &fixture, "main")?;
    let ran = cronjob_run()?;
    expect_result(&ran, 0, "pushed")?;
    let head = rev(env, &fixture, "main")?;
    ensure(
        head != before && ran.status["lastPushCommit"] == head.as_str(),
        || format!("{:#}", ran.status),
    )?;
    let updated = show(env, &fixture, "main:apps/web.yaml")?;
    ensure(updated == web("1.2.0").trim_end(), || updated.clone())?;
    empty_dir(&work)?;

    // The next scheduled run: nothing to do, nothing pushed.
    let ran = cronjob_run()?;
    expect_result(&ran, 0, "nothingToDo")?;
    ensure(rev(env, &fixture, "main")? == head, || {
        "pushed again".to_owned()
    })?;

    // The ConfigMap's definition differs from the clone's: both places and the field.
    let policies = config.join("policies.yaml");
    let text = fs::read_to_string(&policies)?;
    fs::write(&policies, text.replace(">=1.0.0", ">=2.0.0"))?;
    let ran = cronjob_run()?;
    expect_result(&ran, 1, "failed")?;
    let message = ran.status["error"].to_string();
    ensure(
        message.contains("ImagePolicy flux-system/web is defined twice, and the definitions differ: /spec/policy/semver/range is \\\">=2.0.0\\\" at ")
            && message.contains(&format!("{}:", policies.display()))
            && message.contains("clusters/prod/images.yaml:"),
        || format!("{:#}\n{}", ran.status, ran.stderr),
    )?;
    ensure(rev(env, &fixture, "main")? == head, || "pushed".to_owned())?;
    empty_dir(&work)
}
