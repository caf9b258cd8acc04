//! Where registry credentials come from.
//!
//! Sources, first match wins (see `docs/registry.md`):
//!
//! 1. credentials given in code ([`CredentialStore::with_credential`]) and the
//!    environment: `IMAGE_UPDATE_REGISTRY_<HOST>_USERNAME` / `_PASSWORD`, where
//!    `<HOST>` is the registry host (with port) in upper case with every
//!    character other than `A-Z0-9` replaced by `_` (`ghcr.io` → `GHCR_IO`,
//!    `localhost:5000` → `LOCALHOST_5000`, Docker Hub → `INDEX_DOCKER_IO` or
//!    `DOCKER_IO`); or the unscoped pair `IMAGE_UPDATE_REGISTRY_USERNAME` /
//!    `_PASSWORD` together with `IMAGE_UPDATE_REGISTRY_HOST`, a comma-separated
//!    list of the hosts it is for (the pair is never sent anywhere else);
//! 2. the podman-style `auth.json` named by `REGISTRY_AUTH_FILE`
//!    (keys may be `host` or `host/path`; the longest matching path wins);
//! 3. the Docker config (`$DOCKER_CONFIG/config.json`, else
//!    `~/.docker/config.json`): `credHelpers[host]`, then `credsStore`, then
//!    the `auths` entry (`identitytoken`, `registrytoken`, `auth`, or
//!    `username` + `password`).
//!
//! Docker Hub keys are matched under every spelling: `https://index.docker.io/v1/`,
//! `index.docker.io`, `docker.io`, `registry-1.docker.io`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde::Deserialize;

use super::error::{Error, Result, describe_json_error};
use super::reference::{DOCKER_HUB, DOCKER_HUB_API};
use image_update_secret::Secret;

const ENV_PREFIX: &str = "IMAGE_UPDATE_REGISTRY_";
const HUB_HELPER_URL: &str = "https://index.docker.io/v1/";

/// A credential for one registry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Credential {
    #[default]
    Anonymous,
    /// Username and password (or personal access token). Sent as Basic auth
    /// to the registry or to its token service.
    Basic { username: String, password: Secret },
    /// An OAuth2 refresh token (Docker `identitytoken`, or a credential helper
    /// answering with username `<token>`). Exchanged for an access token with
    /// a POST to the token service.
    IdentityToken {
        username: Option<String>,
        token: Secret,
    },
    /// A bearer token used as is (Docker `registrytoken`).
    RegistryToken(Secret),
}

impl Credential {
    /// True for [`Credential::Anonymous`].
    pub fn is_anonymous(&self) -> bool {
        matches!(self, Credential::Anonymous)
    }

    /// What kind of secret this is, for messages: `username/password`,
    /// `identity token`, `registry token`, or `no credentials`.
    pub fn kind(&self) -> &'static str {
        match self {
            Credential::Anonymous => "no credentials",
            Credential::Basic { .. } => "username/password",
            Credential::IdentityToken { .. } => "identity token",
            Credential::RegistryToken(_) => "registry token",
        }
    }
}

/// Where a credential came from, for error messages (never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CredentialSource {
    /// No source had credentials for the registry.
    #[default]
    Anonymous,
    /// Given by the program ([`CredentialStore::with_credential_from`]):
    /// the description it passed, e.g. `Secret flux-system/regcred`.
    Given(String),
    /// The environment variables holding the username and the password.
    Environment { username: String, password: String },
    /// A podman/skopeo auth file (`REGISTRY_AUTH_FILE`) and the key of the
    /// `auths` entry used.
    AuthFile { path: PathBuf, key: String },
    /// A Docker config file and the key of the `auths` entry used.
    DockerConfig { path: PathBuf, key: String },
    /// A credential helper (`docker-credential-NAME`) named by a config file.
    Helper { program: String, config: PathBuf },
    /// A cloud provider's login (`crate::cloud`) with the workload's
    /// identity.
    Cloud {
        /// `aws`, `azure` or `gcp`.
        provider: String,
        /// Where the identity came from.
        identity: String,
    },
}

impl std::fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Anonymous => f.write_str("anonymous (no credentials found)"),
            CredentialSource::Given(description) => f.write_str(description),
            CredentialSource::Environment { username, password } => {
                write!(f, "environment variables {username} and {password}")
            }
            CredentialSource::AuthFile { path, key } => write!(
                f,
                "auth file {} (REGISTRY_AUTH_FILE), auths key {key:?}",
                path.display()
            ),
            CredentialSource::DockerConfig { path, key } => {
                write!(f, "Docker config {}, auths key {key:?}", path.display())
            }
            CredentialSource::Helper { program, config } => write!(
                f,
                "credential helper {program} (named in {})",
                config.display()
            ),
            CredentialSource::Cloud { provider, identity } => {
                write!(f, "the {provider} login with {identity}")
            }
        }
    }
}

/// Credential lookup configuration.
#[derive(Debug, Clone, Default)]
pub struct CredentialStore {
    explicit: BTreeMap<String, (Credential, CredentialSource)>,
    docker_config: Option<PathBuf>,
    auth_file: Option<PathBuf>,
    helper_dirs: Option<Vec<PathBuf>>,
    helper_timeout: Option<Duration>,
}

impl CredentialStore {
    /// No sources: every registry is accessed anonymously.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// Read the environment of this process: the `IMAGE_UPDATE_REGISTRY_*`
    /// variables, `REGISTRY_AUTH_FILE`, `DOCKER_CONFIG` and `HOME`.
    pub fn from_env() -> Self {
        Self::from_vars(std::env::vars())
    }

