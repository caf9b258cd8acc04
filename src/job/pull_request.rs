//! Pull and merge requests (`job --pull-request`): instead of pushing to the
//! checkout branch, the Job pushes its commit to a head branch and opens the
//! one request from it into the checkout branch, or updates the open one.
//!
//! ```text
//! clone the base ──> update ──> head branch (template over the report)
//!   nothing to change: leave the open request, or close it (by option)
//!   else commit on the head branch; the remote head already holds this
//!   tree? push nothing : force-push ──> open or update the request
//! ```
//!
//! The provider's API is `image-update-forge`; this module decides what to
//! ask of it and records the answer in the status. A request that fails
//! after the push is a [`JobError::PullRequest`]: the branch stays, and the
//! next run finds the same tree on it and only retries the request.

use std::time::Duration;

use image_update_forge::{
    CHANGE_SET_BRANCH_TEMPLATE, Content, Credentials, Forge, HttpSettings, MergeMethod, Options,
    Proposal, Provider, PullRequest, Repository, RetryPolicy, WhenNothingToDo,
};
use image_update_git::{Checkout, CommitSettings, ForcePush, PushRequest};

use super::{Event, JobConfig, JobError, JobResult, Observer, Status, now_rfc3339};
use crate::operation::UpdateConfig;
use crate::outcome::Outcome;
pub(crate) use crate::render::job_status::RequestStatus;

/// How to reach the forge's API.
#[derive(Debug, Clone)]
pub(crate) struct ForgeConfig {
    /// The provider; `None` infers it from the repository URL's host.
    pub provider: Option<Provider>,
    /// The API's base URL; `None` is the provider's default for the host.
    pub api_url: Option<String>,
    /// A token, or a GitHub App.
    pub credentials: Credentials,
    /// CA certificates, timeouts, retries.
    pub http: HttpSettings,
    /// Clone and push with the GitHub App's installation token (user
    /// `x-access-token`): an App and no other git credentials over HTTPS.
    pub git_auth: bool,
}

impl ForgeConfig {
    /// The forge of the repository `url`, checked now (the provider, the
    /// API URL: plain `http://` only to loopback), so that a mistake is a
    /// configuration error before anything is cloned. `ca_certificates`
    /// are the git transport's (PEM), `max_wait` the longest rate-limit
    /// wait taken.
    ///
    /// # Errors
    /// What the forge client refuses, in its words.
    pub(crate) fn new(
        url: &str,
        provider: Option<Provider>,
        api_url: Option<String>,
        credentials: Credentials,
        ca_certificates: Option<String>,
        max_wait: Option<Duration>,
    ) -> Result<(Self, Repository), image_update_forge::Error> {
        let repository = Repository::locate(url, provider, api_url.as_deref())?;
        let config = Self::unchecked(provider, api_url, credentials, ca_certificates, max_wait);
        Ok((config, repository))
    }

    /// [`ForgeConfig::new`] without checking it against a repository URL
    /// ([`connect`] does): for the request Argo CD Applications ask for,
    /// whose provider may be known only after the update.
    pub(crate) fn unchecked(
        provider: Option<Provider>,
        api_url: Option<String>,
        credentials: Credentials,
        ca_certificates: Option<String>,
        max_wait: Option<Duration>,
    ) -> Self {
        let mut http = HttpSettings {
            ca_certificates,
            ..HttpSettings::default()
        };
        if let Some(max_wait) = max_wait {
            http.retry = RetryPolicy {
                max_wait,
                ..RetryPolicy::default()
            };
        }
        Self {
            provider,
            api_url,
            credentials,
            http,
            git_auth: false,
        }
    }
}

/// The head branch template a user wrote: `change-set` is Argo CD Image
/// Updater's form ([`CHANGE_SET_BRANCH_TEMPLATE`]).
#[must_use]
pub(crate) fn head_template(raw: &str) -> String {
    if raw.trim() == "change-set" {
        CHANGE_SET_BRANCH_TEMPLATE.to_owned()
    } else {
        raw.to_owned()
    }
}

