//! The Job: clone a repository, run the update over it, commit, sign and
//! push, as Flux's image-automation-controller does for one
//! ImageUpdateAutomation, in one process and with no `git` binary.
//!
//! ```text
//! JobConfig ──> clone (shallow) into a fresh temporary directory
//!           ──> operation::run over the clone (one update, update path)
//!           ──> commit (signed) when a field changed
//!           ──> push; lost a race? fetch, reset, re-run the update with
//!               the first run's policy results, commit, push again
//!           ──> Status
//! ```
//!
//! A front end (`image-update job`, `cli::job`) builds the [`JobConfig`]
//! from flags and the environment, validating everything once; [`run`] does
//! the work, tells an [`Observer`] what it does (it prints nothing itself),
//! and returns the [`Status`] (or a [`JobError`] that knows its exit
//! status). The work tree is a temporary directory removed when the run
//! ends, however it ends: on success, on error, and on SIGTERM, SIGINT or
//! SIGHUP (see [`SignalWatch`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use image_update_forge::Forge;
use image_update_git::{
    Auth, Author, Checkout, CheckoutRef, CloneOptions, CommitSettings, ForcePush, PushOutcome,
    PushRequest, Remote, RemoteSettings, RetryError, RetryPolicy, Signer, push_with_retry,
};

use self::checkout::CheckoutTarget;
use self::pull_request::ForgeConfig;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::failure::FailureKind;
use crate::operation::{self, Input, PolicyValue, UpdateConfig};
use crate::policies::{ImageRef, PolicyKey};
pub(crate) use crate::render::job_status::{Event, JobResult, ObservedImage, Status};
use crate::sink::interrupt;

pub(crate) mod argocd;
pub(crate) mod checkout;
pub(crate) mod credentials;
pub(crate) mod pull_request;
pub(crate) mod secrets;
pub(crate) mod state;

/// Everything one Job run needs, validated.
#[derive(Debug)]
pub(crate) struct JobConfig {
    /// The repository URL (credentials are never part of it).
    pub url: String,
    /// What to check out.
    pub reference: CheckoutTarget,
    /// History depth of the clone: `Some(1)` is Flux's shallow clone,
    /// `None` the full history.
    pub depth: Option<u32>,
    /// Credentials, host key policy, and which URLs are allowed.
    pub remote: RemoteSettings,
    /// The update: policies, scope, update path (relative to the clone),
    /// commit message. Its mode is `Apply` and it has no outputs.
    pub update: UpdateConfig,
    /// Commit author and committer.
    pub author: Author,
    /// Signs every commit when set (unlocked already).
    pub signer: Option<Signer>,
    /// Where and how to push.
    pub push: PushSettings,
    /// How often a push that lost a race is tried, and how patiently.
    pub retry: RetryPolicy,
    /// The directory the temporary work tree is made in (default: the
    /// system's temporary directory).
    pub work_parent: Option<PathBuf>,
    /// The short-circuit's memory between runs ([`state`]).
    pub state_file: Option<PathBuf>,
    /// The forge's API, when credentials for it were found: signed in to
    /// before the clone for `--pull-request` (checked then) and for a GitHub
    /// App's installation token as the git credential
    /// ([`JobConfig::forge_first`]); otherwise only for the request Argo CD
    /// Applications ask for without `--pull-request`, its provider, when no
    /// flag names one, theirs. `None`: no credentials for the API were
    /// found, so such a head branch is pushed and no request opened, with a
    /// warning.
    pub forge: Option<pull_request::ForgeConfig>,
    /// Push to a head branch and open or update a request into the checkout
    /// branch, instead of pushing to it (needs `forge`).
    pub pull_request: Option<pull_request::PullRequestSettings>,
}

impl JobConfig {
    /// The forge signed in to before anything is cloned: for
    /// `--pull-request`, or a GitHub App's token as the git credential.
    #[must_use]
    pub(crate) fn forge_first(&self) -> Option<&pull_request::ForgeConfig> {
        self.forge
            .as_ref()
            .filter(|forge| self.pull_request.is_some() || forge.git_auth)
    }
}

