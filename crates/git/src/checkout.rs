//! A work tree cloned from a remote at a ref, and the operations the Job performs on it: observe
//! what was checked out, commit every change, push, and fetch-and-reset after a lost race.
//!
//! Fetches name their refspecs explicitly (only the wanted branch or tag, no tags by default,
//! shallow unless told otherwise), so a clone of a large repository transfers one commit's tree.

use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{AutotagOption, IndexAddOption, Oid, RemoteUpdateFlags, Repository, ResetType};

use crate::error::Error;
use crate::reference::{CheckoutRef, Revision, parse_commit_id};
use crate::remote::{CallbackState, Remote, RemoteRef};
use crate::sign::Signer;
use crate::url::Transport;

/// How to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloneOptions {
    /// History depth: `Some(1)` (the default, as Flux's shallow clone) fetches only the tip;
    /// `None` fetches everything. Ignored for commit checkouts and local remotes, which fetch in
    /// full (a commit is not reachable from a shallow tip; libgit2 cannot fetch locally shallow).
    pub depth: Option<u32>,
}

impl Default for CloneOptions {
    fn default() -> Self {
        Self { depth: Some(1) }
    }
}

/// Commit author (also used as committer, as Flux does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// Name.
    pub name: String,
    /// Email address.
    pub email: String,
}

/// A commit time: seconds since the Unix epoch and the UTC offset in minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub seconds: i64,
    /// Offset from UTC in minutes.
    pub offset_minutes: i32,
}

/// Who commits and how, shared by every commit of a run.
#[derive(Debug, Clone, Copy)]
pub struct CommitSettings<'a> {
    /// Author and committer.
    pub author: &'a Author,
    /// Signs the commit when set.
    pub signer: Option<&'a Signer>,
    /// Commit time; `None` is now.
    pub time: Option<Timestamp>,
}

/// When a push overwrites the remote branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForcePush {
    /// Force when pushing to a branch other than the checkout branch (Flux's default,
    /// feature gate `GitForcePushBranch`); fast-forward only otherwise.
    #[default]
    Auto,
    /// Always force.
    Always,
    /// Never force.
    Never,
}

/// What to push besides the current branch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushRequest {
    /// Force policy for the branch.
    pub force: ForcePush,
    /// Extra refspecs pushed in the same push (Flux's `push.refspec`), e.g.
    /// `refs/heads/main:refs/heads/auto`.
    pub refspecs: Vec<String>,
    /// Push options, as `git push -o` (Flux's `push.options`, e.g. `merge_request.create`).
    pub options: Vec<String>,
}

/// A successful push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The commit now at the remote branch.
    pub commit: Oid,
    /// The branch pushed to.
    pub branch: String,
    /// Whether the branch was force-pushed.
    pub forced: bool,
}

/// A cloned work tree.
pub struct Checkout {
    repo: Repository,
    remote: Remote,
    dir: PathBuf,
    reference: CheckoutRef,
    /// The branch the checkout ref resolved to, if any.
    checkout_branch: Option<String>,
    /// The branch HEAD is on now (the checkout branch, or a push branch after `switch_branch`).
    branch: Option<String>,
    /// The commit checked out (after a fetch-and-reset, the tip it reset to).
    checked_out: Oid,
    depth: Option<u32>,
}

impl std::fmt::Debug for Checkout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkout")
            .field("url", &self.remote.url())
            .field("dir", &self.dir)
            .field("reference", &self.reference)
            .field("branch", &self.branch)
            .field("checked_out", &self.checked_out)
            .finish_non_exhaustive()
    }
}

/// What one fetch brought: the advertisement and the remote's default branch.
struct Fetched {
    heads: Vec<RemoteRef>,
    default_branch: Option<String>,
}

impl Fetched {
    fn commit_of(&self, name: &str) -> Option<Oid> {
        let peeled = format!("{name}^{{}}");
        self.heads
            .iter()
            .find(|head| head.name == peeled)
            .or_else(|| self.heads.iter().find(|head| head.name == name))
            .map(|head| head.id)
    }
}

fn local(operation: &'static str) -> impl FnOnce(git2::Error) -> Error {
    move |source| Error::Git { operation, source }
}

