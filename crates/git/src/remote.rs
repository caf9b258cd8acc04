//! A remote repository: its URL, credentials, extra HTTP headers, host key policy and extra CA
//! certificates, and the libgit2 options built from them.
//!
//! Everything that talks to a server goes through [`Remote`], so the rules live in one place:
//! each network operation activates a [`Session`] for the crate's transports (which send the
//! credentials and headers, and check host keys and certificates), headers are validated before
//! any request is made, and libgit2's errors are mapped to [`Error`] variants that never contain
//! a secret, using what the transport recorded.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use git2::{AutotagOption, FetchOptions, Oid, PushOptions, RemoteCallbacks, Repository};

use crate::error::Error;
use crate::known_hosts::HostKeyCheck;
use crate::reference::{CheckoutRef, Revision};
use crate::transport::{Activation, Failure, Session};
use crate::url::{RemoteUrl, Transport, UrlPolicy};
use image_update_secret::Secret;

/// How to authenticate to the remote.
#[derive(Debug, Clone, Default)]
pub enum Auth {
    /// No credentials (public repositories, or credentials carried by extra headers).
    #[default]
    None,
    /// HTTP Basic: a user name and a password or token (GitHub: any user name, the token as
    /// password; Flux's Secret `username`/`password`).
    Basic {
        /// User name.
        username: String,
        /// Password or token.
        password: Secret,
    },
    /// HTTP `Authorization: Bearer <token>` (Flux's Secret `bearerToken`).
    Bearer {
        /// The token.
        token: Secret,
    },
    /// An SSH private key in OpenSSH or PEM format (Flux's Secret `identity`), with an optional
    /// passphrase (Flux's `password`).
    SshKey {
        /// User name when the URL has none (`git` when neither gives one).
        username: Option<String>,
        /// The private key text.
        private_key: Secret,
        /// The key's passphrase.
        passphrase: Option<Secret>,
    },
}

/// An extra HTTP header sent with every request (for example the `AUTHORIZATION: basic ...`
/// header GitHub's checkout action stores in `http.extraHeader`).
#[derive(Clone, PartialEq, Eq)]
pub struct HttpHeader {
    name: String,
    value: Secret,
}

impl HttpHeader {
    /// A header `name: value`. The value is treated as a secret.
    pub fn new(name: impl Into<String>, value: impl Into<Secret>) -> Result<Self, Error> {
        let name = name.into();
        let value = value.into();
        let invalid = |reason| Error::InvalidHeader {
            name: name.clone(),
            reason,
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return Err(invalid("the name must be a non-empty HTTP token"));
        }
        if value
            .expose()
            .bytes()
            .any(|b| b == b'\r' || b == b'\n' || b == 0)
        {
            return Err(invalid("the value contains a line break or NUL"));
        }
        // The transport sets these itself.
        const RESERVED: [&str; 6] = [
            "user-agent",
            "host",
            "accept",
            "content-type",
            "transfer-encoding",
            "content-length",
        ];
        if RESERVED
            .iter()
            .any(|reserved| name.eq_ignore_ascii_case(reserved))
        {
            return Err(invalid("the HTTP transport sets this header itself"));
        }
        Ok(Self { name, value })
    }

    /// Parses a `Name: value` line, the form of git's `http.extraHeader`.
    pub fn parse(line: &str) -> Result<Self, Error> {
        match line.split_once(':') {
            Some((name, value)) => Self::new(name.trim(), value.trim()),
            None => Err(Error::InvalidHeader {
                name: String::new(),
                reason: "expected `Name: value`",
            }),
        }
    }

