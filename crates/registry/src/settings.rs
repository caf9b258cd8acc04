//! Client settings and the per-registry settings file.
//!
//! The file is YAML (see `docs/registry.md` for the full format):
//!
//! ```yaml
//! defaults:                 # applies to every registry
//!   timeout: 30s
//! registries:
//!   localhost:5000:         # registry host[:port]; docker.io means Docker Hub
//!     insecure: true        # plain HTTP; credentials may be sent over it
//!   registry.example.com:
//!     ca_file: /etc/ssl/example-ca.pem
//!     page_size: 100
//!     concurrency: 2
//!     requests_per_second: 5
//!     timeout: 10s
//!     max_pages: 100        # tag-list pages per repository
//!     max_tags: 100000      # tags per repository
//!     proxy: http://proxy.example:3128   # instead of HTTPS_PROXY
//!   123456789012.dkr.ecr.eu-west-1.amazonaws.com:
//!     provider: aws         # log in with the workload's identity (crate::cloud)
//! deadline: 5m              # for the whole run; 0 = none
//! retry:
//!   max_retries: 4
//!   initial_backoff: 500ms
//!   max_backoff: 30s
//!   max_retry_after: 60s
//! cache:
//!   dir: /var/cache/image-update
//!   ttl: 5m
//! exclusion_list: ['^.*\.sig$']
//! allowed_credential_programs: ['ghcr.io=/usr/local/bin/ghcr-creds']
//! ```
//!
//! Unknown keys are errors, so a typo does not silently fall back to a default.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::cloud::{CloudEnv, Logins, Provider};
use super::credentials::{AllowedProgram, CredentialStore};
use super::error::{Error, Result};
use super::observe::Observer;
use super::reference::{DOCKER_HUB, DOCKER_HUB_API};
use super::url::is_loopback;

/// Default tag-list page size (`n=`), as Flux uses.
pub const DEFAULT_PAGE_SIZE: u32 = 1000;
/// Default number of requests in flight per registry.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default requests per second for Docker Hub (other registries: unlimited).
pub const DOCKER_HUB_RPS: f64 = 10.0;
/// Default limit of tag-list pages read for one repository.
pub const DEFAULT_MAX_PAGES: u32 = 1000;
/// Default limit of tags read for one repository.
pub const DEFAULT_MAX_TAGS: usize = 1_000_000;
/// Default deadline of one client (one run), from its creation.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);
/// Default tag exclusion pattern (cosign signature tags).
pub const DEFAULT_EXCLUSION: &str = r"^.*\.sig$";

/// Settings for one registry host. Every field is optional; unset fields take
/// the `defaults` entry and then the built-in default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Use plain HTTP and allow credentials over it. Default: true for
    /// loopback hosts (`localhost`, `127.0.0.0/8`, `::1`), false otherwise.
    pub insecure: Option<bool>,
    /// PEM file with CA certificates trusted for this host, in addition to the
    /// bundled Mozilla roots.
    pub ca_file: Option<PathBuf>,
    /// Tag-list page size (`n=`).
    pub page_size: Option<u32>,
    /// Requests in flight at once to this host.
    pub concurrency: Option<usize>,
    /// Request rate limit; `0` or unset means unlimited (Docker Hub: 10).
    pub requests_per_second: Option<f64>,
    /// Per-request timeout (connect, send and whole response).
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub timeout: Option<Duration>,
    /// Most tag-list pages read for one repository.
    pub max_pages: Option<u32>,
    /// Most tags read for one repository.
    pub max_tags: Option<usize>,
    /// The vendor API that reports push times (`crate::pushtime`); by
    /// default chosen by host (Docker Hub, ghcr.io, quay.io,
    /// registry.gitlab.com).
    pub push_time: Option<PushTimeConfig>,
    /// The HTTP proxy (`http://HOST:PORT`, CONNECT) requests to this host
    /// go through, instead of `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`.
    pub proxy: Option<String>,
    /// Who logs in to this registry: `aws`, `azure`, `gcp` or `generic`
    /// (the default: its own credentials); see `crate::cloud`. Per
    /// registry only (never guessed from the host, never in `defaults`).
    pub provider: Option<Provider>,
}

