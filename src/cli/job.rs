//! `image-update job`: clone a repository, update it, commit, sign and push
//! (Kubernetes Job mode). Flags and the environment become a
//! [`JobConfig`]; [`crate::job::run`] does the work; the status becomes one
//! JSON object on stdout, a termination message, and an exit status.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use image_update_forge::{Credentials, MergeMethod, Options, Provider, WhenNothingToDo};
use image_update_git::{Auth, Author, CheckoutRef, Remote, RemoteSettings, RetryPolicy};

use super::Exit;
use super::args::{ArgoArgs, MessageArgs, PolicySourceArgs, RegistryArgs};
use crate::automation::{Automation, SigningKind};
use crate::error::Error;
use crate::failure::FailureKind;
use crate::git_repository::{self, GitRepository};
use crate::input::SizeLimit;
use crate::job::checkout::{self, CheckoutTarget};
use crate::job::credentials::{self, CredentialFlags, Environment as _, ProcessEnvironment};
use crate::job::pull_request::{self, ForgeConfig, PullRequestSettings};
use crate::job::secrets::{SecretObject, Secrets};
use crate::job::{Event, JobConfig, JobError, JobResult, Observer, PushSettings, Status};
use crate::operation::UpdateConfig;
use crate::outcome::Mode;
use crate::render::{self, terminal};

/// Where Kubernetes reads a container's termination message.
const DEFAULT_TERMINATION_LOG: &str = "/dev/termination-log";

/// `job --help`, after the options.
pub(crate) const AFTER_HELP: &str = "\
Credentials come from the environment, never from flags:
  IMAGE_UPDATE_GIT_USERNAME, IMAGE_UPDATE_GIT_PASSWORD   HTTP Basic auth
  IMAGE_UPDATE_GIT_TOKEN         HTTP token, sent as the Basic password (user
                                 x-access-token unless IMAGE_UPDATE_GIT_USERNAME is set)
  IMAGE_UPDATE_GIT_BEARER_TOKEN  HTTP `Authorization: Bearer` token
  IMAGE_UPDATE_GIT_SSH_KEY       SSH private key (contents; or --ssh-key FILE)
  IMAGE_UPDATE_GIT_SSH_KEY_PASSPHRASE   its passphrase
  IMAGE_UPDATE_GIT_KNOWN_HOSTS   known_hosts lines (contents; or --known-hosts FILE)
  IMAGE_UPDATE_GIT_CA_CERT       PEM CA certificates trusted for HTTPS besides the system's
                                 and the bundled roots (contents; or --ca-file FILE)
  IMAGE_UPDATE_SIGNING_KEY       commit signing key (contents; or --signing-key FILE)
  IMAGE_UPDATE_SIGNING_PASSPHRASE       its passphrase
  IMAGE_UPDATE_FORGE_TOKEN       the forge API's token for --pull-request and for Argo CD
                                 Applications' gitConfig.pullRequest (default: the git token or
                                 password)
  IMAGE_UPDATE_GITHUB_APP_ID, IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY (PEM),
  IMAGE_UPDATE_GITHUB_APP_INSTALLATION_ID (default: found from the repository)
                                 a GitHub App: its installation token calls the API, and clones
                                 and pushes when no other git credential is given
A GitRepository with provider: github reads the App from its Secret: githubAppID,
githubAppPrivateKey, githubAppInstallationID, githubAppBaseURL (the API of GitHub Enterprise).

Status: one JSON object on stdout: result (pushed | nothingToDo | skipped | failed),
lastPushCommit, lastPushTime, observedPolicies, observedSourceRevision (BRANCH@sha1:HEX),
changes (the ResultV2 report), attempts, commitMessage, supplyChain (who signed each chosen
image, its release time, alias and skipped candidates), shortCircuit (with --state),
pullRequest (with --pull-request: provider, head, base, url, number, action (created | updated |
unchanged | reopened | closed), warnings, apiCalls), and on failure error {kind, message,
exitCode}; kind pullRequest: the head branch holds the change, the request failed (the next run
reuses the branch).
The same object, made to fit 4 KiB, is the termination message (--termination-log).

Exit status:
  0  pushed, nothing to do, or skipped (--exit-code-unchanged N gives \"nothing pushed\" its
     own code)
  1  failed: network, registry, git server, credentials, host key, template, repository content,
     the forge's API (after a push: error kind pullRequest)
  2  usage or configuration error: retrying will not help (podFailurePolicy: FailJob)
  4  every push lost a race with other writers (--max-attempts): retry later
  128+N  ended by signal N (143 for SIGTERM); the work tree is removed

