//! Which remote URLs the crate talks to, decided once when a [`crate::Remote`] is made.
//!
//! libgit2 accepts more than the Job should: `file://` and bare paths write straight into another
//! repository on this machine (no server hooks, no shallow fetch), plain HTTP sends credentials in
//! clear text, and credentials embedded in a URL end up in error messages. This module classifies
//! a URL and refuses the dangerous forms unless the caller opted in.

use std::net::IpAddr;

use crate::error::Error;

/// The transport a remote URL uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `https://`.
    Https,
    /// `http://` (clear text).
    Http,
    /// `ssh://` or the scp-like `user@host:path`.
    Ssh,
    /// `file://` or a path on this machine.
    Local,
}

/// A remote URL that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteUrl {
    /// The URL as given (it holds no password: those are refused).
    pub(crate) url: String,
    pub(crate) transport: Transport,
    /// Host name without brackets or port; empty for local URLs.
    pub(crate) host: String,
    /// Port when the URL names one.
    pub(crate) port: Option<u16>,
    /// User name from the URL (`git` in `git@github.com:org/repo`).
    pub(crate) username: Option<String>,
}

/// What the caller allows beyond HTTPS and SSH.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UrlPolicy {
    pub(crate) allow_local: bool,
    pub(crate) allow_plain_http: bool,
}

impl RemoteUrl {
    /// Classifies `url` and applies `policy`.
    pub(crate) fn parse(url: &str, policy: UrlPolicy) -> Result<Self, Error> {
        let unsupported = |reason: &str| Error::InvalidUrl {
            url: redact_userinfo(url),
            reason: reason.to_owned(),
        };
        if url.is_empty() {
            return Err(unsupported("the URL is empty"));
        }
        if url.chars().any(char::is_control) {
            return Err(unsupported("the URL contains control characters"));
        }
        let (transport, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (Transport::Https, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (Transport::Http, rest)
        } else if let Some(rest) = url.strip_prefix("ssh://") {
            (Transport::Ssh, rest)
        } else if url.starts_with("file://") || is_local_path(url) {
            if !policy.allow_local {
                return Err(Error::LocalRefused {
                    url: url.to_owned(),
                });
            }
            return Ok(Self {
                url: url.to_owned(),
                transport: Transport::Local,
                host: String::new(),
                port: None,
                username: None,
            });
        } else if let Some(scheme_end) = url.find("://") {
            return Err(unsupported(&format!(
                "the `{}` scheme is not supported (use https://, http:// or ssh://)",
                &url[..scheme_end]
            )));
        } else if let Some(parsed) = parse_scp_like(url) {
            return Ok(parsed);
        } else {
            return Err(unsupported(
                "not a URL (use https://, http:// or ssh://, or user@host:path)",
            ));
        };

        let authority = rest.split('/').next().unwrap_or_default();
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo), hostport),
            None => (None, authority),
        };
        if userinfo.is_some_and(|info| info.contains(':')) {
            return Err(Error::CredentialsInUrl {
                url: redact_userinfo(url),
            });
        }
        let (host, port) = split_host_port(hostport)
            .ok_or_else(|| unsupported("the host or port is malformed"))?;
        if host.is_empty() {
            return Err(unsupported("the URL has no host"));
        }
        if transport == Transport::Http && !policy.allow_plain_http && !is_loopback(&host) {
            return Err(Error::PlainHttpRefused {
                url: url.to_owned(),
            });
        }
        Ok(Self {
            url: url.to_owned(),
            transport,
            host,
            port,
            username: userinfo.filter(|user| !user.is_empty()).map(str::to_owned),
        })
    }
}

/// `/srv/repo.git`, `./repo`, `../repo`, `~/repo`: paths libgit2 opens with its local transport.
fn is_local_path(url: &str) -> bool {
    url.starts_with('/')
        || url.starts_with("./")
        || url.starts_with("../")
        || url.starts_with('~')
        || url == "."
}

/// The scp-like SSH form `[user@]host:path` (git's rule: a colon before any slash).
fn parse_scp_like(url: &str) -> Option<RemoteUrl> {
    let colon = url.find(':')?;
    if url[..colon].contains('/') {
        return None;
    }
    let (user, host) = match url[..colon].rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, &url[..colon]),
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || url[colon + 1..].is_empty() || user.is_some_and(|u| u.contains(':')) {
        return None;
    }
    Some(RemoteUrl {
        url: url.to_owned(),
        transport: Transport::Ssh,
        host: host.to_owned(),
        port: None,
        username: user.filter(|u| !u.is_empty()).map(str::to_owned),
    })
}

