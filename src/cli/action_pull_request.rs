//! The Action with `pull-request: true`: the Job ([`crate::job::run`]) over
//! the workflow's repository, configured from the Action's inputs and the
//! runner's variables, instead of an edit of the workspace.
//!
//! A Docker action runs as root over a workspace the runner's user owns, and
//! the checkout there may sit on a merge commit (`pull_request` events) or
//! hold a previous step's edits; so the repository is cloned afresh at the
//! base branch into a temporary directory (`GITHUB_SERVER_URL`,
//! `GITHUB_REPOSITORY`), updated with the same inputs (files the inputs name,
//! such as `policies` and `automation`, are read from the workspace), and the
//! commit goes to the head branch with the token, as `job --pull-request`
//! does. The workspace is left as it was. The outputs, the log and the step
//! summary are the ones of a run over the workspace, with the clone's paths
//! shown as the workspace's, plus the request's.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use image_update_forge::{Credentials, MergeMethod, Options, Provider, WhenNothingToDo};
use image_update_git::{Auth, Author, CheckoutRef, RemoteSettings, RetryPolicy, Secret};

use super::Exit;
use super::action::{ActionConfig, Inputs, Runner, fail, finish};
use crate::error::Error;
use crate::job::checkout::CheckoutTarget;
use crate::job::pull_request::{self, ForgeConfig, PullRequestSettings};
use crate::job::{Event, JobConfig, JobError, Observer, PushSettings, Status};
use crate::outcome::{Outcome, TreeRoot};
use crate::render::github::Proposed;
use crate::render::terminal;

/// The commit author without `author-name` or an automation's: the
/// workflow token's own bot, as GitHub shows it.
const BOT_NAME: &str = "github-actions[bot]";
const BOT_EMAIL: &str = "41898282+github-actions[bot]@users.noreply.github.com";

/// Run the Job for the Action and render it.
///
/// # Errors
/// The runner's files or stdout cannot be written; every other failure is
/// rendered (`::error`, the step summary) with exit status 1.
pub(crate) fn run(runner: &Runner, inputs: &Inputs, config: &ActionConfig) -> Result<Exit, Error> {
    let (job, root) = match job_config(runner, inputs, config) {
        Ok(job) => job,
        Err(error) => return fail(runner, &error, None),
    };
    let recorder = Arc::new(Recorder::default());
    let observer: Arc<dyn Observer> = Arc::clone(&recorder) as Arc<dyn Observer>;
    let result = crate::job::run(&job, &observer);
    let recorded = std::mem::take(
        &mut *recorder
            .recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    let shown_root =
        crate::render::github::relative(&runner.workspace, &root.display().to_string());
    let prefix = if shown_root == "." {
        String::new()
    } else {
        format!("{shown_root}/")
    };
    match result {
        Ok(status) => {
            let outcome = match (recorded.outcome, &recorded.work_tree) {
                (Some(outcome), Some(work_tree)) => moved(
                    outcome,
                    work_tree,
                    &root,
                    &job.update.update_path,
                    &runner.workspace,
                ),
                (outcome, _) => outcome.unwrap_or_default(),
            };
            finish(runner, config, &outcome, proposed(&status).as_ref())
        }
        Err(error) => {
            let from = recorded
                .work_tree
                .map(|w| format!("{}/", w.display()))
                .unwrap_or_default();
            let moved = (!from.is_empty()).then_some((from.as_str(), prefix.as_str()));
            let error = match error {
                JobError::Update(e) | JobError::Reapply(e) => e,
                other => Error::failed("proposing the update as a pull request", other),
            };
            fail(runner, &error, moved)
        }
    }
}

/// What the Job told: the work tree and the update's outcome.
#[derive(Default)]
struct Recorder {
    recorded: Mutex<Recorded>,
}

#[derive(Default)]
struct Recorded {
    work_tree: Option<PathBuf>,
    outcome: Option<Outcome>,
}

impl Observer for Recorder {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::Cloned { work_tree, .. } => {
                self.recorded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .work_tree = Some(work_tree.to_path_buf());
            }
            Event::Updated(outcome) => {
                self.recorded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .outcome = Some((*outcome).clone());
                return;
            }
            // The log shows them from the outcome, with the workspace's paths.
            Event::Warning(_) => return,
            _ => {}
        }
        let paint = super::stderr_paint(super::ColorChoice::from_args());
        let _ = super::stdio::stderr().write_all(terminal::job_event(event, paint).as_bytes());
    }

    fn interrupted(&self, signal: i32) {
        let _ = super::stdio::stderr().write_all(terminal::job_interrupted(signal).as_bytes());
        super::stdio::exit(i32::from(
            crate::failure::FailureKind::Interrupted { signal }.exit_code(),
        ));
    }
}