Examples:
  IMAGE_UPDATE_GIT_TOKEN=... image-update job --url https://github.com/acme/fleet \\
      --branch main --path clusters/prod --policies policies.yaml \\
      --author-name fluxbot --author-email fluxbot@acme.example
  IMAGE_UPDATE_GIT_SSH_KEY=\"$(cat id_ed25519)\" IMAGE_UPDATE_GIT_KNOWN_HOSTS=\"$(cat known_hosts)\" \\
      image-update job --url ssh://git@github.com/acme/fleet --automation automation.yaml \\
      --policy flux-system:app=ghcr.io/acme/app:1.4.2
  IMAGE_UPDATE_GIT_TOKEN=... image-update job --url https://github.com/acme/fleet \\
      --automation automation.yaml --policies policies.yaml --pull-request \\
      --pull-request-label dependencies --pull-request-reviewer alice";

/// `image-update job`.
#[derive(Debug, Args)]
pub(crate) struct JobArgs {
    /// The repository: https://, ssh:// or user@host:path (plain http:// only to
    /// loopback; file:// and paths only with --allow-local).
    /// Default: the --git-repository's spec.url, else the repository the Argo
    /// CD Applications of the --policies files write back to.
    #[arg(long, value_name = "URL", help_heading = "Repository")]
    pub url: Option<String>,

    /// A Flux GitRepository (YAML): its spec.url, spec.ref (branch, tag,
    /// semver, name, commit) and spec.secretRef (username, password,
    /// bearerToken, identity, known_hosts), from the --secret files.
    #[arg(long, value_name = "FILE", help_heading = "Flux objects")]
    pub git_repository: Option<PathBuf>,

