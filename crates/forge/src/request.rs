//! Opening or updating the one request for a head and a base, whatever the provider.
//!
//! The flow, the same on every provider:
//!
//! 1. **Look up** the requests from `head` into `base` (one call): an open one wins; else the
//!    newest closed one that was not merged; merged ones are history.
//! 2. **Open**: update its title and body when they differ (one call, none when equal), add the
//!    configured labels it lacks (one call, none when it has them all; GitLab adds them in the
//!    update itself) and the assignees it lacks. Reviewers and auto-merge are asked for only when
//!    the request is created or reopened, so that a person's choice (a dismissed review request,
//!    auto-merge turned off) is not undone every run.
//! 3. **Closed, not merged**: reopen it with the new title and body (a person closed it, the
//!    automation has something new to propose, and the discussion stays in one place). When the
//!    provider refuses to reopen it (GitHub does after the head branch was force-pushed), open a
//!    new one.
//! 4. **None**: create it (draft if asked), then labels, assignees, reviewers and auto-merge.
//!    When the provider answers that a request for this head and base already exists (another
//!    run created it between the look-up and the creation), look it up again and update it: a
//!    race is a success, never a second request.
//!
//! When a run has nothing to do, the open request is left as it is, or closed with a comment.

use crate::error::Error;
use crate::remote::Provider;

/// What a request should say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Proposal {
    /// The branch holding the change (pushed before the request is opened).
    pub head: String,
    /// The branch the change is proposed for.
    pub base: String,
    /// The title (cut to the provider's limit).
    pub title: String,
    /// The body, Markdown (cut to the provider's limit).
    pub body: String,
}

/// How to merge when auto-merge is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeMethod {
    /// A merge commit.
    Merge,
    /// One squashed commit.
    Squash,
    /// The commits rebased onto the base.
    Rebase,
}

impl MergeMethod {
    /// Parses `merge`, `squash` or `rebase`.
    ///
    /// # Errors
    /// Any other word.
    pub fn parse(word: &str) -> Result<MergeMethod, Error> {
        match word.trim().to_ascii_lowercase().as_str() {
            "merge" => Ok(MergeMethod::Merge),
            "squash" => Ok(MergeMethod::Squash),
            "rebase" => Ok(MergeMethod::Rebase),
            _ => Err(Error::config(format!(
                "unknown merge method `{word}` (expected merge, squash or rebase)"
            ))),
        }
    }
}

/// What else a request carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Labels to add (created by the provider when missing on GitHub and GitLab; on Gitea and
    /// Forgejo they must exist in the repository or its organisation).
    pub labels: Vec<String>,
    /// User names to assign.
    pub assignees: Vec<String>,
    /// User names asked for a review (when the request is created or reopened).
    pub reviewers: Vec<String>,
    /// Team names asked for a review (GitHub team slugs, Gitea/Forgejo team names).
    pub team_reviewers: Vec<String>,
    /// Open it as a draft (GitHub's draft flag; GitLab's `Draft:` and Gitea's `WIP:` title
    /// prefix).
    pub draft: bool,
    /// Merge it once the checks pass (GitHub's auto-merge, GitLab's "merge when pipeline
    /// succeeds", Gitea's "merge when checks succeed"), asked when created or reopened.
    pub auto_merge: Option<MergeMethod>,
}

/// What a run did to the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A new request.
    Created,
    /// The open request was changed (title, body, labels or assignees).
    Updated,
    /// The open request already said all this.
    Unchanged,
    /// A closed request was reopened (and updated).
    Reopened,
    /// The open request was closed with a comment (nothing to do, by option).
    Closed,
}

impl Action {
    /// `created`, `updated`, `unchanged`, `reopened` or `closed`: the value of the status's
    /// `pullRequest.action`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Reopened => "reopened",
            Action::Closed => "closed",
        }
    }
}

/// The request a run left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequest {
    /// Its web page.
    pub url: String,
    /// Its number (GitLab's `iid`, the number shown as `!N`).
    pub number: u64,
    /// What this run did.
    pub action: Action,
    /// What failed after the request was opened or updated (a label, an assignee, a reviewer,
    /// auto-merge): the request is there, these are worth a warning, not a failed run.
    pub warnings: Vec<String>,
}

