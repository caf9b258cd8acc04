//! The git test bed: real git servers on 127.0.0.1, started once per test binary, shared by the
//! git crate's tests, the Job mode's tests and its benchmark.
//!
//! * lighttpd running `git-http-backend` as CGI behind `mod_auth` Basic auth (the user `alice`,
//!   and `x-access-token` with a GitHub App's installation token; `/git/`; `/moved/`
//!   answers with a redirect there; `server.stream-request-body = 0`, because the git CLI pushes
//!   large packs chunked, which lighttpd answers with 411 in streaming mode), and a second one
//!   serving the same repositories over HTTPS with a certificate from a private test CA;
//! * sshd with its own config, a generated host key and authorized client keys;
//! * a private GnuPG home with an ed25519 key (certify-only primary, signing subkey) and an RSA
//!   key, both passphrase-protected;
//! * the git CLI, for seeding bare repositories and checking results.
//!
//! A missing tool makes the tests that need it ignored with the reason (failed when `CI` is set).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fs_err as fs;
use libtest_mimic::{Completion, Failed, Trial};

/// The Basic auth user lighttpd accepts.
pub const HTTP_USER: &str = "alice";
/// The Basic auth password of [`HTTP_USER`].
pub const HTTP_PASSWORD: &str = "pw-Xq7-never-shown";
/// Passphrase of the ed25519 SSH client key.
pub const SSH_PASSPHRASE: &str = "ssh-pass-Kk2-never-shown";
/// Passphrase of the OpenPGP keys.
pub const GPG_PASSPHRASE: &str = "gpg-pass-Zr4-never-shown";
/// A token value tests may hand out (never valid).
pub const TOKEN: &str = "token-Vb8-never-shown";
/// The installation token the fake GitHub hands a GitHub App (`crate::forge::App::token`); the
/// HTTP servers accept it as the password of the user `x-access-token`, as GitHub does.
pub const INSTALLATION_TOKEN: &str = "ghs_installation-Tk5-never-shown";
/// Every secret a test hands to the crate; none may appear in an error.
pub const SECRETS: [&str; 5] = [
    HTTP_PASSWORD,
    SSH_PASSPHRASE,
    GPG_PASSPHRASE,
    TOKEN,
    INSTALLATION_TOKEN,
];

const HTTP_BACKEND: &str = "/usr/lib/git-core/git-http-backend";
/// The owner whose repositories the HTTP servers also serve at a forge's paths:
/// `/acme/NAME` is `repos/acme/NAME.git` (as `https://github.com/acme/NAME` through
/// [`crate::proxy`]), with the users of [`Env::hosted_users`].
pub const HOSTED_OWNER: &str = "acme";
/// The users file of [`HOSTED_OWNER`]'s paths, below the bed's root.
const HOSTED_USERS: &str = "users-hosted";
const MOD_OPENSSL: &str = "/usr/lib/lighttpd/mod_openssl.so";

/// What a trial returns.
pub type TestResult = Result<(), Failed>;

/// What a test needs besides the git CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// lighttpd + git-http-backend.
    Http,
    /// lighttpd + git-http-backend over HTTPS (mod_openssl), its certificate signed by a
    /// private CA.
    Https,
    /// sshd.
    Ssh,
    /// gpg keys.
    Gpg,
}

/// The running sshd and its keys.
pub struct Ssh {
    /// Port on 127.0.0.1.
    pub port: u16,
    /// The login user (the current user).
    pub user: String,
    /// `ssh-ed25519 AAAA...` of the server's host key.
    pub host_key: String,
    /// `ssh-keygen -lf` fingerprint of the host key (`SHA256:...`).
    pub host_fingerprint: String,
    /// Passphrase-protected ed25519 client key (OpenSSH format), authorized.
    pub ed25519_key: String,
    /// Public half of `ed25519_key`.
    pub ed25519_pub: String,
    /// RSA-3072 client key without passphrase, authorized.
    pub rsa_key: String,
    /// Public half of `rsa_key`.
    pub rsa_pub: String,
    /// An ed25519 key the server does not know.
    pub stranger_key: String,
    /// Public half of `stranger_key`.
    pub stranger_pub: String,
}

/// A private GnuPG home and its keys.
pub struct Gpg {
    /// `GNUPGHOME`.
    pub home: PathBuf,
    /// Armored secret keys, passphrase [`GPG_PASSPHRASE`].
    pub ed25519_armored: String,
    /// The RSA key, armored.
    pub rsa_armored: String,
}

