//! The pull-request client against loopback fakes of GitHub, GitLab, Gitea and Forgejo that
//! validate every request and every answer against the provider's API description
//! (`image_update_testkit::forge`). Each case runs on every provider; a case that needs the
//! descriptions is ignored with the reason when they are not installed
//! (`scripts/api-descriptions.sh`), and fails when `CI` is set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{HEAD, options, provider};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use image_update_forge::{
    Action, Content, Credentials, ErrorKind, Forge, HttpSettings, MergeMethod, Options, Proposal,
    Provider, Repository, RetryPolicy, Secret, WhenNothingToDo,
};
use image_update_testkit::forge::{App, FakeForge, Fault, Flavor, Pull, PullState};
use image_update_testkit::openapi::descriptions_dir;
use image_update_testkit::registry::{FakeServer, Reply};
use libtest_mimic::{Failed, Trial};
use serde_json::{Value, json};

const BASE: &str = "main";

fn token(flavor: Flavor) -> String {
    format!("tok-{}-5ecret", flavor.name())
}

fn settings() -> HttpSettings {
    HttpSettings {
        retry: RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(10),
            max_wait: Duration::from_secs(5),
        },
        ..HttpSettings::default()
    }
}

fn connect_as(
    fake: &FakeForge,
    credentials: &Credentials,
) -> Result<Forge, image_update_forge::Error> {
    let repo = Repository::locate(
        &fake.remote_url(),
        Some(provider(fake.flavor)),
        Some(&fake.api_url()),
    )?;
    Forge::connect(repo, credentials, &settings())
}

fn connect(fake: &FakeForge) -> Forge {
    connect_as(fake, &Credentials::Token(Secret::new(token(fake.flavor)))).unwrap()
}

fn start(flavor: Flavor) -> FakeForge {
    FakeForge::start(flavor, &token(flavor), None).unwrap()
}

fn proposal(title: &str, body: &str) -> Proposal {
    Proposal {
        head: HEAD.into(),
        base: BASE.into(),
        title: title.into(),
        body: body.into(),
    }
}

fn no_violations(fake: &FakeForge) {
    assert_eq!(
        fake.violations(),
        Vec::<String>::new(),
        "calls: {:#?}",
        fake.calls()
    );
}

// ---------------------------------------------------------------------------------- cases

fn create(flavor: Flavor) {
    let fake = start(flavor);
    let forge = connect(&fake);
    let pr = forge
        .open_or_update(&proposal("Update web to 1.3.0", "the body"), &options())
        .unwrap();
    no_violations(&fake);
    assert_eq!(pr.action, Action::Created);
    assert_eq!(pr.number, 1);
    assert!(pr.warnings.is_empty(), "{:?}", pr.warnings);
    assert!(pr.url.ends_with('1'), "{}", pr.url);
    let pulls = fake.pulls();
    assert_eq!(pulls.len(), 1);
    let p = &pulls[0];
    assert_eq!((p.head.as_str(), p.base.as_str()), (HEAD, BASE));
    assert_eq!(p.title, "Update web to 1.3.0");
    assert_eq!(p.body, "the body");
    assert_eq!(p.labels, ["dependencies", "images"]);
    assert_eq!(p.assignees, ["alice"]);
    assert_eq!(p.reviewers, ["bob"]);
    assert!(!p.draft);
}

fn update_without_duplicate(flavor: Flavor) {
    let fake = start(flavor);
    let forge = connect(&fake);
    let first = forge
        .open_or_update(&proposal("Update web to 1.3.0", "one"), &options())
        .unwrap();
    fake.clear_calls();
    let second = connect(&fake)
        .open_or_update(&proposal("Update web to 1.4.0", "two"), &options())
        .unwrap();
    no_violations(&fake);
    assert_eq!(second.action, Action::Updated);
    assert_eq!(second.number, first.number);
    assert_eq!(
        fake.calls().len(),
        2,
        "look-up and update: {:#?}",
        fake.calls()
    );
    let pulls = fake.pulls();
    assert_eq!(pulls.len(), 1, "never a second request");
    assert_eq!(
        (pulls[0].title.as_str(), pulls[0].body.as_str()),
        ("Update web to 1.4.0", "two")
    );
    fake.clear_calls();
    let third = connect(&fake)
        .open_or_update(&proposal("Update web to 1.4.0", "two"), &options())
        .unwrap();
    assert_eq!(third.action, Action::Unchanged);
    assert_eq!(
        fake.calls().len(),
        1,
        "only the look-up: {:#?}",
        fake.calls()
    );
    no_violations(&fake);
}

