//! Cloud registries that log in by themselves with the workload's identity:
//! Amazon ECR (`aws.rs`), Google Artifact Registry and Container Registry
//! (`gcp.rs`), Azure Container Registry (`azure.rs`), as Flux's
//! `ImageRepository.spec.provider` asks (`aws`, `gcp`, `azure`; `generic`
//! logs in with nothing of the cloud's).
//!
//! A provider is chosen per registry host ([`crate::ClientSettings::provider`]:
//! the settings file, a front end's `--registry-provider`, a definition's
//! `spec.provider`), never guessed from the host. It names a login, which
//! checks that the host is that cloud's registry before anything is sent
//! (so a definition cannot have the workload's cloud token sent to a host
//! of its choosing), finds the workload's identity in the order the
//! cloud's SDKs look for it, exchanges it for a registry password, and
//! hands that to the usual token flow as a username/password.
//!
//! [`Logins`] keeps what the logins got for the run, shared by every client
//! made from the same settings: the identity's credentials (AWS keys, a
//! Google or Entra access token) and each registry's password, each until
//! 80 % of its life has passed; one login at a time per key, so that many
//! repositories listed at once log in once. A registry that answers 401 or
//! 403 saying the password expired gets one new login per run. With a
//! cache directory the registry passwords are also kept on disk, in files
//! only their owner can read (0600), for the next run.
//!
//! Every secret a login sees or gets (keys, session tokens, assertions,
//! access and refresh tokens, passwords) is added to the client's redactor
//! before any answer that could echo it is read.

mod aws;
mod azure;
mod gcp;
mod jwt;
pub(crate) mod sigv4;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::transport::{Extra, Request, Response, lock};
use crate::url::Url;
use crate::{
    Context, Credential, CredentialSource, Error, MAX_SMALL, RegistryClient, Repository, Result,
    Secret,
};

/// Who logs in to a registry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Nothing of a cloud's: the registry's own credentials (environment,
    /// auth files, Docker config, a definition's Secret), else anonymous.
    #[default]
    Generic,
    /// Amazon ECR (and ECR Public), with the workload's AWS identity.
    Aws,
    /// Azure Container Registry, with the workload's Entra ID identity.
    Azure,
    /// Google Artifact Registry and Container Registry, with the
    /// workload's Google identity.
    Gcp,
}

impl Provider {
    /// `generic`, `aws`, `azure` or `gcp`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Generic => "generic",
            Self::Aws => "aws",
            Self::Azure => "azure",
            Self::Gcp => "gcp",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = String;

    /// `aws`, `azure`, `gcp` or `generic`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "generic" => Ok(Self::Generic),
            "aws" => Ok(Self::Aws),
            "azure" => Ok(Self::Azure),
            "gcp" => Ok(Self::Gcp),
            other => Err(format!(
                "{other:?} is not a registry provider (aws, azure, gcp or generic)"
            )),
        }
    }
}

/// `HOST=PROVIDER`, as `--registry-provider` and the Action's and
/// function's settings take it.
///
/// # Errors
/// No `=`, an empty host, or an unknown provider.
pub fn parse_host_provider(text: &str) -> std::result::Result<(String, Provider), String> {
    let (host, provider) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not HOST=PROVIDER (aws, azure, gcp or generic)"))?;
    let host = host.trim();
    if host.is_empty() || host.contains(['/', ' ']) {
        return Err(format!("{text:?}: {host:?} is not a registry host"));
    }
    Ok((host.to_owned(), provider.trim().parse()?))
}

/// The prefixes of the variables a login reads.
const ENV_PREFIXES: [&str; 4] = ["AWS_", "AZURE_", "GOOGLE_", "GCE_"];

