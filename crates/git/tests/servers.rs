//! The git layer against real servers on 127.0.0.1 (see `image_update_testkit::git`): clone, observe,
//! commit, sign, push, race and failure handling, each checked with the git CLI.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_testkit::git as support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use fs_err as fs;
use image_update_git::{
    Auth, Author, Checkout, CheckoutRef, CloneOptions, CommitSettings, Error, ErrorKind, ForcePush,
    HostKeyCheck, HostKeyProblem, HttpHeader, KnownHosts, PushOutcome, PushRequest, Remote,
    RemoteSettings, RetryError, RetryPolicy, Secret, Signer, Timestamp, push_with_retry,
};
use libtest_mimic::{Arguments, Failed};
use support::{
    Env, Fixture, GPG_PASSPHRASE, HTTP_PASSWORD, HTTP_USER, Need, SSH_PASSPHRASE, TOKEN,
    TestResult, assert_no_secret, ensure, run,
};

const HTTP: &[Need] = &[Need::Http];
const SSH: &[Need] = &[Need::Ssh];
const HTTP_GPG: &[Need] = &[Need::Http, Need::Gpg];
const NONE: &[Need] = &[];

fn main() {
    // Short timeouts, set before the first git operation of the process, so
    // that a stalled server fails a test quickly (`stalled_server_times_out`).
    image_update_git::set_timeouts(
        std::time::Duration::from_secs(10),
        std::time::Duration::from_secs(4),
    );
    let args = Arguments::from_args();
    let (env, servers, temp) = match Env::start() {
        Ok(started) => started,
        Err(err) => {
            eprintln!("cannot set up the test bed: {err}");
            #[allow(clippy::disallowed_methods)] // a test program ends itself
            std::process::exit(1);
        }
    };
    let trials = vec![
        env.trial(
            "clone::stalled_server_times_out",
            NONE,
            stalled_server_times_out,
        ),
        env.trial("clone::http_shallow_branch", HTTP, http_shallow_branch),
        env.trial(
            "clone::http_full_default_branch",
            HTTP,
            http_full_default_branch,
        ),
        env.trial("clone::http_tag", HTTP, http_tag),
        env.trial("clone::http_commit", HTTP, http_commit),
        env.trial("clone::http_missing_ref", HTTP, http_missing_ref),
        env.trial(
            "clone::http_redirect_followed_on_the_same_server",
            HTTP,
            http_redirect_followed,
        ),
        env.trial(
            "clone::http_answers_that_are_not_git",
            NONE,
            http_answers_that_are_not_git,
        ),
        env.trial(
            "clone::https_trusts_given_ca_then_push",
            &[Need::Https],
            https_trusts_given_ca_then_push,
        ),
        env.trial(
            "clone::ssh_ed25519_key_then_push",
            SSH,
            ssh_ed25519_then_push,
        ),
        env.trial(
            "clone::ssh_rsa_key_hashed_known_hosts",
            SSH,
            ssh_rsa_hashed_known_hosts,
        ),
        env.trial(
            "clone::extra_header_authenticates",
            HTTP,
            extra_header_authenticates,
        ),
        env.trial(
            "clone::local_urls_need_allow_local",
            NONE,
            local_urls_need_allow_local,
        ),
        env.trial(
            "commit::push_checked_by_git",
            HTTP,
            commit_push_checked_by_git,
        ),
        env.trial("commit::nothing_to_commit", HTTP, nothing_to_commit),
        env.trial(
            "sign::openpgp_ed25519_subkey_and_rsa",
            HTTP_GPG,
            openpgp_signed,
        ),
        env.trial(
            "sign::ssh_ed25519_and_rsa",
            &[Need::Http, Need::Ssh],
            ssh_signed,
        ),
        env.trial(
            "push::new_branch_then_force",
            HTTP,
            push_branch_created_then_forced,
        ),
        env.trial(
            "push::options_reach_the_hook",
            HTTP,
            push_options_reach_the_hook,
        ),
        env.trial("push::declined_by_hook_not_retried", HTTP, declined_by_hook),
        env.trial("retry::race_reapplied_and_pushed", HTTP, race_reapplied),
        env.trial("retry::race_nothing_left_to_do", HTTP, race_nothing_left),
        env.trial("retry::gives_up", HTTP, race_gives_up),
        env.trial("auth::wrong_password_fails_fast", HTTP, wrong_password),
        env.trial("auth::wrong_ssh_key_fails_fast", SSH, wrong_ssh_key),
        env.trial("auth::host_key_checks", SSH, host_key_checks),
        env.trial(
            "ls_remote::http_and_ssh",
            &[Need::Http, Need::Ssh],
            ls_remote,
        ),
    ];
    let conclusion = libtest_mimic::run(&args, trials);
    drop(servers);
    drop(env);
    drop(temp);
    conclusion.exit();
}

// --- helpers ------------------------------------------------------------------------------

fn http_settings() -> RemoteSettings {
    RemoteSettings {
        auth: Auth::Basic {
            username: HTTP_USER.to_owned(),
            password: Secret::new(HTTP_PASSWORD),
        },
        ..RemoteSettings::default()
    }
}

fn http_remote(env: &Env, fixture: &Fixture) -> Result<Remote, Failed> {
    Ok(Remote::new(&env.http_url(fixture), http_settings())?)
}

fn ssh_remote(
    env: &Env,
    fixture: &Fixture,
    key: &str,
    passphrase: Option<&str>,
    check: HostKeyCheck,
) -> Result<Remote, Failed> {
    let settings = RemoteSettings {
        auth: Auth::SshKey {
            username: None,
            private_key: Secret::new(key),
            passphrase: passphrase.map(Secret::new),
        },
        host_key_check: check,
        ..RemoteSettings::default()
    };
    Ok(Remote::new(&env.ssh_url(fixture), settings)?)
}

fn known(env: &Env) -> Result<HostKeyCheck, Failed> {
    Ok(HostKeyCheck::KnownHosts(KnownHosts::parse(
        &env.known_hosts(),
    )?))
}

/// A server that accepts the connection and never answers: the clone fails
/// after the read timeout instead of hanging.
fn stalled_server_times_out(env: &Env) -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let remote = Remote::new(
        &format!("http://127.0.0.1:{port}/fleet.git"),
        RemoteSettings::default(),
    )?;
    let start = std::time::Instant::now();
    let err = match Checkout::clone(
        remote,
        &main_ref(),
        &env.work_dir("stalled"),
        &CloneOptions::default(),
    ) {
        Ok(_) => return Err("a clone from a silent server succeeded".into()),
        Err(e) => e,
    };
    let elapsed = start.elapsed();
    if err.kind() != ErrorKind::Network || elapsed > std::time::Duration::from_secs(30) {
        return Err(format!("{:?} after {elapsed:?}: {err}", err.kind()).into());
    }
    Ok(())
}

