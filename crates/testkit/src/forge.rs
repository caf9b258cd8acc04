//! Loopback fakes of GitHub, GitLab, Gitea and Forgejo for the pull-request client, each
//! holding pull requests in memory and checking every request and every answer against the
//! provider's own API description ([`crate::openapi`]).
//!
//! A request that departs from the description (wrong path, method, parameter, field or type)
//! is recorded as a violation and answered 400, and so is an answer of the fake's own that does
//! not validate: a test ends with `assert_eq!(fake.violations(), [])`. Faults (rate limits,
//! refusals, server errors) are scripted with [`FakeForge::fault`]; a GitHub App's JWT is
//! verified with the App's public key.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Barrier, Mutex, MutexGuard, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::openapi::{ApiDescription, Matched, committed_dir, descriptions_dir};
use crate::registry::{FakeServer, Recorded, Reply};

/// Which forge a fake plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    GitHub,
    GitLab,
    Gitea,
    Forgejo,
}

impl Flavor {
    pub const ALL: [Flavor; 4] = [
        Flavor::GitHub,
        Flavor::GitLab,
        Flavor::Gitea,
        Flavor::Forgejo,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Flavor::GitHub => "github",
            Flavor::GitLab => "gitlab",
            Flavor::Gitea => "gitea",
            Flavor::Forgejo => "forgejo",
        }
    }

    /// The description file: installed by `scripts/api-descriptions.sh` (GitHub, Gitea,
    /// Forgejo), or committed (GitLab's, see `api/README.md`).
    #[must_use]
    pub fn description_path(self) -> PathBuf {
        match self {
            Flavor::GitLab => committed_dir().join("gitlab.json"),
            other => descriptions_dir().join(format!("{}.json", other.name())),
        }
    }

    fn base_path(self) -> &'static str {
        match self {
            Flavor::GitHub => "",
            Flavor::GitLab => "/api/v4",
            Flavor::Gitea | Flavor::Forgejo => "/api/v1",
        }
    }

    /// The description, loaded once per process.
    ///
    /// # Errors
    /// A missing description, with how to install it.
    pub fn description(self) -> Result<Arc<ApiDescription>, String> {
        static LOADED: OnceLock<Mutex<HashMap<Flavor, Arc<ApiDescription>>>> = OnceLock::new();
        let loaded = LOADED.get_or_init(|| Mutex::new(HashMap::new()));
        // Held while loading: concurrent tests wait for one load.
        let mut loaded = loaded.lock().unwrap();
        if let Some(d) = loaded.get(&self) {
            return Ok(Arc::clone(d));
        }
        let path = self.description_path();
        if !path.is_file() {
            return Err(format!(
                "{} (run scripts/api-descriptions.sh, or set IMAGE_UPDATE_API_DESCRIPTIONS)",
                path.display()
            ));
        }
        let description = Arc::new(ApiDescription::load(&path, Some(self.base_path()))?);
        loaded.insert(self, Arc::clone(&description));
        Ok(description)
    }
}

/// A request's state in the fake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullState {
    Open,
    Closed,
    Merged,
}

/// A pull (merge) request in the fake.
#[derive(Clone, Debug)]
pub struct Pull {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub state: PullState,
    pub head: String,
    pub base: String,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    pub reviewers: Vec<String>,
    pub team_reviewers: Vec<String>,
    pub draft: bool,
    pub auto_merge: Option<String>,
    pub comments: Vec<String>,
}

impl Pull {
    #[must_use]
    pub fn new(head: &str, base: &str, title: &str) -> Pull {
        Pull {
            number: 0,
            title: title.to_owned(),
            body: String::new(),
            state: PullState::Open,
            head: head.to_owned(),
            base: base.to_owned(),
            labels: Vec::new(),
            assignees: Vec::new(),
            reviewers: Vec::new(),
            team_reviewers: Vec::new(),
            draft: false,
            auto_merge: None,
            comments: Vec::new(),
        }
    }
}

/// A scripted answer for the next matching calls.
#[derive(Clone, Debug)]
pub struct Fault {
    /// `GET`, `POST`...
    pub method: String,
    /// A substring of the request's path.
    pub path_contains: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// How many calls it answers.
    pub times: usize,
}