    /// Run one automation of a fleet (`image-update deploy --fleet`): FILE
    /// is the fleet's index; its entry at --fleet-index gives the
    /// automation, GitRepository and policies files (relative to FILE).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Flux objects",
        conflicts_with_all = ["automation", "git_repository", "url"]
    )]
    pub fleet: Option<PathBuf>,

    /// The entry of --fleet to run (default: JOB_COMPLETION_INDEX, which
    /// Kubernetes sets in every Pod of an Indexed Job); ignored without
    /// --fleet.
    #[arg(
        long,
        value_name = "N",
        env = "JOB_COMPLETION_INDEX",
        hide_env_values = true,
        help_heading = "Flux objects"
    )]
    pub fleet_index: Option<String>,

    /// Kubernetes Secrets (YAML, multi-document; repeatable) that
    /// --git-repository and --automation reference: git credentials, the
    /// signing key (git.asc + passphrase, or identity + password). The
    /// environment variables and key flags override them.
    #[arg(long = "secret", value_name = "FILE", help_heading = "Flux objects")]
    pub secrets: Vec<PathBuf>,

    /// Check out this branch (default: the automation's checkout ref, else the
    /// GitRepository's spec.ref, else the base branch the Argo CD Applications
    /// of the --policies files write back to, else the remote's default branch).
    #[arg(
        long,
        value_name = "NAME",
        help_heading = "Repository",
        group = "checkout"
    )]
    pub branch: Option<String>,

    /// Check out this tag (needs --push-branch).
    #[arg(
        long,
        value_name = "NAME",
        help_heading = "Repository",
        group = "checkout"
    )]
    pub tag: Option<String>,

    /// Check out this commit (40 hex digits; with --branch-of, on that branch).
    #[arg(
        long,
        value_name = "SHA",
        help_heading = "Repository",
        group = "checkout"
    )]
    pub commit: Option<String>,

    /// Check out this full ref name (refs/heads/..., refs/tags/..., refs/pull/7/head).
    #[arg(
        long = "ref",
        value_name = "REF",
        help_heading = "Repository",
        group = "checkout"
    )]
    pub reference: Option<String>,

    /// The branch --commit is on (pushes then go back to it).
    #[arg(
        long,
        value_name = "NAME",
        help_heading = "Repository",
        requires = "commit"
    )]
    pub branch_of: Option<String>,

    /// History depth of the clone; 0 clones the full history.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        help_heading = "Repository"
    )]
    pub depth: u32,

    /// Allow file:// URLs and local paths (no server hooks run).
    #[arg(long, help_heading = "Repository")]
    pub allow_local: bool,

    /// known_hosts file for SSH host key checking (or IMAGE_UPDATE_GIT_KNOWN_HOSTS).
    #[arg(long, value_name = "FILE", help_heading = "Repository")]
    pub known_hosts: Option<PathBuf>,

    /// PEM CA certificates trusted for HTTPS besides the system's and the
    /// bundled Mozilla roots (or IMAGE_UPDATE_GIT_CA_CERT, else the Secret's
    /// ca.crt).
    #[arg(long, value_name = "FILE", help_heading = "Repository")]
    pub ca_file: Option<PathBuf>,

    /// Accept any SSH host key. Dangerous: anyone on the path can impersonate
    /// the server and receive your commits.
    #[arg(long, help_heading = "Repository")]
    pub insecure_skip_host_key_check: bool,

    /// SSH private key file (or IMAGE_UPDATE_GIT_SSH_KEY).
    #[arg(long, value_name = "FILE", help_heading = "Repository")]
    pub ssh_key: Option<PathBuf>,

    /// Give up a git connection after DURATION without progress (connect and
    /// each read), e.g. 30s, 2m (default: connect 30s, read 120s).
    #[arg(long, value_name = "DURATION", help_heading = "Repository", value_parser = super::args::parse_duration)]
    pub git_timeout: Option<Duration>,

    /// Make the temporary work tree under DIR (default: the system's
    /// temporary directory). It is removed when the job ends.
    #[arg(long, value_name = "DIR", help_heading = "Repository")]
    pub work_dir: Option<PathBuf>,

    /// Only edit files under this directory of the repository (default: the
    /// automation's spec.update.path, else the whole repository).
    #[arg(long, value_name = "DIR")]
    pub path: Option<String>,

    #[command(flatten)]
    pub source: PolicySourceArgs,

    #[command(flatten)]
    pub argocd: ArgoArgs,

    /// Follow a Flux ImageUpdateAutomation: its namespace and
    /// spec.policySelector scope the policies, spec.update.path limits the
    /// edits, spec.git gives the checkout ref, author, message template,
    /// signing key type and push settings (flags override them).
    #[arg(long, value_name = "FILE")]
    pub automation: Option<PathBuf>,

    /// Leave a marker alone, with a warning, when its change would move a
    /// tag backwards.
    #[arg(long)]
    pub no_downgrade: bool,

    /// The most bytes read from one file. Units KiB, MiB, GiB.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,

    /// Compute policy results from registries: ImageRepository/ImagePolicy
    /// definitions in the repository and --policies files.
    #[arg(long, help_heading = "Fetching")]
    pub fetch: bool,

    #[command(flatten)]
    pub registry: RegistryArgs,

    /// Commit author (and committer) name (default: the automation's).
    #[arg(long, value_name = "NAME", help_heading = "Commit")]
    pub author_name: Option<String>,

    /// Commit author (and committer) email (default: the automation's).
    #[arg(long, value_name = "EMAIL", help_heading = "Commit")]
    pub author_email: Option<String>,

    /// Sign commits with this key: an armored OpenPGP secret key, or an
    /// OpenSSH private key with --signing-key-type ssh (or IMAGE_UPDATE_SIGNING_KEY).
    #[arg(long, value_name = "FILE", help_heading = "Commit")]
    pub signing_key: Option<PathBuf>,

    /// The signing key's kind (default: the automation's, else gpg).
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Commit")]
    pub signing_key_type: Option<SigningKeyType>,

    #[command(flatten)]
    pub message: MessageArgs,

    /// Push to this branch instead of the checkout branch; when it differs,
    /// it is created from the checked-out commit and force-pushed (Flux).
    #[arg(long, value_name = "NAME", help_heading = "Push")]
    pub push_branch: Option<String>,

    /// Also push this refspec, e.g. refs/heads/main:refs/heads/auto.
    #[arg(long, value_name = "REFSPEC", help_heading = "Push")]
    pub push_refspec: Option<String>,

    /// A push option (`git push -o`), KEY=VALUE or KEY (repeatable).
    #[arg(
        long = "push-option",
        value_name = "KEY[=VALUE]",
        help_heading = "Push"
    )]
    pub push_options: Vec<String>,

    /// Push attempts in all when pushes lose races with other writers (each
    /// retry fetches the new tip and re-applies the update).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Push")]
    pub max_attempts: u32,

    /// Remember what this run saw in FILE (JSON); skip the next run, without
    /// cloning, when the configuration, the remote heads (ls-remote) and the
    /// policies' latest images are all unchanged. Policies defined only in
    /// the repository cannot be seen without a clone: such runs are never
    /// skipped.
    #[arg(long, value_name = "FILE", help_heading = "Status")]
    pub state: Option<PathBuf>,

    /// Exit with N when nothing was pushed (nothing to do, or skipped), for
    /// scripts.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = "Status")]
    pub exit_code_unchanged: u8,

    /// Write the status, at most 4 KiB, to FILE as the termination message
    /// (default: /dev/termination-log when it exists).
    #[arg(long, value_name = "FILE", help_heading = "Status")]
    pub termination_log: Option<PathBuf>,

    #[command(flatten)]
    pub pull_request: PullRequestArgs,
}

/// `job --pull-request` and the forge's API.
#[derive(Debug, Args)]
pub(crate) struct PullRequestArgs {
    /// Push the commit to a head branch and open a pull (merge) request from
    /// it into the checkout branch, or update the open one, instead of
    /// pushing to the checkout branch (GitHub, GitLab, Gitea, Forgejo; the
    /// token comes from the environment, see below).
    #[arg(long, help_heading = "Pull request")]
    pub pull_request: bool,

    /// The head branch: a template over the commit message's data and the
    /// report, or `change-set` for one branch per change set
    /// (image-update-{{ .TargetKey }}-{{ .SHA256 }}). Default: the push
    /// branch (--push-branch, the automation's), else
    /// image-update/NAMESPACE-NAME of the automation, else image-update/BASE.
    #[arg(
        long,
        value_name = "TEMPLATE",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub pull_request_branch: Option<String>,

    /// The title: a template like the commit message's (default: the commit
    /// message's first line).
    #[arg(
        long,
        value_name = "TEMPLATE",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub pull_request_title: Option<String>,