/// The started servers and what could not be started.
pub struct Env {
    /// Scratch root: `repos/` (bare repositories served), `work/`, `home/`, `seed/`...
    pub root: PathBuf,
    git: Result<(), String>,
    /// lighttpd's port.
    pub http: Result<u16, String>,
    /// The HTTPS lighttpd's port and the PEM certificate of the CA that signed its certificate.
    pub https: Result<(u16, String), String>,
    /// sshd.
    pub ssh: Result<Ssh, String>,
    /// gpg.
    pub gpg: Result<Gpg, String>,
}

/// Child processes to stop at the end.
pub struct Servers {
    children: Vec<Child>,
    gpg_home: Option<PathBuf>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(home) = &self.gpg_home {
            let _ = Command::new("gpgconf")
                .args(["--kill", "gpg-agent"])
                .env("GNUPGHOME", home)
                .status();
        }
    }
}

fn tool_exists(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn missing_tools(tools: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| !tool_exists(tool))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "needs {} (apt-get install lighttpd lighttpd-mod-openssl openssh-server openssh-client gpg git)",
            missing.join(", ")
        ))
    }
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn wait_for_port(port: u16, child: &mut Child, what: &str, log: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "{what} exited ({status}): {}",
                fs::read_to_string(log).unwrap_or_default()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("{what} did not listen on port {port} within 10 s"))
}