fn update_adds_missing_labels_in_three_calls(flavor: Flavor) {
    let fake = start(flavor);
    let mut pull = Pull::new(HEAD, BASE, "Old title");
    pull.assignees = vec!["alice".into()];
    fake.add_pull(pull);
    let forge = connect(&fake);
    let pr = forge
        .open_or_update(&proposal("New title", "new body"), &options())
        .unwrap();
    no_violations(&fake);
    assert_eq!(pr.action, Action::Updated);
    let calls = forge.api_calls();
    assert!(
        calls <= 3,
        "look-up, update, labels: {calls} calls {:#?}",
        fake.calls()
    );
    let p = &fake.pulls()[0];
    assert_eq!(p.labels, ["dependencies", "images"]);
    assert_eq!(p.title, "New title");
    assert!(
        p.reviewers.is_empty(),
        "reviewers are asked only when opening"
    );
}

fn nothing_to_do(flavor: Flavor) {
    let fake = start(flavor);
    let forge = connect(&fake);
    assert_eq!(
        forge
            .nothing_to_do(HEAD, BASE, &WhenNothingToDo::Leave)
            .unwrap(),
        None
    );
    forge
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap();
    let left = forge
        .nothing_to_do(HEAD, BASE, &WhenNothingToDo::Leave)
        .unwrap()
        .unwrap();
    assert_eq!(left.action, Action::Unchanged);
    assert_eq!(fake.pulls()[0].state, PullState::Open);
    let close = WhenNothingToDo::Close {
        comment: "Nothing to update any more: every image is current.".into(),
    };
    let closed = forge.nothing_to_do(HEAD, BASE, &close).unwrap().unwrap();
    assert_eq!(closed.action, Action::Closed);
    let p = &fake.pulls()[0];
    assert_eq!(p.state, PullState::Closed);
    assert_eq!(
        p.comments,
        ["Nothing to update any more: every image is current."]
    );
    assert_eq!(forge.nothing_to_do(HEAD, BASE, &close).unwrap(), None);
    no_violations(&fake);
}

fn closed_then_reopened(flavor: Flavor) {
    let fake = start(flavor);
    let mut merged = Pull::new(HEAD, BASE, "Merged long ago");
    merged.state = PullState::Merged;
    fake.add_pull(merged);
    let mut closed = Pull::new(HEAD, BASE, "Closed by a person");
    closed.state = PullState::Closed;
    let number = fake.add_pull(closed);
    let pr = connect(&fake)
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap();
    no_violations(&fake);
    assert_eq!(pr.action, Action::Reopened);
    assert_eq!(pr.number, number);
    let pulls = fake.pulls();
    assert_eq!(pulls.len(), 2);
    assert_eq!(pulls[1].state, PullState::Open);
    assert_eq!(pulls[1].title, "Update");
    assert_eq!(
        pulls[1].reviewers,
        ["bob"],
        "reopening asks for reviews again"
    );
    // A person reopened it; the next run updates it in place.
    let again = connect(&fake)
        .open_or_update(&proposal("Update 2", "body"), &options())
        .unwrap();
    assert_eq!((again.action, again.number), (Action::Updated, number));
    // Closed again, and the provider refuses to reopen it: a new request.
    fake.state().pulls[1].state = PullState::Closed;
    fake.state().refuse_reopen = true;
    let new = connect(&fake)
        .open_or_update(&proposal("Update 3", "body"), &options())
        .unwrap();
    assert_eq!(new.action, Action::Created);
    assert_eq!(new.number, 3);
    assert_eq!(
        fake.pulls()
            .iter()
            .filter(|p| p.state == PullState::Open)
            .count(),
        1
    );
    no_violations(&fake);
}

