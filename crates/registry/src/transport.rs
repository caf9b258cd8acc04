//! HTTP layer: one ureq agent per host (its own TLS roots and timeout), a
//! rate limiter and a concurrency limit per host, retries with backoff, and
//! redirects followed by hand so that `Authorization` never leaves the origin
//! it was meant for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ureq::http;

use super::error::{Attempts, Context, Error, Result, TimeLimit, human_duration};
use super::observe::Event;
use super::redact::Redactor;
use super::settings::{ClientSettings, HostSettings};
use super::url::Url;
use image_update_secret::Secret;

/// Retries after a timeout, at most (within `max_retries`): each timed-out
/// attempt has already cost a whole `timeout`, and a registry too slow once
/// is likely to be too slow again.
pub(crate) const MAX_TIMEOUT_RETRIES: u32 = 1;

/// Lock a mutex, ignoring poisoning: the protected data (caches, counters)
/// stays consistent even if a holder panicked.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) struct Request<'a> {
    pub method: &'static str,
    pub url: Url,
    pub accept: Option<&'a str>,
    /// The full `Authorization` header value.
    pub authorization: Option<&'a Secret>,
    /// Content type and body; `secret_body` marks a body holding a credential.
    pub body: Option<(&'a str, Secret)>,
    pub secret_body: bool,
    pub context: &'a Context,
    pub max_body: u64,
    /// What a cloud login's requests add ([`Extra::default`]: nothing).
    pub extra: Extra<'a>,
}

/// What the requests of a cloud login (`crate::cloud`) need beyond a
/// registry's: further headers holding secrets (a metadata token, a
/// signature), their own time limit and retries, and plain HTTP to a
/// metadata endpoint.
#[derive(Default, Clone, Copy)]
pub(crate) struct Extra<'a> {
    /// Further headers; every value is treated as a secret (never logged,
    /// never sent over plain HTTP to a host not marked insecure, unless
    /// `metadata`, and never replayed to a redirect target).
    pub headers: &'a [(&'a str, &'a Secret)],
    /// One attempt's time limit, instead of the host's `timeout`.
    pub timeout: Option<Duration>,
    /// Retries, instead of the settings' `max_retries`.
    pub max_retries: Option<u32>,
    /// A metadata endpoint of the machine (IMDS, the GCE metadata server):
    /// plain HTTP is its protocol, and what it is sent may go over it.
    pub metadata: bool,
}

#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
    /// The URL that produced this response (after redirects).
    pub url: Url,
    /// The attempts it took.
    pub attempts: Attempts,
}

impl Response {
    fn with_attempts(mut self, attempts: Attempts) -> Self {
        self.attempts = attempts;
        self
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn headers_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    }
}

struct RateLimiter {
    interval: Duration,
    next: Mutex<Instant>,
}

impl RateLimiter {
    fn wait(&self) {
        let slot = {
            let mut next = lock(&self.next);
            let now = Instant::now();
            let slot = (*next).max(now);
            *next = slot + self.interval;
            slot
        };
        let now = Instant::now();
        if slot > now {
            std::thread::sleep(slot - now);
        }
    }
}

struct Semaphore {
    available: Mutex<usize>,
    cond: Condvar,
}

struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    fn acquire(&self) -> Permit<'_> {
        let mut n = lock(&self.available);
        while *n == 0 {
            n = self
                .cond
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *lock(&self.0.available) += 1;
        self.0.cond.notify_one();
    }
}

struct HostState {
    agent: ureq::Agent,
    limiter: Option<RateLimiter>,
    permits: Semaphore,
}

pub(crate) struct Transport {
    settings: Arc<ClientSettings>,
    secrets: Arc<Redactor>,
    /// When the client's deadline passes.
    deadline: Option<Instant>,
    hosts: Mutex<HashMap<String, Arc<HostState>>>,
    rng: AtomicU64,
}

impl Transport {
    pub(crate) fn new(settings: Arc<ClientSettings>, secrets: Arc<Redactor>) -> Self {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        let deadline = settings
            .deadline
            .and_then(|d| Instant::now().checked_add(d));
        Self {
            settings,
            secrets,
            deadline,
            hosts: Mutex::new(HashMap::new()),
            rng: AtomicU64::new(seed | 1),
        }
    }