/// Which push-time API a registry has, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushTimeConfig {
    /// `dockerhub`, `ghcr`, `quay`, `harbor` or `gitlab`.
    pub api: String,
    /// The API's base URL (default: the vendor's public one; Harbor: the
    /// registry itself).
    #[serde(default)]
    pub url: Option<String>,
}

/// Where a minimum release age takes its time from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgeSource {
    /// The registry vendor's API (`push_time`): set by the registry at push.
    #[default]
    Registry,
    /// Opt-in, builder-controlled: the manifest's
    /// `org.opencontainers.image.created` annotation, else the image
    /// config's `created`. Whoever builds the image sets it.
    Builder,
}

impl std::str::FromStr for AgeSource {
    type Err = String;

    /// `registry` or `builder`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "registry" => Ok(Self::Registry),
            "builder" => Ok(Self::Builder),
            other => Err(format!("{other:?} is neither registry nor builder")),
        }
    }
}

/// Whether one accepted signer suffices, or every signer must have signed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Require {
    #[default]
    Any,
    All,
}

impl std::str::FromStr for Require {
    type Err = String;

    /// `any` or `all`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "any" => Ok(Self::Any),
            "all" => Ok(Self::All),
            other => Err(format!("{other:?} is neither any nor all")),
        }
    }
}

/// The `verify` section of a supply-chain rule: who must have signed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// `any` (default) or `all`.
    #[serde(default)]
    pub require: Require,
    /// Public keys (PEM).
    #[serde(default)]
    pub keys: Vec<KeyConfig>,
    /// Keyless identities.
    #[serde(default)]
    pub identities: Vec<IdentityConfig>,
    /// `trusted_root.json` for keyless signers and logged keys (default:
    /// the `supply_chain.trusted_root` of the file).
    #[serde(default)]
    pub trusted_root: Option<PathBuf>,
    /// The trusted root's JSON itself (for front ends without files: the
    /// KRM function's config, a Job's ConfigMap); wins over `trusted_root`.
    #[serde(default)]
    pub trusted_root_json: Option<String>,
    /// In-toto predicate types accepted from DSSE bundles (default: cosign's
    /// signature predicate only).
    #[serde(default)]
    pub predicate_types: Vec<String>,
    /// Where these signers were given (`the --verify-* flags`, `policy
    /// ns:name's annotations`), for messages; `None`: the settings file.
    #[serde(skip)]
    pub origin: Option<String>,
}

/// A key signer as written: `path` or `pem`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    /// A PEM public key file (`cosign.pub`), relative to the settings file.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The PEM text itself.
    #[serde(default)]
    pub pem: Option<String>,
    /// How reports name it; default: the file name, else `key N`.
    #[serde(default)]
    pub name: Option<String>,
    /// Also require a transparency log entry.
    #[serde(default)]
    pub tlog: bool,
}

/// A keyless identity as written: `subject` or `subject_regexp`, and
/// `issuer` or `issuer_regexp` (regular expressions match the whole value).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub subject_regexp: Option<String>,
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub issuer_regexp: Option<String>,
}

/// One supply-chain rule: what the images of matching repositories must
/// satisfy before a tag of theirs is written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupplyChainRule {
    /// Repository globs over `REGISTRY/PATH` (`*` matches anything,
    /// `/` included): `ghcr.io/acme/*`, `index.docker.io/library/nginx`.
    pub repositories: Vec<String>,
    /// Required signers.
    #[serde(default)]
    pub verify: Option<VerifyConfig>,
    /// Minimum release age.
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub min_age: Option<Duration>,
    /// Where the age is taken from (default `registry`).
    #[serde(default)]
    pub age_source: AgeSource,
}

/// The `supply_chain` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupplyChainConfig {
    /// The default `trusted_root.json` of every rule.
    #[serde(default)]
    pub trusted_root: Option<PathBuf>,
    /// Rules; the first whose `repositories` match applies.
    #[serde(default)]
    pub rules: Vec<SupplyChainRule>,
}