fn main_ref() -> CheckoutRef {
    CheckoutRef::Branch("main".to_owned())
}

fn clone_http(env: &Env, fixture: &Fixture, dir: &str) -> Result<Checkout, Failed> {
    Ok(Checkout::clone(
        http_remote(env, fixture)?,
        &main_ref(),
        &env.work_dir(dir),
        &CloneOptions::default(),
    )?)
}

fn author() -> Author {
    Author {
        name: "Image Update Bot".to_owned(),
        email: "bot@example.com".to_owned(),
    }
}

/// Sets the image tag in `deploy/app.yaml`; returns whether the file changed.
fn set_tag(dir: &Path, tag: &str) -> Result<bool, std::io::Error> {
    let path = dir.join("deploy/app.yaml");
    let before = fs::read_to_string(&path)?;
    let after = before
        .lines()
        .map(|line| match line.split_once("ghcr.io/example/app:") {
            Some((head, rest)) => format!(
                "{head}ghcr.io/example/app:{tag}{}",
                &rest[rest.find(' ').unwrap_or(rest.len())..]
            ),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    if after == before {
        return Ok(false);
    }
    fs::write(&path, after)?;
    Ok(true)
}

fn no_sleep_policy() -> (RetryPolicy, Arc<Mutex<Vec<Duration>>>) {
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let recorder = Arc::clone(&sleeps);
    let policy = RetryPolicy {
        sleep: Arc::new(move |wait| recorder.lock().unwrap().push(wait)),
        ..RetryPolicy::default()
    };
    (policy, sleeps)
}

fn expect_err<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> Result<Error, Failed> {
    match result {
        Ok(value) => Err(format!("{what}: expected an error, got {value:?}").into()),
        Err(err) => {
            assert_no_secret(&err)?;
            Ok(err)
        }
    }
}

// --- clone ---------------------------------------------------------------------------------

fn http_shallow_branch(env: &Env) -> TestResult {
    let fixture = env.fixture("shallow")?;
    let checkout = clone_http(env, &fixture, "shallow")?;
    let dir = checkout.work_dir();
    ensure(
        checkout.checked_out_commit().to_string() == fixture.commits[2],
        || "not the tip of main".into(),
    )?;
    ensure(dir.join(".git/shallow").is_file(), || {
        "no .git/shallow: the clone is not shallow".into()
    })?;
    ensure(
        env.git_out(dir, &["rev-list", "--count", "HEAD"])? == "1",
        || "depth 1 should fetch one commit".into(),
    )?;
    ensure(
        fs::read_to_string(dir.join("deploy/app.yaml"))? == support::APP_YAML,
        || "work tree not checked out".into(),
    )?;
    ensure(
        checkout.branch() == Some("main") && checkout.checkout_branch() == Some("main"),
        || "branch".into(),
    )?;
    ensure(
        env.git_out(dir, &["symbolic-ref", "HEAD"])? == "refs/heads/main",
        || "HEAD not on main".into(),
    )?;
    let revision = checkout.observed_source_revision().to_string();
    ensure(
        revision == format!("main@sha1:{}", fixture.commits[2]),
        || format!("revision {revision}"),
    )?;
    ensure(
        env.git_out(dir, &["status", "--porcelain"])?.is_empty(),
        || "work tree not clean after clone".into(),
    )
}

fn http_full_default_branch(env: &Env) -> TestResult {
    let fixture = env.fixture("full")?;
    let checkout = Checkout::clone(
        http_remote(env, &fixture)?,
        &CheckoutRef::DefaultBranch,
        &env.work_dir("full"),
        &CloneOptions { depth: None },
    )?;
    let dir = checkout.work_dir();
    ensure(!dir.join(".git/shallow").exists(), || {
        "a full clone must not be shallow".into()
    })?;
    ensure(
        env.git_out(dir, &["rev-list", "--count", "HEAD"])? == "3",
        || "full history expected".into(),
    )?;
    ensure(checkout.checkout_branch() == Some("main"), || {
        format!("default branch {:?}", checkout.checkout_branch())
    })?;
    ensure(
        checkout.observed_source_revision().to_string()
            == format!("main@sha1:{}", fixture.commits[2]),
        || "revision".into(),
    )
}

fn http_tag(env: &Env) -> TestResult {
    let fixture = env.fixture("tag")?;
    for (index, reference) in [
        CheckoutRef::Tag("v1.0.0".to_owned()),
        CheckoutRef::Name("refs/tags/v1.0.0".to_owned()),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = env.work_dir(&format!("tag-{index}"));
        let mut checkout = Checkout::clone(
            http_remote(env, &fixture)?,
            &reference,
            &dir,
            &CloneOptions::default(),
        )?;
        ensure(
            checkout.checked_out_commit().to_string() == fixture.commits[1],
            || "annotated tag not peeled".into(),
        )?;
        ensure(checkout.branch().is_none(), || {
            "a tag checkout has no branch".into()
        })?;
        ensure(
            checkout.observed_source_revision().to_string()
                == format!("v1.0.0@sha1:{}", fixture.commits[1]),
            || format!("revision {}", checkout.observed_source_revision()),
        )?;
        ensure(
            !dir.join("README.md").exists()
                || fs::read_to_string(dir.join("README.md"))? == "# app\n",
            || "wrong tree".into(),
        )?;
        set_tag(&dir, "2.0.0")?;
        checkout.commit(
            &CommitSettings {
                author: &author(),
                signer: None,
                time: None,
            },
            "update",
        )?;
        let err = expect_err(checkout.push(&PushRequest::default()), "push from a tag")?;
        ensure(matches!(err, Error::NoPushBranch { .. }), || {
            format!("{err:?}")
        })?;
    }
    Ok(())
}

fn http_commit(env: &Env) -> TestResult {
    let fixture = env.fixture("commit")?;
    let first = &fixture.commits[0];
    let with_branch = CheckoutRef::Commit {
        id: first.clone(),
        branch: Some("main".to_owned()),
    };
    let checkout = Checkout::clone(
        http_remote(env, &fixture)?,
        &with_branch,
        &env.work_dir("commit-a"),
        &CloneOptions::default(),
    )?;
    ensure(checkout.head()?.to_string() == *first, || {
        "HEAD is not the requested commit".into()
    })?;
    ensure(
        checkout.observed_source_revision().to_string() == format!("main@sha1:{first}"),
        || "revision".into(),
    )?;
    ensure(!checkout.work_dir().join("README.md").exists(), || {
        "README.md is not in the first commit".into()
    })?;

    let bare = CheckoutRef::Commit {
        id: first.clone(),
        branch: None,
    };
    let checkout = Checkout::clone(
        http_remote(env, &fixture)?,
        &bare,
        &env.work_dir("commit-b"),
        &CloneOptions::default(),
    )?;
    ensure(
        checkout.observed_source_revision().to_string() == format!("sha1:{first}"),
        || "bare commit revision".into(),
    )?;
    ensure(checkout.branch().is_none(), || "detached expected".into())?;

    let missing = CheckoutRef::Commit {
        id: "0123456789abcdef0123456789abcdef01234567".to_owned(),
        branch: Some("main".to_owned()),
    };
    let err = expect_err(
        Checkout::clone(
            http_remote(env, &fixture)?,
            &missing,
            &env.work_dir("commit-c"),
            &CloneOptions::default(),
        ),
        "missing commit",
    )?;
    ensure(matches!(err, Error::CommitNotFound { .. }), || {
        format!("{err:?}")
    })?;
    let short = CheckoutRef::Commit {
        id: "abc123".to_owned(),
        branch: None,
    };
    let err = expect_err(
        Checkout::clone(
            http_remote(env, &fixture)?,
            &short,
            &env.work_dir("commit-d"),
            &CloneOptions::default(),
        ),
        "short id",
    )?;
    ensure(matches!(err, Error::InvalidCommitId { .. }), || {
        format!("{err:?}")
    })
}

fn http_missing_ref(env: &Env) -> TestResult {
    let fixture = env.fixture("missing-ref")?;
    for (index, reference) in [
        CheckoutRef::Branch("nope".to_owned()),
        CheckoutRef::Tag("v9".to_owned()),
    ]
    .iter()
    .enumerate()
    {
        let err = expect_err(
            Checkout::clone(
                http_remote(env, &fixture)?,
                reference,
                &env.work_dir(&format!("missing-{index}")),
                &CloneOptions::default(),
            ),
            "missing ref",
        )?;
        ensure(
            matches!(err, Error::RefNotFound { .. }) && err.kind() == ErrorKind::NotFound,
            || format!("{err:?}"),
        )?;
    }
    Ok(())
}

fn ssh_ed25519_then_push(env: &Env) -> TestResult {
    let fixture = env.fixture("ssh-ed25519")?;
    let ssh = env.ssh();
    let remote = ssh_remote(
        env,
        &fixture,
        &ssh.ed25519_key,
        Some(SSH_PASSPHRASE),
        known(env)?,
    )?;
    let mut checkout = Checkout::clone(
        remote,
        &main_ref(),
        &env.work_dir("ssh-ed25519"),
        &CloneOptions::default(),
    )?;
    ensure(checkout.work_dir().join(".git/shallow").is_file(), || {
        "SSH clone should be shallow".into()
    })?;
    ensure(
        checkout.checked_out_commit().to_string() == fixture.commits[2],
        || "tip".into(),
    )?;
    set_tag(checkout.work_dir(), "1.1.0")?;
    let commit = checkout
        .commit(
            &CommitSettings {
                author: &author(),
                signer: None,
                time: None,
            },
            "bump over ssh",
        )?
        .ok_or("nothing committed")?;
    let pushed = checkout.push(&PushRequest::default())?;
    ensure(pushed.commit == commit && !pushed.forced, || {
        format!("{pushed:?}")
    })?;
    let remote_main = env.git_out(&fixture.bare, &["rev-parse", "main"])?;
    ensure(remote_main == commit.to_string(), || {
        "the server's main is not the pushed commit".into()
    })
}

fn ssh_rsa_hashed_known_hosts(env: &Env) -> TestResult {
    let fixture = env.fixture("ssh-rsa")?;
    let ssh = env.ssh();
    let file = env.root.join("ssh/known_hosts_hashed");
    fs::write(&file, env.known_hosts())?;
    run(std::process::Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&file))?;
    let hashed = fs::read_to_string(&file)?;
    ensure(hashed.lines().any(|line| line.starts_with("|1|")), || {
        format!("ssh-keygen -H did not hash: {hashed}")
    })?;
    let check = HostKeyCheck::KnownHosts(KnownHosts::parse(&hashed)?);
    let remote = ssh_remote(env, &fixture, &ssh.rsa_key, None, check)?;
    let checkout = Checkout::clone(
        remote,
        &main_ref(),
        &env.work_dir("ssh-rsa"),
        &CloneOptions { depth: None },
    )?;
    ensure(
        env.git_out(checkout.work_dir(), &["rev-list", "--count", "HEAD"])? == "3",
        || "full clone over SSH".into(),
    )
}

/// Sets the image tag, commits, pushes, and checks that the server's `main` is the commit.
fn bump_and_push(
    env: &Env,
    fixture: &Fixture,
    checkout: &mut Checkout,
    tag: &str,
    message: &str,
) -> TestResult {
    set_tag(checkout.work_dir(), tag)?;
    let commit = checkout
        .commit(
            &CommitSettings {
                author: &author(),
                signer: None,
                time: None,
            },
            message,
        )?
        .ok_or("nothing committed")?;
    checkout.push(&PushRequest::default())?;
    let remote_main = env.git_out(&fixture.bare, &["rev-parse", "main"])?;
    ensure(remote_main == commit.to_string(), || {
        "the server's main is not the pushed commit".into()
    })
}

/// A repository that moved on the same server: the advertisement's redirect is followed, and
/// the fetch and the push go where it ended.
fn http_redirect_followed(env: &Env) -> TestResult {
    let fixture = env.fixture("moved")?;
    let url = env.http_url(&fixture).replace("/git/", "/moved/");
    let mut checkout = Checkout::clone(
        Remote::new(&url, http_settings())?,
        &main_ref(),
        &env.work_dir("moved"),
        &CloneOptions::default(),
    )?;
    ensure(
        checkout.checked_out_commit().to_string() == fixture.commits[2],
        || "tip".into(),
    )?;
    bump_and_push(
        env,
        &fixture,
        &mut checkout,
        "1.3.0",
        "bump after a redirect",
    )
}

/// The request heads a fake server received.
type Heads = Arc<Mutex<Vec<String>>>;

/// A server on 127.0.0.1 that answers every request with `answer` and records the requests'
/// heads.
fn answering_server(answer: String) -> Result<(u16, Heads), Failed> {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut head = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                head.push_str(&line);
                line.clear();
            }
            record.lock().unwrap().push(head);
            let _ = (&stream).write_all(answer.as_bytes());
        }
    });
    Ok((port, seen))
}

