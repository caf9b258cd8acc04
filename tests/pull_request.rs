//! Pull and merge requests end to end: the binary's `job --pull-request` (and the Action with
//! `pull-request: true`) pushing to the real git test bed (`image_update_testkit::git`:
//! lighttpd + git-http-backend) and opening or updating the request on the loopback fakes of
//! GitHub, GitLab, Gitea and Forgejo (`image_update_testkit::forge`), which validate every call
//! against the provider's published API description and take their branches from the bare
//! repository the Job pushed to (a request for a branch that was not pushed is refused).
//!
//! On every provider: a request created, then updated in place by later runs (never a second
//! one; no push when the head branch already holds the change), a run with nothing to do
//! (the open request left, or closed with a comment), a request that fails after the push (the
//! error kind `pullRequest`, the branch kept and reused by the next run). On GitHub: a GitHub
//! App from pasted Flux objects (`provider: github`, the Secret's `githubApp*` keys) whose
//! installation token also clones and pushes; the change-set branch form; options. The Action
//! cases of `testdata/action/pull-request-cases/` (the `action_cases` format).
//!
//! A trial is ignored with the reason when a server, a tool or an API description is missing
//! (failed when `CI` is set).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod action_cases;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use fs_err as fs;
use image_update_testkit::forge::{App, FakeForge, Fault, Flavor, PullState};
use image_update_testkit::git::{
    APP_YAML, Env, Fixture, HTTP_PASSWORD, HTTP_USER, INSTALLATION_TOKEN, Need, SECRETS,
    TestResult, ensure,
};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

const HEAD: &str = "image-update/main";

fn main() {
    let args = Arguments::from_args();
    let (env, servers, temp) = match Env::start_with(&[Need::Http]) {
        Ok(started) => started,
        Err(reason) => panic!("cannot set up the test bed: {reason}"),
    };
    type Case = (&'static str, fn(&Env, Flavor) -> TestResult);
    let cases: &[Case] = &[
        (
            "created_then_updated_in_place",
            created_then_updated_in_place,
        ),
        (
            "nothing_to_do_leaves_or_closes",
            nothing_to_do_leaves_or_closes,
        ),
        (
            "failure_after_push_then_retry",
            failure_after_push_then_retry,
        ),
    ];
    let mut trials = Vec::new();
    for flavor in Flavor::ALL {
        for (name, test) in cases {
            trials.push(trial(
                &env,
                &format!("{}/{name}", flavor.name()),
                flavor,
                *test,
            ));
        }
    }
    let github: &[Case] = &[
        ("app_from_flux_objects", app_from_flux_objects),
        (
            "change_set_branches_and_options",
            change_set_branches_and_options,
        ),
        ("configuration_errors", configuration_errors),
        ("state_short_circuit", state_short_circuit),
    ];
    for (name, test) in github {
        trials.push(trial(
            &env,
            &format!("github/{name}"),
            Flavor::GitHub,
            *test,
        ));
    }
    for case in action_cases::cases_in(ACTION_CASES) {
        trials.push(gated(
            &env,
            &format!("action::{}", case.name),
            Flavor::GitHub,
            move |env| action_case(env, &case),
        ));
    }
    trials.push(trial(
        &env,
        "action::failure_after_push",
        Flavor::GitHub,
        action_failure_after_push,
    ));
    trials.push(trial(
        &env,
        "action::readme_workflow_opens_a_pull_request",
        Flavor::GitHub,
        readme_workflow,
    ));
    let conclusion = libtest_mimic::run(&args, trials);
    drop(env);
    drop(servers);
    drop(temp);
    conclusion.exit();
}

/// A trial on `flavor` that needs lighttpd and the provider's API description.
fn trial(
    env: &Arc<Env>,
    name: &str,
    flavor: Flavor,
    test: fn(&Env, Flavor) -> TestResult,
) -> Trial {
    gated(env, name, flavor, move |env| test(env, flavor))
}

/// [`trial`] for any runner.
fn gated(
    env: &Arc<Env>,
    name: &str,
    flavor: Flavor,
    test: impl FnOnce(&Env) -> TestResult + Send + 'static,
) -> Trial {
    let env = Arc::clone(env);
    Trial::ignorable_test(name, move || {
        let mut missing = env.missing(&[Need::Http]);
        let description = flavor.description_path();
        if missing.is_none() && !description.is_file() {
            missing = Some(format!(
                "{} (scripts/api-descriptions.sh installs it)",
                description.display()
            ));
        }
        if let Some(reason) = missing {
            if std::env::var_os("CI").is_some() {
                return Err(format!("{reason}; CI is set, so this is a failure").into());
            }
            return Ok(Completion::ignored_with(reason));
        }
        test(&env).map(|()| Completion::Completed)
    })
}

fn token(flavor: Flavor) -> String {
    format!("forge-tok-{}-n3ver-shown", flavor.name())
}

/// A fresh repository on the git bed and a fake forge serving it (`git/NAME`), whose branches
/// are the repository's.
fn bed(env: &Env, flavor: Flavor, name: &str) -> Result<(Fixture, FakeForge), Failed> {
    let fixture = env.fixture(&format!("pr-{}-{name}", flavor.name()))?;
    let fake = FakeForge::start_for(
        flavor,
        &format!("git/{}", fixture.name),
        &token(flavor),
        None,
    )?;
    fake.track_branches(&fixture.bare);
    Ok((fixture, fake))
}

/// `image-update job --pull-request` over HTTP as alice, against `fake`, with no credential
/// from the caller's environment.
fn pr_job(env: &Env, fixture: &Fixture, fake: &FakeForge) -> Command {
    let parent = env.root.join("job-work").join(&fixture.name);
    fs::create_dir_all(&parent).unwrap();
    let mut command = bare_job(env, &parent);
    command
        .args(["--url", &env.http_url(fixture)])
        .args(["--pull-request", "--forge", fake.flavor.name()])
        .args(["--forge-api-url", &fake.api_url()])
        .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
        .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD)
        .env("IMAGE_UPDATE_FORGE_TOKEN", token(fake.flavor));
    command
}