impl SupplyChainConfig {
    /// The first rule matching `canonical` (`REGISTRY/PATH`).
    pub fn rule_for(&self, canonical: &str) -> Option<&SupplyChainRule> {
        self.rule_index(canonical).map(|i| &self.rules[i])
    }

    /// The index of the first rule matching `canonical`.
    pub fn rule_index(&self, canonical: &str) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| r.repositories.iter().any(|g| glob_match(g, canonical)))
    }

    /// Apply a front end's settings (flags, function config, Action
    /// inputs): each value given replaces the same value of every rule, and
    /// a last rule for every repository (`*`) carries them where no rule
    /// matches.
    pub fn apply_overrides(&mut self, over: &SupplyChainOverrides) {
        if over.is_empty() {
            return;
        }
        for rule in &mut self.rules {
            if let Some(v) = &over.verify {
                rule.verify = Some(v.clone());
            }
            if let Some(m) = over.min_age {
                rule.min_age = Some(m);
            }
            if let Some(a) = over.age_source {
                rule.age_source = a;
            }
        }
        self.rules.push(SupplyChainRule {
            repositories: vec!["*".to_owned()],
            verify: over.verify.clone(),
            min_age: over.min_age,
            age_source: over.age_source.unwrap_or_default(),
        });
    }
}

/// Supply-chain settings a front end gives for every repository, over the
/// settings file's rules ([`SupplyChainConfig::apply_overrides`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SupplyChainOverrides {
    /// Required signers (replace each rule's).
    pub verify: Option<VerifyConfig>,
    /// Minimum release age (replaces each rule's).
    pub min_age: Option<Duration>,
    /// Where the age comes from (replaces each rule's).
    pub age_source: Option<AgeSource>,
}

impl SupplyChainOverrides {
    /// Whether it sets nothing.
    pub fn is_empty(&self) -> bool {
        self.verify.is_none() && self.min_age.is_none() && self.age_source.is_none()
    }
}

/// `*` matches any run of characters (`/` included); everything else
/// itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    if parts.len() == 1 {
        return pattern == text;
    }
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for m in middle {
        match rest.find(m) {
            Some(i) => rest = &rest[i + m.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Retry settings as written in the file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    pub max_retries: Option<u32>,
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub initial_backoff: Option<Duration>,
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub max_backoff: Option<Duration>,
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub max_retry_after: Option<Duration>,
}

/// Cache settings as written in the file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    pub dir: Option<PathBuf>,
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub ttl: Option<Duration>,
}

/// The settings file, as parsed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsFile {
    #[serde(default)]
    pub defaults: HostConfig,
    #[serde(default)]
    pub registries: BTreeMap<String, HostConfig>,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default)]
    pub exclusion_list: Option<Vec<String>>,
    /// Deadline of one run (one client); `0` means none.
    #[serde(default, deserialize_with = "de_opt_duration")]
    pub deadline: Option<Duration>,
    /// Signatures and minimum release ages required before writing.
    #[serde(default)]
    pub supply_chain: SupplyChainConfig,
    /// Programs an Argo CD `pull-secret: ext:PATH` may run, as
    /// `[HOST=]PATH` (absolute paths, outside the tree being updated).
    #[serde(default)]
    pub allowed_credential_programs: Vec<AllowedProgram>,
    /// The forge serving the source repositories of a host images name
    /// (`HOST: github|gitlab|gitea|forgejo|bitbucket|bitbucket-server|azure-devops`),
    /// for provenance links; well-known hosts need none.
    #[serde(default)]
    pub source_forges: BTreeMap<String, String>,
    /// The directory of the file (relative paths in it are relative to it).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