fn race_between_two_runs(flavor: Flavor) {
    let fake = Arc::new(start(flavor));
    fake.hold_lookups(2);
    let runs: Vec<_> = (0..2)
        .map(|i| {
            let fake = Arc::clone(&fake);
            std::thread::spawn(move || {
                connect(&fake).open_or_update(&proposal(&format!("Run {i}"), "body"), &options())
            })
        })
        .collect();
    let results: Vec<_> = runs
        .into_iter()
        .map(|r| r.join().unwrap().unwrap())
        .collect();
    no_violations(&fake);
    let mut actions: Vec<Action> = results.iter().map(|r| r.action).collect();
    actions.sort_by_key(|a| a.as_str());
    assert!(actions[0] == Action::Created, "{actions:?}");
    assert!(
        matches!(actions[1], Action::Updated | Action::Unchanged),
        "{actions:?}"
    );
    assert_eq!(results[0].number, results[1].number);
    assert_eq!(fake.pulls().len(), 1, "one request for the two runs");
}

fn draft_and_auto_merge(flavor: Flavor) {
    let fake = start(flavor);
    let forge = connect(&fake);
    let options = Options {
        draft: true,
        auto_merge: Some(MergeMethod::Squash),
        ..options()
    };
    let pr = forge
        .open_or_update(&proposal("Update", "body"), &options)
        .unwrap();
    no_violations(&fake);
    assert!(pr.warnings.is_empty(), "{:?}", pr.warnings);
    let p = &fake.pulls()[0];
    assert!(p.draft);
    assert_eq!(
        p.auto_merge
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("squash")
    );
    // The next run keeps the draft marker and title in step.
    let pr = forge
        .open_or_update(&proposal("Update 2", "body"), &options)
        .unwrap();
    assert_eq!(pr.action, Action::Updated);
    let p = &fake.pulls()[0];
    assert!(p.draft, "{}", p.title);
    match flavor {
        Flavor::GitHub => assert_eq!(p.title, "Update 2"),
        Flavor::GitLab => assert_eq!(p.title, "Draft: Update 2"),
        _ => assert_eq!(p.title, "WIP: Update 2"),
    }
    no_violations(&fake);
}

fn permission(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::GitHub => "`Pull requests: Read and write`",
        Flavor::GitLab => "the `api` scope",
        Flavor::Gitea | Flavor::Forgejo => "`write:repository`",
    }
}

fn error_body(flavor: Flavor, message: &str) -> Value {
    match flavor {
        Flavor::GitHub => {
            json!({"message": message, "documentation_url": "https://docs.github.com/rest"})
        }
        Flavor::GitLab => json!({"message": message}),
        _ => json!({"message": message, "url": "https://forge.example/api/swagger"}),
    }
}

fn errors_401_403(flavor: Flavor) {
    let fake = start(flavor);
    let wrong = connect_as(&fake, &Credentials::Token(Secret::new("wrong-tok-3cr3t"))).unwrap();
    let e = wrong
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unauthorized, "{e}");
    assert_eq!(e.status(), Some(401));
    let text = e.to_string();
    assert!(text.contains("expired or revoked"), "{text}");
    assert!(!text.contains("3cr3t"), "{text}");
    let path = if flavor == Flavor::GitLab {
        "/merge_requests"
    } else {
        "/pulls"
    };
    fake.fault(Fault::new(
        "POST",
        path,
        403,
        error_body(flavor, "Resource not accessible by personal access token"),
    ));
    let e = connect(&fake)
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Forbidden, "{e}");
    let text = e.to_string();
    assert!(text.contains(permission(flavor)), "{text}");
    assert!(text.contains("Resource not accessible"), "{text}");
    assert!(!text.contains(&token(flavor)), "{text}");
    assert!(fake.pulls().is_empty());
    no_violations(&fake);
}