fn bare_job(env: &Env, parent: &Path) -> Command {
    let mut command = Command::new(BIN);
    for (name, _) in std::env::vars() {
        if name.starts_with("IMAGE_UPDATE_") {
            command.env_remove(name);
        }
    }
    command
        .env("HOME", env.root.join("home"))
        .arg("job")
        .arg("--work-dir")
        .arg(parent)
        .args([
            "--author-name",
            "Flux Bot",
            "--author-email",
            "bot@example.com",
        ]);
    command
}

struct Ran {
    code: Option<i32>,
    status: Value,
    stderr: String,
}

fn run(command: &mut Command, secrets: &[&str]) -> Result<Ran, Failed> {
    let output: Output = command.stdin(Stdio::null()).output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    for secret in SECRETS.iter().chain(secrets) {
        if stdout.contains(secret) || stderr.contains(secret) {
            return Err(format!("a secret leaked:\n{stdout}\n{stderr}").into());
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

fn run_pr(command: &mut Command, flavor: Flavor) -> Result<Ran, Failed> {
    run(command, &[&token(flavor)])
}

fn expect(ran: &Ran, code: i32, result: &str, action: Option<&str>) -> TestResult {
    let pr = &ran.status["pullRequest"];
    ensure(
        ran.code == Some(code) && ran.status["result"] == result && pr["action"].as_str() == action,
        || {
            format!(
                "expected exit {code}, result {result}, action {action:?}; got exit {:?}\n\
                 status: {:#}\nstderr:\n{}",
                ran.code, ran.status, ran.stderr
            )
        },
    )
}

fn no_violations(fake: &FakeForge) -> TestResult {
    let violations = fake.violations();
    ensure(violations.is_empty(), || {
        format!("{violations:#?}\ncalls: {:#?}", fake.calls())
    })
}

fn rev(env: &Env, fixture: &Fixture, what: &str) -> Result<String, Failed> {
    env.git_out(&fixture.bare, &["rev-parse", what])
}

fn show(env: &Env, fixture: &Fixture, what: &str) -> Result<String, Failed> {
    env.git_out(&fixture.bare, &["show", what])
}

fn policy(tag: &str) -> String {
    format!("flux-system:app=ghcr.io/example/app:{tag}")
}

fn app_yaml(tag: &str) -> String {
    APP_YAML.replace("app:1.0.0", &format!("app:{tag}"))
}

/// The status's API call count equals the calls the fake saw since `before`.
fn calls_counted(ran: &Ran, fake: &FakeForge, before: usize) -> Result<u64, Failed> {
    let counted = ran.status["pullRequest"]["apiCalls"]
        .as_u64()
        .ok_or("no pullRequest.apiCalls")?;
    let seen = fake.calls().len() - before;
    ensure(counted == seen as u64, || {
        format!(
            "the status counts {counted} API calls, the fake saw {seen}: {:#?}",
            &fake.calls()[before..]
        )
    })?;
    Ok(counted)
}

// ------------------------------------------------------------------------------------ cases

fn created_then_updated_in_place(env: &Env, flavor: Flavor) -> TestResult {
    let (fixture, fake) = bed(env, flavor, "update")?;
    // Created: the commit goes to the head branch, the checkout branch stays.
    let first = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("2.0.0")]),
        flavor,
    )?;
    expect(&first, 0, "pushed", Some("created"))?;
    let pr = &first.status["pullRequest"];
    let head = rev(env, &fixture, HEAD)?;
    ensure(
        pr["head"] == HEAD
            && pr["base"] == "main"
            && pr["provider"] == flavor.name()
            && pr["number"] == 1
            && pr["url"].as_str().is_some_and(|u| u.ends_with('1'))
            && first.status["lastPushCommit"] == head.as_str()
            && first.status["observedSourceRevision"]
                == format!("main@sha1:{}", fixture.commits[2]).as_str(),
        || format!("{:#}", first.status),
    )?;
    ensure(rev(env, &fixture, "main")? == fixture.commits[2], || {
        "main moved".to_owned()
    })?;
    let file = show(env, &fixture, &format!("{HEAD}:deploy/app.yaml"))?;
    ensure(file == app_yaml("2.0.0").trim_end(), || file.clone())?;
    ensure(
        rev(env, &fixture, &format!("{HEAD}~1"))? == fixture.commits[2],
        || "the head branch is not one commit on top of main".to_owned(),
    )?;
    let pulls = fake.pulls();
    let message = env.git_out(&fixture.bare, &["log", "-1", "--format=%s", HEAD])?;
    ensure(
        pulls.len() == 1
            && pulls[0].state == PullState::Open
            && pulls[0].head == HEAD
            && pulls[0].base == "main"
            && pulls[0].title == message
            && pulls[0].body.contains(
                "| `deploy/app.yaml` | Deployment app | `spec.template.spec.containers[0].image` | \
                 `ghcr.io/example/app:1.0.0` → `ghcr.io/example/app:2.0.0` | `flux-system:app` |",
            ),
        || format!("{pulls:#?}"),
    )?;
    ensure(
        first.stderr.contains(" #1 created: ") || first.stderr.contains(" !1 created: "),
        || first.stderr.clone(),
    )?;
    // The same again: the head branch holds the change, nothing is pushed, the request is
    // unchanged.
    let before = fake.calls().len();
    let second = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("2.0.0")]),
        flavor,
    )?;
    expect(&second, 0, "nothingToDo", Some("unchanged"))?;
    ensure(rev(env, &fixture, HEAD)? == head, || {
        "the head branch moved".to_owned()
    })?;
    ensure(second.stderr.contains("already holds this change"), || {
        second.stderr.clone()
    })?;
    let unchanged_calls = calls_counted(&second, &fake, before)?;
    ensure(unchanged_calls == 1, || {
        format!(
            "{unchanged_calls} calls to find an unchanged request: {:#?}",
            fake.calls()
        )
    })?;
    // A new image: force-pushed, the same request updated in place, in at most three calls.
    let before = fake.calls().len();
    let third = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("3.0.0")]),
        flavor,
    )?;
    expect(&third, 0, "pushed", Some("updated"))?;
    ensure(third.status["pullRequest"]["number"] == 1, || {
        format!("{:#}", third.status)
    })?;
    let file = show(env, &fixture, &format!("{HEAD}:deploy/app.yaml"))?;
    ensure(file == app_yaml("3.0.0").trim_end(), || file.clone())?;
    ensure(
        rev(env, &fixture, &format!("{HEAD}~1"))? == fixture.commits[2],
        || "the head branch was not rewritten from main".to_owned(),
    )?;
    let update_calls = calls_counted(&third, &fake, before)?;
    ensure(update_calls <= 3, || {
        format!(
            "{update_calls} calls to update the request: {:#?}",
            fake.calls()
        )
    })?;
    let pulls = fake.pulls();
    ensure(
        pulls.len() == 1 && pulls[0].body.contains("ghcr.io/example/app:3.0.0"),
        || format!("{pulls:#?}"),
    )?;
    no_violations(&fake)
}

