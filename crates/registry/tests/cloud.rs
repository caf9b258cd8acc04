//! The cloud registries' logins (`image_update_registry::cloud`), each
//! against the real thing where there is one on this machine and a
//! loopback fake answering in the documented shapes where there is not:
//!
//! * `aws_*`: moto's STS, IAM and ECR (`moto_server`, from PyPI), which
//!   checks every request's Signature Version 4 and the key's IAM
//!   permissions once asked to; fakes of the container credentials agent,
//!   IMDSv2 and a misbehaving STS or ECR;
//! * `gcp_*`: fakes of the metadata server, the OAuth2 token endpoint
//!   (which checks the RS256 assertion with the key's public half) and
//!   Google's STS and IAM credentials;
//! * `azure_*`: fakes of Entra ID, the managed identity endpoint and ACR's
//!   `/oauth2/exchange`;
//! * `real_*`: the whole way, to a real `docker-registry` (htpasswd)
//!   reached under the cloud registry's name through a CONNECT proxy,
//!   accepting only the password the login produced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use image_update_registry::{
    ClientSettings, CloudEnv, Credential, CredentialSource, HostConfig, Provider, RegistryClient,
    Repository, RetryPolicy,
};
use image_update_testkit::cloud::{
    ConnectProxy, MOTO_ACCOUNT, MOTO_BIN, Moto, forwarder, forwarder_with, moto_ecr_password,
};
use image_update_testkit::registry::{
    Auth, FakeServer, ImageSpec, Recorded, Registry, Reply, percent_decode,
};
use image_update_testkit::{self as testkit, trial};

const ECR: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
const GAR: &str = "europe-west4-docker.pkg.dev";
const ACR: &str = "myreg.azurecr.io";
const TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn b64url(s: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Settings whose logins read `env` only, with `provider` for `host`.
fn settings(env: &[(&str, &str)], host: &str, provider: Provider) -> ClientSettings {
    let mut s = ClientSettings {
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(5),
        },
        cloud_env: Arc::new(CloudEnv::from_vars(env.iter().copied())),
        ..ClientSettings::default()
    };
    s.set_provider(host, provider);
    s
}

fn repo(host: &str, path: &str) -> Repository {
    Repository::parse(&format!("{host}/{path}")).unwrap()
}