impl Checkout {
    /// Clones `reference` from `remote` into `dir` (created if missing; it should be empty) and
    /// checks it out.
    pub fn clone(
        remote: Remote,
        reference: &CheckoutRef,
        dir: &Path,
        options: &CloneOptions,
    ) -> Result<Self, Error> {
        let started = std::time::Instant::now();
        let reference = reference.normalized();
        // libgit2's local transport cannot fetch shallow ("shallow fetch is not supported by the
        // local transport"); local remotes exist for tests only, so they get full history.
        let options = &CloneOptions {
            depth: options
                .depth
                .filter(|_| remote.transport() != Transport::Local),
        };
        fs_err::create_dir_all(dir)?;
        let repo = Repository::init(dir).map_err(local("initialising the repository"))?;
        repo.remote("origin", remote.url())
            .map_err(local("adding remote `origin`"))?;
        let not_found = |name: &str| Error::RefNotFound {
            url: remote.url().to_owned(),
            reference: name.to_owned(),
        };
        let (checkout_branch, target, depth) = match &reference {
            CheckoutRef::DefaultBranch => {
                let fetched = fetch(
                    &repo,
                    &remote,
                    &["+HEAD:refs/remotes/origin/HEAD".to_owned()],
                    options.depth,
                )?;
                let head = fetched.commit_of("HEAD").ok_or_else(|| not_found("HEAD"))?;
                let branch = fetched
                    .default_branch
                    .as_deref()
                    .and_then(|name| name.strip_prefix("refs/heads/"))
                    .ok_or_else(|| not_found("HEAD (the remote's default branch)"))?
                    .to_owned();
                (Some(branch), head, options.depth)
            }
            CheckoutRef::Branch(branch) => {
                let name = format!("refs/heads/{branch}");
                let fetched = fetch(
                    &repo,
                    &remote,
                    &[format!("+{name}:refs/remotes/origin/{branch}")],
                    options.depth,
                )?;
                let tip = fetched.commit_of(&name).ok_or_else(|| not_found(&name))?;
                (Some(branch.clone()), tip, options.depth)
            }
            CheckoutRef::Tag(tag) => {
                let name = format!("refs/tags/{tag}");
                let fetched = fetch(&repo, &remote, &[format!("+{name}:{name}")], options.depth)?;
                let commit = fetched.commit_of(&name).ok_or_else(|| not_found(&name))?;
                (None, commit, options.depth)
            }
            CheckoutRef::Name(name) => {
                let fetched = fetch(&repo, &remote, &[format!("+{name}:{name}")], options.depth)?;
                let commit = fetched.commit_of(name).ok_or_else(|| not_found(name))?;
                (None, commit, options.depth)
            }
            CheckoutRef::Commit { id, branch } => {
                let commit = parse_commit_id(id)?;
                let refspec = match branch {
                    Some(branch) => format!("+refs/heads/{branch}:refs/remotes/origin/{branch}"),
                    None => "+refs/heads/*:refs/remotes/origin/*".to_owned(),
                };
                let fetched = fetch(&repo, &remote, &[refspec], None)?;
                if let Some(branch) = branch {
                    let name = format!("refs/heads/{branch}");
                    fetched.commit_of(&name).ok_or_else(|| not_found(&name))?;
                }
                if repo.find_commit(commit).is_err() {
                    return Err(Error::CommitNotFound {
                        url: remote.url().to_owned(),
                        commit: id.clone(),
                    });
                }
                (branch.clone(), commit, None)
            }
        };
        let fetched_at = started.elapsed();
        {
            let commit = repo
                .find_commit(target)
                .map_err(local("reading the fetched commit"))?;
            match &checkout_branch {
                Some(branch) => {
                    repo.branch(branch, &commit, true)
                        .map_err(local("creating the local branch"))?;
                    repo.set_head(&format!("refs/heads/{branch}"))
                        .map_err(local("setting HEAD"))?;
                }
                None => repo
                    .set_head_detached(target)
                    .map_err(local("setting HEAD"))?,
            }
            repo.checkout_head(Some(CheckoutBuilder::new().force()))
                .map_err(local("checking out the work tree"))?;
        }
        tracing::debug!(
            url = remote.url(),
            %reference,
            commit = %target,
            fetch_ms = fetched_at.as_millis(),
            checkout_ms = (started.elapsed() - fetched_at).as_millis(),
            "cloned"
        );
        Ok(Self {
            repo,
            remote,
            dir: dir.to_owned(),
            reference,
            branch: checkout_branch.clone(),
            checkout_branch,
            checked_out: target,
            depth,
        })
    }

