//! The Job's status and what it tells while it runs: the model the Job's
//! front ends render ([`super::status`] as JSON, [`super::terminal`] on
//! stderr). Values only; `crate::job` fills them in.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::report::Report;
use crate::diagnostic::Diagnostic;
use crate::failure::FailureKind;

/// What a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum JobResult {
    /// A commit was pushed.
    Pushed,
    /// No marked field needed a change (or someone else made it first, or
    /// the automation is suspended): nothing was pushed.
    NothingToDo,
    /// Nothing changed since the last run (`--state`): nothing was cloned.
    Skipped,
    /// The run failed (the status's `error` says why).
    Failed,
}

/// The Job's status: one JSON object on stdout, shaped after Flux's
/// ImageUpdateAutomation status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    /// What happened.
    pub result: JobResult,
    /// The pushed commit (40 hex digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_push_commit: Option<String>,
    /// When it was pushed (RFC 3339, UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_push_time: Option<String>,
    /// Every policy in scope with its latest image, keyed by policy name
    /// (Flux's `observedPolicies`).
    pub observed_policies: BTreeMap<String, ObservedImage>,
    /// `BRANCH@sha1:HEX`: the pushed commit, or the checked-out one when
    /// nothing was pushed or the push went to another branch (Flux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_source_revision: Option<String>,
    /// The ResultV2 change report of the update that was pushed (or that
    /// found nothing to do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Report>,
    /// Push attempts made (0 when nothing was pushed).
    pub attempts: u32,
    /// The message of the pushed commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_message: Option<String>,
    /// What the supply-chain gate found about each chosen image (who signed
    /// it, when it was released, the alias, the candidates passed over), by
    /// policy: the report's `supplyChain`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub supply_chain: BTreeMap<String, super::report::SupplyChainEntry>,
    /// With `--state`: why the run was skipped, or why it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_circuit: Option<String>,
    /// With `--pull-request`: the request this run left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<RequestStatus>,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<StatusError>,
}

/// An image reference of `observedPolicies`, as Flux writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ObservedImage {
    /// The image name.
    pub name: String,
    /// The tag.
    pub tag: String,
    /// The digest, when known.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub digest: String,
}

/// The `error` of a failed run's status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusError {
    /// `configuration`, `conflict`, `interrupted`, `pullRequest` or
    /// `failed`.
    pub kind: FailureKind,
    /// The error with its causes, one line.
    pub message: String,
    /// The process exit status.
    pub exit_code: u8,
}

impl Status {
    /// A status with `result` and nothing else.
    #[must_use]
    pub(crate) fn new(result: JobResult) -> Self {
        Self {
            result,
            last_push_commit: None,
            last_push_time: None,
            observed_policies: BTreeMap::new(),
            observed_source_revision: None,
            changes: None,
            attempts: 0,
            commit_message: None,
            supply_chain: BTreeMap::new(),
            short_circuit: None,
            pull_request: None,
            error: None,
        }
    }

    /// The status of a run that failed with `error`, of `kind` (which
    /// chooses the exit status).
    #[must_use]
    pub(crate) fn failed_with(
        kind: FailureKind,
        error: &(dyn std::error::Error + 'static),
    ) -> Self {
        Self {
            error: Some(StatusError {
                kind,
                message: crate::diagnostic::one_line(error),
                exit_code: kind.exit_code(),
            }),
            ..Self::new(JobResult::Failed)
        }
    }
}

/// The status's `pullRequest`: the request a run left, if any.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestStatus {
    /// `github`, `gitlab`, `gitea` or `forgejo`.
    pub provider: &'static str,
    /// The head branch.
    pub head: String,
    /// The base branch (the checkout branch).
    pub base: String,
    /// The request's web page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its number (GitLab's `!N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    /// `created`, `updated`, `unchanged`, `reopened` or `closed`; absent
    /// when there is no request (nothing to do, and none open).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
    /// What failed once the request existed (a label, an assignee, a
    /// reviewer, auto-merge).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// API calls this run made (a GitHub App's token exchange included).
    pub api_calls: u32,
}

/// What the Job tells while it runs, for the front end to show.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event<'a> {
    /// The short-circuit could not skip the run, for this reason.
    Running { reason: &'a str },
    /// Nothing changed since the last run: nothing was cloned.
    Skipped,
    /// The repository was cloned at this revision (`BRANCH@sha1:HEX`) into
    /// the work tree (removed when the run ends).
    Cloned {
        url: &'a str,
        revision: &'a str,
        work_tree: &'a Path,
    },
    /// The update of the work tree is done (before anything is committed):
    /// what it found and did, its paths in the work tree.
    Updated(&'a crate::outcome::Outcome),
    /// The update raised a warning.
    Warning(&'a Diagnostic),
    /// The automation is suspended.
    Suspended { what: &'a str },
    /// No marked field needs a change.
    NothingToChange,
    /// The update changed fields back to what the tree already held.
    TreeUnchanged,
    /// A commit was pushed.
    Pushed {
        commit: &'a str,
        branch: &'a str,
        attempts: u32,
    },
    /// After a lost race, the other writer's tip needs no change.
    RaceLeftNothing { tip: &'a str },
    /// The head branch of the request already holds this change: nothing
    /// was pushed.
    HeadUpToDate { branch: &'a str },
    /// The request this run left.
    PullRequest {
        /// `pull request` or `merge request`.
        noun: &'a str,
        url: &'a str,
        number: u64,
        /// `created`, `updated`, `unchanged`, `reopened` or `closed`.
        action: &'a str,
    },
    /// A call made once the request existed failed (a label, an assignee,
    /// a reviewer, auto-merge).
    PullRequestWarning { message: &'a str },
    /// The state file could not be written (the run itself succeeded).
    StateNotWritten {
        path: &'a Path,
        error: &'a std::io::Error,
    },
}
