//! OCI registry client: the only networked module of image-update.
//!
//! A blocking client for the Docker Registry HTTP API v2 / OCI Distribution
//! spec, written directly on ureq (see `docs/registry.md`):
//!
//! * [`reference`](mod@reference): image reference parsing and Docker Hub normalisation;
//! * [`RegistryClient`]: tag listing with `Link` pagination and an on-disk
//!   cache, manifest digests (HEAD, GET fallback, platform selection), image
//!   creation times; the client is `Sync`, so a caller lists several
//!   repositories at once from its own threads;
//! * [`credentials`]: Docker/podman config files, credential helpers and
//!   environment variables;
//! * [`settings`]: the per-registry settings file;
//! * [`observe`]: progress events for a caller that shows progress;
//! * [`signatures`]: finding cosign signatures (referrers, tags).
//!
//! Security rules: credentials (Basic, Bearer, refresh tokens) are only sent
//! over HTTPS, or over plain HTTP to hosts marked insecure (loopback hosts are
//! insecure by default); `Authorization` is dropped when a redirect or a
//! pagination link leaves the registry's origin; secrets are held in
//! [`Secret`], whose `Debug` is redacted. Registries are not trusted to keep
//! secrets out of their answers: every text derived from a response that
//! ends in an error or a log line has the secrets the client knows replaced
//! by `<redacted>` (`redact`), at one point for errors (the public methods
//! of [`RegistryClient`]) and one for log lines (the `scrubbed!` macro).
//!
//! Limits: tag listing stops after `max_pages` pages or `max_tags` tags; one
//! attempt of a request may take the host's `timeout` (connection, headers
//! and the whole body); the client as a whole stops at its `deadline`.

/// A `tracing` event whose message is formatted, then scrubbed of every
/// secret the client knows: the only way this crate logs text that may come
/// from a registry (URLs it redirected to, messages about its answers).
/// Optional structured fields go in braces before the format string; they
/// must not hold response-derived text.
macro_rules! scrubbed {
    ($secrets:expr, $level:ident, { $($field:tt)* }, $($arg:tt)+) => {
        if tracing::enabled!(tracing::Level::$level) {
            let message = $secrets.scrub(&format!($($arg)+));
            tracing::event!(tracing::Level::$level, $($field)* "{}", message);
        }
    };
    ($secrets:expr, $level:ident, $($arg:tt)+) => {
        scrubbed!($secrets, $level, {}, $($arg)+)
    };
}

mod auth;
mod cache;
pub mod cloud;
pub mod credentials;
mod error;
mod manifest;
mod memo;
pub mod observe;
pub mod provenance;
pub mod pushtime;
mod redact;
pub mod reference;
pub mod settings;
pub mod signatures;
pub mod time;
mod token;
mod transport;
mod url;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use regex::Regex;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use auth::{Challenge, choose_challenge, parse_www_authenticate};
use cache::{DigestCache, TagCache};
use manifest::{ConfigDoc, MANIFEST_ACCEPT, ManifestDoc, select_child};
use redact::Redactor;
use token::CachedToken;
use transport::{Request, Response, Transport, lock};
use url::Url;

pub use crate::time::Timestamp;
pub use cloud::{CloudEnv, Logins, Provider};
pub use credentials::{Credential, CredentialSource, CredentialStore};
pub use error::{Attempts, Context, Error, Refusal, Result, TimeLimit};
pub use image_update_secret::Secret;
pub use manifest::{
    DOCKER_LIST, DOCKER_MANIFEST, ManifestKind, OCI_INDEX, OCI_MANIFEST, Platform, PlatformError,
    default_platform,
};
pub use observe::{Event, Observer};
pub use reference::{Reference, ReferenceError, Repository, validate_reference};
pub use settings::{ClientSettings, HostConfig, HostSettings, RetryPolicy, SettingsFile};

/// Largest tag-list page or manifest the client reads.
const MAX_DOCUMENT: u64 = 32 * 1024 * 1024;
/// Largest image config blob the client reads.
const MAX_CONFIG: u64 = 16 * 1024 * 1024;
/// Largest error or token body the client reads.
const MAX_SMALL: u64 = 1024 * 1024;
/// Most of an error body kept before redaction; what is quoted is cut
/// further (512 bytes) after redaction.
const MAX_DETAIL: usize = 64 * 1024;

