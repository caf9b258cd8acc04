//! The kinds of failure that end a run, and the exit status of each: the one
//! place where a failure becomes a number (the process's exit status, a Job
//! `podFailurePolicy`'s `onExitCodes`) or a word (the Job status's
//! `error.kind`). The README's exit status tables document these values.
//!
//! A leaf: it imports nothing of the crate.

/// The exit status of a run that succeeded (with or without changes).
pub(crate) const EXIT_SUCCESS: u8 = 0;

/// The exit status of `--check` when it found changes to make (not a
/// failure: the run did what it was asked).
pub(crate) const EXIT_CHANGES_PENDING: u8 = 3;

/// Why a run failed, as its exit status and its status's `error.kind` tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// A usage mistake or configuration that cannot work: a retry cannot
    /// fix it (a Job's `podFailurePolicy` should `FailJob` on it).
    Configuration,
    /// Every push lost a race with other writers; a later run may win.
    Conflict,
    /// SIGTERM, SIGINT or SIGHUP ended the run (this signal's number).
    Interrupted {
        /// The signal's number.
        signal: i32,
    },
    /// The head branch holds the change and only the pull (merge) request
    /// failed.
    #[cfg_attr(not(feature = "job"), allow(dead_code))] // only the Job opens requests
    PullRequest,
    /// Anything else (network, registry, git server, template, files in the
    /// repository): it may work later.
    Failed,
}

impl FailureKind {
    /// The process exit status: 2 for configuration, 4 for a conflict, the
    /// signal plus 128 when interrupted (as a shell reports a process killed
    /// by it), 1 otherwise.
    #[must_use]
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Self::Configuration => 2,
            Self::Conflict => 4,
            Self::Interrupted { signal } => signal
                .checked_add(128)
                .and_then(|code| u8::try_from(code).ok())
                .unwrap_or(1),
            Self::PullRequest | Self::Failed => 1,
        }
    }

    /// The word a status names it with: `configuration`, `conflict`,
    /// `interrupted`, `pullRequest` or `failed`.
    #[must_use]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Configuration => "configuration",
            Self::Conflict => "conflict",
            Self::Interrupted { .. } => "interrupted",
            Self::PullRequest => "pullRequest",
            Self::Failed => "failed",
        }
    }
}

impl serde::Serialize for FailureKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values the README's tables and the Job's `podFailurePolicy`
    /// document: changing one is a breaking change.
    #[test]
    fn exit_codes_and_words_are_the_documented_ones() {
        let table = [
            (FailureKind::Configuration, 2, "configuration"),
            (FailureKind::Conflict, 4, "conflict"),
            (FailureKind::Interrupted { signal: 15 }, 143, "interrupted"),
            (FailureKind::Interrupted { signal: 2 }, 130, "interrupted"),
            (FailureKind::PullRequest, 1, "pullRequest"),
            (FailureKind::Failed, 1, "failed"),
        ];
        for (kind, code, word) in table {
            assert_eq!(kind.exit_code(), code, "{kind:?}");
            assert_eq!(kind.as_str(), word, "{kind:?}");
        }
        assert_eq!(FailureKind::Interrupted { signal: 200 }.exit_code(), 1);
        assert_eq!(FailureKind::Interrupted { signal: -200 }.exit_code(), 1);
        assert_eq!(EXIT_SUCCESS, 0);
        assert_eq!(EXIT_CHANGES_PENDING, 3);
    }
}
