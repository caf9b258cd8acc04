//! Errors of the registry client. Every variant names the registry and, where
//! there is one, the repository and the URL. URLs never carry credentials
//! (the client never puts user info in a URL) and secrets are never part of a
//! message.

use std::path::PathBuf;
use std::time::Duration;

use super::reference::ReferenceError;

/// Registry host and repository an operation was about.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Context {
    pub registry: String,
    pub repository: Option<String>,
}

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repository {
            Some(r) => write!(f, "{}/{}", self.registry, r),
            None => f.write_str(&self.registry),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Reference(#[from] ReferenceError),

    /// The registry answered with an unexpected HTTP status.
    #[error("{context}: {method} {url}: HTTP {status}{}", detail_suffix(.detail))]
    Status {
        context: Context,
        method: &'static str,
        url: String,
        status: u16,
        /// Registry error codes and messages from the body, if any.
        detail: String,
    },

    /// The registry kept answering 429 with a `Retry-After` longer than allowed.
    #[error(
        "{context}: {method} {url}: rate limited (HTTP 429), registry asks to wait {retry_after:?}, more than the allowed {max_wait:?}"
    )]
    RetryAfterTooLong {
        context: Context,
        method: &'static str,
        url: String,
        retry_after: Duration,
        max_wait: Duration,
    },

    /// Connection refused, DNS failure, TLS failure, timeout, truncated body.
    #[error("{context}: {method} {url}: {message}")]
    Transport {
        context: Context,
        method: &'static str,
        url: String,
        message: String,
        timed_out: bool,
    },

    /// A response that does not follow the distribution API.
    #[error("{context}: invalid response from {url}: {message}")]
    InvalidResponse {
        context: Context,
        url: String,
        message: String,
    },

    /// Token exchange or challenge problems.
    #[error("{context}: authentication failed: {message}")]
    Auth { context: Context, message: String },

    /// Credentials would have been sent over plain HTTP to a host not marked insecure.
    #[error(
        "{context}: refusing to send credentials over plain HTTP to {url}; mark the host insecure in the registry settings to allow it"
    )]
    InsecureCredentials { context: Context, url: String },

    #[error("{context}: too many redirects (more than {max}) starting at {url}")]
    TooManyRedirects {
        context: Context,
        url: String,
        max: u32,
    },

    #[error("{context}: manifest {reference} has unsupported media type {media_type:?}")]
    UnsupportedMediaType {
        context: Context,
        reference: String,
        media_type: String,
    },

    #[error("{context}: no manifest for platform {platform} in {reference}")]
    PlatformNotFound {
        context: Context,
        reference: String,
        platform: String,
    },

    #[error("{context}: content of {reference} does not match its digest (got {actual})")]
    DigestMismatch {
        context: Context,
        reference: String,
        actual: String,
    },

    #[error("registry settings {}: {message}", path.display())]
    Settings { path: PathBuf, message: String },

    #[error("invalid registry setting: {0}")]
    InvalidSetting(String),

    #[error("credentials for {registry}: {message}")]
    Credentials { registry: String, message: String },
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl Error {
    /// The HTTP status, for `Status` errors.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for `Status` 404 (repository, tag or blob unknown).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// True for transport errors caused by a timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Error::Transport {
                timed_out: true,
                ..
            }
        )
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Describe a JSON error without quoting the input: serde's messages quote
/// the offending value (`invalid type: string "dXNl..."`), which in a
/// credentials file or a token answer may be a secret.
pub(crate) fn describe_json_error(e: &serde_json::Error) -> String {
    let kind = match e.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "a value has the wrong type",
        serde_json::error::Category::Eof => "unexpected end",
    };
    format!("{kind} at line {} column {}", e.line(), e.column())
}