impl SettingsFile {
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let file: Self = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if file.defaults.provider.is_some() {
            return Err(
                "defaults.provider: a provider is set per registry (registries.HOST.provider), never for every registry"
                    .to_owned(),
            );
        }
        Ok(file)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = fs_err::read_to_string(path).map_err(|e| Error::Settings {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let mut file = Self::parse(&text).map_err(|message| Error::Settings {
            path: path.to_owned(),
            message,
        })?;
        file.base_dir = path.parent().map(Path::to_path_buf);
        Ok(file)
    }
}

/// Retry policy for 429, 5xx and connection errors.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` attempts).
    pub max_retries: u32,
    /// First backoff; doubled on each retry, with jitter (50–100 % of the value).
    pub initial_backoff: Duration,
    /// Upper bound of one backoff.
    pub max_backoff: Duration,
    /// A `Retry-After` longer than this fails the request instead of waiting.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Everything [`RegistryClient::new`](super::RegistryClient::new) needs.
#[derive(Clone)]
pub struct ClientSettings {
    /// Settings applying to every host unless overridden.
    pub defaults: HostConfig,
    /// Per-host settings, keyed by `host[:port]`.
    pub registries: BTreeMap<String, HostConfig>,
    pub retry: RetryPolicy,
    /// Directory of the on-disk tag cache; `None` disables it.
    pub cache_dir: Option<PathBuf>,
    /// How long a cached tag list is used before the registry is asked again.
    pub cache_ttl: Duration,
    /// Tags matching any of these regexes are dropped by `list_tags`.
    pub exclusion_list: Vec<String>,
    /// Where credentials come from.
    pub credentials: CredentialStore,
    pub user_agent: String,
    /// Redirects followed per request.
    pub max_redirects: u32,
    /// Time limit of the client as a whole (one run), counted from
    /// [`RegistryClient::new`](super::RegistryClient::new): no request is
    /// started or retried after it, and a request in flight is cut off at
    /// it. `None`: no limit. Default [`DEFAULT_DEADLINE`].
    pub deadline: Option<Duration>,
    /// Receives progress events ([`crate::observe`]); none by default.
    pub observer: Option<Arc<dyn Observer>>,
    /// The settings file's `supply_chain` section.
    pub supply_chain: SupplyChainConfig,
    /// The directory relative paths of the settings file are read from.
    pub base_dir: Option<PathBuf>,
    /// The environment the cloud logins read (default: this process's,
    /// taken when the settings are made).
    pub cloud_env: Arc<CloudEnv>,
    /// What the cloud logins of the run got: shared by every clone of
    /// these settings, so the clients of one run log in once per registry.
    pub logins: Arc<Logins>,
    /// The credential programs allowed (the settings file's
    /// `allowed_credential_programs`, a front end's
    /// `--allow-credential-program`).
    pub allowed_programs: Vec<AllowedProgram>,
    /// Keep the manifests and configs fetched by digest for the rest of the
    /// client's life (at most 8 MiB), so a later step reuses them: on when
    /// provenance is gathered. Off by default.
    pub remember_documents: bool,
    /// The settings file's `source_forges`, host names in lower case.
    pub source_forges: BTreeMap<String, String>,
}

impl fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSettings")
            .field("defaults", &self.defaults)
            .field("registries", &self.registries)
            .field("retry", &self.retry)
            .field("cache_dir", &self.cache_dir)
            .field("cache_ttl", &self.cache_ttl)
            .field("exclusion_list", &self.exclusion_list)
            .field("credentials", &self.credentials)
            .field("user_agent", &self.user_agent)
            .field("max_redirects", &self.max_redirects)
            .field("deadline", &self.deadline)
            .field("observer", &self.observer.as_ref().map(|_| "<observer>"))
            .field("supply_chain", &self.supply_chain)
            .field("cloud_env", &self.cloud_env)
            .field("logins", &self.logins)
            .field("allowed_programs", &self.allowed_programs)
            .field("remember_documents", &self.remember_documents)
            .field("source_forges", &self.source_forges)
            .finish_non_exhaustive()
    }
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            defaults: HostConfig::default(),
            registries: BTreeMap::new(),
            retry: RetryPolicy::default(),
            cache_dir: None,
            cache_ttl: Duration::from_secs(300),
            exclusion_list: vec![DEFAULT_EXCLUSION.to_owned()],
            credentials: CredentialStore::anonymous(),
            user_agent: format!("image-update/{}", env!("CARGO_PKG_VERSION")),
            max_redirects: 5,
            deadline: Some(DEFAULT_DEADLINE),
            observer: None,
            supply_chain: SupplyChainConfig::default(),
            base_dir: None,
            cloud_env: Arc::new(CloudEnv::from_env()),
            logins: Arc::default(),
            allowed_programs: Vec::new(),
            remember_documents: false,
            source_forges: BTreeMap::new(),
        }
    }
}

