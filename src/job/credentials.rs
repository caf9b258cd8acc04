//! Where the Job's credentials come from, in Flux's precedence: a flag or an
//! environment variable first, else the Secret a Flux object names.
//!
//! * git over HTTP(S): `IMAGE_UPDATE_GIT_BEARER_TOKEN`, else
//!   `IMAGE_UPDATE_GIT_TOKEN` (Basic, user `x-access-token` unless
//!   `IMAGE_UPDATE_GIT_USERNAME` is set), else `IMAGE_UPDATE_GIT_PASSWORD`
//!   (with that user), else the git Secret's `bearerToken`, else its
//!   `username`/`password`;
//! * git over SSH: `--ssh-key` or `IMAGE_UPDATE_GIT_SSH_KEY` (passphrase
//!   `IMAGE_UPDATE_GIT_SSH_KEY_PASSPHRASE`), else the Secret's `identity`
//!   (passphrase `password`);
//! * host keys: `--known-hosts`, `IMAGE_UPDATE_GIT_KNOWN_HOSTS`, the
//!   Secret's `known_hosts`; CAs: `--ca-file`, `IMAGE_UPDATE_GIT_CA_CERT`,
//!   the Secret's `ca.crt`, its older `caFile`;
//! * the signing key: `--signing-key` or `IMAGE_UPDATE_SIGNING_KEY`
//!   (passphrase `IMAGE_UPDATE_SIGNING_PASSPHRASE`), else the signing
//!   Secret's `git.asc` and `passphrase` (OpenPGP) or `identity` and
//!   `password` (SSH);
//! * the forge's API (`--pull-request`, [`forge_credentials`]):
//!   `IMAGE_UPDATE_FORGE_TOKEN`, else a GitHub App from the environment
//!   (`IMAGE_UPDATE_GITHUB_APP_ID`, `IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY`,
//!   `IMAGE_UPDATE_GITHUB_APP_INSTALLATION_ID`), else the git Secret's App
//!   (`githubAppID`, `githubAppPrivateKey`, `githubAppInstallationID`, as
//!   Flux reads them for a GitRepository with `provider: github`), else the
//!   git token: `IMAGE_UPDATE_GIT_BEARER_TOKEN`, `IMAGE_UPDATE_GIT_TOKEN`,
//!   `IMAGE_UPDATE_GIT_PASSWORD`, the Secret's `bearerToken`, `password`.
//!
//! The environment is read through an [`Environment`], so the precedence is
//! tested without touching the process's. Files are read with a size cap.

use std::path::Path;

use image_update_forge::Credentials;
use image_update_git::{
    Auth, HostKeyCheck, KnownHosts, Remote, RemoteSettings, Secret, Signer, Transport,
};

use super::secrets::SecretObject;
use crate::automation::SigningKind;
use crate::diagnostic::{Diagnostic, one_line};
use crate::error::Error;
use crate::input::SizeLimit;

/// Where environment variables are read from.
pub(crate) trait Environment {
    /// The variable's value; `None` when unset or empty.
    fn var(&self, name: &str) -> Option<Secret>;
}

/// The process's environment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<Secret> {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .map(Secret::new)
    }
}

/// The flags that name credential files, and the remote's own settings.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CredentialFlags<'a> {
    pub ssh_key: Option<&'a Path>,
    pub known_hosts: Option<&'a Path>,
    pub ca_file: Option<&'a Path>,
    /// Accept any SSH host key.
    pub insecure_skip_host_key_check: bool,
    /// Allow `file://` URLs and local paths.
    pub allow_local: bool,
    /// The most bytes read from one credential file.
    pub max_file_size: SizeLimit,
}

/// Keys of Flux's git Secret the Job cannot use (a TLS client certificate).
pub(crate) const UNSUPPORTED_GIT_KEYS: [&str; 2] = ["tls.crt", "tls.key"];