    pub(crate) fn host_settings(&self, authority: &str) -> HostSettings {
        self.settings.host(authority)
    }

    fn host_state(&self, authority: &str) -> Result<Arc<HostState>> {
        let key = authority.to_ascii_lowercase();
        if let Some(h) = lock(&self.hosts).get(&key) {
            return Ok(Arc::clone(h));
        }
        let hs = self.settings.host(authority);
        let mut tls = ureq::tls::TlsConfig::builder();
        let mut roots: Vec<ureq::tls::Certificate<'static>> = base_roots().to_vec();
        if let Some(ca_file) = &hs.ca_file {
            let pem = fs_err::read(ca_file).map_err(|e| Error::Settings {
                path: ca_file.clone(),
                message: format!("cannot read CA file: {e}"),
            })?;
            let before = roots.len();
            for item in ureq::tls::parse_pem(&pem) {
                match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => roots.push(c.to_owned()),
                    Ok(_) => {}
                    Err(e) => {
                        return Err(Error::Settings {
                            path: ca_file.clone(),
                            message: format!("invalid PEM: {e}"),
                        });
                    }
                }
            }
            if roots.len() == before {
                return Err(Error::Settings {
                    path: ca_file.clone(),
                    message: "no certificate found in CA file".to_owned(),
                });
            }
        }
        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&roots));
        let mut config = ureq::Agent::config_builder();
        if let Some(proxy) = &hs.proxy {
            // The URL is not quoted: it may hold a password.
            let proxy = ureq::Proxy::new(proxy).map_err(|e| {
                Error::InvalidSetting(format!("the proxy of {authority} is not a proxy URL: {e}"))
            })?;
            config = config.proxy(Some(proxy));
        }
        let config = config
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .timeout_global(Some(hs.timeout))
            .user_agent(self.settings.user_agent.as_str())
            .max_idle_connections_per_host(hs.concurrency.max(4))
            .tls_config(tls.build())
            .build();
        let state = Arc::new(HostState {
            agent: ureq::Agent::new_with_config(config),
            limiter: hs.requests_per_second.map(|rps| RateLimiter {
                interval: Duration::try_from_secs_f64(1.0 / rps)
                    .unwrap_or(Duration::from_secs(3600)),
                next: Mutex::new(Instant::now()),
            }),
            permits: Semaphore {
                available: Mutex::new(hs.concurrency),
                cond: Condvar::new(),
            },
        });
        let mut hosts = lock(&self.hosts);
        let entry = hosts.entry(key).or_insert(state);
        Ok(Arc::clone(entry))
    }

    /// Send with retries: 429, 408 and 5xx except 501/505, connection
    /// errors and bodies cut short are retried up to `max_retries` times, a
    /// timeout only [`MAX_TIMEOUT_RETRIES`] times; a host name that does not
    /// resolve is not retried. Each retry and its wait is logged at `info`
    /// and reported to the observer. Nothing is started or waited for past
    /// the client's deadline.
    pub(crate) fn send(&self, req: &Request<'_>) -> Result<Response> {
        let policy = &self.settings.retry;
        let max_retries = req.extra.max_retries.unwrap_or(policy.max_retries);
        let started = Instant::now();
        let attempts = |count: u32| Attempts {
            count,
            elapsed: started.elapsed(),
        };
        let mut made: u32 = 0;
        let mut timeouts: u32 = 0;
        let mut last_failure = String::new();
        loop {
            if self.deadline_passed() {
                return Err(self.deadline_error(req, &req.url, last_failure, attempts(made)));
            }
            let result = self.send_following_redirects(req);
            made += 1;
            let retries_left = made <= max_retries;
            let (reason, url, wait) = match result {
                Ok(resp) if retryable_status(resp.status) => {
                    let retry_after = retry_after(&resp);
                    if let Some(wait) = retry_after
                        && wait > policy.max_retry_after
                    {
                        return Err(Error::RetryAfterTooLong {
                            context: Box::new(req.context.clone()),
                            method: req.method,
                            url: resp.url.to_string(),
                            retry_after: wait,
                            max_wait: policy.max_retry_after,
                        });
                    }
                    if !retries_left {
                        return Ok(resp.with_attempts(attempts(made)));
                    }
                    let wait = retry_after.unwrap_or_else(|| self.backoff(made - 1));
                    (format!("HTTP {}", resp.status), resp.url, wait)
                }
                Ok(resp) => return Ok(resp.with_attempts(attempts(made))),
                Err(e) => {
                    let retry = match &e {
                        Error::Transport { .. } => retries_left,
                        Error::Timeout {
                            which: TimeLimit::Request,
                            ..
                        } => {
                            timeouts += 1;
                            retries_left && timeouts <= MAX_TIMEOUT_RETRIES
                        }
                        _ => false,
                    };
                    if !retry {
                        return Err(e.with_attempts(attempts(made)));
                    }
                    (failure_reason(&e), req.url.clone(), self.backoff(made - 1))
                }
            };
            if self.deadline_before(wait) {
                return Err(self.deadline_error(req, &url, reason, attempts(made)));
            }
            let registry = url.authority();
            scrubbed!(
                self.secrets,
                INFO,
                {
                    registry = %registry,
                    reason = %reason,
                    wait_ms = wait.as_millis() as u64,
                    retry = made,
                },
                "{}: {} {}: {}; retry {} of {} in {}",
                req.context,
                req.method,
                url,
                reason,
                made,
                max_retries,
                human_duration(wait)
            );
            if let Some(observer) = &self.settings.observer {
                observer.event(&Event::RetryWaiting {
                    registry,
                    reason: short_reason(&reason),
                    wait,
                    retry: made,
                });
            }
            std::thread::sleep(wait);
            last_failure = reason;
        }
    }

    /// The client's deadline has passed.
    fn deadline_passed(&self) -> bool {
        self.deadline.is_some_and(|end| Instant::now() >= end)
    }

    /// The client's deadline passes within `wait`.
    fn deadline_before(&self, wait: Duration) -> bool {
        self.deadline
            .is_some_and(|end| Instant::now() + wait >= end)
    }

    /// Time left before the client's deadline.
    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|end| end.saturating_duration_since(Instant::now()))
    }

    fn deadline_error(
        &self,
        req: &Request<'_>,
        url: &Url,
        last_failure: String,
        attempts: Attempts,
    ) -> Error {
        Error::Timeout {
            context: Box::new(req.context.clone()),
            method: req.method,
            url: url.to_string(),
            which: TimeLimit::Deadline,
            limit: self.settings.deadline.unwrap_or_default(),
            last_failure,
            attempts,
        }
    }

    /// Exponential backoff with jitter: 50–100 % of `initial * 2^attempt`, capped.
    fn backoff(&self, attempt: u32) -> Duration {
        let policy = &self.settings.retry;
        let base = policy
            .initial_backoff
            .saturating_mul(1u32 << attempt.min(20))
            .min(policy.max_backoff);
        let r = self.next_random();
        let fraction = 0.5 + 0.5 * ((r >> 11) as f64 / (1u64 << 53) as f64);
        base.mul_f64(fraction)
    }

    fn next_random(&self) -> u64 {
        // splitmix64 over an atomic counter: good enough for jitter.
        let mut z = self
            .rng
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn send_following_redirects(&self, req: &Request<'_>) -> Result<Response> {
        let max = self.settings.max_redirects;
        let mut url = req.url.clone();
        let mut authorization = req.authorization;
        let mut method = req.method;
        let mut body = req.body.as_ref();
        for _ in 0..=max {
            let carries_secret = authorization.is_some()
                || (req.secret_body && body.is_some())
                || !req.extra.headers.is_empty();
            if carries_secret
                && !req.extra.metadata
                && !url.is_https()
                && !self.settings.host(url.authority()).insecure
            {
                return Err(Error::InsecureCredentials {
                    context: Box::new(req.context.clone()),
                    url: url.to_string(),
                });
            }
            let resp = self.send_once(method, &url, req.accept, authorization, body, req)?;
            let location = resp.header("location");
            if !matches!(resp.status, 301 | 302 | 303 | 307 | 308) || location.is_none() {
                return Ok(resp);
            }
            if req.secret_body || !req.extra.headers.is_empty() {
                // Never replay a body or headers holding a credential to a
                // redirect target.
                return Ok(resp);
            }
            let Some(next) = location.and_then(|l| url.join(l)) else {
                return Err(Error::InvalidResponse {
                    context: Box::new(req.context.clone()),
                    url: url.to_string(),
                    message: "redirect with an invalid Location header".to_owned(),
                });
            };
            if !next.same_origin(&url) && authorization.is_some() {
                scrubbed!(
                    self.secrets,
                    DEBUG,
                    "{}: redirect from {} to another origin {}; dropping Authorization",
                    req.context,
                    url,
                    next
                );
                authorization = None;
            }
            if resp.status == 303 || (matches!(resp.status, 301 | 302) && method == "POST") {
                method = "GET";
                body = None;
            }
            url = next;
        }
        Err(Error::TooManyRedirects {
            context: Box::new(req.context.clone()),
            url: req.url.to_string(),
            max,
        })
    }

    fn send_once(
        &self,
        method: &'static str,
        url: &Url,
        accept: Option<&str>,
        authorization: Option<&Secret>,
        body: Option<&(&str, Secret)>,
        req: &Request<'_>,
    ) -> Result<Response> {
        let transport_err = |message: String| Error::Transport {
            context: Box::new(req.context.clone()),
            method,
            url: url.to_string(),
            message,
            timed_out: false,
            attempts: Attempts::default(),
        };
        let host = self.host_state(url.authority())?;
        let _permit = host.permits.acquire();
        if let Some(limiter) = &host.limiter {
            limiter.wait();
        }
        // One attempt may take the host's `timeout`, and never runs past the
        // client's deadline.
        let host_timeout = req
            .extra
            .timeout
            .unwrap_or_else(|| self.settings.host(url.authority()).timeout);
        let (limit, which) = match self.remaining() {
            Some(left) if left < host_timeout => (left, TimeLimit::Deadline),
            _ => (host_timeout, TimeLimit::Request),
        };
        if limit.is_zero() {
            return Err(self.deadline_error(req, url, String::new(), Attempts::default()));
        }
        let ureq_err = |e: ureq::Error, while_reading: bool| match e {
            ureq::Error::Timeout(_) => Error::Timeout {
                context: Box::new(req.context.clone()),
                method,
                url: url.to_string(),
                which,
                limit: match which {
                    TimeLimit::Request => host_timeout,
                    TimeLimit::Deadline => self.settings.deadline.unwrap_or_default(),
                },
                last_failure: String::new(),
                attempts: Attempts::default(),
            },
            e if is_dns_failure(&e) => Error::UnknownHost {
                context: Box::new(req.context.clone()),
                method,
                url: url.to_string(),
                host: url.host().to_owned(),
                message: match &e {
                    ureq::Error::Io(io) => io.to_string(),
                    other => other.to_string(),
                },
            },
            e if while_reading => transport_err(format!(
                "reading response body: {}",
                describe_ureq_error(&e)
            )),
            e => transport_err(describe_ureq_error(&e)),
        };
        let mut builder = http::Request::builder().method(method).uri(url.to_string());
        if let Some(a) = accept {
            builder = builder.header("Accept", a);
        }
        if let Some(auth) = authorization {
            let mut value = http::HeaderValue::from_str(auth.expose())
                .map_err(|_| transport_err("invalid characters in credential".to_owned()))?;
            value.set_sensitive(true);
            builder = builder.header("Authorization", value);
        }
        for (name, secret) in req.extra.headers {
            let mut value = http::HeaderValue::from_str(secret.expose())
                .map_err(|_| transport_err(format!("invalid characters in header {name}")))?;
            value.set_sensitive(true);
            builder = builder.header(*name, value);
        }
        let payload: Vec<u8> = match body {
            Some((content_type, data)) => {
                builder = builder.header("Content-Type", *content_type);
                data.expose().as_bytes().to_vec()
            }
            None => Vec::new(),
        };
        let request = builder
            .body(payload)
            .map_err(|e| transport_err(format!("cannot build request: {e}")))?;
        // `timeout_global` covers the whole exchange: name resolution,
        // connecting, sending, the headers and the whole body.
        let request = host
            .agent
            .configure_request(request)
            .timeout_global(Some(limit))
            .build();
        let started = Instant::now();
        let response = host.agent.run(request).map_err(|e| ureq_err(e, false))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = if method == "HEAD" || status == 204 || status == 304 {
            Vec::new()
        } else {
            response
                .into_body()
                .with_config()
                .limit(req.max_body)
                .read_to_vec()
                .map_err(|e| ureq_err(e, true))?
        };
        scrubbed!(
            self.secrets,
            TRACE,
            "{} {} -> {} ({} bytes, {:?})",
            method,
            url,
            status,
            body.len(),
            started.elapsed()
        );
        Ok(Response {
            status,
            headers,
            body,
            url: url.clone(),
            attempts: Attempts::default(),
        })
    }
}