impl ClientSettings {
    /// The usual set-up for a run: defaults, overlaid with the settings file
    /// when one is given, and credentials from the environment
    /// ([`CredentialStore::from_env`]).
    pub fn from_env_and_file(file: Option<&Path>) -> Result<Self> {
        let mut settings = Self {
            credentials: CredentialStore::from_env(),
            ..Self::default()
        };
        if let Some(path) = file {
            settings.apply_file(SettingsFile::load(path)?);
        }
        Ok(settings)
    }

    /// Overlay a settings file on these settings.
    pub fn apply_file(&mut self, file: SettingsFile) {
        self.defaults = file.defaults;
        self.allowed_programs
            .extend(file.allowed_credential_programs);
        self.supply_chain = file.supply_chain;
        for (host, forge) in file.source_forges {
            self.source_forges.insert(host.to_ascii_lowercase(), forge);
        }
        if file.base_dir.is_some() {
            self.base_dir = file.base_dir;
        }
        for (host, cfg) in file.registries {
            self.registries.insert(normalise_host_key(&host), cfg);
        }
        let r = file.retry;
        if let Some(v) = r.max_retries {
            self.retry.max_retries = v;
        }
        if let Some(v) = r.initial_backoff {
            self.retry.initial_backoff = v;
        }
        if let Some(v) = r.max_backoff {
            self.retry.max_backoff = v;
        }
        if let Some(v) = r.max_retry_after {
            self.retry.max_retry_after = v;
        }
        if let Some(dir) = file.cache.dir {
            self.cache_dir = Some(dir);
        }
        if let Some(ttl) = file.cache.ttl {
            self.cache_ttl = ttl;
        }
        if let Some(deadline) = file.deadline {
            self.deadline = (!deadline.is_zero()).then_some(deadline);
        }
        if let Some(list) = file.exclusion_list {
            // An empty list means the default, as in Flux.
            self.exclusion_list = if list.is_empty() {
                vec![DEFAULT_EXCLUSION.to_owned()]
            } else {
                list
            };
        }
    }

    /// The push-time API configured for `host`, if any (see
    /// [`crate::pushtime`]).
    pub fn push_time(&self, host: &str) -> Option<PushTimeConfig> {
        let key = normalise_host_key(host);
        self.registries
            .get(&key)
            .and_then(|h| h.push_time.clone())
            .or_else(|| self.defaults.push_time.clone())
    }

    /// Who logs in to the registry `host` (its `provider` setting; default
    /// `generic`).
    pub fn provider(&self, host: &str) -> Provider {
        let key = normalise_host_key(host);
        self.registries
            .get(&key)
            .and_then(|h| h.provider)
            .unwrap_or_default()
    }

    /// Set who logs in to the registry `host` (keeping its other settings).
    pub fn set_provider(&mut self, host: &str, provider: Provider) {
        self.registries
            .entry(normalise_host_key(host))
            .or_default()
            .provider = Some(provider);
    }

    /// Set or replace the settings of one host.
    pub fn set_host(&mut self, host: &str, config: HostConfig) {
        self.registries.insert(normalise_host_key(host), config);
    }