/// Runs a command, returning stdout; an error carries stderr.
pub fn run(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{command:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

impl Env {
    /// Starts every server whose tools are present.
    pub fn start() -> Result<(Arc<Self>, Servers, tempfile::TempDir), String> {
        Self::start_with(&[Need::Http, Need::Https, Need::Ssh, Need::Gpg])
    }

    /// Starts the servers in `needs` whose tools are present; the others are reported missing.
    pub fn start_with(needs: &[Need]) -> Result<(Arc<Self>, Servers, tempfile::TempDir), String> {
        let temp = tempfile::Builder::new()
            .prefix("image-update-git-tests")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let root = temp.path().to_owned();
        for dir in ["repos", "work", "home", "www", "ssh", "seed"] {
            fs::create_dir_all(root.join(dir)).map_err(|e| e.to_string())?;
        }
        let mut servers = Servers {
            children: Vec::new(),
            gpg_home: None,
        };
        let git = missing_tools(&["git"]);
        let http = if needs.contains(&Need::Http) {
            missing_tools(&["lighttpd", HTTP_BACKEND])
                .and_then(|()| start_http(&root, &mut servers, None))
        } else {
            Err("not started".to_owned())
        };
        let https = if needs.contains(&Need::Https) {
            missing_tools(&["lighttpd", HTTP_BACKEND, MOD_OPENSSL]).and_then(|()| {
                let ca = crate::registry::TestCa::new();
                start_http(&root, &mut servers, Some(&ca)).map(|port| (port, ca.ca_pem))
            })
        } else {
            Err("not started".to_owned())
        };
        let ssh = if needs.contains(&Need::Ssh) {
            missing_tools(&["/usr/sbin/sshd", "ssh-keygen"])
                .and_then(|()| start_ssh(&root, &mut servers))
        } else {
            Err("not started".to_owned())
        };
        let gpg = if needs.contains(&Need::Gpg) {
            missing_tools(&["gpg", "gpgconf"]).and_then(|()| make_gpg_keys(&root, &mut servers))
        } else {
            Err("not started".to_owned())
        };
        Ok((
            Arc::new(Self {
                root,
                git,
                http,
                https,
                ssh,
                gpg,
            }),
            servers,
            temp,
        ))
    }

    /// Why `needs` cannot be met, if they cannot.
    pub fn missing(&self, needs: &[Need]) -> Option<String> {
        if let Err(reason) = &self.git {
            return Some(reason.clone());
        }
        needs.iter().find_map(|need| match need {
            Need::Http => self.http.as_ref().err().cloned(),
            Need::Https => self.https.as_ref().err().cloned(),
            Need::Ssh => self.ssh.as_ref().err().cloned(),
            Need::Gpg => self.gpg.as_ref().err().cloned(),
        })
    }

    /// The Basic auth users (`user:password` lines) of [`HOSTED_OWNER`]'s paths, which a test
    /// may rewrite (lighttpd reads it at every request); at first the same as `/git/`'s.
    #[must_use]
    pub fn hosted_users(&self) -> PathBuf {
        self.root.join(HOSTED_USERS)
    }

    /// lighttpd's port (0 when it did not start).
    pub fn http_port(&self) -> u16 {
        *self.http.as_ref().unwrap_or(&0)
    }

    /// The HTTPS URL of a fixture (only in trials that need HTTPS).
    pub fn https_url(&self, fixture: &Fixture) -> String {
        let port = self.https.as_ref().map_or(0, |(port, _)| *port);
        format!("https://127.0.0.1:{port}/git/{}.git", fixture.name)
    }

    /// The PEM certificate of the CA the HTTPS server's certificate is signed by.
    pub fn https_ca(&self) -> &str {
        self.https.as_ref().map_or("", |(_, ca)| ca.as_str())
    }

    /// The sshd (only in trials that need it).
    pub fn ssh(&self) -> &Ssh {
        self.ssh
            .as_ref()
            .unwrap_or_else(|_| unreachable!("trial ran without sshd"))
    }

    /// The gpg keys (only in trials that need it).
    pub fn gpg(&self) -> &Gpg {
        self.gpg
            .as_ref()
            .unwrap_or_else(|_| unreachable!("trial ran without gpg"))
    }

    /// A fresh, not yet existing work tree directory for `name`.
    pub fn work_dir(&self, name: &str) -> PathBuf {
        self.root.join("work").join(name)
    }

    /// The git CLI with a private HOME, no system config, no automatic gc and a fixed identity.
    pub fn git(&self, dir: &Path) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(dir)
            .env("HOME", self.root.join("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // No background gc or maintenance writing into repositories a test is about to
            // inspect or delete.
            .env("GIT_CONFIG_COUNT", "2")
            .env("GIT_CONFIG_KEY_0", "gc.auto")
            .env("GIT_CONFIG_VALUE_0", "0")
            .env("GIT_CONFIG_KEY_1", "maintenance.auto")
            .env("GIT_CONFIG_VALUE_1", "false")
            .env("GIT_AUTHOR_NAME", "Seeder")
            .env("GIT_AUTHOR_EMAIL", "seeder@example.com")
            .env("GIT_COMMITTER_NAME", "Seeder")
            .env("GIT_COMMITTER_EMAIL", "seeder@example.com")
            .env_remove("GIT_DIR")
            .stdin(Stdio::null());
        command
    }

    /// Runs `git args...` in `dir`, returning trimmed stdout.
    pub fn git_out(&self, dir: &Path, args: &[&str]) -> Result<String, Failed> {
        Ok(run(self.git(dir).args(args))?.trim().to_owned())
    }

    /// An empty bare repository `repos/NAME.git` and an empty work tree `seed/NAME` to fill it
    /// from, both on `main`.
    fn init_repositories(&self, name: &str) -> Result<(PathBuf, PathBuf), Failed> {
        let bare = self.root.join("repos").join(format!("{name}.git"));
        let seed = self.root.join("seed").join(name);
        fs::create_dir_all(&seed)?;
        self.git_out(
            &self.root,
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                &bare.to_string_lossy(),
            ],
        )?;
        self.git_out(&seed, &["init", "-q", "-b", "main"])?;
        Ok((bare, seed))
    }

    /// Makes `repos/NAME.git` with three commits on `main` and an annotated tag `v1.0.0` on the
    /// second one.
    pub fn fixture(&self, name: &str) -> Result<Fixture, Failed> {
        let (bare, seed) = self.init_repositories(name)?;
        fs::create_dir_all(seed.join("deploy"))?;
        let mut commits = Vec::new();
        fs::write(seed.join("deploy/app.yaml"), APP_YAML)?;
        self.git_out(&seed, &["add", "-A"])?;
        self.git_out(&seed, &["commit", "-q", "-m", "first"])?;
        commits.push(self.git_out(&seed, &["rev-parse", "HEAD"])?);
        fs::write(seed.join("README.md"), "# app\n")?;
        self.git_out(&seed, &["add", "-A"])?;
        self.git_out(&seed, &["commit", "-q", "-m", "second"])?;
        commits.push(self.git_out(&seed, &["rev-parse", "HEAD"])?);
        self.git_out(&seed, &["tag", "-a", "v1.0.0", "-m", "release 1.0.0"])?;
        fs::write(seed.join("README.md"), "# app\n\nDeployed by Flux.\n")?;
        self.git_out(&seed, &["commit", "-q", "-am", "third"])?;
        commits.push(self.git_out(&seed, &["rev-parse", "HEAD"])?);
        self.git_out(
            &seed,
            &["push", "-q", &bare.to_string_lossy(), "main", "v1.0.0"],
        )?;
        Ok(Fixture {
            name: name.to_owned(),
            bare,
            commits,
        })
    }

    /// Makes `repos/NAME.git` whose `main` holds one commit with the files of `tree` (a
    /// directory, copied as is), for tests and benchmarks that need their own content.
    pub fn fixture_from_tree(&self, name: &str, tree: &Path) -> Result<Fixture, Failed> {
        let (bare, seed) = self.init_repositories(name)?;
        run(Command::new("cp").arg("-a").arg(tree.join(".")).arg(&seed))?;
        self.git_out(&seed, &["add", "-A"])?;
        self.git_out(&seed, &["commit", "-q", "-m", "initial"])?;
        let head = self.git_out(&seed, &["rev-parse", "HEAD"])?;
        self.git_out(&seed, &["push", "-q", &bare.to_string_lossy(), "main"])?;
        Ok(Fixture {
            name: name.to_owned(),
            bare,
            commits: vec![head],
        })
    }

    /// The HTTP URL of a fixture.
    pub fn http_url(&self, fixture: &Fixture) -> String {
        format!(
            "http://127.0.0.1:{}/git/{}.git",
            self.http_port(),
            fixture.name
        )
    }

    /// The SSH URL of a fixture.
    pub fn ssh_url(&self, fixture: &Fixture) -> String {
        let ssh = self.ssh();
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            ssh.user,
            ssh.port,
            fixture.bare.display()
        )
    }

    /// `known_hosts` text naming the test sshd with its real key.
    pub fn known_hosts(&self) -> String {
        let ssh = self.ssh();
        format!("# test sshd\n[127.0.0.1]:{} {}\n", ssh.port, ssh.host_key)
    }

    /// Clones the bare repository with the git CLI (full, local) to check results.
    pub fn cli_clone(&self, fixture: &Fixture, dir_name: &str) -> Result<PathBuf, Failed> {
        let dir = self.root.join("seed").join(dir_name);
        self.git_out(
            &self.root,
            &[
                "clone",
                "-q",
                &fixture.bare.to_string_lossy(),
                &dir.to_string_lossy(),
            ],
        )?;
        Ok(dir)
    }

    /// Pushes a commit that changes `path` to `content` on `branch`, with the git CLI.
    pub fn cli_push_change(
        &self,
        fixture: &Fixture,
        dir_name: &str,
        path: &str,
        content: &str,
        message: &str,
    ) -> Result<String, Failed> {
        let existing = self.root.join("seed").join(dir_name);
        let dir = if existing.exists() {
            self.git_out(&existing, &["pull", "-q", "--ff-only"])?;
            existing
        } else {
            self.cli_clone(fixture, dir_name)?
        };
        fs::write(dir.join(path), content)?;
        self.git_out(&dir, &["commit", "-q", "-am", message])?;
        self.git_out(&dir, &["push", "-q", "origin", "HEAD:main"])?;
        self.git_out(&dir, &["rev-parse", "HEAD"])
    }

    /// Installs an executable hook in the bare repository.
    pub fn hook(&self, fixture: &Fixture, name: &str, script: &str) -> TestResult {
        let path = fixture.bare.join("hooks").join(name);
        fs::write(&path, script)?;
        run(Command::new("chmod").arg("+x").arg(&path))?;
        Ok(())
    }

    /// A trial that is ignored (or failed under `CI`) when `needs` are not met.
    pub fn trial(
        self: &Arc<Self>,
        name: &str,
        needs: &'static [Need],
        test: fn(&Env) -> TestResult,
    ) -> Trial {
        let env = Arc::clone(self);
        Trial::ignorable_test(name, move || {
            if let Some(reason) = env.missing(needs) {
                if std::env::var_os("CI").is_some() {
                    return Err(format!("{reason}; CI is set, so this is a failure").into());
                }
                return Ok(Completion::ignored_with(reason));
            }
            test(&env).map(|()| Completion::Completed)
        })
    }
}

/// The fixture's `deploy/app.yaml`: one marked image.
pub const APP_YAML: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}
";

