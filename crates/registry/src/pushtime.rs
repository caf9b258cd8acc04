//! When an image was pushed, from a source the publisher does not control:
//! the registry vendors' own APIs. One [`PushTimeApi`] per vendor:
//!
//! | vendor | request | time used |
//! |---|---|---|
//! | Docker Hub | `GET /v2/namespaces/{ns}/repositories/{repo}/tags/{tag}` | `tag_last_pushed`, when the tag's `digest` is the one checked |
//! | GitHub Container Registry | `GET /orgs/{org}/packages/container/{pkg}/versions` (or `/users/…`), paged | `created_at` of the version named by the digest |
//! | Quay | `GET /api/v1/repository/{ns}/{repo}/tag/?specificTag={tag}&onlyActiveTags=true` | `start_ts`, when the tag's `manifest_digest` is the one checked |
//! | Harbor | `GET /api/v2.0/projects/{project}/repositories/{repo}/artifacts/{digest}` | the artifact's `push_time` |
//! | GitLab | `GET /api/v4/projects/{path}/registry/repositories`, then `…/repositories/{id}/tags/{tag}` | `created_at`, when the tag's `digest` is the one checked |
//!
//! The API is chosen by the registry host (Docker Hub, `ghcr.io`, `quay.io`,
//! `registry.gitlab.com`), or by the host's `push_time` setting (Harbor and
//! self-hosted GitLab need it; a `url` replaces the API's address). The
//! credentials configured for the registry are used: Docker Hub's
//! username and password or token log in to Hub; GitHub's, Quay's and
//! GitLab's password is sent as a bearer token; Harbor's as Basic auth.
//!
//! Fail closed: an API that is down, refuses, or answers something that does
//! not name this digest gives no time (`Ok(None)` for "not found or not
//! this digest", `Err` for failures); the caller then treats the image as
//! too young.

use serde_json::Value;

use super::settings::PushTimeConfig;
use super::url::Url;
use super::{
    Credential, Error, MAX_DOCUMENT, RegistryClient, Repository, Result, Secret, Timestamp,
    basic_header, context,
};

/// Most pages read from a paged API (GitHub: 100 versions a page).
pub const MAX_PAGES: usize = 10;

/// A push time and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTime {
    pub at: Timestamp,
    /// `Docker Hub tag_last_pushed`, `GitHub package version created_at`…
    pub source: String,
}

/// A vendor API that reports when an image was pushed.
pub trait PushTimeApi: Send + Sync {
    /// The vendor, for messages.
    fn name(&self) -> &'static str;