    /// The effective settings of `authority` (`host[:port]`).
    pub fn host(&self, authority: &str) -> HostSettings {
        let key = normalise_host_key(authority);
        let own = self
            .registries
            .get(&key)
            .or_else(|| {
                // Docker Hub's API host shares the settings of its canonical name.
                (key == DOCKER_HUB_API)
                    .then(|| self.registries.get(DOCKER_HUB))
                    .flatten()
            })
            .cloned()
            .unwrap_or_default();
        let d = &self.defaults;
        let is_hub = key == DOCKER_HUB || key == DOCKER_HUB_API;
        let rps = own
            .requests_per_second
            .or(d.requests_per_second)
            .or(is_hub.then_some(DOCKER_HUB_RPS))
            .filter(|r| *r > 0.0 && r.is_finite());
        HostSettings {
            insecure: own
                .insecure
                .or(d.insecure)
                .unwrap_or_else(|| is_loopback(authority)),
            ca_file: own.ca_file.or_else(|| d.ca_file.clone()),
            page_size: own
                .page_size
                .or(d.page_size)
                .unwrap_or(DEFAULT_PAGE_SIZE)
                .max(1),
            concurrency: own
                .concurrency
                .or(d.concurrency)
                .unwrap_or(DEFAULT_CONCURRENCY)
                .max(1),
            requests_per_second: rps,
            timeout: own.timeout.or(d.timeout).unwrap_or(DEFAULT_TIMEOUT),
            max_pages: own
                .max_pages
                .or(d.max_pages)
                .unwrap_or(DEFAULT_MAX_PAGES)
                .max(1),
            max_tags: own.max_tags.or(d.max_tags).unwrap_or(DEFAULT_MAX_TAGS),
            proxy: own.proxy.or_else(|| d.proxy.clone()),
        }
    }
}

/// Effective settings of one host.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSettings {
    pub insecure: bool,
    pub ca_file: Option<PathBuf>,
    pub page_size: u32,
    pub concurrency: usize,
    pub requests_per_second: Option<f64>,
    pub timeout: Duration,
    /// Most tag-list pages read for one repository.
    pub max_pages: u32,
    /// Most tags read for one repository.
    pub max_tags: usize,
    /// The proxy of this host (else the environment's).
    pub proxy: Option<String>,
}

/// Lowercase, scheme and path stripped, `docker.io` → `index.docker.io`.
pub(crate) fn normalise_host_key(host: &str) -> String {
    let h = host.trim();
    let h = h
        .strip_prefix("https://")
        .or_else(|| h.strip_prefix("http://"))
        .unwrap_or(h);
    let h = h.split('/').next().unwrap_or_default().to_ascii_lowercase();
    match h.as_str() {
        "docker.io" => DOCKER_HUB.to_owned(),
        _ => h,
    }
}

/// Parse `7d`, `1h30m`, `30s`, `500ms`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(input: &str) -> Option<Duration> {
    let s = input.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(secs) = s.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let value: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_end] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