/// A retry's reason for the observer: the status code alone for HTTP
/// answers (`429`), else the reason as logged up to its first colon
/// (`connection error`, `timeout`).
fn short_reason(reason: &str) -> &str {
    let r = reason.strip_prefix("HTTP ").unwrap_or(reason);
    r.split(':').next().unwrap_or(r).trim()
}

/// Why an attempt failed, for the retry log line and the deadline error.
fn failure_reason(e: &Error) -> String {
    match e {
        Error::Transport { message, .. } => message.clone(),
        Error::Timeout { limit, .. } => format!(
            "timeout: no complete answer within {}",
            human_duration(*limit)
        ),
        other => other.to_string(),
    }
}

/// A host name that does not resolve: ureq's own "host not found", or the
/// resolver's error (std reports every `getaddrinfo` failure as
/// "failed to lookup address information: ...", the only way to tell it
/// from other I/O errors).
fn is_dns_failure(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::HostNotFound => true,
        ureq::Error::Io(io) => io
            .to_string()
            .starts_with("failed to lookup address information"),
        _ => false,
    }
}

fn describe_ureq_error(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        ureq::Error::Io(io) => format!("connection error: {io}"),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        ureq::Error::ConnectionFailed => "connection failed".to_owned(),
        ureq::Error::BodyExceedsLimit(n) => format!("response body larger than {n} bytes"),
        other => other.to_string(),
    }
}

fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429) || ((500..=599).contains(&status) && status != 501 && status != 505)
}

/// `Retry-After` as a delay: delta-seconds or an HTTP-date.
pub(crate) fn retry_after(resp: &Response) -> Option<Duration> {
    parse_retry_after(resp.header("retry-after")?, SystemTime::now())
}

pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The roots every registry connection trusts: the bundled Mozilla roots
/// (so the binary works in an image with no CA store) plus the system's
/// trust store when there is one. Read once per process.
fn base_roots() -> &'static [ureq::tls::Certificate<'static>] {
    static ROOTS: std::sync::OnceLock<Vec<ureq::tls::Certificate<'static>>> =
        std::sync::OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots: Vec<ureq::tls::Certificate<'static>> =
            webpki_root_certs::TLS_SERVER_ROOT_CERTS
                .iter()
                .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
                .collect();
        let system = rustls_native_certs::load_native_certs();
        for e in &system.errors {
            tracing::debug!("system trust store: {e}");
        }
        roots.extend(
            system
                .certs
                .iter()
                .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned()),
        );
        roots
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn retryable() {
        for s in [408, 429, 500, 502, 503, 504, 599] {
            assert!(retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 501, 505] {
            assert!(!retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_is_bounded_and_jittered() {
        let mut s = ClientSettings::default();
        s.retry.initial_backoff = Duration::from_millis(100);
        s.retry.max_backoff = Duration::from_millis(350);
        let t = Transport::new(Arc::new(s), Arc::default());
        for attempt in 0..10 {
            let d = t.backoff(attempt);
            let base = (100u64 << attempt).min(350);
            assert!(d >= Duration::from_millis(base / 2), "{attempt} {d:?}");
            assert!(d <= Duration::from_millis(base), "{attempt} {d:?}");
        }
    }
}