    /// The work tree.
    #[must_use]
    pub fn work_dir(&self) -> &Path {
        &self.dir
    }

    /// The remote this was cloned from.
    #[must_use]
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// The libgit2 repository, for inspection.
    #[must_use]
    pub fn repository(&self) -> &Repository {
        &self.repo
    }

    /// The commit that was checked out (after a fetch-and-reset, the remote tip it reset to).
    #[must_use]
    pub fn checked_out_commit(&self) -> Oid {
        self.checked_out
    }

    /// The branch the checkout ref resolved to (`None` for a tag, a non-branch ref, or a commit
    /// without a branch).
    #[must_use]
    pub fn checkout_branch(&self) -> Option<&str> {
        self.checkout_branch.as_deref()
    }

    /// The branch HEAD is on now: the checkout branch, or the push branch after
    /// [`Checkout::switch_branch`].
    #[must_use]
    pub fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// The current HEAD commit (the checked-out commit, or a commit made since).
    pub fn head(&self) -> Result<Oid, Error> {
        self.repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .map(|commit| commit.id())
            .map_err(local("reading HEAD"))
    }

    /// Flux's `observedSourceRevision` for the checked-out commit: `BRANCH@sha1:HEX`,
    /// `TAG@sha1:HEX`, `REF@sha1:HEX` for other refs, `sha1:HEX` for a bare commit.
    #[must_use]
    pub fn observed_source_revision(&self) -> Revision {
        let name = match &self.reference {
            CheckoutRef::Tag(tag) => Some(tag.as_str()),
            CheckoutRef::Name(name) => Some(name.as_str()),
            CheckoutRef::DefaultBranch | CheckoutRef::Branch(_) | CheckoutRef::Commit { .. } => {
                self.checkout_branch.as_deref()
            }
        };
        Revision::new(name, self.checked_out)
    }

    /// Creates (or resets) the local branch `name` at HEAD and moves HEAD onto it, as Flux does
    /// when the push branch differs from the checkout branch. Call it before committing, so the
    /// checkout branch keeps the checked-out commit.
    pub fn switch_branch(&mut self, name: &str) -> Result<(), Error> {
        if !git2::Branch::name_is_valid(name).unwrap_or(false) {
            return Err(Error::Git {
                operation: "switching branch",
                source: git2::Error::from_str(&format!("`{name}` is not a valid branch name")),
            });
        }
        let head = self
            .repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .map_err(local("reading HEAD"))?;
        self.repo
            .branch(name, &head, true)
            .map_err(local("creating the push branch"))?;
        self.repo
            .set_head(&format!("refs/heads/{name}"))
            .map_err(local("switching to the push branch"))?;
        self.branch = Some(name.to_owned());
        Ok(())
    }

