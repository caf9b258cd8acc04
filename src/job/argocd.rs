//! The Job's git settings from Argo CD objects (`docs/argocd.md`, "The Job").
//!
//! Before cloning, the Applications of the `--policies` files (annotated, ImageUpdater CRD,
//! KubeSphere kind argocd) that write back to git give the repository and the base branch when
//! no flag names them; they must agree, since one run clones one repository and pushes one
//! commit. The update then leaves alone the Applications that write elsewhere ([`scoped`]).
//! After it, the Applications that changed give the write branch (`base:write`, its template
//! rendered with Argo CD Image Updater's fields and cut to 255 characters, or the pull-request
//! head branch); the commit message is their Argo CD template's (the operation renders it).
//! When every one of them asks for a pull request, [`pull_request`] gives the request the Job
//! opens from that head branch (its title, body and labels).

use std::collections::BTreeSet;

use image_update_forge::{Options, Provider, WhenNothingToDo};

use super::pull_request::PullRequestSettings;
use crate::argocd::catalog::GitScope;
use crate::argocd::plan::AppDestination;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::git_repository::same_repository;
use crate::operation::{self, UpdateConfig};
use crate::outcome::{AppPullRequest, AppWriteBack, GitWriteBack, Outcome, RequestProvider};

/// The one repository and base branch the git write-back of the Applications in the policy
/// files goes to (`None` when none writes back to git), for a Job given no `--url`: the first
/// Application's destination, which every other one shares.
///
/// # Errors
/// Unreadable policy files, invalid Argo CD objects, Applications that name different
/// repositories or base branches (each at its file, line and column).
pub(crate) fn destination(update: &UpdateConfig) -> Result<Option<AppDestination>, Error> {
    let found = operation::argocd_destinations(update)?;
    let Some(first) = found.first() else {
        return Ok(None);
    };
    let differs = |what: &str, whats: &str, hint: &str, value: &dyn Fn(usize) -> String| {
        let diagnostics = found
            .iter()
            .enumerate()
            .map(|(i, d)| {
                Diagnostic::error(format!(
                    "Application {} writes back to {what} {}, but one Job run pushes to one",
                    d.app,
                    value(i)
                ))
                .at(d.location.clone())
                .with_hint(hint.to_owned())
            })
            .collect();
        Error::invalid_with(
            format!("the Argo CD Applications write back to different {whats}; nothing was cloned"),
            diagnostics,
        )
    };
    if found
        .iter()
        .any(|d| !same_repository(&d.repository, &first.repository))
    {
        return Err(differs(
            "repository",
            "repositories",
            "run one Job per repository (each with the Applications that write to it), or give --url",
            &|i| found[i].repository.clone(),
        ));
    }
    if found.iter().any(|d| d.checkout != first.checkout) {
        return Err(differs(
            "base branch",
            "base branches",
            "give --branch, or the same git-branch (gitConfig.branch) to every Application",
            &|i| {
                found[i]
                    .checkout
                    .clone()
                    .unwrap_or_else(|| "(the default branch)".to_owned())
            },
        ));
    }
    Ok(Some(first.clone()))
}

/// Where the repository URL of `destination` comes from, for messages: `FILE:LINE:COL: the
/// repository Argo CD Application NS/NAME writes back to`.
#[must_use]
pub(crate) fn origin(destination: &AppDestination) -> String {
    format!(
        "{}: the repository Argo CD Application {} writes back to",
        destination.location, destination.app
    )
}

/// The base branch the Applications of the policy files that write to `url` agree on, for a Job
/// given `--url` but no branch (`None`: none writes to `url`, or they disagree).
///
/// # Errors
/// Unreadable policy files, invalid Argo CD objects.
pub(crate) fn checkout_for(update: &UpdateConfig, url: &str) -> Result<Option<String>, Error> {
    let found = operation::argocd_destinations(update)?;
    let mut branches = found
        .iter()
        .filter(|d| same_repository(&d.repository, url))
        .map(|d| d.checkout.clone());
    let Some(first) = branches.next() else {
        return Ok(None);
    };
    Ok(branches.all(|b| b == first).then_some(first).flatten())
}

/// The Applications that changed and write back to git, with their git plans.
fn changed_git(outcome: &Outcome) -> Vec<(&AppWriteBack, &GitWriteBack)> {
    outcome
        .argocd
        .iter()
        .filter(|a| a.changes_images)
        .filter_map(|a| a.git.as_ref().map(|g| (a, g)))
        .collect()
}

/// `update` limited to the Applications that write back to git in the repository at `url` and
/// the branch `branch` that was cloned (`default_branch`: as the remote's default branch); the
/// others are left alone with a warning (one Job per repository and branch, as Argo CD Image
/// Updater writes each Application to its own). With `own_branches` (no `--push-branch` or
/// `--pull-request`), the Applications that push to different branches (the base branch, a
/// write branch, a request's head) are written back one branch a run.
#[must_use]
pub(crate) fn scoped(
    update: &UpdateConfig,
    url: &str,
    branch: Option<&str>,
    default_branch: bool,
    own_branches: bool,
) -> UpdateConfig {
    let mut scoped = update.clone();
    scoped.argocd.git_scope = Some(GitScope {
        repository: url.to_owned(),
        branch: branch.map(str::to_owned),
        default_branch,
        own_branches,
    });
    scoped
}