/// A bare repository under `repos/`.
pub struct Fixture {
    /// Name (without `.git`).
    pub name: String,
    /// Path of the bare repository.
    pub bare: PathBuf,
    /// first, second (tagged v1.0.0), third (tip of main) for [`Env::fixture`]; the one commit
    /// for [`Env::fixture_from_tree`].
    pub commits: Vec<String>,
}

/// Starts lighttpd serving `repos/` with git-http-backend: plain HTTP, or HTTPS with a
/// certificate `tls` signed.
fn start_http(
    root: &Path,
    servers: &mut Servers,
    tls: Option<&crate::registry::TestCa>,
) -> Result<u16, String> {
    let port = free_port()?;
    let name = if tls.is_some() {
        "lighttpd-https"
    } else {
        "lighttpd"
    };
    let users = format!("{HTTP_USER}:{HTTP_PASSWORD}\nx-access-token:{INSTALLATION_TOKEN}\n");
    fs::write(root.join("users"), &users).map_err(|e| e.to_string())?;
    fs::write(root.join(HOSTED_USERS), &users).map_err(|e| e.to_string())?;
    let tls_config = match tls {
        Some(ca) => {
            let cert = root.join("https-cert.pem");
            let key = root.join("https-key.pem");
            fs::write(&cert, &ca.cert_pem).map_err(|e| e.to_string())?;
            fs::write(&key, &ca.key_pem).map_err(|e| e.to_string())?;
            format!(
                "server.modules += (\"mod_openssl\")\nssl.engine = \"enable\"\n\
                 ssl.pemfile = \"{}\"\nssl.privkey = \"{}\"\n",
                cert.display(),
                key.display()
            )
        }
        None => String::new(),
    };
    let config = format!(
        r#"server.modules = ("mod_alias", "mod_setenv", "mod_auth", "mod_authn_file", "mod_cgi", "mod_redirect", "mod_rewrite")
{tls_config}server.document-root = "{root}/www"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{root}/{name}-error.log"
server.stream-request-body = 0
alias.url = ( "/git/" => "{HTTP_BACKEND}/", "/hosted/" => "{HTTP_BACKEND}/" )
url.redirect = ( "^/moved/(.*)$" => "/git/$1" )
url.rewrite-once = ( "^/({HOSTED_OWNER}/.*)$" => "/hosted/$1" )
$HTTP["url"] =~ "^/(git|hosted)/" {{
  cgi.assign = ( "" => "" )
  setenv.set-environment = ( "GIT_PROJECT_ROOT" => "{root}/repos", "GIT_HTTP_EXPORT_ALL" => "1" )
  auth.backend = "plain"
  auth.backend.plain.userfile = "{root}/users"
  auth.require = ( "" => ( "method" => "basic", "realm" => "git", "require" => "valid-user" ) )
}}
$HTTP["url"] =~ "^/hosted/" {{
  auth.backend.plain.userfile = "{root}/{HOSTED_USERS}"
}}
"#,
        root = root.display()
    );
    let config_path = root.join(format!("{name}.conf"));
    fs::write(&config_path, config).map_err(|e| e.to_string())?;
    let log = root.join(format!("{name}.log"));
    let log_file = fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = Command::new("lighttpd")
        .arg("-D")
        .arg("-f")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(
            log_file
                .try_clone()
                .map_err(|e| e.to_string())?
                .into_parts()
                .0,
        )
        .stderr(log_file.into_parts().0)
        .spawn()
        .map_err(|e| format!("starting lighttpd: {e}"))?;
    let ready = wait_for_port(port, &mut child, name, &log);
    servers.children.push(child);
    ready.map(|()| port)
}

