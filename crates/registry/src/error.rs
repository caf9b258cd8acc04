//! Errors of the registry client. Every variant names the registry and, where
//! there is one, the repository and the URL. URLs never carry credentials
//! (the client never puts user info in a URL), and secrets are never part of
//! a message: text that came from a registry (bodies, headers, URLs it
//! redirected to) has every secret the client knows replaced by
//! `<redacted>` before an error leaves the client ([`Error::redact`]), and
//! quoted bodies are cut to 512 bytes.

use std::path::PathBuf;
use std::time::Duration;

use super::credentials::CredentialSource;
use super::redact::Redactor;
use super::reference::ReferenceError;

/// Registry host and repository an operation was about.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Context {
    /// Registry host, e.g. `ghcr.io` or `localhost:5000`.
    pub registry: String,
    /// Repository path on that registry, when the operation had one.
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

/// How many attempts a request took, and how long they took together
/// (retry waits included). Displayed only when there was more than one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attempts {
    /// Attempts made (the first one included).
    pub count: u32,
    /// From the start of the first attempt to the end of the last.
    pub elapsed: Duration,
}

impl std::fmt::Display for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count > 1 {
            write!(
                f,
                " (gave up after {} attempts over {})",
                self.count,
                human_duration(self.elapsed)
            )
        } else {
            Ok(())
        }
    }
}

/// Which time limit stopped a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLimit {
    /// The per-request `timeout` of the registry (one attempt: connect,
    /// send, headers and the whole body).
    Request,
    /// The client's `deadline` for the whole run.
    Deadline,
}

/// Which credentials a refused request used, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Where the credentials came from (never the secret).
    pub credentials: CredentialSource,
    /// What to check, naming the source: the credentials (401), or the
    /// permissions (403).
    pub hint: String,
}

/// `; hint: …` (the hint names the credentials' source).
impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "; hint: {}", self.hint)
    }
}

/// Errors of the registry client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An invalid image reference.
    #[error(transparent)]
    Reference(#[from] ReferenceError),

    /// The registry answered with an unexpected HTTP status. For 401 and 403
    /// `refusal` says which credentials were used and what to check.
    #[error(
        "{context}: {method} {url}: HTTP {status}{}{}{attempts}",
        detail_suffix(.detail),
        refusal_suffix(.refusal)
    )]
    Status {
        context: Box<Context>,
        method: &'static str,
        url: String,
        status: u16,
        /// Registry error codes and messages from the body, or the body
        /// itself (secrets redacted, at most 512 bytes).
        detail: String,
        refusal: Option<Box<Refusal>>,
        attempts: Attempts,
    },

    /// The registry kept answering 429 with a `Retry-After` longer than allowed.
    #[error(
        "{context}: {method} {url}: rate limited (HTTP 429), registry asks to wait {retry_after:?}, more than the allowed {max_wait:?}"
    )]
    RetryAfterTooLong {
        context: Box<Context>,
        method: &'static str,
        url: String,
        retry_after: Duration,
        max_wait: Duration,
    },

    /// Connection refused or reset, TLS failure, truncated body.
    #[error("{context}: {method} {url}: {message}{attempts}")]
    Transport {
        context: Box<Context>,
        method: &'static str,
        url: String,
        message: String,
        /// Always false: timeouts are [`Error::Timeout`] (kept for callers
        /// that match on it).
        timed_out: bool,
        attempts: Attempts,
    },

    /// The registry's host name does not resolve (not retried).
    #[error("{context}: {method} {url}: the host name {host} does not resolve ({message})")]
    UnknownHost {
        context: Box<Context>,
        method: &'static str,
        url: String,
        host: String,
        message: String,
    },

    /// A request did not complete within a time limit.
    #[error(
        "{context}: {method} {url}: {}{}{attempts}",
        timeout_text(*.which, *.limit, authority_of(.url)),
        last_failure_suffix(.last_failure)
    )]
    Timeout {
        context: Box<Context>,
        method: &'static str,
        /// The URL that was slow to answer; its host is named in the message.
        url: String,
        /// The limit that was hit.
        which: TimeLimit,
        limit: Duration,
        /// Why the previous attempt failed, when the deadline stopped a retry.
        last_failure: String,
        attempts: Attempts,
    },

    /// Tag listing stopped at a limit of the settings (`max_pages`,
    /// `max_tags`): a registry paginating without end, or a repository
    /// larger than allowed.
    #[error(
        "{context}: tag listing stopped: more than {limit} {what} (the `{key}` limit of the registry settings for {registry}; the registry may be paginating without end)"
    )]
    ListLimit {
        context: Box<Context>,
        /// `pages` or `tags`.
        what: &'static str,
        /// The settings key: `max_pages` or `max_tags`.
        key: &'static str,
        limit: u64,
        registry: String,
    },

    /// A response that does not follow the distribution API.
    #[error("{context}: invalid response from {url}: {message}")]
    InvalidResponse {
        context: Box<Context>,
        url: String,
        message: String,
    },

    /// Token exchange or challenge problems. A token service refusing the
    /// credentials (401, 403) gives a `refusal` saying which were used.
    #[error(
        "{context}: authentication failed: {message}{}{}",
        detail_suffix(.detail),
        refusal_suffix(.refusal)
    )]
    Auth {
        context: Box<Context>,
        message: String,
        /// The token service's error body (secrets redacted, at most 512 bytes).
        detail: String,
        refusal: Option<Box<Refusal>>,
    },

    /// Credentials would have been sent over plain HTTP to a host not marked insecure.
    #[error(
        "{context}: refusing to send credentials over plain HTTP to {url}; mark the host insecure in the registry settings to allow it"
    )]
    InsecureCredentials { context: Box<Context>, url: String },

    /// A redirect chain longer than allowed.
    #[error("{context}: too many redirects (more than {max}) starting at {url}")]
    TooManyRedirects {
        context: Box<Context>,
        url: String,
        max: u32,
    },

    /// A manifest of a media type the client does not read.
    #[error("{context}: manifest {reference} has unsupported media type {media_type:?}")]
    UnsupportedMediaType {
        context: Box<Context>,
        reference: String,
        media_type: String,
    },

    /// No image for the platform asked for.
    #[error("{context}: no manifest for platform {platform} in {reference}")]
    PlatformNotFound {
        context: Box<Context>,
        reference: String,
        platform: String,
    },

    /// Content whose SHA-256 is not the digest it was fetched by.
    #[error("{context}: content of {reference} does not match its digest (got {actual})")]
    DigestMismatch {
        context: Box<Context>,
        reference: String,
        actual: String,
    },

    /// An unreadable or invalid settings file (or a file it names).
    #[error("registry settings {}: {message}", path.display())]
    Settings { path: PathBuf, message: String },

    /// An invalid setting given in code.
    #[error("invalid registry setting: {0}")]
    InvalidSetting(String),

    /// A credential source that could not be read.
    #[error("credentials for {registry}: {message}")]
    Credentials { registry: String, message: String },

    /// A cloud provider's login failed (or was refused for the host before
    /// anything was sent): the provider, the identity source tried, and the
    /// cloud's own error code.
    #[error("{context}: {}", login_text(.provider, .identity, .code, .message))]
    Login {
        context: Box<Context>,
        /// `aws`, `azure` or `gcp`.
        provider: String,
        /// Where the identity came from (`web identity (AWS_ROLE_ARN ...)`),
        /// empty when none was tried.
        identity: String,
        /// The cloud's error code (`AccessDenied`, `invalid_grant`...),
        /// when it sent one.
        code: String,
        /// What went wrong (secrets redacted, at most 512 bytes).
        message: String,
    },
}