fn errors_404(flavor: Flavor) {
    let fake = start(flavor);
    // Another repository than the fake's.
    let remote = fake.remote_url().replace("/fleet.git", "/nope.git");
    let repo = Repository::locate(&remote, Some(provider(flavor)), Some(&fake.api_url())).unwrap();
    let forge = Forge::connect(
        repo,
        &Credentials::Token(Secret::new(token(flavor))),
        &settings(),
    )
    .unwrap();
    let e = forge
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("acme/nope"), "{e}");
    // A base branch that does not exist.
    let forge = connect(&fake);
    let mut p = proposal("Update", "body");
    p.base = "production".into();
    let e = forge.open_or_update(&p, &options()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("production"), "{e}");
    no_violations(&fake);
}

fn errors_422(flavor: Flavor) {
    let fake = start(flavor);
    let (path, status, body) = match flavor {
        // Octokit's recording of a real 422 (errors/normalized-fixture.json).
        Flavor::GitHub => (
            "/pulls",
            422,
            octokit_recording("errors", 0)["response"].clone(),
        ),
        Flavor::GitLab => (
            "/merge_requests",
            422,
            json!({"message": {"title": ["is too long (maximum is 255 characters)"]}}),
        ),
        _ => (
            "/pulls",
            422,
            json!({"message": "[Title]: Required", "url": "https://forge.example/api/swagger"}),
        ),
    };
    fake.fault(Fault::new("POST", path, status, body));
    let e = connect(&fake)
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Rejected, "{e}");
    assert_eq!(e.status(), Some(422));
    let text = e.to_string();
    let said = match flavor {
        Flavor::GitHub => "Validation Failed; Label color invalid",
        Flavor::GitLab => "title is too long (maximum is 255 characters)",
        _ => "[Title]: Required",
    };
    assert!(text.contains(said), "{text}");
    no_violations(&fake);
}

fn rate_limits(flavor: Flavor) {
    let fake = start(flavor);
    let path = if flavor == Flavor::GitLab {
        "/merge_requests"
    } else {
        "/pulls"
    };
    let (status, body) = if flavor == Flavor::GitHub {
        (
            403,
            error_body(
                flavor,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            ),
        )
    } else {
        (429, error_body(flavor, "Retry later"))
    };
    fake.fault(Fault::new("GET", path, status, body.clone()).header("Retry-After", "1"));
    let started = Instant::now();
    let forge = connect(&fake);
    let pr = forge
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap();
    assert_eq!(pr.action, Action::Created);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After honoured"
    );
    // Longer than the client waits: fails at once, saying how long.
    fake.fault(Fault::new("GET", path, status, body).header("Retry-After", "3600"));
    let started = Instant::now();
    let e = connect(&fake)
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    assert!(e.is_transient());
    assert!(e.to_string().contains("60 min"), "{e}");
    // Server errors back off and retry, a bounded number of times.
    fake.fault(Fault::new("GET", path, 502, Value::Null).times(2));
    assert!(
        connect(&fake)
            .open_or_update(&proposal("Update", "body"), &options())
            .is_ok()
    );
    fake.fault(Fault::new("GET", path, 503, Value::Null).times(10));
    let forge = connect(&fake);
    let e = forge
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Server, "{e}");
    assert_eq!(forge.api_calls(), 4, "max_attempts");
    no_violations(&fake);
}

fn github_primary_rate_limit_reset() {
    let fake = start(Flavor::GitHub);
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    fake.fault(
        Fault::new(
            "GET",
            "/pulls",
            403,
            error_body(
                Flavor::GitHub,
                "API rate limit exceeded for installation ID 1.",
            ),
        )
        .header("x-ratelimit-remaining", "0")
        .header("x-ratelimit-reset", &reset.to_string()),
    );
    let pr = connect(&fake)
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap();
    assert_eq!(pr.action, Action::Created);
    no_violations(&fake);
}

fn app(installation_id: u64) -> App {
    App {
        app_id: 4242,
        public_key_der: fs_read(&data("github-app.pub.der")),
        installation_id,
        token: "ghs_installation-t0ken".into(),
    }
}