fn keygen(
    path: &Path,
    kind: &[&str],
    passphrase: &str,
    comment: &str,
) -> Result<(String, String), String> {
    run(Command::new("ssh-keygen")
        .args(["-q", "-N", passphrase, "-C", comment, "-f"])
        .arg(path)
        .args(kind))?;
    let private = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let public = fs::read_to_string(path.with_extension("pub")).map_err(|e| e.to_string())?;
    let public = public
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    Ok((private, public))
}

fn start_ssh(root: &Path, servers: &mut Servers) -> Result<Ssh, String> {
    let dir = root.join("ssh");
    let user = run(Command::new("id").arg("-un"))?.trim().to_owned();
    let (_, host_key) = keygen(&dir.join("host_ed25519"), &["-t", "ed25519"], "", "host")?;
    let host_fingerprint = run(Command::new("ssh-keygen")
        .arg("-lf")
        .arg(dir.join("host_ed25519.pub")))?
    .split_whitespace()
    .nth(1)
    .unwrap_or_default()
    .to_owned();
    let (ed25519_key, ed25519_pub) = keygen(
        &dir.join("client_ed25519"),
        &["-t", "ed25519"],
        SSH_PASSPHRASE,
        "bot@example.com",
    )?;
    let (rsa_key, rsa_pub) = keygen(
        &dir.join("client_rsa"),
        &["-t", "rsa", "-b", "3072"],
        "",
        "bot@example.com",
    )?;
    let (stranger_key, stranger_pub) = keygen(
        &dir.join("stranger_ed25519"),
        &["-t", "ed25519"],
        "",
        "stranger",
    )?;
    fs::write(
        dir.join("authorized_keys"),
        format!("{ed25519_pub}\n{rsa_pub}\n"),
    )
    .map_err(|e| e.to_string())?;
    if user == "root" {
        // sshd's privilege separation directory; packages create it only when the service starts.
        fs::create_dir_all("/run/sshd").map_err(|e| e.to_string())?;
    }
    let port = free_port()?;
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_ed25519\nPidFile {dir}/sshd.pid\n\
         AuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
         KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
         LogLevel VERBOSE\n",
        dir = dir.display()
    );
    fs::write(dir.join("sshd_config"), config).map_err(|e| e.to_string())?;
    let log = root.join("sshd.log");
    let log_file = fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file.into_parts().0)
        .spawn()
        .map_err(|e| format!("starting sshd: {e}"))?;
    let ready = wait_for_port(port, &mut child, "sshd", &log);
    servers.children.push(child);
    ready?;
    Ok(Ssh {
        port,
        user,
        host_key,
        host_fingerprint,
        ed25519_key,
        ed25519_pub,
        rsa_key,
        rsa_pub,
        stranger_key,
        stranger_pub,
    })
}