/// Fails when `secret` (a GitRepository's) has keys the Job cannot use.
///
/// # Errors
/// Naming the Secret, its place and the key.
pub(crate) fn check_git_secret(secret: &SecretObject, name: &str) -> Result<(), Error> {
    let unsupported: Vec<Diagnostic> = UNSUPPORTED_GIT_KEYS
        .iter()
        .filter(|key| secret.has(key))
        .map(|key| {
            Diagnostic::error(format!(
                "Secret {name}: key {key} is not supported by `image-update job`"
            ))
            .at(secret.location.clone())
        })
        .collect();
    if unsupported.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(unsupported))
    }
}

/// A secret from `file` (at most `limit` bytes), else from the environment
/// variable `name`.
fn file_or_env(
    file: Option<&Path>,
    name: &str,
    env: &dyn Environment,
    limit: SizeLimit,
) -> Result<Option<Secret>, Error> {
    match file {
        Some(file) => Ok(Some(Secret::new(crate::input::read_text(file, limit)?))),
        None => Ok(env.var(name)),
    }
}

/// Credentials, host key policy and CAs for `url`'s transport: the flags
/// and the environment, else the GitRepository's Secret. `origin` says
/// where the URL came from (`--url`, a GitRepository's `spec.url` at its
/// line, an Argo CD Application), for the message of a URL refused.
///
/// # Errors
/// A URL the remote refuses, an unreadable or oversized file, known hosts
/// or CA certificates that do not parse (usage errors: retrying will not
/// help).
pub(crate) fn remote_settings(
    url: &str,
    origin: &str,
    flags: &CredentialFlags<'_>,
    env: &dyn Environment,
    secret: Option<&SecretObject>,
) -> Result<RemoteSettings, Error> {
    let from_secret = |key: &str| secret.and_then(|s| s.get(key)).cloned();
    let limit = flags.max_file_size;
    let probe = Remote::new(
        url,
        RemoteSettings {
            allow_local: flags.allow_local,
            ..RemoteSettings::default()
        },
    )
    .map_err(|e| Error::Usage(format!("{origin}: {}", refused(&e))))?;
    let auth = if probe.transport() == Transport::Ssh {
        match file_or_env(flags.ssh_key, "IMAGE_UPDATE_GIT_SSH_KEY", env, limit)? {
            Some(private_key) => Auth::SshKey {
                username: None,
                private_key,
                passphrase: env.var("IMAGE_UPDATE_GIT_SSH_KEY_PASSPHRASE"),
            },
            None => match from_secret("identity") {
                Some(private_key) => Auth::SshKey {
                    username: None,
                    private_key,
                    passphrase: from_secret("password"),
                },
                None => Auth::None,
            },
        }
    } else if let Some(token) = env.var("IMAGE_UPDATE_GIT_BEARER_TOKEN") {
        Auth::Bearer { token }
    } else {
        let username = env
            .var("IMAGE_UPDATE_GIT_USERNAME")
            .map(|u| u.expose().to_owned());
        match (
            env.var("IMAGE_UPDATE_GIT_TOKEN"),
            env.var("IMAGE_UPDATE_GIT_PASSWORD"),
        ) {
            (Some(token), _) => Auth::Basic {
                username: username.unwrap_or_else(|| "x-access-token".to_owned()),
                password: token,
            },
            (None, Some(password)) => Auth::Basic {
                username: username.unwrap_or_default(),
                password,
            },
            (None, None) => match (from_secret("bearerToken"), from_secret("password")) {
                (Some(token), _) => Auth::Bearer { token },
                (None, Some(password)) => Auth::Basic {
                    username: from_secret("username")
                        .map(|u| u.expose().to_owned())
                        .unwrap_or_default(),
                    password,
                },
                (None, None) => Auth::None,
            },
        }
    };
    let host_key_check = if flags.insecure_skip_host_key_check {
        HostKeyCheck::AcceptAny
    } else {
        let text = file_or_env(
            flags.known_hosts,
            "IMAGE_UPDATE_GIT_KNOWN_HOSTS",
            env,
            limit,
        )?
        .or_else(|| from_secret("known_hosts"));
        let known = match text {
            Some(text) => KnownHosts::parse(text.expose())
                .map_err(|e| Error::Usage(format!("known hosts: {}", one_line(&e))))?,
            None => KnownHosts::default(),
        };
        HostKeyCheck::KnownHosts(known)
    };
    // Flux's key is `ca.crt`; `caFile` is its older name.
    let ca_certificates = file_or_env(flags.ca_file, "IMAGE_UPDATE_GIT_CA_CERT", env, limit)?
        .or_else(|| from_secret("ca.crt"))
        .or_else(|| from_secret("caFile"))
        .map(|pem| pem.expose().to_owned());
    let settings = RemoteSettings {
        auth,
        http_headers: Vec::new(),
        host_key_check,
        allow_local: flags.allow_local,
        allow_plain_http: false,
        ca_certificates,
    };
    // Bad certificates are a configuration error now, not a failed clone later.
    Remote::new(url, settings.clone()).map_err(|e| {
        Error::Usage(format!(
            "CA certificates (--ca-file, IMAGE_UPDATE_GIT_CA_CERT or the Secret's ca.crt): {}",
            one_line(&e)
        ))
    })?;
    Ok(settings)
}