/// The environment the logins read, taken once: the variables the clouds'
/// SDKs read (`AWS_*`, `AZURE_*`, `GOOGLE_*`, `GCE_*`). Its `Debug` shows
/// the names only.
#[derive(Clone, Default)]
pub struct CloudEnv {
    vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for CloudEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl CloudEnv {
    /// The variables of this process.
    #[must_use]
    pub fn from_env() -> Self {
        Self::from_vars(std::env::vars())
    }

    /// The given variables (those without a cloud's prefix are left out).
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
                .collect(),
        }
    }

    /// A variable's value; an empty one counts as unset, as in the SDKs.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// Whether a variable is `true` (any case) or `1`.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
    }
}

/// Something a login got, as long as it holds.
#[derive(Clone)]
pub(crate) struct Held {
    pub(crate) value: Value,
    /// Where the identity came from, for messages (never a secret).
    pub(crate) identity: String,
    /// When it was got and when it expires, Unix seconds (`None`: never,
    /// as keys from the environment).
    pub(crate) obtained: i64,
    pub(crate) expires: Option<i64>,
}

/// What is held.
#[derive(Clone)]
pub(crate) enum Value {
    /// AWS keys.
    Keys(sigv4::Keys),
    /// An OAuth2 access token (Google, Entra ID).
    Token(Secret),
    /// A registry's username and password.
    Login { username: String, password: Secret },
}

/// An expiry already past when it is read (a skewed clock, a service's
/// fixed date) counts as this long a life: the registry's answer then
/// decides, and a 401 saying "expired" brings one new login.
const MIN_LIFE: i64 = 60;

impl Held {
    /// Whether it is still used at `now`: before 80 % of its life.
    fn fresh(&self, now: i64) -> bool {
        let Some(expires) = self.expires else {
            return true;
        };
        let life = if expires > self.obtained {
            expires - self.obtained
        } else {
            MIN_LIFE
        };
        now < self.obtained + life * 4 / 5
    }
}

/// One key's slot: what is held, whether the registry's "expired"
/// already brought a new login this run, and a login that failed (not
/// tried again in the same run: a hundred repositories of a registry whose
/// login fails make one attempt).
#[derive(Default)]
struct Slot {
    held: Option<Held>,
    relogged: bool,
    failed: Option<Failure>,
}

/// A failed login, to be said again to whoever asks next.
#[derive(Clone)]
struct Failure {
    context: Context,
    provider: String,
    identity: String,
    code: String,
    message: String,
}

impl Failure {
    fn of(e: &Error) -> Self {
        match e {
            Error::Login {
                context,
                provider,
                identity,
                code,
                message,
            } => Self {
                context: (**context).clone(),
                provider: provider.clone(),
                identity: identity.clone(),
                code: code.clone(),
                message: message.clone(),
            },
            other => Self {
                context: Context::default(),
                provider: String::new(),
                identity: String::new(),
                code: String::new(),
                message: other.to_string(),
            },
        }
    }

    fn error(&self) -> Error {
        Error::Login {
            context: Box::new(self.context.clone()),
            provider: self.provider.clone(),
            identity: self.identity.clone(),
            code: self.code.clone(),
            message: self.message.clone(),
        }
    }
}

/// What the logins of one run got (see the module's documentation).
/// Shared by the clients made from clones of the same settings.
#[derive(Default)]
pub struct Logins {
    slots: Mutex<HashMap<String, Arc<Mutex<Slot>>>>,
    exchanges: AtomicUsize,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Logins({} exchanges)", self.exchanges())
    }
}

impl Logins {
    /// How many requests to the clouds' token services the logins made
    /// (STS, ECR, metadata servers, Entra ID, ACR's exchange...): for tests
    /// and benchmarks.
    #[must_use]
    pub fn exchanges(&self) -> usize {
        self.exchanges.load(Ordering::Relaxed)
    }

    fn slot(&self, key: &str) -> Arc<Mutex<Slot>> {
        Arc::clone(lock(&self.slots).entry(key.to_owned()).or_default())
    }