/// Answers a git client must not take for a repository: a redirect to another server (not
/// followed, and no credentials reach it), a login page, a server error.
fn http_answers_that_are_not_git(env: &Env) -> TestResult {
    let (other_port, other_seen) = answering_server(
        "HTTP/1.1 500 Nope\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
    )?;
    let cases = [
        (
            format!(
                "HTTP/1.1 302 Found\r\nLocation: http://localhost:{other_port}/fleet.git/info/refs?service=git-upload-pack\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
            ErrorKind::Other,
            "redirects to other servers are not followed",
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 6\r\nConnection: close\r\n\r\nlogin!".to_owned(),
            ErrorKind::Other,
            "did not answer as a smart git HTTP server",
        ),
        (
            "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
            ErrorKind::Network,
            "answered 503",
        ),
        (
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
            ErrorKind::Other,
            "404",
        ),
    ];
    for (index, (answer, kind, words)) in cases.into_iter().enumerate() {
        let (port, seen) = answering_server(answer)?;
        let remote = Remote::new(
            &format!("http://127.0.0.1:{port}/fleet.git"),
            http_settings(),
        )?;
        let err = expect_err(
            Checkout::clone(
                remote,
                &main_ref(),
                &env.work_dir(&format!("not-git-{index}")),
                &CloneOptions::default(),
            ),
            words,
        )?;
        let text = match std::error::Error::source(&err) {
            Some(cause) => format!("{err}: {cause}"),
            None => err.to_string(),
        };
        ensure(err.kind() == kind && text.contains(words), || {
            format!("{words}: {:?}: {text}", err.kind())
        })?;
        assert_no_secret(&err)?;
        let heads = seen.lock().unwrap().join("").to_ascii_lowercase();
        ensure(
            heads.contains("get /fleet.git/info/refs?service=git-upload-pack")
                && heads.contains("authorization: basic"),
            || heads.clone(),
        )?;
    }
    ensure(other_seen.lock().unwrap().is_empty(), || {
        "the client followed a redirect to another server".into()
    })
}

/// HTTPS against a server whose certificate a private CA signed: refused as untrusted without
/// the CA (no secret in the error), then cloned and pushed with the CA given as PEM; bad PEM is
/// a configuration error.
fn https_trusts_given_ca_then_push(env: &Env) -> TestResult {
    let fixture = env.fixture("https-ca")?;
    let url = env.https_url(&fixture);
    let err = expect_err(
        Checkout::clone(
            Remote::new(&url, http_settings())?,
            &main_ref(),
            &env.work_dir("https-untrusted"),
            &CloneOptions::default(),
        ),
        "a clone without the CA",
    )?;
    ensure(
        matches!(err, Error::Certificate { .. }) && err.kind() == ErrorKind::Trust,
        || format!("{err:?}"),
    )?;
    assert_no_secret(&err)?;
    let err = expect_err(
        Remote::new(
            &url,
            RemoteSettings {
                ca_certificates: Some(
                    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_owned(),
                ),
                ..http_settings()
            },
        ),
        "a key instead of a certificate",
    )?;
    ensure(err.kind() == ErrorKind::Configuration, || {
        format!("{err:?}")
    })?;
    let settings = RemoteSettings {
        ca_certificates: Some(env.https_ca().to_owned()),
        ..http_settings()
    };
    let remote = Remote::new(&url, settings)?;
    ensure(
        remote.ls_remote("main")?.map(|id| id.to_string()) == Some(fixture.commits[2].clone()),
        || "ls-remote over HTTPS".into(),
    )?;
    let mut checkout = Checkout::clone(
        remote,
        &main_ref(),
        &env.work_dir("https-trusted"),
        &CloneOptions::default(),
    )?;
    bump_and_push(env, &fixture, &mut checkout, "1.2.0", "bump over https")
}

fn extra_header_authenticates(env: &Env) -> TestResult {
    let fixture = env.fixture("extra-header")?;
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{HTTP_USER}:{HTTP_PASSWORD}"));
    // As GitHub's checkout action writes it into http.extraHeader.
    let header = HttpHeader::parse(&format!("AUTHORIZATION: basic {basic}"))?;
    let settings = RemoteSettings {
        http_headers: vec![header],
        ..RemoteSettings::default()
    };
    let remote = Remote::new(&env.http_url(&fixture), settings)?;
    ensure(
        remote.ls_remote("main")?.map(|id| id.to_string()) == Some(fixture.commits[2].clone()),
        || "ls-remote with header".into(),
    )?;
    let checkout = Checkout::clone(
        remote,
        &main_ref(),
        &env.work_dir("extra-header"),
        &CloneOptions::default(),
    )?;
    ensure(
        checkout.checked_out_commit().to_string() == fixture.commits[2],
        || "clone with header".into(),
    )
}

fn local_urls_need_allow_local(env: &Env) -> TestResult {
    let fixture = env.fixture("local")?;
    let file_url = format!("file://{}", fixture.bare.display());
    for url in [file_url.as_str(), &fixture.bare.to_string_lossy()] {
        let err = expect_err(Remote::new(url, RemoteSettings::default()), "local URL")?;
        ensure(matches!(err, Error::LocalRefused { .. }), || {
            format!("{err:?}")
        })?;
    }
    let settings = RemoteSettings {
        allow_local: true,
        ..RemoteSettings::default()
    };
    let checkout = Checkout::clone(
        Remote::new(&file_url, settings)?,
        &main_ref(),
        &env.work_dir("local"),
        &CloneOptions::default(),
    )?;
    ensure(
        checkout.checked_out_commit().to_string() == fixture.commits[2],
        || "local clone".into(),
    )?;
    // The local transport cannot fetch shallow, so a local clone is always full.
    ensure(
        env.git_out(checkout.work_dir(), &["rev-list", "--count", "HEAD"])? == "3",
        || "local clone should be full".into(),
    )
}

// --- commit --------------------------------------------------------------------------------

fn commit_push_checked_by_git(env: &Env) -> TestResult {
    let fixture = env.fixture("commit-push")?;
    let mut checkout = clone_http(env, &fixture, "commit-push")?;
    let dir = checkout.work_dir().to_owned();
    set_tag(&dir, "1.2.3")?;
    fs::write(dir.join("deploy/new.yaml"), "kind: ConfigMap\n")?;
    fs::remove_file(dir.join("README.md"))?;
    let time = Timestamp {
        seconds: 1_700_000_000,
        offset_minutes: 60,
    };
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: Some(time),
    };
    let message = "Update app to 1.2.3\n\nAutomated image update.";
    let commit = checkout
        .commit(&settings, message)?
        .ok_or("nothing committed")?;
    let pushed = checkout.push(&PushRequest::default())?;
    ensure(
        pushed.commit == commit && pushed.branch == "main" && !pushed.forced,
        || format!("{pushed:?}"),
    )?;

    let check = env.cli_clone(&fixture, "commit-push-check")?;
    ensure(
        env.git_out(&check, &["rev-parse", "HEAD"])? == commit.to_string(),
        || "remote main".into(),
    )?;
    let meta = env.git_out(
        &check,
        &["log", "-1", "--format=%an|%ae|%cn|%ce|%at|%ct|%ai|%P"],
    )?;
    let expected = format!(
        "Image Update Bot|bot@example.com|Image Update Bot|bot@example.com|1700000000|1700000000|2023-11-14 23:13:20 +0100|{}",
        fixture.commits[2]
    );
    ensure(meta == expected, || {
        format!("commit metadata {meta}\nexpected {expected}")
    })?;
    ensure(
        env.git_out(&check, &["log", "-1", "--format=%B"])? == message,
        || "message".into(),
    )?;
    let changes = env.git_out(&check, &["show", "--name-status", "--format=", "HEAD"])?;
    ensure(
        changes == "D\tREADME.md\nM\tdeploy/app.yaml\nA\tdeploy/new.yaml",
        || format!("changes:\n{changes}"),
    )?;
    ensure(
        fs::read_to_string(check.join("deploy/app.yaml"))?.contains("app:1.2.3 #"),
        || "content".into(),
    )?;
    run(env.git(&check).args(["fsck", "--strict"]))?;
    Ok(())
}