fn nothing_to_do_leaves_or_closes(env: &Env, flavor: Flavor) -> TestResult {
    let (fixture, fake) = bed(env, flavor, "nothing")?;
    // Nothing to do and no request: one look-up, no branch.
    let before = fake.calls().len();
    let none = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("1.0.0")]),
        flavor,
    )?;
    expect(&none, 0, "nothingToDo", None)?;
    ensure(
        none.status["pullRequest"]["head"] == HEAD && none.status["pullRequest"]["url"].is_null(),
        || format!("{:#}", none.status),
    )?;
    ensure(calls_counted(&none, &fake, before)? == 1, || {
        format!("{:#?}", fake.calls())
    })?;
    ensure(rev(env, &fixture, HEAD).is_err(), || {
        "a head branch was pushed".to_owned()
    })?;
    let created = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("2.0.0")]),
        flavor,
    )?;
    expect(&created, 0, "pushed", Some("created"))?;
    // Nothing to do: the open request is left as it is.
    let left = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("1.0.0")]),
        flavor,
    )?;
    expect(&left, 0, "nothingToDo", Some("unchanged"))?;
    ensure(fake.pulls()[0].state == PullState::Open, || {
        format!("{:#?}", fake.pulls())
    })?;
    // ... or closed with a comment, by option.
    let closed = run_pr(
        pr_job(env, &fixture, &fake)
            .args(["--policy", &policy("1.0.0")])
            .args(["--pull-request-close-when-nothing-to-do"])
            .args(["--pull-request-close-comment", "Nothing left to update."]),
        flavor,
    )?;
    expect(&closed, 0, "nothingToDo", Some("closed"))?;
    let pulls = fake.pulls();
    ensure(
        pulls.len() == 1
            && pulls[0].state == PullState::Closed
            && pulls[0].comments == ["Nothing left to update."],
        || format!("{pulls:#?}"),
    )?;
    no_violations(&fake)
}