/// The request's outputs from the Job's status.
fn proposed(status: &Status) -> Option<Proposed> {
    let request = status.pull_request.as_ref()?;
    let noun = Provider::parse(request.provider)
        .map_or("pull request", Provider::request_noun)
        .to_owned();
    Some(Proposed {
        noun,
        url: request.url.clone().unwrap_or_default(),
        number: request.number,
        action: request.action.unwrap_or_default().to_owned(),
        branch: request.head.clone(),
        commit: status.last_push_commit.clone().unwrap_or_default(),
        warnings: request.warnings.clone(),
    })
}

/// `outcome`, whose paths are in the clone `work_tree`, with them in the
/// workspace's checkout `root` instead (the update's root is
/// `root/update_path`), shown relative to the workspace.
fn moved(
    mut outcome: Outcome,
    work_tree: &Path,
    root: &Path,
    update_path: &str,
    workspace: &Path,
) -> Outcome {
    let is_file = outcome.root.as_ref().is_some_and(|r| r.is_file);
    let tree = if update_path.is_empty() {
        root.to_path_buf()
    } else {
        root.join(update_path)
    };
    let new_root = TreeRoot::new(tree, is_file, Some(workspace));
    for change in &mut outcome.changes {
        change.display = new_root.display(&change.file);
    }
    for diagnostic in &mut outcome.diagnostics {
        if let Some(location) = &mut diagnostic.location
            && let Ok(rest) = Path::new(&location.path).strip_prefix(work_tree)
        {
            location.path = root.join(rest).display().to_string();
        }
    }
    outcome.root = Some(new_root);
    outcome
}

/// The checkout the workspace's `path` lies in (the nearest directory with
/// a `.git`, else the workspace), and `path` relative to it.
fn checkout_root(path: &Path, workspace: &Path) -> Result<(PathBuf, String), Error> {
    let normal: PathBuf = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    let root = normal
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map_or_else(|| workspace.to_path_buf(), Path::to_path_buf);
    let rel = normal.strip_prefix(&root).map_err(|_| {
        Error::Usage(format!(
            "input path: {} is not in the repository checked out at {}",
            path.display(),
            root.display()
        ))
    })?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok((root, parts.join("/")))
}

