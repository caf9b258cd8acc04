//! Integration tests of the registry client.
//!
//! * `real_*`: happy paths against Debian's `docker-registry` (distribution
//!   2.8) started on a free 127.0.0.1 port. Skipped with a message when the
//!   binary is missing, failed when `CI` is set.
//! * `fake_*`: faults injected by an in-process HTTP server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_testkit::registry as harness;
use image_update_testkit::{self as testkit, trial};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::{
    Auth, FakeServer, ImageSpec, Registry, Reply, TokenPolicy, TokenServer, basic, many_tags,
    sha256,
};
use image_update_registry::{
    ClientSettings, Credential, CredentialStore, Error, HostConfig, Platform, RegistryClient,
    Repository, RetryPolicy, Secret,
};

fn fast_settings() -> ClientSettings {
    ClientSettings {
        retry: RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(40),
            max_retry_after: Duration::from_secs(5),
        },
        ..ClientSettings::default()
    }
}

type Listing = Result<Vec<String>, Error>;

/// List `repos` from `threads` threads at once, results in order (what the
/// reflector does with its worker pool).
fn list_all(c: &RegistryClient, repos: &[Repository], threads: usize) -> Vec<Listing> {
    c.announce_listings(repos.len());
    let next = AtomicUsize::new(0);
    let slots: std::sync::Mutex<Vec<Option<Listing>>> =
        std::sync::Mutex::new(repos.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(r) = repos.get(i) else { break };
                    let result = c.list_tags(r);
                    slots.lock().unwrap()[i] = Some(result);
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

fn client(settings: ClientSettings) -> RegistryClient {
    RegistryClient::new(settings).unwrap()
}

fn repo(authority: &str, path: &str) -> Repository {
    Repository::parse(&format!("{authority}/{path}")).unwrap()
}

fn platform(s: &str) -> Platform {
    s.parse().unwrap()
}

fn with_creds(mut settings: ClientSettings, host: &str, user: &str, pass: &str) -> ClientSettings {
    settings.credentials = CredentialStore::anonymous().with_credential(
        host,
        Credential::Basic {
            username: user.to_owned(),
            password: Secret::new(pass),
        },
    );
    settings
}

// ---------------------------------------------------------------------------
// Real registry

fn real_anonymous_tags_digests_created() {
    let reg = Registry::start(Auth::Anonymous);
    let (oci, oci_digest) = reg.push_image(
        "team/app",
        "v1.0.0",
        &ImageSpec::new("linux", "amd64", None, "2024-03-01T10:00:00.5Z"),
    );
    let (_, docker_digest) = reg.push_image(
        "team/app",
        "v1.1.0",
        &ImageSpec::new("linux", "amd64", None, "2024-04-01T10:00:00Z").docker(),
    );
    reg.put_manifest(
        "team/app",
        "sha256-abc.sig",
        "application/vnd.oci.image.manifest.v1+json",
        &oci,
    );
    let (_, nocreated) = reg.push_image(
        "team/app",
        "nocreated",
        &ImageSpec::new("linux", "amd64", None, "x").without_created(),
    );

    let c = client(fast_settings());
    let r = repo(&reg.authority(), "team/app");
    let mut tags = c.list_tags(&r).unwrap();
    tags.sort();
    assert_eq!(tags, vec!["nocreated", "v1.0.0", "v1.1.0"]);
    let mut raw = c.fetch_tags(&r).unwrap();
    raw.sort();
    assert_eq!(raw.len(), 4, "fetch_tags does not apply the exclusion list");

    assert_eq!(c.digest(&r, "v1.0.0", None).unwrap(), oci_digest);
    assert_eq!(c.digest(&r, "v1.1.0", None).unwrap(), docker_digest);
    assert_eq!(c.digest(&r, "nocreated", None).unwrap(), nocreated);
    assert_eq!(
        c.digest(&r, "v1.0.0", Some(&platform("linux/amd64")))
            .unwrap(),
        oci_digest
    );
    assert!(matches!(
        c.digest(&r, "v1.0.0", Some(&platform("linux/arm64"))),
        Err(Error::PlatformNotFound { .. })
    ));

    assert_eq!(
        c.created(&r, "v1.0.0", None).unwrap().unwrap().to_string(),
        "2024-03-01T10:00:00.5Z"
    );
    assert_eq!(
        c.created(&r, "v1.1.0", None).unwrap().unwrap().to_string(),
        "2024-04-01T10:00:00Z"
    );
    assert_eq!(c.created(&r, "nocreated", None).unwrap(), None);

    let m = c.manifest(&r, &oci_digest).unwrap();
    assert_eq!(m.bytes, oci);
    assert_eq!(m.media_type, "application/vnd.oci.image.manifest.v1+json");

    let missing = c.digest(&r, "v9.9.9", None).unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let err = c.list_tags(&repo(&reg.authority(), "no/such")).unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("no/such") && text.contains("404") && text.contains("NAME_UNKNOWN"),
        "{text}"
    );
}

fn real_multi_arch_index() {
    let reg = Registry::start(Auth::Anonymous);
    let images = [
        ImageSpec::new("linux", "arm", Some("v7"), "2024-01-01T00:00:07Z"),
        ImageSpec::new("linux", "arm64", Some("v8"), "2024-01-01T00:00:08Z"),
        ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:01Z"),
    ];
    let (index_digest, children) = reg.push_index("multi", "v2.0.0", &images, true);
    let child = |p: &str| children.iter().find(|(k, _)| k == p).unwrap().1.clone();
    let c = client(fast_settings());
    let r = repo(&reg.authority(), "multi");
    assert_eq!(
        c.digest(&r, "v2.0.0", None).unwrap(),
        index_digest,
        "index digest, like Flux"
    );
    assert_eq!(
        c.digest(&r, "v2.0.0", Some(&platform("linux/amd64")))
            .unwrap(),
        child("linux/amd64")
    );
    assert_eq!(
        c.digest(&r, "v2.0.0", Some(&platform("linux/arm64")))
            .unwrap(),
        child("linux/arm64/v8")
    );
    assert_eq!(
        c.digest(&r, "v2.0.0", Some(&platform("linux/arm64/v8")))
            .unwrap(),
        child("linux/arm64/v8")
    );
    assert_eq!(
        c.digest(&r, "v2.0.0", Some(&platform("linux/arm/v7")))
            .unwrap(),
        child("linux/arm/v7")
    );
    assert!(matches!(
        c.digest(&r, "v2.0.0", Some(&platform("linux/arm/v6"))),
        Err(Error::PlatformNotFound { .. })
    ));
    assert_eq!(
        c.created(&r, "v2.0.0", None).unwrap().unwrap().to_string(),
        "2024-01-01T00:00:01Z",
        "no platform: linux/amd64"
    );
    assert_eq!(
        c.created(&r, "v2.0.0", Some(&platform("linux/arm/v7")))
            .unwrap()
            .unwrap()
            .to_string(),
        "2024-01-01T00:00:07Z"
    );
    let m = c.manifest(&r, "v2.0.0").unwrap();
    assert_eq!(m.media_type, "application/vnd.oci.image.index.v1+json");
    assert_eq!(m.digest, index_digest);
}

fn real_docker_manifest_list() {
    let reg = Registry::start(Auth::Anonymous);
    let images = [
        ImageSpec::new("linux", "amd64", None, "2023-06-01T00:00:00Z").docker(),
        ImageSpec::new("linux", "arm64", Some("v8"), "2023-06-02T00:00:00Z").docker(),
    ];
    let (list_digest, children) = reg.push_list(
        "dlist",
        "1.0",
        &images,
        false,
        "application/vnd.docker.distribution.manifest.list.v2+json",
    );
    let c = client(fast_settings());
    let r = repo(&reg.authority(), "dlist");
    assert_eq!(c.digest(&r, "1.0", None).unwrap(), list_digest);
    assert_eq!(
        c.digest(&r, "1.0", Some(&platform("linux/arm64"))).unwrap(),
        children[1].1
    );
    assert_eq!(
        c.created(&r, "1.0", Some(&platform("linux/arm64/v8")))
            .unwrap()
            .unwrap()
            .to_string(),
        "2023-06-02T00:00:00Z"
    );
    assert_eq!(
        c.manifest(&r, "1.0").unwrap().media_type,
        "application/vnd.docker.distribution.manifest.list.v2+json"
    );
}

fn real_tls_with_ca_file() {
    let ca = harness::TestCa::new();
    let reg = Registry::start_with(
        Auth::Htpasswd {
            user: "tls".to_owned(),
            password: "over-https".to_owned(),
        },
        Some(&ca),
    );
    reg.push_image(
        "secure/app",
        "v1",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    fs_err::write(&ca_file, &ca.ca_pem).unwrap();
    let r = repo(&reg.authority(), "secure/app");

    // A loopback host marked secure: HTTPS, trusting the CA file on top of the bundled roots.
    let mut settings = with_creds(fast_settings(), &reg.authority(), "tls", "over-https");
    settings.set_host(
        &reg.authority(),
        HostConfig {
            insecure: Some(false),
            ca_file: Some(ca_file.clone()),
            ..HostConfig::default()
        },
    );
    assert_eq!(client(settings).list_tags(&r).unwrap(), vec!["v1"]);

    // Without the CA the certificate is rejected.
    let mut settings = with_creds(fast_settings(), &reg.authority(), "tls", "over-https");
    settings.retry.max_retries = 0;
    settings.set_host(
        &reg.authority(),
        HostConfig {
            insecure: Some(false),
            ..HostConfig::default()
        },
    );
    let err = client(settings).list_tags(&r).unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");

    // The system trust store counts too: the CA given only through
    // `SSL_CERT_FILE` (a process-wide setting, hence a subprocess) is trusted
    // without a `ca_file`.
    let settings_file = dir.path().join("registries.yaml");
    fs_err::write(
        &settings_file,
        format!(
            "registries:\n  {}:\n    insecure: false\nretry:\n  max_retries: 0\n",
            reg.authority()
        ),
    )
    .unwrap();
    let host_var: String = reg
        .authority()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let empty_dir = tempfile::tempdir().unwrap();
    let policy = |cert_file: &std::path::Path| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .env(CHILD_LIST, format!("{}/secure/app", reg.authority()))
            .env(CHILD_SETTINGS, &settings_file)
            .env("SSL_CERT_FILE", cert_file)
            .env("SSL_CERT_DIR", empty_dir.path())
            .env(format!("IMAGE_UPDATE_REGISTRY_{host_var}_USERNAME"), "tls")
            .env(
                format!("IMAGE_UPDATE_REGISTRY_{host_var}_PASSWORD"),
                "over-https",
            )
            .output()
            .unwrap()
    };
    let out = policy(&ca_file);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("v1"));
    let out = policy(&empty_dir.path().join("none.pem"));
    assert_eq!(
        out.status.code(),
        Some(1),
        "without the system CA the certificate is rejected"
    );

    // A CA file without certificates is a settings error.
    let empty = dir.path().join("empty.pem");
    fs_err::write(&empty, "not a certificate").unwrap();
    let mut settings = fast_settings();
    settings.set_host(
        &reg.authority(),
        HostConfig {
            insecure: Some(false),
            ca_file: Some(empty),
            ..HostConfig::default()
        },
    );
    let err = client(settings).list_tags(&r).unwrap_err();
    assert!(matches!(err, Error::Settings { .. }), "{err}");
}