    /// Like [`from_env`](Self::from_env), from the given variables.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars: BTreeMap<String, String> = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let mut store = Self::default();
        // Host-scoped pairs.
        for (key, user) in &vars {
            let Some(host_key) = key
                .strip_prefix(ENV_PREFIX)
                .and_then(|k| k.strip_suffix("_USERNAME"))
            else {
                continue;
            };
            if host_key.is_empty() {
                continue;
            }
            let pw_key = format!("{ENV_PREFIX}{host_key}_PASSWORD");
            if let Some(pw) = vars.get(&pw_key) {
                store.explicit.insert(
                    format!("env:{host_key}"),
                    (
                        Credential::Basic {
                            username: user.clone(),
                            password: Secret::new(pw.clone()),
                        },
                        CredentialSource::Environment {
                            username: key.clone(),
                            password: pw_key.clone(),
                        },
                    ),
                );
            } else {
                tracing::warn!("{key} is set but {pw_key} is not; ignoring it");
            }
        }
        // Unscoped pair, restricted to the listed hosts.
        let user = vars.get(&format!("{ENV_PREFIX}USERNAME"));
        let pass = vars.get(&format!("{ENV_PREFIX}PASSWORD"));
        let hosts = vars.get(&format!("{ENV_PREFIX}HOST"));
        match (user, pass, hosts) {
            (Some(u), Some(p), Some(hosts)) => {
                for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
                    store.explicit.insert(
                        crate::settings::normalise_host_key(host),
                        (
                            Credential::Basic {
                                username: u.clone(),
                                password: Secret::new(p.clone()),
                            },
                            CredentialSource::Environment {
                                username: format!("{ENV_PREFIX}USERNAME"),
                                password: format!("{ENV_PREFIX}PASSWORD"),
                            },
                        ),
                    );
                }
            }
            (Some(_), Some(_), None) => tracing::warn!(
                "{ENV_PREFIX}USERNAME/_PASSWORD are set without {ENV_PREFIX}HOST; they are not used"
            ),
            _ => {}
        }
        if let Some(path) = vars.get("REGISTRY_AUTH_FILE").filter(|p| !p.is_empty()) {
            store.auth_file = Some(PathBuf::from(path));
        }
        store.docker_config = match vars.get("DOCKER_CONFIG").filter(|p| !p.is_empty()) {
            Some(dir) => Some(Path::new(dir).join("config.json")),
            None => vars
                .get("HOME")
                .filter(|h| !h.is_empty())
                .map(|home| Path::new(home).join(".docker").join("config.json")),
        };
        store
    }

    /// Use this credential for `host` (highest precedence). Errors name it
    /// "credentials given for HOST"; [`with_credential_from`](Self::with_credential_from)
    /// says where it came from instead.
    pub fn with_credential(self, host: &str, credential: Credential) -> Self {
        let description = format!("credentials given for {host}");
        self.with_credential_from(host, credential, description)
    }

    /// Use this credential for `host` (highest precedence); `description`
    /// says where it came from in error messages, e.g.
    /// `Secret flux-system/regcred` for a credential built with
    /// [`credential_from_config_json`]. It must not contain the secret.
    pub fn with_credential_from(
        mut self,
        host: &str,
        credential: Credential,
        description: impl Into<String>,
    ) -> Self {
        self.explicit.insert(
            crate::settings::normalise_host_key(host),
            (credential, CredentialSource::Given(description.into())),
        );
        self
    }

    /// Whether a credential was given in code for `registry`
    /// ([`with_credential_from`](Self::with_credential_from)).
    pub(crate) fn has_given(&self, registry: &str) -> bool {
        let host = crate::settings::normalise_host_key(registry);
        self.explicit
            .get(&host)
            .is_some_and(|(_, source)| matches!(source, CredentialSource::Given(_)))
    }

    /// Every credential set in code or by the environment, whatever its host
    /// (the client registers their secrets for redaction up front).
    pub(crate) fn explicit_credentials(&self) -> impl Iterator<Item = &Credential> {
        self.explicit.values().map(|(c, _)| c)
    }

    /// Read this Docker `config.json` (replaces the default location).
    pub fn with_docker_config(mut self, path: impl Into<PathBuf>) -> Self {
        self.docker_config = Some(path.into());
        self
    }

    /// Read this podman-style `auth.json` before the Docker config.
    pub fn with_auth_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.auth_file = Some(path.into());
        self
    }

    /// Look for `docker-credential-*` helpers in these directories instead of `PATH`.
    pub fn with_helper_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.helper_dirs = Some(dirs);
        self
    }

    /// Kill a credential helper that has not answered after this long (default 10 s).
    pub fn with_helper_timeout(mut self, timeout: Duration) -> Self {
        self.helper_timeout = Some(timeout);
        self
    }

    /// The credential for `repository` on `registry` (canonical host, e.g.
    /// `index.docker.io` or `localhost:5000`).
    pub fn lookup(&self, registry: &str, repository: &str) -> Result<Credential> {
        self.lookup_with_source(registry, repository)
            .map(|(c, _)| c)
    }

    /// [`lookup`](Self::lookup), with where the credential came from.
    pub fn lookup_with_source(
        &self,
        registry: &str,
        repository: &str,
    ) -> Result<(Credential, CredentialSource)> {
        let host = crate::settings::normalise_host_key(registry);
        let host = if host == DOCKER_HUB_API {
            DOCKER_HUB.to_owned()
        } else {
            host
        };
        if let Some(c) = self.explicit.get(&host) {
            return Ok(c.clone());
        }
        for env_key in env_host_keys(&host) {
            if let Some(c) = self.explicit.get(&format!("env:{env_key}")) {
                return Ok(c.clone());
            }
        }
        if let Some(path) = &self.auth_file
            && let Some(file) = read_config(path, &host)?
            && let Some((c, key)) = self.lookup_in_file(&file, path, &host, repository)?
        {
            let source = match key {
                Found::Auths(key) => CredentialSource::AuthFile {
                    path: path.clone(),
                    key,
                },
                Found::Helper(program) => CredentialSource::Helper {
                    program,
                    config: path.clone(),
                },
            };
            return Ok((c, source));
        }
        if let Some(path) = &self.docker_config
            && let Some(file) = read_config(path, &host)?
            && let Some((c, key)) = self.lookup_in_file(&file, path, &host, repository)?
        {
            let source = match key {
                Found::Auths(key) => CredentialSource::DockerConfig {
                    path: path.clone(),
                    key,
                },
                Found::Helper(program) => CredentialSource::Helper {
                    program,
                    config: path.clone(),
                },
            };
            return Ok((c, source));
        }
        Ok((Credential::Anonymous, CredentialSource::Anonymous))
    }

    fn lookup_in_file(
        &self,
        file: &ConfigFile,
        path: &Path,
        host: &str,
        repository: &str,
    ) -> Result<Option<(Credential, Found)>> {
        if let Some(helper) = file
            .cred_helpers
            .iter()
            .find(|(k, _)| key_host_and_path(k).0 == host)
            .map(|(_, v)| v)
            && let Some(c) = self.run_helper(helper, host)?
        {
            return Ok(Some((c, Found::Helper(helper_program(helper)))));
        }
        if let Some(store) = file.creds_store.as_deref().filter(|s| !s.is_empty())
            && let Some(c) = self.run_helper(store, host)?
        {
            return Ok(Some((c, Found::Helper(helper_program(store)))));
        }
        match file.best_auth(host, repository) {
            Some((key, entry)) => Ok(entry
                .credential(host, path)?
                .map(|c| (c, Found::Auths(key.to_owned())))),
            None => Ok(None),
        }
    }

    fn run_helper(&self, name: &str, host: &str) -> Result<Option<Credential>> {
        let program = helper_program(name);
        let exe = match &self.helper_dirs {
            Some(dirs) => match dirs.iter().map(|d| d.join(&program)).find(|p| p.is_file()) {
                Some(p) => p,
                None => {
                    tracing::warn!("credential helper {program} not found; skipping it");
                    return Ok(None);
                }
            },
            None => PathBuf::from(&program),
        };
        let server_url = if host == DOCKER_HUB {
            HUB_HELPER_URL.to_owned()
        } else {
            host.to_owned()
        };
        let err = |message: String| Error::Credentials {
            registry: host.to_owned(),
            message,
        };
        let timeout = self.helper_timeout.unwrap_or(HELPER_TIMEOUT);
        let ran = match run_bounded(
            &exe,
            &["get"],
            Some(server_url.as_bytes()),
            timeout,
            MAX_PROGRAM_OUTPUT,
        ) {
            Ok(ran) => ran,
            Err(RunError::Start(e)) => {
                tracing::warn!("cannot run credential helper {program}: {e}; skipping it");
                return Ok(None);
            }
            Err(e) => return Err(err(format!("{program}: {e}"))),
        };
        let out = String::from_utf8_lossy(&ran.stdout).into_owned();
        let status = ran.status;
        if !status.success() {
            if out.to_ascii_lowercase().contains("credentials not found") {
                return Ok(None);
            }
            // Never echo the helper's output: it could contain a secret.
            return Err(err(format!("{program} get failed with {status}")));
        }
        #[derive(Deserialize)]
        struct HelperAnswer {
            #[serde(rename = "Username", default)]
            username: String,
            #[serde(rename = "Secret", default)]
            secret: String,
        }
        let answer: HelperAnswer = serde_json::from_str(&out).map_err(|e| {
            err(format!(
                "{program} printed invalid JSON at line {}",
                e.line()
            ))
        })?;
        if answer.secret.is_empty() {
            return Ok(None);
        }
        Ok(Some(if answer.username == "<token>" {
            Credential::IdentityToken {
                username: None,
                token: Secret::new(answer.secret),
            }
        } else {
            Credential::Basic {
                username: answer.username,
                password: Secret::new(answer.secret),
            }
        }))
    }
}