impl Fault {
    #[must_use]
    pub fn new(method: &str, path_contains: &str, status: u16, body: Value) -> Fault {
        Fault {
            method: method.to_owned(),
            path_contains: path_contains.to_owned(),
            status,
            headers: Vec::new(),
            body,
            times: 1,
        }
    }

    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Fault {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    #[must_use]
    pub fn times(mut self, times: usize) -> Fault {
        self.times = times;
        self
    }
}

/// The branches of the bare repository `git_dir`, by the git CLI (none when it fails).
fn branches_of(git_dir: &std::path::Path) -> Vec<String> {
    std::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A GitHub App the fake knows.
#[derive(Clone, Debug)]
pub struct App {
    pub app_id: u64,
    /// The App's public key, PKCS#1 DER.
    pub public_key_der: Vec<u8>,
    pub installation_id: u64,
    /// The installation token the fake hands out.
    pub token: String,
}

/// The fake's state.
#[derive(Debug, Default)]
pub struct ForgeState {
    pub pulls: Vec<Pull>,
    pub branches: Vec<String>,
    /// Labels that exist in the repository (Gitea and Forgejo add only those).
    pub labels: Vec<String>,
    /// Known users (GitLab's ids are their positions, from 1).
    pub users: Vec<String>,
    pub faults: Vec<Fault>,
    pub violations: Vec<String>,
    /// `METHOD path?query` of every call, in order.
    pub calls: Vec<String>,
    /// Refuse to reopen closed requests (GitHub, after the head branch was force-pushed).
    pub refuse_reopen: bool,
    /// Tokens the App handed out.
    pub app_tokens: Vec<String>,
}

/// A running fake forge.
pub struct FakeForge {
    pub flavor: Flavor,
    pub owner: String,
    pub repo: String,
    server: FakeServer,
    state: Arc<Mutex<ForgeState>>,
    barrier: Hold,
    ctx: Arc<Ctx>,
}

struct Ctx {
    flavor: Flavor,
    owner: String,
    repo: String,
    /// A bare repository whose branches are the fake's (the git test bed's), read at every call.
    git_dir: Mutex<Option<PathBuf>>,
    token: String,
    app: Option<App>,
    web: Mutex<String>,
    description: Arc<ApiDescription>,
    state: Arc<Mutex<ForgeState>>,
    barrier: Hold,
}

type Answer = (u16, Value, Vec<(String, String)>);

/// The barrier look-ups wait at, and how many look-ups are still to wait.
type Hold = Arc<Mutex<Option<(Arc<Barrier>, usize)>>>;

impl FakeForge {
    /// Starts a fake of `flavor` for the repository `acme/fleet`, accepting `token`, and the
    /// App `app` when given (GitHub). The branches `main` and `image-update/flux-system-apps`
    /// exist.
    ///
    /// # Errors
    /// The description is not installed.
    pub fn start(flavor: Flavor, token: &str, app: Option<App>) -> Result<FakeForge, String> {
        Self::start_for(flavor, "acme/fleet", token, app)
    }

    /// Starts a fake of `flavor` for the repository `path` (`OWNER/NAME`), as [`FakeForge::start`].
    ///
    /// # Errors
    /// The description is not installed.
    pub fn start_for(
        flavor: Flavor,
        path: &str,
        token: &str,
        app: Option<App>,
    ) -> Result<FakeForge, String> {
        let description = flavor.description()?;
        let (owner, repo) = path
            .rsplit_once('/')
            .ok_or_else(|| format!("`{path}` is not OWNER/NAME"))?;
        let state = Arc::new(Mutex::new(ForgeState {
            branches: vec!["main".into(), "image-update/flux-system-apps".into()],
            users: vec!["fluxbot".into(), "alice".into(), "bob".into()],
            labels: vec!["dependencies".into(), "images".into()],
            ..ForgeState::default()
        }));
        let barrier = Arc::new(Mutex::new(None));
        let ctx = Arc::new(Ctx {
            flavor,
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            git_dir: Mutex::new(None),
            token: token.to_owned(),
            app,
            web: Mutex::new(String::new()),
            description,
            state: Arc::clone(&state),
            barrier: Arc::clone(&barrier),
        });
        let handler_ctx = Arc::clone(&ctx);
        let server = FakeServer::start(move |req| handler_ctx.handle(req));
        *ctx.web.lock().unwrap() = format!("http://{}", server.authority());
        Ok(FakeForge {
            flavor,
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            server,
            state,
            barrier,
            ctx,
        })
    }

    /// From now on the fake's branches are those of the bare repository `git_dir` (a repository
    /// of the git test bed), read with the git CLI at every call: a request whose head branch
    /// was not pushed is refused as the provider refuses it.
    pub fn track_branches(&self, git_dir: &std::path::Path) {
        *self.ctx.git_dir.lock().unwrap() = Some(git_dir.to_owned());
    }

    /// Names the forge's web pages from `base` (`https://github.com`: a request's URL is then
    /// `https://github.com/acme/fleet/pull/1`, as the real forge names it) instead of the fake's
    /// own address.
    pub fn set_web(&self, base: &str) {
        *self.ctx.web.lock().unwrap() = base.trim_end_matches('/').to_owned();
    }

    /// The API's base URL, for the client's API override.
    #[must_use]
    pub fn api_url(&self) -> String {
        format!(
            "http://{}{}",
            self.server.authority(),
            self.flavor.base_path()
        )
    }

    /// The repository's remote URL.
    #[must_use]
    pub fn remote_url(&self) -> String {
        format!(
            "http://{}/{}/{}.git",
            self.server.authority(),
            self.owner,
            self.repo
        )
    }

    pub fn state(&self) -> MutexGuard<'_, ForgeState> {
        self.state.lock().unwrap()
    }

    /// Adds a request; returns its number.
    pub fn add_pull(&self, mut pull: Pull) -> u64 {
        let mut state = self.state();
        pull.number = state.pulls.len() as u64 + 1;
        state.pulls.push(pull);
        state.pulls.len() as u64
    }

    pub fn fault(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    #[must_use]
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    #[must_use]
    pub fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    /// Every request received, with headers and body.
    #[must_use]
    pub fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }

    pub fn clear_calls(&self) {
        self.state().calls.clear();
    }

    #[must_use]
    pub fn pulls(&self) -> Vec<Pull> {
        self.state().pulls.clone()
    }

    /// Holds the next `n` look-ups until all `n` have arrived (two runs racing).
    pub fn hold_lookups(&self, n: usize) {
        *self.barrier.lock().unwrap() = Some((Arc::new(Barrier::new(n)), n));
    }
}

impl Ctx {
    fn handle(&self, req: &Recorded) -> Reply {
        let tracked = self.git_dir.lock().unwrap().clone();
        let branches = tracked.map(|git_dir| branches_of(&git_dir));
        {
            let mut state = self.state.lock().unwrap();
            state.calls.push(format!("{} {}", req.method, req.target));
            if let Some(branches) = branches {
                state.branches = branches;
            }
        }
        if let Err(e) = self.check_headers(req) {
            return self.violation(e);
        }
        let description = &self.description;
        let matched = if self.flavor == Flavor::GitHub && req.path() == "/graphql" {
            None
        } else {
            match description.check_request(&req.method, &req.target, &req.body) {
                Ok(m) => Some(m),
                Err(e) => return self.violation(e),
            }
        };
        if let Some(reply) = self.scripted(req, matched.as_ref()) {
            return reply;
        }
        let Some(matched) = matched else {
            return self.graphql(req);
        };
        let app_call = matched.template == "/repos/{owner}/{repo}/installation"
            || matched.template.starts_with("/app/");
        if app_call {
            if let Err(reason) = self.check_jwt(req) {
                return self.error_reply(&matched, 401, &reason);
            }
        } else if !self.authorized(req) {
            return self.error_reply(&matched, 401, "Bad credentials");
        }
        if matched.method == "get"
            && (matched.template.contains("/pulls")
                || matched.template.ends_with("/merge_requests"))
        {
            let barrier = {
                let mut slot = self.barrier.lock().unwrap();
                match slot.as_mut() {
                    Some((barrier, left)) if *left > 0 => {
                        *left -= 1;
                        Some(Arc::clone(barrier))
                    }
                    _ => None,
                }
            };
            if let Some(barrier) = barrier {
                barrier.wait();
            }
        }
        let answer = match self.flavor {
            Flavor::GitHub => self.github(&matched),
            Flavor::GitLab => self.gitlab(&matched),
            Flavor::Gitea | Flavor::Forgejo => self.gitea(&matched),
        };
        let (status, body, headers) = match answer {
            Ok(a) => a,
            Err(e) => return self.violation(e),
        };
        if let Err(e) = self.check_answer(&matched, status, &body) {
            return self.violation(format!("the fake's own answer is invalid: {e}"));
        }
        reply(status, &body, &headers)
    }