    /// What `key` holds while fresh, else what `login` gets (one login at
    /// a time per key: the others wait for its result).
    pub(crate) fn held(&self, key: &str, login: impl FnOnce() -> Result<Held>) -> Result<Held> {
        let slot = self.slot(key);
        let mut slot = lock(&slot);
        if let Some(h) = slot.held.as_ref().filter(|h| h.fresh(now())) {
            return Ok(h.clone());
        }
        if let Some(f) = &slot.failed {
            return Err(f.error());
        }
        match login() {
            Ok(h) => {
                slot.held = Some(h.clone());
                Ok(h)
            }
            Err(e) => {
                slot.failed = Some(Failure::of(&e));
                Err(e)
            }
        }
    }

    /// Forget what `key` holds after its registry said it expired, once
    /// per run: `false` when it was done already (sending again would not
    /// help).
    fn expire(&self, key: &str) -> bool {
        let slot = self.slot(key);
        let mut slot = lock(&slot);
        if slot.relogged {
            return false;
        }
        slot.relogged = true;
        slot.held = None;
        true
    }
}

pub(crate) fn now() -> i64 {
    crate::Timestamp::now().unix_seconds()
}

/// A registry a provider logs in to, from its host.
enum Target {
    Ecr(aws::EcrHost),
    EcrPublic,
    Google,
    Acr(azure::AcrHost),
}

impl Target {
    /// The registry `host` as `provider` knows it.
    ///
    /// # Errors
    /// A host that is not the provider's registry (the message says which
    /// hosts are).
    fn parse(provider: Provider, host: &str) -> std::result::Result<Self, String> {
        match provider {
            Provider::Generic => Err("the generic provider has no login".to_owned()),
            Provider::Aws if host == "public.ecr.aws" => Ok(Self::EcrPublic),
            Provider::Aws => aws::EcrHost::parse(host).map(Self::Ecr).ok_or_else(|| {
                format!(
                    "{host} is not an Amazon ECR registry (ACCOUNT.dkr.ecr[-fips].REGION.amazonaws.com, .amazonaws.com.cn and the other partitions' domains, or public.ecr.aws), so the aws provider does not log in to it"
                )
            }),
            Provider::Gcp => gcp::is_google_registry(host)
                .then_some(Self::Google)
                .ok_or_else(|| {
                    format!(
                        "{host} is not a Google registry (gcr.io, *.gcr.io, *-docker.pkg.dev), so the gcp provider does not log in to it"
                    )
                }),
            Provider::Azure => azure::AcrHost::parse(host).map(Self::Acr).ok_or_else(|| {
                format!(
                    "{host} is not an Azure Container Registry (NAME.azurecr.io, .azurecr.cn, .azurecr.us), so the azure provider does not log in to it"
                )
            }),
        }
    }
}

/// One request of a login.
pub(crate) struct Call<'a> {
    pub method: &'static str,
    pub url: Url,
    pub accept: Option<&'a str>,
    pub authorization: Option<&'a Secret>,
    pub headers: &'a [(&'a str, &'a Secret)],
    pub body: Option<(&'a str, Secret)>,
    /// The body holds a credential.
    pub secret_body: bool,
    pub timeout: Option<Duration>,
    pub retries: Option<u32>,
    pub metadata: bool,
}

impl<'a> Call<'a> {
    pub(crate) fn new(method: &'static str, url: Url) -> Self {
        Self {
            method,
            url,
            accept: Some("application/json"),
            authorization: None,
            headers: &[],
            body: None,
            secret_body: false,
            timeout: None,
            retries: None,
            metadata: false,
        }
    }

    /// A form body holding a credential.
    pub(crate) fn form(mut self, form: Secret) -> Self {
        self.body = Some(("application/x-www-form-urlencoded", form));
        self.secret_body = true;
        self
    }
}

/// What a provider's login works with.
pub(crate) struct Ctx<'a> {
    client: &'a RegistryClient,
    pub(crate) env: &'a CloudEnv,
    /// The registry host.
    pub(crate) host: &'a str,
    pub(crate) provider: Provider,
}

