//! Git's smart HTTP protocol over ureq and rustls.
//!
//! Each service is one request: the ref advertisement is `GET <repo>/info/refs?service=<svc>`,
//! and every round of the service itself is a `POST <repo>/<svc>` whose body libgit2 writes to
//! the stream before it reads the answer. The body is buffered and sent with a
//! `Content-Length` (servers behind CGI, lighttpd's among them, refuse chunked uploads).
//!
//! Choices a user may notice:
//!
//! * credentials are sent with the first request (Basic or Bearer), as git does once it knows a
//!   server wants them; an extra header named `Authorization` replaces them;
//! * the advertisement request follows up to five redirects, only to the same scheme, host and
//!   port, and later requests go where it ended (git's `http.followRedirects=initial`, minus
//!   the cross-host case: credentials must not follow a redirect to another server);
//! * a connect gives up after the connect timeout, an answer must start within the read
//!   timeout, and a whole response or request body may take ten read timeouts;
//! * `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` are honoured.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use base64::Engine as _;
use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream};
use ureq::http::{HeaderName, HeaderValue};
use zeroize::Zeroizing;

use super::{Failure, Session, io_error};
use crate::remote::Auth;

/// Redirects the advertisement request may follow.
const MAX_REDIRECTS: usize = 5;

/// The HTTP(S) subtransport of one libgit2 transport.
pub(crate) struct Subtransport {
    session: Arc<Session>,
    shared: Arc<Shared>,
}

/// What the streams of one transport share: the agent (its connection pool) and where the
/// repository turned out to be after redirects.
struct Shared {
    agent: OnceLock<ureq::Agent>,
    base: Mutex<Option<String>>,
}

impl Subtransport {
    pub(crate) fn new(session: Arc<Session>) -> Self {
        Self {
            session,
            shared: Arc::new(Shared {
                agent: OnceLock::new(),
                base: Mutex::new(None),
            }),
        }
    }
}