/// Where the commit goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PushSettings {
    /// Push to this branch instead of the checkout branch; when it differs,
    /// it is created from the checked-out commit and force-pushed (Flux).
    pub branch: Option<String>,
    /// Also push this refspec in the same push (Flux's `push.refspec`).
    pub refspec: Option<String>,
    /// Push options (`git push -o`), `KEY=VALUE` or `KEY`.
    pub options: Vec<String>,
}

impl Status {
    /// The status of a run that failed with `error`; after a push, with
    /// what was pushed.
    #[must_use]
    pub(crate) fn failed(error: &JobError) -> Self {
        let failed = Self::failed_with(error.kind(), error);
        match error {
            JobError::PullRequest { status, .. } => Self {
                result: JobResult::Failed,
                error: failed.error,
                ..(**status).clone()
            },
            _ => failed,
        }
    }
}

/// Why a Job run failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobError {
    /// A git step failed (its error names the URL and what the server said).
    #[error("{step}")]
    Git {
        /// What was being done.
        step: &'static str,
        #[source]
        source: image_update_git::Error,
    },
    /// The update of the work tree failed.
    #[error("updating the work tree")]
    Update(#[source] Error),
    /// The update after a lost race failed.
    #[error("re-applying the update after a rejected push")]
    Reapply(#[source] Error),
    /// No tag of the remote satisfies the semver range of the checkout ref.
    #[error("no tag of {url} is in semver range `{range}`")]
    NoTagInRange {
        /// The repository.
        url: String,
        /// The range.
        range: String,
    },
    /// SIGTERM, SIGINT or SIGHUP ended the run (the work tree is removed).
    #[error("interrupted by {}; the work tree was removed", interrupt::name(*.signal))]
    Interrupted {
        /// The signal.
        signal: i32,
    },
    /// The temporary work tree could not be made.
    #[error("making a temporary work tree under {}", .parent.display())]
    WorkDir {
        /// Its parent directory.
        parent: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The forge refused or failed before anything was pushed (signing in,
    /// a template, the look-up of a run with nothing to do).
    #[error("{step}")]
    Forge {
        /// What was being done.
        step: &'static str,
        #[source]
        source: image_update_forge::Error,
    },
    /// Pull requests were asked for without the forge's settings.
    #[error("a pull request needs the forge's settings and credentials")]
    NoForge,
    /// A request needs a base branch, and the checkout is not on one.
    #[error("a {noun} needs a base branch, and {checkout} is not one: check out a branch")]
    NoBaseBranch {
        /// What was checked out.
        checkout: String,
        /// `pull request` or `merge request`.
        noun: &'static str,
    },
    /// The head branch template named the checkout branch.
    #[error(
        "the head branch is `{branch}`, the checkout branch: a {noun} needs another branch \
         (--pull-request-branch)"
    )]
    HeadIsBase {
        /// The branch.
        branch: String,
        /// `pull request` or `merge request`.
        noun: &'static str,
    },
    /// The head branch holds the change (pushed by this run, or an earlier
    /// one), but the request could not be opened or updated. The branch
    /// stays; the next run finds the same tree on it and retries only the
    /// request.
    #[error(
        "{} `{branch}`, but the {noun} could not be opened or updated (the next run reuses the \
         branch)",
        if *.pushed { "pushed the commit to" } else { "the change is on" }
    )]
    PullRequest {
        /// The head branch.
        branch: String,
        /// `pull request` or `merge request`.
        noun: &'static str,
        /// Whether this run pushed it.
        pushed: bool,
        /// The status so far (what was pushed, the changes, the request's
        /// head and base).
        status: Box<Status>,
        #[source]
        source: image_update_forge::Error,
    },
}

impl JobError {
    fn git(step: &'static str) -> impl FnOnce(image_update_git::Error) -> Self {
        move |source| Self::Git { step, source }
    }

    /// The process exit status ([`FailureKind::exit_code`]).
    #[must_use]
    pub(crate) fn exit_code(&self) -> u8 {
        self.kind().exit_code()
    }

