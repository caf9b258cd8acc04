//! Which forge serves a repository, and where its API is.
//!
//! A git remote URL (`https://host/owner/repo.git`, `ssh://git@host/owner/repo`,
//! `git@host:owner/repo.git`) names a host and a repository path. The provider is inferred from
//! the host (github.com, `*.ghe.com` and hosts named after GitHub, GitLab, Gitea or Forgejo) or
//! given; the API's base URL follows from the provider and the host (GitHub Enterprise Server
//! `/api/v3`, GitLab `/api/v4`, Gitea and Forgejo `/api/v1`), or is given for installations
//! under a path prefix.

use std::fmt;
use std::net::IpAddr;

use crate::error::Error;

/// A forge with a pull (or merge) request API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// github.com, GitHub Enterprise Cloud and Server (REST v3).
    GitHub,
    /// gitlab.com and self-managed GitLab (REST v4).
    GitLab,
    /// Gitea (REST v1).
    Gitea,
    /// Forgejo and Codeberg (REST v1, Gitea's API).
    Forgejo,
}

impl Provider {
    /// Every provider, in the order of [`Provider::name`]'s documentation.
    pub const ALL: [Provider; 4] = [
        Provider::GitHub,
        Provider::GitLab,
        Provider::Gitea,
        Provider::Forgejo,
    ];

    /// `github`, `gitlab`, `gitea` or `forgejo`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::GitLab => "gitlab",
            Provider::Gitea => "gitea",
            Provider::Forgejo => "forgejo",
        }
    }

    /// The provider's own name.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Provider::GitHub => "GitHub",
            Provider::GitLab => "GitLab",
            Provider::Gitea => "Gitea",
            Provider::Forgejo => "Forgejo",
        }
    }

    /// What the provider calls a request: `pull request` or `merge request`.
    #[must_use]
    pub fn request_noun(self) -> &'static str {
        match self {
            Provider::GitLab => "merge request",
            _ => "pull request",
        }
    }

    /// Parses `github`, `gitlab`, `gitea` or `forgejo` (any case).
    ///
    /// # Errors
    /// Any other name.
    pub fn parse(name: &str) -> Result<Provider, Error> {
        Provider::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                Error::config(format!(
                    "unknown provider `{name}` (expected github, gitlab, gitea or forgejo)"
                ))
            })
    }

    /// The provider a host name suggests, if any.
    #[must_use]
    pub fn infer(host: &str) -> Option<Provider> {
        let host = host.to_ascii_lowercase();
        match host.as_str() {
            "github.com" | "www.github.com" => return Some(Provider::GitHub),
            "gitlab.com" => return Some(Provider::GitLab),
            "codeberg.org" => return Some(Provider::Forgejo),
            "gitea.com" => return Some(Provider::Gitea),
            _ => {}
        }
        if host.ends_with(".ghe.com") {
            return Some(Provider::GitHub);
        }
        let labels: Vec<&str> = host.split('.').collect();
        let named = |word: &str| labels.iter().any(|label| label.contains(word));
        if named("github") {
            Some(Provider::GitHub)
        } else if named("gitlab") {
            Some(Provider::GitLab)
        } else if named("forgejo") || named("codeberg") {
            Some(Provider::Forgejo)
        } else if named("gitea") {
            Some(Provider::Gitea)
        } else {
            None
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

/// A repository on a forge, and where to reach its API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    /// The forge.
    pub provider: Provider,
    /// The API's base URL, without a trailing `/` (`https://api.github.com`,
    /// `https://gitlab.example.com/api/v4`).
    pub api: String,
    /// The repository's path: `owner/name`, or `group/subgroup/project` on GitLab.
    pub path: String,
}

impl Repository {
    /// The repository of a git remote URL.
    ///
    /// `provider` overrides the inference from the host; `api` overrides the API's base URL.
    ///
    /// # Errors
    /// A URL that names no host or repository, a host whose provider cannot be inferred, a
    /// repository path the provider cannot have, or a plain `http://` API that is not on the
    /// loopback interface (the token would cross the network in clear).
    pub fn locate(
        remote: &str,
        provider: Option<Provider>,
        api: Option<&str>,
    ) -> Result<Repository, Error> {
        let parsed = RemoteUrl::parse(remote)?;
        let provider = match provider {
            Some(provider) => provider,
            None => Provider::infer(&parsed.host).ok_or_else(|| {
                Error::config(format!(
                    "cannot tell which forge serves {}: give the provider (github, gitlab, gitea \
                     or forgejo)",
                    parsed.host
                ))
            })?,
        };
        let path = parsed.path.clone();
        let segments = path.split('/').count();
        if provider == Provider::GitLab {
            if segments < 2 {
                return Err(Error::config(format!(
                    "`{path}` is not a GitLab project path (GROUP/PROJECT) in {remote_shown}",
                    remote_shown = redact_url(remote)
                )));
            }
        } else if segments != 2 {
            return Err(Error::config(format!(
                "`{path}` is not a {provider} repository path (OWNER/NAME) in {}",
                redact_url(remote)
            )));
        }
        let api = match api {
            Some(api) => api.trim().trim_end_matches('/').to_owned(),
            None => default_api(provider, &parsed),
        };
        check_api_url(&api)?;
        Ok(Repository {
            provider,
            api,
            path,
        })
    }

    /// The owner (or GitLab namespace): everything before the last `/`.
    #[must_use]
    pub fn owner(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(owner, _)| owner)
    }

    /// The repository's own name: everything after the last `/`.
    #[must_use]
    pub fn name(&self) -> &str {
        self.path
            .rsplit_once('/')
            .map_or(self.path.as_str(), |(_, name)| name)
    }
}

