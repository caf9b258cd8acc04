//! One HTTP client for every provider: ureq with rustls and the git transport's trust roots
//! (`image_update_git::tls`: the bundled Mozilla roots, the system's store, and the caller's PEM
//! CAs), the proxy variables (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
//! `NO_PROXY`), redirects followed only on the same origin (the token must not follow a redirect
//! to another server), and bounded retries:
//!
//! * a rate limit (429, or GitHub's 403 with `x-ratelimit-remaining: 0` or a "secondary rate
//!   limit" message) waits what the provider asks (`Retry-After` in seconds or as a date, else
//!   `x-ratelimit-reset`, else a minute for GitHub's secondary limit), unless that is longer than
//!   [`RetryPolicy::max_wait`], which fails at once saying how long to wait;
//! * 500, 502, 503, 504 and connection failures back off exponentially (with jitter), for calls
//!   that are safe to repeat;
//! * at most [`RetryPolicy::max_attempts`] attempts per call.
//!
//! Every attempt is counted ([`Http::calls`]): the budget of API calls per run is measured.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use ureq::http::{HeaderMap, HeaderValue};

use crate::error::{Error, ErrorKind, human};
use crate::remote::Provider;
use image_update_secret::Secret;

/// Redirects followed per call.
const MAX_REDIRECTS: usize = 3;
/// The largest answer read.
const MAX_BODY: u64 = 32 * 1024 * 1024;
/// GitHub's advice when a secondary rate limit names no wait.
const SECONDARY_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// How hard a call tries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// The first backoff after a server or network failure; it doubles, up to 8 times this.
    pub initial_backoff: Duration,
    /// The longest single wait a rate limit may ask for; a longer one fails the call at once.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// Connection settings.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// PEM CA certificates trusted besides the bundled roots and the system's store (the git
    /// transport's roots: `image_update_git::tls`).
    pub ca_certificates: Option<String>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// The time one request may take in all.
    pub request_timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
    /// The `User-Agent` (GitHub requires one).
    pub user_agent: String,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            ca_certificates: None,
            connect_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            user_agent: concat!("image-update/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// The methods the providers' APIs use here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Put,
    Patch,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
        }
    }
}

/// Whether a call may be sent again after a server or network failure. Rate-limited calls are
/// always repeated: the provider did not process them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    Safe,
    Once,
}

/// An answer.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    /// The body as JSON (`Null` when empty or not JSON).
    pub json: Value,
    /// The body as text, for messages (cut to 2000 bytes).
    pub text: String,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// The client of one forge.
pub(crate) struct Http {
    agent: ureq::Agent,
    pub(crate) provider: Provider,
    retry: RetryPolicy,
    calls: AtomicU32,
    rng: AtomicU64,
    /// Values never to show in a message.
    secrets: std::sync::Mutex<Vec<Secret>>,
}