/// What a run with nothing to do does with the open request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum WhenNothingToDo {
    /// Leave it as it is (the default).
    #[default]
    Leave,
    /// Close it, with this comment first.
    Close {
        /// The comment (Markdown).
        comment: String,
    },
}

/// A request as a provider describes it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Found {
    pub number: u64,
    pub url: String,
    pub state: State,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    /// GitHub's GraphQL id (auto-merge).
    pub node_id: String,
    /// GitLab's user ids of the assignees and reviewers (its API takes ids, not names).
    pub assignee_ids: Vec<u64>,
    pub reviewer_ids: Vec<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum State {
    #[default]
    Open,
    Closed,
    Merged,
}

/// The answer to a creation.
pub(crate) enum Created {
    New(Box<Found>),
    /// The provider says a request for this head and base is already open.
    AlreadyExists,
}

/// The answer to an update.
pub(crate) enum Edited {
    Done,
    /// The provider refused to reopen the request.
    ReopenRefused,
}

/// What a title and body edit changes.
pub(crate) struct Edit<'a> {
    pub title: Option<&'a str>,
    pub body: Option<&'a str>,
    pub reopen: bool,
    /// Labels to add in the same call, where the provider can (GitLab).
    pub add_labels: &'a [String],
}

/// One provider's calls.
pub(crate) trait Api: Send + Sync {
    /// The request from `head` into `base`: an open one, else the newest closed unmerged one.
    fn find(&self, head: &str, base: &str) -> Result<Option<Found>, Error>;
    /// The open request from `head` into `base`, after the provider said one exists.
    fn find_open(&self, head: &str, base: &str) -> Result<Option<Found>, Error> {
        Ok(self
            .find(head, base)?
            .filter(|found| found.state == State::Open))
    }
    fn create(&self, proposal: &Proposal, options: &Options) -> Result<Created, Error>;
    fn edit(&self, found: &Found, edit: &Edit<'_>) -> Result<Edited, Error>;
    /// Whether [`Api::edit`] adds labels itself.
    fn edit_adds_labels(&self) -> bool {
        false
    }
    /// Whether [`Api::create`] sets the labels itself.
    fn create_sets_labels(&self) -> bool {
        false
    }
    /// Whether [`Api::create`] sets the assignees itself.
    fn create_sets_assignees(&self) -> bool {
        false
    }
    fn add_labels(&self, found: &Found, labels: &[String]) -> Result<(), Error>;
    fn add_assignees(&self, found: &Found, assignees: &[String]) -> Result<(), Error>;
    fn request_reviewers(
        &self,
        found: &Found,
        users: &[String],
        teams: &[String],
    ) -> Result<(), Error>;
    fn auto_merge(&self, found: &Found, method: MergeMethod) -> Result<(), Error>;
    fn comment(&self, found: &Found, body: &str) -> Result<(), Error>;
    fn close(&self, found: &Found) -> Result<(), Error>;
}

/// Title and body limits, in characters.
pub(crate) fn limits(provider: Provider) -> (usize, usize) {
    match provider {
        // GitHub: 256-character titles, 65,536-character bodies.
        Provider::GitHub => (256, 65_536),
        // GitLab: 255-character titles, 1,048,576-character descriptions.
        Provider::GitLab => (255, 1_048_576),
        // Gitea and Forgejo: 255-character titles; bodies are kept to GitHub's size.
        Provider::Gitea | Provider::Forgejo => (255, 65_536),
    }
}

/// The draft prefix a provider reads in titles.
pub(crate) fn draft_prefix(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::GitHub => None,
        Provider::GitLab => Some("Draft: "),
        Provider::Gitea | Provider::Forgejo => Some("WIP: "),
    }
}

/// A title without a draft prefix a provider recognises.
pub(crate) fn strip_draft(provider: Provider, title: &str) -> &str {
    let prefixes: &[&str] = match provider {
        Provider::GitHub => &[],
        Provider::GitLab => &["Draft:", "[Draft]", "(Draft)", "Draft -", "WIP:", "[WIP]"],
        Provider::Gitea | Provider::Forgejo => &["WIP:", "[WIP]"],
    };
    let trimmed = title.trim_start();
    for prefix in prefixes {
        if trimmed.len() >= prefix.len()
            && trimmed.is_char_boundary(prefix.len())
            && trimmed[..prefix.len()].eq_ignore_ascii_case(prefix)
        {
            return trimmed[prefix.len()..].trim_start();
        }
    }
    title
}