fn nothing_to_commit(env: &Env) -> TestResult {
    let fixture = env.fixture("unchanged")?;
    let mut checkout = clone_http(env, &fixture, "unchanged")?;
    // Rewriting a file with the same bytes is no change.
    fs::write(
        checkout.work_dir().join("deploy/app.yaml"),
        support::APP_YAML,
    )?;
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: None,
    };
    ensure(checkout.commit(&settings, "noop")?.is_none(), || {
        "committed although nothing changed".into()
    })?;
    let (policy, sleeps) = no_sleep_policy();
    let outcome = push_with_retry(
        &mut checkout,
        &PushRequest::default(),
        &settings,
        &policy,
        |_| Ok::<_, std::io::Error>(Some("unused".to_owned())),
    )
    .map_err(|e| e.to_string())?;
    ensure(outcome == PushOutcome::NothingToCommit, || {
        format!("{outcome:?}")
    })?;
    ensure(sleeps.lock().unwrap().is_empty(), || "slept".into())?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "main"])? == fixture.commits[2],
        || "remote changed".into(),
    )
}

// --- signing -------------------------------------------------------------------------------

fn signed_round(
    env: &Env,
    fixture: &Fixture,
    dir: &str,
    signer: &Signer,
    tag: &str,
) -> Result<(String, std::path::PathBuf), Failed> {
    let mut checkout = clone_http(env, fixture, dir)?;
    set_tag(checkout.work_dir(), tag)?;
    let settings = CommitSettings {
        author: &author(),
        signer: Some(signer),
        time: None,
    };
    let commit = checkout
        .commit(&settings, &format!("Signed update to {tag}"))?
        .ok_or("nothing committed")?;
    checkout.push(&PushRequest::default())?;
    let check = env.cli_clone(fixture, &format!("{dir}-check"))?;
    let raw = env.git_out(&check, &["cat-file", "commit", &commit.to_string()])?;
    ensure(raw.contains("\ngpgsig "), || {
        format!("no gpgsig header:\n{raw}")
    })?;
    // libgit2 leaves a " " continuation line after the armor when the signature ends in a
    // newline; git does not (the blank line inside a PGP armor is a " " line in both).
    let lines: Vec<&str> = raw.lines().collect();
    let end = lines
        .iter()
        .position(|line| line.starts_with(" -----END "))
        .ok_or("no signature end")?;
    ensure(lines.get(end + 1) == Some(&""), || {
        format!("stray continuation line after the signature:\n{raw}")
    })?;
    Ok((commit.to_string(), check))
}