    /// The `http.extraHeader` values a git config file gives for `url`, in order: the plain
    /// `http.extraHeader` and every `http.<prefix>.extraHeader` whose `<prefix>` starts `url`
    /// (actions/checkout writes `http.https://github.com/.extraheader` into the workspace's
    /// `.git/config`). An empty value clears the list, as in git. git's finer URL matching
    /// (wildcards, user names) is not reproduced.
    pub fn from_git_config(config_file: &std::path::Path, url: &str) -> Result<Vec<Self>, Error> {
        let read = |source| Error::Git {
            operation: "reading http.extraHeader from the git config",
            source,
        };
        // libgit2 opens a missing file as an empty config; a missing file is the caller's error.
        fs_err::metadata(config_file)?;
        let config = git2::Config::open(config_file).map_err(read)?;
        let mut values = Vec::new();
        let mut entries = config.entries(None).map_err(read)?;
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(read)?;
            let (Ok(name), Ok(value)) = (entry.name(), entry.value()) else {
                continue;
            };
            let Some(middle) = name.strip_prefix("http.").and_then(|rest| {
                rest.strip_suffix(".extraheader")
                    .or_else(|| (rest == "extraheader").then_some(""))
            }) else {
                continue;
            };
            if !middle.is_empty() && !url.starts_with(middle) {
                continue;
            }
            if value.is_empty() {
                values.clear();
            } else {
                values.push(Secret::new(value));
            }
        }
        values
            .iter()
            .map(|value| Self::parse(value.expose()))
            .collect()
    }

    /// The header name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header value.
    pub(crate) fn value(&self) -> &Secret {
        &self.value
    }
}

impl fmt::Debug for HttpHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpHeader")
            .field("name", &self.name)
            .field("value", &self.value)
            .finish()
    }
}

/// Settings of a [`Remote`] besides its URL.
#[derive(Debug, Clone, Default)]
pub struct RemoteSettings {
    /// Credentials.
    pub auth: Auth,
    /// Extra HTTP headers for every request.
    pub http_headers: Vec<HttpHeader>,
    /// SSH host key policy (default: check against an empty `known_hosts`, which refuses every
    /// host until known hosts are given).
    pub host_key_check: HostKeyCheck,
    /// Allow `file://` URLs and local paths (tests; the local transport runs no server hooks and
    /// cannot fetch shallow).
    pub allow_local: bool,
    /// Allow plain `http://` to hosts that are not loopback.
    pub allow_plain_http: bool,
    /// PEM certificates of CAs trusted for HTTPS besides the bundled Mozilla roots and the
    /// system's trust store (Flux's Secret `ca.crt`, a private CA).
    pub ca_certificates: Option<String>,
}

/// A remote repository and how to talk to it.
#[derive(Debug, Clone)]
pub struct Remote {
    pub(crate) url: RemoteUrl,
    pub(crate) auth: Auth,
    pub(crate) http_headers: Vec<HttpHeader>,
    pub(crate) host_key_check: HostKeyCheck,
    /// Trusted for HTTPS besides the bundled and system roots.
    pub(crate) ca_certificates: Arc<[ureq::tls::Certificate<'static>]>,
}

/// A ref the remote advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRef {
    /// Full ref name (`HEAD`, `refs/heads/main`, `refs/tags/v1^{}` for a peeled tag).
    pub name: String,
    /// The object it points to.
    pub id: Oid,
    /// For a symbolic ref (`HEAD`), the ref it points to.
    pub symref_target: Option<String>,
}

impl Remote {
    /// Validates `url` against `settings` (scheme, loopback rule for plain HTTP, local paths,
    /// embedded passwords) and parses the extra CA certificates.
    pub fn new(url: &str, settings: RemoteSettings) -> Result<Self, Error> {
        crate::global::init();
        let policy = UrlPolicy {
            allow_local: settings.allow_local,
            allow_plain_http: settings.allow_plain_http,
        };
        let url = RemoteUrl::parse(url, policy)?;
        let ca_certificates = match &settings.ca_certificates {
            Some(pem) => parse_certificates(pem)?,
            None => Arc::from(Vec::new()),
        };
        Ok(Self {
            url,
            auth: settings.auth,
            http_headers: settings.http_headers,
            host_key_check: settings.host_key_check,
            ca_certificates,
        })
    }