/// Whether `text` parses as a template (the head branch, title or body's).
///
/// # Errors
/// The parser's message.
pub(crate) fn check_template(text: &str) -> Result<(), String> {
    image_update_template::Template::parse("pull request", text)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// What a provider cannot do with these options.
///
/// # Errors
/// GitLab has no team reviewers and no rebase auto-merge.
pub(crate) fn check_options(provider: Provider, options: &Options) -> Result<(), String> {
    if provider == Provider::GitLab {
        if !options.team_reviewers.is_empty() {
            return Err("GitLab has no team reviewers".to_owned());
        }
        if options.auto_merge == Some(MergeMethod::Rebase) {
            return Err(
                "GitLab's auto-merge merges or squashes; rebase is the project's merge method"
                    .to_owned(),
            );
        }
    }
    Ok(())
}

/// The comment a run with nothing to do closes the open request with,
/// unless another is given.
pub(crate) const DEFAULT_CLOSE_COMMENT: &str = "image-update found every marked field up to date \
     on the base branch, so this request has nothing left to propose: closing it. The next \
     update opens a new one (or reopens this one).";

/// What the request says and carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PullRequestSettings {
    /// The head branch's template; `None` is one branch per automation
    /// ([`image_update_forge::DEFAULT_BRANCH_TEMPLATE`]).
    pub branch: Option<String>,
    /// The title's template; `None` is the commit message's first line.
    pub title: Option<String>,
    /// The body's template; `None` is the table of changes with the report.
    pub body: Option<String>,
    /// Labels, assignees, reviewers, draft, auto-merge.
    pub options: Options,
    /// What a run with nothing to do does with the open request.
    pub when_nothing_to_do: WhenNothingToDo,
}

impl RequestStatus {
    /// Records the request a run left, and tells `observer`.
    fn record(&mut self, request: &PullRequest, noun: &str, observer: &dyn Observer) {
        self.url = Some(request.url.clone());
        self.number = Some(request.number);
        self.action = Some(request.action.as_str());
        self.warnings.clone_from(&request.warnings);
        observer.event(&Event::PullRequest {
            noun,
            url: &request.url,
            number: request.number,
            action: request.action.as_str(),
        });
        for warning in &request.warnings {
            observer.event(&Event::PullRequestWarning { message: warning });
        }
    }
}

/// Connects to the forge of the repository `url`; with a GitHub App, this
/// exchanges its key for an installation token (two calls).
///
/// # Errors
/// A URL or provider the forge client cannot use, a failed token exchange.
pub(crate) fn connect(config: &ForgeConfig, url: &str) -> Result<Forge, image_update_forge::Error> {
    let repository = Repository::locate(url, config.provider, config.api_url.as_deref())?;
    Forge::connect(repository, &config.credentials, &config.http)
}

/// What the templates of the head branch, title and body see: the commit
/// message's data (the automation object, the changes, `.Values`), the
/// rows of the report, the message itself, the base, the repository and
/// the updated path.
fn content(
    update: &UpdateConfig,
    outcome: &Outcome,
    url: &str,
    base: &str,
) -> Result<Content, image_update_forge::Error> {
    let report = serde_json::to_value(outcome.report()).unwrap_or_default();
    let message = update.message.clone().unwrap_or_default();
    let automation = message
        .automation_object
        .as_ref()
        .map(|(namespace, name)| (namespace.as_str(), name.as_str()));
    let mut content = Content::from_report(
        &report,
        automation,
        &message.values,
        outcome.commit_message.as_deref().unwrap_or_default(),
    )?;
    base.clone_into(&mut content.base);
    url.clone_into(&mut content.repository);
    content.path.clone_from(&update.update_path);
    Ok(content)
}