/// Text as the providers store it: line ends as `\n`, no trailing white space.
pub(crate) fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n").trim_end().to_owned()
}

/// `text` cut to `max` characters, ending with `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The entries of `wanted` that `have` lacks (case-insensitively), without repeats.
pub(crate) fn missing(wanted: &[String], have: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in wanted {
        let w = w.trim();
        if w.is_empty()
            || have.iter().any(|h| h.eq_ignore_ascii_case(w))
            || out.iter().any(|o| o.eq_ignore_ascii_case(w))
        {
            continue;
        }
        out.push(w.to_owned());
    }
    out
}

/// Runs the flow of the module's documentation.
pub(crate) fn open_or_update(
    api: &dyn Api,
    provider: Provider,
    proposal: &Proposal,
    options: &Options,
) -> Result<PullRequest, Error> {
    let (title_max, body_max) = limits(provider);
    let proposal = Proposal {
        head: proposal.head.clone(),
        base: proposal.base.clone(),
        title: cut(
            proposal.title.lines().next().unwrap_or("").trim(),
            title_max,
        ),
        body: cut(&proposal.body, body_max),
    };
    if proposal.title.is_empty() {
        return Err(Error::config(format!(
            "the {} title is empty",
            provider.request_noun()
        )));
    }
    if proposal.head == proposal.base {
        return Err(Error::config(format!(
            "the head branch and the base branch are both `{}`: a {} needs two branches",
            proposal.head,
            provider.request_noun()
        )));
    }
    match api.find(&proposal.head, &proposal.base)? {
        Some(found) if found.state == State::Open => {
            update(api, provider, &found, &proposal, options, false)?
                .ok_or_else(|| Error::config("an open request cannot refuse to reopen"))
        }
        Some(closed) => match update(api, provider, &closed, &proposal, options, true)? {
            Some(pr) => Ok(pr),
            None => create(api, provider, &proposal, options),
        },
        None => create(api, provider, &proposal, options),
    }
}

fn create(
    api: &dyn Api,
    provider: Provider,
    proposal: &Proposal,
    options: &Options,
) -> Result<PullRequest, Error> {
    let mut proposal_draft = proposal.clone();
    if options.draft
        && let Some(prefix) = draft_prefix(provider)
    {
        proposal_draft.title = cut(&format!("{prefix}{}", proposal.title), limits(provider).0);
    }
    match api.create(&proposal_draft, options)? {
        Created::New(found) => {
            let mut warnings = Vec::new();
            if !api.create_sets_labels() {
                let labels = missing(&options.labels, &found.labels);
                if !labels.is_empty() {
                    soft(api.add_labels(&found, &labels), &mut warnings);
                }
            }
            if !api.create_sets_assignees() {
                let assignees = missing(&options.assignees, &found.assignees);
                if !assignees.is_empty() {
                    soft(api.add_assignees(&found, &assignees), &mut warnings);
                }
            }
            after_opening(api, &found, options, &mut warnings);
            Ok(PullRequest {
                url: found.url,
                number: found.number,
                action: Action::Created,
                warnings,
            })
        }
        Created::AlreadyExists => {
            let Some(found) = api.find_open(&proposal.head, &proposal.base)? else {
                return Err(Error::new(
                    crate::error::ErrorKind::Rejected,
                    None,
                    format!(
                        "{} says a {} from `{}` into `{}` already exists, but none is open",
                        provider,
                        provider.request_noun(),
                        proposal.head,
                        proposal.base
                    ),
                ));
            };
            update(api, provider, &found, proposal, options, false)?
                .ok_or_else(|| Error::config("an open request cannot refuse to reopen"))
        }
    }
}

