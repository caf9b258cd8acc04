//! Errors a person can act on: which call failed, what the provider said, and what to change.

use std::fmt;
use std::time::Duration;

/// What went wrong, for callers that choose an exit status or a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The settings cannot work: a remote URL, a provider, a template, a branch name, a key.
    Config,
    /// 401: the token is missing, wrong, expired or revoked.
    Unauthorized,
    /// 403: the token works but lacks a permission (the message names it).
    Forbidden,
    /// 404: the repository (or the token cannot see it), or a branch.
    NotFound,
    /// 400, 409, 422 and the like: the provider refused the request (the message quotes it).
    Rejected,
    /// A rate limit asked for a longer wait than the client may take.
    RateLimited,
    /// 5xx after the retries.
    Server,
    /// The connection failed (DNS, TCP, TLS, timeout) after the retries.
    Network,
    /// The provider answered with something that is not its API's JSON.
    InvalidResponse,
}

/// An error of this crate. Its text never contains a credential.
#[derive(Clone, Debug)]
pub struct Error {
    kind: ErrorKind,
    status: Option<u16>,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, status: Option<u16>, message: impl Into<String>) -> Self {
        Self {
            kind,
            status,
            message: message.into(),
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, None, message)
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status the provider answered, if it answered.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Whether the same run may succeed later unchanged (rate limits, server and network
    /// failures); the others need a change of settings, token or repository.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::RateLimited | ErrorKind::Server | ErrorKind::Network
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// A duration as a person reads it: `45 s`, `3 min 20 s`.
pub(crate) fn human(duration: Duration) -> String {
    let secs = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    if secs < 60 {
        format!("{secs} s")
    } else if secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{} min {} s", secs / 60, secs % 60)
    }
}