fn openpgp_signed(env: &Env) -> TestResult {
    let gpg = env.gpg();
    let fixture = env.fixture("gpg")?;
    for (index, armored) in [&gpg.ed25519_armored, &gpg.rsa_armored]
        .into_iter()
        .enumerate()
    {
        let signer = Signer::openpgp(
            &Secret::new(armored.as_str()),
            Some(&Secret::new(GPG_PASSPHRASE)),
        )?;
        ensure(!format!("{signer:?}").contains("PRIVATE"), || {
            "Debug shows key material".into()
        })?;
        let (commit, check) = signed_round(
            env,
            &fixture,
            &format!("gpg-{index}"),
            &signer,
            &format!("3.0.{index}"),
        )?;
        let output = env
            .git(&check)
            .env("GNUPGHOME", &gpg.home)
            .args(["verify-commit", "-v", &commit])
            .output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        ensure(
            output.status.success() && stderr.contains("Good signature"),
            || format!("verify-commit: {stderr}"),
        )?;
    }
    let wrong = Signer::openpgp(
        &Secret::new(gpg.rsa_armored.as_str()),
        Some(&Secret::new("not-the-passphrase")),
    );
    let err = expect_err(wrong, "wrong passphrase")?;
    ensure(matches!(err, Error::SigningKey { .. }), || {
        format!("{err:?}")
    })?;
    let err = expect_err(
        Signer::openpgp(&Secret::new("garbage"), None),
        "garbage key",
    )?;
    ensure(matches!(err, Error::SigningKey { .. }), || {
        format!("{err:?}")
    })
}

fn ssh_signed(env: &Env) -> TestResult {
    let ssh = env.ssh();
    let fixture = env.fixture("ssh-sign")?;
    let allowed = env.root.join("ssh/allowed_signers");
    fs::write(
        &allowed,
        format!(
            "bot@example.com {}\nbot@example.com {}\n",
            ssh.ed25519_pub, ssh.rsa_pub
        ),
    )?;
    let keys = [
        (&ssh.ed25519_key, Some(SSH_PASSPHRASE)),
        (&ssh.rsa_key, None),
    ];
    for (index, (key, password)) in keys.into_iter().enumerate() {
        let signer = Signer::ssh(
            &Secret::new(key.as_str()),
            password.map(Secret::new).as_ref(),
        )?;
        let (commit, check) = signed_round(
            env,
            &fixture,
            &format!("ssh-sign-{index}"),
            &signer,
            &format!("4.0.{index}"),
        )?;
        let allowed_config = format!("gpg.ssh.allowedSignersFile={}", allowed.display());
        let output = env
            .git(&check)
            .args(["-c", &allowed_config, "verify-commit", &commit])
            .output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        ensure(
            output.status.success() && stderr.contains("Good \"git\" signature"),
            || format!("verify-commit: {stderr}"),
        )?;
    }
    let err = expect_err(
        Signer::ssh(
            &Secret::new(ssh.ed25519_key.as_str()),
            Some(&Secret::new("wrong")),
        ),
        "wrong password",
    )?;
    ensure(matches!(err, Error::SigningKey { .. }), || {
        format!("{err:?}")
    })?;
    let err = expect_err(
        Signer::ssh(&Secret::new(ssh.ed25519_key.as_str()), None),
        "no password",
    )?;
    ensure(matches!(err, Error::SigningKey { .. }), || {
        format!("{err:?}")
    })
}

// --- push ----------------------------------------------------------------------------------