/// Updates `found`; `None` when reopening was refused.
fn update(
    api: &dyn Api,
    provider: Provider,
    found: &Found,
    proposal: &Proposal,
    options: &Options,
    reopen: bool,
) -> Result<Option<PullRequest>, Error> {
    let current_title = strip_draft(provider, &found.title);
    let title = if normalise(current_title) == normalise(&proposal.title) {
        None
    } else if current_title.len() != found.title.len() {
        // Keep the draft prefix a request still has; a person who removed it decided.
        let prefix = found.title[..found.title.len() - current_title.len()].trim();
        Some(cut(
            &format!("{prefix} {}", proposal.title),
            limits(provider).0,
        ))
    } else {
        Some(proposal.title.clone())
    };
    let body = (normalise(&found.body) != normalise(&proposal.body)).then(|| proposal.body.clone());
    let labels = missing(&options.labels, &found.labels);
    let edit_labels: &[String] = if api.edit_adds_labels() { &labels } else { &[] };
    let mut changed = false;
    if reopen || title.is_some() || body.is_some() || !edit_labels.is_empty() {
        let edit = Edit {
            title: title.as_deref(),
            body: body.as_deref(),
            reopen,
            add_labels: edit_labels,
        };
        match api.edit(found, &edit)? {
            Edited::Done => changed = true,
            Edited::ReopenRefused => return Ok(None),
        }
    }
    let mut warnings = Vec::new();
    if !labels.is_empty() && !api.edit_adds_labels() {
        changed |= soft(api.add_labels(found, &labels), &mut warnings);
    }
    let assignees = missing(&options.assignees, &found.assignees);
    if !assignees.is_empty() {
        changed |= soft(api.add_assignees(found, &assignees), &mut warnings);
    }
    if reopen {
        after_opening(api, found, options, &mut warnings);
    }
    let action = if reopen {
        Action::Reopened
    } else if changed {
        Action::Updated
    } else {
        Action::Unchanged
    };
    Ok(Some(PullRequest {
        url: found.url.clone(),
        number: found.number,
        action,
        warnings,
    }))
}

/// Reviewers and auto-merge, asked when a request is created or reopened.
fn after_opening(api: &dyn Api, found: &Found, options: &Options, warnings: &mut Vec<String>) {
    let users = missing(&options.reviewers, &[]);
    let teams = missing(&options.team_reviewers, &[]);
    if !users.is_empty() || !teams.is_empty() {
        soft(api.request_reviewers(found, &users, &teams), warnings);
    }
    if let Some(method) = options.auto_merge {
        soft(api.auto_merge(found, method), warnings);
    }
}

/// A call made once the request exists: its failure becomes a warning. Whether it succeeded.
fn soft(result: Result<(), Error>, warnings: &mut Vec<String>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => {
            warnings.push(e.to_string());
            false
        }
    }
}

/// Closes the open request with a comment, or leaves it, as `when` says.
pub(crate) fn nothing_to_do(
    api: &dyn Api,
    head: &str,
    base: &str,
    when: &WhenNothingToDo,
) -> Result<Option<PullRequest>, Error> {
    let Some(found) = api.find(head, base)? else {
        return Ok(None);
    };
    if found.state != State::Open {
        return Ok(None);
    }
    let action = match when {
        WhenNothingToDo::Leave => Action::Unchanged,
        WhenNothingToDo::Close { comment } => {
            if !comment.trim().is_empty() {
                api.comment(&found, comment)?;
            }
            api.close(&found)?;
            Action::Closed
        }
    };
    Ok(Some(PullRequest {
        url: found.url,
        number: found.number,
        action,
        warnings: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::{cut, missing, normalise, strip_draft};
    use crate::remote::Provider;

    #[test]
    fn text_helpers() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(normalise("a\r\nb \n"), "a\nb");
        assert_eq!(
            missing(
                &["bot".into(), "Images".into(), "bot".into(), " ".into()],
                &["images".into()]
            ),
            vec!["bot".to_owned()]
        );
        assert_eq!(strip_draft(Provider::GitLab, "Draft: x"), "x");
        assert_eq!(strip_draft(Provider::Gitea, "[WIP] x"), "x");
        assert_eq!(strip_draft(Provider::GitHub, "WIP: x"), "WIP: x");
    }
}