fn real_thousands_of_tags_and_sig_exclusion() {
    let reg = Registry::start(Auth::Anonymous);
    let (manifest, _) = reg.push_image(
        "big",
        "seed",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let mut tags = many_tags(2500);
    tags.extend((0..50).map(|i| format!("sha256-{i:064x}.sig")));
    reg.push_tags(
        "big",
        "application/vnd.oci.image.manifest.v1+json",
        &manifest,
        &tags,
    );
    let mut settings = fast_settings();
    settings.set_host(
        &reg.authority(),
        HostConfig {
            page_size: Some(100),
            ..HostConfig::default()
        },
    );
    let c = client(settings);
    let listed = c.list_tags(&repo(&reg.authority(), "big")).unwrap();
    assert_eq!(
        listed.len(),
        2501,
        "2500 tags plus the seed, signatures excluded"
    );
    assert!(listed.iter().all(|t| !t.ends_with(".sig")));
    let mut want = many_tags(2500);
    want.push("seed".to_owned());
    want.sort();
    let mut got = listed;
    got.sort();
    assert_eq!(got, want);
}

fn real_htpasswd_basic_auth() {
    let reg = Registry::start(Auth::Htpasswd {
        user: "alice".to_owned(),
        password: "wonderland".to_owned(),
    });
    let (_, digest) = reg.push_image(
        "private/app",
        "v1",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let r = repo(&reg.authority(), "private/app");

    let c = client(with_creds(
        fast_settings(),
        &reg.authority(),
        "alice",
        "wonderland",
    ));
    assert_eq!(c.list_tags(&r).unwrap(), vec!["v1"]);
    assert_eq!(c.digest(&r, "v1", None).unwrap(), digest);
    assert!(c.created(&r, "v1", None).unwrap().is_some());

    let anon = client(fast_settings()).list_tags(&r).unwrap_err();
    assert_eq!(anon.status(), Some(401), "{anon}");

    let wrong = client(with_creds(
        fast_settings(),
        &reg.authority(),
        "alice",
        "not-the-password",
    ));
    let err = wrong.list_tags(&r).unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert!(!format!("{err} {err:?}").contains("not-the-password"));
}

fn real_docker_config_credentials() {
    let reg = Registry::start(Auth::Htpasswd {
        user: "bob".to_owned(),
        password: "builder".to_owned(),
    });
    reg.push_image(
        "cfg/app",
        "v1",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("config.json"),
        format!(
            r#"{{"auths": {{"http://{}": {{"auth": "{}"}}}}}}"#,
            reg.authority(),
            basic("bob", "builder").trim_start_matches("Basic ")
        ),
    )
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials =
        CredentialStore::from_vars([("DOCKER_CONFIG", dir.path().to_str().unwrap())]);
    let c = client(settings);
    assert_eq!(
        c.list_tags(&repo(&reg.authority(), "cfg/app")).unwrap(),
        vec!["v1"]
    );
}

fn token_registry(policy: TokenPolicy) -> (TokenServer, Registry) {
    let ts = TokenServer::start(policy);
    let realm = ts.server.url("/token");
    let reg = Registry::start(Auth::Token(Arc::clone(&ts.issuer), realm));
    (ts, reg)
}

fn real_token_auth_with_basic_credentials() {
    let (ts, reg) = token_registry(TokenPolicy {
        user: Some(("carol".to_owned(), "s3cret-pw".to_owned())),
        refresh_token: None,
        anonymous_pull: false,
        access_token_field: false,
    });
    let (_, d1) = reg.push_image(
        "tok/one",
        "v1",
        &ImageSpec::new("linux", "amd64", None, "2024-05-05T05:05:05Z"),
    );
    reg.push_image(
        "tok/two",
        "v2",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );

    let c = client(with_creds(
        fast_settings(),
        &reg.authority(),
        "carol",
        "s3cret-pw",
    ));
    let one = repo(&reg.authority(), "tok/one");
    assert_eq!(c.list_tags(&one).unwrap(), vec!["v1"]);
    assert_eq!(c.digest(&one, "v1", None).unwrap(), d1);
    assert_eq!(
        c.created(&one, "v1", None).unwrap().unwrap().to_string(),
        "2024-05-05T05:05:05Z"
    );
    assert_eq!(
        c.token_requests(),
        1,
        "one token per scope, cached for the run"
    );
    assert_eq!(
        c.list_tags(&repo(&reg.authority(), "tok/two")).unwrap(),
        vec!["v2"]
    );
    assert_eq!(c.token_requests(), 2);
    assert_eq!(ts.token_requests(), 2);
    let token_req = &ts.server.requests()[0];
    assert_eq!(
        token_req.query_value("service").as_deref(),
        Some("image-update-test")
    );
    assert_eq!(
        token_req.query_value("scope").as_deref(),
        Some("repository:tok/one:pull")
    );
    assert_eq!(token_req.query_value("account").as_deref(), Some("carol"));
    assert_eq!(
        token_req.header("authorization"),
        Some(basic("carol", "s3cret-pw").as_str())
    );

    // Anonymous: the token service refuses.
    let err = client(fast_settings()).list_tags(&one).unwrap_err();
    assert!(matches!(err, Error::Auth { .. }), "{err}");
    // Wrong password: refused, and the password is not in the message.
    let err = client(with_creds(
        fast_settings(),
        &reg.authority(),
        "carol",
        "wrong-pw",
    ))
    .list_tags(&one)
    .unwrap_err();
    assert!(matches!(err, Error::Auth { .. }), "{err}");
    assert!(!format!("{err} {err:?}").contains("wrong-pw"));
}

fn real_token_auth_with_identity_token() {
    let (ts, reg) = token_registry(TokenPolicy {
        user: None,
        refresh_token: Some("refresh-me".to_owned()),
        anonymous_pull: false,
        access_token_field: true,
    });
    reg.push_image(
        "idt/app",
        "v3",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let mut settings = fast_settings();
    settings.credentials = CredentialStore::anonymous().with_credential(
        &reg.authority(),
        Credential::IdentityToken {
            username: None,
            token: Secret::new("refresh-me"),
        },
    );
    let c = client(settings);
    assert_eq!(
        c.list_tags(&repo(&reg.authority(), "idt/app")).unwrap(),
        vec!["v3"]
    );
    let posts = ts.server.count(|r| r.method == "POST");
    assert_eq!(posts, 1, "refresh-token grant uses POST");
}

fn real_token_anonymous_pull() {
    let (_ts, reg) = token_registry(TokenPolicy {
        user: None,
        refresh_token: None,
        anonymous_pull: true,
        access_token_field: false,
    });
    reg.push_image(
        "pub/app",
        "v1",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let c = client(fast_settings());
    assert_eq!(
        c.list_tags(&repo(&reg.authority(), "pub/app")).unwrap(),
        vec!["v1"]
    );
}

fn real_listing_many_repositories() {
    let reg = Registry::start(Auth::Anonymous);
    let names: Vec<String> = (0..6).map(|i| format!("many/r{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        reg.push_image(
            n,
            &format!("v{i}"),
            &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
        );
    }
    let mut repos: Vec<Repository> = names.iter().map(|n| repo(&reg.authority(), n)).collect();
    repos.insert(3, repo(&reg.authority(), "many/missing"));
    let c = client(fast_settings());
    let results = list_all(&c, &repos, 2);
    assert_eq!(results.len(), 7);
    assert!(results[3].as_ref().unwrap_err().is_not_found());
    let ok: Vec<Vec<String>> = results
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, r)| r.unwrap())
        .collect();
    let want: Vec<Vec<String>> = (0..6).map(|i| vec![format!("v{i}")]).collect();
    assert_eq!(ok, want);
}

fn real_tag_cache() {
    let reg = Registry::start(Auth::Anonymous);
    let (m, _) = reg.push_image(
        "cached",
        "v1",
        &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut settings = fast_settings();
    settings.cache_dir = Some(dir.path().to_owned());
    settings.cache_ttl = Duration::from_secs(600);
    let r = repo(&reg.authority(), "cached");
    assert_eq!(client(settings.clone()).list_tags(&r).unwrap(), vec!["v1"]);
    reg.put_manifest(
        "cached",
        "v2",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    // Fresh cache: the new tag is not seen.
    assert_eq!(client(settings.clone()).list_tags(&r).unwrap(), vec!["v1"]);
    // Corrupt cache: ignored, refetched, rewritten.
    let files: Vec<_> = fs_err::read_dir(dir.path().join("tags"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    fs_err::write(&files[0], b"\0garbage").unwrap();
    let mut tags = client(settings.clone()).list_tags(&r).unwrap();
    tags.sort();
    assert_eq!(tags, vec!["v1", "v2"]);
    // Expired cache: refetched.
    reg.put_manifest(
        "cached",
        "v3",
        "application/vnd.oci.image.manifest.v1+json",
        &m,
    );
    settings.cache_ttl = Duration::ZERO;
    assert_eq!(client(settings).list_tags(&r).unwrap().len(), 3);
}

// ---------------------------------------------------------------------------
// Fake server: faults

fn tags_json(tags: &[&str]) -> String {
    serde_json::json!({"name": "r", "tags": tags}).to_string()
}

fn fake_link_pagination_relative_absolute_with_ports() {
    let port = Arc::new(AtomicUsize::new(0));
    let p = Arc::clone(&port);
    let server = FakeServer::start(move |req| {
        let port = p.load(Ordering::SeqCst);
        match (req.path(), req.query_value("last").as_deref()) {
            ("/v2/", _) => Reply::json(200, "{}"),
            ("/v2/org/r/tags/list", None) => Reply::json(200, tags_json(&["a", "b"]))
                .with_header("Link", r#"</v2/org/r/tags/list?n=2&last=b>; rel="next""#),
            ("/v2/org/r/tags/list", Some("b")) => Reply::json(200, tags_json(&["c", "d"]))
                .with_header(
                    "Link",
                    &format!(
                        r#"<http://127.0.0.1:{port}/v2/org/r/tags/list?n=2&last=d>; rel="next""#
                    ),
                ),
            ("/v2/org/r/tags/list", Some("d")) => Reply::json(200, tags_json(&["e", "x.sig"]))
                .with_header("Link", r#"<list?n=2&last=f>; rel="next""#),
            ("/v2/org/r/tags/list", Some("f")) => Reply::json(200, r#"{"name":"r","tags":null}"#),
            _ => Reply::status(404),
        }
    });
    port.store(server.addr.port() as usize, Ordering::SeqCst);
    let mut settings = fast_settings();
    settings.set_host(
        &server.authority(),
        HostConfig {
            page_size: Some(2),
            ..HostConfig::default()
        },
    );
    let c = client(settings);
    let tags = c.list_tags(&repo(&server.authority(), "org/r")).unwrap();
    assert_eq!(tags, vec!["a", "b", "c", "d", "e"]);
    let first = server
        .requests()
        .into_iter()
        .find(|r| r.path().ends_with("/tags/list"))
        .unwrap();
    assert_eq!(first.query_value("n").as_deref(), Some("2"));
    assert_eq!(server.count(|r| r.path().ends_with("/tags/list")), 4);
}

/// A tag is written into the tree: a registry listing text that is no tag (a line break that
/// would add YAML, a quote, a path, a name too long) has it left out, not chosen.
fn fake_invalid_tags_are_left_out() {
    let long = "a".repeat(129);
    let listed = [
        "1.0.0",
        "1.1\n  evil: true",
        "\"quoted\"",
        "../x",
        "",
        "-a",
        "ok_1",
        long.as_str(),
        "2.0.0\u{202e}",
    ];
    let body = tags_json(&listed);
    let server = FakeServer::start(move |req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        "/v2/org/r/tags/list" => Reply::json(200, body.clone()),
        _ => Reply::status(404),
    });
    let c = client(fast_settings());
    let tags = c.list_tags(&repo(&server.authority(), "org/r")).unwrap();
    assert_eq!(tags, vec!["1.0.0", "ok_1"]);
}

fn fake_pagination_loop_is_an_error() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::json(200, tags_json(&["a"]))
            .with_header("Link", r#"</v2/r/x/tags/list?n=1000>; rel="next""#),
    });
    let err = client(fast_settings())
        .list_tags(&repo(&server.authority(), "r/x"))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err}");
}

/// A registry that wants Basic auth for `user`/`pass`.
fn basic_registry(
    user: &'static str,
    pass: &'static str,
    extra: impl Fn(&harness::Recorded) -> Option<Reply> + Send + Sync + 'static,
) -> FakeServer {
    FakeServer::start(move |req| {
        if let Some(r) = extra(req) {
            return r;
        }
        if req.header("authorization") != Some(basic(user, pass).as_str()) {
            return Reply::json(
                401,
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
            )
            .with_header("WWW-Authenticate", r#"Basic realm="fake""#);
        }
        Reply::status(404)
    })
}

fn fake_pagination_link_to_other_host_gets_no_credentials() {
    let other = FakeServer::start(|_| Reply::json(200, tags_json(&["z"])));
    let other_port = other.addr.port();
    let server = basic_registry("u", "p", move |req| {
        (req.path() == "/v2/r/x/tags/list" && req.header("authorization").is_some()).then(|| {
            Reply::json(200, tags_json(&["a"])).with_header(
                "Link",
                &format!(r#"<http://localhost:{other_port}/v2/r/x/tags/list?last=a>; rel="next""#),
            )
        })
    });
    let c = client(with_creds(fast_settings(), &server.authority(), "u", "p"));
    assert_eq!(
        c.list_tags(&repo(&server.authority(), "r/x")).unwrap(),
        vec!["a", "z"]
    );
    let seen = other.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        None,
        "credentials must not follow a link to another origin"
    );
}

fn fake_cross_host_redirect_strips_authorization() {
    let body = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"sha256:0"},"layers":[]}"#.to_vec();
    let b = body.clone();
    let cdn = FakeServer::start(move |_| Reply::Respond {
        status: 200,
        headers: vec![(
            "Content-Type".into(),
            "application/vnd.oci.image.manifest.v1+json".into(),
        )],
        body: b.clone(),
    });
    let cdn_url = cdn.url("/blobstore/manifest");
    let server = basic_registry("u", "p", move |req| {
        req.header("authorization")?;
        match req.path() {
            "/v2/r/x/manifests/moved" => Some(Reply::status(307).with_header("Location", &cdn_url)),
            "/v2/r/x/manifests/same" => Some(Reply::status(302).with_header("Location", "/v2/r/x/manifests/target")),
            "/v2/r/x/manifests/target" => Some(Reply::Respond {
                status: 200,
                headers: vec![("Content-Type".into(), "application/vnd.oci.image.manifest.v1+json".into())],
                body: br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#.to_vec(),
            }),
            _ => None,
        }
    });
    let c = client(with_creds(fast_settings(), &server.authority(), "u", "p"));
    let r = repo(&server.authority(), "r/x");
    let m = c.manifest(&r, "moved").unwrap();
    assert_eq!(m.digest, sha256(&body));
    let at_cdn = cdn.requests();
    assert_eq!(at_cdn.len(), 1);
    assert_eq!(
        at_cdn[0].header("authorization"),
        None,
        "Authorization forwarded to another host"
    );
    // A same-origin redirect keeps the credentials.
    c.manifest(&r, "same").unwrap();
    let target = server
        .requests()
        .into_iter()
        .find(|q| q.path() == "/v2/r/x/manifests/target")
        .unwrap();
    assert_eq!(
        target.header("authorization"),
        Some(basic("u", "p").as_str())
    );
}

fn fake_redirect_loop_is_bounded() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        "/v2/r/x/manifests/a" => Reply::status(302).with_header("Location", "/v2/r/x/manifests/b"),
        _ => Reply::status(302).with_header("Location", "/v2/r/x/manifests/a"),
    });
    let err = client(fast_settings())
        .manifest(&repo(&server.authority(), "r/x"), "a")
        .unwrap_err();
    assert!(
        matches!(err, Error::TooManyRedirects { max: 5, .. }),
        "{err}"
    );
    // 1 request + 5 redirects followed by the client itself.
    assert_eq!(
        server.count(|r| r.path().starts_with("/v2/r/x/manifests/")),
        6
    );
}

fn fake_429_with_retry_after_seconds_and_date() {
    let calls = Arc::new(AtomicUsize::new(0));
    let k = Arc::clone(&calls);
    let server = FakeServer::start(move |req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => match k.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::json(429, r#"{"errors":[{"code":"TOOMANYREQUESTS"}]}"#)
                .with_header("Retry-After", "1"),
            1 => Reply::json(429, "{}").with_header("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"),
            _ => Reply::json(200, tags_json(&["v1"])),
        },
    });
    let mut settings = fast_settings();
    settings.retry.initial_backoff = Duration::from_millis(1);
    let c = client(settings);
    let start = Instant::now();
    assert_eq!(
        c.list_tags(&repo(&server.authority(), "r/x")).unwrap(),
        vec!["v1"]
    );
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(950),
        "Retry-After: 1 not honoured ({elapsed:?})"
    );
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