    /// The URL.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url.url
    }

    /// The transport the URL uses.
    #[must_use]
    pub fn transport(&self) -> Transport {
        self.url.transport
    }

    /// Lists the refs the remote advertises, without cloning.
    pub fn list(&self) -> Result<Vec<RemoteRef>, Error> {
        self.with_listing(|heads, _| Ok(heads))
    }

    /// The commit a remote ref points to (`HEAD`, `refs/heads/main`, a short branch name such as
    /// `main`, or `refs/tags/v1`; tags are peeled), or `None` when the remote has no such ref.
    pub fn ls_remote(&self, reference: &str) -> Result<Option<Oid>, Error> {
        let heads = self.list()?;
        let candidates: Vec<String> = if reference == "HEAD" || reference.starts_with("refs/") {
            vec![reference.to_owned()]
        } else {
            vec![
                format!("refs/heads/{reference}"),
                format!("refs/tags/{reference}"),
            ]
        };
        Ok(candidates.iter().find_map(|name| peeled(&heads, name)))
    }

    /// The revision a checkout of `reference` would get now, in Flux's `observedSourceRevision`
    /// form, read from the remote's ref advertisement (the Job's short-circuit: when it equals
    /// the last observed revision, nothing changed upstream). A `Commit` ref resolves to itself
    /// without contacting the remote.
    pub fn resolve(&self, reference: &CheckoutRef) -> Result<Revision, Error> {
        let reference = reference.normalized();
        if let CheckoutRef::Commit { id, branch } = &reference {
            return Ok(Revision::new(
                branch.as_deref(),
                crate::reference::parse_commit_id(id)?,
            ));
        }
        self.with_listing(|heads, default_branch| {
            let not_found = |name: &str| Error::RefNotFound {
                url: self.url().to_owned(),
                reference: name.to_owned(),
            };
            match &reference {
                CheckoutRef::DefaultBranch => {
                    let branch = default_branch.ok_or_else(|| not_found("HEAD"))?;
                    let id = peeled(&heads, &branch).ok_or_else(|| not_found(&branch))?;
                    Ok(Revision::new(
                        Some(branch.strip_prefix("refs/heads/").unwrap_or(&branch)),
                        id,
                    ))
                }
                CheckoutRef::Branch(branch) => {
                    let name = format!("refs/heads/{branch}");
                    let id = peeled(&heads, &name).ok_or_else(|| not_found(&name))?;
                    Ok(Revision::new(Some(branch), id))
                }
                CheckoutRef::Tag(tag) => {
                    let name = format!("refs/tags/{tag}");
                    let id = peeled(&heads, &name).ok_or_else(|| not_found(&name))?;
                    Ok(Revision::new(Some(tag), id))
                }
                CheckoutRef::Name(name) => {
                    let id = peeled(&heads, name).ok_or_else(|| not_found(name))?;
                    Ok(Revision::new(Some(name), id))
                }
                CheckoutRef::Commit { .. } => unreachable_commit(),
            }
        })
    }

    /// Connects, reads the ref advertisement and hands it (and the default branch) to `read`.
    ///
    /// This runs a download whose only refspec matches nothing: the ref list is read, and no
    /// pack is fetched. The download needs a repository; an in-memory one with an empty object
    /// database does.
    fn with_listing<T>(
        &self,
        read: impl FnOnce(Vec<RemoteRef>, Option<String>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let local_error = |source| Error::Git {
            operation: "preparing an in-memory repository for ls-remote",
            source,
        };
        let odb = git2::Odb::new().map_err(local_error)?;
        let repo = Repository::from_odb(odb).map_err(local_error)?;
        let mut remote = repo.remote_anonymous(self.url()).map_err(local_error)?;
        let state = CallbackState::new(self);
        let mut options = self.fetch_options(&state, None);
        remote
            .download(
                &["refs/image-update/ls-remote/match-nothing"],
                Some(&mut options),
            )
            .map_err(|err| self.map_error(&state, "list refs of", err))?;
        let heads = remote
            .list()
            .map_err(|err| self.map_error(&state, "list refs of", err))?
            .iter()
            .map(|head| RemoteRef {
                name: head.name().to_owned(),
                id: head.oid(),
                symref_target: head.symref_target().map(str::to_owned),
            })
            .collect::<Vec<_>>();
        let default_branch = remote
            .default_branch()
            .ok()
            .and_then(|buf| buf.as_str().ok().map(str::to_owned));
        let _ = remote.disconnect();
        read(heads, default_branch)
    }

    /// The callbacks for one network operation, sharing `state`.
    pub(crate) fn callbacks<'a>(&'a self, state: &'a CallbackState) -> RemoteCallbacks<'a> {
        let mut callbacks = RemoteCallbacks::new();
        callbacks.push_update_reference(move |reference, status| {
            state
                .push_statuses
                .borrow_mut()
                .push((reference.to_owned(), status.map(str::to_owned)));
            Ok(())
        });
        callbacks.sideband_progress(move |data| {
            let mut messages = state.server_messages.borrow_mut();
            if messages.len() < 16 * 1024 {
                messages.push_str(&String::from_utf8_lossy(data).replace('\r', "\n"));
            }
            true
        });
        callbacks
    }

    /// Fetch options: callbacks, no tags, and `depth` (`None` = full history).
    pub(crate) fn fetch_options<'a>(
        &'a self,
        state: &'a CallbackState,
        depth: Option<u32>,
    ) -> FetchOptions<'a> {
        let mut options = FetchOptions::new();
        options.remote_callbacks(self.callbacks(state));
        options.download_tags(AutotagOption::None);
        if let Some(depth) = depth {
            options.depth(i32::try_from(depth).unwrap_or(i32::MAX));
        }
        options
    }

    /// Push options: callbacks and `git push -o` options.
    pub(crate) fn push_options<'a>(
        &'a self,
        state: &'a CallbackState,
        push_options: &[String],
    ) -> PushOptions<'a> {
        let mut options = PushOptions::new();
        options.remote_callbacks(self.callbacks(state));
        let push_options: Vec<&str> = push_options.iter().map(String::as_str).collect();
        options.remote_push_options(&push_options);
        options
    }

    /// Maps a libgit2 error from a network operation, using what the callbacks recorded.
    pub(crate) fn map_error(
        &self,
        state: &CallbackState,
        operation: &'static str,
        err: git2::Error,
    ) -> Error {
        let url = self.url().to_owned();
        match state.activation.session().failure() {
            Some(Failure::HostKey(key, problem)) => Error::HostKey {
                host: self.url.host.clone(),
                port: self.url.port,
                key,
                problem,
            },
            Some(Failure::Authentication(reason)) => Error::Authentication { url, reason },
            Some(Failure::Certificate) => Error::Certificate { url, source: err },
            Some(Failure::Network) => Error::Network { url, source: err },
            Some(Failure::Status) => Error::Remote {
                operation,
                url,
                source: err,
            },
            None => match (err.code(), err.class()) {
                (git2::ErrorCode::Auth, _) => Error::Authentication {
                    url,
                    reason: "the server refused the credentials",
                },
                (git2::ErrorCode::Certificate, _) => Error::Certificate { url, source: err },
                (git2::ErrorCode::Timeout, _)
                | (_, git2::ErrorClass::Net | git2::ErrorClass::Os) => {
                    Error::Network { url, source: err }
                }
                _ => Error::Remote {
                    operation,
                    url,
                    source: err,
                },
            },
        }
    }
}