/// A manifest as served by the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Media type from `Content-Type`, or from the document's `mediaType`.
    pub media_type: String,
    pub kind: ManifestKind,
    /// `sha256:` digest of the bytes.
    pub digest: String,
    pub bytes: Vec<u8>,
}

/// Blocking registry client. Cheap to share across threads (`&RegistryClient`
/// is `Send + Sync`); tokens, challenges and credentials are cached for the
/// lifetime of the client, which is meant to be one run.
pub struct RegistryClient {
    settings: Arc<ClientSettings>,
    transport: Transport,
    /// Every secret this client has seen, for redaction.
    secrets: Arc<Redactor>,
    exclusion: Vec<Regex>,
    cache: Option<TagCache>,
    /// Signature documents by digest (with a cache directory).
    digests: Option<DigestCache>,
    challenges: Mutex<HashMap<String, Challenge>>,
    tokens: Mutex<HashMap<(String, String), CachedToken>>,
    credentials: Mutex<HashMap<(String, String), (Credential, CredentialSource)>>,
    token_requests: AtomicUsize,
    /// Manifests and configs by digest, for the rest of the run
    /// (`settings.remember_documents`).
    memo: Option<memo::Memo>,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl RegistryClient {
    /// Build a client. Fails on an invalid exclusion regex. The client's
    /// deadline (`settings.deadline`) counts from here.
    pub fn new(settings: ClientSettings) -> Result<Self> {
        let exclusion = settings
            .exclusion_list
            .iter()
            .map(|p| {
                Regex::new(p)
                    .map_err(|e| Error::InvalidSetting(format!("exclusion pattern {p:?}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let cache = settings
            .cache_dir
            .as_deref()
            .map(|d| TagCache::new(d, settings.cache_ttl));
        let digests = settings.cache_dir.as_deref().map(DigestCache::new);
        let secrets = Arc::new(Redactor::default());
        for credential in settings.credentials.explicit_credentials() {
            secrets.add_credential(credential);
        }
        let memo = settings.remember_documents.then(memo::Memo::default);
        let settings = Arc::new(settings);
        Ok(Self {
            transport: Transport::new(Arc::clone(&settings), Arc::clone(&secrets)),
            secrets,
            settings,
            exclusion,
            cache,
            digests,
            challenges: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            credentials: Mutex::new(HashMap::new()),
            token_requests: AtomicUsize::new(0),
            memo,
        })
    }

    /// The settings the client was built with.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// Run one public operation on `repo`: its error leaves redacted (the
    /// one place errors are cleaned of secrets), and the observer hears of
    /// the failure.
    fn boundary<T>(
        &self,
        repo: &Repository,
        listing: bool,
        operation: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        operation().map_err(|e| {
            let e = e.redact(&self.secrets);
            if let Some(observer) = &self.settings.observer {
                observer.event(&Event::RequestFailed {
                    repository: repo,
                    listing,
                    error: &e,
                });
            }
            e
        })
    }

    /// Call `f` with the observer, if there is one (events are built only then).
    fn observe(&self, f: impl FnOnce(&dyn Observer)) {
        if let Some(observer) = &self.settings.observer {
            f(observer.as_ref());
        }
    }

    /// Number of token requests made so far (all registries).
    pub fn token_requests(&self) -> usize {
        self.token_requests.load(Ordering::Relaxed)
    }

    /// All tags of `repo`, minus the excluded ones, in registry order. Served
    /// from the on-disk cache when a fresh entry exists.
    pub fn list_tags(&self, repo: &Repository) -> Result<Vec<String>> {
        self.boundary(repo, true, || {
            self.observe(|o| o.event(&Event::ListingStarted { repository: repo }));
            let canonical = repo.canonical_name();
            if let Some(cache) = &self.cache
                && let Some(tags) = cache.get(&canonical)
            {
                tracing::debug!("{canonical}: {} tags from cache", tags.len());
                self.observe(|o| {
                    o.event(&Event::ListingDone {
                        repository: repo,
                        tags: tags.len(),
                        cached: true,
                    });
                });
                return Ok(self.exclude(tags));
            }
            let tags = self.fetch_tags_inner(repo)?;
            self.observe(|o| {
                o.event(&Event::ListingDone {
                    repository: repo,
                    tags: tags.len(),
                    cached: false,
                });
            });
            if let Some(cache) = &self.cache {
                cache.put(&canonical, &tags);
            }
            Ok(self.exclude(tags))
        })
    }

    /// Drop tags matching any exclusion pattern.
    pub fn exclude(&self, tags: Vec<String>) -> Vec<String> {
        tags.into_iter()
            .filter(|t| !self.exclusion.iter().any(|re| re.is_match(t)))
            .collect()
    }

    /// Tell the observer that `repositories` listings are about to run (the
    /// total of a progress display). The caller runs them, as concurrently
    /// as it likes: the client is `Sync`, and each host's `concurrency`
    /// setting still bounds the requests in flight to it.
    pub fn announce_listings(&self, repositories: usize) {
        self.observe(|o| o.event(&Event::ListingQueued { repositories }));
    }

    /// Every tag of `repo` straight from the registry (no cache, no
    /// exclusion), following `Link: <...>; rel="next"` pagination, up to
    /// the host's `max_pages` pages and `max_tags` tags.
    pub fn fetch_tags(&self, repo: &Repository) -> Result<Vec<String>> {
        self.boundary(repo, true, || {
            self.observe(|o| o.event(&Event::ListingStarted { repository: repo }));
            let tags = self.fetch_tags_inner(repo)?;
            self.observe(|o| {
                o.event(&Event::ListingDone {
                    repository: repo,
                    tags: tags.len(),
                    cached: false,
                });
            });
            Ok(tags)
        })
    }

    fn fetch_tags_inner(&self, repo: &Repository) -> Result<Vec<String>> {
        let ctx = context(repo);
        let host = self.transport.host_settings(repo.api_host());
        let mut url = self
            .registry_url(repo, &format!("/v2/{}/tags/list", repo.repository()))
            .with_query("n", &host.page_size.to_string());
        let mut seen = HashSet::new();
        let mut tags = Vec::new();
        // Tags left out for their syntax.
        let mut invalid = 0usize;
        let mut pages: u32 = 0;
        let limit = |what: &'static str, key: &'static str, limit: u64| Error::ListLimit {
            context: Box::new(ctx.clone()),
            what,
            key,
            limit,
            registry: repo.registry().to_owned(),
        };
        loop {
            if pages >= host.max_pages {
                return Err(limit("pages", "max_pages", u64::from(host.max_pages)));
            }
            if !seen.insert(url.to_string()) {
                return Err(Error::InvalidResponse {
                    context: Box::new(ctx),
                    url: url.to_string(),
                    message: "pagination loops back to a page already read".to_owned(),
                });
            }
            let resp = self.send_authed(
                repo,
                "GET",
                url.clone(),
                Some("application/json"),
                MAX_DOCUMENT,
            )?;
            if resp.status != 200 {
                return Err(self.status_error(repo, "GET", &resp));
            }
            #[derive(Deserialize)]
            struct TagList {
                #[serde(default)]
                tags: Option<Vec<String>>,
            }
            let page: TagList =
                serde_json::from_slice(&resp.body).map_err(|e| Error::InvalidResponse {
                    context: Box::new(ctx.clone()),
                    url: resp.url.to_string(),
                    message: format!("malformed tag list: {e}"),
                })?;
            // A tag is written into the tree: one outside the distribution spec's grammar (a
            // line break, a quote, a path) from a broken or hostile registry is never a candidate.
            let listed = page.tags.unwrap_or_default();
            let (count, before) = (listed.len(), tags.len());
            tags.extend(listed.into_iter().filter(|t| reference::valid_tag(t)));
            invalid += count - (tags.len() - before);
            pages += 1;
            self.observe(|o| {
                o.event(&Event::PageFetched {
                    repository: repo,
                    page: pages,
                    tags: tags.len(),
                });
            });
            if tags.len() > host.max_tags {
                return Err(limit("tags", "max_tags", host.max_tags as u64));
            }
            match next_link(&resp) {
                Some(link) => {
                    url = resp.url.join(&link).ok_or_else(|| Error::InvalidResponse {
                        context: Box::new(ctx.clone()),
                        url: resp.url.to_string(),
                        message: format!("invalid Link header target {link:?}"),
                    })?;
                }
                None => break,
            }
        }
        if invalid > 0 {
            tracing::warn!(
                "{repo}: the registry listed {invalid} tag{} that {} not valid tags; left out",
                if invalid == 1 { "" } else { "s" },
                if invalid == 1 { "is" } else { "are" },
            );
        }
        tracing::debug!("{}: {} tags from registry", repo, tags.len());
        Ok(tags)
    }

    /// The digest of `tag`. Without a platform this is the digest the tag
    /// points at (for a multi-arch image, the index digest, like Flux),
    /// found with `HEAD` and `Docker-Content-Digest`, falling back to `GET`
    /// and SHA-256 of the body. With a platform, an index is resolved to the
    /// matching image's digest; a single-platform image is checked against
    /// its config and fails with [`Error::PlatformNotFound`] on mismatch.
    pub fn digest(
        &self,
        repo: &Repository,
        tag: &str,
        platform: Option<&Platform>,
    ) -> Result<String> {
        self.boundary(repo, false, || self.digest_inner(repo, tag, platform))
    }

    fn digest_inner(
        &self,
        repo: &Repository,
        tag: &str,
        platform: Option<&Platform>,
    ) -> Result<String> {
        let ctx = context(repo);
        let Some(platform) = platform else {
            let url = self.manifest_url(repo, tag);
            let resp = self.send_authed(repo, "HEAD", url, Some(MANIFEST_ACCEPT), MAX_SMALL)?;
            match resp.status {
                200 => {
                    if let Some(d) = resp
                        .header("docker-content-digest")
                        .map(str::trim)
                        .filter(|d| reference::valid_digest(d))
                    {
                        return Ok(d.to_owned());
                    }
                    tracing::debug!("{repo}:{tag}: HEAD gave no digest, using GET");
                }
                404 => return Err(self.status_error(repo, "HEAD", &resp)),
                s => tracing::debug!("{repo}:{tag}: HEAD answered {s}, using GET"),
            }
            return Ok(self.manifest_inner(repo, tag)?.digest);
        };
        let m = self.manifest_inner(repo, tag)?;
        match m.kind {
            ManifestKind::Index => {
                let doc = parse_doc(&ctx, &m, tag)?;
                let children = doc.manifests.unwrap_or_default();
                select_child(&children, Some(platform))
                    .map(|d| d.digest.clone())
                    .ok_or_else(|| Error::PlatformNotFound {
                        context: Box::new(ctx),
                        reference: tag.to_owned(),
                        platform: platform.to_string(),
                    })
            }
            ManifestKind::Image => {
                let cfg = self.config_of(repo, &m, tag)?;
                check_platform(&ctx, tag, platform, &cfg)?;
                Ok(m.digest)
            }
        }
    }

    /// The `created` time of the image behind `tag`, from its config blob
    /// (`Ok(None)` when the config has no `created`). For an index, the image
    /// for `platform` is used; without a platform, `linux/amd64`, else the
    /// first entry with a real platform (attestations are skipped).
    pub fn created(
        &self,
        repo: &Repository,
        tag: &str,
        platform: Option<&Platform>,
    ) -> Result<Option<Timestamp>> {
        self.boundary(repo, false, || self.created_inner(repo, tag, platform))
    }

    fn created_inner(
        &self,
        repo: &Repository,
        tag: &str,
        platform: Option<&Platform>,
    ) -> Result<Option<Timestamp>> {
        let ctx = context(repo);
        let top = self.manifest_inner(repo, tag)?;
        // The platform of an index entry is taken from the index; only a
        // single-platform image is checked against its config.
        let from_index = top.kind == ManifestKind::Index;
        let image = match top.kind {
            ManifestKind::Image => top,
            ManifestKind::Index => {
                let doc = parse_doc(&ctx, &top, tag)?;
                let children = doc.manifests.unwrap_or_default();
                let child =
                    select_child(&children, platform).ok_or_else(|| Error::PlatformNotFound {
                        context: Box::new(ctx.clone()),
                        reference: tag.to_owned(),
                        platform: platform.map_or_else(|| "any".to_owned(), ToString::to_string),
                    })?;
                let m = self.manifest_inner(repo, &child.digest)?;
                if m.kind != ManifestKind::Image {
                    return Err(Error::UnsupportedMediaType {
                        context: Box::new(ctx),
                        reference: child.digest.clone(),
                        media_type: m.media_type,
                    });
                }
                m
            }
        };
        let cfg = self.config_of(repo, &image, tag)?;
        if let Some(p) = platform
            && !from_index
        {
            check_platform(&ctx, tag, p, &cfg)?;
        }
        match cfg.created.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(s) => Timestamp::parse_rfc3339(s)
                .map(Some)
                .map_err(|_| Error::InvalidResponse {
                    context: Box::new(ctx),
                    url: self.manifest_url(repo, tag).to_string(),
                    message: format!("image config of {tag} has an invalid created time {s:?}"),
                }),
        }
    }

    /// GET a manifest by tag or digest. The digest is computed from the bytes
    /// and, when `reference` is a digest, checked against it.
    pub fn manifest(&self, repo: &Repository, reference: &str) -> Result<Manifest> {
        self.boundary(repo, false, || self.manifest_inner(repo, reference))
    }

    /// Whether `digest` of `repo` is kept from an earlier request of the run.
    fn remembered(&self, repo: &Repository, digest: &str) -> bool {
        self.memo
            .as_ref()
            .is_some_and(|m| m.get(&repo.to_string(), digest).is_some())
    }

    fn manifest_inner(&self, repo: &Repository, reference: &str) -> Result<Manifest> {
        let ctx = context(repo);
        if let Some(kept) = self
            .memo
            .as_ref()
            .filter(|_| reference::valid_digest(reference))
            .and_then(|m| m.get(&repo.to_string(), reference))
            && let Some(kind) = ManifestKind::from_media_type(&kept.media_type)
        {
            return Ok(Manifest {
                media_type: kept.media_type,
                kind,
                digest: reference.to_owned(),
                bytes: kept.bytes.as_ref().clone(),
            });
        }
        let url = self.manifest_url(repo, reference);
        let resp = self.send_authed(repo, "GET", url, Some(MANIFEST_ACCEPT), MAX_DOCUMENT)?;
        if resp.status != 200 {
            return Err(self.status_error(repo, "GET", &resp));
        }
        let content_type = resp.header("content-type").unwrap_or_default().to_owned();
        let (media_type, kind) = match ManifestKind::from_media_type(&content_type) {
            Some(k) => (
                content_type
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
                k,
            ),
            None => {
                // Some registries send a generic content type; trust the document's mediaType.
                let declared = serde_json::from_slice::<ManifestDoc>(&resp.body)
                    .ok()
                    .and_then(|d| d.media_type);
                match declared.as_deref().and_then(ManifestKind::from_media_type) {
                    Some(k) => (declared.unwrap_or_default(), k),
                    None => {
                        return Err(Error::UnsupportedMediaType {
                            context: Box::new(ctx),
                            reference: reference.to_owned(),
                            media_type: declared.unwrap_or(content_type),
                        });
                    }
                }
            }
        };
        let digest = sha256_digest(&resp.body);
        if reference::valid_digest(reference)
            && reference.starts_with("sha256:")
            && reference != digest
        {
            return Err(Error::DigestMismatch {
                context: Box::new(ctx),
                reference: reference.to_owned(),
                actual: digest,
            });
        }
        if let Some(memo) = &self.memo {
            memo.put(&repo.to_string(), &digest, &media_type, &resp.body);
        }
        Ok(Manifest {
            media_type,
            kind,
            digest,
            bytes: resp.body,
        })
    }

    /// GET a blob (content checked against its sha256 digest).
    pub fn blob(&self, repo: &Repository, digest: &str, max_size: u64) -> Result<Vec<u8>> {
        self.boundary(repo, false, || self.blob_inner(repo, digest, max_size))
    }

    fn blob_inner(&self, repo: &Repository, digest: &str, max_size: u64) -> Result<Vec<u8>> {
        let ctx = context(repo);
        if let Some(kept) = self
            .memo
            .as_ref()
            .and_then(|m| m.get(&repo.to_string(), digest))
            .filter(|k| k.bytes.len() as u64 <= max_size)
        {
            return Ok(kept.bytes.as_ref().clone());
        }
        let url = self.registry_url(repo, &format!("/v2/{}/blobs/{digest}", repo.repository()));
        let resp = self.send_authed(repo, "GET", url, None, max_size)?;
        if resp.status != 200 {
            return Err(self.status_error(repo, "GET", &resp));
        }
        if digest.starts_with("sha256:") {
            let actual = sha256_digest(&resp.body);
            if actual != digest {
                return Err(Error::DigestMismatch {
                    context: Box::new(ctx),
                    reference: digest.to_owned(),
                    actual,
                });
            }
            if let Some(memo) = &self.memo {
                memo.put(&repo.to_string(), digest, "", &resp.body);
            }
        }
        Ok(resp.body)
    }

    fn config_of(&self, repo: &Repository, m: &Manifest, tag: &str) -> Result<ConfigDoc> {
        let ctx = context(repo);
        let doc = parse_doc(&ctx, m, tag)?;
        let config = doc.config.ok_or_else(|| Error::InvalidResponse {
            context: Box::new(ctx.clone()),
            url: self.manifest_url(repo, tag).to_string(),
            message: format!("manifest {} has no config descriptor", m.digest),
        })?;
        let bytes = self.blob_inner(repo, &config.digest, MAX_CONFIG)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::InvalidResponse {
            context: Box::new(ctx),
            url: self
                .registry_url(
                    repo,
                    &format!("/v2/{}/blobs/{}", repo.repository(), config.digest),
                )
                .to_string(),
            message: format!("invalid image config: {e}"),
        })
    }

    fn manifest_url(&self, repo: &Repository, reference: &str) -> Url {
        self.registry_url(
            repo,
            &format!("/v2/{}/manifests/{reference}", repo.repository()),
        )
    }

    fn scheme(&self, authority: &str) -> &'static str {
        if self.transport.host_settings(authority).insecure {
            "http"
        } else {
            "https"
        }
    }

    fn registry_url(&self, repo: &Repository, path: &str) -> Url {
        let host = repo.api_host();
        Url::new(self.scheme(host), host, path)
    }

    /// Send a request to the registry of `repo` with the right credentials;
    /// on 401 refresh the challenge and token once and resend.
    fn send_authed(
        &self,
        repo: &Repository,
        method: &'static str,
        url: Url,
        accept: Option<&str>,
        max_body: u64,
    ) -> Result<Response> {
        let ctx = context(repo);
        let origin = self.registry_url(repo, "/v2/");
        // A pagination link to another origin gets no credentials.
        let same_origin = url.same_origin(&origin);
        let scope = format!("repository:{}:pull", repo.repository());
        let authorization = if same_origin {
            self.authorization(repo, &scope)?
        } else {
            None
        };
        fn request<'a>(
            method: &'static str,
            url: &Url,
            accept: Option<&'a str>,
            authorization: Option<&'a Secret>,
            context: &'a Context,
            max_body: u64,
        ) -> Request<'a> {
            Request {
                method,
                url: url.clone(),
                accept,
                authorization,
                body: None,
                secret_body: false,
                context,
                max_body,
                extra: Default::default(),
            }
        }
        let resp = self.transport.send(&request(
            method,
            &url,
            accept,
            authorization.as_ref(),
            &ctx,
            max_body,
        ))?;
        // A cloud login's password the registry says expired: one new login.
        let expired = same_origin
            && (resp.status == 401 || resp.status == 403)
            && self.cloud_login_expired(repo, &resp);
        if (resp.status != 401 || !same_origin) && !expired {
            return Ok(resp);
        }
        // The token may have expired or lack the scope, or the challenge changed.
        let host = repo.api_host().to_owned();
        if let Some(ch) = choose_challenge(&resp.headers_all("www-authenticate")) {
            lock(&self.challenges).insert(host.clone(), ch);
        }
        lock(&self.tokens).remove(&(host, scope.clone()));
        let retry_auth = self.authorization(repo, &scope)?;
        if retry_auth == authorization && !expired {
            // Same credentials (or none): sending again cannot help.
            return Ok(resp);
        }
        self.transport.send(&request(
            method,
            &url,
            accept,
            retry_auth.as_ref(),
            &ctx,
            max_body,
        ))
    }

    /// Which credentials a 401 or 403 answer for `repo` refused, and what
    /// to check. A 401 whose challenge says `insufficient_scope` is a
    /// permission problem like a 403.
    fn refusal(&self, repo: &Repository, resp: &Response) -> Option<Box<Refusal>> {
        if resp.status != 401 && resp.status != 403 {
            return None;
        }
        let insufficient_scope = parse_www_authenticate(&resp.headers_all("www-authenticate"))
            .iter()
            .any(|(_, params)| {
                params
                    .get("error")
                    .is_some_and(|e| e.eq_ignore_ascii_case("insufficient_scope"))
            });
        let key = (repo.registry().to_owned(), repo.repository().to_owned());
        let (credential, source) = lock(&self.credentials)
            .get(&key)
            .cloned()
            .unwrap_or_default();
        Some(Box::new(refusal(
            repo,
            &credential,
            source,
            resp.status == 403 || insufficient_scope,
        )))
    }

    /// A `Status` error for `resp`, naming the credentials on 401 and 403.
    fn status_error(&self, repo: &Repository, method: &'static str, resp: &Response) -> Error {
        let mut e = status_error(&context(repo), method, resp);
        if let Error::Status { refusal, .. } = &mut e {
            *refusal = self.refusal(repo, resp);
        }
        e
    }
}

/// What a refused request (401, 403) tells the user: where the credentials
/// came from and what to check. `not_allowed`: a 403 (or a 401 with
/// `insufficient_scope`): the credentials were accepted but do not allow
/// pulling.
fn refusal(
    repo: &Repository,
    credential: &Credential,
    source: CredentialSource,
    not_allowed: bool,
) -> Refusal {
    if let CredentialSource::Cloud { provider, identity } = &source {
        let hint = if not_allowed {
            format!(
                "the {provider} login with {identity} was accepted but does not allow pulling {repo}; grant that identity read access to the repository (docs/registry.md, cloud registries)"
            )
        } else {
            format!(
                "the registry refused the password the {provider} login with {identity} got; check that identity's access to the registry"
            )
        };
        return Refusal {
            credentials: source,
            hint,
        };
    }
    let hint = match credential {
        Credential::Anonymous => {
            let missing = credentials::missing_credentials_hint(repo.registry());
            if not_allowed {
                format!("anonymous access to {repo} is not allowed; {missing}")
            } else {
                missing
            }
        }
        _ if not_allowed => format!(
            "the {} from {source} was accepted but does not allow pulling {repo}; check the account's permissions on the repository and the token's scopes",
            credential.kind()
        ),
        Credential::Basic { .. } => format!("check the username/password in {source}"),
        Credential::IdentityToken { .. } => {
            format!("check the identity token in {source}; it may have expired (log in again)")
        }
        Credential::RegistryToken(_) => {
            format!("check the registry token in {source}; it may have expired")
        }
    };
    Refusal {
        credentials: source,
        hint,
    }
}

fn context(repo: &Repository) -> Context {
    Context {
        registry: repo.registry().to_owned(),
        repository: Some(repo.repository().to_owned()),
    }
}

fn basic_header(username: &str, password: &Secret) -> Secret {
    let raw = format!("{username}:{}", password.expose());
    Secret::new(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    ))
}

fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The URL without its query (token requests carry the account name there).
fn strip_query(url: &Url) -> String {
    let s = url.to_string();
    s.split('?').next().unwrap_or_default().to_owned()
}

fn parse_doc(ctx: &Context, m: &Manifest, reference: &str) -> Result<ManifestDoc> {
    serde_json::from_slice(&m.bytes).map_err(|e| Error::InvalidResponse {
        context: Box::new(ctx.clone()),
        url: reference.to_owned(),
        message: format!("malformed manifest JSON: {e}"),
    })
}

fn check_platform(ctx: &Context, tag: &str, platform: &Platform, cfg: &ConfigDoc) -> Result<()> {
    let os = cfg.os.as_deref().unwrap_or_default();
    let arch = cfg.architecture.as_deref().unwrap_or_default();
    if platform.matches(os, arch, cfg.variant.as_deref()) {
        Ok(())
    } else {
        Err(Error::PlatformNotFound {
            context: Box::new(ctx.clone()),
            reference: tag.to_owned(),
            platform: platform.to_string(),
        })
    }
}

/// `Link: <url>; rel="next"` target, if any.
fn next_link(resp: &Response) -> Option<String> {
    for value in resp.headers_all("link") {
        for part in value.split(',') {
            let part = part.trim();
            let Some(start) = part.find('<') else {
                continue;
            };
            let Some(end) = part[start..].find('>') else {
                continue;
            };
            let target = &part[start + 1..start + end];
            let params = &part[start + end + 1..];
            let is_next = params.split(';').any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p == "rel=\"next\"" || p == "rel=next"
            });
            if is_next {
                return Some(target.to_owned());
            }
        }
    }
    None
}