fn fake_retry_after_too_long_fails_fast() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::json(429, "{}").with_header("Retry-After", "3600"),
    });
    let start = Instant::now();
    let err = client(fast_settings())
        .list_tags(&repo(&server.authority(), "r/x"))
        .unwrap_err();
    assert!(matches!(err, Error::RetryAfterTooLong { .. }), "{err}");
    // Honouring the header would take an hour; the bound only has to tell.
    assert!(start.elapsed() < Duration::from_secs(60));
}

fn fake_5xx_burst_then_success_and_bounded_retries() {
    let calls = Arc::new(AtomicUsize::new(0));
    let k = Arc::clone(&calls);
    let server = FakeServer::start(move |req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        "/v2/ok/x/tags/list" => match k.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::status(503),
            1 => Reply::status(502),
            2 => Reply::status(500),
            _ => Reply::json(200, tags_json(&["v1"])),
        },
        _ => Reply::status(503),
    });
    let c = client(fast_settings()); // max_retries = 3
    assert_eq!(
        c.list_tags(&repo(&server.authority(), "ok/x")).unwrap(),
        vec!["v1"]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let err = c
        .list_tags(&repo(&server.authority(), "down/x"))
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(
        server.count(|r| r.path() == "/v2/down/x/tags/list"),
        4,
        "1 try + 3 retries"
    );
}

fn fake_connection_errors_are_retried() {
    let calls = Arc::new(AtomicUsize::new(0));
    let k = Arc::clone(&calls);
    let server = FakeServer::start(move |req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => {
            if k.fetch_add(1, Ordering::SeqCst) < 2 {
                Reply::Close
            } else {
                Reply::json(200, tags_json(&["v1"]))
            }
        }
    });
    assert_eq!(
        client(fast_settings())
            .list_tags(&repo(&server.authority(), "r/x"))
            .unwrap(),
        vec!["v1"]
    );
    // Nothing listening at all: a transport error after the retries.
    let dead = harness::free_port();
    let err = client(fast_settings())
        .list_tags(&repo(&format!("127.0.0.1:{dead}"), "r/x"))
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
}