/// A program the operator allows to print registry credentials (Argo CD
/// Image Updater's `pull-secret: ext:PATH`), as `[HOST=]PATH`: an absolute
/// path, and the registry its answer may be sent to (none: any registry
/// a definition names, which a repository's author chooses).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct AllowedProgram {
    /// The registry host (normalised), if restricted to one.
    pub registry: Option<String>,
    /// The program, an absolute path.
    pub path: PathBuf,
}

impl std::str::FromStr for AllowedProgram {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let text = text.trim();
        let (registry, path) = if text.starts_with('/') {
            (None, text)
        } else {
            match text.split_once('=') {
                Some((host, path)) if !host.trim().is_empty() => {
                    (Some(crate::settings::normalise_host_key(host)), path.trim())
                }
                _ => {
                    return Err(format!("{text:?} is not [HOST=]PATH with an absolute PATH"));
                }
            }
        };
        if !path.starts_with('/') {
            return Err(format!(
                "{text:?}: the program must be an absolute path, not {path:?}"
            ));
        }
        Ok(Self {
            registry,
            path: PathBuf::from(path),
        })
    }
}

impl TryFrom<String> for AllowedProgram {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<Self, String> {
        text.parse()
    }
}

/// How long a credential helper or program may take (`docker-credential-*`,
/// Argo CD's `ext:` programs).
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(10);

