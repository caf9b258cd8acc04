//! The crate's error type.
//!
//! Variants follow what a caller does next: fix the configuration (URL, header, key, known_hosts),
//! fix credentials, retry later (network), rebase and retry (non-fast-forward), or stop (the server
//! refused the push). No variant carries a secret: URLs with passwords are refused before they can
//! reach a message, header values and keys are never formatted, and libgit2's own messages are
//! kept only for errors that cannot hold credentials.

use std::fmt;

use crate::known_hosts::{HostKeyProblem, PresentedKey};

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The remote URL cannot be used.
    #[error("invalid remote URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL, with any user information redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `file://` URL or a local path without `allow_local`.
    #[error("refusing the local repository `{url}`: file:// URLs and paths need `allow_local`")]
    LocalRefused {
        /// The URL as given.
        url: String,
    },
    /// Plain `http://` to a host that is not loopback, without `allow_plain_http`.
    #[error(
        "refusing plain http to `{url}`: credentials and pushes would travel in clear text \
         (use https, or set `allow_plain_http`)"
    )]
    PlainHttpRefused {
        /// The URL as given.
        url: String,
    },
    /// The URL embeds a password.
    #[error(
        "refusing `{url}`: the URL embeds a password; pass credentials as the remote's authentication instead"
    )]
    CredentialsInUrl {
        /// The URL with the user information redacted.
        url: String,
    },
    /// An extra HTTP header that cannot be sent.
    #[error("invalid extra HTTP header `{name}`: {reason}")]
    InvalidHeader {
        /// The header name (never the value).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Extra CA certificates that do not parse.
    #[error("invalid CA certificates: {reason}")]
    InvalidCaCertificates {
        /// What is wrong with them.
        reason: String,
    },
    /// A `known_hosts` line that does not parse.
    #[error("known_hosts line {line}: not a valid entry")]
    KnownHosts {
        /// 1-based line number.
        line: usize,
        /// The parser's complaint.
        #[source]
        source: ssh_key::Error,
    },
    /// The server refused the credentials, or asked for credentials that were not configured.
    #[error("authentication failed for {url}: {reason}")]
    Authentication {
        /// The remote URL.
        url: String,
        /// What happened (never the credential).
        reason: &'static str,
    },
    /// The SSH server's host key was not accepted.
    #[error("SSH host key of {host} not accepted{}: {problem}", key_suffix(.key.as_ref()))]
    HostKey {
        /// The host as written in the URL (`[host]:port` off port 22 is implied by `port`).
        host: String,
        /// Port, when the URL names one.
        port: Option<u16>,
        /// The key the server presented.
        key: Option<PresentedKey>,
        /// Why it was refused.
        problem: HostKeyProblem,
    },
    /// The HTTPS server's certificate was not trusted.
    #[error(
        "TLS certificate of {url} not trusted (is its CA in the system store or SSL_CERT_FILE, \
         or given as the remote's CA certificates?)"
    )]
    Certificate {
        /// The remote URL.
        url: String,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// The remote could not be reached or the connection failed.
    #[error("network error talking to {url}")]
    Network {
        /// The remote URL.
        url: String,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// The remote does not have the requested ref.
    #[error("{url} has no {reference}")]
    RefNotFound {
        /// The remote URL.
        url: String,
        /// The ref, e.g. `refs/heads/main`.
        reference: String,
    },
    /// The requested commit is not in the fetched history.
    #[error("commit {commit} is not in the history fetched from {url}")]
    CommitNotFound {
        /// The remote URL.
        url: String,
        /// The commit id as given.
        commit: String,
    },
    /// A commit id that is not 40 hexadecimal digits.
    #[error("`{commit}` is not a full commit id (40 hexadecimal digits)")]
    InvalidCommitId {
        /// The value as given.
        commit: String,
    },
    /// The push lost a race: the remote branch moved (non-fast-forward, fetch first).
    #[error(
        "push of {reference} to {url} was rejected: {reason} (the branch moved; fetch and retry)"
    )]
    NonFastForward {
        /// The remote URL.
        url: String,
        /// The remote ref.
        reference: String,
        /// The server's or libgit2's wording.
        reason: String,
    },
    /// The server refused the push for another reason (a hook declined it, protected branch).
    #[error("push of {reference} to {url} was rejected by the server: {reason}{}", messages_suffix(.server_messages))]
    PushRejected {
        /// The remote URL.
        url: String,
        /// The remote ref.
        reference: String,
        /// The status the server reported, e.g. `pre-receive hook declined`.
        reason: String,
        /// What the server printed (`remote:` lines, e.g. a hook's explanation), possibly empty.
        server_messages: String,
    },
    /// A push needs a branch but HEAD is detached (tag or commit checkout without a push branch).
    #[error(
        "nothing to push to: the checkout of {checkout} has no branch; name a push branch \
         (Flux: push spec not provided, and cannot be inferred from the checkout ref)"
    )]
    NoPushBranch {
        /// The checkout ref, for the message.
        checkout: String,
    },
    /// `push_with_retry` ran out of attempts.
    #[error("gave up after {attempts} push attempts: the remote branch kept moving")]
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// The last rejection.
        #[source]
        last: Box<Error>,
    },
    /// A signing key that cannot be used.
    #[error("{kind} signing key unusable: {reason}")]
    SigningKey {
        /// OpenPGP or SSH.
        kind: KeyKind,
        /// What is wrong (never key material).
        reason: String,
    },
    /// Signing the commit failed.
    #[error("signing the commit with the {kind} key failed: {reason}")]
    Signing {
        /// OpenPGP or SSH.
        kind: KeyKind,
        /// The signer's complaint.
        reason: String,
    },
    /// A local git operation failed (repository, index, checkout, refs).
    #[error("{operation} failed")]
    Git {
        /// What was being done.
        operation: &'static str,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// Another failure while talking to the remote (an answer that is not git's, a server-side
    /// command that failed, a protocol error).
    #[error("{operation} {url} failed")]
    Remote {
        /// What was being done (`fetch from`, `push to`, ...).
        operation: &'static str,
        /// The remote URL.
        url: String,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// A filesystem error (the message names the path).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The two kinds of commit signing keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// An OpenPGP secret key (Flux's `git.asc`).
    OpenPgp,
    /// An OpenSSH private key (Flux's `identity`).
    Ssh,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenPgp => "OpenPGP",
            Self::Ssh => "SSH",
        })
    }
}

