//! What the Job checks out: a ref of the git crate, or the newest tag in a
//! semver range, chosen from the remote's tags when the Job runs. (Not to
//! be confused with an automation's `spec.sourceRef`, which names the
//! GitRepository.)

/// What to check out: a GitRepository's `spec.ref`, an automation's
/// `spec.git.checkout.ref`, or the Job's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CheckoutTarget {
    /// A branch, tag, commit or ref name (or the default branch).
    Checkout(image_update_git::CheckoutRef),
    /// The tag with the highest version in this Masterminds range, chosen
    /// from the remote's tags when the Job runs.
    Semver(String),
}

impl std::fmt::Display for CheckoutTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckoutTarget::Checkout(reference) => reference.fmt(f),
            CheckoutTarget::Semver(range) => write!(f, "the newest tag in semver range `{range}`"),
        }
    }
}

impl CheckoutTarget {
    /// Whether a checkout of this ref sits on a branch a push can go back
    /// to (a tag, a semver tag, a bare commit or another ref need a push
    /// branch).
    #[must_use]
    pub(crate) fn has_branch(&self) -> bool {
        use image_update_git::CheckoutRef;
        match self {
            CheckoutTarget::Checkout(reference) => matches!(
                reference.normalized(),
                CheckoutRef::DefaultBranch
                    | CheckoutRef::Branch(_)
                    | CheckoutRef::Commit {
                        branch: Some(_),
                        ..
                    }
            ),
            CheckoutTarget::Semver(_) => false,
        }
    }
}

/// What a Flux `GitRepositoryRef` checks out (Flux's precedence: commit,
/// name, semver, tag, branch); `None` when it names nothing.
#[must_use]
pub(crate) fn from_git_ref(git_ref: &crate::automation::GitRef) -> Option<CheckoutTarget> {
    use image_update_git::CheckoutRef;
    Some(if let Some(id) = &git_ref.commit {
        CheckoutTarget::Checkout(CheckoutRef::Commit {
            id: id.clone(),
            branch: git_ref.branch.clone(),
        })
    } else if let Some(name) = &git_ref.name {
        CheckoutTarget::Checkout(CheckoutRef::Name(name.clone()))
    } else if let Some(range) = &git_ref.semver {
        CheckoutTarget::Semver(range.clone())
    } else if let Some(tag) = &git_ref.tag {
        CheckoutTarget::Checkout(CheckoutRef::Tag(tag.clone()))
    } else if let Some(branch) = &git_ref.branch {
        CheckoutTarget::Checkout(CheckoutRef::Branch(branch.clone()))
    } else {
        return None;
    })
}