/// The rest of a run with `--pull-request`, after the update of the clone:
/// see the module's documentation.
pub(super) fn propose(
    config: &JobConfig,
    settings: &PullRequestSettings,
    forge: &Forge,
    checkout: &mut Checkout,
    outcome: &Outcome,
    mut status: Status,
    observer: &dyn Observer,
) -> Result<Status, JobError> {
    let forge_error = |step: &'static str| move |source| JobError::Forge { step, source };
    let noun = forge.repository().provider.request_noun();
    let base = checkout
        .checkout_branch()
        .map(str::to_owned)
        .ok_or_else(|| JobError::NoBaseBranch {
            checkout: checkout.observed_source_revision().to_string(),
            noun,
        })?;
    let mut content = content(&config.update, outcome, &config.url, &base)
        .map_err(forge_error("reading the report"))?;
    let head = content
        .head_branch(settings.branch.as_deref())
        .map_err(forge_error("naming the head branch"))?;
    if head == base {
        return Err(JobError::HeadIsBase { branch: head, noun });
    }
    head.clone_into(&mut content.head);
    let mut request = RequestStatus {
        provider: forge.repository().provider.name(),
        head: head.clone(),
        base: base.clone(),
        url: None,
        number: None,
        action: None,
        warnings: Vec::new(),
        api_calls: 0,
    };
    let commit = match &outcome.commit_message {
        None => {
            observer.event(&Event::NothingToChange);
            None
        }
        Some(message) => {
            checkout
                .switch_branch(&head)
                .map_err(JobError::git("switching to the head branch"))?;
            let settings = CommitSettings {
                author: &config.author,
                signer: config.signer.as_ref(),
                time: None,
            };
            let commit = checkout
                .commit(&settings, message)
                .map_err(JobError::git("committing"))?;
            if commit.is_none() {
                observer.event(&Event::TreeUnchanged);
            }
            commit
        }
    };
    let Some(commit) = commit else {
        let left = forge
            .nothing_to_do(&head, &base, &settings.when_nothing_to_do)
            .map_err(forge_error("looking up the open request"));
        request.api_calls = forge.api_calls();
        if let Some(found) = left? {
            request.record(&found, noun, observer);
        }
        status.pull_request = Some(request);
        return Ok(status);
    };
    // Rendered before anything is pushed: a template that fails leaves no branch.
    let proposal = Proposal {
        head: head.clone(),
        base: base.clone(),
        title: content
            .title(settings.title.as_deref())
            .map_err(forge_error("rendering the title"))?,
        body: content
            .body(settings.body.as_deref(), forge.limits().1)
            .map_err(forge_error("rendering the body"))?,
    };
    let remote_tree = checkout
        .remote_tree(&head)
        .map_err(JobError::git("reading the head branch"))?;
    let tree = checkout.head_tree().map_err(JobError::git("committing"))?;
    if remote_tree == Some(tree) {
        observer.event(&Event::HeadUpToDate { branch: &head });
    } else {
        let push = PushRequest {
            force: ForcePush::Always,
            refspecs: config.push.refspec.iter().cloned().collect(),
            options: config.push.options.clone(),
        };
        let pushed = checkout
            .push(&push)
            .map_err(JobError::git("pushing the head branch"))?;
        observer.event(&Event::Pushed {
            commit: &pushed.commit.to_string(),
            branch: &pushed.branch,
            attempts: 1,
        });
        status.result = JobResult::Pushed;
        status.attempts = 1;
        status.last_push_commit = Some(commit.to_string());
        status.last_push_time = Some(now_rfc3339());
        status.commit_message.clone_from(&outcome.commit_message);
    }
    let opened = forge.open_or_update(&proposal, &settings.options);
    request.api_calls = forge.api_calls();
    match opened {
        Ok(found) => {
            request.record(&found, noun, observer);
            status.pull_request = Some(request);
            Ok(status)
        }
        Err(source) => {
            status.pull_request = Some(request);
            Err(JobError::PullRequest {
                branch: head,
                noun,
                pushed: status.result == JobResult::Pushed,
                status: Box::new(status),
                source,
            })
        }
    }
}