    /// When `digest` (the manifest `tag` points at) was pushed to `repo`.
    ///
    /// # Errors
    /// The API failed or answered something malformed.
    fn pushed_at(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>>;
}

/// The API for `repo`'s registry: from its `push_time` setting, else by
/// host; `None` when the registry has none.
pub fn api_for(client: &RegistryClient, repo: &Repository) -> Option<Box<dyn PushTimeApi>> {
    let host = repo.registry();
    let configured = client.settings().push_time(host);
    let (kind, url) = match configured {
        Some(PushTimeConfig { api, url }) => (api, url),
        None => match host {
            "index.docker.io" | "docker.io" | "registry-1.docker.io" => {
                ("dockerhub".to_owned(), None)
            }
            "ghcr.io" => ("ghcr".to_owned(), None),
            "quay.io" => ("quay".to_owned(), None),
            "registry.gitlab.com" => ("gitlab".to_owned(), None),
            _ => return None,
        },
    };
    let base = |default: &str| url.clone().unwrap_or_else(|| default.to_owned());
    match kind.as_str() {
        "dockerhub" => Some(Box::new(DockerHub {
            base: base("https://hub.docker.com"),
        })),
        "ghcr" => Some(Box::new(Ghcr {
            base: base("https://api.github.com"),
        })),
        "quay" => Some(Box::new(Quay {
            base: base("https://quay.io"),
        })),
        "harbor" => Some(Box::new(Harbor {
            base: base(&format!("https://{host}")),
        })),
        "gitlab" => Some(Box::new(GitLab {
            base: base(if host == "registry.gitlab.com" {
                "https://gitlab.com"
            } else {
                "https://gitlab.invalid"
            }),
        })),
        _ => None,
    }
}

impl RegistryClient {
    /// When `digest` (what `tag` points at) was pushed, from the vendor API
    /// of `repo`'s registry; `Ok(None)` when there is no such API or it does
    /// not know this digest.
    ///
    /// # Errors
    /// The API failed.
    pub fn push_time(
        &self,
        repo: &Repository,
        tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>> {
        self.boundary(repo, false, || match api_for(self, repo) {
            Some(api) => api.pushed_at(self, repo, tag, digest),
            None => Ok(None),
        })
    }

    /// `GET url` against a vendor API, with `authorization`; the JSON body
    /// and the `Link: rel="next"` target of a 200, `None` for a 404.
    fn api_get(
        &self,
        repo: &Repository,
        url: &str,
        authorization: Option<&Secret>,
    ) -> Result<Option<(Value, Option<String>)>> {
        let ctx = context(repo);
        let parsed = Url::parse(url).ok_or_else(|| {
            Error::InvalidSetting(format!("push_time url {url:?} is not an http(s) URL"))
        })?;
        let resp = self.transport.send(&super::transport::Request {
            method: "GET",
            url: parsed,
            accept: Some("application/json"),
            authorization,
            body: None,
            secret_body: false,
            context: &ctx,
            max_body: MAX_DOCUMENT,
            extra: Default::default(),
        })?;
        match resp.status {
            200 => {}
            404 => return Ok(None),
            _ => return Err(super::status_error(&ctx, "GET", &resp)),
        }
        let value = serde_json::from_slice(&resp.body).map_err(|e| Error::InvalidResponse {
            context: Box::new(ctx.clone()),
            url: resp.url.to_string(),
            message: format!("malformed push-time answer: {e}"),
        })?;
        let next = super::next_link(&resp).and_then(|l| resp.url.join(&l).map(|u| u.to_string()));
        Ok(Some((value, next)))
    }

    /// The registry credential's password or token, as a bearer header.
    fn api_bearer(&self, repo: &Repository) -> Result<Option<Secret>> {
        let (credential, _) = self.credential(repo)?;
        Ok(match credential {
            Credential::Basic { password, .. } => {
                Some(Secret::new(format!("Bearer {}", password.expose())))
            }
            Credential::RegistryToken(t) | Credential::IdentityToken { token: t, .. } => {
                Some(Secret::new(format!("Bearer {}", t.expose())))
            }
            Credential::Anonymous => None,
        })
    }
}

fn invalid(repo: &Repository, url: &str, message: String) -> Error {
    Error::InvalidResponse {
        context: Box::new(context(repo)),
        url: url.to_owned(),
        message,
    }
}

/// The time in field `field` of the JSON object at `url` (a tag or an
/// artifact), when that object names `digest`: `None` when it is absent or
/// names another digest.
fn pushed_if_digest(
    client: &RegistryClient,
    repo: &Repository,
    url: &str,
    auth: Option<&Secret>,
    digest: &str,
    field: &str,
    source: &str,
) -> Result<Option<PushTime>> {
    let Some((v, _)) = client.api_get(repo, url, auth)? else {
        return Ok(None);
    };
    if v.get("digest").and_then(Value::as_str) != Some(digest) {
        return Ok(None);
    }
    Ok(Some(PushTime {
        at: time_field(repo, url, &v, field)?,
        source: source.to_owned(),
    }))
}

/// An RFC 3339 time in field `field` of `v`.
fn time_field(repo: &Repository, url: &str, v: &Value, field: &str) -> Result<Timestamp> {
    let text = v
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(repo, url, format!("the answer has no {field}")))?;
    Timestamp::parse_rfc3339(text).map_err(|e| invalid(repo, url, format!("{field}: {e}")))
}

/// Percent-encodes everything but RFC 3986 unreserved characters: one path
/// segment (GitHub package and GitLab project names carry `/` as `%2F`).
fn encode_component(value: &str) -> String {
    crate::url::encode_unreserved(value)
}

/// Splits `ns/rest` (Docker Hub's official images are `library/…`).
fn first_and_rest(path: &str) -> (&str, &str) {
    path.split_once('/').unwrap_or(("library", path))
}

struct DockerHub {
    base: String,
}

impl PushTimeApi for DockerHub {
    fn name(&self) -> &'static str {
        "Docker Hub"
    }

