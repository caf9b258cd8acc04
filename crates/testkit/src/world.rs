//! The internet as a user's commands name it: `ghcr.io` and Docker Hub (a real
//! `docker-registry`), `github.com` (the git bed's lighttpd, serving `acme/NAME`), and
//! `api.github.com` (the fake GitHub, for `acme/fleet`), all behind [`crate::proxy`]. A command
//! run with [`World::network`]'s `HTTPS_PROXY` and `SSL_CERT_FILE` reaches them by those names,
//! so the documents and the journeys keep the names users see, and nothing leaves the machine.
//!
//! The git token of the documents, [`TOKEN`], signs in to `github.com` (as the user
//! `x-access-token`, as GitHub takes a token) and to the fake GitHub.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use fs_err as fs;
use libtest_mimic::Failed;

use crate::forge::{FakeForge, Flavor};
use crate::git::{Env, Need, Servers};
use crate::proxy::Proxy;
use crate::registry::{Auth, Registry};

/// The token the documents' git and forge commands carry (`IMAGE_UPDATE_GIT_TOKEN=ghp_...`).
pub const TOKEN: &str = "ghp_...";
/// The repository `github.com` serves, and the fake GitHub knows.
pub const REPOSITORY: &str = "acme/fleet";
/// The host names the proxy answers for.
pub const HOSTS: [&str; 5] = [
    "ghcr.io",
    "registry-1.docker.io",
    "index.docker.io",
    "github.com",
    "api.github.com",
];

/// The running servers.
pub struct World {
    pub proxy: Proxy,
    pub registry: Registry,
    pub git: Arc<Env>,
    _servers: Servers,
    _git_temp: tempfile::TempDir,
    /// The fake GitHub; `None` when its API description is not installed
    /// (`scripts/api-descriptions.sh`).
    pub forge: Option<FakeForge>,
}

impl World {
    /// Starts the registry (empty), the git bed's HTTP server and the fake GitHub, behind the
    /// proxy.
    ///
    /// # Errors
    /// The git bed cannot start (a missing program, named).
    pub fn start() -> Result<World, String> {
        let registry = Registry::start(Auth::Anonymous);
        let (git, servers, git_temp) = Env::start_with(&[Need::Http])?;
        if let Some(reason) = git.missing(&[Need::Http]) {
            return Err(reason);
        }
        let proxy = Proxy::start(&HOSTS);
        let local = |port: u16| format!("127.0.0.1:{port}").parse().unwrap();
        for host in ["ghcr.io", "registry-1.docker.io", "index.docker.io"] {
            proxy.route(host, local(registry.port));
        }
        proxy.route("github.com", local(git.http_port()));
        let forge = FakeForge::start(Flavor::GitHub, TOKEN, None).ok();
        if let Some(forge) = &forge {
            let authority = forge.api_url().trim_start_matches("http://").to_owned();
            proxy.route("api.github.com", authority.parse().unwrap());
            forge.set_web("https://github.com");
        }
        fs::write(git.hosted_users(), format!("x-access-token:{TOKEN}\n"))
            .map_err(|e| e.to_string())?;
        Ok(World {
            proxy,
            registry,
            git,
            _servers: servers,
            _git_temp: git_temp,
            forge,
        })
    }

    /// The bare repository `github.com/acme/fleet` serves.
    #[must_use]
    pub fn bare(&self) -> PathBuf {
        self.git
            .root
            .join("repos")
            .join(format!("{REPOSITORY}.git"))
    }

    /// `github.com/acme/fleet` afresh: one commit on `main` with the files of `tree`; its refs.
    ///
    /// # Errors
    /// The git CLI fails.
    pub fn seed(&self, tree: &Path) -> Result<BTreeSet<String>, Failed> {
        for dir in [self.bare(), self.git.root.join("seed").join(REPOSITORY)] {
            if dir.exists() {
                fs::remove_dir_all(&dir)?;
            }
        }
        let fixture = self.git.fixture_from_tree(REPOSITORY, tree)?;
        if let Some(forge) = &self.forge {
            forge.track_branches(&fixture.bare);
        }
        self.refs()
    }

    /// The refs of `github.com/acme/fleet` (`git for-each-ref` lines).
    ///
    /// # Errors
    /// The git CLI fails.
    pub fn refs(&self) -> Result<BTreeSet<String>, Failed> {
        let listed = self.git.git_out(&self.bare(), &["for-each-ref"])?;
        Ok(listed.lines().map(str::to_owned).collect())
    }

    /// `git args...` in the bare repository, its trimmed stdout.
    ///
    /// # Errors
    /// The git CLI fails.
    pub fn git(&self, args: &[&str]) -> Result<String, Failed> {
        self.git.git_out(&self.bare(), args)
    }

    /// Writes the proxy's CA to `dir/proxy-ca.pem`, and returns its path.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn ca_file(&self, dir: &Path) -> Result<PathBuf, Failed> {
        let path = dir.join("proxy-ca.pem");
        fs::write(&path, self.proxy.ca_pem())?;
        Ok(path)
    }

    /// Points `command` at this world: `HTTPS_PROXY`, and the proxy's CA in `SSL_CERT_FILE`
    /// (`ca`, from [`World::ca_file`]).
    pub fn network<'c>(&self, command: &'c mut Command, ca: &Path) -> &'c mut Command {
        command
            .env("HTTPS_PROXY", self.proxy.url())
            .env("SSL_CERT_FILE", ca)
    }
}
