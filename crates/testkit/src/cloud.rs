//! Test beds for the cloud registries' logins: PyPI's `moto` server as a
//! real STS, IAM and ECR endpoint (it checks Signature Version 4 and IAM
//! permissions once asked to), a CONNECT proxy that takes a cloud
//! registry's host name (`123456789012.dkr.ecr.eu-west-1.amazonaws.com`) to
//! a loopback server (the real `docker-registry`), and a forwarder that
//! counts what a client sent to a server behind it.
//!
//! `.ci/run` installs moto (pinned) in a virtual environment and puts its
//! `moto_server` on `PATH`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::registry::{FakeServer, Reply, free_port};

/// moto's server program.
pub const MOTO_BIN: &str = "moto_server";

/// The account moto answers for.
pub const MOTO_ACCOUNT: &str = "123456789012";

/// The password moto's `GetAuthorizationToken` hands out for `account`
/// (`AWS:ACCOUNT-auth-token`, base64).
#[must_use]
pub fn moto_ecr_password(account: &str) -> String {
    format!("{account}-auth-token")
}

/// An agent for loopback servers: statuses as answers, no redirects, no
/// proxy from the environment.
fn loopback_agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    )
}

/// A `moto_server` on a free loopback port, stopped when dropped.
pub struct Moto {
    child: Child,
    pub port: u16,
    agent: ureq::Agent,
}

impl Moto {
    /// Start moto (in a trial that needs [`MOTO_BIN`]) and wait until it
    /// answers.
    pub fn start() -> Self {
        let agent = loopback_agent();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = free_port();
            let child =
                Command::new(crate::find_program(MOTO_BIN).expect("moto_server is on PATH"))
                    .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
            let mut moto = Self {
                child,
                port,
                agent: agent.clone(),
            };
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(60) {
                if let Ok(Some(_)) = moto.child.try_wait() {
                    break;
                }
                if let Ok(resp) = moto.agent.get(format!("{}/moto-api/", moto.url())).call()
                    && resp.status() == 200
                {
                    return moto;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            assert!(attempt < 3, "moto_server did not start on port {port}");
        }
    }

    /// `http://127.0.0.1:PORT`
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// An unsigned call of the query protocol to `service` (IAM, STS):
    /// the XML answer. Only while moto does not check requests.
    pub fn query(
        &self,
        service: &str,
        version: &str,
        action: &str,
        params: &[(&str, &str)],
    ) -> String {
        let mut form = format!("Action={action}&Version={version}");
        for (k, v) in params {
            form.push_str(&format!("&{k}={}", crate::registry::percent_encode(v)));
        }
        // The credential scope tells moto the service; nothing is checked yet.
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential=setup/20240101/us-east-1/{service}/aws4_request, SignedHeaders=host, Signature=0"
        );
        let mut resp = self
            .agent
            .post(self.url())
            .header("Authorization", &authorization)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .send(form.as_bytes())
            .unwrap();
        let body = resp.body_mut().read_to_string().unwrap();
        assert_eq!(resp.status(), 200, "{action}: {body}");
        body
    }

    /// An IAM user allowed `actions` (on every resource), and its access
    /// key: `(id, secret)`.
    pub fn user(&self, name: &str, actions: &[&str]) -> (String, String) {
        let v = "2010-05-08";
        self.query("iam", v, "CreateUser", &[("UserName", name)]);
        let policy = policy(actions);
        self.query(
            "iam",
            v,
            "PutUserPolicy",
            &[
                ("UserName", name),
                ("PolicyName", "p"),
                ("PolicyDocument", &policy),
            ],
        );
        let key = self.query("iam", v, "CreateAccessKey", &[("UserName", name)]);
        (xml(&key, "AccessKeyId"), xml(&key, "SecretAccessKey"))
    }

    /// An IAM role allowed `actions`, that web identities may assume: its
    /// ARN.
    pub fn role(&self, name: &str, actions: &[&str]) -> String {
        let v = "2010-05-08";
        let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"oidc"},"Action":"sts:AssumeRoleWithWebIdentity"}]}"#;
        let created = self.query(
            "iam",
            v,
            "CreateRole",
            &[("RoleName", name), ("AssumeRolePolicyDocument", trust)],
        );
        let policy = policy(actions);
        self.query(
            "iam",
            v,
            "PutRolePolicy",
            &[
                ("RoleName", name),
                ("PolicyName", "p"),
                ("PolicyDocument", &policy),
            ],
        );
        xml(&created, "Arn")
    }

    /// From now on moto checks every request but the next `free` ones: its
    /// Signature Version 4 and the permissions of its key.
    pub fn require_auth(&self, free: u32) {
        let resp = self
            .agent
            .post(format!("{}/moto-api/reset-auth", self.url()))
            .send(free.to_string().as_bytes())
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn policy(actions: &[&str]) -> String {
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
    })
    .to_string()
}

/// The text of the first `<tag>` of an XML answer.
#[must_use]
pub fn xml(body: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let start = body.find(&open).map(|i| i + open.len()).unwrap_or(0);
    let end = body[start..]
        .find(&format!("</{tag}>"))
        .map_or(start, |i| start + i);
    body[start..end].to_owned()
}