/// The variables that give git credentials without a Secret: a token, a password, an SSH key,
/// a GitHub App.
pub(crate) const GIT_CREDENTIAL_VARIABLES: [&str; 5] = [
    "IMAGE_UPDATE_GIT_BEARER_TOKEN",
    "IMAGE_UPDATE_GIT_TOKEN",
    "IMAGE_UPDATE_GIT_PASSWORD",
    "IMAGE_UPDATE_GIT_SSH_KEY",
    "IMAGE_UPDATE_GITHUB_APP_ID",
];

/// Whether git credentials come from `--ssh-key` (`ssh_key_flag`) or the environment, which take
/// precedence over the GitRepository's Secret: then the Secret's manifest is not needed.
#[must_use]
pub(crate) fn git_credentials_given(ssh_key_flag: bool, env: &dyn Environment) -> bool {
    ssh_key_flag
        || GIT_CREDENTIAL_VARIABLES
            .iter()
            .any(|v| env.var(v).is_some())
}

/// Why the Job refuses a URL, in its own words: the git crate names its
/// settings (`allow_local`), the Job its flags (`--allow-local`; plain HTTP
/// to another machine has no flag).
fn refused(e: &image_update_git::Error) -> String {
    match e {
        image_update_git::Error::LocalRefused { url } => format!(
            "refusing the local repository `{url}`: file:// URLs and local paths need --allow-local"
        ),
        image_update_git::Error::PlainHttpRefused { url } => format!(
            "refusing plain http to `{url}`: credentials and pushes would travel in clear text (use https)"
        ),
        other => one_line(other),
    }
}

/// Where the forge's credentials came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ForgeCredentialSource {
    /// `IMAGE_UPDATE_FORGE_TOKEN`.
    ForgeToken,
    /// `IMAGE_UPDATE_GITHUB_APP_*`.
    AppFromEnvironment,
    /// The git Secret's `githubApp*` keys.
    AppFromSecret,
    /// The git credential (a token, or a password that is one).
    GitToken,
}

/// The git Secret's keys of a GitHub App (Flux's, for `provider: github`).
pub(crate) const GITHUB_APP_KEYS: [&str; 3] = [
    "githubAppID",
    "githubAppPrivateKey",
    "githubAppInstallationID",
];

