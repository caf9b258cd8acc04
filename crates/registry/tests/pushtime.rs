//! Push times from the registry vendors' APIs, which cannot run here:
//! loopback fakes answering with the shapes the vendors document (Docker
//! Hub tags, GitHub package versions, Quay tags, Harbor artifacts, GitLab
//! registry repositories and tags), then the same APIs down, refusing, or
//! answering nonsense: every failure gives no time (fail closed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_registry::settings::{HostConfig, PushTimeConfig};
use image_update_registry::{
    ClientSettings, Credential, CredentialStore, RegistryClient, Repository, Secret, Timestamp,
};
use image_update_testkit::registry::{FakeServer, Recorded, Reply, free_port};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
/// The registry host the fakes stand for (never contacted: only the API is).
const HOST: &str = "registry.test.invalid";

fn client(api: &str, url: &str, credential: Option<Credential>) -> RegistryClient {
    let mut settings = ClientSettings::default();
    settings.set_host(
        HOST,
        HostConfig {
            push_time: Some(PushTimeConfig {
                api: api.to_owned(),
                url: Some(url.to_owned()),
            }),
            ..HostConfig::default()
        },
    );
    settings.retry.max_retries = 1;
    settings.retry.initial_backoff = std::time::Duration::from_millis(5);
    settings.credentials = match credential {
        Some(c) => CredentialStore::anonymous().with_credential(HOST, c),
        None => CredentialStore::anonymous(),
    };
    RegistryClient::new(settings).unwrap()
}

fn repo(path: &str) -> Repository {
    Repository::parse(&format!("{HOST}/{path}")).unwrap()
}

fn basic(user: &str, pass: &str) -> Credential {
    Credential::Basic {
        username: user.to_owned(),
        password: Secret::new(pass),
    }
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap()
}