/// Parses PEM CA certificates; at least one must be there.
fn parse_certificates(pem: &str) -> Result<Arc<[ureq::tls::Certificate<'static>]>, Error> {
    let invalid = |reason: String| Error::InvalidCaCertificates { reason };
    let mut certificates = Vec::new();
    for item in ureq::tls::parse_pem(pem.as_bytes()) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(certificate)) => certificates.push(certificate),
            Ok(_) => {}
            Err(e) => return Err(invalid(format!("not valid PEM: {e}"))),
        }
    }
    if certificates.is_empty() {
        return Err(invalid("no `BEGIN CERTIFICATE` block".to_owned()));
    }
    Ok(Arc::from(certificates))
}

/// What one network operation observed: its transport session, and the push statuses and
/// server messages libgit2's callbacks reported.
pub(crate) struct CallbackState {
    /// The session the transport reads its settings from and records its failure in, active
    /// on this thread while the state lives.
    activation: Activation,
    /// `push_update_reference` reports: remote ref and the server's status (`None` = accepted).
    pub(crate) push_statuses: RefCell<Vec<(String, Option<String>)>>,
    /// Sideband text from the server (`remote:` lines), capped.
    pub(crate) server_messages: RefCell<String>,
}

impl CallbackState {
    /// The state of one operation on `remote`, its session active on this thread.
    pub(crate) fn new(remote: &Remote) -> Self {
        Self {
            activation: Activation::new(Session::new(remote)),
            push_statuses: RefCell::default(),
            server_messages: RefCell::default(),
        }
    }
}