/// Registry error codes and messages from an error body, else the body
/// itself (its first 64 KiB, cut further when the error is redacted).
fn error_detail(body: &[u8]) -> Option<String> {
    if let Some(detail) = error_codes(body) {
        return Some(detail);
    }
    let head = &body[..body.len().min(MAX_DETAIL)];
    let text = String::from_utf8_lossy(head);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// `CODE message; CODE message` from a distribution error body.
fn error_codes(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Errors {
        errors: Vec<ErrorItem>,
    }
    #[derive(Deserialize)]
    struct ErrorItem {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let parsed: Errors = serde_json::from_slice(body).ok()?;
    let text = parsed
        .errors
        .iter()
        .map(|e| format!("{} {}", e.code, e.message).trim().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    (!text.is_empty()).then_some(text)
}

fn status_error(ctx: &Context, method: &'static str, resp: &Response) -> Error {
    Error::Status {
        context: Box::new(ctx.clone()),
        method,
        url: resp.url.to_string(),
        status: resp.status,
        detail: error_detail(&resp.body).unwrap_or_default(),
        refusal: None,
        attempts: resp.attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp_with_link(links: &[&str]) -> Response {
        let mut headers = ureq::http::HeaderMap::new();
        for l in links {
            headers.append("link", l.parse().unwrap());
        }
        Response {
            status: 200,
            headers,
            body: Vec::new(),
            url: Url::parse("http://h/v2/x/tags/list").unwrap(),
            attempts: Attempts::default(),
        }
    }

    #[test]
    fn link_header() {
        assert_eq!(
            next_link(&resp_with_link(&[
                r#"</v2/x/tags/list?n=2&last=b>; rel="next""#
            ]))
            .as_deref(),
            Some("/v2/x/tags/list?n=2&last=b")
        );
        assert_eq!(
            next_link(&resp_with_link(&[
                r#"<http://a:1/p>; rel="prev", <http://a:1/q>; rel=next"#
            ]))
            .as_deref(),
            Some("http://a:1/q")
        );
        assert_eq!(next_link(&resp_with_link(&[r#"</p>; rel="prev""#])), None);
        assert_eq!(next_link(&resp_with_link(&[])), None);
    }

    #[test]
    fn error_details() {
        let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry","detail":{}}]}"#;
        assert_eq!(
            error_detail(body).as_deref(),
            Some("NAME_UNKNOWN repository name not known to registry")
        );
        assert_eq!(error_detail(b"<html>").as_deref(), Some("<html>"));
        assert_eq!(error_detail(b"  \n"), None);
    }

    #[test]
    fn digests() {
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn basic_header_value() {
        let h = basic_header("user", &Secret::new("pass"));
        assert_eq!(h.expose(), "Basic dXNlcjpwYXNz");
        assert!(!format!("{h:?}").contains("dXNl"));
    }

    #[test]
    fn client_rejects_bad_exclusion() {
        let settings = ClientSettings {
            exclusion_list: vec!["(".to_owned()],
            ..ClientSettings::default()
        };
        assert!(RegistryClient::new(settings).is_err());
    }

    #[test]
    fn exclusion_default() {
        let c = RegistryClient::new(ClientSettings::default()).unwrap();
        assert_eq!(
            c.exclude(vec![
                "v1".into(),
                "sha256-abc.sig".into(),
                "v2.sig.x".into()
            ]),
            vec!["v1".to_owned(), "v2.sig.x".to_owned()]
        );
    }
}