fn push_branch_created_then_forced(env: &Env) -> TestResult {
    let fixture = env.fixture("push-branch")?;
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: None,
    };
    let request = PushRequest {
        refspecs: vec!["refs/heads/image-updates:refs/heads/review/image-updates".to_owned()],
        ..PushRequest::default()
    };

    let mut checkout = clone_http(env, &fixture, "push-branch-1")?;
    checkout.switch_branch("image-updates")?;
    set_tag(checkout.work_dir(), "5.0.0")?;
    let first = checkout
        .commit(&settings, "to a new branch")?
        .ok_or("nothing committed")?;
    let pushed = checkout.push(&request)?;
    ensure(pushed.forced && pushed.branch == "image-updates", || {
        format!("{pushed:?}")
    })?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "image-updates"])? == first.to_string(),
        || "branch not created".into(),
    )?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "review/image-updates"])? == first.to_string(),
        || "refspec not pushed".into(),
    )?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "main"])? == fixture.commits[2],
        || "main must not move".into(),
    )?;
    ensure(
        checkout.observed_source_revision().to_string()
            == format!("main@sha1:{}", fixture.commits[2]),
        || "observed revision is the checkout commit".into(),
    )?;
    ensure(
        env.git_out(checkout.work_dir(), &["rev-parse", "main"])? == fixture.commits[2],
        || "local main moved".into(),
    )?;

    // Someone rewrites image-updates with unrelated history; the next run overwrites it.
    let other = env.root.join("seed/push-branch-other");
    env.git_out(
        &env.root,
        &[
            "clone",
            "-q",
            &fixture.bare.to_string_lossy(),
            &other.to_string_lossy(),
        ],
    )?;
    env.git_out(
        &other,
        &["checkout", "-q", "-b", "image-updates", &fixture.commits[0]],
    )?;
    fs::write(other.join("other.txt"), "unrelated\n")?;
    env.git_out(&other, &["add", "-A"])?;
    env.git_out(&other, &["commit", "-q", "-m", "unrelated"])?;
    env.git_out(&other, &["push", "-q", "-f", "origin", "image-updates"])?;

    let mut checkout = clone_http(env, &fixture, "push-branch-2")?;
    checkout.switch_branch("image-updates")?;
    set_tag(checkout.work_dir(), "5.0.1")?;
    let second = checkout
        .commit(&settings, "force over other history")?
        .ok_or("nothing committed")?;
    let pushed = checkout.push(&PushRequest::default())?;
    ensure(pushed.forced, || {
        "a different push branch is force-pushed".into()
    })?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "image-updates"])? == second.to_string(),
        || "not forced".into(),
    )?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "image-updates^"])? == fixture.commits[2],
        || "the push branch must start from the checkout commit".into(),
    )?;

    // Without force, the same situation is a race to retry, not an overwrite.
    env.git_out(
        &other,
        &["commit", "-q", "--allow-empty", "-m", "more unrelated"],
    )?;
    env.git_out(&other, &["push", "-q", "-f", "origin", "image-updates"])?;
    let mut checkout = clone_http(env, &fixture, "push-branch-3")?;
    checkout.switch_branch("image-updates")?;
    set_tag(checkout.work_dir(), "5.0.2")?;
    checkout.commit(&settings, "no force")?;
    let err = expect_err(
        checkout.push(&PushRequest {
            force: ForcePush::Never,
            ..PushRequest::default()
        }),
        "non-forced push over other history",
    )?;
    ensure(err.is_retryable(), || format!("{err:?}"))
}

fn push_options_reach_the_hook(env: &Env) -> TestResult {
    let fixture = env.fixture("push-options")?;
    env.git_out(
        &fixture.bare,
        &["config", "receive.advertisePushOptions", "true"],
    )?;
    let record = env.root.join("push-options.txt");
    env.hook(
        &fixture,
        "pre-receive",
        &format!(
            "#!/bin/sh\n{{\n  echo \"count=$GIT_PUSH_OPTION_COUNT\"\n  i=0\n  while [ \"$i\" -lt \"${{GIT_PUSH_OPTION_COUNT:-0}}\" ]; do\n    eval \"echo \\\"\\$GIT_PUSH_OPTION_$i\\\"\"\n    i=$((i + 1))\n  done\n}} > '{}'\n",
            record.display()
        ),
    )?;
    let mut checkout = clone_http(env, &fixture, "push-options")?;
    set_tag(checkout.work_dir(), "6.0.0")?;
    checkout.commit(
        &CommitSettings {
            author: &author(),
            signer: None,
            time: None,
        },
        "with options",
    )?;
    let request = PushRequest {
        options: vec![
            "merge_request.create".to_owned(),
            "merge_request.target=release".to_owned(),
        ],
        ..PushRequest::default()
    };
    checkout.push(&request)?;
    let received = fs::read_to_string(&record)?;
    ensure(
        received == "count=2\nmerge_request.create\nmerge_request.target=release\n",
        || format!("the hook received:\n{received}"),
    )
}

fn declined_by_hook(env: &Env) -> TestResult {
    let fixture = env.fixture("declined")?;
    env.hook(
        &fixture,
        "pre-receive",
        "#!/bin/sh\necho 'policy: automation may not push to main' >&2\nexit 1\n",
    )?;
    let mut checkout = clone_http(env, &fixture, "declined")?;
    set_tag(checkout.work_dir(), "7.0.0")?;
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: None,
    };
    checkout.commit(&settings, "declined")?;
    let (policy, sleeps) = no_sleep_policy();
    let mut reapplied = 0;
    let result = push_with_retry(
        &mut checkout,
        &PushRequest::default(),
        &settings,
        &policy,
        |_| {
            reapplied += 1;
            Ok::<_, std::io::Error>(Some("again".to_owned()))
        },
    );
    let err = match result {
        Err(RetryError::Git(err)) => err,
        other => return Err(format!("expected a git error, got {other:?}").into()),
    };
    assert_no_secret(&err)?;
    let Error::PushRejected {
        reason,
        server_messages,
        ..
    } = &err
    else {
        return Err(format!("expected PushRejected, got {err:?}").into());
    };
    ensure(reason.contains("pre-receive hook declined"), || {
        format!("reason {reason}")
    })?;
    ensure(
        server_messages.contains("policy: automation may not push to main"),
        || format!("messages {server_messages}"),
    )?;
    ensure(
        err.to_string().contains("policy: automation may not push"),
        || format!("display: {err}"),
    )?;
    ensure(
        err.kind() == ErrorKind::Rejected && !err.is_retryable(),
        || "kind".into(),
    )?;
    ensure(reapplied == 0 && sleeps.lock().unwrap().is_empty(), || {
        "a declined push must not be retried".into()
    })?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "main"])? == fixture.commits[2],
        || "remote moved".into(),
    )
}

// --- races ---------------------------------------------------------------------------------