    /// Headers every provider documents: a `User-Agent` (GitHub refuses requests without
    /// one), JSON bodies typed as JSON, and GitHub's media type and API version.
    fn check_headers(&self, req: &Recorded) -> Result<(), String> {
        let what = format!("{} {}", req.method, req.path());
        if req.header("user-agent").is_none_or(str::is_empty) {
            return Err(format!("{what}: no User-Agent"));
        }
        if !req.body.is_empty()
            && !req
                .header("content-type")
                .is_some_and(|t| t.starts_with("application/json"))
        {
            return Err(format!("{what}: a body that is not typed application/json"));
        }
        if self.flavor == Flavor::GitHub {
            if req.header("accept") != Some("application/vnd.github+json") {
                return Err(format!("{what}: Accept is not application/vnd.github+json"));
            }
            if req.header("x-github-api-version") != Some("2022-11-28") {
                return Err(format!("{what}: no X-GitHub-Api-Version: 2022-11-28"));
            }
        }
        Ok(())
    }

    fn violation(&self, message: String) -> Reply {
        self.state.lock().unwrap().violations.push(message.clone());
        Reply::json(400, json!({ "message": message }).to_string())
    }

    fn scripted(&self, req: &Recorded, matched: Option<&Matched>) -> Option<Reply> {
        let fault = {
            let mut state = self.state.lock().unwrap();
            let index = state.faults.iter().position(|f| {
                f.times > 0 && f.method == req.method && req.path().contains(&f.path_contains)
            })?;
            state.faults[index].times -= 1;
            state.faults[index].clone()
        };
        if let Some(matched) = matched
            && let Err(e) = self.check_answer(matched, fault.status, &fault.body)
        {
            return Some(self.violation(format!("a scripted answer is invalid: {e}")));
        }
        Some(reply(fault.status, &fault.body, &fault.headers))
    }

    /// An answer: against the operation's documented answer, else (an error status the
    /// description does not list for the operation, as 401 and 429 are) against the provider's
    /// error format.
    fn check_answer(&self, matched: &Matched, status: u16, body: &Value) -> Result<(), String> {
        let d = &self.description;
        if status >= 500 {
            // A gateway's or proxy's answer, not the API's.
            return Ok(());
        }
        if d.documents(matched, status) && (status < 400 || !body.is_null()) {
            d.check_response(matched, status, body)?;
            if status < 400 || self.flavor == Flavor::GitHub || self.flavor == Flavor::GitLab {
                return Ok(());
            }
        } else if status < 400 {
            return Err(format!(
                "{} {}: status {status} is not a documented answer",
                matched.method.to_uppercase(),
                matched.template
            ));
        }
        let component = match self.flavor {
            Flavor::GitHub => "#/components/schemas/basic-error",
            Flavor::GitLab => "#/components/schemas/Error",
            Flavor::Gitea | Flavor::Forgejo => "#/definitions/APIError",
        };
        if self.flavor == Flavor::GitHub && body.get("errors").is_some() {
            return d.check_component("#/components/schemas/validation-error", body);
        }
        d.check_component(component, body)
    }

    fn error_reply(&self, matched: &Matched, status: u16, message: &str) -> Reply {
        let body = self.error_body(message);
        if let Err(e) = self.check_answer(matched, status, &body) {
            return self.violation(e);
        }
        reply(status, &body, &[])
    }

    fn error_body(&self, message: &str) -> Value {
        match self.flavor {
            Flavor::GitHub => json!({
                "message": message,
                "documentation_url": "https://docs.github.com/rest",
                "status": "401"
            }),
            Flavor::GitLab => json!({ "message": message }),
            Flavor::Gitea | Flavor::Forgejo => {
                json!({ "message": message, "url": "https://forge.example/api/swagger" })
            }
        }
    }

    fn authorized(&self, req: &Recorded) -> bool {
        let auth = req.header("authorization").unwrap_or("");
        let tokens: Vec<String> = {
            let state = self.state.lock().unwrap();
            let mut t = vec![self.token.clone()];
            t.extend(state.app_tokens.iter().cloned());
            t
        };
        tokens
            .iter()
            .filter(|t| !t.is_empty())
            .any(|token| match self.flavor {
                Flavor::GitHub => {
                    auth == format!("Bearer {token}") || auth == format!("token {token}")
                }
                Flavor::GitLab => {
                    auth == format!("Bearer {token}") || req.header("private-token") == Some(token)
                }
                Flavor::Gitea | Flavor::Forgejo => {
                    auth == format!("token {token}") || auth == format!("Bearer {token}")
                }
            })
    }