impl Ctx<'_> {
    /// Send `call`; a failure to get an answer at all is the login's
    /// failure, naming `identity`.
    pub(crate) fn send(&self, call: Call<'_>, identity: &str) -> Result<Response> {
        self.client
            .settings
            .logins
            .exchanges
            .fetch_add(1, Ordering::Relaxed);
        let context = Context {
            registry: call.url.authority().to_owned(),
            repository: None,
        };
        let headers = call.headers;
        self.client
            .transport
            .send(&Request {
                method: call.method,
                url: call.url,
                accept: call.accept,
                authorization: call.authorization,
                body: call.body,
                secret_body: call.secret_body,
                context: &context,
                max_body: MAX_SMALL,
                extra: Extra {
                    headers,
                    timeout: call.timeout,
                    max_retries: call.retries,
                    metadata: call.metadata,
                },
            })
            .map_err(|e| self.failed(identity, "", e.to_string()))
    }

    /// Register secrets for redaction before any answer can echo them.
    pub(crate) fn secret(&self, secret: &str) {
        self.client.secrets.add(secret);
    }

    /// The login failed: naming the provider, the identity source tried,
    /// and the cloud's own error code.
    pub(crate) fn failed(&self, identity: &str, code: &str, message: impl Into<String>) -> Error {
        Error::Login {
            context: Box::new(Context {
                registry: self.host.to_owned(),
                repository: None,
            }),
            provider: self.provider.to_string(),
            identity: identity.to_owned(),
            code: code.to_owned(),
            message: message.into(),
        }
    }

    /// A token service's refusal (`resp` is not 200): its OAuth2 error
    /// code and description, with what was asked (`what`, a URL).
    pub(crate) fn refused(&self, identity: &str, resp: &Response, what: &str) -> Error {
        let (code, message) = oauth_error(&resp.body);
        self.failed(
            identity,
            &code,
            format!("{what} answered HTTP {}: {message}", resp.status),
        )
    }

    /// The string `field` of a token service's JSON answer (and the whole
    /// answer), registered for redaction before anything of the answer is
    /// quoted; a refusal ([`refused`](Self::refused)) when the answer is
    /// not 200 or has no such field.
    pub(crate) fn token_field(
        &self,
        identity: &str,
        resp: &Response,
        field: &str,
        what: &str,
    ) -> Result<(String, serde_json::Value)> {
        let value: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_default();
        let token = value
            .get(field)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned();
        self.secret(&token);
        if resp.status != 200 {
            return Err(self.refused(identity, resp, what));
        }
        if token.is_empty() {
            return Err(self.failed(identity, "", format!("{what} answered no {field}")));
        }
        Ok((token, value))
    }

    /// An identity's credentials, shared by the logins of a run.
    pub(crate) fn identity(&self, key: &str, login: impl FnOnce() -> Result<Held>) -> Result<Held> {
        self.client.settings.logins.held(key, login)
    }

    /// The scheme the registry is reached with (`http` for a host marked
    /// insecure).
    pub(crate) fn registry_scheme(&self) -> &'static str {
        if self.client.settings.host(self.host).insecure {
            "http"
        } else {
            "https"
        }
    }
}

/// An endpoint URL from a variable, checked.
pub(crate) fn endpoint(ctx: &Ctx<'_>, variable: &str, identity: &str) -> Result<Option<Url>> {
    match ctx.env.get(variable) {
        None => Ok(None),
        Some(text) => Url::parse(text.trim()).map(Some).ok_or_else(|| {
            ctx.failed(
                identity,
                "",
                format!("{variable} {text:?} is not an http(s) URL"),
            )
        }),
    }
}

/// Read a small file a variable names (a token file, a key file): at most
/// 1 MiB, the path named in errors.
pub(crate) fn read_small(path: &str) -> std::result::Result<String, String> {
    use std::io::Read;
    let file = fs_err::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_SMALL + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("reading {path}: {e}"))?;
    if text.len() as u64 > MAX_SMALL {
        return Err(format!("{path} is larger than 1 MiB"));
    }
    Ok(text)
}