    /// The body: a template (default: a table of the changes, with the
    /// report in a collapsed block).
    #[arg(
        long,
        value_name = "TEMPLATE",
        requires = "pull_request",
        conflicts_with = "pull_request_body_file",
        help_heading = "Pull request"
    )]
    pub pull_request_body: Option<String>,

    /// The body's template, from FILE.
    #[arg(
        long,
        value_name = "FILE",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub pull_request_body_file: Option<PathBuf>,

    /// A label to add (repeatable; on Gitea and Forgejo it must exist).
    #[arg(
        long = "pull-request-label",
        value_name = "NAME",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub labels: Vec<String>,

    /// A user to assign (repeatable).
    #[arg(
        long = "pull-request-assignee",
        value_name = "USER",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub assignees: Vec<String>,

    /// A user asked for a review when the request is created or reopened
    /// (repeatable).
    #[arg(
        long = "pull-request-reviewer",
        value_name = "USER",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub reviewers: Vec<String>,

    /// A team asked for a review (GitHub team slug, Gitea/Forgejo team name;
    /// repeatable).
    #[arg(
        long = "pull-request-team-reviewer",
        value_name = "TEAM",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub team_reviewers: Vec<String>,

    /// Open it as a draft.
    #[arg(long, requires = "pull_request", help_heading = "Pull request")]
    pub pull_request_draft: bool,

    /// Merge it when its checks pass, with this method (asked when it is
    /// created or reopened).
    #[arg(
        long,
        value_enum,
        value_name = "METHOD",
        requires = "pull_request",
        help_heading = "Pull request"
    )]
    pub pull_request_auto_merge: Option<AutoMerge>,

    /// When a run has nothing to do, close the open request with a comment
    /// (default: leave it).
    #[arg(long, requires = "pull_request", help_heading = "Pull request")]
    pub pull_request_close_when_nothing_to_do: bool,

    /// The comment --pull-request-close-when-nothing-to-do writes.
    #[arg(
        long,
        value_name = "TEXT",
        requires = "pull_request_close_when_nothing_to_do",
        help_heading = "Pull request"
    )]
    pub pull_request_close_comment: Option<String>,

    /// The forge (default: from the URL's host; github for a GitRepository
    /// with provider: github).
    #[arg(
        long,
        value_enum,
        value_name = "PROVIDER",
        help_heading = "Pull request"
    )]
    pub forge: Option<ForgeKind>,

    /// The forge's API base URL (default: api.github.com for github.com,
    /// HOST/api/v3 for GitHub Enterprise, HOST/api/v4 for GitLab, HOST/api/v1
    /// for Gitea and Forgejo, over HTTPS; or the Secret's githubAppBaseURL).
    #[arg(long, value_name = "URL", help_heading = "Pull request")]
    pub forge_api_url: Option<String>,

    /// The longest wait a rate limit may ask for before the call fails
    /// (default 60s).
    #[arg(long, value_name = "DURATION", help_heading = "Pull request", value_parser = super::args::parse_duration)]
    pub forge_max_wait: Option<Duration>,
}

/// How an auto-merged request is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AutoMerge {
    /// A merge commit.
    Merge,
    /// One squashed commit.
    Squash,
    /// The commits rebased onto the base (not on GitLab).
    Rebase,
}

/// A forge with a pull (merge) request API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ForgeKind {
    /// github.com, GitHub Enterprise.
    Github,
    /// gitlab.com, self-managed GitLab.
    Gitlab,
    /// Gitea.
    Gitea,
    /// Forgejo, Codeberg.
    Forgejo,
}

/// What kind of key signs commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SigningKeyType {
    /// An ASCII-armored OpenPGP secret key.
    Gpg,
    /// An OpenSSH private key.
    Ssh,
}

/// Run `job`.
///
/// # Errors
/// Only stdout that cannot be written; every other failure is in the
/// status, on stderr, and in the exit status.
pub(crate) fn run(args: &JobArgs) -> Result<Exit, Error> {
    let observer: Arc<dyn Observer> = Arc::new(Progress);
    let result = match config(args) {
        Ok(config) => crate::job::run(&config, &observer).map_err(Failure::Job),
        Err(e) => Err(Failure::Config(e)),
    };
    let (status, code) = match &result {
        Ok(status) => {
            let code = if status.result == JobResult::Pushed {
                0
            } else {
                args.exit_code_unchanged
            };
            (status.clone(), code)
        }
        Err(Failure::Job(e)) => {
            let paint = super::stderr_paint(super::ColorChoice::from_args());
            let _ = super::stdio::stderr().write_all(terminal::error_line(e, paint).as_bytes());
            (Status::failed(e), e.exit_code())
        }
        Err(Failure::Config(e)) => {
            super::print_error(e);
            let kind = FailureKind::Configuration;
            (Status::failed_with(kind, e), kind.exit_code())
        }
    };
    write_termination_log(args.termination_log.as_deref(), &status);
    let text = render::status::json(&status)
        .map_err(|e| Error::Internal(format!("cannot serialise the status: {e}")))?;
    let mut out = super::stdio::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the status",
            source,
        })?;
    Ok(Exit::Code(code))
}