impl SmartSubtransport for Subtransport {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let (service, advertisement) = super::service(action);
        let base = self
            .shared
            .base
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| url.trim_end_matches('/').to_owned());
        Ok(Box::new(Stream {
            session: Arc::clone(&self.session),
            shared: Arc::clone(&self.shared),
            base,
            service,
            advertisement,
            request: Vec::new(),
            response: None,
        }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// One request: the bytes libgit2 wrote (the POST body), then the response body it reads.
struct Stream {
    session: Arc<Session>,
    shared: Arc<Shared>,
    base: String,
    service: &'static str,
    advertisement: bool,
    request: Vec<u8>,
    response: Option<ureq::BodyReader<'static>>,
}

impl Write for Stream {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.advertisement || self.response.is_some() {
            return Err(io_error("git wrote to an HTTP response stream"));
        }
        self.request.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut body = match self.response.take() {
            Some(body) => body,
            None if self.advertisement => self.advertise()?,
            None => self.post()?,
        };
        let read = body.read(buf);
        self.response = Some(body);
        read.map_err(|e| {
            self.session
                .fail(classify_io(&e), format!("reading the server's answer: {e}"))
        })
    }
}

impl Stream {
    fn agent(&self) -> &ureq::Agent {
        self.shared.agent.get_or_init(|| agent(&self.session))
    }

    /// `GET info/refs`, following same-origin redirects.
    fn advertise(&mut self) -> std::io::Result<ureq::BodyReader<'static>> {
        let suffix = format!("/info/refs?service={}", self.service);
        let mut url = format!("{}{suffix}", self.base);
        for _ in 0..=MAX_REDIRECTS {
            let request = self.authorize(self.agent().get(&url));
            let response = request.call().map_err(|e| self.transfer_error(&e))?;
            let status = response.status().as_u16();
            if matches!(status, 301 | 302 | 303 | 307 | 308) {
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|value| value.to_str().ok())
                    .ok_or_else(|| {
                        self.session.fail(
                            Failure::Status,
                            format!("{url} answered {status} without a Location"),
                        )
                    })?;
                let next = resolve(&url, location);
                let base = next
                    .strip_suffix(&suffix)
                    .filter(|base| same_origin(base, &self.base));
                let Some(base) = base else {
                    return Err(self.session.fail(
                        Failure::Status,
                        format!(
                            "{url} redirects to {}, which is not the same repository path on the \
                             same server (redirects to other servers are not followed)",
                            redact_query(&next)
                        ),
                    ));
                };
                self.base = base.to_owned();
                url = next;
                continue;
            }
            self.check(status, &url)?;
            self.check_content_type(&response, "advertisement", &url)?;
            *self
                .shared
                .base
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(self.base.clone());
            return Ok(response.into_body().into_reader());
        }
        Err(self.session.fail(
            Failure::Status,
            format!("{} redirects more than {MAX_REDIRECTS} times", self.base),
        ))
    }

    /// `POST <service>` with what libgit2 wrote.
    fn post(&mut self) -> std::io::Result<ureq::BodyReader<'static>> {
        let url = format!("{}/{}", self.base, self.service);
        let body = std::mem::take(&mut self.request);
        let request = self
            .agent()
            .post(&url)
            .header(
                "Content-Type",
                format!("application/x-{}-request", self.service),
            )
            .header("Accept", format!("application/x-{}-result", self.service));
        let response = self
            .authorize(request)
            .send(&body[..])
            .map_err(|e| self.transfer_error(&e))?;
        let status = response.status().as_u16();
        self.check(status, &url)?;
        self.check_content_type(&response, "result", &url)?;
        Ok(response.into_body().into_reader())
    }

    /// The request with the credentials and extra headers.
    fn authorize<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        headers(&self.session)
            .into_iter()
            .fold(request, |request, (name, value)| {
                request.header(name, value)
            })
    }

    /// Turns an unsuccessful status into a recorded failure.
    fn check(&self, status: u16, url: &str) -> std::io::Result<()> {
        let url = redact_query(url);
        match status {
            200..=299 => Ok(()),
            401 => Err(self.session.fail(
                Failure::Authentication(refusal(&self.session)),
                format!("{url} answered 401 Unauthorized"),
            )),
            403 => Err(self.session.fail(
                Failure::Authentication(
                    "the server refused access with the configured credentials (403 Forbidden)",
                ),
                format!("{url} answered 403 Forbidden"),
            )),
            404 => Err(self.session.fail(
                Failure::Status,
                format!("{url} answered 404 Not Found (is the repository URL right?)"),
            )),
            408 | 429 | 500..=599 => Err(self
                .session
                .fail(Failure::Network, format!("{url} answered {status}"))),
            _ => Err(self.session.fail(
                Failure::Status,
                format!("{url} answered {status}, which a git server does not"),
            )),
        }
    }

    /// A smart git server answers with the service's content type; anything else (a login
    /// page, a dumb HTTP server) is not a git answer.
    fn check_content_type(
        &self,
        response: &ureq::http::Response<ureq::Body>,
        kind: &str,
        url: &str,
    ) -> std::io::Result<()> {
        let expected = format!("application/x-{}-{kind}", self.service);
        let actual = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        let media_type = actual.split(';').next().unwrap_or("").trim();
        if media_type.eq_ignore_ascii_case(&expected) {
            return Ok(());
        }
        Err(self.session.fail(
            Failure::Status,
            format!(
                "{} did not answer as a smart git HTTP server (content type `{actual}`, \
                 expected `{expected}`)",
                redact_query(url)
            ),
        ))
    }

    fn transfer_error(&self, error: &ureq::Error) -> std::io::Error {
        let failure = match error {
            ureq::Error::Rustls(e) => classify_tls(e),
            ureq::Error::Tls(_) | ureq::Error::Pem(_) => Failure::Certificate,
            ureq::Error::Io(e) => classify_io(e),
            ureq::Error::Timeout(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::ConnectProxyFailed(_) => Failure::Network,
            _ => Failure::Status,
        };
        self.session.fail(failure, error.to_string())
    }
}

/// The agent of one transport: the trusted roots, timeouts, no automatic redirects and no
/// status-as-error (both handled here), and git's user agent.
fn agent(session: &Session) -> ureq::Agent {
    let roots = crate::tls::roots_with(&session.remote.ca_certificates);
    let tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .root_certs(ureq::tls::RootCerts::Specific(roots))
        .build();
    let body_timeout = session.read_timeout.saturating_mul(10);
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!(
            "git/2.0 (image-update ",
            env!("CARGO_PKG_VERSION"),
            ")"
        ))
        .timeout_resolve(Some(session.connect_timeout))
        .timeout_connect(Some(session.connect_timeout))
        .timeout_send_request(Some(session.read_timeout))
        .timeout_recv_response(Some(session.read_timeout))
        .timeout_send_body(Some(body_timeout))
        .timeout_recv_body(Some(body_timeout))
        .build()
        .into()
}

/// The headers every request carries: the credentials (unless an extra header sets
/// `Authorization` itself) and the extra headers, all marked sensitive.
fn headers(session: &Session) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = Vec::new();
    let own_authorization = sets_authorization(session);
    let credential = match &session.remote.auth {
        Auth::Basic { username, password } if !own_authorization => {
            let pair = Zeroizing::new(format!("{username}:{}", password.expose()));
            let encoded = Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(&*pair));
            Some(Zeroizing::new(format!("Basic {}", encoded.as_str())))
        }
        Auth::Bearer { token } if !own_authorization => {
            Some(Zeroizing::new(format!("Bearer {}", token.expose())))
        }
        _ => None,
    };
    if let Some(value) = credential.and_then(|value| sensitive(&value)) {
        headers.push((ureq::http::header::AUTHORIZATION, value));
    }
    for header in &session.remote.http_headers {
        // Names and values were validated when the header was made.
        if let (Ok(name), Some(value)) = (
            HeaderName::from_bytes(header.name().as_bytes()),
            sensitive(header.value().expose()),
        ) {
            headers.push((name, value));
        }
    }
    headers
}

fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(value).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Whether an extra header sets `Authorization` (it replaces the configured credentials).
fn sets_authorization(session: &Session) -> bool {
    session
        .remote
        .http_headers
        .iter()
        .any(|header| header.name().eq_ignore_ascii_case("authorization"))
}

/// Why a 401 happened, from what was configured.
fn refusal(session: &Session) -> &'static str {
    match &session.remote.auth {
        _ if sets_authorization(session) => {
            "the server refused the credentials in the extra HTTP headers"
        }
        Auth::Basic { .. } => "the server refused the user name and password",
        Auth::Bearer { .. } => "the server refused the bearer token",
        Auth::SshKey { .. } => {
            "an SSH key is configured but the server asks for another kind of credential"
        }
        Auth::None if session.remote.http_headers.is_empty() => {
            "the server asks for credentials and none are configured"
        }
        Auth::None => "the server refused the credentials in the extra HTTP headers",
    }
}

fn classify_io(error: &std::io::Error) -> Failure {
    if let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        return classify_tls(tls);
    }
    if let Some(ureq::Error::Rustls(tls)) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
    {
        return classify_tls(tls);
    }
    Failure::Network
}

fn classify_tls(error: &rustls::Error) -> Failure {
    match error {
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::NoCertificatesPresented
        | rustls::Error::UnsupportedNameType => Failure::Certificate,
        _ => Failure::Network,
    }
}

/// `location` resolved against `url` (absolute, scheme-relative `//host/...`, absolute-path
/// `/...`, or relative to the request's directory).
fn resolve(url: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{}{rest}", &url[..scheme_end]);
    }
    let authority_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    if location.starts_with('/') {
        return format!("{}{location}", &url[..authority_end]);
    }
    let path = url.split('?').next().unwrap_or(url);
    let directory_end = path.rfind('/').filter(|&i| i >= authority_end);
    match directory_end {
        Some(end) => format!("{}/{location}", &path[..end]),
        None => format!("{path}/{location}"),
    }
}

/// Whether two URLs share scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    origin(a).is_some_and(|origin_a| origin(b) == Some(origin_a))
}

/// A URL's scheme, host and port (the scheme's default when none is written).
fn origin(url: &str) -> Option<(String, String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let (host, port) = match host_port.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None if scheme == "https" => 443,
        None => 80,
    };
    Some((scheme, host.to_ascii_lowercase(), port))
}

/// A URL for messages: without user information, and without a query other than git's own
/// `service=` (a redirect target's may carry a token).
fn redact_query(url: &str) -> String {
    let url = match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            match rest[..authority_end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{host}{}", &rest[authority_end..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    };
    match url.split_once('?') {
        Some((_, query)) if query.starts_with("service=git-") && !query.contains('&') => url,
        Some((path, _)) => format!("{path}?..."),
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::{redact_query, resolve, same_origin};

    #[test]
    fn redirects_resolve_like_a_browser() {
        let url = "https://git.example.org/org/app.git/info/refs?service=git-upload-pack";
        assert_eq!(
            resolve(url, "https://other.example/x"),
            "https://other.example/x"
        );
        assert_eq!(
            resolve(url, "//mirror.example/y"),
            "https://mirror.example/y"
        );
        assert_eq!(
            resolve(url, "/new/app.git/info/refs?service=git-upload-pack"),
            "https://git.example.org/new/app.git/info/refs?service=git-upload-pack"
        );
        assert_eq!(
            resolve(url, "refs2"),
            "https://git.example.org/org/app.git/info/refs2"
        );
    }

    #[test]
    fn origins() {
        assert!(same_origin(
            "https://git.example.org/a",
            "https://GIT.example.org:443/b"
        ));
        assert!(same_origin(
            "http://127.0.0.1:8080/a",
            "http://127.0.0.1:8080"
        ));
        assert!(!same_origin(
            "http://127.0.0.1:8080/a",
            "http://127.0.0.1:8081/a"
        ));
        assert!(!same_origin("https://a.example/x", "http://a.example/x"));
        assert!(!same_origin("https://a.example/x", "https://b.example/x"));
        assert!(same_origin("https://[::1]/x", "https://[::1]:443/y"));
    }

    #[test]
    fn queries_other_than_the_service_are_hidden() {
        assert_eq!(
            redact_query("https://h/r/info/refs?service=git-upload-pack"),
            "https://h/r/info/refs?service=git-upload-pack"
        );
        assert_eq!(
            redact_query("https://h/r/info/refs?token=abc"),
            "https://h/r/info/refs?..."
        );
        assert_eq!(
            redact_query("https://user:pw@h/r?service=git-upload-pack"),
            "https://h/r?service=git-upload-pack"
        );
    }
}