fn make_gpg_keys(root: &Path, servers: &mut Servers) -> Result<Gpg, String> {
    let home = root.join("gnupg");
    fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    run(Command::new("chmod").arg("700").arg(&home))?;
    servers.gpg_home = Some(home.clone());
    let gpg = |args: &[&str]| {
        run(Command::new("gpg")
            .env("GNUPGHOME", &home)
            .args([
                "--batch",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                GPG_PASSPHRASE,
            ])
            .args(args))
    };
    // ed25519: a certify-only primary key with a signing subkey (the signer must pick the subkey).
    gpg(&[
        "--quick-gen-key",
        "Ed Bot <ed-bot@example.com>",
        "ed25519",
        "cert",
        "never",
    ])?;
    let listing = gpg(&["--list-keys", "--with-colons", "ed-bot@example.com"])?;
    let fingerprint = listing
        .lines()
        .find(|line| line.starts_with("fpr:"))
        .and_then(|line| line.split(':').nth(9))
        .ok_or("no fingerprint in gpg's listing")?
        .to_owned();
    gpg(&["--quick-add-key", &fingerprint, "ed25519", "sign", "never"])?;
    gpg(&[
        "--quick-gen-key",
        "Rsa Bot <rsa-bot@example.com>",
        "rsa3072",
        "sign",
        "never",
    ])?;
    let ed25519_armored = gpg(&["--armor", "--export-secret-keys", "ed-bot@example.com"])?;
    let rsa_armored = gpg(&["--armor", "--export-secret-keys", "rsa-bot@example.com"])?;
    Ok(Gpg {
        home,
        ed25519_armored,
        rsa_armored,
    })
}

/// Fails unless `condition` holds.
pub fn ensure(condition: bool, message: impl FnOnce() -> String) -> TestResult {
    if condition {
        Ok(())
    } else {
        Err(message().into())
    }
}

/// Fails when any test secret appears in the error, its `Debug` form or any of its sources.
pub fn assert_no_secret(err: &(dyn std::error::Error + 'static)) -> TestResult {
    let mut texts = vec![format!("{err}"), format!("{err:?}")];
    let mut source = err.source();
    while let Some(cause) = source {
        texts.push(format!("{cause}"));
        texts.push(format!("{cause:?}"));
        source = cause.source();
    }
    for text in &texts {
        for secret in SECRETS {
            ensure(!text.contains(secret), || {
                format!("a secret leaked into an error: {text}")
            })?;
        }
    }
    Ok(())
}