/// A coarse classification of an [`Error`], for callers that map errors to conditions or exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// URL, header, known_hosts or key configuration.
    Configuration,
    /// Credentials refused or missing.
    Authentication,
    /// Host key or TLS certificate not trusted.
    Trust,
    /// Connection or transfer failure; may succeed later.
    Network,
    /// The push lost a race (non-fast-forward); fetch, re-apply and retry.
    NonFastForward,
    /// The server refused the push; retrying will not help.
    Rejected,
    /// A ref or commit does not exist.
    NotFound,
    /// Retries exhausted.
    GaveUp,
    /// Anything else (local repository, filesystem, signing).
    Other,
}

impl Error {
    /// The error's class.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidUrl { .. }
            | Self::LocalRefused { .. }
            | Self::PlainHttpRefused { .. }
            | Self::CredentialsInUrl { .. }
            | Self::InvalidHeader { .. }
            | Self::KnownHosts { .. }
            | Self::InvalidCaCertificates { .. }
            | Self::InvalidCommitId { .. }
            | Self::NoPushBranch { .. }
            | Self::SigningKey { .. } => ErrorKind::Configuration,
            Self::Authentication { .. } => ErrorKind::Authentication,
            Self::HostKey { .. } | Self::Certificate { .. } => ErrorKind::Trust,
            Self::Network { .. } => ErrorKind::Network,
            Self::NonFastForward { .. } => ErrorKind::NonFastForward,
            Self::PushRejected { .. } => ErrorKind::Rejected,
            Self::RefNotFound { .. } | Self::CommitNotFound { .. } => ErrorKind::NotFound,
            Self::GaveUp { .. } => ErrorKind::GaveUp,
            Self::Signing { .. } | Self::Git { .. } | Self::Remote { .. } | Self::Io(_) => {
                ErrorKind::Other
            }
        }
    }

    /// Whether fetching the new tip, re-applying and pushing again can succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        self.kind() == ErrorKind::NonFastForward
    }
}

fn key_suffix(key: Option<&PresentedKey>) -> String {
    key.map(|key| format!(" ({key})")).unwrap_or_default()
}

fn messages_suffix(messages: &str) -> String {
    let trimmed = messages.trim();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(" (server said: {})", trimmed.replace('\n', " | "))
    }
}