fn login(s: &ClientSettings, host: &str) -> Result<(String, String, String), String> {
    let client = RegistryClient::new(s.clone()).unwrap();
    match client.cloud_login(&repo(host, "team/app")) {
        Ok(Some((Credential::Basic { username, password }, source))) => {
            Ok((username, password.expose().to_owned(), source.to_string()))
        }
        Ok(other) => panic!("not a username/password: {other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

fn ecr_answer(password: &str, expires_at: f64) -> Reply {
    Reply::json(
        200,
        serde_json::json!({"authorizationData": [{
            "authorizationToken": b64(&format!("AWS:{password}")),
            "expiresAt": expires_at,
            "proxyEndpoint": format!("https://{ECR}"),
        }]})
        .to_string(),
    )
}

fn ecr_calls(server: &FakeServer) -> usize {
    server.count(|r| r.header("x-amz-target") == Some(TARGET))
}

// ---------------------------------------------------------------------------
// AWS against moto

fn aws_keys_signed_for_moto() {
    let moto = Moto::start();
    let (id, secret) = moto.user("puller", &["ecr:GetAuthorizationToken"]);
    moto.require_auth(0);
    let front = forwarder(&format!("127.0.0.1:{}", moto.port));
    let url = front.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", secret.as_str()),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let (user, password, source) = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap();
    assert_eq!(user, "AWS");
    assert_eq!(password, moto_ecr_password(MOTO_ACCOUNT));
    assert!(
        source.contains("aws login with the environment"),
        "{source}"
    );
    // Signed for ECR in the registry's own region.
    let sent = front.requests();
    assert_eq!(ecr_calls(&front), 1);
    let authorization = sent[0].header("authorization").unwrap();
    assert!(
        authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential={id}/"))
            && authorization.contains("/eu-west-1/ecr/aws4_request"),
        "{authorization}"
    );
    // A wrong secret: moto's own code, named with the provider and the source.
    let env = [
        ("AWS_ACCESS_KEY_ID", id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", "not-the-secret-key"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    assert!(
        e.contains("aws login failed with the environment (AWS_ACCESS_KEY_ID")
            && e.contains("SignatureDoesNotMatch"),
        "{e}"
    );
    assert!(!e.contains("not-the-secret-key"), "{e}");
}

fn aws_denied_names_the_code() {
    let moto = Moto::start();
    let (id, secret) = moto.user("lister", &["ecr:ListImages"]);
    moto.require_auth(0);
    let url = moto.url();
    let env = [
        ("AWS_ACCESS_KEY_ID", id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", secret.as_str()),
        ("AWS_ENDPOINT_URL", url.as_str()),
    ];
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    assert!(
        e.starts_with(ECR) && e.contains("aws login failed") && e.contains("AccessDenied"),
        "{e}"
    );
    assert!(!e.contains(&secret), "{e}");
}

fn aws_web_identity_assumes_the_role() {
    let moto = Moto::start();
    let role = moto.role("image-update", &["ecr:GetAuthorizationToken"]);
    // The unsigned AssumeRoleWithWebIdentity is let through; the ECR call,
    // signed with the role's session, is checked against the role's policy.
    moto.require_auth(1);
    let front = forwarder(&format!("127.0.0.1:{}", moto.port));
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    fs_err::write(&token_file, "eyJhbGciOiJSUzI1NiJ9.web-identity-token.sig\n").unwrap();
    let url = front.url("");
    let token_path = token_file.to_str().unwrap();
    let env = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token_path),
        ("AWS_ROLE_ARN", role.as_str()),
        ("AWS_ROLE_SESSION_NAME", "test"),
        ("AWS_ENDPOINT_URL", url.as_str()),
    ];
    let s = settings(&env, ECR, Provider::Aws);
    let (user, password, source) = login(&s, ECR).unwrap();
    assert_eq!(
        (user.as_str(), password.as_str()),
        ("AWS", "123456789012-auth-token")
    );
    assert!(
        source.contains(&format!("web identity (AWS_ROLE_ARN {role}")),
        "{source}"
    );
    let sent = front.requests();
    let sts = &sent[0];
    let form = String::from_utf8_lossy(&sts.body);
    assert!(
        form.contains("Action=AssumeRoleWithWebIdentity")
            && form.contains("WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.web-identity-token.sig")
            && form.contains("RoleSessionName=test"),
        "{form}"
    );
    assert!(sts.header("authorization").is_none());
    let ecr = &sent[1];
    assert!(ecr.header("x-amz-security-token").is_some());
    // A second registry of the partition, by a client made from a clone of the
    // settings (as the run's clients are): the role's session and the first
    // registry's password are used again.
    let other = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
    let mut s2 = s.clone();
    s2.set_provider(other, Provider::Aws);
    let client = RegistryClient::new(s2).unwrap();
    client.cloud_login(&repo(ECR, "app")).unwrap().unwrap();
    client.cloud_login(&repo(other, "app")).unwrap().unwrap();
    let sts_calls = front.count(|r| String::from_utf8_lossy(&r.body).contains("AssumeRoleWith"));
    assert_eq!(sts_calls, 1);
    assert_eq!(ecr_calls(&front), 2);
    // No role: said before anything is sent.
    let e = login(
        &settings(
            &[
                ("AWS_WEB_IDENTITY_TOKEN_FILE", token_path),
                ("AWS_ENDPOINT_URL", &url),
            ],
            ECR,
            Provider::Aws,
        ),
        ECR,
    )
    .unwrap_err();
    assert!(e.contains("AWS_ROLE_ARN is not"), "{e}");
}

fn aws_one_login_for_a_registry_however_many_repositories() {
    let moto = Moto::start();
    let front = forwarder(&format!("127.0.0.1:{}", moto.port));
    let url = front.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let client = RegistryClient::new(settings(&env, ECR, Provider::Aws)).unwrap();
    std::thread::scope(|scope| {
        for i in 0..16 {
            let client = &client;
            scope.spawn(move || {
                client
                    .cloud_login(&repo(ECR, &format!("app{i}")))
                    .unwrap()
                    .unwrap();
            });
        }
    });
    assert_eq!(ecr_calls(&front), 1);
    // moto's token expired in 2015: taken as a minute's life, not a login per request.
    for i in 0..5 {
        client
            .cloud_login(&repo(ECR, &format!("again{i}")))
            .unwrap();
    }
    assert_eq!(ecr_calls(&front), 1);
    assert_eq!(client.settings().logins.exchanges(), 1);
}

fn aws_every_partition_signs_in_its_own_region() {
    let moto = Moto::start();
    let front = forwarder(&format!("127.0.0.1:{}", moto.port));
    let url = front.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    for (host, scope) in [
        (
            "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
            "/cn-north-1/ecr/",
        ),
        (
            "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com",
            "/us-gov-west-1/ecr/",
        ),
        (
            "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov",
            "/us-iso-east-1/ecr/",
        ),
    ] {
        login(&settings(&env, host, Provider::Aws), host).unwrap();
        let last = front.requests().pop().unwrap();
        let authorization = last.header("authorization").unwrap();
        assert!(authorization.contains(scope), "{host}: {authorization}");
    }
}

// ---------------------------------------------------------------------------
// AWS against fakes

fn aws_container_credentials_of_pod_identity() {
    let moto = Moto::start();
    let agent = FakeServer::start(|r: &Recorded| {
        if r.header("authorization") != Some("pod-identity-token") {
            return Reply::json(401, r#"{"code":"AccessDenied","message":"bad token"}"#);
        }
        Reply::json(
            200,
            serde_json::json!({
                "AccessKeyId": "ASIAPODIDENTITY",
                "SecretAccessKey": "pod-secret-key",
                "Token": "pod-session-token",
                "Expiration": "2099-01-01T00:00:00Z",
            })
            .to_string(),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("eks-pod-identity-token");
    fs_err::write(&token, "pod-identity-token\n").unwrap();
    let full = agent.url("/v1/credentials");
    let (moto_url, token_path) = (moto.url(), token.to_str().unwrap().to_owned());
    let env = [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full.as_str()),
        (
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            token_path.as_str(),
        ),
        ("AWS_ENDPOINT_URL_ECR", moto_url.as_str()),
    ];
    let (_, password, source) = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap();
    assert_eq!(password, "123456789012-auth-token");
    assert!(source.contains("container credentials"), "{source}");
    // Plain HTTP anywhere but the agent's addresses is refused, as the SDKs do.
    let env = [(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "http://192.0.2.1/v1/credentials",
    )];
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    assert!(
        e.contains("neither a loopback address nor the container agent's"),
        "{e}"
    );
    // A wrong token: the agent's code.
    fs_err::write(&token, "stale").unwrap();
    let env = [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full.as_str()),
        (
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            token_path.as_str(),
        ),
    ];
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    assert!(e.contains("AccessDenied") && !e.contains("stale"), "{e}");
}

fn imds(slow: Duration) -> FakeServer {
    FakeServer::start(move |r: &Recorded| {
        let token_ok = r.header("x-aws-ec2-metadata-token") == Some("imds-session");
        let reply = match (r.method.as_str(), r.path()) {
            ("PUT", "/latest/api/token")
                if r.header("x-aws-ec2-metadata-token-ttl-seconds") == Some("21600") =>
            {
                Reply::status(200).with_body("imds-session")
            }
            ("GET", "/latest/meta-data/iam/security-credentials/") if token_ok => {
                Reply::status(200).with_body("node-role\n")
            }
            ("GET", "/latest/meta-data/iam/security-credentials/node-role") if token_ok => {
                Reply::json(
                    200,
                    serde_json::json!({
                        "Code": "Success",
                        "Type": "AWS-HMAC",
                        "AccessKeyId": "ASIAIMDS",
                        "SecretAccessKey": "imds-secret",
                        "Token": "imds-token",
                        "Expiration": "2099-01-01T00:00:00Z",
                    })
                    .to_string(),
                )
            }
            _ => Reply::status(401),
        };
        if slow.is_zero() {
            reply
        } else {
            Reply::Delay(slow, Box::new(reply))
        }
    })
}

fn aws_imds_v2() {
    let moto = Moto::start();
    let server = imds(Duration::ZERO);
    let (base, moto_url) = (server.url(""), moto.url());
    let env = [
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", base.as_str()),
        ("AWS_ENDPOINT_URL_ECR", moto_url.as_str()),
    ];
    let (_, _, source) = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap();
    assert!(
        source.contains("IMDSv2") && source.contains("role node-role"),
        "{source}"
    );
    assert_eq!(server.requests()[0].method, "PUT");
}

fn aws_slow_or_absent_imds_gives_up_quickly() {
    let server = imds(Duration::from_secs(5));
    let base = server.url("");
    let env = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", base.as_str())];
    let started = Instant::now();
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    // 1 s a request, one retry.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(
        e.contains("no AWS credentials") && e.contains("did not answer"),
        "{e}"
    );
    let env = [
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", base.as_str()),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    let before = server.requests().len();
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    assert!(e.contains("AWS_EC2_METADATA_DISABLED"), "{e}");
    assert_eq!(server.requests().len(), before);
}

fn aws_sts_refusal_is_named_and_redacted() {
    // An STS that refuses, echoing the web identity token.
    let sts = FakeServer::start(|r: &Recorded| {
        let body = String::from_utf8_lossy(&r.body).into_owned();
        let token = body
            .split('&')
            .find_map(|p| p.strip_prefix("WebIdentityToken="))
            .map(percent_decode)
            .unwrap_or_default();
        Reply::Respond {
            status: 403,
            headers: vec![("Content-Type".to_owned(), "text/xml".to_owned())],
            body: format!(
                "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity with {token}</Message></Error></ErrorResponse>"
            )
            .into_bytes(),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    fs_err::write(&token_file, "secret-web-identity-token").unwrap();
    let url = sts.url("");
    let env = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/none"),
        ("AWS_ENDPOINT_URL_STS", url.as_str()),
    ];
    let e = login(&settings(&env, ECR, Provider::Aws), ECR).unwrap_err();
    assert!(
        e.contains("aws login failed with web identity") && e.contains("AccessDenied"),
        "{e}"
    );
    assert!(
        !e.contains("secret-web-identity-token") && e.contains("<redacted>"),
        "{e}"
    );
    // One attempt for the run: the next repository of the registry does not try again.
    let client = RegistryClient::new(settings(&env, ECR, Provider::Aws)).unwrap();
    for path in ["app", "api", "web"] {
        assert!(client.cloud_login(&repo(ECR, path)).is_err());
    }
    assert_eq!(sts.requests().len(), 2);
}

fn aws_renewal_at_80_percent_of_life() {
    let n = Arc::new(AtomicUsize::new(0));
    let ecr = {
        let n = Arc::clone(&n);
        FakeServer::start(move |_| {
            let i = n.fetch_add(1, Ordering::SeqCst);
            ecr_answer(&format!("password-{i}"), (now() + 3) as f64)
        })
    };
    let url = ecr.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let client = RegistryClient::new(settings(&env, ECR, Provider::Aws)).unwrap();
    let password = |c: &RegistryClient| match c.cloud_login(&repo(ECR, "app")).unwrap().unwrap().0 {
        Credential::Basic { password, .. } => password.expose().to_owned(),
        other => panic!("{other:?}"),
    };
    assert_eq!(password(&client), "password-0");
    assert_eq!(password(&client), "password-0");
    // A three-second life is renewed after 2.4 s.
    std::thread::sleep(Duration::from_millis(3100));
    assert_eq!(password(&client), "password-1");
    assert_eq!(ecr_calls(&ecr), 2);
}

fn aws_ecr_public_when_asked() {
    let public = FakeServer::start(|r: &Recorded| {
        if r.header("x-amz-target") != Some("SpencerFrontendService.GetAuthorizationToken") {
            return Reply::json(400, r#"{"__type":"UnknownOperationException"}"#);
        }
        Reply::json(
            200,
            serde_json::json!({"authorizationData": {
                "authorizationToken": b64("AWS:public-password"),
                "expiresAt": 4_102_444_800.0,
            }})
            .to_string(),
        )
    });
    let url = public.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR_PUBLIC", url.as_str()),
    ];
    let (_, password, _) = login(
        &settings(&env, "public.ecr.aws", Provider::Aws),
        "public.ecr.aws",
    )
    .unwrap();
    assert_eq!(password, "public-password");
    let authorization = public.requests()[0]
        .header("authorization")
        .unwrap()
        .to_owned();
    assert!(
        authorization.contains("/us-east-1/ecr-public/"),
        "{authorization}"
    );
    // Without a provider it stays anonymous: no login at all.
    let client = RegistryClient::new(settings(&env, "other.example", Provider::Aws)).unwrap();
    assert!(
        client
            .cloud_login(&repo("public.ecr.aws", "app"))
            .unwrap()
            .is_none()
    );
}

fn aws_login_kept_on_disk_for_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let ecr = FakeServer::start(|_| ecr_answer("kept-password", 4_102_444_800.0));
    let cache = tempfile::tempdir().unwrap();
    let url = ecr.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let mut s = settings(&env, ECR, Provider::Aws);
    // Without a cache directory nothing is written anywhere.
    login(&s, ECR).unwrap();
    s.cache_dir = Some(cache.path().to_owned());
    let fresh = |s: &ClientSettings| ClientSettings {
        logins: Arc::default(),
        ..s.clone()
    };
    login(&fresh(&s), ECR).unwrap();
    let dir = cache.path().join("logins");
    let files: Vec<_> = fs_err::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let mode = |p: &std::path::Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&dir), 0o700);
    // The next run reads it: no new login.
    let (_, password, _) = login(&fresh(&s), ECR).unwrap();
    assert_eq!(password, "kept-password");
    assert_eq!(ecr_calls(&ecr), 2);
    // Another identity does not.
    let other = [
        ("AWS_ACCESS_KEY_ID", "AKIDOTHER"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let mut s2 = settings(&other, ECR, Provider::Aws);
    s2.cache_dir = Some(cache.path().to_owned());
    login(&s2, ECR).unwrap();
    assert_eq!(ecr_calls(&ecr), 3);
    // A file others can read is not used.
    fs_err::set_permissions(&files[0], std::fs::Permissions::from_mode(0o644)).unwrap();
    login(&fresh(&s), ECR).unwrap();
    assert_eq!(ecr_calls(&ecr), 4);
}

fn providers_refuse_other_hosts_before_sending() {
    let sink = FakeServer::start(|_| Reply::status(500));
    let url = sink.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL", url.as_str()),
        ("GCE_METADATA_HOST", &sink.authority()),
        ("AZURE_AUTHORITY_HOST", url.as_str()),
        ("AZURE_POD_IDENTITY_AUTHORITY_HOST", url.as_str()),
    ];
    for (host, provider, says) in [
        (
            "evil.example",
            Provider::Aws,
            "is not an Amazon ECR registry",
        ),
        (
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example",
            Provider::Aws,
            "is not an Amazon ECR registry",
        ),
        (
            "gcr.io.evil.example",
            Provider::Gcp,
            "is not a Google registry",
        ),
        (
            "evil.example",
            Provider::Azure,
            "is not an Azure Container Registry",
        ),
    ] {
        let e = login(&settings(&env, host, provider), host).unwrap_err();
        assert!(e.contains(says), "{host}: {e}");
    }
    assert!(sink.requests().is_empty());
}

// ---------------------------------------------------------------------------
// GCP

fn metadata_server(starting: usize) -> FakeServer {
    let n = AtomicUsize::new(0);
    FakeServer::start(move |r: &Recorded| {
        if n.fetch_add(1, Ordering::SeqCst) < starting {
            return Reply::status(503);
        }
        if r.header("metadata-flavor") != Some("Google")
            || r.path() != "/computeMetadata/v1/instance/service-accounts/default/token"
        {
            return Reply::status(403).with_header("Metadata-Flavor", "Google");
        }
        Reply::json(
            200,
            r#"{"access_token":"ya29.metadata-token","expires_in":3599,"token_type":"Bearer"}"#,
        )
        .with_header("Metadata-Flavor", "Google")
    })
}

fn gcp_metadata_server_retried_while_it_starts() {
    let server = metadata_server(2);
    let host = server.authority();
    let env = [("GCE_METADATA_HOST", host.as_str())];
    let (user, password, source) = login(&settings(&env, GAR, Provider::Gcp), GAR).unwrap();
    assert_eq!(
        (user.as_str(), password.as_str()),
        ("oauth2accesstoken", "ya29.metadata-token")
    );
    assert!(source.contains("metadata server"), "{source}");
    assert_eq!(server.requests().len(), 3);
    // One token for every Google registry of the run.
    let mut s = settings(&env, GAR, Provider::Gcp);
    s.set_provider("gcr.io", Provider::Gcp);
    let client = RegistryClient::new(s).unwrap();
    client.cloud_login(&repo(GAR, "p/r/a")).unwrap();
    client.cloud_login(&repo("gcr.io", "p/a")).unwrap();
    assert_eq!(server.requests().len(), 4);
    // Something that answers without Metadata-Flavor is not the metadata server.
    let impostor = FakeServer::start(|_| Reply::json(200, r#"{"access_token":"x"}"#));
    let host = impostor.authority();
    let e = login(
        &settings(&[("GCE_METADATA_HOST", &host)], GAR, Provider::Gcp),
        GAR,
    )
    .unwrap_err();
    assert!(e.contains("not a metadata server"), "{e}");
}

fn test_key() -> (String, Vec<u8>) {
    let pem = include_str!("../testdata/gcp/test-key.pem");
    let key = ureq::tls::PrivateKey::from_pem(pem.as_bytes()).unwrap();
    let pair = ring::signature::RsaKeyPair::from_pkcs8(key.der()).unwrap();
    let public = ring::signature::KeyPair::public_key(&pair)
        .as_ref()
        .to_vec();
    (pem.to_owned(), public)
}

fn form(r: &Recorded) -> BTreeMap<String, String> {
    String::from_utf8_lossy(&r.body)
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (percent_decode(k), percent_decode(v)))
        .collect()
}

fn gcp_service_account_key_signs_its_assertion() {
    let (pem, public) = test_key();
    let token_endpoint = FakeServer::start(move |r: &Recorded| {
        let f = form(r);
        let assertion = f.get("assertion").cloned().unwrap_or_default();
        let (input, signature) = assertion.rsplit_once('.').unwrap_or(("", ""));
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .unwrap_or_default();
        let key = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            public.clone(),
        );
        if f.get("grant_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
            || key.verify(input.as_bytes(), &signature).is_err()
        {
            return Reply::json(
                400,
                r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
            );
        }
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(input.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        if claims["iss"] != "updater@proj.iam.gserviceaccount.com" {
            return Reply::json(
                400,
                r#"{"error":"invalid_grant","error_description":"Invalid grant: account not found"}"#,
            );
        }
        if claims["scope"] != "https://www.googleapis.com/auth/cloud-platform"
            || !claims["aud"].as_str().unwrap_or("").ends_with("/token")
        {
            return Reply::json(400, r#"{"error":"invalid_scope"}"#);
        }
        Reply::json(
            200,
            r#"{"access_token":"ya29.sa-token","expires_in":3599,"token_type":"Bearer"}"#,
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key.json");
    let write = |key: &str, email: &str| {
        fs_err::write(
            &key_file,
            serde_json::json!({
                "type": "service_account",
                "project_id": "proj",
                "private_key_id": "k1",
                "private_key": key,
                "client_email": email,
                "token_uri": token_endpoint.url("/token"),
            })
            .to_string(),
        )
        .unwrap();
    };
    let email = "updater@proj.iam.gserviceaccount.com";
    write(&pem, email);
    let env = [("GOOGLE_APPLICATION_CREDENTIALS", key_file.to_str().unwrap())];
    let (_, password, source) = login(&settings(&env, "gcr.io", Provider::Gcp), "gcr.io").unwrap();
    assert_eq!(password, "ya29.sa-token");
    assert!(
        source.contains(&format!("service account {email}")),
        "{source}"
    );
    // An account the endpoint does not know: its own error code.
    write(&pem, "gone@proj.iam.gserviceaccount.com");
    let e = login(&settings(&env, "gcr.io", Provider::Gcp), "gcr.io").unwrap_err();
    assert!(
        e.contains("gcp login failed") && e.contains("invalid_grant"),
        "{e}"
    );
    // A key that is not one: said, without quoting it.
    write(&pem.replace("MII", "MIJ"), email);
    let e = login(&settings(&env, "gcr.io", Provider::Gcp), "gcr.io").unwrap_err();
    assert!(e.contains("private_key is not a usable RSA key"), "{e}");
    assert!(!e.contains("PRIVATE KEY"), "{e}");
}

fn gcp_external_account_with_impersonation() {
    let sts = FakeServer::start(|r: &Recorded| {
        let f = form(r);
        let ok = f.get("grant_type").map(String::as_str)
            == Some("urn:ietf:params:oauth:grant-type:token-exchange")
            && f.get("subject_token").map(String::as_str) == Some("oidc-subject-token")
            && f.get("audience").map(String::as_str)
                == Some(
                    "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
                )
            && f.get("subject_token_type").map(String::as_str)
                == Some("urn:ietf:params:oauth:token-type:jwt");
        if !ok {
            return Reply::json(
                400,
                r#"{"error":"invalid_request","error_description":"bad exchange"}"#,
            );
        }
        Reply::json(
            200,
            r#"{"access_token":"federated-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}"#,
        )
    });
    let iam = FakeServer::start(|r: &Recorded| {
        if r.header("authorization") != Some("Bearer federated-token") {
            return Reply::json(
                403,
                r#"{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}"#,
            );
        }
        Reply::json(
            200,
            r#"{"accessToken":"ya29.impersonated","expireTime":"2099-01-01T00:00:00Z"}"#,
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let subject = dir.path().join("subject");
    fs_err::write(&subject, "oidc-subject-token\n").unwrap();
    let file = dir.path().join("external.json");
    let write = |impersonation: &str| {
        fs_err::write(
            &file,
            serde_json::json!({
                "type": "external_account",
                "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": sts.url("/v1/token"),
                "service_account_impersonation_url": impersonation,
                "credential_source": {"file": subject.to_str().unwrap(), "format": {"type": "text"}},
            })
            .to_string(),
        )
        .unwrap();
    };
    write(
        &iam.url(
            "/v1/projects/-/serviceAccounts/sa@proj.iam.gserviceaccount.com:generateAccessToken",
        ),
    );
    let env = [("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap())];
    let (_, password, source) = login(&settings(&env, GAR, Provider::Gcp), GAR).unwrap();
    assert_eq!(password, "ya29.impersonated");
    assert!(source.contains("workload identity federation"), "{source}");
    // Without impersonation the federated token is the password.
    write("");
    let (_, password, _) = login(&settings(&env, GAR, Provider::Gcp), GAR).unwrap();
    assert_eq!(password, "federated-token");
    // A refused impersonation: Google's status as the code.
    write(&iam.url("/v1/x:generateAccessToken"));
    fs_err::write(&subject, "oidc-subject-token").unwrap();
    let iam_refusing = FakeServer::start(|_| {
        Reply::json(
            403,
            r#"{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}"#,
        )
    });
    write(&iam_refusing.url("/v1/x:generateAccessToken"));
    let e = login(&settings(&env, GAR, Provider::Gcp), GAR).unwrap_err();
    assert!(e.contains("PERMISSION_DENIED"), "{e}");
}

// ---------------------------------------------------------------------------
// Azure

fn entra_token(tid: &str) -> String {
    format!(
        "{}.{}.signature",
        b64url(br#"{"alg":"RS256","typ":"JWT"}"#),
        b64url(
            format!(r#"{{"aud":"https://containerregistry.azure.net","tid":"{tid}"}}"#).as_bytes()
        )
    )
}

fn acr_refresh_token(exp: i64) -> String {
    format!(
        "{}.{}.signature",
        b64url(br#"{"alg":"RS256","typ":"JWT"}"#),
        b64url(format!(r#"{{"exp":{exp},"grant_type":"refresh_token"}}"#).as_bytes())
    )
}

fn entra() -> FakeServer {
    FakeServer::start(|r: &Recorded| {
        let f = form(r);
        let scope_ok = f.get("scope").map(String::as_str)
            == Some("https://containerregistry.azure.net/.default");
        let federated = f.get("client_assertion_type").map(String::as_str)
            == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            && f.get("client_assertion").map(String::as_str) == Some("federated-k8s-token");
        let secret = f.get("client_secret").map(String::as_str) == Some("sp-secret");
        if r.path() != "/tenant-1/oauth2/v2.0/token"
            || f.get("client_id").map(String::as_str) != Some("client-1")
            || !scope_ok
            || !(federated || secret)
        {
            return Reply::json(
                401,
                r#"{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.","error_codes":[7000215]}"#,
            );
        }
        Reply::json(
            200,
            serde_json::json!({
                "token_type": "Bearer",
                "expires_in": 3599,
                "ext_expires_in": 3599,
                "access_token": entra_token("tenant-1"),
            })
            .to_string(),
        )
    })
}

/// ACR's exchange in front of `registry` (forwarded to it otherwise).
fn acr_front(registry: &str) -> FakeServer {
    forwarder_with(registry, |r: &Recorded| {
        if r.path() != "/oauth2/exchange" {
            return None;
        }
        let f = form(r);
        if f.get("grant_type").map(String::as_str) != Some("access_token")
            || f.get("service").map(String::as_str) != Some(ACR)
            || f.get("tenant").map(String::as_str) != Some("tenant-1")
            || f.get("access_token") != Some(&entra_token("tenant-1"))
        {
            return Some(Reply::json(
                401,
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"the access token is not valid"}]}"#,
            ));
        }
        Some(Reply::json(
            200,
            serde_json::json!({"refresh_token": acr_refresh_token(now() + 3 * 3600)}).to_string(),
        ))
    })
}

fn via_proxy(s: &mut ClientSettings, host: &str, proxy: &ConnectProxy) {
    s.set_host(
        host,
        HostConfig {
            insecure: Some(true),
            proxy: Some(proxy.url()),
            provider: Some(s.provider(host)),
            ..HostConfig::default()
        },
    );
}

/// Settings of an AKS workload identity (its token file under `dir`) with
/// `entra` as the authority and the registry behind `proxy`.
fn workload_identity(
    entra: &FakeServer,
    proxy: &ConnectProxy,
    dir: &std::path::Path,
) -> ClientSettings {
    let token = dir.join("azure-identity-token");
    fs_err::write(&token, "federated-k8s-token\n").unwrap();
    let authority = entra.url("");
    let env = [
        ("AZURE_FEDERATED_TOKEN_FILE", token.to_str().unwrap()),
        ("AZURE_CLIENT_ID", "client-1"),
        ("AZURE_TENANT_ID", "tenant-1"),
        ("AZURE_AUTHORITY_HOST", authority.as_str()),
    ];
    let mut s = settings(&env, ACR, Provider::Azure);
    via_proxy(&mut s, ACR, proxy);
    s
}

fn azure_workload_identity_exchanged_at_the_registry() {
    let entra = entra();
    let front = acr_front("127.0.0.1:9");
    let proxy = ConnectProxy::start(&[(ACR, front.authority())]);
    let dir = tempfile::tempdir().unwrap();
    let s = workload_identity(&entra, &proxy, dir.path());
    let (user, password, source) = login(&s, ACR).unwrap();
    assert_eq!(user, "00000000-0000-0000-0000-000000000000");
    assert!(password.starts_with("eyJ"), "{password}");
    assert!(
        source.contains("workload identity client-1 of tenant tenant-1"),
        "{source}"
    );
    assert_eq!(proxy.connects(), [format!("{ACR}:80")]);
    // The service principal's secret, refused: Entra's code, no secret.
    let authority = entra.url("");
    let env = [
        ("AZURE_CLIENT_SECRET", "wrong-sp-secret"),
        ("AZURE_CLIENT_ID", "client-1"),
        ("AZURE_TENANT_ID", "tenant-1"),
        ("AZURE_AUTHORITY_HOST", authority.as_str()),
    ];
    let mut s = settings(&env, ACR, Provider::Azure);
    via_proxy(&mut s, ACR, &proxy);
    let e = login(&s, ACR).unwrap_err();
    assert!(
        e.contains("azure login failed with service principal client-1")
            && e.contains("invalid_client"),
        "{e}"
    );
    assert!(!e.contains("wrong-sp-secret"), "{e}");
}

fn azure_managed_identity_sends_strings_for_numbers() {
    let imds = FakeServer::start(|r: &Recorded| {
        if r.header("metadata") != Some("true")
            || r.query_value("resource").as_deref() != Some("https://containerregistry.azure.net")
            || r.query_value("api-version").is_none()
        {
            return Reply::json(
                400,
                r#"{"error":"invalid_request","error_description":"Required metadata header not specified"}"#,
            );
        }
        Reply::json(
            200,
            serde_json::json!({
                "access_token": entra_token("tenant-1"),
                "client_id": "mi-client",
                "expires_in": "86399",
                "expires_on": (now() + 86399).to_string(),
                "ext_expires_in": "86399",
                "not_before": now().to_string(),
                "resource": "https://containerregistry.azure.net",
                "token_type": "Bearer",
            })
            .to_string(),
        )
    });
    let front = acr_front("127.0.0.1:9");
    let proxy = ConnectProxy::start(&[(ACR, front.authority())]);
    let base = imds.url("");
    let env = [("AZURE_POD_IDENTITY_AUTHORITY_HOST", base.as_str())];
    let mut s = settings(&env, ACR, Provider::Azure);
    via_proxy(&mut s, ACR, &proxy);
    let (_, _, source) = login(&s, ACR).unwrap();
    assert!(source.contains("managed identity"), "{source}");
}

// ---------------------------------------------------------------------------
// The whole way: a real registry under the cloud registry's name

fn push(registry: &Registry, repo: &str, tags: &[&str]) {
    for tag in tags {
        registry.push_image(
            repo,
            tag,
            &ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z"),
        );
    }
}

fn real_ecr_registry_with_the_password_moto_gave() {
    let moto = Moto::start();
    let (id, secret) = moto.user("puller", &["ecr:GetAuthorizationToken"]);
    moto.require_auth(0);
    let registry = Registry::start(Auth::Htpasswd {
        user: "AWS".to_owned(),
        password: moto_ecr_password(MOTO_ACCOUNT),
    });
    push(&registry, "team/app", &["1.0.0", "1.1.0"]);
    let proxy = ConnectProxy::start(&[(ECR, registry.authority())]);
    let url = moto.url();
    let env = [
        ("AWS_ACCESS_KEY_ID", id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", secret.as_str()),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let mut s = settings(&env, ECR, Provider::Aws);
    via_proxy(&mut s, ECR, &proxy);
    let client = RegistryClient::new(s.clone()).unwrap();
    let mut tags = client.list_tags(&repo(ECR, "team/app")).unwrap();
    tags.sort();
    assert_eq!(tags, ["1.0.0", "1.1.0"]);
    client
        .digest(&repo(ECR, "team/app"), "1.1.0", None)
        .unwrap();
    // Without the provider the registry refuses, naming where to look.
    let mut anonymous = s.clone();
    anonymous.set_provider(ECR, Provider::Generic);
    let e = RegistryClient::new(anonymous)
        .unwrap()
        .list_tags(&repo(ECR, "team/app"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("401"), "{e}");
}

fn real_expired_password_logs_in_once_more() {
    // An ECR that hands out a new password each time; a registry (in front of the
    // real one) that says the first has expired, as ECR does.
    let n = Arc::new(AtomicUsize::new(0));
    let ecr = {
        let n = Arc::clone(&n);
        FakeServer::start(move |_| {
            let i = n.fetch_add(1, Ordering::SeqCst);
            ecr_answer(&format!("password-{i}"), 4_102_444_800.0)
        })
    };
    let registry = Registry::start(Auth::Htpasswd {
        user: "AWS".to_owned(),
        password: "password-1".to_owned(),
    });
    push(&registry, "team/app", &["1.0.0"]);
    let stale = format!("Basic {}", b64("AWS:password-0"));
    let front = forwarder_with(&registry.authority(), move |r: &Recorded| {
        (r.header("authorization") == Some(stale.as_str())).then(|| {
            Reply::json(
                403,
                r#"{"errors":[{"code":"DENIED","message":"Your authorization token has expired. Reauthenticate and try again."}]}"#,
            )
        })
    });
    let proxy = ConnectProxy::start(&[(ECR, front.authority())]);
    let url = ecr.url("");
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_ECR", url.as_str()),
    ];
    let mut s = settings(&env, ECR, Provider::Aws);
    via_proxy(&mut s, ECR, &proxy);
    let client = RegistryClient::new(s).unwrap();
    assert_eq!(client.list_tags(&repo(ECR, "team/app")).unwrap(), ["1.0.0"]);
    assert_eq!(ecr_calls(&ecr), 2);
}

fn real_google_registry_with_the_metadata_token() {
    let metadata = metadata_server(0);
    let registry = Registry::start(Auth::Htpasswd {
        user: "oauth2accesstoken".to_owned(),
        password: "ya29.metadata-token".to_owned(),
    });
    push(&registry, "proj/repo/app", &["2.0.0"]);
    let proxy = ConnectProxy::start(&[(GAR, registry.authority())]);
    let host = metadata.authority();
    let mut s = settings(&[("GCE_METADATA_HOST", &host)], GAR, Provider::Gcp);
    via_proxy(&mut s, GAR, &proxy);
    let client = RegistryClient::new(s).unwrap();
    assert_eq!(
        client.list_tags(&repo(GAR, "proj/repo/app")).unwrap(),
        ["2.0.0"]
    );
}

fn real_acr_with_the_exchanged_refresh_token() {
    let entra = entra();
    // The registry accepts the null GUID with the refresh token the exchange gives.
    let refresh = acr_refresh_token(4_102_444_800);
    let registry = Registry::start(Auth::Htpasswd {
        user: "00000000-0000-0000-0000-000000000000".to_owned(),
        password: refresh.clone(),
    });
    push(&registry, "app", &["3.0.0"]);
    let front = forwarder_with(&registry.authority(), move |r: &Recorded| {
        (r.path() == "/oauth2/exchange").then(|| {
            Reply::json(
                200,
                serde_json::json!({"refresh_token": refresh}).to_string(),
            )
        })
    });
    let proxy = ConnectProxy::start(&[(ACR, front.authority())]);
    let dir = tempfile::tempdir().unwrap();
    let s = workload_identity(&entra, &proxy, dir.path());
    let client = RegistryClient::new(s).unwrap();
    assert_eq!(client.list_tags(&repo(ACR, "app")).unwrap(), ["3.0.0"]);
    // Two exchanges for ACR: Entra ID, then the registry's.
    assert_eq!(client.settings().logins.exchanges(), 2);
    let source = client.cloud_login(&repo(ACR, "app")).unwrap().unwrap().1;
    assert!(matches!(source, CredentialSource::Cloud { .. }));
}

fn main() {
    let moto: &[&str] = &[MOTO_BIN];
    let both = &["docker-registry", MOTO_BIN];
    let registry = &["docker-registry"];
    testkit::run(vec![
        trial("aws_keys_signed_for_moto", moto, aws_keys_signed_for_moto),
        trial("aws_denied_names_the_code", moto, aws_denied_names_the_code),
        trial(
            "aws_web_identity_assumes_the_role",
            moto,
            aws_web_identity_assumes_the_role,
        ),
        trial(
            "aws_one_login_for_a_registry_however_many_repositories",
            moto,
            aws_one_login_for_a_registry_however_many_repositories,
        ),
        trial(
            "aws_every_partition_signs_in_its_own_region",
            moto,
            aws_every_partition_signs_in_its_own_region,
        ),
        trial(
            "aws_container_credentials_of_pod_identity",
            moto,
            aws_container_credentials_of_pod_identity,
        ),
        trial("aws_imds_v2", moto, aws_imds_v2),
        trial(
            "aws_slow_or_absent_imds_gives_up_quickly",
            &[],
            aws_slow_or_absent_imds_gives_up_quickly,
        ),
        trial(
            "aws_sts_refusal_is_named_and_redacted",
            &[],
            aws_sts_refusal_is_named_and_redacted,
        ),
        trial(
            "aws_renewal_at_80_percent_of_life",
            &[],
            aws_renewal_at_80_percent_of_life,
        ),
        trial("aws_ecr_public_when_asked", &[], aws_ecr_public_when_asked),
        trial(
            "aws_login_kept_on_disk_for_its_owner_only",
            &[],
            aws_login_kept_on_disk_for_its_owner_only,
        ),
        trial(
            "providers_refuse_other_hosts_before_sending",
            &[],
            providers_refuse_other_hosts_before_sending,
        ),
        trial(
            "gcp_metadata_server_retried_while_it_starts",
            &[],
            gcp_metadata_server_retried_while_it_starts,
        ),
        trial(
            "gcp_service_account_key_signs_its_assertion",
            &[],
            gcp_service_account_key_signs_its_assertion,
        ),
        trial(
            "gcp_external_account_with_impersonation",
            &[],
            gcp_external_account_with_impersonation,
        ),
        trial(
            "azure_workload_identity_exchanged_at_the_registry",
            &[],
            azure_workload_identity_exchanged_at_the_registry,
        ),
        trial(
            "azure_managed_identity_sends_strings_for_numbers",
            &[],
            azure_managed_identity_sends_strings_for_numbers,
        ),
        trial(
            "real_ecr_registry_with_the_password_moto_gave",
            both,
            real_ecr_registry_with_the_password_moto_gave,
        ),
        trial(
            "real_expired_password_logs_in_once_more",
            registry,
            real_expired_password_logs_in_once_more,
        ),
        trial(
            "real_google_registry_with_the_metadata_token",
            registry,
            real_google_registry_with_the_metadata_token,
        ),
        trial(
            "real_acr_with_the_exchanged_refresh_token",
            registry,
            real_acr_with_the_exchanged_refresh_token,
        ),
    ]);
}