impl Http {
    pub(crate) fn new(provider: Provider, settings: &HttpSettings) -> Result<Http, Error> {
        let extra = match &settings.ca_certificates {
            Some(pem) => image_update_git::tls::parse_ca_certificates(pem)
                .map_err(|e| Error::config(format!("CA certificates: {e}")))?,
            None => Arc::from(Vec::new()),
        };
        let roots = image_update_git::tls::roots_with(&extra);
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(ureq::tls::RootCerts::Specific(roots))
            .build();
        let agent = ureq::Agent::config_builder()
            .tls_config(tls)
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(settings.user_agent.as_str())
            .timeout_connect(Some(settings.connect_timeout))
            .timeout_global(Some(settings.request_timeout))
            .build()
            .into();
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64);
        Ok(Http {
            agent,
            provider,
            retry: settings.retry.clone(),
            calls: AtomicU32::new(0),
            rng: AtomicU64::new(seed | 1),
            secrets: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// API calls sent so far (each attempt counts).
    pub(crate) fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Remember a value that must never appear in a message.
    pub(crate) fn hide(&self, secret: &Secret) {
        if !secret.is_empty() {
            self.secrets
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(secret.clone());
        }
    }

    /// `text` with every remembered secret replaced.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let secrets = self
            .secrets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        secrets.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret.expose(), "<redacted>")
        })
    }

    /// Sends a call with the `Authorization` value `auth`, retrying as the policy says. Any
    /// answer is returned (the caller interprets its status), except a rate limit that asks for
    /// too long a wait and failures that outlast the retries.
    pub(crate) fn send(
        &self,
        method: Method,
        url: &str,
        auth: &Secret,
        body: Option<&Value>,
        repeat: Repeat,
        operation: &str,
    ) -> Result<Response, Error> {
        let payload = body.map(|b| b.to_string());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= self.retry.max_attempts;
            match self.send_following_redirects(method, url, auth, payload.as_deref()) {
                Err(message) => {
                    if last || repeat == Repeat::Once {
                        return Err(Error::new(
                            ErrorKind::Network,
                            None,
                            format!(
                                "{operation}: {} {}: {} (after {attempt} attempt{})",
                                method.as_str(),
                                url,
                                self.scrub(&message),
                                if attempt == 1 { "" } else { "s" }
                            ),
                        ));
                    }
                    let wait = self.backoff(attempt);
                    tracing::info!("{operation}: {message}; retry {attempt} in {}", human(wait));
                    std::thread::sleep(wait);
                }
                Ok(response) => {
                    if let Some(wait) = self.rate_limit_wait(&response, attempt) {
                        if wait > self.retry.max_wait || last {
                            let message = self.provider_message(&response);
                            return Err(Error::new(
                                ErrorKind::RateLimited,
                                Some(response.status),
                                format!(
                                    "{operation}: {} rate limit ({} {message}): it asks to wait \
                                     {}{}; retry later",
                                    self.provider,
                                    response.status,
                                    human(wait),
                                    if last {
                                        String::new()
                                    } else {
                                        format!(
                                            ", longer than the {} this client waits",
                                            human(self.retry.max_wait)
                                        )
                                    }
                                ),
                            ));
                        }
                        tracing::info!(
                            "{operation}: {} rate limit; waiting {}",
                            self.provider,
                            human(wait)
                        );
                        std::thread::sleep(wait);
                        continue;
                    }
                    if matches!(response.status, 500 | 502 | 503 | 504)
                        && !last
                        && repeat == Repeat::Safe
                    {
                        let wait = self.backoff(attempt);
                        tracing::info!(
                            "{operation}: {} answered {}; retry {attempt} in {}",
                            self.provider,
                            response.status,
                            human(wait)
                        );
                        std::thread::sleep(wait);
                        continue;
                    }
                    return Ok(response);
                }
            }
        }
    }

    fn send_following_redirects(
        &self,
        method: Method,
        url: &str,
        auth: &Secret,
        body: Option<&str>,
    ) -> Result<Response, String> {
        let mut url = url.to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send_once(method, &url, auth, body)?;
            if matches!(response.status, 301 | 302 | 307 | 308)
                && let Some(location) = response.header("location")
            {
                let next = resolve(&url, location);
                if origin(&next) != origin(&url) {
                    return Err(format!(
                        "{url} redirects to another server ({}), which is not followed: the \
                         token would go with it",
                        origin(&next)
                    ));
                }
                url = next;
                continue;
            }
            return Ok(response);
        }
        Err(format!("{url} redirects more than {MAX_REDIRECTS} times"))
    }

    fn send_once(
        &self,
        method: Method,
        url: &str,
        auth: &Secret,
        body: Option<&str>,
    ) -> Result<Response, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut authorization = HeaderValue::from_str(auth.expose())
            .map_err(|_| "the token holds characters an HTTP header cannot".to_owned())?;
        authorization.set_sensitive(true);
        let accept = match self.provider {
            Provider::GitHub => "application/vnd.github+json",
            _ => "application/json",
        };
        let result = match (method, body) {
            (Method::Get, _) => self
                .with_headers(self.agent.get(url), &authorization, accept)
                .call(),
            (method, body) => {
                let builder = match method {
                    Method::Post => self.agent.post(url),
                    Method::Put => self.agent.put(url),
                    _ => self.agent.patch(url),
                };
                self.with_headers(builder, &authorization, accept)
                    .header("Content-Type", "application/json")
                    .send(body.unwrap_or("{}").as_bytes())
            }
        };
        let mut response = result.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| format!("reading the answer: {e}"))?;
        let json = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(2000)]).into_owned();
        Ok(Response {
            status,
            headers,
            json,
            text,
        })
    }

    fn with_headers<B>(
        &self,
        request: ureq::RequestBuilder<B>,
        authorization: &HeaderValue,
        accept: &str,
    ) -> ureq::RequestBuilder<B> {
        let request = request
            .header("Accept", accept)
            .header("Authorization", authorization.clone());
        match self.provider {
            Provider::GitHub => request.header("X-GitHub-Api-Version", "2022-11-28"),
            _ => request,
        }
    }

    /// How long a rate-limited answer asks to wait; `None` when it is not rate limited.
    fn rate_limit_wait(&self, response: &Response, attempt: u32) -> Option<Duration> {
        let github = self.provider == Provider::GitHub;
        let exhausted = response.header("x-ratelimit-remaining") == Some("0");
        let secondary = github
            && response
                .json
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.to_ascii_lowercase().contains("rate limit"));
        let limited = response.status == 429
            || (response.status == 403 && github && (exhausted || secondary));
        if !limited {
            return None;
        }
        if let Some(wait) = response.header("retry-after").and_then(parse_retry_after) {
            return Some(wait);
        }
        if exhausted
            && let Some(reset) = response
                .header("x-ratelimit-reset")
                .and_then(|v| v.trim().parse::<u64>().ok())
        {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
        }
        if secondary {
            return Some(SECONDARY_LIMIT_WAIT);
        }
        Some(self.backoff(attempt))
    }

    /// Exponential backoff with jitter: 50-100 % of `initial * 2^(attempt-1)`, at most 8 times
    /// the initial backoff.
    fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .retry
            .initial_backoff
            .saturating_mul(1 << attempt.saturating_sub(1).min(3));
        let mut z = self
            .rng
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        base.mul_f64(0.5 + 0.5 * ((z >> 11) as f64 / (1u64 << 53) as f64))
    }

    /// What the provider said, from its error body: `message` (a string, a list, or GitLab's
    /// field map), `error`, and GitHub's `errors` list; the raw text when it is not JSON.
    pub(crate) fn provider_message(&self, response: &Response) -> String {
        let json = &response.json;
        let mut parts = Vec::new();
        match json.get("message") {
            Some(Value::String(s)) => parts.push(s.clone()),
            Some(Value::Array(items)) => parts.extend(items.iter().map(flat)),
            Some(Value::Object(fields)) => parts.extend(
                fields
                    .iter()
                    .map(|(field, messages)| format!("{field} {}", flat(messages))),
            ),
            _ => {}
        }
        if let Some(error) = json.get("error").and_then(Value::as_str) {
            parts.push(error.to_owned());
        }
        if let Some(Value::Array(errors)) = json.get("errors") {
            for error in errors {
                let text = match error {
                    Value::Object(e) => match e.get("message").and_then(Value::as_str) {
                        Some(message) => message.to_owned(),
                        None => [
                            e.get("resource").and_then(Value::as_str),
                            e.get("field").and_then(Value::as_str),
                            e.get("code").and_then(Value::as_str),
                        ]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" "),
                    },
                    other => flat(other),
                };
                if !text.is_empty() {
                    parts.push(text);
                }
            }
        }
        let text = if parts.is_empty() {
            response.text.trim().to_owned()
        } else {
            parts.join("; ")
        };
        let mut text = self.scrub(&text);
        if text.len() > 600 {
            let mut end = 600;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str("...");
        }
        if text.is_empty() {
            "(no message)".to_owned()
        } else {
            format!("\"{text}\"")
        }
    }
}

