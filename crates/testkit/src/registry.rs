//! Test harness for the registry client: a real Debian `docker-registry`
//! (distribution 2.8) on a free 127.0.0.1 port, a token service that signs
//! JWTs the way distribution expects, a pusher speaking the registry HTTP
//! API, and a small fake HTTP server for fault injection.
//!
//! Shared by the registry crate's tests and benchmark and the `--fetch`
//! tests.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use sha2::{Digest, Sha256};

pub const REGISTRY_BIN: &str = "docker-registry";

/// Path of `docker-registry`. Tests that use it are [`crate::trial`]s that
/// need it, so it is there when they run.
pub fn registry_binary() -> PathBuf {
    crate::find_program(REGISTRY_BIN).expect("docker-registry is on PATH")
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn b64url(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

pub fn sha256(data: &[u8]) -> String {
    let h = Sha256::digest(data);
    format!(
        "sha256:{}",
        h.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

pub fn basic(user: &str, pass: &str) -> String {
    format!("Basic {}", b64(format!("{user}:{pass}").as_bytes()))
}

// ---------------------------------------------------------------------------
// JWT issuer (ES256, x5c header with a self-signed certificate)

pub struct TokenIssuer {
    key: ring::signature::EcdsaKeyPair,
    cert_der: Vec<u8>,
    pub cert_pem: String,
    pub issuer: String,
    pub service: String,
    rng: ring::rand::SystemRandom,
    counter: AtomicUsize,
}

impl TokenIssuer {
    pub fn new(issuer: &str, service: &str) -> Self {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params =
            rcgen::CertificateParams::new(vec!["image-update-test-issuer".to_owned()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let rng = ring::rand::SystemRandom::new();
        let signing = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &key.serialize_der(),
            &rng,
        )
        .unwrap();
        Self {
            key: signing,
            cert_der: cert.der().to_vec(),
            cert_pem: cert.pem(),
            issuer: issuer.to_owned(),
            service: service.to_owned(),
            rng,
            counter: AtomicUsize::new(0),
        }
    }

    /// A token granting `actions` on each repository in `access`.
    pub fn token(&self, subject: &str, access: &[(String, Vec<String>)]) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let header = serde_json::json!({
            "typ": "JWT",
            "alg": "ES256",
            "x5c": [b64(&self.cert_der)],
        });
        let access: Vec<_> = access
            .iter()
            .map(|(name, actions)| serde_json::json!({"type": "repository", "name": name, "actions": actions}))
            .collect();
        let claims = serde_json::json!({
            "iss": self.issuer,
            "sub": subject,
            "aud": self.service,
            "exp": now + 600,
            "nbf": now - 10,
            "iat": now,
            "jti": format!("jti-{}-{now}", self.counter.fetch_add(1, Ordering::Relaxed)),
            "access": access,
        });
        let signing_input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let sig = self.key.sign(&self.rng, signing_input.as_bytes()).unwrap();
        format!("{signing_input}.{}", b64url(sig.as_ref()))
    }
}

// ---------------------------------------------------------------------------
// TLS: a test CA and a server certificate for 127.0.0.1

pub struct TestCa {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new() -> Self {
        Self::for_names(&["127.0.0.1", "localhost"])
    }

    /// A CA and a server certificate for `names` (a cloud registry's host
    /// name reached through a proxy).
    pub fn for_names(names: &[&str]) -> Self {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "image-update test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let mut leaf_params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .unwrap();
        leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        leaf_params.distinguished_name.push(
            rcgen::DnType::CommonName,
            names.first().copied().unwrap_or("localhost"),
        );
        let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();
        Self {
            ca_pem: ca.pem(),
            cert_pem: leaf.pem(),
            key_pem: leaf_key.serialize_pem(),
        }
    }
}

// ---------------------------------------------------------------------------
// Fake HTTP server

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The port the request arrived on.
    pub port: u16,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub fn query(&self) -> Vec<(String, String)> {
        let Some((_, q)) = self.target.split_once('?') else {
            return Vec::new();
        };
        q.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect()
    }

    pub fn query_value(&self, key: &str) -> Option<String> {
        self.query()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }
}

pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the fake server does with a request.
pub enum Reply {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Announce `Content-Length` of the full body but send only `send` bytes, then close.
    Truncate {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        send: usize,
    },
    /// Send the status line and headers at once (with the full
    /// `Content-Length`), then the body one byte every `interval`: a
    /// registry that answers but never finishes.
    Trickle {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        interval: Duration,
    },
    /// Wait, then reply.
    Delay(Duration, Box<Reply>),
    /// Close the connection without answering.
    Close,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply::Respond {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Reply::Respond {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body: body.into(),
        }
    }

    /// This reply with `body` (a `Respond`).
    pub fn with_body(self, new: impl Into<Vec<u8>>) -> Self {
        match self {
            Reply::Respond {
                status, headers, ..
            } => Reply::Respond {
                status,
                headers,
                body: new.into(),
            },
            other => other,
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Respond {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_owned(), value.to_owned()));
                Reply::Respond {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

pub struct FakeServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    pub fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = conn else { continue };
                    let requests = Arc::clone(&requests);
                    let handler = Arc::clone(&handler);
                    std::thread::spawn(move || {
                        serve_connection(stream, addr.port(), &requests, &*handler)
                    });
                }
            })
        };
        Self {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:PORT`
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self, pred: impl Fn(&Recorded) -> bool) -> usize {
        self.requests().iter().filter(|r| pred(r)).count()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_connection(
    stream: TcpStream,
    port: u16,
    requests: &Mutex<Vec<Recorded>>,
    handler: &Handler,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    // Head and body are separate writes: without this, Nagle's algorithm and
    // the client's delayed ACK stall every response by about 40 ms.
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let target = parts.next().unwrap_or_default().to_owned();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let rec = Recorded {
            method: method.clone(),
            target,
            headers,
            body,
            port,
        };
        requests.lock().unwrap().push(rec.clone());
        let mut reply = handler(&rec);
        while let Reply::Delay(d, inner) = reply {
            std::thread::sleep(d);
            reply = *inner;
        }
        match reply {
            Reply::Close => return,
            Reply::Respond {
                status,
                headers,
                body,
            } => {
                if write_response(&mut stream, status, &headers, &body, body.len(), &method)
                    .is_err()
                {
                    return;
                }
            }
            Reply::Truncate {
                status,
                headers,
                body,
                send,
            } => {
                let _ = write_response(
                    &mut stream,
                    status,
                    &headers,
                    &body[..send.min(body.len())],
                    body.len(),
                    &method,
                );
                return;
            }
            Reply::Trickle {
                status,
                headers,
                body,
                interval,
            } => {
                if write_response(&mut stream, status, &headers, &[], body.len(), &method).is_err()
                {
                    return;
                }
                for byte in &body {
                    std::thread::sleep(interval);
                    if stream
                        .write_all(&[*byte])
                        .and_then(|()| stream.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            }
            Reply::Delay(..) => unreachable!(),
        }
    }
}

fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    declared_len: usize,
    method: &str,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {declared_len}\r\n\r\n"));
    stream.write_all(head.as_bytes())?;
    if method != "HEAD" {
        stream.write_all(body)?;
    }
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

// ---------------------------------------------------------------------------
// Token service for the real registry

pub struct TokenServer {
    pub server: FakeServer,
    pub issuer: Arc<TokenIssuer>,
}

#[derive(Clone)]
pub struct TokenPolicy {
    /// Username/password accepted with Basic auth.
    pub user: Option<(String, String)>,
    /// Refresh token accepted in the POST refresh_token grant.
    pub refresh_token: Option<String>,
    /// Grant pull to anonymous requests.
    pub anonymous_pull: bool,
    /// Answer with `access_token` only (OAuth2 style) instead of `token`.
    pub access_token_field: bool,
}

impl TokenServer {
    pub fn start(policy: TokenPolicy) -> Self {
        let issuer = Arc::new(TokenIssuer::new(
            "image-update-test-issuer",
            "image-update-test",
        ));
        let iss = Arc::clone(&issuer);
        let server = FakeServer::start(move |req| {
            let mut params = req.query();
            if req.method == "POST" {
                let body = String::from_utf8_lossy(&req.body).into_owned();
                for pair in body.split('&') {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    params.push((percent_decode(k), percent_decode(v)));
                }
            }
            let get = |k: &str| {
                params
                    .iter()
                    .find(|(pk, _)| pk == k)
                    .map(|(_, v)| v.clone())
            };
            let authenticated = if req.method == "POST" {
                get("grant_type").as_deref() == Some("refresh_token")
                    && policy.refresh_token.is_some()
                    && get("refresh_token") == policy.refresh_token
            } else {
                match (req.header("authorization"), &policy.user) {
                    (Some(h), Some((u, p))) => h == basic(u, p),
                    _ => false,
                }
            };
            let has_credentials = req.header("authorization").is_some() || req.method == "POST";
            if has_credentials && !authenticated {
                return Reply::json(401, r#"{"details":"invalid credentials"}"#);
            }
            if !authenticated && !policy.anonymous_pull {
                return Reply::json(401, r#"{"details":"authentication required"}"#);
            }
            let mut access = Vec::new();
            for (k, v) in &params {
                if k != "scope" {
                    continue;
                }
                // repository:NAME:ACTIONS
                let mut parts = v.splitn(3, ':');
                let (Some("repository"), Some(name), Some(actions)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let granted: Vec<String> = actions
                    .split(',')
                    .filter(|a| *a == "pull" || (authenticated && *a == "push"))
                    .map(str::to_owned)
                    .collect();
                access.push((name.to_owned(), granted));
            }
            let token = iss.token(if authenticated { "tester" } else { "" }, &access);
            let body = if policy.access_token_field {
                serde_json::json!({"access_token": token, "expires_in": 300})
            } else {
                serde_json::json!({"token": token, "expires_in": 300, "issued_at": "2024-01-01T00:00:00Z"})
            };
            Reply::json(200, body.to_string())
        });
        Self { server, issuer }
    }

    pub fn token_requests(&self) -> usize {
        self.server.count(|r| r.path() == "/token")
    }
}

// ---------------------------------------------------------------------------
// The real registry

pub enum Auth {
    Anonymous,
    Htpasswd { user: String, password: String },
    Token(Arc<TokenIssuer>, String),
}

pub struct Registry {
    pub port: u16,
    tls: bool,
    child: Child,
    dir: tempfile::TempDir,
    auth: Auth,
    agent: ureq::Agent,
}

impl Registry {
    /// Start `docker-registry` (in a trial that needs it).
    pub fn start(auth: Auth) -> Self {
        Self::start_with(auth, None)
    }

    /// Start with TLS (server certificate signed by `tls`'s CA) when given.
    pub fn start_with(auth: Auth, tls: Option<&TestCa>) -> Self {
        let bin = registry_binary();
        let dir = tempfile::tempdir().unwrap();
        let auth_yaml = match &auth {
            Auth::Anonymous => String::new(),
            Auth::Htpasswd { user, password } => {
                let hash = bcrypt::hash(password, 4).unwrap();
                let path = dir.path().join("htpasswd");
                fs_err::write(&path, format!("{user}:{hash}\n")).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: image-update-test\n    path: {}\n",
                    path.display()
                )
            }
            Auth::Token(issuer, realm) => {
                let path = dir.path().join("token-root.pem");
                fs_err::write(&path, &issuer.cert_pem).unwrap();
                format!(
                    "auth:\n  token:\n    realm: {realm}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                    issuer.service,
                    issuer.issuer,
                    path.display()
                )
            }
        };
        let tls_yaml = match tls {
            Some(ca) => {
                let cert = dir.path().join("server.pem");
                let key = dir.path().join("server-key.pem");
                fs_err::write(&cert, &ca.cert_pem).unwrap();
                fs_err::write(&key, &ca.key_pem).unwrap();
                format!(
                    "  tls:\n    certificate: {}\n    key: {}\n",
                    cert.display(),
                    key.display()
                )
            }
            None => String::new(),
        };
        let mut tls_config = ureq::tls::TlsConfig::builder();
        if let Some(ca) = tls {
            let cert = ureq::tls::Certificate::from_pem(ca.ca_pem.as_bytes()).unwrap();
            tls_config = tls_config.root_certs(ureq::tls::RootCerts::new_with_certs(&[cert]));
        }
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .max_idle_connections_per_host(16)
                .timeout_global(Some(Duration::from_secs(30)))
                .tls_config(tls_config.build())
                .build(),
        );
        let scheme = if tls.is_some() { "https" } else { "http" };
        let log_path = dir.path().join("registry.log");
        // The free port can be taken between probing and binding: try again then.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = free_port();
            let config = format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  maintenance:\n    uploadpurging:\n      enabled: false\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: image-update-test\n{tls_yaml}{auth_yaml}",
                dir.path().join("data").display()
            );
            let config_path = dir.path().join("config.yml");
            fs_err::write(&config_path, config).unwrap();
            let log = fs_err::File::create(&log_path).unwrap().into_parts().0;
            let mut child = Command::new(&bin)
                .arg("serve")
                .arg(&config_path)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            let base = format!("{scheme}://127.0.0.1:{port}");
            match wait_ready(&mut child, &agent, &base, &log_path) {
                Ok(()) => {
                    return Self {
                        port,
                        tls: tls.is_some(),
                        child,
                        dir,
                        auth,
                        agent,
                    };
                }
                Err(message) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    if attempt < 3 && message.contains("address already in use") {
                        continue;
                    }
                    panic!("{message}");
                }
            }
        }
    }

    pub fn log(&self) -> String {
        fs_err::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn base(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    fn push_auth(&self, repo: &str) -> Option<String> {
        match &self.auth {
            Auth::Anonymous => None,
            Auth::Htpasswd { user, password } => Some(basic(user, password)),
            Auth::Token(issuer, _) => Some(format!(
                "Bearer {}",
                issuer.token(
                    "pusher",
                    &[(repo.to_owned(), vec!["pull".to_owned(), "push".to_owned()])]
                )
            )),
        }
    }

    /// Upload a blob (POST then monolithic PUT) and return its digest.
    pub fn push_blob(&self, repo: &str, data: &[u8]) -> String {
        let digest = sha256(data);
        let auth = self.push_auth(repo);
        let mut req = self
            .agent
            .post(format!("{}/v2/{repo}/blobs/uploads/", self.base()));
        if let Some(a) = &auth {
            req = req.header("Authorization", a);
        }
        let resp = req.send_empty().unwrap();
        assert_eq!(resp.status(), 202, "start upload: {}", self.log());
        let location = resp
            .headers()
            .get("location")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let location = if location.starts_with('/') {
            format!("{}{location}", self.base())
        } else {
            location
        };
        let sep = if location.contains('?') { '&' } else { '?' };
        let mut req = self
            .agent
            .put(format!("{location}{sep}digest={digest}"))
            .header("Content-Type", "application/octet-stream");
        if let Some(a) = &auth {
            req = req.header("Authorization", a);
        }
        let resp = req.send(data).unwrap();
        assert_eq!(resp.status(), 201, "finish upload");
        digest
    }

    /// PUT a manifest under `reference`.
    pub fn put_manifest(&self, repo: &str, reference: &str, media_type: &str, body: &[u8]) {
        let mut req = self
            .agent
            .put(format!("{}/v2/{repo}/manifests/{reference}", self.base()))
            .header("Content-Type", media_type);
        if let Some(a) = self.push_auth(repo) {
            req = req.header("Authorization", a);
        }
        let mut resp = req.send(body).unwrap();
        let status = resp.status();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 201, "PUT manifest {repo}:{reference}: {text}");
    }

    /// GET a manifest (any media type), if the registry has it.
    pub fn get_manifest(&self, repo: &str, reference: &str) -> Option<Vec<u8>> {
        let mut req = self
            .agent
            .get(format!("{}/v2/{repo}/manifests/{reference}", self.base()))
            .header(
                "Accept",
                "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json",
            );
        if let Some(a) = self.push_auth(repo) {
            req = req.header("Authorization", a);
        }
        let mut resp = req.call().unwrap();
        if resp.status() == 404 {
            return None;
        }
        assert_eq!(resp.status(), 200, "GET manifest {repo}:{reference}");
        Some(resp.body_mut().read_to_vec().unwrap())
    }

    /// Push one single-platform image; returns `(manifest bytes, digest)`.
    pub fn push_image(&self, repo: &str, tag: &str, image: &ImageSpec) -> (Vec<u8>, String) {
        let (config, layer) = image.blobs();
        let config_digest = self.push_blob(repo, &config);
        let layer_digest = self.push_blob(repo, &layer);
        let (manifest, media_type) = image.manifest(&config, &config_digest, &layer, &layer_digest);
        self.put_manifest(repo, tag, media_type, &manifest);
        let digest = sha256(&manifest);
        (manifest, digest)
    }

    /// Push a multi-platform OCI index; returns `(index digest, [(platform, child digest)])`.
    pub fn push_index(
        &self,
        repo: &str,
        tag: &str,
        images: &[ImageSpec],
        attestation: bool,
    ) -> (String, Vec<(String, String)>) {
        self.push_list(
            repo,
            tag,
            images,
            attestation,
            "application/vnd.oci.image.index.v1+json",
        )
    }

    /// Push a multi-platform OCI index with annotations of its own (each image's descriptor
    /// carries the image's `descriptor_annotations`); returns as [`Registry::push_index`].
    pub fn push_annotated_index(
        &self,
        repo: &str,
        tag: &str,
        images: &[ImageSpec],
        annotations: &[(&str, &str)],
    ) -> (String, Vec<(String, String)>) {
        self.push_list_with(
            repo,
            tag,
            images,
            false,
            "application/vnd.oci.image.index.v1+json",
            &owned_pairs(annotations),
        )
    }

    /// Push an index or Docker manifest list of the given media type.
    pub fn push_list(
        &self,
        repo: &str,
        tag: &str,
        images: &[ImageSpec],
        attestation: bool,
        list_media_type: &str,
    ) -> (String, Vec<(String, String)>) {
        self.push_list_with(repo, tag, images, attestation, list_media_type, &[])
    }

    fn push_list_with(
        &self,
        repo: &str,
        tag: &str,
        images: &[ImageSpec],
        attestation: bool,
        list_media_type: &str,
        annotations: &[(String, String)],
    ) -> (String, Vec<(String, String)>) {
        let mut entries = Vec::new();
        let mut children = Vec::new();
        for img in images {
            let (manifest, digest) =
                self.push_image(repo, &format!("child-{}", img.platform_tag()), img);
            let mut entry = serde_json::json!({
                "mediaType": img.media_type(),
                "digest": digest,
                "size": manifest.len(),
                "platform": img.platform_json(),
            });
            if !img.descriptor_annotations.is_empty() {
                entry["annotations"] = string_map(&img.descriptor_annotations);
            }
            entries.push(entry);
            children.push((img.platform_string(), digest));
        }
        if attestation {
            let att = ImageSpec::new("unknown", "unknown", None, "2020-01-01T00:00:00Z");
            let (manifest, digest) = self.push_image(repo, "child-attestation", &att);
            entries.push(serde_json::json!({
                "mediaType": att.media_type(),
                "digest": digest,
                "size": manifest.len(),
                "platform": {"os": "unknown", "architecture": "unknown"},
            }));
        }
        let mut index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": list_media_type,
            "manifests": entries,
        });
        if !annotations.is_empty() {
            index["annotations"] = string_map(annotations);
        }
        let bytes = serde_json::to_vec_pretty(&index).unwrap();
        self.put_manifest(repo, tag, list_media_type, &bytes);
        (sha256(&bytes), children)
    }

    /// One tiny linux/amd64 image under every tag of `tags` (the first
    /// pushed, the others re-tagged); returns its digest.
    pub fn push_one_image(&self, repo: &str, tags: &[&str]) -> String {
        let image = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
        let (manifest, digest) = self.push_image(repo, tags[0], &image);
        let rest: Vec<String> = tags[1..].iter().map(|t| (*t).to_owned()).collect();
        self.push_tags(repo, image.media_type(), &manifest, &rest);
        digest
    }

    /// Re-PUT an existing manifest under many tags, with a few threads.
    pub fn push_tags(&self, repo: &str, media_type: &str, manifest: &[u8], tags: &[String]) {
        let workers = 6;
        std::thread::scope(|s| {
            for chunk in tags.chunks(tags.len().div_ceil(workers).max(1)) {
                s.spawn(move || {
                    for t in chunk {
                        self.put_manifest(repo, t, media_type, manifest);
                    }
                });
            }
        });
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }
}

fn wait_ready(
    child: &mut Child,
    agent: &ureq::Agent,
    base: &str,
    log: &Path,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let read_log = || fs_err::read_to_string(log).unwrap_or_default();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "docker-registry exited early ({status}): {}",
                read_log()
            ));
        }
        let last = match agent.get(format!("{base}/v2/")).call() {
            Ok(r) if r.status() == 200 || r.status() == 401 => return Ok(()),
            Ok(r) => format!("HTTP {}", r.status()),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "docker-registry did not start ({last}): {}",
                read_log()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tiny single-layer image.
#[derive(Clone)]
pub struct ImageSpec {
    pub os: String,
    pub arch: String,
    pub variant: Option<String>,
    pub created: Option<String>,
    /// Docker v2 schema 2 instead of OCI.
    pub docker: bool,
    /// The config's labels (`None`: one, `org.opencontainers.image.source: test`).
    pub labels: Option<Vec<(String, String)>>,
    /// The manifest's annotations.
    pub annotations: Vec<(String, String)>,
    /// The annotations of its descriptor in an index.
    pub descriptor_annotations: Vec<(String, String)>,
}

fn string_map(pairs: &[(String, String)]) -> serde_json::Value {
    serde_json::Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

fn owned_pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

impl ImageSpec {
    pub fn new(os: &str, arch: &str, variant: Option<&str>, created: &str) -> Self {
        Self {
            os: os.to_owned(),
            arch: arch.to_owned(),
            variant: variant.map(str::to_owned),
            created: Some(created.to_owned()),
            docker: false,
            labels: None,
            annotations: Vec::new(),
            descriptor_annotations: Vec::new(),
        }
    }

    /// The config's labels, instead of the default one.
    pub fn labels(mut self, pairs: &[(&str, &str)]) -> Self {
        self.labels = Some(owned_pairs(pairs));
        self
    }

    /// The manifest's annotations.
    pub fn annotations(mut self, pairs: &[(&str, &str)]) -> Self {
        self.annotations = owned_pairs(pairs);
        self
    }

    /// The annotations of its descriptor in an index ([`Registry::push_annotated_index`]).
    pub fn descriptor_annotations(mut self, pairs: &[(&str, &str)]) -> Self {
        self.descriptor_annotations = owned_pairs(pairs);
        self
    }

    pub fn docker(mut self) -> Self {
        self.docker = true;
        self
    }

    pub fn without_created(mut self) -> Self {
        self.created = None;
        self
    }

    pub fn media_type(&self) -> &'static str {
        if self.docker {
            "application/vnd.docker.distribution.manifest.v2+json"
        } else {
            "application/vnd.oci.image.manifest.v1+json"
        }
    }

    pub fn platform_string(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}/{}/{v}", self.os, self.arch),
            None => format!("{}/{}", self.os, self.arch),
        }
    }

    fn platform_tag(&self) -> String {
        self.platform_string().replace('/', "-")
    }

    fn platform_json(&self) -> serde_json::Value {
        let mut p = serde_json::json!({"os": self.os, "architecture": self.arch});
        if let Some(v) = &self.variant {
            p["variant"] = serde_json::Value::String(v.clone());
        }
        p
    }

    fn blobs(&self) -> (Vec<u8>, Vec<u8>) {
        let layer = format!("layer for {} {:?}", self.platform_string(), self.created).into_bytes();
        let mut config = serde_json::json!({
            "architecture": self.arch,
            "os": self.os,
            "rootfs": {"type": "layers", "diff_ids": [sha256(&layer)]},
            "config": {"Labels": {"org.opencontainers.image.source": "test"}},
        });
        if let Some(labels) = &self.labels {
            config["config"]["Labels"] = string_map(labels);
        }
        if let Some(v) = &self.variant {
            config["variant"] = serde_json::Value::String(v.clone());
        }
        if let Some(c) = &self.created {
            config["created"] = serde_json::Value::String(c.clone());
        }
        (serde_json::to_vec(&config).unwrap(), layer)
    }

    fn manifest(
        &self,
        config: &[u8],
        config_digest: &str,
        layer: &[u8],
        layer_digest: &str,
    ) -> (Vec<u8>, &'static str) {
        let (config_type, layer_type) = if self.docker {
            (
                "application/vnd.docker.container.image.v1+json",
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
            )
        } else {
            (
                "application/vnd.oci.image.config.v1+json",
                "application/vnd.oci.image.layer.v1.tar+gzip",
            )
        };
        let mut m = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": self.media_type(),
            "config": {"mediaType": config_type, "digest": config_digest, "size": config.len()},
            "layers": [{"mediaType": layer_type, "digest": layer_digest, "size": layer.len()}],
        });
        if !self.annotations.is_empty() {
            m["annotations"] = string_map(&self.annotations);
        }
        (serde_json::to_vec(&m).unwrap(), self.media_type())
    }
}

/// Tags `v0.0.0` … in a stable order.
pub fn many_tags(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("v{}.{}.{}", i / 1000, (i / 10) % 100, i % 10))
        .collect()
}

pub fn header_map(h: &[(&str, &str)]) -> BTreeMap<String, String> {
    h.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

// ---------------------------------------------------------------------------
// A registry that leaks the credentials it receives

/// Percent-encode everything but RFC 3986 unreserved characters.
pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The credentials of `req` as a careless server would print them back:
/// the `Authorization` header as received, a Basic pair decoded, the
/// password or token alone, URL-encoded and base64-encoded, and a form body
/// (a refresh token grant) raw and decoded.
pub fn echo_credentials(req: &Recorded) -> String {
    let mut parts = Vec::new();
    if let Some(auth) = req.header("authorization") {
        parts.push(format!("you sent Authorization: {auth}"));
        let secret = if let Some(encoded) = auth.strip_prefix("Basic ") {
            let pair = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let password = pair
                .split_once(':')
                .map(|(_, p)| p.to_owned())
                .unwrap_or_default();
            parts.push(format!("user:password is {pair}"));
            password
        } else {
            auth.strip_prefix("Bearer ").unwrap_or(auth).to_owned()
        };
        parts.push(format!("secret {secret}"));
        parts.push(format!("url-encoded {}", percent_encode(&secret)));
        parts.push(format!("base64 {}", b64(secret.as_bytes())));
    }
    if !req.body.is_empty() {
        let body = String::from_utf8_lossy(&req.body).into_owned();
        parts.push(format!("form {body}"));
        for pair in body.split('&') {
            if let Some(("refresh_token", v)) = pair.split_once('=') {
                parts.push(format!("refresh token {}", percent_decode(v)));
            }
        }
    }
    parts.join(" | ")
}

/// How the leaky registry wants to be authenticated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum LeakyAuth {
    /// `Basic` challenge; any credentials accepted.
    Basic,
    /// `Bearer` challenge with a token service (itself leaky) that issues a
    /// fresh token for any credentials, except for scopes naming
    /// `tokenfail`, which it refuses, echoing what it got.
    Bearer,
}

/// A registry that wants credentials and then echoes them back: in 401,
/// 403 and 500 bodies and headers, in a redirect URL, in a `Link` header
/// and in a malformed tag list. The first path component of the
/// repository picks the behaviour: `e401`, `e403`, `e500`, `redirect`
/// (302 to `gone/...?leak=SECRET`, which answers 404), `link`, `json`,
/// `ok` (a normal tag list); anything else answers like `e401`.
pub struct LeakyRegistry {
    pub server: FakeServer,
    /// The token service ([`LeakyAuth::Bearer`] only).
    pub token_service: Option<FakeServer>,
    issued: Arc<Mutex<Vec<String>>>,
}

impl LeakyRegistry {
    pub fn start(auth: LeakyAuth) -> Self {
        let issued = Arc::new(Mutex::new(Vec::new()));
        let token_service = (auth == LeakyAuth::Bearer).then(|| {
            let issued = Arc::clone(&issued);
            FakeServer::start(move |req| {
                let mut scope = req.query_value("scope").unwrap_or_default();
                let body = String::from_utf8_lossy(&req.body).into_owned();
                for pair in body.split('&') {
                    if let Some(("scope", v)) = pair.split_once('=') {
                        scope = percent_decode(v);
                    }
                }
                if scope.contains("tokenfail") {
                    let message = echo_credentials(req);
                    return Reply::json(
                        401,
                        serde_json::json!({"errors": [{"code": "DENIED", "message": message}]})
                            .to_string(),
                    )
                    .with_header("X-Echo", &message);
                }
                let mut issued = issued.lock().unwrap();
                let token = format!("issued-{}-{:08x}", issued.len(), rand_u32());
                issued.push(token.clone());
                Reply::json(
                    200,
                    serde_json::json!({"token": token, "expires_in": 300}).to_string(),
                )
            })
        });
        let challenge = match &token_service {
            Some(t) => format!(r#"Bearer realm="{}",service="leaky""#, t.url("/token")),
            None => r#"Basic realm="leaky""#.to_owned(),
        };
        let server = FakeServer::start(move |req| {
            let unauthorized = |message: &str| {
                Reply::json(
                    401,
                    serde_json::json!({"errors": [{"code": "UNAUTHORIZED", "message": message}]})
                        .to_string(),
                )
                .with_header("WWW-Authenticate", &challenge)
            };
            if req.path() == "/v2/" || req.header("authorization").is_none() {
                return unauthorized("authentication required");
            }
            let echo = echo_credentials(req);
            let text = |status: u16| Reply::Respond {
                status,
                headers: vec![
                    ("Content-Type".to_owned(), "text/plain".to_owned()),
                    ("X-Echo".to_owned(), echo.clone()),
                ],
                body: format!("no access for you\n{echo}\n").into_bytes(),
            };
            let secret = echo_secret(req);
            let kind = req
                .path()
                .strip_prefix("/v2/")
                .and_then(|p| p.split('/').next())
                .unwrap_or_default();
            match kind {
                "e403" => text(403),
                "e500" => text(500),
                "redirect" => Reply::status(302).with_header(
                    "Location",
                    &format!("/v2/gone/x/tags/list?leak={}", percent_encode(&secret)),
                ),
                "gone" => Reply::status(404),
                "link" => Reply::json(200, r#"{"name":"link/x","tags":["a"]}"#).with_header(
                    "Link",
                    &format!(
                        r#"<ftp://leak.example/{}>; rel="next""#,
                        percent_encode(&secret)
                    ),
                ),
                "json" => Reply::json(200, serde_json::json!({"tags": echo}).to_string()),
                "ok" => Reply::json(200, r#"{"name":"ok/x","tags":["v1"]}"#),
                _ => unauthorized(&echo).with_header("X-Echo", &echo),
            }
        });
        Self {
            server,
            token_service,
            issued,
        }
    }

    /// `127.0.0.1:PORT` of the registry.
    pub fn authority(&self) -> String {
        self.server.authority()
    }

    /// The tokens the token service handed out so far.
    pub fn issued_tokens(&self) -> Vec<String> {
        self.issued.lock().unwrap().clone()
    }
}

/// The password or token of `req`'s `Authorization` header.
fn echo_secret(req: &Recorded) -> String {
    let auth = req.header("authorization").unwrap_or_default();
    match auth.strip_prefix("Basic ") {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .and_then(|pair| pair.split_once(':').map(|(_, p)| p.to_owned()))
            .unwrap_or_default(),
        None => auth.strip_prefix("Bearer ").unwrap_or(auth).to_owned(),
    }
}

/// A little randomness for token names (no RNG crate needed for this).
fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish() as u32
}

// ---------------------------------------------------------------------------
// A counting proxy in front of the real registry

/// A loopback proxy in front of a real registry (plain HTTP): every request
/// is recorded (so tests and benchmarks count what a client sent) and
/// forwarded. With `referrers`, it also answers the OCI referrers API that
/// docker-registry 2.8 lacks, from the `sha256-<hex>` referrers-tag index
/// the registry holds (an empty index when there is none), so the client's
/// first discovery step can be exercised against real stored manifests.
pub fn registry_proxy(target: &str, referrers: bool) -> FakeServer {
    let base = format!("http://{target}");
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    );
    FakeServer::start(move |req| {
        let path = req.path();
        if referrers
            && req.method == "GET"
            && let Some((repo, digest)) = path
                .strip_prefix("/v2/")
                .and_then(|p| p.split_once("/referrers/"))
        {
            let index_type = "application/vnd.oci.image.index.v1+json";
            let mut get = agent
                .get(format!(
                    "{base}/v2/{repo}/manifests/{}",
                    digest.replace(':', "-")
                ))
                .header("Accept", index_type);
            if let Some(a) = req.header("authorization") {
                get = get.header("Authorization", a);
            }
            let mut resp = get.call().unwrap();
            let body = if resp.status() == 200 {
                resp.body_mut().read_to_vec().unwrap()
            } else {
                format!(r#"{{"schemaVersion":2,"mediaType":"{index_type}","manifests":[]}}"#)
                    .into_bytes()
            };
            return Reply::Respond {
                status: 200,
                headers: vec![("Content-Type".to_owned(), index_type.to_owned())],
                body,
            };
        }
        let url = format!("{base}{}", req.target);
        let mut builder = ureq::http::Request::builder()
            .method(req.method.as_str())
            .uri(&url);
        for (k, v) in &req.headers {
            if ["accept", "authorization", "content-type"]
                .contains(&k.to_ascii_lowercase().as_str())
            {
                builder = builder.header(k, v);
            }
        }
        let request = builder.body(req.body.clone()).unwrap();
        let mut resp = agent.run(request).unwrap();
        let status = resp.status().as_u16();
        let mut headers = Vec::new();
        for name in [
            "content-type",
            "docker-content-digest",
            "www-authenticate",
            "link",
            "location",
        ] {
            for v in resp.headers().get_all(name) {
                headers.push((name.to_owned(), v.to_str().unwrap_or_default().to_owned()));
            }
        }
        let body = if req.method == "HEAD" {
            Vec::new()
        } else {
            resp.body_mut().read_to_vec().unwrap_or_default()
        };
        Reply::Respond {
            status,
            headers,
            body,
        }
    })
}