enum Failure {
    Config(Error),
    Job(JobError),
}

/// The Job's progress on stderr.
struct Progress;

impl Observer for Progress {
    fn event(&self, event: &Event<'_>) {
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

/// Write the termination message ([`render::status::termination_message`]).
/// Best effort: the file must exist (Kubernetes creates it) or be named;
/// errors are ignored.
fn write_termination_log(path: Option<&std::path::Path>, status: &Status) {
    let path = match path {
        Some(path) => path.to_owned(),
        None if std::path::Path::new(DEFAULT_TERMINATION_LOG).exists() => {
            PathBuf::from(DEFAULT_TERMINATION_LOG)
        }
        None => return,
    };
    let _ = fs_err::write(path, render::status::termination_message(status));
}

/// The run's settings from the flags and the environment.
///
/// # Errors
/// Usage errors (conflicting or malformed flags, a missing author),
/// unreadable key and automation files, keys that cannot be used.
pub(crate) fn config(args: &JobArgs) -> Result<JobConfig, Error> {
    // Before anything touches libgit2: its options are set once.
    if let Some(timeout) = args.git_timeout
        && !image_update_git::set_timeouts(timeout, timeout)
    {
        return Err(Error::Internal(
            "--git-timeout came after the first git operation".to_owned(),
        ));
    }
    // A fleet's member: its files from the fleet's index, whose position is
    // checked before anything else is read.
    let member = args
        .fleet
        .as_deref()
        .map(|file| {
            crate::deploy::fleet::select(file, args.fleet_index.as_deref(), args.max_file_size)
        })
        .transpose()?;
    let automation_file = member
        .as_ref()
        .map(|m| m.automation.as_path())
        .or(args.automation.as_deref());
    let repository_file = member
        .as_ref()
        .map(|m| m.git_repository.as_path())
        .or(args.git_repository.as_deref());
    let automation = automation_file
        .map(|file| crate::automation_file::read_file(file, args.max_file_size))
        .transpose()?;
    let git = automation.as_ref().and_then(|a| a.git.clone());
    if args.state.is_some()
        && args
            .source
            .policy_files
            .iter()
            .any(|f| f.as_os_str() == "-")
    {
        return Err(Error::Usage(
            "--state reads the policies before the run, so it cannot take --policies - (stdin)"
                .to_owned(),
        ));
    }
    let repository = repository_file
        .map(|file| git_repository::read_file(file, args.max_file_size))
        .transpose()?;
    if let (Some(a), Some(r)) = (&automation, &repository)
        && let Some(source) = &a.source_ref
        && (source.namespace != r.namespace || source.name != r.name)
    {
        let at = automation_file
            .map(|f| crate::automation_file::source_ref_location(f, args.max_file_size));
        let mut error = crate::diagnostic::Diagnostic::error(format!(
            "{}: its sourceRef names GitRepository {}/{}, but --git-repository gives {}/{}",
            a.describe(),
            source.namespace,
            source.name,
            r.namespace,
            r.name
        ));
        if let Some(at) = at {
            error = error.at(at);
        }
        return Err(Error::invalid(vec![error]));
    }
    let secrets = Secrets::read(&args.secrets, args.max_file_size)?;
    let git_secret = match &repository {
        Some(GitRepository {
            namespace,
            name,
            secret_name: Some(secret),
            ..
        }) => {
            let who = format!("GitRepository {namespace}/{name} spec.secretRef");
            // Credentials from the environment or --ssh-key come first (Flux's precedence):
            // with them, the Secret's manifest is not needed (a Job made by `deploy` takes the
            // Secret's keys as its environment; a run from a terminal has a token).
            if credentials::git_credentials_given(args.ssh_key.is_some(), &ProcessEnvironment) {
                secrets.find(namespace, secret)
            } else {
                Some(secrets.get(
                    namespace,
                    secret,
                    &who,
                    ", or the credentials in the environment (IMAGE_UPDATE_GIT_TOKEN, or another \
                     of the Job's IMAGE_UPDATE_GIT_* variables)",
                )?)
            }
            .map(|found| {
                credentials::check_git_secret(found, &format!("{namespace}/{secret}"))
                    .map(|()| found)
            })
            .transpose()?
        }
        _ => None,
    };
    let mut update = UpdateConfig {
        fetch: args.registry.fetch_settings_if(args.fetch)?,
        mode: Mode::Apply,
        plan: crate::updater::plan::PlanOptions {
            no_downgrade: args.no_downgrade,
        },
        max_file_size: args.max_file_size,
        ..UpdateConfig::default()
    };
    args.source.apply(&mut update)?;
    if let Some(policies) = member.as_ref().and_then(|m| m.policies.clone()) {
        update.policy_files.push(policies);
    }
    args.argocd.apply(&mut update, args.max_file_size)?;
    if let Some(automation) = automation.clone() {
        update = update.with_automation(automation);
        if let Some(file) = automation_file {
            super::args::add_updater_definitions(&mut update, file);
        }
    }
    if let Some(path) = &args.path {
        update.update_path = crate::automation::normalise_path(path);
    }
    update.message = Some(
        args.message
            .message_config(update.automation.as_ref(), args.max_file_size)?,
    );
    // A request's body shows where each image was built from.
    if let (true, Some(fetch)) = (args.pull_request.pull_request, update.fetch.as_mut()) {
        fetch.provenance = true;
    }
    let commit = git.as_ref().map(|g| g.commit.clone()).unwrap_or_default();
    let author_name = args
        .author_name
        .clone()
        .or_else(|| Some(commit.author_name.clone()).filter(|n| !n.is_empty()))
        .ok_or_else(|| {
            Error::Usage(
                "no commit author: give --author-name (or --automation with spec.git.commit.author)"
                    .to_owned(),
            )
        })?;
    let author = Author {
        name: author_name,
        email: args
            .author_email
            .clone()
            .unwrap_or_else(|| commit.author_email.clone()),
    };
    // Argo CD Applications of the policy files name the repository and base branch when
    // nothing else does.
    let argo = match (&args.url, &repository) {
        (None, None) => crate::job::argocd::destination(&update)?,
        _ => None,
    };
    // The URL, and where it comes from (for a message refusing it).
    let (url, url_origin) = match (&args.url, &repository, &argo) {
        (Some(url), _, _) => (url.clone(), "--url".to_owned()),
        (None, Some(r), _) => {
            let via = match (&automation, &member) {
                (_, Some(_)) => " (the fleet member's GitRepository)".to_owned(),
                (Some(a), None) if a.source_ref.is_some() => {
                    format!(" (the sourceRef of {})", a.describe())
                }
                _ => String::new(),
            };
            (
                r.url.clone(),
                format!(
                    "{}: GitRepository {}/{} spec.url{via}",
                    r.url_location, r.namespace, r.name
                ),
            )
        }
        (None, None, Some(d)) => (d.repository.clone(), crate::job::argocd::origin(d)),
        (None, None, None) => {
            return Err(no_repository(automation.as_ref(), automation_file, args));
        }
    };
    // With --url, the Applications that write to it give the base branch when they agree; a
    // policy file that cannot be read here fails the run, which reports it.
    let argo_branch = || match &argo {
        Some(d) => d.checkout.clone(),
        None => crate::job::argocd::checkout_for(&update, &url)
            .ok()
            .flatten(),
    };
    let reference = checkout_ref(args, automation.as_ref(), repository.as_ref(), argo_branch)?;
    let push_spec = git
        .as_ref()
        .and_then(|g| g.push.clone())
        .unwrap_or_default();
    let push = PushSettings {
        branch: args.push_branch.clone().or(push_spec.branch),
        refspec: args.push_refspec.clone().or(push_spec.refspec),
        options: if args.push_options.is_empty() {
            push_spec
                .options
                .iter()
                .map(|(k, v)| {
                    if v.is_empty() {
                        k.clone()
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect()
        } else {
            args.push_options.clone()
        },
    };
    let mut push = push;
    let pull_request = pull_request_settings(args, &reference, &mut push)?;
    if !reference.has_branch() && push.branch.is_none() && pull_request.is_none() {
        return Err(Error::Usage(format!(
            "{reference} is not a branch to push back to: give --push-branch"
        )));
    }
    let signing_kind = match args.signing_key_type {
        Some(SigningKeyType::Gpg) => SigningKind::Gpg,
        Some(SigningKeyType::Ssh) => SigningKind::Ssh,
        None => commit
            .signing_key
            .as_ref()
            .map_or(SigningKind::Gpg, |k| k.kind),
    };
    // The signing key from --signing-key or the environment comes first, as the git
    // credentials do.
    let signing_key_given =
        args.signing_key.is_some() || ProcessEnvironment.var("IMAGE_UPDATE_SIGNING_KEY").is_some();
    let signing_secret = match (&automation, &commit.signing_key) {
        (Some(automation), Some(key)) if !signing_key_given => Some(secrets.get(
            &automation.namespace,
            &key.secret_name,
            &format!("{} spec.git.commit.signingKey", automation.describe()),
            ", or the key with --signing-key FILE or IMAGE_UPDATE_SIGNING_KEY",
        )?),
        _ => None,
    };
    let signer = credentials::signer(
        args.signing_key.as_deref(),
        signing_kind,
        &ProcessEnvironment,
        signing_secret,
        args.max_file_size,
    )?;
    if args.insecure_skip_host_key_check {
        let _ = super::stdio::stderr().write_all(
            b"image-update: warning: --insecure-skip-host-key-check: any SSH host key is accepted\n",
        );
    }
    let flags = CredentialFlags {
        ssh_key: args.ssh_key.as_deref(),
        known_hosts: args.known_hosts.as_deref(),
        ca_file: args.ca_file.as_deref(),
        insecure_skip_host_key_check: args.insecure_skip_host_key_check,
        allow_local: args.allow_local,
        max_file_size: args.max_file_size,
    };
    let remote =
        credentials::remote_settings(&url, &url_origin, &flags, &ProcessEnvironment, git_secret)?;
    let forge = forge_config(
        args,
        &url,
        &remote,
        repository.as_ref(),
        git_secret,
        pull_request.as_ref(),
    )?;
    Ok(JobConfig {
        remote,
        url,
        reference,
        depth: (args.depth > 0).then_some(args.depth),
        update,
        author,
        signer,
        push,
        retry: RetryPolicy {
            attempts: args.max_attempts,
            ..RetryPolicy::default()
        },
        work_parent: args.work_dir.clone(),
        state_file: args.state.clone(),
        forge,
        pull_request,
    })
}

/// Neither `--url` nor a GitRepository: at the automation's sourceRef when
/// it names one (the GitRepository it names was not given).
fn no_repository(
    automation: Option<&Automation>,
    file: Option<&std::path::Path>,
    args: &JobArgs,
) -> Error {
    match (automation, file) {
        (Some(a), Some(file)) if a.source_ref.is_some() => {
            let source = a
                .source_ref
                .as_ref()
                .map_or_else(String::new, |s| format!("{}/{}", s.namespace, s.name));
            Error::invalid(vec![
                crate::diagnostic::Diagnostic::error(format!(
                    "{}: its sourceRef names GitRepository {source}, which is not given: give its file with --git-repository (or the repository's URL with --url)",
                    a.describe()
                ))
                .at(crate::automation_file::source_ref_location(file, args.max_file_size)),
            ])
        }
        _ => Error::Usage(
            "give --url or --git-repository (or --policies with Argo CD Applications that \
             write back to git)"
                .to_owned(),
        ),
    }
}

/// `--pull-request`'s settings; the head branch defaults to the push branch
/// (which the request's head then replaces) when it differs from the
/// checkout branch.
fn pull_request_settings(
    args: &JobArgs,
    reference: &CheckoutTarget,
    push: &mut PushSettings,
) -> Result<Option<PullRequestSettings>, Error> {
    let pr = &args.pull_request;
    if !pr.pull_request {
        return Ok(None);
    }
    if !reference.has_branch() {
        return Err(Error::Usage(format!(
            "--pull-request proposes a change to the checkout branch, and {reference} is not a \
             branch: check out a branch (--branch)"
        )));
    }
    let checkout_branch = match reference {
        CheckoutTarget::Checkout(r) => r.normalized().branch().map(str::to_owned),
        CheckoutTarget::Semver(_) => None,
    };
    let push_branch = push
        .branch
        .take()
        .filter(|branch| Some(branch) != checkout_branch.as_ref());
    let branch = match &pr.pull_request_branch {
        Some(template) => Some(pull_request::head_template(template)),
        None => push_branch,
    };
    let body = match &pr.pull_request_body_file {
        Some(file) => Some(crate::input::read_text(file, args.max_file_size)?),
        None => pr.pull_request_body.clone(),
    };
    for (flag, template) in [
        ("--pull-request-branch", &branch),
        ("--pull-request-title", &pr.pull_request_title),
        ("--pull-request-body", &body),
    ] {
        if let Some(template) = template {
            pull_request::check_template(template)
                .map_err(|e| Error::Usage(format!("{flag}: the template does not parse: {e}")))?;
        }
    }
    let when_nothing_to_do = if pr.pull_request_close_when_nothing_to_do {
        WhenNothingToDo::Close {
            comment: pr
                .pull_request_close_comment
                .clone()
                .unwrap_or_else(|| pull_request::DEFAULT_CLOSE_COMMENT.to_owned()),
        }
    } else {
        WhenNothingToDo::Leave
    };
    Ok(Some(PullRequestSettings {
        branch,
        title: pr.pull_request_title.clone(),
        body,
        options: Options {
            labels: pr.labels.clone(),
            assignees: pr.assignees.clone(),
            reviewers: pr.reviewers.clone(),
            team_reviewers: pr.team_reviewers.clone(),
            draft: pr.pull_request_draft,
            auto_merge: pr.pull_request_auto_merge.map(|m| match m {
                AutoMerge::Merge => MergeMethod::Merge,
                AutoMerge::Squash => MergeMethod::Squash,
                AutoMerge::Rebase => MergeMethod::Rebase,
            }),
        },
        when_nothing_to_do,
    }))
}

/// The forge's API, whenever credentials for it are found: its credentials
/// ([`credentials::forge_credentials`]), the provider (`--forge`, github for
/// a GitRepository with `provider: github`, else the URL's host), its API
/// URL (`--forge-api-url`, else the Secret's `githubAppBaseURL`), the git
/// transport's CAs. When a request is to be opened or a GitHub App signs the
/// git transport in, it must exist and is checked against the URL now;
/// otherwise it serves the pull request Argo CD Applications may ask for
/// (their provider is known after the update).
fn forge_config(
    args: &JobArgs,
    url: &str,
    remote: &RemoteSettings,
    repository: Option<&GitRepository>,
    git_secret: Option<&SecretObject>,
    pull_request: Option<&PullRequestSettings>,
) -> Result<Option<ForgeConfig>, Error> {
    let pr = &args.pull_request;
    let app_in_secret = repository.is_some_and(|r| r.github_app);
    let found = credentials::forge_credentials(&ProcessEnvironment, git_secret, app_in_secret)?;
    let is_app = matches!(found, Some((Credentials::GitHubApp { .. }, _)));
    let https = Remote::new(url, remote.clone())
        .is_ok_and(|r| r.transport() == image_update_git::Transport::Http);
    if let Some(repository) = repository.filter(|r| r.github_app) {
        let who = format!(
            "GitRepository {}/{} (spec.provider: github)",
            repository.namespace, repository.name
        );
        if !is_app {
            return Err(Error::Usage(format!(
                "{who} needs a GitHub App: the Secret's githubAppID and githubAppPrivateKey (or \
                 IMAGE_UPDATE_GITHUB_APP_ID and IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY)"
            )));
        }
        if !https {
            return Err(Error::Usage(format!(
                "{who}: a GitHub App's token works over HTTPS only, and the URL is {url}"
            )));
        }
    }
    let git_auth = is_app && https && matches!(remote.auth, Auth::None);
    let provider = pr
        .forge
        .map(|kind| match kind {
            ForgeKind::Github => Provider::GitHub,
            ForgeKind::Gitlab => Provider::GitLab,
            ForgeKind::Gitea => Provider::Gitea,
            ForgeKind::Forgejo => Provider::Forgejo,
        })
        .or(app_in_secret.then_some(Provider::GitHub));
    let api_url = pr.forge_api_url.clone().or_else(|| {
        app_in_secret
            .then(|| git_secret.and_then(|s| s.get("githubAppBaseURL")))
            .flatten()
            .map(|u| u.expose().trim().to_owned())
            .filter(|u| !u.is_empty())
    });
    let access = found.map(|(credentials, _)| {
        ForgeConfig::unchecked(
            provider,
            api_url.clone(),
            credentials,
            remote.ca_certificates.clone(),
            pr.forge_max_wait,
        )
    });
    if pull_request.is_none() && !git_auth {
        return Ok(access);
    }
    let Some(mut forge) = access else {
        return Err(Error::Usage(
            "--pull-request needs a token for the forge's API: IMAGE_UPDATE_FORGE_TOKEN, a \
             GitHub App (IMAGE_UPDATE_GITHUB_APP_ID and IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY), or \
             the git token (IMAGE_UPDATE_GIT_TOKEN, IMAGE_UPDATE_GIT_PASSWORD, the Secret's \
             password)"
                .to_owned(),
        ));
    };
    let located = image_update_forge::Repository::locate(url, provider, api_url.as_deref())
        .map_err(|e| Error::Usage(format!("the forge: {e}")))?;
    if let Some(settings) = pull_request {
        pull_request::check_options(located.provider, &settings.options)
            .map_err(|e| Error::Usage(format!("--pull-request: {e}")))?;
    }
    forge.git_auth = git_auth;
    Ok(Some(forge))
}

/// The checkout ref: a flag, else the automation's `spec.git.checkout.ref`,
/// else the GitRepository's `spec.ref`, else the Argo CD Applications' base
/// branch, else the remote's default branch.
fn checkout_ref(
    args: &JobArgs,
    automation: Option<&Automation>,
    repository: Option<&GitRepository>,
    argo_branch: impl FnOnce() -> Option<String>,
) -> Result<CheckoutTarget, Error> {
    let flag = if let Some(branch) = &args.branch {
        Some(CheckoutRef::Branch(branch.clone()))
    } else if let Some(tag) = &args.tag {
        Some(CheckoutRef::Tag(tag.clone()))
    } else if let Some(id) = &args.commit {
        Some(CheckoutRef::Commit {
            id: id.clone(),
            branch: args.branch_of.clone(),
        })
    } else {
        args.reference.clone().map(CheckoutRef::Name)
    };
    let reference = flag
        .map(CheckoutTarget::Checkout)
        .or_else(|| {
            automation
                .and_then(|a| a.git.as_ref())
                .and_then(|g| g.checkout.as_ref())
                .and_then(checkout::from_git_ref)
        })
        .or_else(|| {
            repository
                .and_then(|r| r.reference.as_ref())
                .and_then(checkout::from_git_ref)
        })
        .or_else(|| argo_branch().map(|b| CheckoutTarget::Checkout(CheckoutRef::Branch(b))))
        .unwrap_or(CheckoutTarget::Checkout(CheckoutRef::DefaultBranch));
    if let CheckoutTarget::Semver(range) = &reference {
        crate::reflector::selection::semver::Range::parse(range)
            .map_err(|e| Error::Usage(format!("semver checkout range `{range}`: {e}")))?;
    }
    Ok(reference)
}