/// Runs `api` against a fake answering `good` for its documented request,
/// then against fakes that are down, answer 500, nonsense, or another digest.
fn vendor(
    api: &str,
    path: &str,
    tag: &str,
    credential: Option<Credential>,
    good: fn(&Recorded, &str) -> Option<Reply>,
    want: &str,
    source: &str,
) {
    let fake = FakeServer::start(move |r| good(r, DIGEST).unwrap_or_else(|| Reply::status(404)));
    let c = client(api, &fake.url(""), credential.clone());
    let t = c.push_time(&repo(path), tag, DIGEST).unwrap().unwrap();
    assert_eq!(t.at, at(want), "{api}");
    assert_eq!(t.source, source);
    // Another digest under the tag: no time.
    let moved = FakeServer::start(move |r| good(r, OTHER).unwrap_or_else(|| Reply::status(404)));
    let c = client(api, &moved.url(""), credential.clone());
    assert_eq!(
        c.push_time(&repo(path), tag, DIGEST).unwrap(),
        None,
        "{api} moved"
    );
    // Down: an error (the gate turns it into "no trusted time").
    let c = client(
        api,
        &format!("http://127.0.0.1:{}", free_port()),
        credential.clone(),
    );
    assert!(c.push_time(&repo(path), tag, DIGEST).is_err(), "{api} down");
    // Failing.
    let failing = FakeServer::start(|_| Reply::json(500, "{}"));
    let c = client(api, &failing.url(""), credential.clone());
    assert!(c.push_time(&repo(path), tag, DIGEST).is_err(), "{api} 500");
    // Nonsense.
    let nonsense = FakeServer::start(|r| {
        if r.method == "POST" {
            Reply::json(200, r#"{"token":"t"}"#)
        } else {
            Reply::json(200, "<html>not json")
        }
    });
    let c = client(api, &nonsense.url(""), credential.clone());
    assert!(
        c.push_time(&repo(path), tag, DIGEST).is_err(),
        "{api} nonsense"
    );
    // Well-formed JSON of the wrong shape: an error or no time, never a time.
    let shapeless = FakeServer::start(|r| {
        if r.method == "POST" {
            Reply::json(200, r#"{"token":"t"}"#)
        } else {
            Reply::json(200, r#"{"unexpected": [1, 2, 3]}"#)
        }
    });
    let c = client(api, &shapeless.url(""), credential);
    assert!(
        !matches!(c.push_time(&repo(path), tag, DIGEST), Ok(Some(_))),
        "{api} shapeless"
    );
}

#[test]
fn docker_hub() {
    vendor(
        "dockerhub",
        "acme/app",
        "1.2.0",
        Some(basic("acme", "hub-token")),
        |r, digest| {
            if r.method == "POST" && r.path() == "/v2/users/login" {
                let body: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
                return (body["username"] == "acme" && body["password"] == "hub-token")
                    .then(|| Reply::json(200, r#"{"token":"hub-jwt"}"#));
            }
            (r.path() == "/v2/namespaces/acme/repositories/app/tags/1.2.0"
                && r.header("authorization") == Some("Bearer hub-jwt"))
            .then(|| {
                Reply::json(
                    200,
                    serde_json::json!({
                        "name": "1.2.0",
                        "digest": digest,
                        "last_updated": "2026-03-02T00:00:00Z",
                        "tag_last_pushed": "2026-03-01T10:00:00.123456Z",
                        "tag_last_pulled": "2026-03-05T00:00:00Z",
                        "images": [{"architecture": "amd64", "os": "linux", "digest": OTHER}],
                    })
                    .to_string(),
                )
            })
        },
        "2026-03-01T10:00:00.123456Z",
        "Docker Hub tag_last_pushed",
    );
}

#[test]
fn github_container_registry_pages() {
    vendor(
        "ghcr",
        "acme/app",
        "1.2.0",
        Some(basic("bot", "ghp_token")),
        |r, digest| {
            if r.header("authorization") != Some("Bearer ghp_token") {
                return Some(Reply::json(401, r#"{"message":"Requires authentication"}"#));
            }
            // An organisation that is a user: /orgs answers 404.
            if !r
                .path()
                .starts_with("/users/acme/packages/container/app/versions")
            {
                return None;
            }
            let version = |id: u32, name: &str, created: &str| {
                serde_json::json!({
                    "id": id,
                    "name": name,
                    "created_at": created,
                    "updated_at": "2026-04-01T00:00:00Z",
                    "metadata": {"package_type": "container", "container": {"tags": []}},
                })
            };
            if r.query_value("page").as_deref() == Some("2") {
                Some(Reply::json(
                    200,
                    serde_json::json!([version(2, digest, "2026-02-01T08:00:00Z")]).to_string(),
                ))
            } else {
                Some(
                    Reply::json(
                        200,
                        serde_json::json!([version(3, OTHER, "2026-03-01T00:00:00Z")]).to_string(),
                    )
                    .with_header(
                        "Link",
                        r#"</users/acme/packages/container/app/versions?per_page=100&page=2>; rel="next""#,
                    ),
                )
            }
        },
        "2026-02-01T08:00:00Z",
        "GitHub package version created_at",
    );
}

#[test]
fn github_without_a_token_gives_no_time() {
    let fake = FakeServer::start(|_| Reply::json(200, "[]"));
    let c = client("ghcr", &fake.url(""), None);
    assert_eq!(c.push_time(&repo("acme/app"), "1", DIGEST).unwrap(), None);
    assert_eq!(fake.requests().len(), 0);
}

#[test]
fn quay() {
    vendor(
        "quay",
        "acme/app",
        "1.2.0",
        None,
        |r, digest| {
            (r.path() == "/api/v1/repository/acme/app/tag/"
                && r.query_value("specificTag").as_deref() == Some("1.2.0")
                && r.query_value("onlyActiveTags").as_deref() == Some("true"))
            .then(|| {
                Reply::json(
                    200,
                    serde_json::json!({
                        "tags": [{
                            "name": "1.2.0",
                            "reversion": false,
                            "start_ts": 1_772_366_400,
                            "manifest_digest": digest,
                            "is_manifest_list": false,
                            "size": 1234,
                            "last_modified": "Sun, 01 Mar 2026 12:00:00 -0000",
                        }],
                        "page": 1,
                        "has_additional": false,
                    })
                    .to_string(),
                )
            })
        },
        "2026-03-01T12:00:00Z",
        "Quay tag start_ts",
    );
}

#[test]
fn harbor() {
    vendor(
        "harbor",
        "library/team/app",
        "1.2.0",
        Some(basic("robot$ci", "harbor-secret")),
        |r, digest| {
            let auth = image_update_testkit::registry::basic("robot$ci", "harbor-secret");
            (r.path()
                == format!(
                    "/api/v2.0/projects/library/repositories/team%252Fapp/artifacts/{}",
                    digest.replace(':', "%3A")
                )
                && r.header("authorization") == Some(auth.as_str()))
            .then(|| {
                Reply::json(
                    200,
                    serde_json::json!({
                        "id": 7,
                        "digest": digest,
                        "push_time": "2026-01-15T09:30:00.000Z",
                        "pull_time": "2026-02-01T00:00:00.000Z",
                        "tags": [{"name": "1.2.0", "push_time": "2026-01-20T00:00:00.000Z"}],
                    })
                    .to_string(),
                )
            })
        },
        "2026-01-15T09:30:00Z",
        "Harbor artifact push_time",
    );
}

#[test]
fn gitlab() {
    vendor(
        "gitlab",
        "group/project/image",
        "1.2.0",
        Some(basic("deploy", "glpat-token")),
        |r, digest| {
            if r.header("authorization") != Some("Bearer glpat-token") {
                return Some(Reply::json(401, r#"{"message":"401 Unauthorized"}"#));
            }
            match r.path() {
                // group/project/image is not a project; group/project is.
                "/api/v4/projects/group%2Fproject/registry/repositories" => Some(Reply::json(
                    200,
                    serde_json::json!([
                        {"id": 1, "name": "", "path": "group/project", "location": "registry.test.invalid/group/project"},
                        {"id": 2, "name": "image", "path": "group/project/image", "location": "registry.test.invalid/group/project/image"},
                    ])
                    .to_string(),
                )),
                "/api/v4/projects/group%2Fproject/registry/repositories/2/tags/1.2.0" => {
                    Some(Reply::json(
                        200,
                        serde_json::json!({
                            "name": "1.2.0",
                            "path": "group/project/image:1.2.0",
                            "location": "registry.test.invalid/group/project/image:1.2.0",
                            "revision": "abc",
                            "digest": digest,
                            "created_at": "2026-02-20T16:00:00.000+00:00",
                            "total_size": 100,
                        })
                        .to_string(),
                    ))
                }
                _ => None,
            }
        },
        "2026-02-20T16:00:00Z",
        "GitLab registry tag created_at",
    );
}

#[test]
fn no_api_for_a_plain_registry() {
    let c = RegistryClient::new(ClientSettings::default()).unwrap();
    assert_eq!(c.push_time(&repo("acme/app"), "1", DIGEST).unwrap(), None);
}

#[test]
fn secrets_stay_out_of_errors() {
    let fake = FakeServer::start(|r| {
        if r.method == "POST" {
            Reply::json(200, r#"{"token":"hub-jwt-secret"}"#)
        } else {
            Reply::json(
                500,
                r#"{"message":"you sent hub-jwt-secret and hub-password"}"#,
            )
        }
    });
    let c = client(
        "dockerhub",
        &fake.url(""),
        Some(basic("acme", "hub-password")),
    );
    let e = c
        .push_time(&repo("acme/app"), "1", DIGEST)
        .unwrap_err()
        .to_string();
    assert!(
        !e.contains("hub-jwt-secret") && !e.contains("hub-password"),
        "{e}"
    );
    assert!(e.contains("<redacted>"), "{e}");
}