/// The parts of a remote URL this crate uses.
struct RemoteUrl {
    /// `https`, `http` or `ssh` (scp-like URLs are `ssh`).
    scheme: String,
    host: String,
    /// The port written in an HTTP(S) URL.
    port: Option<u16>,
    /// Without leading or trailing `/` and without `.git`.
    path: String,
}

impl RemoteUrl {
    fn parse(remote: &str) -> Result<RemoteUrl, Error> {
        let invalid = |why: &str| {
            Error::config(format!(
                "cannot find a repository in the remote URL {}: {why}",
                redact_url(remote)
            ))
        };
        let remote = remote.trim();
        let (scheme, authority, path) = if let Some((scheme, rest)) = remote.split_once("://") {
            let scheme = scheme.to_ascii_lowercase();
            if !matches!(scheme.as_str(), "https" | "http" | "ssh" | "git") {
                return Err(invalid("the scheme is not https, http, ssh or git"));
            }
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            (scheme, authority.to_owned(), path.to_owned())
        } else if let Some((authority, path)) = remote.split_once(':')
            && !authority.contains('/')
            && !authority.is_empty()
        {
            ("ssh".to_owned(), authority.to_owned(), path.to_owned())
        } else {
            return Err(invalid(
                "expected https://HOST/PATH, ssh://HOST/PATH or HOST:PATH",
            ));
        };
        let host_port = authority
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, host)| host);
        let (host, port) = split_port(host_port);
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        let path = path.split(['?', '#']).next().unwrap_or("");
        let path = path.trim_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path);
        if path.is_empty()
            || path
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(invalid("no repository path"));
        }
        let port = match (scheme.as_str(), port) {
            ("https" | "http", Some(port)) => Some(
                port.parse()
                    .map_err(|_| invalid("the port is not a number"))?,
            ),
            _ => None,
        };
        Ok(RemoteUrl {
            scheme: if scheme == "git" {
                "ssh".to_owned()
            } else {
                scheme
            },
            host: host.to_ascii_lowercase(),
            port,
            path: path.to_owned(),
        })
    }

    /// `scheme://host[:port]` of the web server: the remote's own for HTTP(S), HTTPS on the
    /// default port for SSH remotes.
    fn web(&self) -> String {
        let scheme = if self.scheme == "http" {
            "http"
        } else {
            "https"
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(port) => format!("{scheme}://{host}:{port}"),
            None => format!("{scheme}://{host}"),
        }
    }
}

fn split_port(host_port: &str) -> (&str, Option<&str>) {
    if let Some(bracketed) = host_port.strip_prefix('[') {
        return match bracketed.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => (bracketed, None),
        };
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (host_port, None),
    }
}

fn default_api(provider: Provider, remote: &RemoteUrl) -> String {
    let web = remote.web();
    match provider {
        Provider::GitHub if remote.host == "github.com" || remote.host == "www.github.com" => {
            "https://api.github.com".to_owned()
        }
        Provider::GitHub if remote.host.ends_with(".ghe.com") => {
            format!("https://api.{}", remote.host)
        }
        Provider::GitHub => format!("{web}/api/v3"),
        Provider::GitLab => format!("{web}/api/v4"),
        Provider::Gitea | Provider::Forgejo => format!("{web}/api/v1"),
    }
}