/// The Job's settings from the inputs and the runner; also the checkout
/// root in the workspace.
fn job_config(
    runner: &Runner,
    inputs: &Inputs,
    config: &ActionConfig,
) -> Result<(JobConfig, PathBuf), Error> {
    let context = &runner.github;
    let repository = context.repository.as_deref().ok_or_else(|| {
        Error::Usage(
            "input pull-request: GITHUB_REPOSITORY is not set (the runner sets it)".to_owned(),
        )
    })?;
    let server = context
        .server_url
        .as_deref()
        .unwrap_or("https://github.com")
        .trim_end_matches('/');
    let url = format!("{server}/{repository}.git");
    let api_url = context
        .api_url
        .clone()
        .unwrap_or_else(|| "https://api.github.com".to_owned());
    let reference = match inputs.value("pull-request-base") {
        Some(base) => CheckoutRef::Branch(base.to_owned()),
        None => context
            .git_ref
            .as_deref()
            .and_then(|r| r.strip_prefix("refs/heads/"))
            .map_or(CheckoutRef::DefaultBranch, |b| {
                CheckoutRef::Branch(b.to_owned())
            }),
    };
    let credentials = match (
        inputs.value("github-app-id"),
        inputs.text("github-app-private-key"),
    ) {
        (Some(app_id), Some(key)) => Credentials::GitHubApp {
            app_id: app_id.to_owned(),
            private_key: Secret::new(key),
            installation_id: None,
        },
        (Some(_), None) | (None, Some(_)) => {
            return Err(Error::Usage(
                "inputs github-app-id and github-app-private-key go together".to_owned(),
            ));
        }
        (None, None) => match inputs.value("token") {
            Some(token) => Credentials::Token(Secret::new(token)),
            None => {
                return Err(Error::Usage(
                    "input pull-request: no token (the input token, by default the workflow's \
                     token) and no GitHub App (github-app-id, github-app-private-key)"
                        .to_owned(),
                ));
            }
        },
    };
    let is_app = matches!(credentials, Credentials::GitHubApp { .. });
    let auth = match &credentials {
        Credentials::Token(token) => Auth::Basic {
            username: "x-access-token".to_owned(),
            password: token.clone(),
        },
        Credentials::GitHubApp { .. } => Auth::None,
    };
    let (mut forge, _) = ForgeConfig::new(
        &url,
        Some(Provider::GitHub),
        Some(api_url),
        credentials,
        None,
        None,
    )
    .map_err(|e| Error::Usage(format!("input pull-request: {e}")))?;
    forge.git_auth = is_app;
    let (root, rel) = checkout_root(&config.path, &runner.workspace)?;
    let mut update = config.update.clone();
    update.update_path =
        crate::automation::normalise_path(&match (rel.as_str(), update.update_path.as_str()) {
            ("", inner) => inner.to_owned(),
            (outer, "") => outer.to_owned(),
            (outer, inner) => format!("{outer}/{inner}"),
        });
    let commit = update
        .automation
        .as_ref()
        .and_then(|a| a.git.as_ref())
        .map(|g| g.commit.clone())
        .unwrap_or_default();
    let author = Author {
        name: inputs
            .value("author-name")
            .map(str::to_owned)
            .or_else(|| Some(commit.author_name.clone()).filter(|n| !n.is_empty()))
            .unwrap_or_else(|| BOT_NAME.to_owned()),
        email: inputs
            .value("author-email")
            .map(str::to_owned)
            .or_else(|| Some(commit.author_email.clone()).filter(|e| !e.is_empty()))
            .unwrap_or_else(|| BOT_EMAIL.to_owned()),
    };
    let settings = settings(inputs)?;
    pull_request::check_options(Provider::GitHub, &settings.options)
        .map_err(|e| Error::Usage(format!("input pull-request: {e}")))?;
    let job = JobConfig {
        url,
        reference: CheckoutTarget::Checkout(reference),
        depth: Some(1),
        remote: RemoteSettings {
            auth,
            ..RemoteSettings::default()
        },
        update,
        author,
        signer: None,
        push: PushSettings::default(),
        retry: RetryPolicy::default(),
        work_parent: None,
        state_file: None,
        forge: Some(forge),
        pull_request: Some(settings),
    };
    Ok((job, root))
}

/// The request's settings from the `pull-request-*` inputs.
fn settings(inputs: &Inputs) -> Result<PullRequestSettings, Error> {
    let branch = inputs
        .value("pull-request-branch")
        .map(pull_request::head_template);
    let title = inputs.text("pull-request-title").map(str::to_owned);
    let body = inputs.text("pull-request-body").map(str::to_owned);
    for (input, template) in [
        ("pull-request-branch", &branch),
        ("pull-request-title", &title),
        ("pull-request-body", &body),
    ] {
        if let Some(template) = template {
            pull_request::check_template(template).map_err(|e| {
                Error::Usage(format!("input {input}: the template does not parse: {e}"))
            })?;
        }
    }
    let auto_merge = match inputs.value("pull-request-auto-merge") {
        None => None,
        Some(word) => Some(MergeMethod::parse(word).map_err(|_| {
            Error::Usage(format!(
                "input pull-request-auto-merge: {word:?} is not merge, squash or rebase"
            ))
        })?),
    };
    let when_nothing_to_do = if inputs.flag("pull-request-close-when-nothing-to-do")? {
        WhenNothingToDo::Close {
            comment: pull_request::DEFAULT_CLOSE_COMMENT.to_owned(),
        }
    } else {
        WhenNothingToDo::Leave
    };
    Ok(PullRequestSettings {
        branch,
        title,
        body,
        options: Options {
            labels: inputs.list("pull-request-labels"),
            assignees: inputs.list("pull-request-assignees"),
            reviewers: inputs.list("pull-request-reviewers"),
            team_reviewers: inputs.list("pull-request-team-reviewers"),
            draft: inputs.flag("pull-request-draft")?,
            auto_merge,
        },
        when_nothing_to_do,
    })
}
