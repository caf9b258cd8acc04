//! What an unsuccessful answer means, per provider, in words a person can act on.

use crate::error::{Error, ErrorKind};
use crate::http::{Http, Response};
use crate::remote::Provider;

/// The permission a token needs for the calls of this crate.
pub(crate) fn permission(provider: Provider) -> &'static str {
    match provider {
        Provider::GitHub => {
            "`Pull requests: Read and write` (and `Issues: Read and write` for labels, assignees \
             and comments) as a fine-grained token or a GitHub App, or the `repo` scope \
             (`public_repo` for a public repository) as a classic token"
        }
        Provider::GitLab => "the `api` scope and at least the Developer role in the project",
        Provider::Gitea | Provider::Forgejo => {
            "the `write:repository` scope (and `write:issue` for labels, assignees and comments) \
             and write access to the repository"
        }
    }
}

/// The error for an unsuccessful answer to `operation` on repository `repo`.
pub(crate) fn fail(http: &Http, response: &Response, operation: &str, repo: &str) -> Error {
    let said = http.provider_message(response);
    let p = http.provider;
    let status = response.status;
    let (kind, text) = match status {
        401 => (
            ErrorKind::Unauthorized,
            format!(
                "{operation}: {p} answered 401 Unauthorized ({said}): the token is missing, \
                 wrong, expired or revoked"
            ),
        ),
        403 => (
            ErrorKind::Forbidden,
            format!(
                "{operation}: {p} answered 403 Forbidden ({said}): the token needs {}",
                permission(p)
            ),
        ),
        404 => (
            ErrorKind::NotFound,
            format!(
                "{operation}: {p} answered 404 Not Found ({said}): the repository {repo} does not \
                 exist there, or the token cannot see it"
            ),
        ),
        500..=599 => (
            ErrorKind::Server,
            format!("{operation}: {p} answered {status} ({said})"),
        ),
        _ => (
            ErrorKind::Rejected,
            format!("{operation}: {p} refused it ({status}: {said})"),
        ),
    };
    Error::new(kind, Some(status), text)
}

/// A 2xx answer whose body is not what the API describes.
pub(crate) fn invalid(http: &Http, response: &Response, operation: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidResponse,
        Some(response.status),
        format!(
            "{operation}: {} answered {} without {what}: is the API URL right? (the answer \
             starts with {:?})",
            http.provider,
            response.status,
            http.scrub(&response.text.chars().take(120).collect::<String>())
        ),
    )
}

/// A path segment or query value, percent-encoded (everything but RFC 3986's unreserved
/// characters).
pub(crate) fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Whether a refusal says that the request exists already.
pub(crate) fn says_exists(http: &Http, response: &Response) -> bool {
    http.provider_message(response)
        .to_ascii_lowercase()
        .contains("already exist")
}

#[cfg(test)]
mod tests {
    use super::enc;

    #[test]
    fn encoding() {
        assert_eq!(enc("image-update/ns-app"), "image-update%2Fns-app");
        assert_eq!(enc("acme:a b"), "acme%3Aa%20b");
        assert_eq!(enc("é"), "%C3%A9");
    }
}