/// The most a credential helper or program may print on stdout.
pub const MAX_PROGRAM_OUTPUT: usize = 64 * 1024;

/// What a program run by [`run_bounded`] did.
#[derive(Debug)]
pub struct Ran {
    pub status: std::process::ExitStatus,
    /// Its stdout (at most the cap).
    pub stdout: Vec<u8>,
}

/// Why [`run_bounded`] has no answer. No variant quotes the program's
/// output, which may hold a secret.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start it: {0}")]
    Start(std::io::Error),
    #[error("it did not answer in time (within {})", crate::error::human_duration(*.0))]
    Timeout(Duration),
    #[error("it printed more than {0} bytes")]
    TooMuch(usize),
    #[error("waiting for it: {0}")]
    Wait(std::io::Error),
}

/// Run `exe` with `args`, no shell, stderr discarded, `input` on stdin
/// (none: stdin closed), and wait at most `timeout` for it to exit; its
/// stdout is read up to `max_output` bytes (more kills it). A program that
/// hangs or floods is killed, and said so.
///
/// # Errors
/// [`RunError`]: it could not start, took too long, printed too much.
pub fn run_bounded(
    exe: &Path,
    args: &[&str],
    input: Option<&[u8]>,
    timeout: Duration,
    max_output: usize,
) -> std::result::Result<Ran, RunError> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(RunError::Start)?;
    if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
        // A program that exits without reading stdin is not an error here.
        let _ = stdin.write_all(input);
    }
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            // One byte over the cap tells "too much" from "exactly the cap".
            let _ = s.take(max_output as u64 + 1).read_to_end(&mut out);
        }
        out
    });
    let deadline = Instant::now() + timeout;
    let mut reader = Some(reader);
    let mut stdout = None;
    let status = loop {
        // Over the cap: killed at once, not at the deadline.
        if reader
            .as_ref()
            .is_some_and(std::thread::JoinHandle::is_finished)
        {
            let out = reader
                .take()
                .map(|r| r.join().unwrap_or_default())
                .unwrap_or_default();
            if out.len() > max_output {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::TooMuch(max_output));
            }
            stdout = Some(out);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(RunError::Wait(e)),
        }
    };
    let stdout = match (stdout, reader) {
        (Some(out), _) => out,
        (None, Some(r)) => {
            // A process it left behind may hold stdout open: wait for the
            // end of its output no longer than the deadline (the reading
            // thread ends when the pipe closes).
            while !r.is_finished() {
                if Instant::now() >= deadline {
                    return Err(RunError::Timeout(timeout));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            r.join().unwrap_or_default()
        }
        (None, None) => Vec::new(),
    };
    if stdout.len() > max_output {
        return Err(RunError::TooMuch(max_output));
    }
    Ok(Ran { status, stdout })
}

/// Which entry of a config file gave a credential.
enum Found {
    /// The key of the `auths` entry.
    Auths(String),
    /// The helper program.
    Helper(String),
}

fn helper_program(name: &str) -> String {
    format!("docker-credential-{name}")
}

/// The credential for `repository` on `registry` in a Docker `config.json`
/// text (a `kubernetes.io/dockerconfigjson` Secret's payload): only its
/// `auths` entries are read (no credential helpers), with the same
/// host/path matching as the config files. `origin` names the text in
/// errors (e.g. `Secret flux-system/regcred`); no secret is ever quoted.
///
/// # Errors
/// Invalid JSON, or an `auth` value that is not base64 `user:password`.
pub fn credential_from_config_json(
    text: &str,
    registry: &str,
    repository: &str,
    origin: &str,
) -> Result<Option<Credential>> {
    let host = crate::settings::normalise_host_key(registry);
    let host = if host == DOCKER_HUB_API {
        DOCKER_HUB.to_owned()
    } else {
        host
    };
    let file: ConfigFile = serde_json::from_str(text).map_err(|e| Error::Credentials {
        registry: host.clone(),
        message: format!("invalid JSON in {origin}: {}", describe_json_error(&e)),
    })?;
    match file.best_auth(&host, repository) {
        Some((_, entry)) => entry.credential(&host, Path::new(origin)),
        None => Ok(None),
    }
}

/// What to do when a registry refuses an anonymous request: where
/// credentials for `registry` (a canonical host) can be put.
pub(crate) fn missing_credentials_hint(registry: &str) -> String {
    let host = crate::settings::normalise_host_key(registry);
    let host = if host == DOCKER_HUB_API {
        DOCKER_HUB.to_owned()
    } else {
        host
    };
    let key = env_host_keys(&host).into_iter().next().unwrap_or_default();
    format!(
        "no credentials were found for {host}; set {ENV_PREFIX}{key}_USERNAME and \
         {ENV_PREFIX}{key}_PASSWORD, or log in with `docker login {host}` (Docker config) \
         or add it to the auth file named by REGISTRY_AUTH_FILE"
    )
}

/// Environment-variable spellings of a host.
fn env_host_keys(host: &str) -> Vec<String> {
    let mangle = |h: &str| {
        h.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    let mut keys = vec![mangle(host)];
    if host == DOCKER_HUB {
        keys.push("DOCKER_IO".to_owned());
    }
    keys
}

/// Normalised host and path of a config key: scheme removed, Docker Hub
/// spellings mapped to `index.docker.io`, a `/v1/`-style API path dropped.
fn key_host_and_path(key: &str) -> (String, String) {
    let k = key.trim();
    let k = k
        .strip_prefix("https://")
        .or_else(|| k.strip_prefix("http://"))
        .unwrap_or(k);
    let (host, path) = k.split_once('/').unwrap_or((k, ""));
    let host = host.to_ascii_lowercase();
    let host = match host.as_str() {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            DOCKER_HUB.to_owned()
        }
        _ => host,
    };
    let path = path.trim_end_matches('/');
    let path = if path == "v1" || path == "v2" || path.is_empty() {
        String::new()
    } else {
        path.to_owned()
    };
    (host, path)
}

#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(rename = "credsStore", default)]
    creds_store: Option<String>,
    #[serde(rename = "credHelpers", default)]
    cred_helpers: BTreeMap<String, String>,
}