fn race_reapplied(env: &Env) -> TestResult {
    let fixture = env.fixture("race")?;
    let mut checkout = clone_http(env, &fixture, "race")?;
    set_tag(checkout.work_dir(), "2.0.0")?;
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: None,
    };
    checkout.commit(&settings, "Update app to 2.0.0")?;
    // Someone pushes between our clone and our push.
    let competing = env.cli_push_change(
        &fixture,
        "race-cli",
        "README.md",
        "# app\n\nEdited by a person.\n",
        "competing",
    )?;
    let (policy, sleeps) = no_sleep_policy();
    let mut reapplied = Vec::new();
    let outcome = push_with_retry(
        &mut checkout,
        &PushRequest::default(),
        &settings,
        &policy,
        |dir| {
            reapplied.push(fs::read_to_string(dir.join("README.md"))?);
            Ok::<_, std::io::Error>(
                set_tag(dir, "2.0.0")?.then(|| "Update app to 2.0.0 (again)".to_owned()),
            )
        },
    )
    .map_err(|e| e.to_string())?;
    let PushOutcome::Pushed { commit, attempts } = outcome else {
        return Err(format!("expected Pushed, got {outcome:?}").into());
    };
    ensure(attempts == 2, || format!("attempts {attempts}"))?;
    ensure(reapplied == ["# app\n\nEdited by a person.\n"], || {
        format!("reapply saw {reapplied:?}")
    })?;
    let waits = sleeps.lock().unwrap().clone();
    ensure(
        waits.len() == 1
            && waits[0] >= Duration::from_millis(250)
            && waits[0] <= Duration::from_millis(500),
        || format!("waits {waits:?}"),
    )?;
    let check = env.cli_clone(&fixture, "race-check")?;
    let log = env.git_out(&check, &["log", "--format=%H %s"])?;
    let lines: Vec<&str> = log.lines().collect();
    ensure(lines.len() == 5, || format!("history:\n{log}"))?;
    ensure(
        lines[0] == format!("{commit} Update app to 2.0.0 (again)"),
        || format!("history:\n{log}"),
    )?;
    ensure(lines[1] == format!("{competing} competing"), || {
        format!("history:\n{log}")
    })?;
    ensure(
        fs::read_to_string(check.join("deploy/app.yaml"))?.contains("app:2.0.0"),
        || "our change lost".into(),
    )?;
    ensure(
        fs::read_to_string(check.join("README.md"))?.contains("Edited by a person"),
        || "their change lost".into(),
    )?;
    ensure(
        checkout.checked_out_commit().to_string() == competing,
        || "checked-out commit is the new base".into(),
    )
}

fn race_nothing_left(env: &Env) -> TestResult {
    let fixture = env.fixture("race-same")?;
    let mut checkout = clone_http(env, &fixture, "race-same")?;
    set_tag(checkout.work_dir(), "2.1.0")?;
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: None,
    };
    checkout.commit(&settings, "Update app to 2.1.0")?;
    let theirs = support::APP_YAML.replace("app:1.0.0", "app:2.1.0");
    let competing = env.cli_push_change(
        &fixture,
        "race-same-cli",
        "deploy/app.yaml",
        &theirs,
        "same change by someone else",
    )?;
    let (policy, _) = no_sleep_policy();
    let outcome = push_with_retry(
        &mut checkout,
        &PushRequest::default(),
        &settings,
        &policy,
        |dir| Ok::<_, std::io::Error>(set_tag(dir, "2.1.0")?.then(|| "unused".to_owned())),
    )
    .map_err(|e| e.to_string())?;
    ensure(
        outcome
            == PushOutcome::NothingToDo {
                tip: competing
                    .parse::<image_update_git::Oid>()
                    .map_err(|e| e.to_string())?,
                attempts: 1,
            },
        || format!("{outcome:?}"),
    )?;
    ensure(
        env.git_out(&fixture.bare, &["rev-parse", "main"])? == competing,
        || "remote changed".into(),
    )
}

fn race_gives_up(env: &Env) -> TestResult {
    let fixture = env.fixture("race-lost")?;
    let mut checkout = clone_http(env, &fixture, "race-lost")?;
    set_tag(checkout.work_dir(), "2.2.0")?;
    let settings = CommitSettings {
        author: &author(),
        signer: None,
        time: None,
    };
    checkout.commit(&settings, "Update app to 2.2.0")?;
    env.cli_push_change(
        &fixture,
        "race-lost-cli",
        "README.md",
        "one\n",
        "competing 1",
    )?;
    let (mut policy, sleeps) = no_sleep_policy();
    policy.attempts = 3;
    let mut round = 1;
    let result = push_with_retry(
        &mut checkout,
        &PushRequest::default(),
        &settings,
        &policy,
        |dir| {
            // Every re-apply is overtaken by yet another push.
            round += 1;
            env.cli_push_change(
                &fixture,
                "race-lost-cli",
                "README.md",
                &format!("{round}\n"),
                &format!("competing {round}"),
            )
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
            Ok::<_, std::io::Error>(set_tag(dir, "2.2.0")?.then(|| "again".to_owned()))
        },
    );
    let err = match result {
        Err(RetryError::Git(err)) => err,
        other => return Err(format!("expected GaveUp, got {other:?}").into()),
    };
    let Error::GaveUp { attempts, last } = &err else {
        return Err(format!("expected GaveUp, got {err:?}").into());
    };
    ensure(*attempts == 3 && last.is_retryable(), || format!("{err:?}"))?;
    ensure(err.kind() == ErrorKind::GaveUp, || "kind".into())?;
    let waits = sleeps.lock().unwrap().clone();
    ensure(
        waits.len() == 2
            && waits[1] >= Duration::from_millis(500)
            && waits[1] <= Duration::from_millis(1000),
        || format!("exponential backoff expected: {waits:?}"),
    )
}

// --- authentication and trust --------------------------------------------------------------

fn wrong_password(env: &Env) -> TestResult {
    let fixture = env.fixture("wrong-password")?;
    let url = env.http_url(&fixture);
    let cases = [
        (
            "wrong password",
            Auth::Basic {
                username: HTTP_USER.to_owned(),
                password: Secret::new(format!("{HTTP_PASSWORD}-but-wrong")),
            },
        ),
        ("no credentials", Auth::None),
        (
            "bearer token",
            Auth::Bearer {
                token: Secret::new(TOKEN),
            },
        ),
    ];
    for (index, (what, auth)) in cases.into_iter().enumerate() {
        let remote = Remote::new(
            &url,
            RemoteSettings {
                auth,
                ..RemoteSettings::default()
            },
        )?;
        let started = Instant::now();
        let err = expect_err(
            Checkout::clone(
                remote.clone(),
                &main_ref(),
                &env.work_dir(&format!("wrong-password-{index}")),
                &CloneOptions::default(),
            ),
            what,
        )?;
        ensure(started.elapsed() < Duration::from_secs(10), || {
            format!("{what}: took {:?}", started.elapsed())
        })?;
        ensure(err.kind() == ErrorKind::Authentication, || {
            format!("{what}: {err:?}")
        })?;
        let text = err.to_string();
        ensure(
            text.starts_with(&format!("authentication failed for {url}")),
            || format!("{what}: {text}"),
        )?;
        ensure(!text.contains("-but-wrong"), || {
            format!("{what}: password in {text}")
        })?;
        let err = expect_err(remote.ls_remote("main"), what)?;
        ensure(err.kind() == ErrorKind::Authentication, || {
            format!("{what} (ls-remote): {err:?}")
        })?;
    }
    Ok(())
}