fn fake_slow_answer_times_out() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::Delay(
            Duration::from_secs(3),
            Box::new(Reply::json(200, tags_json(&["late"]))),
        ),
    });
    let mut settings = fast_settings();
    settings.retry.max_retries = 1;
    settings.set_host(
        &server.authority(),
        HostConfig {
            timeout: Some(Duration::from_millis(200)),
            ..HostConfig::default()
        },
    );
    // A timeout error (the answer would have come after 3 s) and two
    // attempts show the timeout fired; no wall-clock bound is needed.
    let err = client(settings)
        .list_tags(&repo(&server.authority(), "r/x"))
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(server.count(|r| r.path() == "/v2/r/x/tags/list"), 2);
}

fn fake_truncated_body() {
    let calls = Arc::new(AtomicUsize::new(0));
    let k = Arc::clone(&calls);
    let server = FakeServer::start(move |req| {
        let full = tags_json(&["v1", "v2", "v3"]).into_bytes();
        match req.path() {
            "/v2/" => Reply::json(200, "{}"),
            "/v2/once/x/tags/list" if k.fetch_add(1, Ordering::SeqCst) == 0 => Reply::Truncate {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: full,
                send: 10,
            },
            "/v2/once/x/tags/list" => Reply::json(200, full),
            _ => Reply::Truncate {
                status: 200,
                headers: vec![],
                body: full,
                send: 5,
            },
        }
    });
    let c = client(fast_settings());
    assert_eq!(
        c.list_tags(&repo(&server.authority(), "once/x")).unwrap(),
        vec!["v1", "v2", "v3"]
    );
    let err = c
        .list_tags(&repo(&server.authority(), "always/x"))
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err}");
}

fn fake_malformed_json() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        "/v2/tags/x/tags/list" => Reply::json(200, r#"{"tags": ["a", "#),
        "/v2/tags/y/tags/list" => Reply::json(200, r#"{"tags": "not-a-list"}"#),
        _ => Reply::Respond {
            status: 200,
            headers: vec![(
                "Content-Type".into(),
                "application/vnd.oci.image.manifest.v1+json".into(),
            )],
            body: b"{not json".to_vec(),
        },
    });
    let c = client(fast_settings());
    for name in ["tags/x", "tags/y"] {
        let err = c.list_tags(&repo(&server.authority(), name)).unwrap_err();
        assert!(matches!(err, Error::InvalidResponse { .. }), "{err}");
    }
    let err = c
        .created(&repo(&server.authority(), "m/x"), "v1", None)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err}");
}

fn fake_content_types() {
    let doc = br#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"digest":"sha256:1"},"layers":[]}"#.to_vec();
    let d = doc.clone();
    let server = FakeServer::start(move |req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        "/v2/r/x/manifests/html" => Reply::Respond {
            status: 200,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: b"<html>login</html>".to_vec(),
        },
        "/v2/r/x/manifests/generic" => Reply::Respond {
            status: 200,
            headers: vec![("Content-Type".into(), "application/octet-stream".into())],
            body: d.clone(),
        },
        "/v2/r/x/manifests/schema1" => Reply::Respond {
            status: 200,
            headers: vec![(
                "Content-Type".into(),
                "application/vnd.docker.distribution.manifest.v1+prettyjws".into(),
            )],
            body: br#"{"schemaVersion":1}"#.to_vec(),
        },
        _ => Reply::status(404),
    });
    let c = client(fast_settings());
    let r = repo(&server.authority(), "r/x");
    assert!(matches!(
        c.manifest(&r, "html"),
        Err(Error::UnsupportedMediaType { .. })
    ));
    assert!(matches!(
        c.manifest(&r, "schema1"),
        Err(Error::UnsupportedMediaType { .. })
    ));
    let m = c.manifest(&r, "generic").unwrap();
    assert_eq!(
        m.media_type,
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    assert_eq!(m.digest, sha256(&doc));
}

fn fake_head_without_digest_falls_back_to_get() {
    let doc = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#.to_vec();
    let d = doc.clone();
    let server = FakeServer::start(move |req| match (req.method.as_str(), req.path()) {
        (_, "/v2/") => Reply::json(200, "{}"),
        ("HEAD", "/v2/r/x/manifests/v1") => Reply::status(200),
        ("HEAD", "/v2/r/x/manifests/v2") => Reply::status(200).with_header(
            "Docker-Content-Digest",
            &format!("sha256:{}", "b".repeat(64)),
        ),
        ("GET", "/v2/r/x/manifests/v1") => Reply::Respond {
            status: 200,
            headers: vec![(
                "Content-Type".into(),
                "application/vnd.oci.image.index.v1+json".into(),
            )],
            body: d.clone(),
        },
        _ => Reply::status(404),
    });
    let c = client(fast_settings());
    let r = repo(&server.authority(), "r/x");
    assert_eq!(c.digest(&r, "v1", None).unwrap(), sha256(&doc));
    assert_eq!(
        c.digest(&r, "v2", None).unwrap(),
        format!("sha256:{}", "b".repeat(64))
    );
    let heads = server
        .requests()
        .into_iter()
        .filter(|q| q.method == "HEAD")
        .collect::<Vec<_>>();
    assert_eq!(heads.len(), 2);
    for h in heads {
        let accept = h.header("accept").unwrap();
        for mt in [
            "application/vnd.oci.image.index.v1+json",
            "application/vnd.oci.image.manifest.v1+json",
            "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json",
        ] {
            assert!(accept.contains(mt), "{accept}");
        }
    }
    assert!(c.digest(&r, "v9", None).unwrap_err().is_not_found());
}

fn fake_plain_http_credentials_refused() {
    // The token realm is plain HTTP on a host explicitly marked secure.
    let token = FakeServer::start(|_| Reply::json(200, r#"{"token":"t"}"#));
    let realm = token.url("/token");
    let server = FakeServer::start(move |_| {
        Reply::json(401, "{}").with_header(
            "WWW-Authenticate",
            &format!(r#"Bearer realm="{realm}",service="svc""#),
        )
    });
    let credentials = [
        Credential::Basic {
            username: "u".to_owned(),
            password: Secret::new("topsecret"),
        },
        Credential::IdentityToken {
            username: None,
            token: Secret::new("topsecret"),
        },
    ];
    for credential in credentials {
        let mut settings = fast_settings();
        settings.credentials =
            CredentialStore::anonymous().with_credential(&server.authority(), credential);
        settings.set_host(
            &token.authority(),
            HostConfig {
                insecure: Some(false),
                ..HostConfig::default()
            },
        );
        let err = client(settings)
            .list_tags(&repo(&server.authority(), "r/x"))
            .unwrap_err();
        assert!(matches!(err, Error::InsecureCredentials { .. }), "{err}");
        assert!(token.requests().is_empty(), "nothing may be sent");
        assert!(!format!("{err} {err:?}").contains("topsecret"));
    }
    // Anonymous token requests carry no secret and may use plain HTTP.
    let mut settings = fast_settings();
    settings.set_host(
        &token.authority(),
        HostConfig {
            insecure: Some(false),
            ..HostConfig::default()
        },
    );
    let err = client(settings)
        .list_tags(&repo(&server.authority(), "r/x"))
        .unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
    // First token, then one refresh after the 401; the same token is not resent.
    assert_eq!(token.requests().len(), 2);
    assert_eq!(server.count(|r| r.path() == "/v2/r/x/tags/list"), 1);
}

fn fake_bearer_token_cache_and_refresh_on_401() {
    let token = FakeServer::start({
        let n = AtomicUsize::new(0);
        move |_| {
            Reply::json(
                200,
                format!(
                    r#"{{"access_token":"tok{}","expires_in":300}}"#,
                    n.fetch_add(1, Ordering::SeqCst)
                ),
            )
        }
    });
    let realm = token.url("/token");
    let server = FakeServer::start(move |req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        let challenge =
            format!(r#"Bearer realm="{realm}",service="fake",scope="repository:r/x:pull""#);
        match req.path() {
            "/v2/" => Reply::json(401, "{}").with_header("WWW-Authenticate", &challenge),
            // tok0 "expires" server-side: it is refused, tok1 works.
            _ if auth == "Bearer tok1" => Reply::json(200, tags_json(&["v1"])),
            _ => Reply::json(401, "{}").with_header("WWW-Authenticate", &challenge),
        }
    });
    let c = client(fast_settings());
    let r = repo(&server.authority(), "r/x");
    assert_eq!(c.list_tags(&r).unwrap(), vec!["v1"]);
    assert_eq!(c.list_tags(&r).unwrap(), vec!["v1"]);
    assert_eq!(c.fetch_tags(&r).unwrap(), vec!["v1"]);
    assert_eq!(
        token.requests().len(),
        2,
        "first token refused once, second one cached"
    );
    let q = &token.requests()[0];
    assert_eq!(
        q.query_value("scope").as_deref(),
        Some("repository:r/x:pull")
    );
    assert_eq!(q.query_value("service").as_deref(), Some("fake"));
    assert_eq!(q.header("authorization"), None, "anonymous token request");
}

fn fake_rate_limit_per_registry() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::json(200, tags_json(&["v1"])),
    });
    let mut settings = fast_settings();
    settings.set_host(
        &server.authority(),
        HostConfig {
            requests_per_second: Some(20.0),
            ..HostConfig::default()
        },
    );
    let c = client(settings);
    let repos: Vec<Repository> = (0..10)
        .map(|i| repo(&server.authority(), &format!("r/x{i}")))
        .collect();
    let start = Instant::now();
    for r in list_all(&c, &repos, 5) {
        r.unwrap();
    }
    // 11 requests (ping + 10) at 20/s: at least 0.5 s.
    assert!(
        start.elapsed() >= Duration::from_millis(480),
        "{:?}",
        start.elapsed()
    );
}