/// An API URL must be HTTPS, or plain HTTP to the loopback interface.
fn check_api_url(api: &str) -> Result<(), Error> {
    let Some((scheme, rest)) = api.split_once("://") else {
        return Err(Error::config(format!(
            "the API URL `{api}` is not an http(s) URL"
        )));
    };
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if authority.is_empty() {
        return Err(Error::config(format!("the API URL `{api}` has no host")));
    }
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if is_loopback(split_port(authority).0) => Ok(()),
        "http" => Err(Error::config(format!(
            "the API URL `{api}` is plain http: the token would cross the network in clear (only \
             loopback addresses may use http)"
        ))),
        _ => Err(Error::config(format!(
            "the API URL `{api}` is not an http(s) URL"
        ))),
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A URL for messages: without the user information (which may hold a token).
#[must_use]
pub(crate) fn redact_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find('/').unwrap_or(rest.len());
            match rest[..end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{host}{}", &rest[end..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Provider, Repository};

    fn locate(url: &str) -> Repository {
        Repository::locate(url, None, None).unwrap()
    }

    #[test]
    fn providers_from_hosts() {
        let github = locate("https://github.com/acme/fleet.git");
        assert_eq!(github.provider, Provider::GitHub);
        assert_eq!(github.api, "https://api.github.com");
        assert_eq!((github.owner(), github.name()), ("acme", "fleet"));
        let ghes = locate("git@github.acme.example:platform/fleet.git");
        assert_eq!(ghes.api, "https://github.acme.example/api/v3");
        let ghe_cloud = locate("https://octo.ghe.com/acme/fleet");
        assert_eq!(ghe_cloud.api, "https://api.octo.ghe.com");
        let gitlab = locate("ssh://git@gitlab.com:2222/acme/platform/fleet.git");
        assert_eq!(gitlab.provider, Provider::GitLab);
        assert_eq!(gitlab.api, "https://gitlab.com/api/v4");
        assert_eq!(gitlab.path, "acme/platform/fleet");
        assert_eq!(gitlab.owner(), "acme/platform");
        let codeberg = locate("https://codeberg.org/acme/fleet");
        assert_eq!(codeberg.provider, Provider::Forgejo);
        assert_eq!(codeberg.api, "https://codeberg.org/api/v1");
        let gitea = locate("https://gitea.acme.example:3000/acme/fleet");
        assert_eq!(gitea.provider, Provider::Gitea);
        assert_eq!(gitea.api, "https://gitea.acme.example:3000/api/v1");
    }

    #[test]
    fn unknown_hosts_need_the_provider() {
        let err = Repository::locate("https://git.acme.example/a/b", None, None).unwrap_err();
        assert!(err.to_string().contains("give the provider"), "{err}");
        let repo = Repository::locate(
            "https://git.acme.example/a/b",
            Some(Provider::GitLab),
            Some("https://git.acme.example/gitlab/api/v4/"),
        )
        .unwrap();
        assert_eq!(repo.api, "https://git.acme.example/gitlab/api/v4");
    }

    #[test]
    fn bad_paths_and_cleartext_apis_are_refused() {
        assert!(Repository::locate("https://github.com/acme", None, None).is_err());
        assert!(Repository::locate("https://github.com/a/b/c", None, None).is_err());
        let err =
            Repository::locate("https://user:ghp_secret@github.com/a/b/c", None, None).unwrap_err();
        assert!(!err.to_string().contains("ghp_secret"), "{err}");
        let err = Repository::locate("http://gitea.acme.example/a/b", Some(Provider::Gitea), None)
            .unwrap_err();
        assert!(err.to_string().contains("in clear"), "{err}");
        let local =
            Repository::locate("http://127.0.0.1:8080/a/b", Some(Provider::Gitea), None).unwrap();
        assert_eq!(local.api, "http://127.0.0.1:8080/api/v1");
    }

    #[test]
    fn provider_names() {
        assert_eq!(Provider::parse("GitLab").unwrap(), Provider::GitLab);
        assert!(Provider::parse("bitbucket").is_err());
    }
}