    /// Stages every change in the work tree (modified, added and deleted files; ignored files
    /// stay out) and commits it on HEAD when the tree differs from HEAD's. Returns the new
    /// commit, or `None` when there was nothing to commit.
    pub fn commit(
        &mut self,
        settings: &CommitSettings<'_>,
        message: &str,
    ) -> Result<Option<Oid>, Error> {
        let mut index = self.repo.index().map_err(local("opening the index"))?;
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .map_err(local("staging changes"))?;
        index
            .update_all(["*"], None)
            .map_err(local("staging deletions"))?;
        index.write().map_err(local("writing the index"))?;
        let tree_id = index.write_tree().map_err(local("writing the tree"))?;
        let parent = self
            .repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .map_err(local("reading HEAD"))?;
        if parent.tree_id() == tree_id {
            return Ok(None);
        }
        let tree = self
            .repo
            .find_tree(tree_id)
            .map_err(local("reading the tree"))?;
        let time = match settings.time {
            Some(time) => git2::Time::new(time.seconds, time.offset_minutes),
            None => git2::Time::new(now_seconds(), 0),
        };
        let signature = git2::Signature::new(&settings.author.name, &settings.author.email, &time)
            .map_err(local("building the author signature"))?;
        let id = match settings.signer {
            None => self
                .repo
                .commit(None, &signature, &signature, message, &tree, &[&parent])
                .map_err(local("writing the commit"))?,
            Some(signer) => {
                let buffer = self
                    .repo
                    .commit_create_buffer(&signature, &signature, message, &tree, &[&parent])
                    .map_err(local("building the commit"))?;
                let content = buffer.as_str().map_err(local("building the commit"))?;
                let armored = signer.sign(&buffer)?;
                self.repo
                    .commit_signed(content, &armored, Some("gpgsig"))
                    .map_err(local("writing the signed commit"))?
            }
        };
        self.move_head(id, message)?;
        Ok(Some(id))
    }

    fn move_head(&self, id: Oid, message: &str) -> Result<(), Error> {
        let summary = message.lines().next().unwrap_or_default();
        match &self.branch {
            Some(branch) => {
                self.repo
                    .reference(
                        &format!("refs/heads/{branch}"),
                        id,
                        true,
                        &format!("commit: {summary}"),
                    )
                    .map_err(local("updating the branch"))?;
            }
            None => self
                .repo
                .set_head_detached(id)
                .map_err(local("updating HEAD"))?,
        }
        Ok(())
    }

    /// Pushes HEAD's branch (and `request.refspecs`) once. Every ref status the server reports
    /// is checked: a non-fast-forward or "fetch first" is [`Error::NonFastForward`], any other
    /// refusal is [`Error::PushRejected`] with the server's reason and messages.
    pub fn push(&mut self, request: &PushRequest) -> Result<Pushed, Error> {
        let branch = self.branch.clone().ok_or_else(|| Error::NoPushBranch {
            checkout: self.reference.to_string(),
        })?;
        let forced = match request.force {
            ForcePush::Auto => self.checkout_branch.as_deref() != Some(branch.as_str()),
            ForcePush::Always => true,
            ForcePush::Never => false,
        };
        let target = format!("refs/heads/{branch}");
        let mut refspecs = vec![format!(
            "{}{target}:{target}",
            if forced { "+" } else { "" }
        )];
        refspecs.extend(request.refspecs.iter().cloned());
        let commit = self.head()?;
        let mut remote = self
            .repo
            .remote_anonymous(self.remote.url())
            .map_err(local("preparing the push"))?;
        let state = CallbackState::new(&self.remote);
        let mut options = self.remote.push_options(&state, &request.options);
        let result = remote.push(&refspecs, Some(&mut options));
        let server_messages = state.server_messages.borrow().trim().to_owned();
        if let Err(err) = result {
            if err.code() == git2::ErrorCode::NotFastForward {
                return Err(Error::NonFastForward {
                    url: self.remote.url().to_owned(),
                    reference: target,
                    reason: err.message().to_owned(),
                });
            }
            return Err(self.remote.map_error(&state, "push to", err));
        }
        for (reference, status) in state.push_statuses.borrow().iter() {
            let Some(status) = status else { continue };
            let url = self.remote.url().to_owned();
            let reference = reference.clone();
            let reason = status.clone();
            if is_non_fast_forward(status) {
                return Err(Error::NonFastForward {
                    url,
                    reference,
                    reason,
                });
            }
            return Err(Error::PushRejected {
                url,
                reference,
                reason,
                server_messages,
            });
        }
        tracing::debug!(url = self.remote.url(), %branch, %commit, forced, "pushed");
        Ok(Pushed {
            commit,
            branch,
            forced,
        })
    }