/// Each host's `concurrency` bounds the requests in flight to it, however
/// many threads list at once.
fn fake_host_concurrency_bound() {
    let current = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (c2, p2) = (Arc::clone(&current), Arc::clone(&peak));
    let server = FakeServer::start(move |req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => {
            let now = c2.fetch_add(1, Ordering::SeqCst) + 1;
            p2.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(40));
            c2.fetch_sub(1, Ordering::SeqCst);
            Reply::json(200, tags_json(&["v1"]))
        }
    });
    let mut settings = fast_settings();
    settings.set_host(
        &server.authority(),
        HostConfig {
            concurrency: Some(2),
            ..HostConfig::default()
        },
    );
    let c = client(settings);
    let repos: Vec<Repository> = (0..12)
        .map(|i| repo(&server.authority(), &format!("r/x{i}")))
        .collect();
    let results = list_all(&c, &repos, 6);
    assert!(results.iter().all(Result::is_ok));
    let p = peak.load(Ordering::SeqCst);
    assert_eq!(p, 2, "peak in flight {p}");
}

fn fake_secrets_never_in_debug_or_errors() {
    let token = FakeServer::start(|_| {
        Reply::json(
            401,
            r#"{"errors":[{"code":"DENIED","message":"bad credentials"}]}"#,
        )
    });
    let realm = token.url("/token");
    let server = FakeServer::start(move |_| {
        Reply::json(401, "{}").with_header(
            "WWW-Authenticate",
            &format!(r#"Bearer realm="{realm}",service="s""#),
        )
    });
    let settings = with_creds(fast_settings(), &server.authority(), "user", "pa55word-xyz");
    let dbg = format!("{settings:?}");
    assert!(!dbg.contains("pa55word-xyz"), "{dbg}");
    let c = client(settings);
    let err = c.list_tags(&repo(&server.authority(), "r/x")).unwrap_err();
    let text = format!("{err} / {err:?} / {c:?}");
    assert!(matches!(err, Error::Auth { .. }), "{text}");
    assert!(text.contains("DENIED"), "{text}");
    for secret in ["pa55word-xyz", &basic("user", "pa55word-xyz")[6..]] {
        assert!(!text.contains(secret), "{text}");
    }
}

fn fake_settings_file_drives_the_client() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::json(200, tags_json(&["v1", "v1.sig", "keep", "drop-me"])),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registries.yaml");
    fs_err::write(
        &path,
        format!(
            "registries:\n  {}:\n    page_size: 7\n    timeout: 5s\nretry:\n  max_retries: 1\n  initial_backoff: 1ms\nexclusion_list: ['^drop-', '\\.sig$']\n",
            server.authority()
        ),
    )
    .unwrap();
    let settings = ClientSettings::from_env_and_file(Some(&path)).unwrap();
    assert_eq!(settings.retry.max_retries, 1);
    let c = client(settings);
    assert_eq!(
        c.list_tags(&repo(&server.authority(), "r/x")).unwrap(),
        vec!["v1", "keep"]
    );
    let req = server
        .requests()
        .into_iter()
        .find(|r| r.path() == "/v2/r/x/tags/list")
        .unwrap();
    assert_eq!(req.query_value("n").as_deref(), Some("7"));
}

// ---------------------------------------------------------------------------
// Secrets echoed by registries never come back out

thread_local! {
    /// Where this thread's log lines go while `with_logs` runs.
    static LOG_CAPTURE: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// The writer of the process-wide subscriber (installed by `main`): each
/// line goes to the capture of the thread that logged it, if any. One
/// global subscriber rather than a thread-local one per test, because
/// `tracing` caches which callsites are enabled across threads, and
/// thread-local subscribers on parallel tests lose events.
#[derive(Clone, Copy, Default)]
struct CaptureWriter;

impl std::io::Write for CaptureWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG_CAPTURE.with_borrow_mut(|capture| {
            if let Some(c) = capture {
                c.extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CaptureWriter {
    type Writer = CaptureWriter;
    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

/// Run `f` with every `tracing` event of this thread, down to `level`,
/// captured; returns its result and the log text.
fn with_logs<T>(level: tracing::Level, f: impl FnOnce() -> T) -> (T, String) {
    LOG_CAPTURE.with_borrow_mut(|c| *c = Some(Vec::new()));
    let out = f();
    let bytes = LOG_CAPTURE
        .with_borrow_mut(Option::take)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let wanted = |line: &str| {
        [
            (tracing::Level::ERROR, " ERROR "),
            (tracing::Level::WARN, " WARN "),
            (tracing::Level::INFO, " INFO "),
            (tracing::Level::DEBUG, " DEBUG "),
            (tracing::Level::TRACE, " TRACE "),
        ]
        .iter()
        .find(|(_, tag)| line.contains(tag))
        .is_none_or(|(l, _)| *l <= level)
    };
    let kept: Vec<&str> = text.lines().filter(|l| wanted(l)).collect();
    let mut joined = kept.join("\n");
    if !joined.is_empty() {
        joined.push('\n');
    }
    (out, joined)
}

/// An error's Display, every source's Display, and its Debug.
fn full_text(e: &Error) -> String {
    let mut out = format!("{e}");
    let mut next = std::error::Error::source(e);
    while let Some(cause) = next {
        out.push_str(&format!("\ncaused by: {cause}"));
        next = cause.source();
    }
    out.push_str(&format!("\n{e:?}"));
    out
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The forms of `secret` a registry may echo: as is, base64, URL-encoded.
fn forms(secret: &str) -> Vec<String> {
    vec![
        secret.to_owned(),
        b64(secret),
        harness::percent_encode(secret),
    ]
}

/// The forms of a username/password pair: the password's, the pair's, and
/// the Basic header value.
fn basic_forms(user: &str, password: &str) -> Vec<String> {
    let mut all = forms(password);
    all.extend(forms(&format!("{user}:{password}")));
    all
}

fn assert_clean(what: &str, text: &str, secrets: &[String]) {
    for s in secrets {
        assert!(!text.contains(s.as_str()), "{what} leaks {s:?}:\n{text}");
    }
}

/// `IMAGE_UPDATE_REGISTRY_<HOST>_` for a registry authority.
fn host_var(authority: &str) -> String {
    let key: String = authority
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("IMAGE_UPDATE_REGISTRY_{key}_")
}

const USER: &str = "leaky-user";
const PASSWORD: &str = r#"s3cr3t "pa/ss"+w@rd&x=1"#;

/// List every leaking repository of `reg` with `settings`, and check that
/// no form of `secrets` (nor of any token the token service issued) is in
/// any error, source chain or trace-level log line, while the echoes did
/// arrive (as `<redacted>`).
fn check_no_leaks(reg: &harness::LeakyRegistry, settings: ClientSettings, secrets: &[String]) {
    let mut kinds = vec!["e401", "e403", "e500", "redirect", "link", "json"];
    if reg.token_service.is_some() {
        kinds.push("tokenfail");
    }
    let mut settings = settings;
    settings.retry.max_retries = 1;
    let c = client(settings);
    let (texts, logs) = with_logs(tracing::Level::TRACE, || {
        kinds
            .iter()
            .map(|kind| {
                let err = c
                    .list_tags(&repo(&reg.authority(), &format!("{kind}/x")))
                    .unwrap_err();
                (kind, full_text(&err))
            })
            .collect::<Vec<_>>()
    });
    let mut all = secrets.to_vec();
    for token in reg.issued_tokens() {
        all.extend(forms(&token));
    }
    for (kind, text) in &texts {
        assert_clean(&format!("error for {kind}"), text, &all);
        assert!(
            text.contains("<redacted>"),
            "the registry's echo for {kind} is missing: {text}"
        );
    }
    assert_clean("log", &logs, &all);
    assert!(logs.contains("leak=<redacted>"), "{logs}");
    assert!(logs.contains("TRACE"), "{logs}");
    // Bodies are quoted cut to one bounded line.
    for (kind, text) in &texts {
        let first = text.lines().next().unwrap();
        assert!(first.len() < 1200, "{kind}: {first}");
    }
}

fn fake_secrets_redacted_docker_config_auths() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Basic);
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("config.json"),
        serde_json::json!({"auths": {reg.authority(): {"auth": b64(&format!("{USER}:{PASSWORD}"))}}})
            .to_string(),
    )
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials =
        CredentialStore::from_vars([("DOCKER_CONFIG", dir.path().to_str().unwrap())]);
    check_no_leaks(&reg, settings, &basic_forms(USER, PASSWORD));
}

fn fake_secrets_redacted_env_credentials() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Basic);
    let prefix = host_var(&reg.authority());
    let mut settings = fast_settings();
    settings.credentials = CredentialStore::from_vars([
        (format!("{prefix}USERNAME"), USER.to_owned()),
        (format!("{prefix}PASSWORD"), PASSWORD.to_owned()),
    ]);
    check_no_leaks(&reg, settings, &basic_forms(USER, PASSWORD));
}

fn fake_secrets_redacted_env_credentials_through_token_service() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Bearer);
    let mut settings = fast_settings();
    settings.credentials = CredentialStore::from_vars([
        ("IMAGE_UPDATE_REGISTRY_USERNAME", USER),
        ("IMAGE_UPDATE_REGISTRY_PASSWORD", PASSWORD),
        ("IMAGE_UPDATE_REGISTRY_HOST", &reg.authority()),
    ]);
    check_no_leaks(&reg, settings, &basic_forms(USER, PASSWORD));
    assert!(
        reg.issued_tokens().len() >= 2,
        "bearer tokens were issued and echoed"
    );
}

fn fake_secrets_redacted_auth_file() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Basic);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    fs_err::write(
        &path,
        serde_json::json!({"auths": {reg.authority(): {"auth": b64(&format!("{USER}:{PASSWORD}"))}}})
            .to_string(),
    )
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials =
        CredentialStore::from_vars([("REGISTRY_AUTH_FILE", path.to_str().unwrap())]);
    check_no_leaks(&reg, settings, &basic_forms(USER, PASSWORD));
}

fn fake_secrets_redacted_config_json_secret() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Basic);
    let text =
        serde_json::json!({"auths": {reg.authority(): {"username": USER, "password": PASSWORD}}})
            .to_string();
    let credential = image_update_registry::credentials::credential_from_config_json(
        &text,
        &reg.authority(),
        "e401/x",
        "Secret flux-system/regcred",
    )
    .unwrap()
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials = CredentialStore::anonymous().with_credential_from(
        &reg.authority(),
        credential,
        "Secret flux-system/regcred",
    );
    check_no_leaks(&reg, settings, &basic_forms(USER, PASSWORD));
}