/// The forge's credentials, in the precedence of the module's
/// documentation; `None` when none is given. `app_in_secret`: the
/// GitRepository says `provider: github`, so the Secret's `githubApp*` keys
/// are read.
///
/// # Errors
/// Half a GitHub App (an ID without a key, or the reverse), an
/// installation ID that is not a number: naming the variable or key.
pub(crate) fn forge_credentials(
    env: &dyn Environment,
    secret: Option<&SecretObject>,
    app_in_secret: bool,
) -> Result<Option<(Credentials, ForgeCredentialSource)>, Error> {
    if let Some(token) = env.var("IMAGE_UPDATE_FORGE_TOKEN") {
        return Ok(Some((
            Credentials::Token(token),
            ForgeCredentialSource::ForgeToken,
        )));
    }
    let from_env = github_app(
        env.var("IMAGE_UPDATE_GITHUB_APP_ID"),
        env.var("IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY"),
        env.var("IMAGE_UPDATE_GITHUB_APP_INSTALLATION_ID"),
        [
            "IMAGE_UPDATE_GITHUB_APP_ID",
            "IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY",
            "IMAGE_UPDATE_GITHUB_APP_INSTALLATION_ID",
        ],
    )
    .map_err(Error::Usage)?;
    if let Some(app) = from_env {
        return Ok(Some((app, ForgeCredentialSource::AppFromEnvironment)));
    }
    let key = |name: &str| secret.and_then(|s| s.get(name)).cloned();
    if app_in_secret && let Some(secret) = secret {
        let [id, private_key, installation] = GITHUB_APP_KEYS;
        let app = github_app(
            key(id),
            key(private_key),
            key(installation),
            GITHUB_APP_KEYS,
        )
        .map_err(|message| {
            Error::invalid(vec![
                Diagnostic::error(format!("the git Secret: {message}")).at(secret.location.clone()),
            ])
        })?;
        if let Some(app) = app {
            return Ok(Some((app, ForgeCredentialSource::AppFromSecret)));
        }
    }
    let token = env
        .var("IMAGE_UPDATE_GIT_BEARER_TOKEN")
        .or_else(|| env.var("IMAGE_UPDATE_GIT_TOKEN"))
        .or_else(|| env.var("IMAGE_UPDATE_GIT_PASSWORD"))
        .or_else(|| key("bearerToken"))
        .or_else(|| key("password"));
    Ok(token.map(|token| (Credentials::Token(token), ForgeCredentialSource::GitToken)))
}

/// A GitHub App from its ID, key and optional installation ID; `None` when
/// neither ID nor key is given. `names` name the three, for messages.
fn github_app(
    id: Option<Secret>,
    private_key: Option<Secret>,
    installation: Option<Secret>,
    names: [&str; 3],
) -> Result<Option<Credentials>, String> {
    let [id_name, key_name, installation_name] = names;
    let (id, private_key) = match (id, private_key) {
        (None, None) => {
            return match installation {
                Some(_) => Err(format!(
                    "{installation_name} is given without {id_name} and {key_name}"
                )),
                None => Ok(None),
            };
        }
        (Some(_), None) => return Err(format!("{id_name} is given without {key_name}")),
        (None, Some(_)) => return Err(format!("{key_name} is given without {id_name}")),
        (Some(id), Some(key)) => (id, key),
    };
    let installation_id = installation
        .map(|text| {
            text.expose().trim().parse::<u64>().map_err(|_| {
                format!("{installation_name} is not a number (the installation's numeric ID)")
            })
        })
        .transpose()?;
    Ok(Some(Credentials::GitHubApp {
        app_id: id.expose().trim().to_owned(),
        private_key,
        installation_id,
    }))
}