    /// Fetches the remote tip of HEAD's branch (same depth as the clone) and resets the work
    /// tree to it: tracked changes are discarded and untracked files removed (ignored files
    /// stay). Returns the tip. Used after a push lost a race.
    pub fn fetch_and_reset(&mut self) -> Result<Oid, Error> {
        let branch = self.branch.clone().ok_or_else(|| Error::NoPushBranch {
            checkout: self.reference.to_string(),
        })?;
        let tip = self
            .fetch_branch(&branch)?
            .ok_or_else(|| Error::RefNotFound {
                url: self.remote.url().to_owned(),
                reference: format!("refs/heads/{branch}"),
            })?;
        let object = self
            .repo
            .find_object(tip, None)
            .map_err(local("reading the fetched tip"))?;
        let mut checkout = CheckoutBuilder::new();
        checkout.force().remove_untracked(true);
        self.repo
            .reset(&object, ResetType::Hard, Some(&mut checkout))
            .map_err(local("resetting to the fetched tip"))?;
        self.checked_out = tip;
        Ok(tip)
    }

    /// The tree of the remote branch `branch`'s tip, fetched (same depth as the clone) into
    /// `refs/remotes/origin/BRANCH`; `None` when the remote has no such branch. A pull request's
    /// head branch that already holds the tree about to be pushed needs no push (a new commit
    /// would only restart the request's checks).
    pub fn remote_tree(&mut self, branch: &str) -> Result<Option<Oid>, Error> {
        let Some(tip) = self.fetch_branch(branch)? else {
            return Ok(None);
        };
        let commit = self
            .repo
            .find_commit(tip)
            .map_err(local("reading the remote branch's tip"))?;
        Ok(Some(commit.tree_id()))
    }

    /// Fetches the remote branch `branch` (same depth as the clone) into
    /// `refs/remotes/origin/BRANCH`; its tip, `None` when the remote has no such branch.
    fn fetch_branch(&self, branch: &str) -> Result<Option<Oid>, Error> {
        let name = format!("refs/heads/{branch}");
        let fetched = fetch(
            &self.repo,
            &self.remote,
            &[format!("+{name}:refs/remotes/origin/{branch}")],
            self.depth,
        )?;
        Ok(fetched.commit_of(&name))
    }

    /// The tree of HEAD's commit.
    pub fn head_tree(&self) -> Result<Oid, Error> {
        self.repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .map(|commit| commit.tree_id())
            .map_err(local("reading HEAD"))
    }
}

/// Fetches `refspecs` (with `depth`), updates the local refs they name, and returns what the
/// remote advertised.
fn fetch(
    repo: &Repository,
    remote: &Remote,
    refspecs: &[String],
    depth: Option<u32>,
) -> Result<Fetched, Error> {
    let mut git_remote = repo
        .remote_anonymous(remote.url())
        .map_err(local("preparing the fetch"))?;
    let state = CallbackState::new(remote);
    let mut options = remote.fetch_options(&state, depth);
    git_remote
        .download(refspecs, Some(&mut options))
        .map_err(|err| remote.map_error(&state, "fetch from", err))?;
    let heads = git_remote
        .list()
        .map_err(|err| remote.map_error(&state, "fetch from", err))?
        .iter()
        .map(|head| RemoteRef {
            name: head.name().to_owned(),
            id: head.oid(),
            symref_target: head.symref_target().map(str::to_owned),
        })
        .collect();
    let default_branch = git_remote
        .default_branch()
        .ok()
        .and_then(|buf| buf.as_str().ok().map(str::to_owned));
    git_remote
        .update_tips(
            None,
            RemoteUpdateFlags::UPDATE_FETCHHEAD,
            AutotagOption::None,
            Some("fetch"),
        )
        .map_err(local("updating refs after the fetch"))?;
    let _ = git_remote.disconnect();
    Ok(Fetched {
        heads,
        default_branch,
    })
}

/// The statuses git servers and libgit2 use for a push that lost a race.
fn is_non_fast_forward(status: &str) -> bool {
    let status = status.to_ascii_lowercase();
    status.contains("non-fast-forward")
        || status.contains("fetch first")
        || status.contains("stale info")
}

fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::is_non_fast_forward;

    #[test]
    fn race_statuses_are_recognised() {
        assert!(is_non_fast_forward("non-fast-forward"));
        assert!(is_non_fast_forward("fetch first"));
        assert!(!is_non_fast_forward("pre-receive hook declined"));
        assert!(!is_non_fast_forward("deny updating a hidden ref"));
    }
}