fn failure_after_push_then_retry(env: &Env, flavor: Flavor) -> TestResult {
    let (fixture, fake) = bed(env, flavor, "failure")?;
    let (path, body) = match flavor {
        Flavor::GitHub => (
            "/pulls",
            json!({"message": "Resource not accessible by personal access token",
                   "documentation_url": "https://docs.github.com/rest"}),
        ),
        Flavor::GitLab => ("/merge_requests", json!({"message": "403 Forbidden"})),
        _ => (
            "/pulls",
            json!({"message": "token does not have at least one of required scope(s)",
                   "url": "https://forge.example/api/swagger"}),
        ),
    };
    fake.fault(Fault::new("POST", path, 403, body));
    let failed = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("2.0.0")]),
        flavor,
    )?;
    expect(&failed, 1, "failed", None)?;
    let head = rev(env, &fixture, HEAD)?;
    let error = &failed.status["error"];
    ensure(
        error["kind"] == "pullRequest"
            && error["exitCode"] == 1
            && error["message"].as_str().is_some_and(|m| {
                m.contains(&format!("pushed the commit to `{HEAD}`"))
                    && m.contains("the next run reuses the branch")
            })
            && failed.status["lastPushCommit"] == head.as_str()
            && failed.status["pullRequest"]["head"] == HEAD
            && failed.status["changes"]["fileChanges"]["deploy/app.yaml"].is_array(),
        || format!("{:#}", failed.status),
    )?;
    ensure(fake.pulls().is_empty(), || format!("{:#?}", fake.pulls()))?;
    // The next run finds the change on the branch: no push, the request is opened.
    let retried = run_pr(
        pr_job(env, &fixture, &fake).args(["--policy", &policy("2.0.0")]),
        flavor,
    )?;
    expect(&retried, 0, "nothingToDo", Some("created"))?;
    ensure(rev(env, &fixture, HEAD)? == head, || {
        "the branch moved".to_owned()
    })?;
    ensure(fake.pulls().len() == 1, || format!("{:#?}", fake.pulls()))?;
    no_violations(&fake)
}

fn state_short_circuit(env: &Env, flavor: Flavor) -> TestResult {
    let (fixture, fake) = bed(env, flavor, "state")?;
    let state = env.root.join("pr-state.json");
    let with_state = |tag: &str| {
        let mut command = pr_job(env, &fixture, &fake);
        command
            .args(["--policy", &policy(tag)])
            .arg("--state")
            .arg(&state);
        command
    };
    let created = run_pr(&mut with_state("2.0.0"), flavor)?;
    expect(&created, 0, "pushed", Some("created"))?;
    // Nothing changed since: skipped, no clone, no call.
    let before = fake.calls().len();
    let skipped = run_pr(&mut with_state("2.0.0"), flavor)?;
    ensure(
        skipped.code == Some(0)
            && skipped.status["result"] == "skipped"
            && fake.calls().len() == before,
        || format!("{:#}\n{:#?}", skipped.status, fake.calls()),
    )?;
    // A new image: the run goes on and updates the request.
    let updated = run_pr(&mut with_state("3.0.0"), flavor)?;
    expect(&updated, 0, "pushed", Some("updated"))?;
    no_violations(&fake)
}