    fn pushed_at(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>> {
        let (ns, name) = first_and_rest(repo.repository());
        // Hub's API takes a JWT from its login endpoint, for private
        // repositories; public ones answer anonymously.
        let auth = match client.credential(repo)?.0 {
            Credential::Basic { username, password } => {
                let url = format!("{}/v2/users/login", self.base);
                let ctx = context(repo);
                let body = serde_json::json!({"username": username, "password": password.expose()})
                    .to_string();
                let resp = client.transport.send(&super::transport::Request {
                    method: "POST",
                    url: Url::parse(&url).ok_or_else(|| {
                        Error::InvalidSetting(format!("bad Docker Hub URL {url}"))
                    })?,
                    accept: Some("application/json"),
                    authorization: None,
                    body: Some(("application/json", Secret::new(body))),
                    secret_body: true,
                    context: &ctx,
                    max_body: super::MAX_SMALL,
                    extra: Default::default(),
                })?;
                if resp.status != 200 {
                    return Err(super::status_error(&ctx, "POST", &resp));
                }
                let token = serde_json::from_slice::<Value>(&resp.body)
                    .ok()
                    .and_then(|v| v.get("token").and_then(Value::as_str).map(str::to_owned))
                    .ok_or_else(|| invalid(repo, &url, "the login answer has no token".into()))?;
                client.secrets.add(&token);
                Some(Secret::new(format!("Bearer {token}")))
            }
            _ => None,
        };
        let url = format!(
            "{}/v2/namespaces/{}/repositories/{}/tags/{}",
            self.base,
            encode_component(ns),
            encode_component(name),
            encode_component(tag)
        );
        pushed_if_digest(
            client,
            repo,
            &url,
            auth.as_ref(),
            digest,
            "tag_last_pushed",
            "Docker Hub tag_last_pushed",
        )
    }
}

struct Ghcr {
    base: String,
}

impl PushTimeApi for Ghcr {
    fn name(&self) -> &'static str {
        "GitHub Container Registry"
    }

    fn pushed_at(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        _tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>> {
        let (owner, package) = repo
            .repository()
            .split_once('/')
            .ok_or_else(|| invalid(repo, &self.base, "no owner in the repository".into()))?;
        let auth = client.api_bearer(repo)?;
        if auth.is_none() {
            // GitHub's packages API needs a token, even for public images.
            return Ok(None);
        }
        for kind in ["orgs", "users"] {
            let mut url = Some(format!(
                "{}/{kind}/{}/packages/container/{}/versions?per_page=100",
                self.base,
                encode_component(owner),
                encode_component(package)
            ));
            let mut pages = 0;
            let mut found_owner = false;
            while let Some(u) = url.take() {
                pages += 1;
                if pages > MAX_PAGES {
                    break;
                }
                let Some((v, next)) = client.api_get(repo, &u, auth.as_ref())? else {
                    break;
                };
                found_owner = true;
                let versions = v
                    .as_array()
                    .ok_or_else(|| invalid(repo, &u, "the versions answer is not a list".into()))?;
                if let Some(version) = versions
                    .iter()
                    .find(|ver| ver.get("name").and_then(Value::as_str) == Some(digest))
                {
                    return Ok(Some(PushTime {
                        at: time_field(repo, &u, version, "created_at")?,
                        source: "GitHub package version created_at".to_owned(),
                    }));
                }
                url = next;
            }
            if found_owner {
                return Ok(None);
            }
        }
        Ok(None)
    }
}

struct Quay {
    base: String,
}

impl PushTimeApi for Quay {
    fn name(&self) -> &'static str {
        "Quay"
    }