fn de_opt_duration<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<Duration>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration such as 30s, 500ms, 2m or a number of seconds")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
            parse_duration(v)
                .map(Some)
                .ok_or_else(|| E::custom(format!("invalid duration {v:?}")))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Self::Value, E> {
            Ok(Some(Duration::from_secs(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Self::Value, E> {
            u64::try_from(v)
                .map(|v| Some(Duration::from_secs(v)))
                .map_err(|_| E::custom("negative duration"))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Self::Value, E> {
            Duration::try_from_secs_f64(v)
                .map(Some)
                .map_err(|_| E::custom("invalid duration"))
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("5x"), None);
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("1e300"), None);
        assert_eq!(parse_duration("1e300h"), None);
        assert_eq!(parse_duration("-1"), None);
    }

    #[test]
    fn parse_file() {
        let text = r#"
defaults:
  timeout: 20s
  concurrency: 3
registries:
  localhost:5000:
    insecure: true
  registry.example.com:
    ca_file: /etc/ssl/example.pem
    page_size: 100
    concurrency: 2
    requests_per_second: 5
    timeout: 10
  docker.io:
    requests_per_second: 2.5
  max.example:
    max_pages: 3
    max_tags: 50
retry:
  max_retries: 2
  initial_backoff: 10ms
deadline: 90s
cache:
  dir: /tmp/cache
  ttl: 1m
exclusion_list: ['^.*\.sig$', '^sha256-']
"#;
        let file = SettingsFile::parse(text).unwrap();
        let mut s = ClientSettings::default();
        s.apply_file(file);
        let local = s.host("localhost:5000");
        assert!(local.insecure);
        assert_eq!(local.timeout, Duration::from_secs(20));
        assert_eq!(local.concurrency, 3);
        let ex = s.host("REGISTRY.example.com");
        assert!(!ex.insecure);
        assert_eq!(ex.page_size, 100);
        assert_eq!(ex.concurrency, 2);
        assert_eq!(ex.requests_per_second, Some(5.0));
        assert_eq!(ex.timeout, Duration::from_secs(10));
        assert_eq!(
            ex.ca_file.as_deref(),
            Some(Path::new("/etc/ssl/example.pem"))
        );
        assert_eq!(
            s.host("registry-1.docker.io").requests_per_second,
            Some(2.5)
        );
        assert_eq!(s.retry.max_retries, 2);
        assert_eq!(s.retry.initial_backoff, Duration::from_millis(10));
        assert_eq!(s.cache_dir.as_deref(), Some(Path::new("/tmp/cache")));
        assert_eq!(s.cache_ttl, Duration::from_secs(60));
        assert_eq!(s.exclusion_list.len(), 2);
        assert_eq!(s.deadline, Some(Duration::from_secs(90)));
        let m = s.host("max.example");
        assert_eq!((m.max_pages, m.max_tags), (3, 50));
        assert_eq!(
            (local.max_pages, local.max_tags),
            (DEFAULT_MAX_PAGES, DEFAULT_MAX_TAGS)
        );
        // A zero deadline means none.
        s.apply_file(SettingsFile::parse("deadline: 0\n").unwrap());
        assert_eq!(s.deadline, None);
    }

    #[test]
    fn defaults() {
        let s = ClientSettings::default();
        let h = s.host("ghcr.io");
        assert!(!h.insecure);
        assert_eq!(h.page_size, DEFAULT_PAGE_SIZE);
        assert_eq!(h.requests_per_second, None);
        assert!(s.host("127.0.0.1:5000").insecure);
        assert!(s.host("[::1]:80").insecure);
        assert_eq!(
            s.host("index.docker.io").requests_per_second,
            Some(DOCKER_HUB_RPS)
        );
        assert_eq!(s.exclusion_list, vec![DEFAULT_EXCLUSION.to_owned()]);
        assert_eq!(s.deadline, Some(DEFAULT_DEADLINE));
        assert_eq!((h.max_pages, h.max_tags), (1000, 1_000_000));
        assert!(s.observer.is_none());
        assert!(format!("{s:?}").contains("observer: None"));
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert!(SettingsFile::parse("registries:\n  x.io:\n    insecur: true\n").is_err());
        assert!(SettingsFile::parse("bogus: 1\n").is_err());
        assert!(SettingsFile::parse("defaults:\n  timeout: soon\n").is_err());
        assert_eq!(SettingsFile::parse("").unwrap(), SettingsFile::default());
    }

    #[test]
    fn load_from_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registries.yaml");
        fs_err::write(&path, "registries:\n  ghcr.io:\n    page_size: 50\n").unwrap();
        let s = ClientSettings::from_env_and_file(Some(&path)).unwrap();
        assert_eq!(s.host("ghcr.io").page_size, 50);
        fs_err::write(&path, "registries: [").unwrap();
        let err = ClientSettings::from_env_and_file(Some(&path))
            .unwrap_err()
            .to_string();
        assert!(err.contains("registries.yaml"), "{err}");
        assert!(ClientSettings::from_env_and_file(Some(&dir.path().join("missing"))).is_err());
        assert!(ClientSettings::from_env_and_file(None).is_ok());
    }

    #[test]
    fn explicit_secure_loopback() {
        let mut s = ClientSettings::default();
        s.set_host(
            "127.0.0.1:9",
            HostConfig {
                insecure: Some(false),
                ..HostConfig::default()
            },
        );
        assert!(!s.host("127.0.0.1:9").insecure);
    }

    proptest::proptest! {
        #[test]
        fn duration_parser_never_panics(s in "\\PC{0,20}") {
            let _ = parse_duration(&s);
        }
    }
}