impl ConfigFile {
    /// The `auths` key and entry for `host` whose path is the longest
    /// prefix of `repository` (a host-only key matches every repository).
    fn best_auth(&self, host: &str, repository: &str) -> Option<(&str, &AuthEntry)> {
        let mut best: Option<(usize, &str, &AuthEntry)> = None;
        for (key, entry) in &self.auths {
            let (key_host, key_path) = key_host_and_path(key);
            if key_host != host {
                continue;
            }
            let path_ok = key_path.is_empty()
                || repository == key_path
                || repository.starts_with(&format!("{key_path}/"));
            if path_ok && best.is_none_or(|(len, _, _)| key_path.len() > len) {
                best = Some((key_path.len(), key.as_str(), entry));
            }
        }
        best.map(|(_, key, entry)| (key, entry))
    }
}

#[derive(Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthEntry(<redacted>)")
    }
}

impl AuthEntry {
    fn credential(&self, host: &str, path: &Path) -> Result<Option<Credential>> {
        let nonempty =
            |s: &Option<String>| s.as_deref().filter(|v| !v.is_empty()).map(str::to_owned);
        let (mut username, mut password) = (nonempty(&self.username), nonempty(&self.password));
        if let Some(auth) = nonempty(&self.auth) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| Error::Credentials {
                    registry: host.to_owned(),
                    message: format!("invalid base64 `auth` value in {}", path.display()),
                })?;
            let (u, p) = decoded.split_once(':').ok_or_else(|| Error::Credentials {
                registry: host.to_owned(),
                message: format!("`auth` value in {} is not user:password", path.display()),
            })?;
            username = Some(u.to_owned());
            password = Some(p.to_owned());
        }
        if let Some(token) = nonempty(&self.identitytoken) {
            return Ok(Some(Credential::IdentityToken {
                username,
                token: Secret::new(token),
            }));
        }
        if let Some(token) = nonempty(&self.registrytoken) {
            return Ok(Some(Credential::RegistryToken(Secret::new(token))));
        }
        match (username, password) {
            (Some(username), Some(password)) => Ok(Some(Credential::Basic {
                username,
                password: Secret::new(password),
            })),
            _ => Ok(None),
        }
    }
}