    /// Configuration that cannot work, a conflict when every push lost a
    /// race, interrupted, a pull request that failed after its head branch
    /// was pushed, or failed.
    #[must_use]
    pub(crate) fn kind(&self) -> FailureKind {
        use image_update_git::ErrorKind;
        match self {
            Self::Forge { source, .. }
                if source.kind() == image_update_forge::ErrorKind::Config =>
            {
                FailureKind::Configuration
            }
            Self::NoForge | Self::NoBaseBranch { .. } | Self::HeadIsBase { .. } => {
                FailureKind::Configuration
            }
            Self::PullRequest { .. } => FailureKind::PullRequest,
            Self::Git { source, .. } => match source.kind() {
                ErrorKind::Configuration => FailureKind::Configuration,
                ErrorKind::GaveUp => FailureKind::Conflict,
                _ => FailureKind::Failed,
            },
            Self::Update(e) | Self::Reapply(e) if e.is_usage() => FailureKind::Configuration,
            Self::Interrupted { signal } => FailureKind::Interrupted { signal: *signal },
            Self::Update(_)
            | Self::Reapply(_)
            | Self::WorkDir { .. }
            | Self::NoTagInRange { .. }
            | Self::Forge { .. } => FailureKind::Failed,
        }
    }
}

/// Told what the Job does; the Job itself prints nothing and never ends the
/// process.
pub(crate) trait Observer: Send + Sync {
    /// Something happened.
    fn event(&self, event: &Event<'_>);

    /// SIGTERM, SIGINT or SIGHUP arrived while the work tree existed, and
    /// the work tree was removed. A clone or push in progress cannot be
    /// cancelled (libgit2 has no cancellation that reaches a blocked
    /// network read), so the observer is expected to end the process, with
    /// 128 + `signal` as a shell reports a process killed by it; if it
    /// returns, the run ends when its current step fails or finishes.
    fn interrupted(&self, signal: i32);
}

/// Run the Job: clone, update, commit, push, telling `observer` what it
/// does. The status is returned for the front end to print.
///
/// # Errors
/// See [`JobError`]; the work tree is removed in every case.
pub(crate) fn run(config: &JobConfig, observer: &Arc<dyn Observer>) -> Result<Status, JobError> {
    if config.pull_request.is_some() && config.forge.is_none() {
        return Err(JobError::NoForge);
    }
    let forge = config
        .forge_first()
        .map(|forge| pull_request::connect(forge, &config.url))
        .transpose()
        .map_err(|source| JobError::Forge {
            step: "signing in to the forge",
            source,
        })?;
    let mut settings = config.remote.clone();
    if let (Some(forge), Some(ForgeConfig { git_auth: true, .. })) = (&forge, &config.forge) {
        settings.auth = Auth::Basic {
            username: "x-access-token".to_owned(),
            password: forge.token().clone(),
        };
    }
    let remote = Remote::new(&config.url, settings).map_err(JobError::git("checking the URL"))?;
    let reference = match &config.reference {
        CheckoutTarget::Checkout(reference) => reference.clone(),
        CheckoutTarget::Semver(range) => newest_tag(&remote, range)?,
    };
    let mut before = None;
    if let Some(path) = &config.state_file {
        let (check, seen) = short_circuit(config, &remote, &reference, path)?;
        match check {
            Ok(skipped) => {
                observer.event(&Event::Skipped);
                return Ok(skipped);
            }
            Err(reason) => {
                observer.event(&Event::Running { reason: &reason });
                before = Some((path, seen, reason));
            }
        }
    }
    let parent = config
        .work_parent
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    // Signals are deferred (and handled by the watch) from before the work
    // tree exists until after it is removed.
    let _signals = interrupt::guard();
    let temp = tempfile::Builder::new()
        .prefix("image-update-job-")
        .tempdir_in(&parent)
        .map_err(|source| JobError::WorkDir {
            parent: parent.clone(),
            source,
        })?;
    let watch = SignalWatch::start(temp.path().to_owned(), Arc::clone(observer));
    let result = run_in(
        config,
        remote,
        reference,
        &temp.path().join("repo"),
        forge.as_ref(),
        observer.as_ref(),
    );
    if let Err(e) = temp.close() {
        tracing::warn!("cannot remove the work tree: {e}");
    }
    drop(watch);
    // A signal also interrupts a blocked network read (EINTR), which fails
    // the step: the signal, not that failure, is what happened.
    if let Some(signal) = interrupt::received() {
        return Err(JobError::Interrupted { signal });
    }
    let mut status = result?;
    if let Some(report) = &status.changes {
        status.supply_chain.clone_from(&report.supply_chain);
    }
    if let Some((path, seen, reason)) = before {
        status.short_circuit = Some(reason);
        remember(config, path, seen, &status, observer.as_ref());
    }
    Ok(status)
}

/// Whether the run can be skipped: `Ok(status)` when the configuration,
/// the remote heads and the policies are all as the last run left them;
/// else `Err(why not)`. Also returns what was seen, for the state file.
fn short_circuit(
    config: &JobConfig,
    remote: &Remote,
    reference: &CheckoutRef,
    path: &Path,
) -> Result<(Result<Status, String>, state::State), JobError> {
    let revision = remote
        .resolve(reference)
        .map_err(JobError::git("reading the remote head"))?;
    let push = match &config.push.branch {
        Some(branch) if revision.name.as_deref() != Some(branch.as_str()) => remote
            .ls_remote(&format!("refs/heads/{branch}"))
            .map_err(JobError::git("reading the push branch's head"))?
            .map(|id| id.to_string()),
        _ => None,
    };
    let seen = state::State {
        config_hash: state::config_hash(config),
        heads: state::Heads {
            checkout: revision.id.to_string(),
            push,
        },
        observed_policies: state::keyed(
            &operation::observe(&config.update).map_err(JobError::Update)?,
        ),
        observed_source_revision: Some(revision.to_string()),
        last_push_commit: None,
        last_push_time: None,
    };
    let Some(last) = state::read(path) else {
        return Ok((Err("no state from an earlier run".to_owned()), seen));
    };
    let why_not = if last.config_hash != seen.config_hash {
        Some("the configuration changed since the last run")
    } else if last.heads != seen.heads {
        Some("the remote changed since the last run")
    } else if last.observed_policies != seen.observed_policies {
        Some(
            "the policies changed since the last run (or some are defined in the repository, \
             which the short-circuit cannot see without a clone)",
        )
    } else {
        None
    };
    if let Some(reason) = why_not {
        return Ok((Err(reason.to_owned()), seen));
    }
    let mut status = Status::new(JobResult::Skipped);
    status.observed_policies = by_name(last.observed_policies.iter().map(|(key, image)| {
        let name = PolicyKey::parse(key).map_or_else(|| key.clone(), |k| k.name);
        (name, image)
    }));
    status.observed_source_revision = last.observed_source_revision;
    status.last_push_commit = last.last_push_commit;
    status.last_push_time = last.last_push_time;
    status.short_circuit = Some("nothing changed since the last run".to_owned());
    Ok((Ok(status), seen))
}

/// Writes the state after a successful run: what it saw, with the heads
/// its push moved. A run that lost a race and then found nothing to do
/// leaves no state (the heads it ended on are not the ones it saw).
fn remember(
    config: &JobConfig,
    path: &Path,
    mut seen: state::State,
    status: &Status,
    observer: &dyn Observer,
) {
    if status.result == JobResult::NothingToDo && status.attempts > 0 {
        return;
    }
    let last = state::read(path);
    if let Some(pushed) = &status.last_push_commit {
        let to_checkout_branch = match (&config.push.branch, &seen.observed_source_revision) {
            (None, _) => true,
            (Some(branch), Some(revision)) => revision.starts_with(&format!("{branch}@")),
            (Some(_), None) => false,
        };
        // A request's head branch is named from the run's report, so the
        // short-circuit does not read it: only the base's head counts.
        if status.pull_request.is_none() {
            if to_checkout_branch {
                seen.heads.checkout.clone_from(pushed);
            } else {
                seen.heads.push = Some(pushed.clone());
            }
        }
        seen.last_push_commit = Some(pushed.clone());
        seen.last_push_time.clone_from(&status.last_push_time);
    } else if let Some(last) = last {
        seen.last_push_commit = last.last_push_commit;
        seen.last_push_time = last.last_push_time;
    }
    seen.observed_source_revision
        .clone_from(&status.observed_source_revision);
    seen.observed_policies = status
        .changes
        .as_ref()
        .map(|report| report.observed_policies.clone())
        .unwrap_or_default();
    if let Err(error) = state::write(path, &seen) {
        observer.event(&Event::StateNotWritten {
            path,
            error: &error,
        });
    }
}

/// A finding of the update, a file of the clone named by its path in the repository: the work
/// tree is a temporary directory, gone when the run ends, so its path would say nothing to the
/// reader. (Files outside the clone, such as `--policies` files, keep their names.)
fn in_repository(mut finding: Diagnostic, work_tree: &Path) -> Diagnostic {
    if let Some(at) = &mut finding.location
        && let Ok(rel) = Path::new(&at.path).strip_prefix(work_tree)
    {
        at.path = rel.to_string_lossy().into_owned();
    }
    finding
}

fn run_in(
    config: &JobConfig,
    remote: Remote,
    reference: CheckoutRef,
    dir: &Path,
    forge: Option<&Forge>,
    observer: &dyn Observer,
) -> Result<Status, JobError> {
    let url = remote.url().to_owned();
    let mut checkout = Checkout::clone(
        remote,
        &reference,
        dir,
        &CloneOptions {
            depth: config.depth,
        },
    )
    .map_err(JobError::git("cloning"))?;
    let checked_out = checkout.observed_source_revision();
    observer.event(&Event::Cloned {
        url: &url,
        revision: &checked_out.to_string(),
        work_tree: checkout.work_dir(),
    });
    if let Some(branch) = &config.push.branch
        && checkout.checkout_branch() != Some(branch.as_str())
    {
        checkout
            .switch_branch(branch)
            .map_err(JobError::git("switching to the push branch"))?;
    }
    // Argo CD Applications that write back to git elsewhere are left alone.
    let update = argocd::scoped(
        &config.update,
        &url,
        checkout.checkout_branch(),
        reference == CheckoutRef::DefaultBranch,
        config.push.branch.is_none() && config.pull_request.is_none(),
    );
    let work_tree = checkout.work_dir().to_owned();
    let outcome = operation::run(&update, Input::Tree(&work_tree))
        .map_err(|e| JobError::Update(e.map_diagnostics(|d| in_repository(d, &work_tree))))?;
    observer.event(&Event::Updated(&outcome));
    for warning in outcome.warnings() {
        observer.event(&Event::Warning(&in_repository(warning.clone(), &work_tree)));
    }
    let mut status = Status::new(JobResult::NothingToDo);
    status.observed_source_revision = Some(checked_out.to_string());
    status.observed_policies = by_name(
        outcome
            .observed_policies
            .iter()
            .map(|(key, image)| (key.name.clone(), image)),
    );
    status.changes = Some(outcome.report());
    if let Some(what) = &outcome.suspended {
        observer.event(&Event::Suspended { what });
        return Ok(status);
    }
    if outcome.held_back {
        // Warnings with `fail_on_warnings` (the Action's input): nothing was
        // written, so nothing is committed, pushed or proposed; the front
        // end fails the run.
        return Ok(status);
    }
    if let (Some(settings), Some(forge)) = (&config.pull_request, forge) {
        // (`run` refuses a pull request without a forge.)
        return pull_request::propose(
            config,
            settings,
            forge,
            &mut checkout,
            &outcome,
            status,
            observer,
        );
    }
    // Argo CD Applications that ask for a pull request (`gitConfig.pullRequest`) get one when
    // the forge's API can be reached.
    if config.pull_request.is_none()
        && config.push.branch.is_none()
        && let Some(request) = argocd::pull_request(&outcome).map_err(JobError::Update)?
    {
        let connected;
        let forge = match (forge, &config.forge) {
            (Some(forge), _) => Some(forge),
            (None, Some(access)) => {
                let access = ForgeConfig {
                    provider: access.provider.or(Some(request.provider)),
                    ..access.clone()
                };
                connected = pull_request::connect(&access, &config.url).map_err(|source| {
                    JobError::Forge {
                        step: "signing in to the forge",
                        source,
                    }
                })?;
                Some(&connected)
            }
            (None, None) => None,
        };
        if let Some(forge) = forge {
            return pull_request::propose(
                config,
                &request.settings,
                forge,
                &mut checkout,
                &outcome,
                status,
                observer,
            );
        }
    }
    let Some(message) = outcome.commit_message.clone() else {
        observer.event(&Event::NothingToChange);
        return Ok(status);
    };
    // Argo CD Applications that write back to git here push to their write branch, unless
    // --push-branch names one.
    if config.push.branch.is_none()
        && let Some(branch) = argocd::write_branch(&outcome).map_err(JobError::Update)?
    {
        checkout
            .switch_branch(&branch)
            .map_err(JobError::git("switching to the Argo CD write branch"))?;
    }
    for warning in argocd::warnings(&outcome, config.push.branch.as_deref()) {
        observer.event(&Event::Warning(&warning));
    }
    let settings = CommitSettings {
        author: &config.author,
        signer: config.signer.as_ref(),
        time: None,
    };
    if checkout
        .commit(&settings, &message)
        .map_err(JobError::git("committing"))?
        .is_none()
    {
        observer.event(&Event::TreeUnchanged);
        return Ok(status);
    }
    let request = PushRequest {
        force: ForcePush::Auto,
        refspecs: config.push.refspec.iter().cloned().collect(),
        options: config.push.options.clone(),
    };
    let again = reapply_config(&update, &outcome);
    let mut latest = None;
    let pushed = push_with_retry(&mut checkout, &request, &settings, &config.retry, |tree| {
        let outcome = operation::run(&again, Input::Tree(tree))?;
        let message = outcome.commit_message.clone();
        latest = Some(outcome.report());
        Ok(message)
    });
    let outcome_message = Some(message);
    match pushed {
        Ok(PushOutcome::Pushed { commit, attempts }) => {
            let branch = checkout.branch().unwrap_or_default().to_owned();
            observer.event(&Event::Pushed {
                commit: &commit.to_string(),
                branch: &branch,
                attempts,
            });
            status.result = JobResult::Pushed;
            status.attempts = attempts;
            status.last_push_commit = Some(commit.to_string());
            status.last_push_time = Some(now_rfc3339());
            // Flux: the pushed commit when pushing back to the checkout
            // branch; the checked-out one when pushing elsewhere.
            if checkout.checkout_branch() == Some(branch.as_str()) {
                status.observed_source_revision = Some(format!("{branch}@sha1:{commit}"));
            }
            if let Some(report) = latest {
                status.changes = Some(report);
            }
            status.commit_message = match latest_message(&checkout, commit) {
                Some(message) => Some(message),
                None => outcome_message,
            };
            Ok(status)
        }
        Ok(PushOutcome::NothingToCommit) => Ok(status),
        Ok(PushOutcome::NothingToDo { tip, attempts }) => {
            observer.event(&Event::RaceLeftNothing {
                tip: &tip.to_string(),
            });
            status.attempts = attempts;
            status.changes = latest;
            Ok(status)
        }
        Err(RetryError::Git(source)) => Err(JobError::Git {
            step: "pushing",
            source,
        }),
        Err(RetryError::Reapply(e)) => Err(JobError::Reapply(e)),
    }
}

/// The remote's tag with the highest version in `range` (tags parsed as
/// Flux does: an optional `v`, then strict SemVer).
fn newest_tag(remote: &Remote, range: &str) -> Result<CheckoutRef, JobError> {
    use crate::reflector::selection::semver::{Range, parse_tag};
    let invalid = || JobError::NoTagInRange {
        url: remote.url().to_owned(),
        range: range.to_owned(),
    };
    let parsed = Range::parse(range).map_err(|_| invalid())?;
    let refs = remote
        .list()
        .map_err(JobError::git("listing the remote's tags"))?;
    refs.iter()
        .filter_map(|r| r.name.strip_prefix("refs/tags/"))
        .filter(|tag| !tag.ends_with("^{}"))
        .filter_map(|tag| parse_tag(tag).map(|version| (version, tag)))
        .filter(|(version, _)| parsed.matches(version))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, tag)| CheckoutRef::Tag(tag.to_owned()))
        .ok_or_else(invalid)
}