fn login_text(provider: &str, identity: &str, code: &str, message: &str) -> String {
    let mut out = format!("{provider} login failed");
    if !identity.is_empty() {
        out.push_str(&format!(" with {identity}"));
    }
    out.push_str(": ");
    if !code.is_empty() {
        out.push_str(code);
        if !message.is_empty() {
            out.push_str(": ");
        }
    }
    out.push_str(message);
    out
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

fn refusal_suffix(refusal: &Option<Box<Refusal>>) -> String {
    refusal
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn last_failure_suffix(last: &str) -> String {
    if last.is_empty() {
        String::new()
    } else {
        format!(" (last attempt: {last})")
    }
}

/// `host:port` of an absolute URL.
fn authority_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

fn timeout_text(which: TimeLimit, limit: Duration, registry: &str) -> String {
    match which {
        TimeLimit::Request => format!(
            "{registry} gave no complete answer within {} (the per-request `timeout` for {registry} in the registry settings)",
            human_duration(limit)
        ),
        TimeLimit::Deadline => format!(
            "stopped waiting for {registry}: the run's deadline of {} was reached (`deadline` in the registry settings)",
            human_duration(limit)
        ),
    }
}

/// `250ms`, `1.5s`, `2m`, `1m30s`.
pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 {
        let tenths = (ms + 50) / 100;
        return if tenths.is_multiple_of(10) {
            format!("{}s", tenths / 10)
        } else {
            format!("{}.{}s", tenths / 10, tenths % 10)
        };
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    out
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

    /// True when a time limit stopped the request (the per-request timeout
    /// or the run's deadline).
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Error::Timeout { .. }
                | Error::Transport {
                    timed_out: true,
                    ..
                }
        )
    }

    /// Set how many attempts the failed request took.
    pub(crate) fn with_attempts(mut self, made: Attempts) -> Self {
        match &mut self {
            Error::Status { attempts, .. }
            | Error::Transport { attempts, .. }
            | Error::Timeout { attempts, .. } => *attempts = made,
            _ => {}
        }
        self
    }

    /// The error with every secret in `secrets` replaced in every text
    /// field, and free text from responses (bodies, messages) made one
    /// bounded line. The one place errors are cleaned: the client's public
    /// methods return nothing else.
    pub(crate) fn redact(self, secrets: &Redactor) -> Self {
        let s = |t: String| secrets.scrub(&t);
        let q = |t: String| secrets.quote(&t);
        let ctx = |c: Box<Context>| {
            Box::new(Context {
                registry: s(c.registry),
                repository: c.repository.map(s),
            })
        };
        match self {
            Error::Reference(e) => Error::Reference(e),
            Error::Status {
                context,
                method,
                url,
                status,
                detail,
                refusal,
                attempts,
            } => Error::Status {
                context: ctx(context),
                method,
                url: s(url),
                status,
                detail: q(detail),
                refusal,
                attempts,
            },
            Error::RetryAfterTooLong {
                context,
                method,
                url,
                retry_after,
                max_wait,
            } => Error::RetryAfterTooLong {
                context: ctx(context),
                method,
                url: s(url),
                retry_after,
                max_wait,
            },
            Error::Transport {
                context,
                method,
                url,
                message,
                timed_out,
                attempts,
            } => Error::Transport {
                context: ctx(context),
                method,
                url: s(url),
                message: q(message),
                timed_out,
                attempts,
            },
            Error::UnknownHost {
                context,
                method,
                url,
                host,
                message,
            } => Error::UnknownHost {
                context: ctx(context),
                method,
                url: s(url),
                host: s(host),
                message: q(message),
            },
            Error::Timeout {
                context,
                method,
                url,
                which,
                limit,
                last_failure,
                attempts,
            } => Error::Timeout {
                context: ctx(context),
                method,
                url: s(url),
                which,
                limit,
                last_failure: q(last_failure),
                attempts,
            },
            Error::ListLimit {
                context,
                what,
                key,
                limit,
                registry,
            } => Error::ListLimit {
                context: ctx(context),
                what,
                key,
                limit,
                registry: s(registry),
            },
            Error::InvalidResponse {
                context,
                url,
                message,
            } => Error::InvalidResponse {
                context: ctx(context),
                url: s(url),
                message: q(message),
            },
            Error::Auth {
                context,
                message,
                detail,
                refusal,
            } => Error::Auth {
                context: ctx(context),
                message: q(message),
                detail: q(detail),
                refusal,
            },
            Error::InsecureCredentials { context, url } => Error::InsecureCredentials {
                context: ctx(context),
                url: s(url),
            },
            Error::TooManyRedirects { context, url, max } => Error::TooManyRedirects {
                context: ctx(context),
                url: s(url),
                max,
            },
            Error::UnsupportedMediaType {
                context,
                reference,
                media_type,
            } => Error::UnsupportedMediaType {
                context: ctx(context),
                reference: s(reference),
                media_type: q(media_type),
            },
            Error::PlatformNotFound {
                context,
                reference,
                platform,
            } => Error::PlatformNotFound {
                context: ctx(context),
                reference: s(reference),
                platform,
            },
            Error::DigestMismatch {
                context,
                reference,
                actual,
            } => Error::DigestMismatch {
                context: ctx(context),
                reference: s(reference),
                actual,
            },
            Error::Settings { path, message } => Error::Settings {
                path,
                message: s(message),
            },
            Error::InvalidSetting(message) => Error::InvalidSetting(s(message)),
            Error::Credentials { registry, message } => Error::Credentials {
                registry: s(registry),
                message: s(message),
            },
            Error::Login {
                context,
                provider,
                identity,
                code,
                message,
            } => Error::Login {
                context: ctx(context),
                provider,
                identity: s(identity),
                code: q(code),
                message: q(message),
            },
        }
    }
}