    /// A GitHub App's JWT: RS256 by the App's key, `iss` the App, issued in the past, expiring
    /// within ten minutes.
    fn check_jwt(&self, req: &Recorded) -> Result<(), String> {
        let app = self.app.as_ref().ok_or("no GitHub App is configured")?;
        let jwt = req
            .header("authorization")
            .and_then(|a| a.strip_prefix("Bearer "))
            .ok_or("no bearer JWT")?;
        let parts: Vec<&str> = jwt.split('.').collect();
        if parts.len() != 3 {
            return Err("A JSON web token could not be decoded".into());
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header: Value =
            serde_json::from_slice(&b64.decode(parts[0]).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        if header["alg"] != "RS256" {
            return Err(format!("the JWT's alg is {}", header["alg"]));
        }
        let claims: Value =
            serde_json::from_slice(&b64.decode(parts[1]).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        let signature = b64.decode(parts[2]).map_err(|e| e.to_string())?;
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            &app.public_key_der,
        )
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .map_err(|_| "the JWT's signature does not verify with the App's public key".to_owned())?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let iat = claims["iat"].as_i64().ok_or("no iat")?;
        let exp = claims["exp"].as_i64().ok_or("no exp")?;
        if iat > now || exp <= now || exp - iat > 600 {
            return Err(format!(
                "'Expiration time' claim ('exp') is too far in the future (iat {iat}, exp {exp}, now {now})"
            ));
        }
        if claims["iss"] != json!(app.app_id) && claims["iss"] != json!(app.app_id.to_string()) {
            return Err(format!(
                "the JWT's iss {} is not the App {}",
                claims["iss"], app.app_id
            ));
        }
        Ok(())
    }

    fn web(&self) -> String {
        self.web.lock().unwrap().clone()
    }

    fn same_repo(&self, matched: &Matched) -> bool {
        match self.flavor {
            Flavor::GitLab => {
                matched.params.get("id").map(String::as_str)
                    == Some(format!("{}/{}", self.owner, self.repo).as_str())
            }
            _ => {
                matched.params.get("owner") == Some(&self.owner)
                    && matched.params.get("repo") == Some(&self.repo)
            }
        }
    }

    fn not_found(&self) -> Answer {
        let message = match self.flavor {
            Flavor::GitHub => "Not Found",
            Flavor::GitLab => "404 Project Not Found",
            _ => "The target couldn't be found.",
        };
        let mut body = self.error_body(message);
        if self.flavor == Flavor::GitHub {
            body["status"] = json!("404");
        }
        (404, body, Vec::new())
    }

    fn number(matched: &Matched, key: &str) -> Result<u64, String> {
        matched
            .params
            .get(key)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("no numeric path parameter {key}"))
    }

    // ---------------------------------------------------------------- GitHub

    fn github(&self, m: &Matched) -> Result<Answer, String> {
        let d = &self.description;
        if m.template == "/repos/{owner}/{repo}/installation" {
            if !self.same_repo(m) {
                return Ok(self.not_found());
            }
            let app = self.app.as_ref().ok_or("no App")?;
            let mut body = d.sample(m, 200);
            put(&mut body, "/id", json!(app.installation_id));
            return Ok((200, body, Vec::new()));
        }
        if m.template == "/app/installations/{installation_id}/access_tokens" {
            let app = self.app.as_ref().ok_or("no App")?;
            if Self::number(m, "installation_id")? != app.installation_id {
                return Ok(self.not_found());
            }
            if m.body["repositories"] != json!([self.repo]) {
                return Err(format!(
                    "the token should be limited to {}: {}",
                    self.repo, m.body
                ));
            }
            self.state
                .lock()
                .unwrap()
                .app_tokens
                .push(app.token.clone());
            let mut body = d.sample(m, 201);
            put(&mut body, "/token", json!(app.token));
            put(&mut body, "/expires_at", json!("2026-01-02T04:04:05Z"));
            return Ok((201, body, Vec::new()));
        }
        if !self.same_repo(m) {
            return Ok(self.not_found());
        }
        let mut state = self.state.lock().unwrap();
        match (m.method.as_str(), m.template.as_str()) {
            ("get", "/repos/{owner}/{repo}/pulls") => {
                let query: HashMap<&str, &str> = m
                    .query
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let head = query.get("head").copied().unwrap_or("");
                let Some((owner, head)) = head.split_once(':') else {
                    return Err(format!("head must be OWNER:BRANCH, not {head:?}"));
                };
                if owner != self.owner {
                    return Ok((200, json!([]), Vec::new()));
                }
                let base = query.get("base").copied();
                let wanted = query.get("state").copied().unwrap_or("open");
                let mut pulls: Vec<&Pull> = state
                    .pulls
                    .iter()
                    .filter(|p| p.head == head && base.is_none_or(|b| p.base == b))
                    .filter(|p| match wanted {
                        "all" => true,
                        "open" => p.state == PullState::Open,
                        _ => p.state != PullState::Open,
                    })
                    .collect();
                pulls.sort_by_key(|p| std::cmp::Reverse(p.number));
                let items = pulls
                    .into_iter()
                    .map(|p| self.github_pull(m, p, true))
                    .collect::<Vec<_>>();
                Ok((200, Value::Array(items), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/pulls") => {
                let head = m.body["head"].as_str().unwrap_or("").to_owned();
                let base = m.body["base"].as_str().unwrap_or("").to_owned();
                for (field, branch) in [("base", &base), ("head", &head)] {
                    if !state.branches.contains(branch) {
                        return Ok(validation(&[("PullRequest", Some(field), "invalid", None)]));
                    }
                }
                if state
                    .pulls
                    .iter()
                    .any(|p| p.head == head && p.base == base && p.state == PullState::Open)
                {
                    let message =
                        format!("A pull request already exists for {}:{head}.", self.owner);
                    return Ok(validation(&[(
                        "PullRequest",
                        None,
                        "custom",
                        Some(&message),
                    )]));
                }
                let mut pull = Pull::new(&head, &base, m.body["title"].as_str().unwrap_or(""));
                pull.body = m.body["body"].as_str().unwrap_or("").to_owned();
                pull.draft = m.body["draft"] == true;
                pull.number = state.pulls.len() as u64 + 1;
                state.pulls.push(pull.clone());
                Ok((201, self.github_pull(m, &pull, false), Vec::new()))
            }
            ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}") => {
                let n = Self::number(m, "pull_number")?;
                let refuse = state.refuse_reopen;
                let others_open = |state: &ForgeState, p: &Pull| {
                    state.pulls.iter().any(|o| {
                        o.number != p.number
                            && o.head == p.head
                            && o.base == p.base
                            && o.state == PullState::Open
                    })
                };
                let Some(index) = state.pulls.iter().position(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                if m.body["state"] == "open" && state.pulls[index].state != PullState::Open {
                    if refuse || others_open(&state, &state.pulls[index]) {
                        let message = format!(
                            "state cannot be changed. The {} branch has been force-pushed or recreated.",
                            state.pulls[index].head
                        );
                        return Ok(validation(&[(
                            "PullRequest",
                            Some("state"),
                            "custom",
                            Some(&message),
                        )]));
                    }
                    state.pulls[index].state = PullState::Open;
                }
                let pull = &mut state.pulls[index];
                apply_text(pull, &m.body, "title", "body");
                if m.body["state"] == "closed" {
                    pull.state = PullState::Closed;
                }
                let pull = pull.clone();
                Ok((200, self.github_pull(m, &pull, false), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels") => {
                let n = Self::number(m, "issue_number")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                for label in m.body["labels"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !pull.labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
                        pull.labels.push(label.to_owned());
                    }
                }
                let labels = pull.labels.clone();
                let items = labels.iter().map(|l| {
                    let mut v = d.sample_schema(&json!({"$ref": "#/components/schemas/label"}), 0);
                    put(&mut v, "/name", json!(l));
                    v
                });
                Ok((200, Value::Array(items.collect()), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/issues/{issue_number}/assignees") => {
                let n = Self::number(m, "issue_number")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                for user in m.body["assignees"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !pull.assignees.iter().any(|a| a == user) {
                        pull.assignees.push(user.to_owned());
                    }
                }
                let mut body = d.sample(m, 201);
                put(&mut body, "/number", json!(n));
                Ok((201, body, Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers") => {
                let n = Self::number(m, "pull_number")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                extend(&mut pull.reviewers, &m.body["reviewers"]);
                extend(&mut pull.team_reviewers, &m.body["team_reviewers"]);
                let pull = pull.clone();
                Ok((201, self.github_pull(m, &pull, true), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments") => {
                let n = Self::number(m, "issue_number")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                pull.comments
                    .push(m.body["body"].as_str().unwrap_or("").to_owned());
                let mut body = d.sample(m, 201);
                put(&mut body, "/body", m.body["body"].clone());
                Ok((201, body, Vec::new()))
            }
            _ => Err(format!(
                "the fake does not serve {} {}",
                m.method, m.template
            )),
        }
    }

    /// A pull request as GitHub's schema for `m`'s answer describes it (`simple`: the list
    /// item's schema).
    fn github_pull(&self, m: &Matched, p: &Pull, simple: bool) -> Value {
        let d = &self.description;
        let schema = if simple {
            json!({"$ref": "#/components/schemas/pull-request-simple"})
        } else {
            json!({"$ref": "#/components/schemas/pull-request"})
        };
        let _ = m;
        let mut v = d.sample_schema(&schema, 0);
        let web = format!("{}/{}/{}", self.web(), self.owner, self.repo);
        put(&mut v, "/number", json!(p.number));
        put(&mut v, "/node_id", json!(format!("PR_{}", p.number)));
        put(
            &mut v,
            "/html_url",
            json!(format!("{web}/pull/{}", p.number)),
        );
        put(&mut v, "/title", json!(p.title));
        put(&mut v, "/body", json!(p.body));
        put(&mut v, "/draft", json!(p.draft));
        put(
            &mut v,
            "/state",
            json!(if p.state == PullState::Open {
                "open"
            } else {
                "closed"
            }),
        );
        put(
            &mut v,
            "/merged_at",
            if p.state == PullState::Merged {
                json!("2026-01-02T03:04:05Z")
            } else {
                Value::Null
            },
        );
        put(&mut v, "/head/ref", json!(p.head));
        put(
            &mut v,
            "/head/label",
            json!(format!("{}:{}", self.owner, p.head)),
        );
        put(&mut v, "/base/ref", json!(p.base));
        put(
            &mut v,
            "/base/label",
            json!(format!("{}:{}", self.owner, p.base)),
        );
        let label = d.sample_at(&schema, &["labels", "[]"]);
        let labels: Vec<Value> = p
            .labels
            .iter()
            .map(|name| {
                let mut l = label.clone();
                put(&mut l, "/name", json!(name));
                l
            })
            .collect();
        put(&mut v, "/labels", Value::Array(labels));
        let user = d.sample_at(&schema, &["assignees", "[]"]);
        let users: Vec<Value> = p
            .assignees
            .iter()
            .map(|login| {
                let mut u = user.clone();
                put(&mut u, "/login", json!(login));
                u
            })
            .collect();
        put(&mut v, "/assignees", Value::Array(users));
        v
    }

    fn graphql(&self, req: &Recorded) -> Reply {
        if !self.authorized(req) {
            return Reply::json(401, json!({"message": "Bad credentials"}).to_string());
        }
        let body: Value = match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(e) => return self.violation(format!("GraphQL: the body is not JSON: {e}")),
        };
        if let Err(e) = crate::forge_graphql::check(&body) {
            return self.violation(format!("GraphQL: {e}"));
        }
        let id = body["variables"]["id"].as_str().unwrap_or("");
        let method = body["variables"]["method"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let mut state = self.state.lock().unwrap();
        let Some(pull) = state
            .pulls
            .iter_mut()
            .find(|p| format!("PR_{}", p.number) == id)
        else {
            return Reply::json(
                200,
                json!({"data": null, "errors": [{"message": format!("Could not resolve to a node with the global id of '{id}'")}]})
                    .to_string(),
            );
        };
        pull.auto_merge = Some(method);
        Reply::json(
            200,
            json!({"data": {"enablePullRequestAutoMerge": {"clientMutationId": null}}}).to_string(),
        )
    }

    // ---------------------------------------------------------------- GitLab

    fn gitlab(&self, m: &Matched) -> Result<Answer, String> {
        let d = &self.description;
        if m.template == "/users" {
            let state = self.state.lock().unwrap();
            let name = m
                .query
                .iter()
                .find(|(k, _)| k == "username")
                .map(|(_, v)| v.clone());
            let users: Vec<Value> = state
                .users
                .iter()
                .enumerate()
                .filter(|(_, u)| name.as_deref().is_none_or(|n| n == u.as_str()))
                .map(|(i, u)| self.gitlab_user(i as u64 + 1, u))
                .collect();
            return Ok((200, Value::Array(users), Vec::new()));
        }
        if !self.same_repo(m) {
            return Ok(self.not_found());
        }
        let mut state = self.state.lock().unwrap();
        match (m.method.as_str(), m.template.as_str()) {
            ("get", "/projects/{id}/merge_requests") => {
                let query: HashMap<&str, &str> = m
                    .query
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let mut pulls: Vec<&Pull> = state
                    .pulls
                    .iter()
                    .filter(|p| query.get("source_branch").is_none_or(|h| p.head == *h))
                    .filter(|p| query.get("target_branch").is_none_or(|b| p.base == *b))
                    .filter(|p| match query.get("state").copied() {
                        None | Some("all") => true,
                        Some("opened") => p.state == PullState::Open,
                        Some("merged") => p.state == PullState::Merged,
                        Some(_) => p.state == PullState::Closed,
                    })
                    .collect();
                pulls.sort_by_key(|p| std::cmp::Reverse(p.number));
                let items = pulls
                    .into_iter()
                    .map(|p| self.gitlab_mr(p, &state.users))
                    .collect();
                Ok((200, Value::Array(items), Vec::new()))
            }
            ("post", "/projects/{id}/merge_requests") => {
                let head = m.body["source_branch"].as_str().unwrap_or("").to_owned();
                let base = m.body["target_branch"].as_str().unwrap_or("").to_owned();
                if !state.branches.contains(&base) || !state.branches.contains(&head) {
                    return Ok((404, json!({"message": "404 Branch Not Found"}), Vec::new()));
                }
                if let Some(open) = state
                    .pulls
                    .iter()
                    .find(|p| p.head == head && p.base == base && p.state == PullState::Open)
                {
                    return Ok((
                        409,
                        json!({"message": [format!("Another open merge request already exists for this source branch: !{}", open.number)]}),
                        Vec::new(),
                    ));
                }
                let title = m.body["title"].as_str().unwrap_or("");
                let mut pull = Pull::new(&head, &base, title);
                pull.draft = title.starts_with("Draft:");
                pull.body = m.body["description"].as_str().unwrap_or("").to_owned();
                if let Some(labels) = m.body["labels"].as_str() {
                    pull.labels = labels
                        .split(',')
                        .map(str::to_owned)
                        .filter(|l| !l.is_empty())
                        .collect();
                }
                pull.number = state.pulls.len() as u64 + 1;
                state.pulls.push(pull.clone());
                let body = self.gitlab_mr(&pull, &state.users);
                Ok((201, body, Vec::new()))
            }
            ("put", "/projects/{id}/merge_requests/{merge_request_iid}") => {
                let n = Self::number(m, "merge_request_iid")?;
                let refuse = state.refuse_reopen;
                let users = state.users.clone();
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok((404, json!({"message": "404 Not found"}), Vec::new()));
                };
                match m.body["state_event"].as_str() {
                    Some("reopen") if refuse => {
                        return Ok((
                            422,
                            json!({"message": ["Source branch does not exist"]}),
                            Vec::new(),
                        ));
                    }
                    Some("reopen") => pull.state = PullState::Open,
                    Some("close") => pull.state = PullState::Closed,
                    _ => {}
                }
                apply_text(pull, &m.body, "title", "description");
                if let Some(labels) = m.body["add_labels"].as_str() {
                    for l in labels.split(',').filter(|l| !l.is_empty()) {
                        if !pull.labels.iter().any(|x| x == l) {
                            pull.labels.push(l.to_owned());
                        }
                    }
                }
                let name = |id: &Value| {
                    id.as_u64()
                        .and_then(|i| users.get(usize::try_from(i).ok()?.checked_sub(1)?))
                        .cloned()
                };
                if let Some(ids) = m.body["assignee_ids"].as_array() {
                    pull.assignees = ids.iter().filter_map(name).collect();
                }
                if let Some(ids) = m.body["reviewer_ids"].as_array() {
                    pull.reviewers = ids.iter().filter_map(name).collect();
                }
                let pull = pull.clone();
                Ok((200, self.gitlab_mr(&pull, &users), Vec::new()))
            }
            ("put", "/projects/{id}/merge_requests/{merge_request_iid}/merge") => {
                let n = Self::number(m, "merge_request_iid")?;
                let users = state.users.clone();
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok((404, json!({"message": "404 Not found"}), Vec::new()));
                };
                pull.auto_merge = Some(
                    if m.body["squash"] == true {
                        "squash"
                    } else {
                        "merge"
                    }
                    .to_owned(),
                );
                let pull = pull.clone();
                Ok((200, self.gitlab_mr(&pull, &users), Vec::new()))
            }
            ("post", "/projects/{id}/merge_requests/{merge_request_iid}/notes") => {
                let n = Self::number(m, "merge_request_iid")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok((404, json!({"message": "404 Not found"}), Vec::new()));
                };
                pull.comments
                    .push(m.body["body"].as_str().unwrap_or("").to_owned());
                let mut body = d.sample(m, 201);
                put(&mut body, "/body", m.body["body"].clone());
                Ok((201, body, Vec::new()))
            }
            _ => Err(format!(
                "the fake does not serve {} {}",
                m.method, m.template
            )),
        }
    }

    fn gitlab_user(&self, id: u64, name: &str) -> Value {
        let mut u = self
            .description
            .sample_schema(&json!({"$ref": "#/components/schemas/UserBasic"}), 0);
        put(&mut u, "/id", json!(id));
        put(&mut u, "/username", json!(name));
        put(&mut u, "/web_url", json!(format!("{}/{name}", self.web())));
        u
    }

    fn gitlab_mr(&self, p: &Pull, users: &[String]) -> Value {
        let mut v = self
            .description
            .sample_schema(&json!({"$ref": "#/components/schemas/MergeRequest"}), 0);
        let id_of = |name: &String| {
            users
                .iter()
                .position(|u| u == name)
                .map_or(99, |i| i as u64 + 1)
        };
        put(&mut v, "/iid", json!(p.number));
        put(&mut v, "/id", json!(1000 + p.number));
        put(&mut v, "/title", json!(p.title));
        put(&mut v, "/description", json!(p.body));
        put(
            &mut v,
            "/state",
            json!(match p.state {
                PullState::Open => "opened",
                PullState::Closed => "closed",
                PullState::Merged => "merged",
            }),
        );
        put(&mut v, "/source_branch", json!(p.head));
        put(&mut v, "/target_branch", json!(p.base));
        put(&mut v, "/draft", json!(p.title.starts_with("Draft:")));
        put(&mut v, "/labels", json!(p.labels));
        put(
            &mut v,
            "/web_url",
            json!(format!(
                "{}/{}/{}/-/merge_requests/{}",
                self.web(),
                self.owner,
                self.repo,
                p.number
            )),
        );
        let assignees: Vec<Value> = p
            .assignees
            .iter()
            .map(|a| self.gitlab_user(id_of(a), a))
            .collect();
        let reviewers: Vec<Value> = p
            .reviewers
            .iter()
            .map(|a| self.gitlab_user(id_of(a), a))
            .collect();
        put(&mut v, "/assignees", Value::Array(assignees));
        put(&mut v, "/reviewers", Value::Array(reviewers));
        put(
            &mut v,
            "/merge_when_pipeline_succeeds",
            json!(p.auto_merge.is_some()),
        );
        v
    }

    // ---------------------------------------------------------------- Gitea and Forgejo

    fn gitea(&self, m: &Matched) -> Result<Answer, String> {
        let d = &self.description;
        if !self.same_repo(m) {
            return Ok(self.not_found());
        }
        let mut state = self.state.lock().unwrap();
        let exists_message = |p: &Pull| {
            format!(
                "pull request already exists for these targets [id: {}, issue_id: {}, head_repo_id: 1, base_repo_id: 1, head_branch: {}, base_branch: {}]",
                p.number, p.number, p.head, p.base
            )
        };
        match (m.method.as_str(), m.template.as_str()) {
            ("get", "/repos/{owner}/{repo}/pulls/{base}/{head}") => {
                // The oldest request for the pair, whatever its state (no order is promised).
                let base = m.params.get("base").cloned().unwrap_or_default();
                let head = m.params.get("head").cloned().unwrap_or_default();
                match state
                    .pulls
                    .iter()
                    .find(|p| p.head == head && p.base == base)
                {
                    Some(p) => Ok((200, self.gitea_pull(p), Vec::new())),
                    None => Ok(self.not_found()),
                }
            }
            ("get", "/repos/{owner}/{repo}/pulls") => {
                let query: HashMap<&str, &str> = m
                    .query
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let page: usize = query
                    .get("page")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(1)
                    .max(1);
                let limit: usize = query
                    .get("limit")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(30)
                    .clamp(1, 50);
                let items: Vec<Value> = state
                    .pulls
                    .iter()
                    .rev()
                    .filter(|p| match query.get("state").copied() {
                        Some("all") => true,
                        Some("closed") => p.state != PullState::Open,
                        _ => p.state == PullState::Open,
                    })
                    .skip((page - 1) * limit)
                    .take(limit)
                    .map(|p| self.gitea_pull(p))
                    .collect();
                Ok((200, Value::Array(items), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/pulls") => {
                let head = m.body["head"].as_str().unwrap_or("").to_owned();
                let base = m.body["base"].as_str().unwrap_or("").to_owned();
                if !state.branches.contains(&base) || !state.branches.contains(&head) {
                    return Ok((
                        404,
                        json!({"message": "The target couldn't be found.", "url": "https://forge.example/api/swagger"}),
                        Vec::new(),
                    ));
                }
                if let Some(open) = state
                    .pulls
                    .iter()
                    .find(|p| p.head == head && p.base == base && p.state == PullState::Open)
                {
                    let message = exists_message(open);
                    return Ok((
                        409,
                        json!({"message": message, "url": "https://forge.example/api/swagger"}),
                        Vec::new(),
                    ));
                }
                let title = m.body["title"].as_str().unwrap_or("");
                let mut pull = Pull::new(&head, &base, title);
                pull.draft = title.starts_with("WIP:");
                pull.body = m.body["body"].as_str().unwrap_or("").to_owned();
                extend(&mut pull.assignees, &m.body["assignees"]);
                pull.number = state.pulls.len() as u64 + 1;
                state.pulls.push(pull.clone());
                Ok((201, self.gitea_pull(&pull), Vec::new()))
            }
            ("patch", "/repos/{owner}/{repo}/pulls/{index}") => {
                let n = Self::number(m, "index")?;
                let refuse = state.refuse_reopen;
                let other_open = |state: &ForgeState, p: &Pull| {
                    state
                        .pulls
                        .iter()
                        .find(|o| {
                            o.number != p.number
                                && o.head == p.head
                                && o.base == p.base
                                && o.state == PullState::Open
                        })
                        .cloned()
                };
                let Some(index) = state.pulls.iter().position(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                if m.body["state"] == "open" && state.pulls[index].state != PullState::Open {
                    if let Some(open) = other_open(&state, &state.pulls[index]) {
                        let message = exists_message(&open);
                        return Ok((
                            409,
                            json!({"message": message, "url": "https://forge.example/api/swagger"}),
                            Vec::new(),
                        ));
                    }
                    if refuse {
                        return Ok((
                            409,
                            json!({"message": "cannot reopen this pull request: its head branch was deleted", "url": "https://forge.example/api/swagger"}),
                            Vec::new(),
                        ));
                    }
                    state.pulls[index].state = PullState::Open;
                }
                let pull = &mut state.pulls[index];
                apply_text(pull, &m.body, "title", "body");
                if m.body["state"] == "closed" {
                    pull.state = PullState::Closed;
                }
                if m.body.get("assignees").is_some() {
                    pull.assignees.clear();
                    extend(&mut pull.assignees, &m.body["assignees"]);
                }
                let pull = pull.clone();
                Ok((201, self.gitea_pull(&pull), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/issues/{index}/labels") => {
                let n = Self::number(m, "index")?;
                let known = state.labels.clone();
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                for label in m.body["labels"].as_array().into_iter().flatten() {
                    let Some(label) = label.as_str() else {
                        return Err(format!("label {label} is not a name"));
                    };
                    if known.iter().any(|k| k == label) && !pull.labels.iter().any(|l| l == label) {
                        pull.labels.push(label.to_owned());
                    }
                }
                let labels = pull.labels.clone();
                let items = labels.iter().map(|l| {
                    let mut v = d.sample_schema(&json!({"$ref": "#/definitions/Label"}), 0);
                    put(&mut v, "/name", json!(l));
                    v
                });
                Ok((200, Value::Array(items.collect()), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/pulls/{index}/requested_reviewers") => {
                let n = Self::number(m, "index")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                extend(&mut pull.reviewers, &m.body["reviewers"]);
                extend(&mut pull.team_reviewers, &m.body["team_reviewers"]);
                Ok((201, json!([]), Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/pulls/{index}/merge") => {
                let n = Self::number(m, "index")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                if m.body["merge_when_checks_succeed"] != true {
                    return Err("the fake only schedules merges (merge_when_checks_succeed)".into());
                }
                pull.auto_merge = m.body["Do"].as_str().map(str::to_owned);
                Ok((200, Value::Null, Vec::new()))
            }
            ("post", "/repos/{owner}/{repo}/issues/{index}/comments") => {
                let n = Self::number(m, "index")?;
                let Some(pull) = state.pulls.iter_mut().find(|p| p.number == n) else {
                    return Ok(self.not_found());
                };
                pull.comments
                    .push(m.body["body"].as_str().unwrap_or("").to_owned());
                let mut body = d.sample(m, 201);
                put(&mut body, "/body", m.body["body"].clone());
                Ok((201, body, Vec::new()))
            }
            _ => Err(format!(
                "the fake does not serve {} {}",
                m.method, m.template
            )),
        }
    }

    fn gitea_pull(&self, p: &Pull) -> Value {
        let mut v = self
            .description
            .sample_schema(&json!({"$ref": "#/definitions/PullRequest"}), 0);
        put(&mut v, "/number", json!(p.number));
        put(&mut v, "/id", json!(1000 + p.number));
        put(&mut v, "/title", json!(p.title));
        put(&mut v, "/body", json!(p.body));
        put(
            &mut v,
            "/state",
            json!(if p.state == PullState::Open {
                "open"
            } else {
                "closed"
            }),
        );
        put(&mut v, "/merged", json!(p.state == PullState::Merged));
        put(&mut v, "/draft", json!(p.draft));
        put(
            &mut v,
            "/html_url",
            json!(format!(
                "{}/{}/{}/pulls/{}",
                self.web(),
                self.owner,
                self.repo,
                p.number
            )),
        );
        put(&mut v, "/head/ref", json!(p.head));
        put(&mut v, "/base/ref", json!(p.base));
        let labels: Vec<Value> = p.labels.iter().map(|l| json!({"name": l})).collect();
        put(&mut v, "/labels", Value::Array(labels));
        let users: Vec<Value> = p.assignees.iter().map(|a| json!({"login": a})).collect();
        put(&mut v, "/assignees", Value::Array(users));
        v
    }
}

/// GitHub's 422: `(resource, field, code, message)` per error.
fn validation(errors: &[(&str, Option<&str>, &str, Option<&str>)]) -> Answer {
    let errors: Vec<Value> = errors
        .iter()
        .map(|(resource, field, code, message)| {
            let mut e = json!({"resource": resource, "code": code});
            if let Some(field) = field {
                e["field"] = json!(field);
            }
            if let Some(message) = message {
                e["message"] = json!(message);
            }
            e
        })
        .collect();
    (
        422,
        json!({
            "message": "Validation Failed",
            "errors": errors,
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
            "status": "422"
        }),
        Vec::new(),
    )
}

fn apply_text(pull: &mut Pull, body: &Value, title: &str, text: &str) {
    if let Some(t) = body[title].as_str() {
        t.clone_into(&mut pull.title);
    }
    if let Some(t) = body[text].as_str() {
        t.clone_into(&mut pull.body);
    }
}

fn extend(list: &mut Vec<String>, values: &Value) {
    for v in values
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !list.iter().any(|x| x == v) {
            list.push(v.to_owned());
        }
    }
}

/// Sets `pointer` in `value`, making the objects on the way.
pub fn put(value: &mut Value, pointer: &str, new: Value) {
    let mut current = value;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if !current.is_object() {
            *current = json!({});
        }
        let map = current.as_object_mut().unwrap();
        if i == parts.len() - 1 {
            map.insert((*part).to_owned(), new);
            return;
        }
        current = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
}

fn reply(status: u16, body: &Value, headers: &[(String, String)]) -> Reply {
    let mut r = if body.is_null() {
        Reply::status(status)
    } else {
        Reply::json(status, body.to_string())
    };
    for (k, v) in headers {
        r = r.with_header(k, v);
    }
    r
}