/// The message of the commit that was pushed (after a retry it is the
/// re-applied update's).
fn latest_message(checkout: &Checkout, commit: image_update_git::Oid) -> Option<String> {
    checkout
        .repository()
        .find_commit(commit)
        .ok()
        .and_then(|c| c.message().ok().map(str::to_owned))
}

/// The config of an update after a lost race: the same, except that the
/// first run's policy results are given as values (no policy file, stdin
/// or registry is read again), so the retry applies exactly the results
/// of the commit it replaces.
fn reapply_config(config: &UpdateConfig, outcome: &crate::outcome::Outcome) -> UpdateConfig {
    let mut again = config.clone();
    again.fetch = None;
    again.policy_files.clear();
    again.carried = outcome
        .fetched
        .iter()
        .chain(&outcome.carried)
        .cloned()
        .collect();
    again.values = outcome
        .observed_policies
        .iter()
        .map(|(key, image)| PolicyValue {
            key: key.clone(),
            image: image.clone(),
            source: format!("{key} (the first attempt's result)"),
        })
        .collect();
    again
}

/// Flux keys `observedPolicies` by policy name (one automation sees one
/// namespace); `observed` gives each policy's name and latest image.
fn by_name<'a>(
    observed: impl Iterator<Item = (String, &'a ImageRef)>,
) -> BTreeMap<String, ObservedImage> {
    observed
        .map(|(name, image)| {
            let image = ObservedImage {
                name: image.name.clone(),
                tag: image.tag.clone(),
                digest: image.digest.clone(),
            };
            (name, image)
        })
        .collect()
}