fn read_config(path: &Path, host: &str) -> Result<Option<ConfigFile>> {
    let text = match fs_err::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::Credentials {
                registry: host.to_owned(),
                message: format!("cannot read {}: {e}", path.display()),
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error::Credentials {
            registry: host.to_owned(),
            message: format!(
                "invalid JSON in {}: {}",
                path.display(),
                describe_json_error(&e)
            ),
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_errors_never_quote_the_file() {
        let err = credential_from_config_json(
            r#"{"auths":{"r.example":"dXNlcjpodW50ZXIy"}}"#,
            "r.example",
            "app",
            "secret.json",
        )
        .unwrap_err()
        .to_string();
        assert!(!err.contains("dXNl"), "{err}");
        assert!(
            err.contains("secret.json") && err.contains("line 1"),
            "{err}"
        );
    }

    use super::*;

    #[test]
    fn config_json_text_for_one_registry() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let text = format!(
            r#"{{"auths": {{
                "https://index.docker.io/v1/": {{"auth": "{}"}},
                "ghcr.io": {{"username": "u", "password": "p"}},
                "ghcr.io/team": {{"auth": "{}"}},
                "bad.example": {{"auth": "***"}}
            }}}}"#,
            b64("hub:pw"),
            b64("team:pw2")
        );
        let get = |registry: &str, repo: &str| {
            credential_from_config_json(&text, registry, repo, "Secret ns/regcred")
        };
        assert!(matches!(
            get("index.docker.io", "library/nginx").unwrap(),
            Some(Credential::Basic { username, .. }) if username == "hub"
        ));
        assert!(matches!(
            get("ghcr.io", "team/app").unwrap(),
            Some(Credential::Basic { username, .. }) if username == "team"
        ));
        assert!(matches!(
            get("ghcr.io", "other/app").unwrap(),
            Some(Credential::Basic { username, .. }) if username == "u"
        ));
        assert_eq!(get("quay.io", "a/b").unwrap(), None);
        let err = get("bad.example", "a/b").unwrap_err().to_string();
        assert!(err.contains("Secret ns/regcred"), "{err}");
        assert!(!err.contains("***"), "{err}");
        assert!(
            credential_from_config_json("{", "ghcr.io", "a", "Secret ns/x")
                .unwrap_err()
                .to_string()
                .contains("invalid JSON in Secret ns/x")
        );
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        fs_err::write(&p, text).unwrap();
        p
    }

    fn basic(u: &str, p: &str) -> Credential {
        Credential::Basic {
            username: u.to_owned(),
            password: Secret::new(p),
        }
    }

    #[test]
    fn docker_config_auths() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = format!(
            r#"{{"auths": {{
                "https://index.docker.io/v1/": {{"auth": "{}"}},
                "ghcr.io": {{"username": "gh", "password": "pat"}},
                "quay.io": {{"identitytoken": "refresh"}},
                "reg.example:5000": {{"registrytoken": "tok"}},
                "empty.io": {{}}
            }}}}"#,
            b64("hubuser:hubpass")
        );
        let path = write(dir.path(), "config.json", &cfg);
        let store = CredentialStore::anonymous().with_docker_config(&path);
        assert_eq!(
            store.lookup("index.docker.io", "library/nginx").unwrap(),
            basic("hubuser", "hubpass")
        );
        assert_eq!(
            store.lookup("registry-1.docker.io", "x/y").unwrap(),
            basic("hubuser", "hubpass")
        );
        assert_eq!(
            store.lookup("docker.io", "x/y").unwrap(),
            basic("hubuser", "hubpass")
        );
        assert_eq!(store.lookup("ghcr.io", "a/b").unwrap(), basic("gh", "pat"));
        assert_eq!(
            store.lookup("quay.io", "a/b").unwrap(),
            Credential::IdentityToken {
                username: None,
                token: Secret::new("refresh")
            }
        );
        assert_eq!(
            store.lookup("reg.example:5000", "a").unwrap(),
            Credential::RegistryToken(Secret::new("tok"))
        );
        assert_eq!(
            store.lookup("empty.io", "a/b").unwrap(),
            Credential::Anonymous
        );
        assert_eq!(
            store.lookup("other.io", "a/b").unwrap(),
            Credential::Anonymous
        );
    }

    #[test]
    fn hub_key_spellings() {
        for key in [
            "docker.io",
            "index.docker.io",
            "registry-1.docker.io",
            "https://registry-1.docker.io/v2/",
            "https://index.docker.io/v1/",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = write(
                dir.path(),
                "c.json",
                &format!(r#"{{"auths":{{"{key}":{{"auth":"{}"}}}}}}"#, b64("u:p")),
            );
            let store = CredentialStore::anonymous().with_docker_config(&path);
            assert_eq!(
                store.lookup("index.docker.io", "library/x").unwrap(),
                basic("u", "p"),
                "{key}"
            );
        }
    }

    #[test]
    fn podman_auth_file_longest_path_and_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let auth = write(
            dir.path(),
            "auth.json",
            &format!(
                r#"{{"auths": {{"reg.io": {{"auth": "{}"}}, "reg.io/team": {{"auth": "{}"}}, "reg.io/team/app": {{"auth": "{}"}}}}}}"#,
                b64("host:1"),
                b64("team:2"),
                b64("app:3")
            ),
        );
        let docker = write(
            dir.path(),
            "config.json",
            &format!(
                r#"{{"auths": {{"reg.io": {{"auth": "{}"}}, "only.docker": {{"auth": "{}"}}}}}}"#,
                b64("docker:0"),
                b64("d:1")
            ),
        );
        let store = CredentialStore::anonymous()
            .with_docker_config(&docker)
            .with_auth_file(&auth);
        assert_eq!(
            store.lookup("reg.io", "team/app").unwrap(),
            basic("app", "3")
        );
        assert_eq!(
            store.lookup("reg.io", "team/app2").unwrap(),
            basic("team", "2")
        );
        assert_eq!(
            store.lookup("reg.io", "other/x").unwrap(),
            basic("host", "1")
        );
        assert_eq!(store.lookup("only.docker", "x/y").unwrap(), basic("d", "1"));
    }

    #[test]
    fn env_vars() {
        let store = CredentialStore::from_vars([
            ("IMAGE_UPDATE_REGISTRY_GHCR_IO_USERNAME", "gh"),
            ("IMAGE_UPDATE_REGISTRY_GHCR_IO_PASSWORD", "pat"),
            ("IMAGE_UPDATE_REGISTRY_LOCALHOST_5000_USERNAME", "lu"),
            ("IMAGE_UPDATE_REGISTRY_LOCALHOST_5000_PASSWORD", "lp"),
            ("IMAGE_UPDATE_REGISTRY_DOCKER_IO_USERNAME", "hu"),
            ("IMAGE_UPDATE_REGISTRY_DOCKER_IO_PASSWORD", "hp"),
            ("IMAGE_UPDATE_REGISTRY_USERNAME", "any"),
            ("IMAGE_UPDATE_REGISTRY_PASSWORD", "anyp"),
            (
                "IMAGE_UPDATE_REGISTRY_HOST",
                "quay.io, reg.example.com:8443",
            ),
            ("HOME", "/nonexistent-home"),
        ]);
        assert_eq!(store.lookup("ghcr.io", "a/b").unwrap(), basic("gh", "pat"));
        assert_eq!(
            store.lookup("localhost:5000", "a").unwrap(),
            basic("lu", "lp")
        );
        assert_eq!(
            store.lookup("index.docker.io", "library/a").unwrap(),
            basic("hu", "hp")
        );
        assert_eq!(
            store.lookup("quay.io", "a/b").unwrap(),
            basic("any", "anyp")
        );
        assert_eq!(
            store.lookup("reg.example.com:8443", "a/b").unwrap(),
            basic("any", "anyp")
        );
        assert_eq!(
            store.lookup("gcr.io", "a/b").unwrap(),
            Credential::Anonymous
        );
        // Unscoped pair without HOST is not used anywhere.
        let store = CredentialStore::from_vars([
            ("IMAGE_UPDATE_REGISTRY_USERNAME", "any"),
            ("IMAGE_UPDATE_REGISTRY_PASSWORD", "anyp"),
        ]);
        assert_eq!(
            store.lookup("quay.io", "a/b").unwrap(),
            Credential::Anonymous
        );
    }

    #[test]
    fn docker_config_env_location() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "config.json",
            &format!(r#"{{"auths":{{"x.io":{{"auth":"{}"}}}}}}"#, b64("u:p")),
        );
        let store = CredentialStore::from_vars([("DOCKER_CONFIG", dir.path().to_str().unwrap())]);
        assert_eq!(store.lookup("x.io", "a/b").unwrap(), basic("u", "p"));
        let home = tempfile::tempdir().unwrap();
        fs_err::create_dir(home.path().join(".docker")).unwrap();
        write(
            &home.path().join(".docker"),
            "config.json",
            &format!(r#"{{"auths":{{"y.io":{{"auth":"{}"}}}}}}"#, b64("h:p")),
        );
        let store = CredentialStore::from_vars([("HOME", home.path().to_str().unwrap())]);
        assert_eq!(store.lookup("y.io", "a/b").unwrap(), basic("h", "p"));
    }

    #[test]
    fn malformed_config_is_an_error_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "config.json",
            r#"{"auths": {"x.io": {"auth": "c2VjcmV0cGFzcw"#,
        );
        let store = CredentialStore::anonymous().with_docker_config(&path);
        let err = store.lookup("x.io", "a").unwrap_err().to_string();
        assert!(err.contains("invalid JSON"), "{err}");
        assert!(!err.contains("c2VjcmV0cGFzcw"));
        let path = write(
            dir.path(),
            "bad64.json",
            r#"{"auths": {"x.io": {"auth": "!!!"}}}"#,
        );
        let store = CredentialStore::anonymous().with_docker_config(&path);
        assert!(store.lookup("x.io", "a").is_err());
    }

    #[test]
    fn sources_are_named_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let docker = write(
            dir.path(),
            "config.json",
            &format!(
                r#"{{"auths": {{"https://index.docker.io/v1/": {{"auth": "{}"}}, "tok.io": {{"identitytoken": "refresh-secret"}}}}}}"#,
                b64("hub:hub-secret")
            ),
        );
        let auth = write(
            dir.path(),
            "auth.json",
            &format!(
                r#"{{"auths": {{"reg.io/team": {{"auth": "{}"}}}}}}"#,
                b64("team:team-secret")
            ),
        );
        let store = CredentialStore::from_vars([
            ("IMAGE_UPDATE_REGISTRY_GHCR_IO_USERNAME", "gh"),
            ("IMAGE_UPDATE_REGISTRY_GHCR_IO_PASSWORD", "gh-secret"),
            ("IMAGE_UPDATE_REGISTRY_USERNAME", "any"),
            ("IMAGE_UPDATE_REGISTRY_PASSWORD", "any-secret"),
            ("IMAGE_UPDATE_REGISTRY_HOST", "quay.io"),
            ("REGISTRY_AUTH_FILE", auth.to_str().unwrap()),
            ("DOCKER_CONFIG", dir.path().to_str().unwrap()),
        ])
        .with_credential_from(
            "given.io",
            basic("s", "given-secret"),
            "Secret flux-system/regcred",
        )
        .with_credential("plain.io", basic("p", "plain-secret"));
        let source = |registry: &str, repo: &str| {
            let (c, s) = store.lookup_with_source(registry, repo).unwrap();
            (c.kind(), s.to_string())
        };
        assert_eq!(
            source("ghcr.io", "a/b"),
            (
                "username/password",
                "environment variables IMAGE_UPDATE_REGISTRY_GHCR_IO_USERNAME and IMAGE_UPDATE_REGISTRY_GHCR_IO_PASSWORD".to_owned()
            )
        );
        assert_eq!(
            source("quay.io", "a/b").1,
            "environment variables IMAGE_UPDATE_REGISTRY_USERNAME and IMAGE_UPDATE_REGISTRY_PASSWORD"
        );
        assert_eq!(
            source("reg.io", "team/app").1,
            format!(
                "auth file {} (REGISTRY_AUTH_FILE), auths key \"reg.io/team\"",
                auth.display()
            )
        );
        assert_eq!(
            source("index.docker.io", "library/nginx").1,
            format!(
                "Docker config {}, auths key \"https://index.docker.io/v1/\"",
                docker.display()
            )
        );
        assert_eq!(source("tok.io", "x").0, "identity token");
        assert_eq!(source("given.io", "x").1, "Secret flux-system/regcred");
        assert_eq!(source("plain.io", "x").1, "credentials given for plain.io");
        assert_eq!(
            source("other.io", "x"),
            (
                "no credentials",
                "anonymous (no credentials found)".to_owned()
            )
        );
        for secret in ["secret", "c2Vj"] {
            for (registry, repo) in [
                ("ghcr.io", "a"),
                ("quay.io", "a"),
                ("reg.io", "team/a"),
                ("index.docker.io", "a"),
                ("tok.io", "a"),
                ("given.io", "a"),
            ] {
                let text = source(registry, repo).1;
                assert!(!text.contains(secret), "{text}");
            }
        }
    }

    #[test]
    fn missing_credentials_hint_names_the_variables() {
        let hint = missing_credentials_hint("localhost:5000");
        assert!(
            hint.contains("no credentials were found for localhost:5000")
                && hint.contains("IMAGE_UPDATE_REGISTRY_LOCALHOST_5000_USERNAME")
                && hint.contains("IMAGE_UPDATE_REGISTRY_LOCALHOST_5000_PASSWORD"),
            "{hint}"
        );
        assert!(
            missing_credentials_hint("registry-1.docker.io")
                .contains("IMAGE_UPDATE_REGISTRY_INDEX_DOCKER_IO_USERNAME")
        );
    }

    #[cfg(unix)]
    #[test]
    fn programs_are_bounded_in_time_and_output() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let program = |name: &str, body: &str| {
            let p = dir.path().join(name);
            fs_err::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let ok = program("ok", "echo user:pass");
        let ran = run_bounded(&ok, &[], None, Duration::from_secs(10), 64).unwrap();
        assert!(ran.status.success());
        assert_eq!(ran.stdout, b"user:pass\n");
        // stdin is closed: a program reading it gets end of file at once.
        let reads = program("reads", "cat; echo done");
        let ran = run_bounded(&reads, &[], None, Duration::from_secs(10), 64).unwrap();
        assert_eq!(ran.stdout, b"done\n");
        let started = Instant::now();
        let hangs = program("hangs", "exec sleep 3600");
        let e = run_bounded(&hangs, &[], None, Duration::from_millis(300), 64).unwrap_err();
        assert!(matches!(e, RunError::Timeout(_)), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let floods = program("floods", "exec yes secret-output");
        let e = run_bounded(&floods, &[], None, Duration::from_secs(10), 1024).unwrap_err();
        assert!(matches!(e, RunError::TooMuch(1024)), "{e}");
        assert!(!e.to_string().contains("secret-output"));
        // A process left behind that holds stdout open: the deadline still ends it.
        let leaves = program("leaves", "sleep 3600 &\necho user:pass");
        let e = run_bounded(&leaves, &[], None, Duration::from_millis(300), 64).unwrap_err();
        assert!(matches!(e, RunError::Timeout(_)), "{e}");
        let e = run_bounded(
            &dir.path().join("absent"),
            &[],
            None,
            Duration::from_secs(1),
            64,
        )
        .unwrap_err();
        assert!(matches!(e, RunError::Start(_)), "{e}");
    }

    #[test]
    fn allowed_programs_parse() {
        let a: AllowedProgram = "/usr/local/bin/creds".parse().unwrap();
        assert_eq!(
            (a.registry, a.path),
            (None, PathBuf::from("/usr/local/bin/creds"))
        );
        let a: AllowedProgram = "GHCR.io=/opt/creds".parse().unwrap();
        assert_eq!(a.registry.as_deref(), Some("ghcr.io"));
        for bad in ["creds", "ghcr.io=creds", "=/x", ""] {
            assert!(bad.parse::<AllowedProgram>().is_err(), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn credential_helpers() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let helper = |name: &str, body: &str| {
            let p = dir.path().join(format!("docker-credential-{name}"));
            fs_err::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        // Echo the server URL back as the username so the test sees what was sent.
        helper(
            "echo",
            r#"read url; printf '{"ServerURL":"%s","Username":"%s","Secret":"s3cret"}' "$url" "$url""#,
        );
        helper(
            "token",
            r#"cat >/dev/null; echo '{"Username":"<token>","Secret":"refresh"}'"#,
        );
        helper(
            "none",
            r#"cat >/dev/null; echo 'credentials not found in native keychain'; exit 1"#,
        );
        // Never answers: only the timeout ends it, however loaded the machine.
        helper("slow", "exec sleep 3600");
        let cfg = write(
            dir.path(),
            "config.json",
            &format!(
                r#"{{"credHelpers": {{"helper.io": "echo", "docker.io": "echo", "tok.io": "token", "none.io": "none", "slow.io": "slow", "missing.io": "missing"}},
                    "credsStore": "none",
                    "auths": {{"none.io": {{"auth": "{}"}}}}}}"#,
                b64("file:cred")
            ),
        );
        // The helpers that answer get the default timeout (10 s): a shell
        // starting slowly on a loaded machine must not fail them.
        let store = CredentialStore::anonymous()
            .with_docker_config(&cfg)
            .with_helper_dirs(vec![dir.path().to_owned()]);
        assert_eq!(
            store.lookup("helper.io", "a/b").unwrap(),
            basic("helper.io", "s3cret")
        );
        assert_eq!(
            store.lookup_with_source("helper.io", "a/b").unwrap().1,
            CredentialSource::Helper {
                program: "docker-credential-echo".to_owned(),
                config: cfg.clone(),
            }
        );
        assert_eq!(
            store
                .lookup_with_source("helper.io", "a/b")
                .unwrap()
                .1
                .to_string(),
            format!(
                "credential helper docker-credential-echo (named in {})",
                cfg.display()
            )
        );
        assert_eq!(
            store.lookup("index.docker.io", "library/a").unwrap(),
            basic(HUB_HELPER_URL, "s3cret")
        );
        assert_eq!(
            store.lookup("tok.io", "a").unwrap(),
            Credential::IdentityToken {
                username: None,
                token: Secret::new("refresh")
            }
        );
        // helper and store say "not found": fall back to auths
        assert_eq!(store.lookup("none.io", "a").unwrap(), basic("file", "cred"));
        assert_eq!(
            store.lookup("missing.io", "a").unwrap(),
            Credential::Anonymous
        );
        // The one that never answers is stopped by a short timeout.
        let impatient = CredentialStore::anonymous()
            .with_docker_config(&cfg)
            .with_helper_dirs(vec![dir.path().to_owned()])
            .with_helper_timeout(Duration::from_millis(300));
        let err = impatient.lookup("slow.io", "a").unwrap_err().to_string();
        assert!(err.contains("did not answer"), "{err}");
    }
}
