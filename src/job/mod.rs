//! The Job: clone a repository, run the update over it, commit, sign and
//! push, as Flux's image-automation-controller does for one
//! ImageUpdateAutomation, in one process and with no `git` binary.
//!
//! ```text
//! JobConfig ──> short-circuit? (--state: configuration hash, ls-remote of
//!               the checkout ref, policies observed without a tree)
//!           ──> clone (shallow) into a fresh temporary directory
//!           ──> operation::run over <clone>/<path>          (one update)
//!           ──> commit (signed) when a field changed
//!           ──> push; lost a race? fetch, reset, re-run the update with
//!               the first run's policy results, commit, push again
//!           ──> Status (stdout JSON, termination message), state file
//! ```
//!
//! A front end (`image-update job`, [`crate::cli::job`]) builds the
//! [`JobConfig`] from flags, the environment and pasted Flux objects
//! ([`flux`]), validating everything once; [`run`] does the work and prints
//! nothing: it reports [`Event`]s as they happen and returns the
//! [`status::Status`]. The work tree is a temporary directory removed when
//! the run ends, however it ends ([`workdir`]).

pub mod flux;
mod run;
pub mod state;
pub mod status;
pub mod workdir;

use std::path::PathBuf;

pub use image_update_git::{Author, CheckoutRef, RemoteSettings, RetryPolicy, Signer};

pub use self::run::{Event, Failure, FailureKind, run};
use crate::operation::UpdateConfig;

/// Everything one Job run needs, validated.
#[derive(Debug)]
pub struct JobConfig {
    /// The repository URL (credentials are never part of it).
    pub url: String,
    /// What to check out.
    pub reference: SourceRef,
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
    /// How often a push that lost a race is retried, and how patiently.
    pub retry: RetryPolicy,
    /// The short-circuit's memory between runs.
    pub state_file: Option<PathBuf>,
    /// The directory the temporary work tree is made in (default: the
    /// system's temporary directory).
    pub work_parent: Option<PathBuf>,
}

/// What to check out: a Flux `GitRepositoryRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    /// A branch, tag, commit or ref name (or the default branch).
    Checkout(CheckoutRef),
    /// The tag with the highest version in this Masterminds range, chosen
    /// from the remote's tags when the job runs.
    Semver(String),
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceRef::Checkout(r) => r.fmt(f),
            SourceRef::Semver(range) => write!(f, "the newest tag in semver range `{range}`"),
        }
    }
}

impl SourceRef {
    /// Whether a checkout of this ref sits on a branch that a push can go
    /// back to (a tag, a semver tag, a commit without a branch or another
    /// ref need a push branch).
    #[must_use]
    pub fn has_branch(&self) -> bool {
        match self {
            SourceRef::Checkout(r) => matches!(
                r.normalized(),
                CheckoutRef::DefaultBranch
                    | CheckoutRef::Branch(_)
                    | CheckoutRef::Commit {
                        branch: Some(_),
                        ..
                    }
            ),
            SourceRef::Semver(_) => false,
        }
    }
}

/// Where the commit goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushSettings {
    /// Push to this branch instead of the checkout branch; when it differs,
    /// it is created from the checked-out commit and force-pushed (Flux).
    pub branch: Option<String>,
    /// Also push this refspec in the same push (Flux's `push.refspec`).
    pub refspec: Option<String>,
    /// Push options (`git push -o`), `KEY=VALUE` or `KEY`.
    pub options: Vec<String>,
}