/// The GitHub App of the forge crate's tests (its key and public key).
fn app_key() -> (String, Vec<u8>) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/forge/tests/data");
    (
        fs::read_to_string(data.join("github-app.pem")).unwrap(),
        fs::read(data.join("github-app.pub.der")).unwrap(),
    )
}

fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn app_from_flux_objects(env: &Env, _: Flavor) -> TestResult {
    let fixture = env.fixture("pr-github-app")?;
    let (key, public_key_der) = app_key();
    let app = App {
        app_id: 4242,
        public_key_der,
        installation_id: 77,
        token: INSTALLATION_TOKEN.to_owned(),
    };
    // The fake accepts only the installation token; the git server accepts it as the
    // password of `x-access-token`, as GitHub does.
    let fake = FakeForge::start_for(
        Flavor::GitHub,
        &format!("git/{}", fixture.name),
        INSTALLATION_TOKEN,
        Some(app),
    )?;
    fake.track_branches(&fixture.bare);
    let dir = env.root.join("pr-app-objects");
    fs::create_dir_all(&dir)?;
    let repository = dir.join("gitrepository.yaml");
    fs::write(
        &repository,
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: \
             fleet\n  namespace: flux-system\nspec:\n  interval: 5m\n  url: {}\n  provider: \
             github\n  ref:\n    branch: main\n  secretRef:\n    name: github-app\n",
            env.http_url(&fixture)
        ),
    )?;
    let secret = dir.join("secret.yaml");
    fs::write(
        &secret,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: github-app\n  namespace: \
             flux-system\ndata:\n  githubAppID: {}\n  githubAppPrivateKey: {}\n  \
             githubAppBaseURL: {}\n",
            b64("4242"),
            b64(&key),
            b64(&fake.api_url())
        ),
    )?;
    let automation = dir.join("automation.yaml");
    fs::write(
        &automation,
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  \
         name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  sourceRef:\n    kind: \
         GitRepository\n    name: fleet\n  git:\n    commit:\n      author:\n        name: \
         Flux Bot\n        email: bot@example.com\n      messageTemplate: 'Update {{ range \
         .Changed.Changes }}{{ .NewValue }}{{ end }}'\n  update:\n    path: ./deploy\n    \
         strategy: Setters\n",
    )?;
    let parent = env.root.join("job-work").join(&fixture.name);
    fs::create_dir_all(&parent)?;
    let mut command = bare_job(env, &parent);
    command
        .arg("--git-repository")
        .arg(&repository)
        .arg("--secret")
        .arg(&secret)
        .arg("--automation")
        .arg(&automation)
        .args(["--pull-request", "--policy", &policy("2.0.0")]);
    // No line of the App's private key may be shown.
    let key_line = key.lines().nth(1).unwrap_or_default().to_owned();
    let ran = run(&mut command, &[&key_line])?;
    expect(&ran, 0, "pushed", Some("created"))?;
    let head = "image-update/flux-system-apps";
    ensure(ran.status["pullRequest"]["head"] == head, || {
        format!("{:#}", ran.status)
    })?;
    let file = show(env, &fixture, &format!("{head}:deploy/app.yaml"))?;
    ensure(file == app_yaml("2.0.0").trim_end(), || file.clone())?;
    let pulls = fake.pulls();
    ensure(
        pulls.len() == 1 && pulls[0].title == "Update ghcr.io/example/app:2.0.0",
        || format!("{pulls:#?}"),
    )?;
    ensure(
        fake.calls()
            .iter()
            .any(|c| c.starts_with("POST /app/installations/77/access_tokens")),
        || format!("{:#?}", fake.calls()),
    )?;
    // Without the App's key, `provider: github` cannot work: a configuration error.
    fs::write(
        &secret,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: github-app\n  namespace: \
             flux-system\ndata:\n  githubAppID: {}\n",
            b64("4242")
        ),
    )?;
    let ran = run(&mut command, &[&key_line])?;
    ensure(
        ran.code == Some(2)
            && ran.status["error"]["kind"] == "configuration"
            && ran
                .stderr
                .contains("githubAppID is given without githubAppPrivateKey"),
        || format!("{:#}\n{}", ran.status, ran.stderr),
    )?;
    no_violations(&fake)
}