fn fake_secrets_redacted_identity_token() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Bearer);
    let refresh = "refresh/tok+en=abc&def";
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("config.json"),
        serde_json::json!({"auths": {reg.authority(): {"identitytoken": refresh}}}).to_string(),
    )
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials =
        CredentialStore::from_vars([("DOCKER_CONFIG", dir.path().to_str().unwrap())]);
    check_no_leaks(&reg, settings, &forms(refresh));
    let posts = reg
        .token_service
        .as_ref()
        .unwrap()
        .count(|r| r.method == "POST");
    assert!(posts >= 1, "the refresh token was sent with POST");
}

fn fake_secrets_redacted_registry_token() {
    let reg = harness::LeakyRegistry::start(harness::LeakyAuth::Bearer);
    let token = "registry.tok/en+xyz=";
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("config.json"),
        serde_json::json!({"auths": {reg.authority(): {"registrytoken": token}}}).to_string(),
    )
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials =
        CredentialStore::from_vars([("DOCKER_CONFIG", dir.path().to_str().unwrap())]);
    check_no_leaks(&reg, settings, &forms(token));
    assert!(
        reg.issued_tokens().is_empty(),
        "a registry token is used as is"
    );
}

// ---------------------------------------------------------------------------
// Refused requests name the credentials' source