/// The commit signer, unlocked (a wrong passphrase is a configuration
/// error now, not a failed commit later): `file` or the environment, else
/// the automation's signing key Secret.
///
/// # Errors
/// An unreadable or oversized key file, a Secret without the key, a key
/// that cannot be unlocked.
pub(crate) fn signer(
    file: Option<&Path>,
    kind: SigningKind,
    env: &dyn Environment,
    secret: Option<&SecretObject>,
    limit: SizeLimit,
) -> Result<Option<Signer>, Error> {
    let (key_name, passphrase_name) = match kind {
        SigningKind::Gpg => ("git.asc", "passphrase"),
        SigningKind::Ssh => ("identity", "password"),
    };
    let key = match file_or_env(file, "IMAGE_UPDATE_SIGNING_KEY", env, limit)? {
        Some(key) => Some(key),
        None => match secret {
            Some(secret) => Some(secret.get(key_name).cloned().ok_or_else(|| {
                Error::invalid(vec![
                    Diagnostic::error(format!("the signing key Secret has no {key_name}"))
                        .at(secret.location.clone()),
                ])
            })?),
            None => None,
        },
    };
    let Some(key) = key else {
        return Ok(None);
    };
    let passphrase = env
        .var("IMAGE_UPDATE_SIGNING_PASSPHRASE")
        .or_else(|| secret.and_then(|s| s.get(passphrase_name)).cloned());
    let signer = match kind {
        SigningKind::Gpg => Signer::openpgp(&key, passphrase.as_ref()),
        SigningKind::Ssh => Signer::ssh(&key, passphrase.as_ref()),
    }
    .map_err(|e| Error::Usage(format!("signing key: {}", one_line(&e))))?;
    Ok(Some(signer))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::job::secrets::Secrets;

    #[derive(Default)]
    struct Vars(BTreeMap<&'static str, &'static str>);

    impl Environment for Vars {
        fn var(&self, name: &str) -> Option<Secret> {
            self.0
                .get(name)
                .filter(|v| !v.is_empty())
                .map(|v| Secret::new(*v))
        }
    }

    fn vars(pairs: &[(&'static str, &'static str)]) -> Vars {
        Vars(pairs.iter().copied().collect())
    }

    /// The Secret `flux-system/git` with `data` (plain text, encoded here).
    fn secret(dir: &Path, data: &[(&str, &str)]) -> Secrets {
        use base64::Engine as _;
        let mut yaml = String::from(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: git, namespace: flux-system}\ndata:\n",
        );
        for (k, v) in data {
            let encoded = base64::engine::general_purpose::STANDARD.encode(v);
            yaml.push_str(&format!("  {k}: {encoded}\n"));
        }
        let file = dir.join("secret.yaml");
        fs_err::write(&file, yaml).unwrap();
        Secrets::read(&[file], SizeLimit::default()).unwrap()
    }

    fn auth(env: &Vars, secret: Option<&SecretObject>) -> Auth {
        remote_settings(
            "https://git.example/fleet.git",
            "--url",
            &CredentialFlags::default(),
            env,
            secret,
        )
        .unwrap()
        .auth
    }

    fn basic(auth: &Auth) -> (String, String) {
        match auth {
            Auth::Basic { username, password } => (username.clone(), password.expose().to_owned()),
            other => panic!("expected Basic auth, got {other:?}"),
        }
    }

    #[test]
    fn https_precedence_environment_over_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(
            dir.path(),
            &[("username", "flux"), ("password", "from-secret")],
        );
        let git = secrets.get("flux-system", "git", "test", "").unwrap();
        // The Secret alone.
        assert_eq!(
            basic(&auth(&Vars::default(), Some(git))),
            ("flux".into(), "from-secret".into())
        );
        // A token wins over the Secret, with Flux's token user.
        assert_eq!(
            basic(&auth(
                &vars(&[("IMAGE_UPDATE_GIT_TOKEN", "tok")]),
                Some(git)
            )),
            ("x-access-token".into(), "tok".into())
        );
        // A token wins over a password; a username applies to both.
        assert_eq!(
            basic(&auth(
                &vars(&[
                    ("IMAGE_UPDATE_GIT_TOKEN", "tok"),
                    ("IMAGE_UPDATE_GIT_PASSWORD", "pw"),
                    ("IMAGE_UPDATE_GIT_USERNAME", "bot"),
                ]),
                Some(git)
            )),
            ("bot".into(), "tok".into())
        );
        assert_eq!(
            basic(&auth(&vars(&[("IMAGE_UPDATE_GIT_PASSWORD", "pw")]), None)),
            (String::new(), "pw".into())
        );
        // A bearer token wins over everything; empty variables are unset.
        assert!(matches!(
            auth(
                &vars(&[
                    ("IMAGE_UPDATE_GIT_BEARER_TOKEN", "b"),
                    ("IMAGE_UPDATE_GIT_TOKEN", "tok"),
                ]),
                Some(git)
            ),
            Auth::Bearer { token } if token.expose() == "b"
        ));
        assert_eq!(
            basic(&auth(&vars(&[("IMAGE_UPDATE_GIT_TOKEN", "")]), Some(git))),
            ("flux".into(), "from-secret".into())
        );
        assert!(matches!(auth(&Vars::default(), None), Auth::None));
    }

    #[test]
    fn credentials_from_the_environment_or_ssh_key_make_the_secret_optional() {
        assert!(!git_credentials_given(false, &Vars::default()));
        assert!(!git_credentials_given(
            false,
            &vars(&[("IMAGE_UPDATE_GIT_USERNAME", "flux")])
        ));
        assert!(git_credentials_given(true, &Vars::default()));
        for variable in GIT_CREDENTIAL_VARIABLES {
            assert!(
                git_credentials_given(false, &vars(&[(variable, "x")])),
                "{variable}"
            );
        }
    }

    #[test]
    fn a_secret_bearer_token_wins_over_its_password() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(dir.path(), &[("bearerToken", "bt"), ("password", "pw")]);
        let git = secrets.get("flux-system", "git", "test", "").unwrap();
        assert!(matches!(
            auth(&Vars::default(), Some(git)),
            Auth::Bearer { token } if token.expose() == "bt"
        ));
    }

    #[test]
    fn ssh_keys_and_known_hosts_from_the_secret_unless_given() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(
            dir.path(),
            &[
                ("identity", "KEY FROM SECRET"),
                ("password", "secret-passphrase"),
                (
                    "known_hosts",
                    "git.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
                ),
            ],
        );
        let git = secrets.get("flux-system", "git", "test", "").unwrap();
        let url = "ssh://git@git.example/fleet.git";
        let from_secret = remote_settings(
            url,
            "--url",
            &CredentialFlags::default(),
            &Vars::default(),
            Some(git),
        )
        .unwrap();
        match &from_secret.auth {
            Auth::SshKey {
                private_key,
                passphrase,
                ..
            } => {
                assert_eq!(private_key.expose(), "KEY FROM SECRET");
                assert_eq!(
                    passphrase.as_ref().map(Secret::expose),
                    Some("secret-passphrase")
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            &from_secret.host_key_check,
            HostKeyCheck::KnownHosts(k) if !k.is_empty()
        ));
        let key_file = dir.path().join("id");
        fs_err::write(&key_file, "KEY FROM FILE").unwrap();
        let flags = CredentialFlags {
            ssh_key: Some(&key_file),
            insecure_skip_host_key_check: true,
            ..CredentialFlags::default()
        };
        let given = remote_settings(
            url,
            "--url",
            &flags,
            &vars(&[("IMAGE_UPDATE_GIT_SSH_KEY", "KEY FROM ENV")]),
            Some(git),
        )
        .unwrap();
        assert!(matches!(
            &given.auth,
            Auth::SshKey { private_key, passphrase: None, .. } if private_key.expose() == "KEY FROM FILE"
        ));
        assert!(matches!(given.host_key_check, HostKeyCheck::AcceptAny));
    }

    #[test]
    fn credential_files_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("known_hosts");
        fs_err::write(&big, "x".repeat(2048)).unwrap();
        let flags = CredentialFlags {
            known_hosts: Some(&big),
            max_file_size: SizeLimit(1024),
            ..CredentialFlags::default()
        };
        let error = remote_settings(
            "ssh://git@git.example/fleet.git",
            "--url",
            &flags,
            &Vars::default(),
            None,
        )
        .unwrap_err();
        assert!(
            one_line(&error).contains("larger than 1 KiB"),
            "{}",
            one_line(&error)
        );
        let error = signer(
            Some(&big),
            SigningKind::Gpg,
            &Vars::default(),
            None,
            SizeLimit(1024),
        )
        .unwrap_err();
        assert!(
            one_line(&error).contains("larger than 1 KiB"),
            "{}",
            one_line(&error)
        );
    }

    #[test]
    fn a_signing_secret_without_its_key_is_an_error_at_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(dir.path(), &[("passphrase", "x")]);
        let signing = secrets.get("flux-system", "git", "test", "").unwrap();
        let error = signer(
            None,
            SigningKind::Gpg,
            &Vars::default(),
            Some(signing),
            SizeLimit::default(),
        )
        .unwrap_err();
        assert_eq!(
            error.diagnostics()[0].message,
            "the signing key Secret has no git.asc"
        );
        assert!(
            signer(
                None,
                SigningKind::Ssh,
                &Vars::default(),
                None,
                SizeLimit::default()
            )
            .unwrap()
            .is_none()
        );
    }

    fn forge(
        env: &Vars,
        secret: Option<&SecretObject>,
        app: bool,
    ) -> (String, ForgeCredentialSource) {
        let (credentials, source) = forge_credentials(env, secret, app).unwrap().unwrap();
        let shown = match credentials {
            Credentials::Token(token) => format!("token {}", token.expose()),
            Credentials::GitHubApp {
                app_id,
                private_key,
                installation_id,
            } => format!("app {app_id} {} {installation_id:?}", private_key.expose()),
        };
        (shown, source)
    }

    #[test]
    fn forge_credentials_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(
            dir.path(),
            &[
                ("password", "git-pw"),
                ("githubAppID", "42"),
                ("githubAppPrivateKey", "SECRET KEY"),
                ("githubAppInstallationID", "7"),
            ],
        );
        let git = secrets.get("flux-system", "git", "test", "").unwrap();
        let app_env = [
            ("IMAGE_UPDATE_GITHUB_APP_ID", "Iv1.abc"),
            ("IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY", "ENV KEY"),
        ];
        // The forge token first.
        let mut all = app_env.to_vec();
        all.push(("IMAGE_UPDATE_FORGE_TOKEN", "forge-tok"));
        all.push(("IMAGE_UPDATE_GIT_TOKEN", "git-tok"));
        assert_eq!(
            forge(&vars(&all), Some(git), true),
            ("token forge-tok".into(), ForgeCredentialSource::ForgeToken)
        );
        // Then the App from the environment, over the Secret's.
        assert_eq!(
            forge(&vars(&app_env), Some(git), true),
            (
                "app Iv1.abc ENV KEY None".into(),
                ForgeCredentialSource::AppFromEnvironment
            )
        );
        // The Secret's App only for `provider: github`.
        assert_eq!(
            forge(&Vars::default(), Some(git), true),
            (
                "app 42 SECRET KEY Some(7)".into(),
                ForgeCredentialSource::AppFromSecret
            )
        );
        // Else the git token, from the environment before the Secret.
        assert_eq!(
            forge(
                &vars(&[("IMAGE_UPDATE_GIT_TOKEN", "git-tok")]),
                Some(git),
                false
            ),
            ("token git-tok".into(), ForgeCredentialSource::GitToken)
        );
        assert_eq!(
            forge(&Vars::default(), Some(git), false),
            ("token git-pw".into(), ForgeCredentialSource::GitToken)
        );
        assert!(
            forge_credentials(&Vars::default(), None, false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn half_a_github_app_is_an_error() {
        let error = forge_credentials(&vars(&[("IMAGE_UPDATE_GITHUB_APP_ID", "42")]), None, false)
            .unwrap_err();
        assert_eq!(
            one_line(&error),
            "IMAGE_UPDATE_GITHUB_APP_ID is given without IMAGE_UPDATE_GITHUB_APP_PRIVATE_KEY"
        );
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(
            dir.path(),
            &[
                ("githubAppID", "42"),
                ("githubAppPrivateKey", "K"),
                ("githubAppInstallationID", "seven"),
            ],
        );
        let git = secrets.get("flux-system", "git", "test", "").unwrap();
        let error = forge_credentials(&Vars::default(), Some(git), true).unwrap_err();
        assert_eq!(
            error.diagnostics()[0].message,
            "the git Secret: githubAppInstallationID is not a number (the installation's numeric ID)"
        );
    }

    #[test]
    fn tls_client_certificates_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = secret(dir.path(), &[("tls.crt", "c"), ("username", "u")]);
        let git = secrets.get("flux-system", "git", "test", "").unwrap();
        let error = check_git_secret(git, "flux-system/git").unwrap_err();
        assert_eq!(
            error.diagnostics()[0].message,
            "Secret flux-system/git: key tls.crt is not supported by `image-update job`"
        );
    }
}