fn flat(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(flat).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// `Retry-After`: delay seconds, or an HTTP date.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = parse_http_date(value)?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// An HTTP-date (IMF-fixdate, and the obsolete forms servers may still send).
fn parse_http_date(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value).ok()
}

/// `location` resolved against `url`.
fn resolve(url: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{}{rest}", &url[..scheme_end]);
    }
    if location.starts_with('/') {
        return format!("{}{location}", &url[..authority_end]);
    }
    let path = url.split('?').next().unwrap_or(url);
    match path.rfind('/').filter(|&i| i >= authority_end) {
        Some(end) => format!("{}/{location}", &path[..end]),
        None => format!("{path}/{location}"),
    }
}

/// `scheme://host:port` of a URL, lower case, with the default port written.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.chars().all(|c| c.is_ascii_digit()));
    let authority = authority.to_ascii_lowercase();
    if has_port && !authority.ends_with(']') {
        format!("{scheme}://{authority}")
    } else {
        let port = if scheme == "http" { 80 } else { 443 };
        format!("{scheme}://{authority}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::{origin, parse_http_date, parse_retry_after, resolve};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn retry_after_in_seconds_and_dates() {
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"), None);
    }

    #[test]
    fn redirects_stay_on_their_origin() {
        assert_eq!(
            resolve(
                "https://api.github.com/repos/a/b/pulls",
                "/repositories/1/pulls"
            ),
            "https://api.github.com/repositories/1/pulls"
        );
        assert_eq!(
            origin("https://API.github.com/x"),
            "https://api.github.com:443"
        );
        assert_eq!(origin("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080");
        assert_ne!(origin("https://a.example/x"), origin("https://b.example/x"));
    }
}