/// The result type of the registry client.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human_duration(Duration::from_secs(2)), "2s");
        assert_eq!(human_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(human_duration(Duration::from_secs(300)), "5m");
        assert_eq!(human_duration(Duration::from_secs(3600)), "1h");
    }

    #[test]
    fn attempts_show_only_when_retried() {
        let one = Attempts {
            count: 1,
            elapsed: Duration::from_millis(20),
        };
        assert_eq!(one.to_string(), "");
        let five = Attempts {
            count: 5,
            elapsed: Duration::from_millis(3200),
        };
        assert_eq!(five.to_string(), " (gave up after 5 attempts over 3.2s)");
    }

    #[test]
    fn redact_cleans_and_bounds_every_text_field() {
        let secrets = Redactor::default();
        secrets.add("hunter2-secret");
        let e = Error::Status {
            context: Box::new(Context {
                registry: "r.io".to_owned(),
                repository: Some("a/b".to_owned()),
            }),
            method: "GET",
            url: "https://r.io/v2/x?t=hunter2-secret".to_owned(),
            status: 500,
            detail: format!("echo hunter2-secret {}", "z".repeat(2000)),
            refusal: None,
            attempts: Attempts::default(),
        }
        .redact(&secrets);
        let text = e.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("t=<redacted>"), "{text}");
        assert!(text.contains("echo <redacted> zzz"), "{text}");
        assert!(text.contains("[truncated, 2016 bytes in all]"), "{text}");
        assert!(text.len() < 700, "{text}");
    }
}