/// An OAuth2 error answer's code and description (`error`,
/// `error_description`), Google's (`error.status`, `error.message`) and
/// the registries' (`errors[].code`, `.message`), else the body itself.
pub(crate) fn oauth_error(body: &[u8]) -> (String, String) {
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => {
            let text = String::from_utf8_lossy(&body[..body.len().min(4096)]);
            return (String::new(), text.trim().to_owned());
        }
    };
    let text = |v: Option<&serde_json::Value>| {
        v.and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    if let Some(e) = value.get("error").filter(|e| e.is_object()) {
        return (text(e.get("status")), text(e.get("message")));
    }
    if let Some(first) = value
        .get("errors")
        .and_then(serde_json::Value::as_array)
        .and_then(|a| a.first())
    {
        return (text(first.get("code")), text(first.get("message")));
    }
    (
        text(value.get("error")),
        text(value.get("error_description")),
    )
}

/// A number of seconds that may come as a string (Azure's IMDS sends
/// `"expires_in": "3599"`).
pub(crate) fn seconds(value: Option<&serde_json::Value>) -> Option<i64> {
    match value? {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Whether a 401 or 403 says the credentials expired (ECR: "Your
/// authorization token has expired"; RFC 6750's `error_description`...).
pub(crate) fn says_expired(resp: &Response) -> bool {
    let body = String::from_utf8_lossy(&resp.body[..resp.body.len().min(64 * 1024)]);
    let expired = |t: &str| t.to_ascii_lowercase().contains("expired");
    expired(&body)
        || resp
            .headers_all("www-authenticate")
            .iter()
            .any(|h| expired(h))
}

/// A registry password kept on disk between runs.
#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    key: String,
    username: String,
    password: String,
    identity: String,
    obtained: i64,
    expires: Option<i64>,
}

const ON_DISK_VERSION: u32 = 1;

/// The variables whose values say which identity logs in (never a secret
/// value): a login kept on disk is used only by a run with the same ones.
const IDENTITY_VARIABLES: [&str; 14] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_ECR",
    "AWS_ENDPOINT_URL_STS",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_AUTHORITY_HOST",
    "AZURE_FEDERATED_TOKEN_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GCE_METADATA_HOST",
];

impl RegistryClient {
    /// The registry credential the cloud login of `repo`'s registry gives
    /// (`None`: no provider logs in to it), without asking the registry
    /// itself: for diagnostics and tests. Errors are redacted.
    pub fn cloud_login(&self, repo: &Repository) -> Result<Option<(Credential, CredentialSource)>> {
        self.boundary(repo, false, || match self.cloud_provider(repo) {
            None => Ok(None),
            Some(provider) => self.cloud_credential(repo, provider).map(Some),
        })
    }

    /// The registry credential a cloud login gives for `repo`.
    pub(crate) fn cloud_credential(
        &self,
        repo: &Repository,
        provider: Provider,
    ) -> Result<(Credential, CredentialSource)> {
        let host = repo.registry();
        let ctx = Ctx {
            client: self,
            env: &self.settings.cloud_env,
            host,
            provider,
        };
        let target = Target::parse(provider, host).map_err(|m| ctx.failed("", "", m))?;
        let key = format!("{provider}|{host}");
        let held = self.settings.logins.held(&key, || {
            if let Some(h) = self.login_from_disk(&key) {
                return Ok(h);
            }
            let h = match &target {
                Target::Ecr(ecr) => aws::login(&ctx, ecr),
                Target::EcrPublic => aws::login_public(&ctx),
                Target::Google => gcp::login(&ctx),
                Target::Acr(acr) => azure::login(&ctx, acr),
            }?;
            self.login_to_disk(&key, &h);
            Ok(h)
        })?;
        let Value::Login { username, password } = held.value else {
            return Err(ctx.failed(&held.identity, "", "internal error: no registry password"));
        };
        let credential = Credential::Basic { username, password };
        self.secrets.add_credential(&credential);
        Ok((
            credential,
            CredentialSource::Cloud {
                provider: provider.to_string(),
                identity: held.identity,
            },
        ))
    }

    /// The provider that logs in to the registry of `repo`, unless a
    /// credential was given for it (a definition's Secret wins, as in Flux).
    pub(crate) fn cloud_provider(&self, repo: &Repository) -> Option<Provider> {
        let provider = self.settings.provider(repo.registry());
        (provider != Provider::Generic && !self.settings.credentials.has_given(repo.registry()))
            .then_some(provider)
    }

    /// After a 401 or 403 from the registry of `repo`: when it says the
    /// cloud login's password expired, forget it (once per run), so that
    /// the next request logs in again. Whether to send again.
    pub(crate) fn cloud_login_expired(&self, repo: &Repository, resp: &Response) -> bool {
        says_expired(resp) && self.expire_cloud_login(repo)
    }

    /// Forget the cloud login of the registry of `repo` (once per run),
    /// which its registry or token service said expired. Whether to try
    /// again.
    pub(crate) fn expire_cloud_login(&self, repo: &Repository) -> bool {
        let Some(provider) = self.cloud_provider(repo) else {
            return false;
        };
        let key = format!("{provider}|{}", repo.registry());
        let again = self.settings.logins.expire(&key);
        if again {
            if let Some(path) = self.login_path(&key) {
                let _ = fs_err::remove_file(path);
            }
            tracing::info!(
                "{}: the {provider} login expired; logging in again",
                repo.registry()
            );
        }
        again
    }

    /// Where a registry's login is kept on disk: under the cache directory,
    /// named after the registry and the identity's variables.
    fn login_path(&self, key: &str) -> Option<PathBuf> {
        let dir = self.settings.cache_dir.as_ref()?;
        let mut hash = Sha256::new();
        hash.update(key.as_bytes());
        for name in IDENTITY_VARIABLES {
            hash.update([0]);
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(self.settings.cloud_env.get(name).unwrap_or("").as_bytes());
        }
        let hex: String = hash
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(dir.join("logins").join(format!("{hex}.json")))
    }

    /// A fresh login of an earlier run, if one is kept. A file that is not
    /// its owner's alone is not read.
    fn login_from_disk(&self, key: &str) -> Option<Held> {
        let path = self.login_path(key)?;
        let text = fs_err::read_to_string(&path).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs_err::metadata(&path).ok()?.permissions().mode();
            if mode & 0o077 != 0 {
                tracing::warn!(
                    "ignoring {}: it can be read by others than its owner",
                    path.display()
                );
                return None;
            }
        }
        let kept: OnDisk = serde_json::from_str(&text).ok()?;
        if kept.version != ON_DISK_VERSION || kept.key != key {
            return None;
        }
        self.secrets.add(&kept.password);
        let held = Held {
            value: Value::Login {
                username: kept.username,
                password: Secret::new(kept.password),
            },
            identity: kept.identity,
            obtained: kept.obtained,
            expires: kept.expires,
        };
        held.fresh(now()).then_some(held)
    }

    /// Keep a registry's login on disk (mode 0600) when there is a cache
    /// directory; failures are logged, not returned.
    fn login_to_disk(&self, key: &str, held: &Held) {
        let (Some(path), Value::Login { username, password }) = (self.login_path(key), &held.value)
        else {
            return;
        };
        let kept = OnDisk {
            version: ON_DISK_VERSION,
            key: key.to_owned(),
            username: username.clone(),
            password: password.expose().to_owned(),
            identity: held.identity.clone(),
            obtained: held.obtained,
            expires: held.expires,
        };
        let written = (|| -> std::io::Result<()> {
            let dir = path
                .parent()
                .ok_or_else(|| std::io::Error::other("no directory"))?;
            fs_err::create_dir_all(dir)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
            let json = Secret::new(serde_json::to_string(&kept).map_err(std::io::Error::other)?);
            // A temporary file is created with mode 0600.
            let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut tmp, json.expose().as_bytes())?;
            tmp.as_file().sync_all()?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        })();
        if let Err(e) = written {
            tracing::warn!("cannot keep the login in {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_parse() {
        assert_eq!("aws".parse::<Provider>(), Ok(Provider::Aws));
        assert_eq!("generic".parse::<Provider>(), Ok(Provider::Generic));
        assert!("AWS".parse::<Provider>().is_err());
        assert_eq!(
            parse_host_provider("123.dkr.ecr.eu-west-1.amazonaws.com=aws"),
            Ok((
                "123.dkr.ecr.eu-west-1.amazonaws.com".to_owned(),
                Provider::Aws
            ))
        );
        assert!(parse_host_provider("ghcr.io").is_err());
        assert!(parse_host_provider("=aws").is_err());
        assert!(parse_host_provider("a/b=aws").is_err());
        assert!(parse_host_provider("x.io=amazon").is_err());
    }

    #[test]
    fn freshness_is_80_percent_of_life() {
        let h = |obtained, expires| Held {
            value: Value::Token(Secret::new("t")),
            identity: String::new(),
            obtained,
            expires,
        };
        assert!(h(1000, None).fresh(i64::MAX));
        assert!(h(1000, Some(2000)).fresh(1799));
        assert!(!h(1000, Some(2000)).fresh(1800));
        // Already past when read: a minute's life.
        assert!(h(1000, Some(900)).fresh(1047));
        assert!(!h(1000, Some(900)).fresh(1048));
    }

    #[test]
    fn one_login_per_key_at_a_time() {
        let logins = Arc::new(Logins::default());
        let made = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let logins = Arc::clone(&logins);
                let made = Arc::clone(&made);
                std::thread::spawn(move || {
                    logins
                        .held("aws|r", || {
                            made.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(50));
                            Ok(Held {
                                value: Value::Token(Secret::new("t")),
                                identity: String::new(),
                                obtained: now(),
                                expires: Some(now() + 3600),
                            })
                        })
                        .is_ok()
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().unwrap());
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert!(logins.expire("aws|r"));
        assert!(!logins.expire("aws|r"));
    }

    #[test]
    fn error_answers_are_read_in_every_shape() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_grant","error_description":"Invalid JWT"}"#),
            ("invalid_grant".to_owned(), "Invalid JWT".to_owned())
        );
        assert_eq!(
            oauth_error(
                br#"{"error":{"code":403,"message":"Permission denied","status":"PERMISSION_DENIED"}}"#
            ),
            ("PERMISSION_DENIED".to_owned(), "Permission denied".to_owned())
        );
        assert_eq!(
            oauth_error(br#"{"errors":[{"code":"UNAUTHORIZED","message":"no"}]}"#),
            ("UNAUTHORIZED".to_owned(), "no".to_owned())
        );
        assert_eq!(oauth_error(b"<html>"), (String::new(), "<html>".to_owned()));
        assert_eq!(seconds(Some(&serde_json::json!("3599"))), Some(3599));
        assert_eq!(seconds(Some(&serde_json::json!(3599))), Some(3599));
        assert_eq!(
            seconds(Some(&serde_json::json!(1.5e9))),
            Some(1_500_000_000)
        );
        assert_eq!(seconds(Some(&serde_json::json!(null))), None);
    }

    #[test]
    fn env_keeps_cloud_variables_only() {
        let env = CloudEnv::from_vars([
            ("AWS_REGION", "eu-west-1"),
            ("HOME", "/root"),
            ("AZURE_CLIENT_ID", ""),
            ("AWS_EC2_METADATA_DISABLED", "TRUE"),
        ]);
        assert_eq!(env.get("AWS_REGION"), Some("eu-west-1"));
        assert_eq!(env.get("HOME"), None);
        assert_eq!(env.get("AZURE_CLIENT_ID"), None);
        assert!(env.flag("AWS_EC2_METADATA_DISABLED"));
        assert!(!format!("{env:?}").contains("eu-west-1"));
    }
}