fn change_set_branches_and_options(env: &Env, flavor: Flavor) -> TestResult {
    let (fixture, fake) = bed(env, flavor, "change-set")?;
    let ran = run_pr(
        pr_job(env, &fixture, &fake)
            .args([
                "--policy",
                &policy("2.0.0"),
                "--pull-request-branch",
                "change-set",
            ])
            .args([
                "--pull-request-title",
                "chore: {{ len .Rows }} image(s) on {{ .Base }}",
            ])
            .args([
                "--pull-request-body",
                "{{ range .Rows }}{{ .File }}: {{ .NewValue }}{{ end }}",
            ])
            .args(["--pull-request-label", "dependencies"])
            .args([
                "--pull-request-assignee",
                "alice",
                "--pull-request-reviewer",
                "bob",
            ])
            .args([
                "--pull-request-draft",
                "--pull-request-auto-merge",
                "squash",
            ]),
        flavor,
    )?;
    expect(&ran, 0, "pushed", Some("created"))?;
    let head = ran.status["pullRequest"]["head"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure(
        head.starts_with("image-update-")
            && head.len() == "image-update-".len() + 8 + 1 + 64
            && rev(env, &fixture, &head).is_ok(),
        || format!("{:#}", ran.status),
    )?;
    let pulls = fake.pulls();
    let pull = &pulls[0];
    ensure(
        pull.title == "chore: 1 image(s) on main"
            && pull.body == "deploy/app.yaml: ghcr.io/example/app:2.0.0"
            && pull.labels == ["dependencies"]
            && pull.assignees == ["alice"]
            && pull.reviewers == ["bob"]
            && pull.draft
            && pull.auto_merge.is_some(),
        || format!("{pull:#?}"),
    )?;
    // Another change set: another branch and another request.
    let other = run_pr(
        pr_job(env, &fixture, &fake).args([
            "--policy",
            &policy("3.0.0"),
            "--pull-request-branch",
            "change-set",
        ]),
        flavor,
    )?;
    expect(&other, 0, "pushed", Some("created"))?;
    ensure(
        other.status["pullRequest"]["head"] != head.as_str() && fake.pulls().len() == 2,
        || format!("{:#}", other.status),
    )?;
    no_violations(&fake)
}

fn configuration_errors(env: &Env, flavor: Flavor) -> TestResult {
    let (fixture, fake) = bed(env, flavor, "config")?;
    let parent = env.root.join("job-work").join("pr-config");
    fs::create_dir_all(&parent)?;
    // Arguments, variables, what the error says.
    type Mistake = (Vec<String>, Vec<(&'static str, String)>, &'static str);
    let cases: Vec<Mistake> = vec![
        // No token at all.
        (
            vec!["--pull-request".into(), "--forge".into(), "github".into()],
            vec![],
            "--pull-request needs a token",
        ),
        // A template that does not parse.
        (
            vec!["--pull-request-title".into(), "{{ .Nope".into()],
            vec![("IMAGE_UPDATE_FORGE_TOKEN", token(flavor))],
            "--pull-request-title: the template does not parse",
        ),
        // GitLab has no team reviewers.
        (
            vec![
                "--forge".into(),
                "gitlab".into(),
                "--pull-request-team-reviewer".into(),
                "core".into(),
            ],
            vec![("IMAGE_UPDATE_FORGE_TOKEN", token(flavor))],
            "GitLab has no team reviewers",
        ),
        // A tag is no base.
        (
            vec!["--tag".into(), "v1.0.0".into()],
            vec![("IMAGE_UPDATE_FORGE_TOKEN", token(flavor))],
            "is not a branch",
        ),
        // The head branch template names the base.
        (
            vec!["--pull-request-branch".into(), "{{ .Base }}".into()],
            vec![("IMAGE_UPDATE_FORGE_TOKEN", token(flavor))],
            "a pull request needs another branch",
        ),
    ];
    for (args, vars, said) in cases {
        let mut command = bare_job(env, &parent);
        command
            .args([
                "--url",
                &env.http_url(&fixture),
                "--policy",
                &policy("2.0.0"),
            ])
            .env("IMAGE_UPDATE_GIT_USERNAME", HTTP_USER)
            .env("IMAGE_UPDATE_GIT_PASSWORD", HTTP_PASSWORD);
        if !args.iter().any(|a| a == "--pull-request") {
            command.args(["--pull-request", "--forge-api-url", &fake.api_url()]);
            if !args.iter().any(|a| a == "--forge") {
                command.args(["--forge", "github"]);
            }
        }
        command.args(&args);
        // Without IMAGE_UPDATE_FORGE_TOKEN, the git password would be the fallback: drop it too.
        if vars.is_empty() {
            command.env_remove("IMAGE_UPDATE_GIT_PASSWORD");
        }
        for (name, value) in vars {
            command.env(name, value);
        }
        let ran = run_pr(&mut command, flavor)?;
        ensure(
            ran.code == Some(2)
                && ran.status["error"]["kind"] == "configuration"
                && ran.stderr.contains(said),
            || {
                format!(
                    "{args:?}: expected {said:?}\n{:#}\n{}",
                    ran.status, ran.stderr
                )
            },
        )?;
    }
    ensure(rev(env, &fixture, "main")? == fixture.commits[2], || {
        "main moved".to_owned()
    })?;
    ensure(fake.pulls().is_empty(), || format!("{:#?}", fake.pulls()))?;
    no_violations(&fake)
}

// ------------------------------------------------------------------------------ the Action

/// The Action's pull-request cases (the `action_cases` format; `previous-runs` runs the same
/// step before the one compared).
const ACTION_CASES: &str = "testdata/action/pull-request-cases";

/// A repository on the git bed holding `workspace`, and a fake GitHub for it that accepts the
/// installation token (the token the git server also takes, as `x-access-token`'s password).
fn action_bed(env: &Env, name: &str, workspace: &Path) -> Result<(Fixture, FakeForge), Failed> {
    let fixture = env.fixture_from_tree(&format!("action-pr-{name}"), workspace)?;
    let fake = FakeForge::start_for(
        Flavor::GitHub,
        &format!("git/{}", fixture.name),
        INSTALLATION_TOKEN,
        None,
    )?;
    fake.track_branches(&fixture.bare);
    Ok((fixture, fake))
}

/// Runs `image-update action` as the runner runs it (`tests/action.rs`), with the runner's
/// variables naming the git bed's repository and the fake's API, on `main`; the token is the
/// installation token unless the inputs give one.
fn run_action(
    env: &Env,
    fixture: &Fixture,
    fake: &FakeForge,
    prepared: &action_cases::Prepared,
    with: &BTreeMap<String, String>,
) -> Result<action_cases::Observed, Failed> {
    let mut with = with.clone();
    with.entry("token".to_owned())
        .or_insert_with(|| INSTALLATION_TOKEN.to_owned());
    let home = prepared.tmp.path().join("home");
    fs::create_dir_all(&home)?;
    let out = Command::new(BIN)
        .arg("action")
        .env_clear()
        .envs(action_cases::input_env(&with)?)
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CI", "true")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKSPACE", &prepared.workspace)
        .env("GITHUB_OUTPUT", &prepared.output)
        .env("GITHUB_STEP_SUMMARY", &prepared.summary)
        .env(
            "GITHUB_SERVER_URL",
            format!("http://127.0.0.1:{}", env.http_port()),
        )
        .env("GITHUB_REPOSITORY", format!("git/{}", fixture.name))
        .env("GITHUB_API_URL", fake.api_url())
        .env("GITHUB_REF", "refs/heads/main")
        .env(
            image_update::api::action::TEST_DELIMITER_VARIABLE,
            action_cases::DELIMITER,
        )
        .current_dir(&prepared.workspace)
        .stdin(Stdio::null())
        .output()?;
    for secret in SECRETS {
        for text in [&out.stdout, &out.stderr] {
            ensure(!String::from_utf8_lossy(text).contains(secret), || {
                format!("a secret leaked: {}", String::from_utf8_lossy(text))
            })?;
        }
    }
    action_cases::observe(
        prepared,
        out.stdout,
        out.stderr,
        out.status.code().unwrap_or(-1),
    )
}

/// What varies between runs, shown as names: the servers' addresses and commit hashes.
fn shown_names(env: &Env, fake: &FakeForge) -> impl Fn(String) -> String {
    let git = format!("http://127.0.0.1:{}", env.http_port());
    let forge = fake.api_url();
    let hashes = regex::Regex::new("\\b[0-9a-f]{40}\\b").unwrap();
    // The longer address first: one may begin with the other.
    let mut names = [(forge, "$GITHUB_API_URL"), (git, "$GITHUB_SERVER_URL")];
    names.sort_by_key(|(address, _)| std::cmp::Reverse(address.len()));
    move |text: String| {
        let text = names
            .iter()
            .fold(text, |text, (address, name)| text.replace(address, name));
        hashes
            .replace_all(&text, regex::NoExpand("$COMMIT"))
            .into_owned()
    }
}

fn action_case(env: &Env, case: &action_cases::Case) -> TestResult {
    let (fixture, fake) = action_bed(env, &case.name, &case.workspace)?;
    for _ in 0..case.previous_runs {
        let prepared = action_cases::prepare(&case.workspace)?;
        let observed = run_action(env, &fixture, &fake, &prepared, &case.inputs)?;
        ensure(observed.code == 0, || {
            format!(
                "a previous run failed ({}): {}",
                observed.code,
                String::from_utf8_lossy(&observed.stderr)
            )
        })?;
    }
    let prepared = action_cases::prepare(&case.workspace)?;
    let observed = run_action(env, &fixture, &fake, &prepared, &case.inputs)?;
    let seen = prepared.workspace.display().to_string();
    action_cases::compare_shown(case, &observed, &seen, &shown_names(env, &fake), true)?;
    ensure(rev(env, &fixture, "main")? == fixture.commits[0], || {
        "main moved".to_owned()
    })?;
    no_violations(&fake)
}

fn action_failure_after_push(env: &Env, _: Flavor) -> TestResult {
    let workspace = action_cases::root().join("testdata/action/workspaces/fleet");
    let (fixture, fake) = action_bed(env, "failure", &workspace)?;
    fake.fault(Fault::new(
        "POST",
        "/pulls",
        422,
        json!({"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest",
               "errors": [{"resource": "PullRequest", "code": "custom",
                           "message": "No commits between main and image-update/flux-system-prod"}]}),
    ));
    let with: BTreeMap<String, String> = [
        ("pull-request", "true"),
        ("automation", "flux/automation.yaml"),
        ("policies", "flux/policies.yaml"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let prepared = action_cases::prepare(&workspace)?;
    let observed = run_action(env, &fixture, &fake, &prepared, &with)?;
    let stdout = String::from_utf8_lossy(&observed.stdout).into_owned();
    let summary = String::from_utf8_lossy(&observed.summary).into_owned();
    let head = "image-update/flux-system-prod";
    ensure(
        observed.code == 1
            && stdout.contains("::error::")
            && stdout.contains(&format!("pushed the commit to `{head}`"))
            && stdout.contains("No commits between main")
            && summary.contains("the next run reuses the branch"),
        || {
            format!(
                "exit {}\nstdout:\n{stdout}\nsummary:\n{summary}",
                observed.code
            )
        },
    )?;
    let pushed = rev(env, &fixture, head)?;
    // The next run reuses the branch: nothing pushed, the request opened.
    let prepared = action_cases::prepare(&workspace)?;
    let observed = run_action(env, &fixture, &fake, &prepared, &with)?;
    let output = String::from_utf8_lossy(&observed.output).into_owned();
    ensure(
        observed.code == 0
            && output.contains("\npull-request-action=created\n")
            && output.contains("\ncommit=\n")
            && rev(env, &fixture, head)? == pushed,
        || format!("exit {}\n{output}", observed.code),
    )?;
    no_violations(&fake)
}

/// The README's workflow that opens a pull request with the Action runs against the bed: it
/// opens one, then the same step again leaves it unchanged.
fn readme_workflow(env: &Env, _: Flavor) -> TestResult {
    let readme = fs::read_to_string(action_cases::root().join("README.md"))?;
    let mut steps = Vec::new();
    let mut block: Option<String> = None;
    for line in readme.lines() {
        match &mut block {
            None if line.trim_end() == "```yaml" => block = Some(String::new()),
            Some(text) if line.trim_end() == "```" => {
                if text.contains("pull-request: \"true\"") {
                    let workflow = action_cases::yaml("README workflow", text)?;
                    for job in workflow["jobs"]
                        .as_object()
                        .into_iter()
                        .flat_map(|j| j.values())
                    {
                        for step in job["steps"].as_array().into_iter().flatten() {
                            if step["with"]["pull-request"] == "true" {
                                steps.push(step["with"].clone());
                            }
                        }
                    }
                }
                block = None;
            }
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    ensure(!steps.is_empty(), || {
        "no README workflow uses the action with pull-request: \"true\"".to_owned()
    })?;
    let workspace = action_cases::root().join("testdata/action/workspaces/fleet");
    for (i, with) in steps.iter().enumerate() {
        let with: BTreeMap<String, String> = with
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                )
            })
            .collect();
        let (fixture, fake) = action_bed(env, &format!("readme-{i}"), &workspace)?;
        for expected in ["created", "unchanged"] {
            let prepared = action_cases::prepare(&workspace)?;
            let observed = run_action(env, &fixture, &fake, &prepared, &with)?;
            let output = String::from_utf8_lossy(&observed.output).into_owned();
            ensure(
                observed.code == 0
                    && output.contains("\nchanged=true\n")
                    && output.contains(&format!("\npull-request-action={expected}\n")),
                || {
                    format!(
                        "README step {with:?}: exit {}\n{output}\n{}",
                        observed.code,
                        String::from_utf8_lossy(&observed.stderr)
                    )
                },
            )?;
        }
        ensure(fake.pulls().len() == 1, || format!("{:#?}", fake.pulls()))?;
        no_violations(&fake)?;
    }
    Ok(())
}
