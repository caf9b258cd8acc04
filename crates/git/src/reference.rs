//! What to check out (Flux's `GitRepositoryRef`) and how a checked-out revision is named.

use std::fmt;

use git2::Oid;

/// The ref to clone and check out, as in Flux's `GitRepositoryRef`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CheckoutRef {
    /// The remote's default branch (what its `HEAD` points to).
    #[default]
    DefaultBranch,
    /// A branch name, e.g. `main`.
    Branch(String),
    /// A tag name, e.g. `v1.2.0` (annotated tags are peeled to their commit).
    Tag(String),
    /// A commit id (40 hex digits). With a branch, only that branch's history is fetched and pushes
    /// can go back to it; without, all branches are fetched and HEAD is detached. History is
    /// fetched in full: a commit cannot be reached through a shallow fetch of a branch tip.
    Commit {
        /// The commit id.
        id: String,
        /// The branch the commit is on, when known.
        branch: Option<String>,
    },
    /// A full ref name, e.g. `refs/heads/main`, `refs/tags/v1` or `refs/pull/7/head`.
    Name(String),
}

impl CheckoutRef {
    /// The same ref with `Name("refs/heads/x")` and `Name("refs/tags/x")` turned into
    /// `Branch`/`Tag`, so both spellings behave alike.
    #[must_use]
    pub fn normalized(&self) -> Self {
        match self {
            Self::Name(name) => {
                if let Some(branch) = name.strip_prefix("refs/heads/") {
                    Self::Branch(branch.to_owned())
                } else if let Some(tag) = name.strip_prefix("refs/tags/") {
                    Self::Tag(tag.to_owned())
                } else {
                    self.clone()
                }
            }
            other => other.clone(),
        }
    }

    /// The branch a checkout of this ref sits on, if it is known without asking the remote.
    #[must_use]
    pub fn branch(&self) -> Option<&str> {
        match self {
            Self::Branch(branch) => Some(branch),
            Self::Commit { branch, .. } => branch.as_deref(),
            Self::Name(name) => name.strip_prefix("refs/heads/"),
            Self::DefaultBranch | Self::Tag(_) => None,
        }
    }
}

impl fmt::Display for CheckoutRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DefaultBranch => f.write_str("the default branch"),
            Self::Branch(branch) => write!(f, "branch `{branch}`"),
            Self::Tag(tag) => write!(f, "tag `{tag}`"),
            Self::Commit {
                id,
                branch: Some(branch),
            } => write!(f, "commit {id} on branch `{branch}`"),
            Self::Commit { id, branch: None } => write!(f, "commit {id}"),
            Self::Name(name) => write!(f, "ref `{name}`"),
        }
    }
}

/// A commit together with the branch, tag or ref it was reached through, printed the way Flux
/// prints `observedSourceRevision`: `main@sha1:HEX`, `v1.0.0@sha1:HEX`, `refs/pull/7/head@sha1:HEX`,
/// or `sha1:HEX` for a bare commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// Branch or tag name (short), a full ref name for other refs, or none for a bare commit.
    pub name: Option<String>,
    /// The commit.
    pub id: Oid,
}

impl Revision {
    /// A revision named by `name` (if any) at commit `id`.
    #[must_use]
    pub fn new(name: Option<&str>, id: Oid) -> Self {
        Self {
            name: name.map(str::to_owned),
            id,
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name}@sha1:{}", self.id),
            None => write!(f, "sha1:{}", self.id),
        }
    }
}

/// Parses a full 40-digit commit id.
pub(crate) fn parse_commit_id(id: &str) -> Result<Oid, crate::Error> {
    if id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Oid::from_str(id).map_err(|_| crate::Error::InvalidCommitId {
            commit: id.to_owned(),
        })
    } else {
        Err(crate::Error::InvalidCommitId {
            commit: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use git2::Oid;

    use super::{CheckoutRef, Revision};

    #[test]
    fn revisions_print_like_flux() {
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        assert_eq!(
            Revision::new(Some("main"), id).to_string(),
            "main@sha1:0123456789abcdef0123456789abcdef01234567"
        );
        assert_eq!(
            Revision::new(None, id).to_string(),
            "sha1:0123456789abcdef0123456789abcdef01234567"
        );
    }

    #[test]
    fn full_ref_names_normalize_to_branches_and_tags() {
        assert_eq!(
            CheckoutRef::Name("refs/heads/main".into()).normalized(),
            CheckoutRef::Branch("main".into())
        );
        assert_eq!(
            CheckoutRef::Name("refs/tags/v1".into()).normalized(),
            CheckoutRef::Tag("v1".into())
        );
        let other = CheckoutRef::Name("refs/pull/7/head".into());
        assert_eq!(other.normalized(), other);
    }
}