/// An HTTP CONNECT proxy on loopback that takes the host names it knows
/// to loopback servers (any port asked for) and refuses every other one:
/// a client set to use it (`HTTPS_PROXY`, `NO_PROXY=127.0.0.1`) reaches a
/// cloud registry's name on a local `docker-registry`.
pub struct ConnectProxy {
    pub addr: SocketAddr,
    connects: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl ConnectProxy {
    /// Route each `(host, target authority)`.
    pub fn start(routes: &[(&str, String)]) -> Self {
        let routes: Arc<BTreeMap<String, String>> = Arc::new(
            routes
                .iter()
                .map(|(h, t)| ((*h).to_ascii_lowercase(), t.clone()))
                .collect(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connects = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (connects, stop) = (Arc::clone(&connects), Arc::clone(&stop));
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = conn else { continue };
                    let (routes, connects) = (Arc::clone(&routes), Arc::clone(&connects));
                    std::thread::spawn(move || tunnel(stream, &routes, &connects));
                }
            });
        }
        Self {
            addr,
            connects,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT`, for `HTTPS_PROXY`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every `host:port` a client asked to connect to, in order.
    #[must_use]
    pub fn connects(&self) -> Vec<String> {
        self.connects.lock().unwrap().clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn tunnel(stream: TcpStream, routes: &BTreeMap<String, String>, connects: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    connects.lock().unwrap().push(target.to_owned());
    let host = target
        .rsplit_once(':')
        .map_or(target, |(h, _)| h)
        .to_ascii_lowercase();
    let mut client = stream;
    let upstream = match (method, routes.get(&host)) {
        ("CONNECT", Some(to)) => TcpStream::connect(to).ok(),
        _ => None,
    };
    let Some(upstream) = upstream else {
        let _ = client.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    // What the reader buffered past the request's head goes first.
    let buffered = reader.buffer().to_vec();
    let mut up_write = upstream.try_clone().unwrap();
    let mut down_read = upstream;
    let mut client_write = client.try_clone().unwrap();
    let up = std::thread::spawn(move || {
        let _ = up_write.write_all(&buffered);
        let mut rest = reader.into_inner();
        let _ = std::io::copy(&mut rest, &mut up_write);
        let _ = up_write.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut down_read, &mut client_write);
    let _ = client_write.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}

/// A loopback server recording every request and forwarding it, headers
/// and all (`Host` included, as a signed request needs), to `target`
/// (`127.0.0.1:PORT`): to count what a client sent to moto.
pub fn forwarder(target: &str) -> FakeServer {
    forwarder_with(target, |_| None)
}

/// [`forwarder`], but `answer` answers the requests it wants to itself
/// (ACR's `/oauth2/exchange` in front of a real registry).
pub fn forwarder_with(
    target: &str,
    answer: impl Fn(&crate::registry::Recorded) -> Option<Reply> + Send + Sync + 'static,
) -> FakeServer {
    let base = format!("http://{target}");
    let agent = loopback_agent();
    FakeServer::start(move |req| {
        if let Some(reply) = answer(req) {
            return reply;
        }
        let mut builder = ureq::http::Request::builder()
            .method(req.method.as_str())
            .uri(format!("{base}{}", req.target));
        for (k, v) in &req.headers {
            let lower = k.to_ascii_lowercase();
            if ![
                "connection",
                "content-length",
                "transfer-encoding",
                "accept-encoding",
            ]
            .contains(&lower.as_str())
            {
                builder = builder.header(k, v);
            }
        }
        let mut resp = agent.run(builder.body(req.body.clone()).unwrap()).unwrap();
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .filter(|(k, _)| {
                ![
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "content-encoding",
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let mut body = Vec::new();
        let _ = resp.body_mut().as_reader().read_to_end(&mut body);
        Reply::Respond {
            status,
            headers,
            body,
        }
    })
}

/// The `X-Amz-Target` of ECR's `GetAuthorizationToken`.
pub const ECR_LOGIN_TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";

/// Remove from `command` the variables of the clouds' identities (`AWS_*`,
/// `AZURE_*`, `GOOGLE_*`, `GCE_*`) and the proxies, which a trial must not
/// take from the machine it runs on, and keep it off any instance
/// metadata service (`AWS_EC2_METADATA_DISABLED`).
pub fn isolate(command: &mut Command) {
    for (k, _) in std::env::vars() {
        if ["AWS_", "AZURE_", "GOOGLE_", "GCE_"]
            .iter()
            .any(|p| k.starts_with(p))
            || k.to_ascii_lowercase().ends_with("_proxy")
        {
            command.env_remove(k);
        }
    }
    command.env("AWS_EC2_METADATA_DISABLED", "true");
}

/// A real ECR login: moto checking every signature, a user allowed
/// `ecr:GetAuthorizationToken` (`id`, `secret`), a counting [`forwarder`]
/// in front of moto (`front`, for `AWS_ENDPOINT_URL_ECR`), and a real
/// registry (TLS with `ca`) that accepts only the password moto's ECR
/// hands out.
pub struct EcrBed {
    pub moto: Moto,
    pub front: FakeServer,
    pub id: String,
    pub secret: String,
    pub registry: crate::registry::Registry,
}

impl EcrBed {
    /// Start it (in a trial that needs `docker-registry` and [`MOTO_BIN`]).
    pub fn start(ca: Option<&crate::registry::TestCa>) -> Self {
        let moto = Moto::start();
        let (id, secret) = moto.user("puller", &["ecr:GetAuthorizationToken"]);
        moto.require_auth(0);
        let front = forwarder(&format!("127.0.0.1:{}", moto.port));
        let registry = crate::registry::Registry::start_with(
            crate::registry::Auth::Htpasswd {
                user: "AWS".to_owned(),
                password: moto_ecr_password(MOTO_ACCOUNT),
            },
            ca,
        );
        Self {
            moto,
            front,
            id,
            secret,
            registry,
        }
    }

    /// How many `GetAuthorizationToken` calls reached moto.
    pub fn logins(&self) -> usize {
        self.front.count(|r: &crate::registry::Recorded| {
            r.header("x-amz-target") == Some(ECR_LOGIN_TARGET)
        })
    }
}