    fn pushed_at(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>> {
        let url = format!(
            "{}/api/v1/repository/{}/tag/?specificTag={}&onlyActiveTags=true",
            self.base,
            repo.repository(),
            encode_component(tag)
        );
        let auth = client.api_bearer(repo)?;
        let Some((v, _)) = client.api_get(repo, &url, auth.as_ref())? else {
            return Ok(None);
        };
        let tags = v
            .get("tags")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid(repo, &url, "the answer has no tags list".into()))?;
        let Some(t) = tags.iter().find(|t| {
            t.get("name").and_then(Value::as_str) == Some(tag)
                && t.get("manifest_digest").and_then(Value::as_str) == Some(digest)
        }) else {
            return Ok(None);
        };
        let secs = t
            .get("start_ts")
            .and_then(Value::as_i64)
            .ok_or_else(|| invalid(repo, &url, "the tag has no start_ts".into()))?;
        Ok(Some(PushTime {
            at: Timestamp::from_unix(secs, 0),
            source: "Quay tag start_ts".to_owned(),
        }))
    }
}

struct Harbor {
    base: String,
}

impl PushTimeApi for Harbor {
    fn name(&self) -> &'static str {
        "Harbor"
    }

    fn pushed_at(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        _tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>> {
        let (project, name) = repo
            .repository()
            .split_once('/')
            .ok_or_else(|| invalid(repo, &self.base, "no project in the repository".into()))?;
        // Harbor wants a repository name with `/` encoded twice.
        let url = format!(
            "{}/api/v2.0/projects/{}/repositories/{}/artifacts/{}",
            self.base,
            encode_component(project),
            encode_component(&encode_component(name)),
            encode_component(digest)
        );
        let auth = match client.credential(repo)?.0 {
            Credential::Basic { username, password } => Some(basic_header(&username, &password)),
            _ => None,
        };
        pushed_if_digest(
            client,
            repo,
            &url,
            auth.as_ref(),
            digest,
            "push_time",
            "Harbor artifact push_time",
        )
    }
}

struct GitLab {
    base: String,
}

impl PushTimeApi for GitLab {
    fn name(&self) -> &'static str {
        "GitLab"
    }

    fn pushed_at(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        tag: &str,
        digest: &str,
    ) -> Result<Option<PushTime>> {
        let auth = client.api_bearer(repo)?;
        let path = repo.repository();
        // The project is the path or one of its first parents (an image
        // may sit below its project: group/project/image).
        let parts: Vec<&str> = path.split('/').collect();
        for keep in (2.max(parts.len().saturating_sub(2))..=parts.len()).rev() {
            let project = parts[..keep].join("/");
            let url = format!(
                "{}/api/v4/projects/{}/registry/repositories?per_page=100",
                self.base,
                encode_component(&project)
            );
            let Some((v, _)) = client.api_get(repo, &url, auth.as_ref())? else {
                continue;
            };
            let list = v.as_array().ok_or_else(|| {
                invalid(repo, &url, "the repositories answer is not a list".into())
            })?;
            let Some(id) = list
                .iter()
                .find(|r| r.get("path").and_then(Value::as_str) == Some(path))
                .and_then(|r| r.get("id").and_then(Value::as_i64))
            else {
                continue;
            };
            let tag_url = format!(
                "{}/api/v4/projects/{}/registry/repositories/{id}/tags/{}",
                self.base,
                encode_component(&project),
                encode_component(tag)
            );
            let Some((t, _)) = client.api_get(repo, &tag_url, auth.as_ref())? else {
                return Ok(None);
            };
            if t.get("digest").and_then(Value::as_str) != Some(digest) {
                return Ok(None);
            }
            return Ok(Some(PushTime {
                at: time_field(repo, &tag_url, &t, "created_at")?,
                source: "GitLab registry tag created_at".to_owned(),
            }));
        }
        Ok(None)
    }
}
