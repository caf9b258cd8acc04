//! Errors that stop a run. Findings that do not stop it are
//! [`Diagnostic`]s in the outcome.

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::failure::FailureKind;

/// Why a run stopped before writing anything.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A mistake in how the command was called (exit status 2).
    #[error("{0}")]
    Usage(String),
    /// Input that cannot be used: every problem found, each with its
    /// location (policy files, definitions, an automation, a functionConfig,
    /// policies given twice with different values).
    #[error("{}", invalid_display(.summary, .diagnostics))]
    Invalid {
        /// A sentence about all of them (may be empty).
        summary: String,
        diagnostics: Diagnostics,
    },
    /// A file or directory could not be read or written (the error names
    /// the path: filesystem access goes through `fs-err`).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// stdout could not be written (a closed pipe included): the output
    /// that was asked for did not arrive, so this is never a success.
    #[error("cannot write {what} to stdout")]
    Stdout {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The files could not be written as one commit (nothing was written,
    /// unless the error says which originals could not be put back), or a
    /// signal interrupted the commit ([`Error::signal`]). `sink::dir`
    /// converts its error into this one, so that this leaf imports nothing
    /// above it.
    #[error(transparent)]
    Commit(CommitFailure),
    /// The commit message template does not parse or fails (Flux's
    /// messages).
    #[error(transparent)]
    Message(#[from] image_update_template::flux::MessageError),
    /// The registry settings could not be used.
    #[error("registry settings")]
    Registry(#[source] Box<image_update_registry::Error>),
    /// A failure with what was being done, and why (typed).
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A failure whose own message says it all (no policy qualifies, the
    /// directory walk, another run holding the tree's lock, ...).
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A bug: something that cannot happen did.
    #[error("internal error: {0}")]
    Internal(String),
}

/// A commit of files that failed: the sink's error as it is (its message and
/// causes), and the signal that interrupted it, if one did.
#[derive(Debug)]
pub(crate) struct CommitFailure {
    /// The signal (SIGTERM, SIGINT, SIGHUP) that interrupted the commit.
    pub signal: Option<i32>,
    /// Why the commit failed.
    pub error: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl std::fmt::Display for CommitFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

// Transparent: the chain of causes is the sink's error's own.
impl std::error::Error for CommitFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

fn invalid_display(summary: &str, diagnostics: &Diagnostics) -> String {
    if summary.is_empty() {
        diagnostics.to_string()
    } else {
        format!("{summary}\n{diagnostics}")
    }
}

impl Error {
    /// Input errors with no summary line.
    #[must_use]
    pub(crate) fn invalid(diagnostics: Vec<Diagnostic>) -> Self {
        Error::Invalid {
            summary: String::new(),
            diagnostics: Diagnostics(diagnostics),
        }
    }

    /// Input errors under a summary line.
    #[must_use]
    pub(crate) fn invalid_with(summary: impl Into<String>, diagnostics: Vec<Diagnostic>) -> Self {
        Error::Invalid {
            summary: summary.into(),
            diagnostics: Diagnostics(diagnostics),
        }
    }

    /// `context` failed because of `source`.
    pub(crate) fn failed(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Failed {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// The diagnostics of an input error, if it is one.
    #[must_use]
    #[cfg(all(test, feature = "job"))]
    pub(crate) fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Invalid { diagnostics, .. } => &diagnostics.0,
            _ => &[],
        }
    }

    /// Whether it is a usage error (exit status 2).
    #[must_use]
    pub(crate) fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }

    /// The same error with `f` applied to each located problem of an input error (any other
    /// error as it is).
    #[must_use]
    #[cfg(feature = "job")]
    pub(crate) fn map_diagnostics(self, f: impl FnMut(Diagnostic) -> Diagnostic) -> Self {
        match self {
            Error::Invalid {
                summary,
                diagnostics,
            } => Error::Invalid {
                summary,
                diagnostics: Diagnostics(diagnostics.0.into_iter().map(f).collect()),
            },
            other => other,
        }
    }

    /// Its kind: configuration for a usage mistake, interrupted for a
    /// commit a signal interrupted, failed otherwise.
    #[must_use]
    pub(crate) fn failure_kind(&self) -> FailureKind {
        if self.is_usage() {
            return FailureKind::Configuration;
        }
        match self.signal() {
            Some(signal) => FailureKind::Interrupted { signal },
            None => FailureKind::Failed,
        }
    }

    /// The signal (SIGTERM, SIGINT, SIGHUP) that interrupted a commit, so
    /// that the process ends with 128 + it.
    #[must_use]
    pub(crate) fn signal(&self) -> Option<i32> {
        match self {
            Error::Commit(e) => e.signal,
            _ => None,
        }
    }
}

/// One thing to tell about an error that stopped a run, in the order
/// [`Error::parts`] gives them: every front end shows these, each in its
/// own form (stderr lines, `::error` annotations, kpt error results).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part<'a> {
    /// A sentence about all the located problems that follow.
    Summary(&'a str),
    /// One problem with its location (an input error).
    Located(&'a Diagnostic),
    /// The error itself, with its chain of causes.
    Failure(&'a Error),
}

impl Error {
    /// What to tell about this error: for an input error its summary (if
    /// any) and each located problem; for any other, the error itself.
    #[must_use]
    pub(crate) fn parts(&self) -> Vec<Part<'_>> {
        match self {
            Error::Invalid {
                summary,
                diagnostics,
            } => (!summary.is_empty())
                .then_some(Part::Summary(summary.as_str()))
                .into_iter()
                .chain(diagnostics.0.iter().map(Part::Located))
                .collect(),
            other => vec![Part::Failure(other)],
        }
    }
}