pub(super) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// Watches for SIGTERM, SIGINT and SIGHUP while the work tree exists
/// (they are deferred by `sink::interrupt::guard`): on one, removes
/// the work tree and tells the observer, which ends the process
/// ([`Observer::interrupted`]). A clone or push in progress is abandoned:
/// libgit2 offers no cancellation that reaches a blocked network read.
pub(crate) struct SignalWatch {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SignalWatch {
    /// Watch until dropped; on a signal, remove `work_tree` and tell
    /// `observer`.
    #[must_use]
    pub(crate) fn start(work_tree: PathBuf, observer: Arc<dyn Observer>) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let watching = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name("job-signals".to_owned())
            .spawn(move || {
                while !watching.load(Ordering::SeqCst) {
                    if let Some(signal) = interrupt::received() {
                        // The main thread may still be writing into the
                        // tree: try a few times.
                        for _ in 0..5 {
                            if fs_err::remove_dir_all(&work_tree).is_ok() || !work_tree.exists() {
                                break;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(20));
                        }
                        observer.interrupted(signal);
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            })
            .ok();
        Self { done, thread }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;

    /// A retry after a lost race applies every result of the first attempt, a key that does not
    /// read back from its text (an Argo CD alias with a `:`) included: the outcome keeps the
    /// keys themselves, not their text.
    #[test]
    fn a_retry_applies_every_policy_the_first_attempt_observed() {
        let mut outcome = crate::outcome::Outcome::default();
        for (namespace, name) in [("apps", "web"), ("argocd", "shop/registry:5000/cart")] {
            outcome.observed_policies.insert(
                PolicyKey {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                },
                ImageRef {
                    name: format!("example.com/{namespace}"),
                    tag: "1.2.3".to_owned(),
                    digest: String::new(),
                },
            );
        }
        let again = reapply_config(&UpdateConfig::default(), &outcome);
        let keys: Vec<String> = again.values.iter().map(|v| v.key.to_string()).collect();
        assert_eq!(keys, ["apps:web", "argocd:shop/registry:5000/cart"]);
        assert!(PolicyKey::parse(&keys[1]).is_none());
        let names: Vec<String> = by_name(
            outcome
                .observed_policies
                .iter()
                .map(|(key, image)| (key.name.clone(), image)),
        )
        .into_keys()
        .collect();
        assert_eq!(names, ["shop/registry:5000/cart", "web"]);
    }
}
