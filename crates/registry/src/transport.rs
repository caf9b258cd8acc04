//! HTTP layer: one ureq agent per host (its own TLS roots and timeout), a
//! rate limiter and a concurrency limit per host, retries with backoff, and
//! redirects followed by hand so that `Authorization` never leaves the origin
//! it was meant for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ureq::http;

use super::error::{Context, Error, Result};
use super::secret::Secret;
use super::settings::{ClientSettings, HostSettings};
use super::url::Url;
use crate::time::Timestamp;

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
}

#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
    /// The URL that produced this response (after redirects).
    pub url: Url,
}

impl Response {
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
    hosts: Mutex<HashMap<String, Arc<HostState>>>,
    rng: AtomicU64,
}

impl Transport {
    pub(crate) fn new(settings: Arc<ClientSettings>) -> Self {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        Self {
            settings,
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
        let config = ureq::Agent::config_builder()
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

    /// Send with retries (429, 408, 5xx except 501/505, transport errors).
    pub(crate) fn send(&self, req: &Request<'_>) -> Result<Response> {
        let policy = &self.settings.retry;
        let mut attempt: u32 = 0;
        loop {
            let result = self.send_following_redirects(req);
            let can_retry = attempt < policy.max_retries;
            match result {
                Ok(resp) if retryable_status(resp.status) => {
                    let retry_after = retry_after(&resp);
                    if let Some(wait) = retry_after
                        && wait > policy.max_retry_after
                    {
                        return Err(Error::RetryAfterTooLong {
                            context: req.context.clone(),
                            method: req.method,
                            url: resp.url.to_string(),
                            retry_after: wait,
                            max_wait: policy.max_retry_after,
                        });
                    }
                    if !can_retry {
                        return Ok(resp);
                    }
                    let wait = retry_after.unwrap_or_else(|| self.backoff(attempt));
                    tracing::debug!(
                        "{}: {} {} answered {}, retrying in {:?}",
                        req.context,
                        req.method,
                        resp.url,
                        resp.status,
                        wait
                    );
                    std::thread::sleep(wait);
                }
                Err(e @ Error::Transport { .. }) if can_retry => {
                    let wait = self.backoff(attempt);
                    tracing::debug!("{e}; retrying in {wait:?}");
                    std::thread::sleep(wait);
                }
                other => return other,
            }
            attempt += 1;
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
            let carries_secret = authorization.is_some() || (req.secret_body && body.is_some());
            if carries_secret && !url.is_https() && !self.settings.host(url.authority()).insecure {
                return Err(Error::InsecureCredentials {
                    context: req.context.clone(),
                    url: url.to_string(),
                });
            }
            let resp = self.send_once(method, &url, req.accept, authorization, body, req)?;
            let location = resp.header("location");
            if !matches!(resp.status, 301 | 302 | 303 | 307 | 308) || location.is_none() {
                return Ok(resp);
            }
            if req.secret_body {
                // Never replay a body holding a credential to a redirect target.
                return Ok(resp);
            }
            let Some(next) = location.and_then(|l| url.join(l)) else {
                return Err(Error::InvalidResponse {
                    context: req.context.clone(),
                    url: url.to_string(),
                    message: "redirect with an invalid Location header".to_owned(),
                });
            };
            if !next.same_origin(&url) && authorization.is_some() {
                tracing::debug!(
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
            context: req.context.clone(),
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
        let transport_err = |message: String, timed_out: bool| Error::Transport {
            context: req.context.clone(),
            method,
            url: url.to_string(),
            message,
            timed_out,
        };
        let host = self.host_state(url.authority())?;
        let _permit = host.permits.acquire();
        if let Some(limiter) = &host.limiter {
            limiter.wait();
        }
        let mut builder = http::Request::builder().method(method).uri(url.to_string());
        if let Some(a) = accept {
            builder = builder.header("Accept", a);
        }
        if let Some(auth) = authorization {
            let mut value = http::HeaderValue::from_str(auth.expose())
                .map_err(|_| transport_err("invalid characters in credential".to_owned(), false))?;
            value.set_sensitive(true);
            builder = builder.header("Authorization", value);
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
            .map_err(|e| transport_err(format!("cannot build request: {e}"), false))?;
        let started = Instant::now();
        let response = host.agent.run(request).map_err(|e| {
            let timed_out = matches!(e, ureq::Error::Timeout(_));
            transport_err(describe_ureq_error(&e), timed_out)
        })?;
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
                .map_err(|e| {
                    let timed_out = matches!(e, ureq::Error::Timeout(_));
                    transport_err(
                        format!("reading response body: {}", describe_ureq_error(&e)),
                        timed_out,
                    )
                })?
        };
        tracing::trace!(
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
        })
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
    let at = parse_http_date(v)?;
    let now_secs = now.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(Duration::from_secs(
        u64::try_from(at.unix_seconds() - now_secs).unwrap_or(0),
    ))
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form servers must send.
fn parse_http_date(v: &str) -> Option<Timestamp> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = match *month {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let day: u32 = day.parse().ok()?;
    Timestamp::parse_rfc3339(&format!("{year}-{month:02}-{day:02}T{time}Z")).ok()
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
        let t = Transport::new(Arc::new(s));
        for attempt in 0..10 {
            let d = t.backoff(attempt);
            let base = (100u64 << attempt).min(350);
            assert!(d >= Duration::from_millis(base / 2), "{attempt} {d:?}");
            assert!(d <= Duration::from_millis(base), "{attempt} {d:?}");
        }
    }
}