/// A registry answering 401 (with Basic or Bearer challenge) for `deny/*`,
/// 403 for `forbid/*`, and 401 `insufficient_scope` for `scope/*`.
fn refusing_registry(bearer: bool) -> (FakeServer, Option<FakeServer>) {
    let token =
        bearer.then(|| FakeServer::start(|_| Reply::json(200, r#"{"token":"granted-token"}"#)));
    let challenge = match &token {
        Some(t) => format!(r#"Bearer realm="{}",service="svc""#, t.url("/token")),
        None => r#"Basic realm="r""#.to_owned(),
    };
    let server = FakeServer::start(move |req| {
        let first = req
            .path()
            .strip_prefix("/v2/")
            .and_then(|p| p.split('/').next())
            .unwrap_or_default();
        match first {
            "" => Reply::json(401, "{}").with_header("WWW-Authenticate", &challenge),
            "forbid" => Reply::json(
                403,
                r#"{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}"#,
            ),
            "scope" => Reply::json(
                401,
                r#"{"errors":[{"code":"DENIED","message":"insufficient scope"}]}"#,
            )
            .with_header(
                "WWW-Authenticate",
                &format!(r#"{challenge},error="insufficient_scope""#),
            ),
            _ => Reply::json(
                401,
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
            )
            .with_header("WWW-Authenticate", &challenge),
        }
    });
    (server, token)
}

fn refused(settings: ClientSettings, authority: &str, path: &str) -> String {
    let err = client(settings)
        .list_tags(&repo(authority, path))
        .unwrap_err();
    full_text(&err)
}

fn fake_refusals_name_the_credential_source() {
    let (server, _) = refusing_registry(false);
    let authority = server.authority();
    let prefix = host_var(&authority);
    let dir = tempfile::tempdir().unwrap();
    let docker_dir = dir.path().join("docker");
    fs_err::create_dir(&docker_dir).unwrap();
    fs_err::write(
        docker_dir.join("config.json"),
        serde_json::json!({"auths": {format!("http://{authority}"): {"auth": b64("docker-user:docker-pw")}}})
            .to_string(),
    )
    .unwrap();
    let auth_file = dir.path().join("auth.json");
    fs_err::write(
        &auth_file,
        serde_json::json!({"auths": {format!("{authority}/deny"): {"auth": b64("file-user:file-pw")}, authority.clone(): {"auth": b64("file-user:file-pw")}}})
            .to_string(),
    )
    .unwrap();
    let helper_dir = dir.path().join("helpers");
    fs_err::create_dir(&helper_dir).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let helper = helper_dir.join("docker-credential-testhelper");
        fs_err::write(
            &helper,
            "#!/bin/sh\ncat >/dev/null\necho '{\"Username\":\"helper-user\",\"Secret\":\"helper-pw\"}'\n",
        )
        .unwrap();
        fs_err::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let helper_cfg = dir.path().join("helper-config.json");
    fs_err::write(
        &helper_cfg,
        serde_json::json!({"credHelpers": {authority.clone(): "testhelper"}}).to_string(),
    )
    .unwrap();

    let with = |store: CredentialStore| {
        let mut s = fast_settings();
        s.credentials = store;
        s
    };
    let docker_config = docker_dir.join("config.json");
    let cases: Vec<(&str, ClientSettings, Vec<String>, Vec<&str>)> = vec![
        (
            "anonymous",
            fast_settings(),
            vec![],
            vec!["no credentials were found for", &authority, "_USERNAME"],
        ),
        (
            "environment",
            with(CredentialStore::from_vars([
                (format!("{prefix}USERNAME"), "env-user".to_owned()),
                (format!("{prefix}PASSWORD"), "env-pw".to_owned()),
            ])),
            basic_forms("env-user", "env-pw"),
            vec![
                "check the username/password in environment variables",
                "_USERNAME",
            ],
        ),
        (
            "docker config",
            with(CredentialStore::anonymous().with_docker_config(&docker_config)),
            basic_forms("docker-user", "docker-pw"),
            vec![
                "check the username/password in Docker config",
                docker_config.to_str().unwrap(),
                "auths key \"http://",
            ],
        ),
        (
            "auth file",
            with(CredentialStore::anonymous().with_auth_file(&auth_file)),
            basic_forms("file-user", "file-pw"),
            vec![
                "check the username/password in auth file",
                auth_file.to_str().unwrap(),
                "/deny\"",
            ],
        ),
        (
            "credential helper",
            with(
                CredentialStore::anonymous()
                    .with_docker_config(&helper_cfg)
                    .with_helper_dirs(vec![helper_dir.clone()]),
            ),
            basic_forms("helper-user", "helper-pw"),
            vec!["credential helper docker-credential-testhelper"],
        ),
        (
            "secret",
            with(CredentialStore::anonymous().with_credential_from(
                &authority,
                Credential::Basic {
                    username: "secret-user".to_owned(),
                    password: Secret::new("secret-pw"),
                },
                "Secret flux-system/regcred",
            )),
            basic_forms("secret-user", "secret-pw"),
            vec!["check the username/password in Secret flux-system/regcred"],
        ),
    ];
    for (name, settings, secrets, wanted) in cases {
        // 401: wrong or missing credentials.
        let text = refused(settings.clone(), &authority, "deny/x");
        assert!(text.contains("HTTP 401"), "{name}: {text}");
        for w in &wanted {
            assert!(text.contains(w), "{name}: 401 without {w:?}: {text}");
        }
        assert_clean(name, &text, &secrets);
        // 403: authenticated, not allowed.
        let text = refused(settings.clone(), &authority, "forbid/x");
        assert!(text.contains("HTTP 403"), "{name}: {text}");
        if name == "anonymous" {
            assert!(text.contains("anonymous access to"), "{text}");
            assert!(text.contains("no credentials were found for"), "{text}");
        } else {
            assert!(
                text.contains("was accepted but does not allow pulling")
                    && text.contains("permissions"),
                "{name}: {text}"
            );
            assert!(
                !text.contains("check the username/password"),
                "{name}: {text}"
            );
        }
        assert_clean(name, &text, &secrets);
    }
}

fn fake_refusals_with_tokens_name_the_source() {
    // Identity token from the Docker config: the registry refuses the
    // token it was given (401), or its scope (insufficient_scope).
    let (server, token) = refusing_registry(true);
    let authority = server.authority();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.json");
    fs_err::write(
        &cfg,
        serde_json::json!({"auths": {authority.clone(): {"identitytoken": "my-refresh-token"}}})
            .to_string(),
    )
    .unwrap();
    let mut settings = fast_settings();
    settings.credentials = CredentialStore::anonymous().with_docker_config(&cfg);
    let text = refused(settings.clone(), &authority, "deny/x");
    assert!(
        text.contains("check the identity token in Docker config")
            && text.contains(cfg.to_str().unwrap()),
        "{text}"
    );
    let text = refused(settings.clone(), &authority, "scope/x");
    assert!(
        text.contains("the identity token from Docker config")
            && text.contains("does not allow pulling"),
        "insufficient_scope is a permission problem: {text}"
    );
    assert_clean("identity token", &text, &forms("my-refresh-token"));
    assert!(token.unwrap().count(|r| r.method == "POST") >= 1);

    // The token service refuses: an authentication error naming the source.
    let refusing_token = FakeServer::start(|_| {
        Reply::json(
            401,
            r#"{"errors":[{"code":"DENIED","message":"bad refresh token"}]}"#,
        )
    });
    let realm = refusing_token.url("/token");
    let server = FakeServer::start(move |_| {
        Reply::json(401, "{}")
            .with_header("WWW-Authenticate", &format!(r#"Bearer realm="{realm}""#))
    });
    let mut settings = fast_settings();
    settings.credentials = CredentialStore::anonymous().with_credential_from(
        &server.authority(),
        Credential::IdentityToken {
            username: None,
            token: Secret::new("expired-refresh"),
        },
        "Secret ci/registry-login",
    );
    let err = client(settings)
        .list_tags(&repo(&server.authority(), "a/b"))
        .unwrap_err();
    assert!(matches!(err, Error::Auth { .. }), "{err}");
    let text = full_text(&err);
    assert!(
        text.contains("check the identity token in Secret ci/registry-login")
            && text.contains("bad refresh token"),
        "{text}"
    );
    assert_clean("token service", &text, &forms("expired-refresh"));
    // Anonymous at a token service that wants credentials.
    let err = client(fast_settings())
        .list_tags(&repo(&server.authority(), "a/b"))
        .unwrap_err();
    assert!(
        err.to_string().contains("no credentials were found for"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// Limits: pagination, time

/// Run `f` on a thread; fail if it has not finished within `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}"))
}

/// A registry whose tag list never ends: every page links to a new one.
fn endless_registry(tags_per_page: usize) -> FakeServer {
    FakeServer::start(move |req| {
        if req.path() == "/v2/" {
            return Reply::json(200, "{}");
        }
        let n: usize = req
            .query_value("last")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let tags: Vec<String> = (0..tags_per_page)
            .map(|i| format!("t{}", n * tags_per_page + i))
            .collect();
        Reply::json(
            200,
            serde_json::json!({"name": "r/x", "tags": tags}).to_string(),
        )
        .with_header(
            "Link",
            &format!(r#"</v2/r/x/tags/list?n=1&last={}>; rel="next""#, n + 1),
        )
    })
}

fn fake_endless_pagination_stops_at_the_default_limit() {
    let server = endless_registry(1);
    let authority = server.authority();
    let err = within(Duration::from_secs(120), move || {
        client(ClientSettings::default())
            .list_tags(&repo(&authority, "r/x"))
            .unwrap_err()
    });
    let text = err.to_string();
    assert!(matches!(err, Error::ListLimit { .. }), "{text}");
    assert!(
        text.contains(&format!("{}/r/x", server.authority()))
            && text.contains("more than 1000 pages")
            && text.contains("`max_pages`"),
        "{text}"
    );
    assert_eq!(server.count(|r| r.path() == "/v2/r/x/tags/list"), 1000);
}

fn fake_pagination_limits_from_the_settings_file() {
    let server = endless_registry(10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registries.yaml");
    fs_err::write(
        &path,
        format!(
            "defaults:\n  max_pages: 20\nregistries:\n  {}:\n    max_tags: 25\n",
            server.authority()
        ),
    )
    .unwrap();
    let settings = ClientSettings::from_env_and_file(Some(&path)).unwrap();
    assert_eq!(settings.host("other.example").max_pages, 20);
    let authority = server.authority();
    let err = within(Duration::from_secs(60), move || {
        client(settings)
            .list_tags(&repo(&authority, "r/x"))
            .unwrap_err()
    });
    let text = err.to_string();
    assert!(
        text.contains("more than 25 tags") && text.contains("`max_tags`"),
        "{text}"
    );
    assert_eq!(server.count(|r| r.path() == "/v2/r/x/tags/list"), 3);

    fs_err::write(&path, "defaults:\n  max_pages: 20\n").unwrap();
    let settings = ClientSettings::from_env_and_file(Some(&path)).unwrap();
    let authority = server.authority();
    let err = within(Duration::from_secs(60), move || {
        client(settings)
            .list_tags(&repo(&authority, "r/x"))
            .unwrap_err()
    });
    assert!(err.to_string().contains("more than 20 pages"), "{err}");
}

/// A tag list whose body trickles in, one byte every 50 ms.
fn trickling_registry() -> FakeServer {
    FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::Trickle {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: tags_json(&["a"; 100]).into_bytes(),
            interval: Duration::from_millis(50),
        },
    })
}

fn fake_trickling_body_hits_the_request_timeout() {
    let server = trickling_registry();
    let mut settings = fast_settings(); // 3 retries
    settings.set_host(
        &server.authority(),
        HostConfig {
            timeout: Some(Duration::from_millis(500)),
            ..HostConfig::default()
        },
    );
    let authority = server.authority();
    let start = Instant::now();
    let err = within(Duration::from_secs(60), move || {
        client(settings)
            .list_tags(&repo(&authority, "r/x"))
            .unwrap_err()
    });
    let elapsed = start.elapsed();
    let text = err.to_string();
    assert!(err.is_timeout(), "{text}");
    assert!(
        matches!(
            err,
            Error::Timeout {
                which: image_update_registry::TimeLimit::Request,
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{} gave no complete answer within 500ms",
            server.authority()
        )) && text.contains("per-request `timeout`")
            && text.contains("2 attempts"),
        "{text}"
    );
    // A timed-out request is retried once, however many retries are allowed.
    assert_eq!(server.count(|r| r.path() == "/v2/r/x/tags/list"), 2);
    // The whole body would trickle for much longer than this bound.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}

fn fake_run_deadline_stops_slow_and_retrying_registries() {
    // A body that would take minutes: cut off at the deadline.
    let server = trickling_registry();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registries.yaml");
    fs_err::write(&path, "deadline: 1500ms\n").unwrap();
    let settings = ClientSettings::from_env_and_file(Some(&path)).unwrap();
    assert_eq!(settings.deadline, Some(Duration::from_millis(1500)));
    let authority = server.authority();
    let start = Instant::now();
    let err = within(Duration::from_secs(60), move || {
        client(settings)
            .list_tags(&repo(&authority, "r/x"))
            .unwrap_err()
    });
    let elapsed = start.elapsed();
    let text = err.to_string();
    assert!(err.is_timeout(), "{text}");
    assert!(
        text.contains("run's deadline of 1.5s") && text.contains(&server.authority()),
        "{text}"
    );
    // Not before the deadline; the body would take minutes, so the upper
    // bound is generous for a loaded machine.
    assert!(
        elapsed >= Duration::from_millis(1400) && elapsed < Duration::from_secs(30),
        "{elapsed:?}"
    );

    // A registry failing with 503: retries stop when their wait would pass
    // the deadline, and the error says what the last attempt got.
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::status(503),
    });
    let mut settings = fast_settings();
    settings.retry.max_retries = 10;
    settings.retry.initial_backoff = Duration::from_millis(400);
    settings.retry.max_backoff = Duration::from_millis(400);
    settings.deadline = Some(Duration::from_millis(1000));
    let c = client(settings);
    let start = Instant::now();
    let err = c.list_tags(&repo(&server.authority(), "r/x")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("deadline of 1s") && text.contains("last attempt: HTTP 503"),
        "{text}"
    );
    // Counted: the 10 allowed retries were cut short (jittered waits of 200
    // to 400 ms fit at most five times in the 1 s deadline); and the run
    // took less than the ten waits would have.
    let attempts = server.count(|r| r.path() == "/v2/r/x/tags/list");
    assert!((1..=6).contains(&attempts), "{attempts} attempts");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    // Past the deadline nothing is sent at all. (Wait long enough for the
    // fake server to record the last attempt, even on a loaded machine.)
    std::thread::sleep(Duration::from_millis(800));
    let before = server.requests().len();
    let err = c.list_tags(&repo(&server.authority(), "r/y")).unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(server.requests().len(), before);
}

// ---------------------------------------------------------------------------
// Retries: logged, counted; DNS failures are not retried

/// A name that does not resolve fails at once: no retry is announced to
/// the observer or logged, and the error counts no attempts (counted, not
/// timed: how fast the resolver fails is not the point).
fn fake_dns_failure_is_not_retried() {
    let recorder = Arc::new(Recorder::default());
    let mut settings = fast_settings();
    settings.observer = Some(Arc::clone(&recorder) as Arc<dyn image_update_registry::Observer>);
    let c = client(settings);
    let (err, logs) = with_logs(tracing::Level::INFO, || {
        c.list_tags(&repo("image-update-test.invalid", "r/x"))
            .unwrap_err()
    });
    let text = err.to_string();
    assert!(matches!(err, Error::UnknownHost { .. }), "{text}");
    assert!(
        text.contains("the host name image-update-test.invalid does not resolve"),
        "{text}"
    );
    assert!(!text.contains("attempts"), "{text}");
    let events = recorder.0.lock().unwrap().clone();
    assert!(
        !events.iter().any(|e| e.starts_with("retry ")),
        "{events:?}"
    );
    assert!(!logs.contains("retry"), "{logs}");
}

fn fake_retries_are_logged_at_info_and_counted() {
    let server = FakeServer::start(|req| match req.path() {
        "/v2/" => Reply::json(200, "{}"),
        _ => Reply::json(
            503,
            r#"{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}"#,
        ),
    });
    let c = client(fast_settings()); // 3 retries
    let (err, logs) = with_logs(tracing::Level::INFO, || {
        c.list_tags(&repo(&server.authority(), "r/x")).unwrap_err()
    });
    let text = err.to_string();
    assert_eq!(err.status(), Some(503), "{text}");
    assert!(
        text.contains("gave up after 4 attempts over") && text.contains("UNAVAILABLE"),
        "{text}"
    );
    let lines: Vec<&str> = logs.lines().filter(|l| l.contains(" INFO ")).collect();
    assert_eq!(lines.len(), 3, "{logs}");
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.contains(&format!("registry={}", server.authority()))
                && line.contains("reason=HTTP 503")
                && line.contains("wait_ms=")
                && line.contains(&format!("retry {} of 3 in ", i + 1)),
            "{line}"
        );
    }

    // Connection refused: retried, and the final error counts the attempts.
    let dead = format!("127.0.0.1:{}", harness::free_port());
    let (err, logs) = with_logs(tracing::Level::INFO, || {
        client(fast_settings())
            .list_tags(&repo(&dead, "r/x"))
            .unwrap_err()
    });
    assert!(matches!(err, Error::Transport { .. }), "{err}");
    assert!(
        err.to_string().contains("gave up after 4 attempts over"),
        "{err}"
    );
    assert_eq!(logs.matches("reason=connection error").count(), 3, "{logs}");
}

// ---------------------------------------------------------------------------
// Progress events

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl image_update_registry::Observer for Recorder {
    fn event(&self, event: &image_update_registry::Event<'_>) {
        use image_update_registry::Event;
        let line = match event {
            Event::ListingQueued { repositories } => format!("queued {repositories}"),
            Event::ListingStarted { repository } => format!("started {}", repository.repository()),
            Event::PageFetched {
                repository,
                page,
                tags,
            } => format!("page {} {page} {tags}", repository.repository()),
            Event::ListingDone {
                repository,
                tags,
                cached,
            } => format!("done {} {tags} {cached}", repository.repository()),
            Event::RetryWaiting {
                registry,
                reason,
                wait,
                retry,
            } => format!(
                "retry {} {reason} {}ms {retry}",
                registry.split(':').next().unwrap(),
                wait.as_millis()
            ),
            Event::RequestFailed {
                repository,
                listing,
                error,
                ..
            } => format!(
                "failed {} {listing} {}",
                repository.repository(),
                error.status().unwrap_or_default()
            ),
            other => format!("{other:?}"),
        };
        self.0.lock().unwrap().push(line);
    }
}

fn fake_observer_sees_listing_progress() {
    let calls = Arc::new(AtomicUsize::new(0));
    let k = Arc::clone(&calls);
    let server =
        FakeServer::start(
            move |req| match (req.path(), req.query_value("last").as_deref()) {
                ("/v2/", _) => Reply::json(200, "{}"),
                ("/v2/paged/x/tags/list", None) => Reply::json(200, tags_json(&["a", "b"]))
                    .with_header("Link", r#"</v2/paged/x/tags/list?last=b>; rel="next""#),
                ("/v2/paged/x/tags/list", Some(_)) => Reply::json(200, tags_json(&["c"])),
                ("/v2/busy/x/tags/list", _) => {
                    if k.fetch_add(1, Ordering::SeqCst) == 0 {
                        Reply::json(429, "{}").with_header("Retry-After", "1")
                    } else {
                        Reply::json(200, tags_json(&["v1"]))
                    }
                }
                _ => Reply::status(404),
            },
        );
    let recorder = Arc::new(Recorder::default());
    let mut settings = fast_settings();
    settings.observer = Some(Arc::clone(&recorder) as Arc<dyn image_update_registry::Observer>);
    let c = client(settings);
    let repos = [
        repo(&server.authority(), "paged/x"),
        repo(&server.authority(), "busy/x"),
        repo(&server.authority(), "missing/x"),
    ];
    let results = list_all(&c, &repos, 1);
    assert!(results[2].as_ref().unwrap_err().is_not_found());
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            "queued 3",
            "started paged/x",
            "page paged/x 1 2",
            "page paged/x 2 3",
            "done paged/x 3 false",
            "started busy/x",
            "retry 127.0.0.1 429 1000ms 1",
            "page busy/x 1 1",
            "done busy/x 1 false",
            "started missing/x",
            "failed missing/x true 404",
        ]
    );
    // A failed digest is a failed request, not a listing.
    let _ = c.digest(&repos[2], "v1", None);
    assert_eq!(
        recorder.0.lock().unwrap().last().unwrap(),
        "failed missing/x false 404"
    );
}

/// This test binary run as a child process: list the tags of the
/// repository in `CHILD_LIST` with a client configured from the settings file
/// in `CHILD_SETTINGS` and the environment, as the CLI would (for tests of
/// process-wide settings such as `SSL_CERT_FILE`).
const CHILD_LIST: &str = "IMAGE_UPDATE_TEST_CHILD_LIST";
const CHILD_SETTINGS: &str = "IMAGE_UPDATE_TEST_CHILD_SETTINGS";

fn child_list(repository: &str) -> ! {
    let mut settings = ClientSettings {
        credentials: CredentialStore::from_env(),
        ..ClientSettings::default()
    };
    if let Some(file) = std::env::var_os(CHILD_SETTINGS) {
        settings.apply_file(image_update_registry::SettingsFile::load(file.as_ref()).unwrap());
    }
    let client = RegistryClient::new(settings).unwrap();
    let result = client.list_tags(&Repository::parse(repository).unwrap());
    match result {
        Ok(tags) => {
            println!("{}", tags.join("\n"));
            #[allow(clippy::disallowed_methods)] // the child process ends itself
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("{e}");
            #[allow(clippy::disallowed_methods)] // the child process ends itself
            std::process::exit(1)
        }
    }
}

fn main() {
    if let Ok(repository) = std::env::var(CHILD_LIST) {
        child_list(&repository);
    }
    // Every event goes to one process-wide subscriber, which hands it to
    // the capture of the thread that logged it (`with_logs`).
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_writer(CaptureWriter)
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .finish(),
    );
    testkit::run(vec![
        trial(
            "real_anonymous_tags_digests_created",
            &["docker-registry"],
            real_anonymous_tags_digests_created,
        ),
        trial(
            "real_multi_arch_index",
            &["docker-registry"],
            real_multi_arch_index,
        ),
        trial(
            "real_docker_manifest_list",
            &["docker-registry"],
            real_docker_manifest_list,
        ),
        trial(
            "real_tls_with_ca_file",
            &["docker-registry"],
            real_tls_with_ca_file,
        ),
        trial(
            "real_thousands_of_tags_and_sig_exclusion",
            &["docker-registry"],
            real_thousands_of_tags_and_sig_exclusion,
        ),
        trial(
            "real_htpasswd_basic_auth",
            &["docker-registry"],
            real_htpasswd_basic_auth,
        ),
        trial(
            "real_docker_config_credentials",
            &["docker-registry"],
            real_docker_config_credentials,
        ),
        trial(
            "real_token_auth_with_basic_credentials",
            &["docker-registry"],
            real_token_auth_with_basic_credentials,
        ),
        trial(
            "real_token_auth_with_identity_token",
            &["docker-registry"],
            real_token_auth_with_identity_token,
        ),
        trial(
            "real_token_anonymous_pull",
            &["docker-registry"],
            real_token_anonymous_pull,
        ),
        trial(
            "real_listing_many_repositories",
            &["docker-registry"],
            real_listing_many_repositories,
        ),
        trial("real_tag_cache", &["docker-registry"], real_tag_cache),
        trial(
            "fake_link_pagination_relative_absolute_with_ports",
            &[],
            fake_link_pagination_relative_absolute_with_ports,
        ),
        trial(
            "fake_invalid_tags_are_left_out",
            &[],
            fake_invalid_tags_are_left_out,
        ),
        trial(
            "fake_pagination_loop_is_an_error",
            &[],
            fake_pagination_loop_is_an_error,
        ),
        trial(
            "fake_pagination_link_to_other_host_gets_no_credentials",
            &[],
            fake_pagination_link_to_other_host_gets_no_credentials,
        ),
        trial(
            "fake_cross_host_redirect_strips_authorization",
            &[],
            fake_cross_host_redirect_strips_authorization,
        ),
        trial(
            "fake_redirect_loop_is_bounded",
            &[],
            fake_redirect_loop_is_bounded,
        ),
        trial(
            "fake_429_with_retry_after_seconds_and_date",
            &[],
            fake_429_with_retry_after_seconds_and_date,
        ),
        trial(
            "fake_retry_after_too_long_fails_fast",
            &[],
            fake_retry_after_too_long_fails_fast,
        ),
        trial(
            "fake_5xx_burst_then_success_and_bounded_retries",
            &[],
            fake_5xx_burst_then_success_and_bounded_retries,
        ),
        trial(
            "fake_connection_errors_are_retried",
            &[],
            fake_connection_errors_are_retried,
        ),
        trial(
            "fake_slow_answer_times_out",
            &[],
            fake_slow_answer_times_out,
        ),
        trial("fake_truncated_body", &[], fake_truncated_body),
        trial("fake_malformed_json", &[], fake_malformed_json),
        trial("fake_content_types", &[], fake_content_types),
        trial(
            "fake_head_without_digest_falls_back_to_get",
            &[],
            fake_head_without_digest_falls_back_to_get,
        ),
        trial(
            "fake_plain_http_credentials_refused",
            &[],
            fake_plain_http_credentials_refused,
        ),
        trial(
            "fake_bearer_token_cache_and_refresh_on_401",
            &[],
            fake_bearer_token_cache_and_refresh_on_401,
        ),
        trial(
            "fake_rate_limit_per_registry",
            &[],
            fake_rate_limit_per_registry,
        ),
        trial(
            "fake_host_concurrency_bound",
            &[],
            fake_host_concurrency_bound,
        ),
        trial(
            "fake_secrets_never_in_debug_or_errors",
            &[],
            fake_secrets_never_in_debug_or_errors,
        ),
        trial(
            "fake_settings_file_drives_the_client",
            &[],
            fake_settings_file_drives_the_client,
        ),
        trial(
            "fake_secrets_redacted_docker_config_auths",
            &[],
            fake_secrets_redacted_docker_config_auths,
        ),
        trial(
            "fake_secrets_redacted_env_credentials",
            &[],
            fake_secrets_redacted_env_credentials,
        ),
        trial(
            "fake_secrets_redacted_env_credentials_through_token_service",
            &[],
            fake_secrets_redacted_env_credentials_through_token_service,
        ),
        trial(
            "fake_secrets_redacted_auth_file",
            &[],
            fake_secrets_redacted_auth_file,
        ),
        trial(
            "fake_secrets_redacted_config_json_secret",
            &[],
            fake_secrets_redacted_config_json_secret,
        ),
        trial(
            "fake_secrets_redacted_identity_token",
            &[],
            fake_secrets_redacted_identity_token,
        ),
        trial(
            "fake_secrets_redacted_registry_token",
            &[],
            fake_secrets_redacted_registry_token,
        ),
        trial(
            "fake_refusals_name_the_credential_source",
            &[],
            fake_refusals_name_the_credential_source,
        ),
        trial(
            "fake_refusals_with_tokens_name_the_source",
            &[],
            fake_refusals_with_tokens_name_the_source,
        ),
        trial(
            "fake_endless_pagination_stops_at_the_default_limit",
            &[],
            fake_endless_pagination_stops_at_the_default_limit,
        ),
        trial(
            "fake_pagination_limits_from_the_settings_file",
            &[],
            fake_pagination_limits_from_the_settings_file,
        ),
        trial(
            "fake_trickling_body_hits_the_request_timeout",
            &[],
            fake_trickling_body_hits_the_request_timeout,
        ),
        trial(
            "fake_run_deadline_stops_slow_and_retrying_registries",
            &[],
            fake_run_deadline_stops_slow_and_retrying_registries,
        ),
        trial(
            "fake_dns_failure_is_not_retried",
            &[],
            fake_dns_failure_is_not_retried,
        ),
        trial(
            "fake_retries_are_logged_at_info_and_counted",
            &[],
            fake_retries_are_logged_at_info_and_counted,
        ),
        trial(
            "fake_observer_sees_listing_progress",
            &[],
            fake_observer_sees_listing_progress,
        ),
    ]);
}