/// The commit `name` points to in an advertisement, preferring the peeled `^{}` entry of a tag.
fn peeled(heads: &[RemoteRef], name: &str) -> Option<Oid> {
    let peeled_name = format!("{name}^{{}}");
    heads
        .iter()
        .find(|head| head.name == peeled_name)
        .or_else(|| heads.iter().find(|head| head.name == name))
        .map(|head| head.id)
}

fn unreachable_commit() -> Result<Revision, Error> {
    // `resolve` answers commit refs before listing; keep the match total without panicking.
    Err(Error::InvalidCommitId {
        commit: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Auth, HttpHeader, Remote, RemoteSettings};
    use crate::error::Error;
    use image_update_secret::Secret;

    #[test]
    fn header_validation_never_quotes_the_value() {
        let err = HttpHeader::new("Authorization", "Basic c2VjcmV0\r\nX-Evil: 1").unwrap_err();
        assert!(matches!(err, Error::InvalidHeader { .. }));
        assert!(!format!("{err} {err:?}").contains("c2VjcmV0"));
        assert!(HttpHeader::new("Bad Name", "x").is_err());
        assert!(HttpHeader::new("Host", "x").is_err());
        let header =
            HttpHeader::parse("AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46c2VjcmV0").unwrap();
        assert_eq!(header.name(), "AUTHORIZATION");
        assert!(!format!("{header:?}").contains("eC1hY2Nlc3MtdG9rZW46c2VjcmV0"));
    }

    #[test]
    fn extra_headers_are_read_from_a_git_config_like_actions_checkout_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        fs_err::write(
            &config,
            "[core]\n\tbare = false\n\
             [http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M6c2VjcmV0\n\
             [http \"https://gitlab.com/\"]\n\textraheader = X-Other: 1\n\
             [http]\n\textraHeader = X-Trace: on\n",
        )
        .unwrap();
        let headers = HttpHeader::from_git_config(&config, "https://github.com/org/repo").unwrap();
        let names: Vec<&str> = headers.iter().map(HttpHeader::name).collect();
        assert_eq!(names, ["AUTHORIZATION", "X-Trace"]);
        assert!(HttpHeader::from_git_config(&dir.path().join("missing"), "https://x").is_err());
    }

    #[test]
    fn debug_of_a_remote_hides_credentials() {
        let settings = RemoteSettings {
            auth: Auth::Basic {
                username: "bot".into(),
                password: Secret::new("p4ssw0rd-value"),
            },
            http_headers: vec![HttpHeader::new("X-Token", "header-secret").unwrap()],
            ..RemoteSettings::default()
        };
        let remote = Remote::new("https://example.com/repo.git", settings).unwrap();
        let debug = format!("{remote:?}");
        assert!(
            !debug.contains("p4ssw0rd-value") && !debug.contains("header-secret"),
            "{debug}"
        );
        assert!(debug.contains("bot"));
    }
}