/// The branch the Argo CD write-back of `outcome` pushes to: the Applications' rendered write
/// branch (`base:write`) or pull-request head branch; `None` when they push back to the base
/// branch, or none writes back to git.
///
/// # Errors
/// Applications that changed and push to different branches.
pub(crate) fn write_branch(outcome: &Outcome) -> Result<Option<String>, Error> {
    let git = changed_git(outcome);
    let branches: BTreeSet<Option<&str>> = git.iter().map(|(_, g)| g.push.as_deref()).collect();
    if branches.len() > 1 {
        let each: Vec<String> = git
            .iter()
            .map(|(a, g)| {
                format!(
                    "{} to {}",
                    a.app,
                    g.push.as_deref().unwrap_or("its base branch")
                )
            })
            .collect();
        return Err(Error::invalid(vec![
            Diagnostic::error(format!(
                "the Argo CD Applications that changed push to different branches ({}); one Job \
                 run pushes one commit to one branch, so nothing was pushed",
                each.join(", ")
            ))
            .with_hint(
                "give --push-branch, or the same write branch template to every Application",
            ),
        ]));
    }
    Ok(branches.into_iter().next().flatten().map(str::to_owned))
}

/// The request the Argo CD Applications that changed ask for: `Some` when every one of them
/// sets `gitConfig.pullRequest` (they share the head branch `image-updater-TARGETKEY-SHA256`).
#[derive(Debug, Clone)]
pub(crate) struct ArgoRequest {
    /// The provider the first Application names (a `--forge` flag wins over it).
    pub provider: Provider,
    /// The head branch, the title (the commit message's first line), the body (the rest of
    /// it, or a line naming the Applications) and the labels of every Application.
    pub settings: PullRequestSettings,
}

/// The request of `outcome`'s Argo CD Applications, when every one that changed and writes back
/// to git asks for one.
///
/// # Errors
/// Applications that changed and push to different branches.
pub(crate) fn pull_request(outcome: &Outcome) -> Result<Option<ArgoRequest>, Error> {
    let git = changed_git(outcome);
    let requests: Vec<&AppPullRequest> = git
        .iter()
        .filter_map(|(_, g)| g.pull_request.as_ref())
        .collect();
    if git.is_empty() || requests.len() != git.len() {
        return Ok(None);
    }
    let Some(head) = write_branch(outcome)? else {
        return Ok(None);
    };
    let mut labels: Vec<String> = Vec::new();
    for label in requests.iter().flat_map(|r| &r.labels) {
        if !labels.contains(label) {
            labels.push(label.clone());
        }
    }
    let apps: Vec<String> = git.iter().map(|(a, _)| a.app.to_string()).collect();
    let (noun, names) = match apps.as_slice() {
        [one] => ("Application", one.clone()),
        _ => ("Applications", apps.join(", ")),
    };
    // The rest of the commit message after its first line; without one, a line naming the
    // Applications, as a quoted string (a JSON string is a Go string literal) so that nothing in
    // a name is read as template syntax.
    let fallback = serde_json::Value::from(format!(
        "Opened by image-update for the Argo CD {noun} {names}."
    ));
    let body = format!(
        "{{{{ $parts := splitn \"\\n\" 2 .CommitMessage }}}}{{{{ with trim $parts._1 }}}}{{{{ . }}}}\
         {{{{ else }}}}{{{{ {fallback} }}}}{{{{ end }}}}"
    );
    let provider = match requests.first().map(|r| r.provider) {
        Some(RequestProvider::GitLab) => Provider::GitLab,
        Some(RequestProvider::GitHub) => Provider::GitHub,
        None => return Ok(None),
    };
    Ok(Some(ArgoRequest {
        provider,
        settings: PullRequestSettings {
            branch: Some(head),
            title: None,
            body: Some(body),
            options: Options {
                labels,
                ..Options::default()
            },
            when_nothing_to_do: WhenNothingToDo::default(),
        },
    }))
}

/// Warnings for what the Job does not do that the Applications ask for: opening a pull request,
/// when `--push-branch` (`push_branch`) sends the commit elsewhere or no token for the forge's
/// API was found.
#[must_use]
pub(crate) fn warnings(outcome: &Outcome, push_branch: Option<&str>) -> Vec<Diagnostic> {
    changed_git(outcome)
        .into_iter()
        .filter(|(_, g)| g.pull_request.is_some())
        .map(|(a, g)| {
            Diagnostic::warning(match push_branch {
                Some(branch) => format!(
                    "Application {} asks for a pull request: --push-branch sends the commit to \
                     {branch} instead, and none is opened",
                    a.app
                ),
                None => format!(
                    "Application {} asks for a pull request, but no token for the forge's API was \
                     found (IMAGE_UPDATE_FORGE_TOKEN, a GitHub App, or the git token): the Job \
                     pushes its head branch {} and opens none",
                    a.app,
                    g.push.as_deref().unwrap_or_default()
                ),
            })
        })
        .collect()
}