/// Splits `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(hostport: &str) -> Option<(String, Option<u16>)> {
    if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((host.to_owned(), port));
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), Some(port.parse().ok()?))),
        None => Some((hostport.to_owned(), None)),
    }
}

/// `localhost`, `127.0.0.0/8` and `::1`.
pub(crate) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The URL with any `user:password@` replaced by `<redacted>@`, for error messages.
fn redact_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let after = &url[scheme_end + 3..];
    let authority_end = after.find('/').unwrap_or(after.len());
    match after[..authority_end].rfind('@') {
        Some(at) => format!("{}<redacted>{}", &url[..scheme_end + 3], &after[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{RemoteUrl, Transport, UrlPolicy, is_loopback};
    use crate::error::Error;

    fn parse(url: &str) -> Result<RemoteUrl, Error> {
        RemoteUrl::parse(url, UrlPolicy::default())
    }

    #[test]
    fn https_ssh_and_scp_like_urls_are_classified() {
        let https = parse("https://github.com/org/repo.git").unwrap();
        assert_eq!(
            (https.transport, https.host.as_str(), https.port),
            (Transport::Https, "github.com", None)
        );
        let ssh = parse("ssh://git@127.0.0.1:2222/srv/app.git").unwrap();
        assert_eq!(ssh.transport, Transport::Ssh);
        assert_eq!(
            (ssh.host.as_str(), ssh.port, ssh.username.as_deref()),
            ("127.0.0.1", Some(2222), Some("git"))
        );
        let scp = parse("git@github.com:org/repo.git").unwrap();
        assert_eq!(
            (scp.transport, scp.host.as_str(), scp.username.as_deref()),
            (Transport::Ssh, "github.com", Some("git"))
        );
        let v6 = parse("ssh://[::1]:22/repo").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", Some(22)));
    }

    #[test]
    fn local_urls_need_allow_local() {
        for url in ["file:///srv/repo.git", "/srv/repo.git", "./repo", "../repo"] {
            assert!(
                matches!(parse(url), Err(Error::LocalRefused { .. })),
                "{url}"
            );
            let allowed = RemoteUrl::parse(
                url,
                UrlPolicy {
                    allow_local: true,
                    allow_plain_http: false,
                },
            )
            .unwrap();
            assert_eq!(allowed.transport, Transport::Local);
        }
    }

    #[test]
    fn plain_http_only_to_loopback_unless_allowed() {
        assert!(parse("http://127.0.0.1:8080/git/app.git").is_ok());
        assert!(parse("http://localhost/git/app.git").is_ok());
        assert!(parse("http://[::1]:80/x").is_ok());
        assert!(matches!(
            parse("http://git.example.com/app.git"),
            Err(Error::PlainHttpRefused { .. })
        ));
        let policy = UrlPolicy {
            allow_local: false,
            allow_plain_http: true,
        };
        assert!(RemoteUrl::parse("http://git.example.com/app.git", policy).is_ok());
    }

    #[test]
    fn passwords_in_urls_are_refused_without_being_echoed() {
        let err = parse("https://user:s3cr3t@github.com/org/repo.git").unwrap_err();
        assert!(matches!(err, Error::CredentialsInUrl { .. }));
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
    }

    #[test]
    fn other_schemes_and_junk_are_refused() {
        assert!(matches!(
            parse("git://github.com/x"),
            Err(Error::InvalidUrl { .. })
        ));
        assert!(matches!(parse(""), Err(Error::InvalidUrl { .. })));
        assert!(matches!(
            parse("no-colon-here"),
            Err(Error::InvalidUrl { .. })
        ));
        assert!(matches!(
            parse("https://host:notaport/x"),
            Err(Error::InvalidUrl { .. })
        ));
    }

    #[test]
    fn loopback_names() {
        assert!(
            is_loopback("127.0.0.1")
                && is_loopback("127.1.2.3")
                && is_loopback("::1")
                && is_loopback("LOCALHOST")
        );
        assert!(!is_loopback("10.0.0.1") && !is_loopback("localhost.example.com"));
    }
}