fn wrong_ssh_key(env: &Env) -> TestResult {
    let fixture = env.fixture("wrong-key")?;
    let ssh = env.ssh();
    let started = Instant::now();
    let remote = ssh_remote(env, &fixture, &ssh.stranger_key, None, known(env)?)?;
    let err = expect_err(
        Checkout::clone(
            remote,
            &main_ref(),
            &env.work_dir("wrong-key"),
            &CloneOptions::default(),
        ),
        "stranger key",
    )?;
    ensure(started.elapsed() < Duration::from_secs(10), || {
        format!("took {:?}", started.elapsed())
    })?;
    ensure(err.kind() == ErrorKind::Authentication, || {
        format!("{err:?}")
    })?;
    ensure(
        err.to_string().contains("authentication failed for ssh://"),
        || err.to_string(),
    )?;
    let remote = ssh_remote(
        env,
        &fixture,
        &ssh.ed25519_key,
        Some("wrong passphrase"),
        known(env)?,
    )?;
    let err = expect_err(
        Checkout::clone(
            remote,
            &main_ref(),
            &env.work_dir("wrong-key-2"),
            &CloneOptions::default(),
        ),
        "wrong passphrase",
    )?;
    ensure(err.kind() == ErrorKind::Authentication, || {
        format!("{err:?}")
    })
}

fn host_key_checks(env: &Env) -> TestResult {
    let fixture = env.fixture("host-keys")?;
    let ssh = env.ssh();
    let port = ssh.port;
    let cases = [
        (
            "default (empty known_hosts)",
            HostKeyCheck::default(),
            HostKeyProblem::UnknownHost,
        ),
        (
            "entry without the port",
            HostKeyCheck::KnownHosts(KnownHosts::parse(&format!("127.0.0.1 {}\n", ssh.host_key))?),
            HostKeyProblem::UnknownHost,
        ),
        (
            "another key for the host",
            HostKeyCheck::KnownHosts(KnownHosts::parse(&format!(
                "[127.0.0.1]:{port} {}\n",
                ssh.stranger_pub
            ))?),
            HostKeyProblem::Mismatch {
                known_types: vec!["ssh-ed25519".to_owned()],
            },
        ),
    ];
    for (index, (what, check, expected)) in cases.into_iter().enumerate() {
        let remote = ssh_remote(env, &fixture, &ssh.ed25519_key, Some(SSH_PASSPHRASE), check)?;
        let err = expect_err(
            Checkout::clone(
                remote,
                &main_ref(),
                &env.work_dir(&format!("host-keys-{index}")),
                &CloneOptions::default(),
            ),
            what,
        )?;
        let Error::HostKey { problem, key, .. } = &err else {
            return Err(format!("{what}: expected HostKey, got {err:?}").into());
        };
        ensure(*problem == expected, || format!("{what}: {problem:?}"))?;
        let key = key.as_ref().ok_or("no presented key")?;
        ensure(
            key.fingerprint == ssh.host_fingerprint && key.key_type == "ssh-ed25519",
            || format!("{what}: {key:?}"),
        )?;
        ensure(
            err.kind() == ErrorKind::Trust && err.to_string().contains(&ssh.host_fingerprint),
            || err.to_string(),
        )?;
    }
    let remote = ssh_remote(
        env,
        &fixture,
        &ssh.ed25519_key,
        Some(SSH_PASSPHRASE),
        HostKeyCheck::AcceptAny,
    )?;
    Checkout::clone(
        remote,
        &main_ref(),
        &env.work_dir("host-keys-any"),
        &CloneOptions::default(),
    )?;
    Ok(())
}

fn ls_remote(env: &Env) -> TestResult {
    let fixture = env.fixture("ls-remote")?;
    let remote = http_remote(env, &fixture)?;
    let tip = Some(fixture.commits[2].clone());
    let show = |id: Option<image_update_git::Oid>| id.map(|id| id.to_string());
    ensure(show(remote.ls_remote("main")?) == tip, || "main".into())?;
    ensure(show(remote.ls_remote("refs/heads/main")?) == tip, || {
        "refs/heads/main".into()
    })?;
    ensure(show(remote.ls_remote("HEAD")?) == tip, || "HEAD".into())?;
    ensure(
        show(remote.ls_remote("v1.0.0")?) == Some(fixture.commits[1].clone()),
        || "tag not peeled".into(),
    )?;
    ensure(remote.ls_remote("refs/heads/nope")?.is_none(), || {
        "missing ref".into()
    })?;
    let revision = remote.resolve(&CheckoutRef::DefaultBranch)?.to_string();
    ensure(
        revision == format!("main@sha1:{}", fixture.commits[2]),
        || revision.clone(),
    )?;
    let revision = remote
        .resolve(&CheckoutRef::Tag("v1.0.0".to_owned()))?
        .to_string();
    ensure(
        revision == format!("v1.0.0@sha1:{}", fixture.commits[1]),
        || revision.clone(),
    )?;
    let err = expect_err(
        remote.resolve(&CheckoutRef::Branch("nope".to_owned())),
        "missing branch",
    )?;
    ensure(matches!(err, Error::RefNotFound { .. }), || {
        format!("{err:?}")
    })?;
    // The Job's short-circuit: the remote tip equals what a clone observes, until someone pushes.
    let checkout = clone_http(env, &fixture, "ls-remote")?;
    ensure(
        remote.resolve(&main_ref())? == checkout.observed_source_revision(),
        || "short-circuit".into(),
    )?;
    let pushed = env.cli_push_change(&fixture, "ls-remote-cli", "README.md", "moved\n", "moved")?;
    ensure(show(remote.ls_remote("main")?) == Some(pushed), || {
        "ls-remote after a push".into()
    })?;

    let ssh = env.ssh();
    let remote = ssh_remote(
        env,
        &fixture,
        &ssh.ed25519_key,
        Some(SSH_PASSPHRASE),
        known(env)?,
    )?;
    let listed = remote.list()?;
    let head = listed
        .iter()
        .find(|r| r.name == "HEAD")
        .ok_or("no HEAD over SSH")?;
    ensure(
        head.id.to_string() == env.git_out(&fixture.bare, &["rev-parse", "main"])?,
        || "HEAD over SSH".into(),
    )
}