fn github_app_token_exchange() {
    let fake = FakeForge::start(Flavor::GitHub, "", Some(app(77))).unwrap();
    let key = String::from_utf8(fs_read(&data("github-app.pem"))).unwrap();
    let credentials = Credentials::GitHubApp {
        app_id: "4242".into(),
        private_key: Secret::new(key),
        installation_id: None,
    };
    let forge = connect_as(&fake, &credentials).unwrap();
    assert_eq!(forge.token().expose(), "ghs_installation-t0ken");
    assert_eq!(forge.api_calls(), 2, "the installation, then its token");
    let pr = forge
        .open_or_update(&proposal("Update", "body"), &options())
        .unwrap();
    assert_eq!(pr.action, Action::Created);
    no_violations(&fake);
    assert!(format!("{forge:?}").contains("<redacted>"));
    assert!(!format!("{forge:?}").contains("t0ken"));
    // Another key: GitHub refuses the JWT, and the error says what to check.
    let other = String::from_utf8(fs_read(&data("other-app.pem"))).unwrap();
    let e = connect_as(
        &fake,
        &Credentials::GitHubApp {
            app_id: "4242".into(),
            private_key: Secret::new(other),
            installation_id: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unauthorized, "{e}");
    assert!(e.to_string().contains("private key"), "{e}");
    // Not installed on the repository.
    let remote = fake.remote_url().replace("/fleet.git", "/elsewhere.git");
    let repo = Repository::locate(&remote, Some(Provider::GitHub), Some(&fake.api_url())).unwrap();
    let key = String::from_utf8(fs_read(&data("github-app.pem"))).unwrap();
    let e = Forge::connect(
        repo,
        &Credentials::GitHubApp {
            app_id: "4242".into(),
            private_key: Secret::new(key),
            installation_id: None,
        },
        &settings(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("not installed on acme/elsewhere"),
        "{e}"
    );
    // Not a key at all.
    let e = connect_as(
        &fake,
        &Credentials::GitHubApp {
            app_id: "4242".into(),
            private_key: Secret::new("ghp_not-a-key"),
            installation_id: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(!e.to_string().contains("not-a-key"), "{e}");
    no_violations(&fake);
}

/// Octokit's recording of adding labels to issue 1 replayed: the client's labels call must be
/// the recorded request (method, path, body) and it must read the recorded answer.
fn github_octokit_recording_add_labels() {
    let recorded = octokit_recording("add-labels-to-issue", 1);
    let description = Flavor::GitHub.description().unwrap();
    let owner_repo = "octokit-fixture-org/add-labels-to-issue";
    let matched = description
        .check_request(
            "POST",
            recorded["path"].as_str().unwrap(),
            recorded["body"].to_string().as_bytes(),
        )
        .unwrap();
    description
        .check_response(
            &matched,
            recorded["status"].as_u64().unwrap() as u16,
            &recorded["response"],
        )
        .unwrap();
    let labels: Vec<String> = recorded["body"]["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    let replayed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let server = {
        let replayed = Arc::clone(&replayed);
        let description = Arc::clone(&description);
        let recorded = recorded.clone();
        FakeServer::start(move |req| {
            if req.method == "GET" {
                let m = description
                    .check_request(&req.method, &req.target, &req.body)
                    .unwrap();
                let mut pr = description.sample_schema(
                    &json!({"$ref": "#/components/schemas/pull-request-simple"}),
                    0,
                );
                image_update_testkit::forge::put(&mut pr, "/number", json!(1));
                image_update_testkit::forge::put(&mut pr, "/title", json!("Issue without a label"));
                image_update_testkit::forge::put(&mut pr, "/body", json!(""));
                image_update_testkit::forge::put(&mut pr, "/state", json!("open"));
                let list = json!([pr]);
                description.check_response(&m, 200, &list).unwrap();
                return Reply::json(200, list.to_string());
            }
            let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let same = req
                .method
                .eq_ignore_ascii_case(recorded["method"].as_str().unwrap())
                && req.path() == recorded["path"].as_str().unwrap()
                && body == recorded["body"];
            replayed
                .lock()
                .unwrap()
                .push((req.method.clone(), req.target.clone(), body, same));
            if same {
                Reply::json(
                    recorded["status"].as_u64().unwrap() as u16,
                    recorded["response"].to_string(),
                )
            } else {
                Reply::json(
                    400,
                    json!({"message": "not the recorded request"}).to_string(),
                )
            }
        })
    };
    let repo = Repository::locate(
        &format!("https://github.com/{owner_repo}"),
        None,
        Some(&format!("http://{}", server.authority())),
    )
    .unwrap();
    let forge = Forge::connect(
        repo,
        &Credentials::Token(Secret::new("0000000000000000000000000000000000000001")),
        &settings(),
    )
    .unwrap();
    let p = Proposal {
        head: HEAD.into(),
        base: BASE.into(),
        title: "Issue without a label".into(),
        body: String::new(),
    };
    let pr = forge
        .open_or_update(
            &p,
            &Options {
                labels,
                ..Options::default()
            },
        )
        .unwrap();
    assert_eq!(pr.action, Action::Updated);
    assert!(pr.warnings.is_empty(), "{:?}", pr.warnings);
    let replayed = replayed.lock().unwrap();
    assert_eq!(replayed.len(), 1, "{replayed:?}");
    assert!(
        replayed[0].3,
        "the labels call is the recorded one: {replayed:?}"
    );
}

fn defaults_render_for_every_provider(flavor: Flavor) {
    let fake = start(flavor);
    let forge = connect(&fake);
    let report: Value = json!({
        "version": "image-update.dev/v1",
        "fileChanges": {"clusters/prod/web.yaml": [{
            "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "shop"},
            "changes": [{"oldValue": "ghcr.io/acme/web:1.2.0", "newValue": "ghcr.io/acme/web:1.3.0",
                         "setter": "flux-system:web", "line": 21, "column": 18,
                         "fieldPath": "spec.template.spec.containers[0].image"}]}]},
        "observedPolicies": {"flux-system:web": {"name": "ghcr.io/acme/web", "tag": "1.3.0"}},
        "warnings": []
    });
    let mut content = Content::from_report(
        &report,
        Some(("flux-system", "apps")),
        &Default::default(),
        "Update from image update automation",
    )
    .unwrap();
    content.base = BASE.into();
    content.head = content.head_branch(None).unwrap();
    assert_eq!(content.head, HEAD);
    let p = Proposal {
        head: content.head.clone(),
        base: content.base.clone(),
        title: content.title(None).unwrap(),
        body: content.body(None, forge.limits().1).unwrap(),
    };
    let pr = forge.open_or_update(&p, &options()).unwrap();
    assert_eq!(pr.action, Action::Created);
    let stored = &fake.pulls()[0];
    assert_eq!(stored.title, "Update from image update automation");
    assert!(
        stored
            .body
            .contains("| `clusters/prod/web.yaml` | Deployment shop/web |"),
        "{}",
        stored.body
    );
    no_violations(&fake);
}

/// The oracle itself: a wrong path, method, query parameter, field or type is refused, and so
/// is an answer that does not validate.
fn descriptions_refuse_mistakes(flavor: Flavor) {
    let d = flavor.description().unwrap();
    let (base, create, list, good_body): (&str, &str, &str, Value) = match flavor {
        Flavor::GitHub => (
            "",
            "/repos/acme/fleet/pulls",
            "/repos/acme/fleet/pulls?state=all",
            json!({"title": "t", "head": "h", "base": "main"}),
        ),
        Flavor::GitLab => (
            "/api/v4",
            "/api/v4/projects/acme%2Ffleet/merge_requests",
            "/api/v4/projects/acme%2Ffleet/merge_requests?state=all",
            json!({"title": "t", "source_branch": "h", "target_branch": "main"}),
        ),
        _ => (
            "/api/v1",
            "/api/v1/repos/acme/fleet/pulls",
            "/api/v1/repos/acme/fleet/pulls?state=all",
            json!({"title": "t", "head": "h", "base": "main"}),
        ),
    };
    let check = |method: &str, target: &str, body: &Value| {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        d.check_request(method, target, &bytes)
    };
    let matched = check("POST", create, &good_body).unwrap();
    check("GET", list, &Value::Null).unwrap();
    let mut misspelt = good_body.clone();
    misspelt["titel"] = json!("t");
    let mut wrong_type = good_body.clone();
    wrong_type["title"] = json!(7);
    let mistakes = [
        ("POST", format!("{create}s"), good_body.clone(), "no path"),
        ("DELETE", create.to_owned(), Value::Null, "no DELETE"),
        (
            "POST",
            create.to_owned(),
            misspelt,
            "does not name: `.titel`",
        ),
        ("POST", create.to_owned(), wrong_type, "not of type"),
        (
            "GET",
            format!("{list}&colour=blue"),
            Value::Null,
            "`colour` is not in the description",
        ),
        (
            "GET",
            format!(
                "{base}/{}",
                list.trim_start_matches(base)
                    .replace("state=all", "state=sideways")
            ),
            Value::Null,
            "not one of",
        ),
    ];
    for (method, target, body, why) in mistakes {
        let e = check(method, &target, &body).unwrap_err();
        assert!(e.contains(why), "{method} {target}: {e}");
    }
    let e = d
        .check_response(&matched, 201, &json!({"number": "one"}))
        .unwrap_err();
    assert!(e.contains("does not validate"), "{e}");
    let e = d.check_response(&matched, 299, &json!({})).unwrap_err();
    assert!(e.contains("not a documented answer"), "{e}");
}

// ---------------------------------------------------------------------------------- support

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn fs_read(path: &Path) -> Vec<u8> {
    fs_err::read(path).unwrap()
}

fn octokit_recording(scenario: &str, index: usize) -> Value {
    let path = descriptions_dir()
        .join("octokit-fixtures")
        .join(scenario)
        .join("normalized-fixture.json");
    let all: Value = serde_json::from_slice(&fs_read(&path)).unwrap();
    all[index].clone()
}

fn files(flavor: Flavor) -> Vec<PathBuf> {
    let mut files = vec![flavor.description_path()];
    if flavor == Flavor::GitHub {
        files.push(descriptions_dir().join("github-graphql.json"));
        files.push(descriptions_dir().join("octokit-fixtures/errors/normalized-fixture.json"));
        files.push(
            descriptions_dir().join("octokit-fixtures/add-labels-to-issue/normalized-fixture.json"),
        );
    }
    files
}

fn case(name: &str, flavor: Flavor, test: fn(Flavor)) -> Trial {
    image_update_testkit::trial_with_files(
        format!("{}/{name}", flavor.name()),
        &files(flavor),
        "scripts/api-descriptions.sh installs them",
        move || run(move || test(flavor)),
    )
}

fn single(name: &str, test: fn()) -> Trial {
    image_update_testkit::trial_with_files(
        format!("github/{name}"),
        &files(Flavor::GitHub),
        "scripts/api-descriptions.sh installs them",
        move || run(test),
    )
}

fn run(test: impl FnOnce() + std::panic::UnwindSafe) -> Result<(), Failed> {
    std::panic::catch_unwind(test).map_err(|e| {
        let message = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Failed::from(message)
    })
}

fn main() {
    type Case = (&'static str, fn(Flavor));
    let cases: &[Case] = &[
        ("create", create),
        ("update_without_duplicate", update_without_duplicate),
        (
            "update_adds_missing_labels_in_three_calls",
            update_adds_missing_labels_in_three_calls,
        ),
        ("nothing_to_do", nothing_to_do),
        ("closed_then_reopened", closed_then_reopened),
        ("race_between_two_runs", race_between_two_runs),
        ("draft_and_auto_merge", draft_and_auto_merge),
        ("errors_401_403", errors_401_403),
        ("errors_404", errors_404),
        ("errors_422", errors_422),
        ("rate_limits_and_retries", rate_limits),
        (
            "default_branch_title_and_body",
            defaults_render_for_every_provider,
        ),
        ("description_refuses_mistakes", descriptions_refuse_mistakes),
    ];
    let mut trials = Vec::new();
    for flavor in Flavor::ALL {
        for (name, test) in cases {
            trials.push(case(name, flavor, *test));
        }
    }
    trials.push(single(
        "primary_rate_limit_reset",
        github_primary_rate_limit_reset,
    ));
    trials.push(single("app_token_exchange", github_app_token_exchange));
    trials.push(single(
        "octokit_recording_add_labels",
        github_octokit_recording_add_labels,
    ));
    image_update_testkit::run(trials);
}
