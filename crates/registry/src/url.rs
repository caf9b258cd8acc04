//! A minimal absolute-URL type: enough to build registry URLs, resolve `Link`
//! and `Location` headers, and compare origins when deciding whether an
//! `Authorization` header may follow a redirect.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    scheme: String,
    /// `host`, `host:port`, `[v6]` or `[v6]:port`, as written.
    authority: String,
    /// Path plus query, always starting with `/`.
    path_query: String,
}

impl Url {
    pub(crate) fn new(scheme: &str, authority: &str, path_query: &str) -> Self {
        let path_query = if path_query.starts_with('/') {
            path_query.to_owned()
        } else {
            format!("/{path_query}")
        };
        Self {
            scheme: scheme.to_ascii_lowercase(),
            authority: authority.to_owned(),
            path_query,
        }
    }

    /// Parse an absolute `http`/`https` URL. User info is refused.
    pub(crate) fn parse(input: &str) -> Option<Self> {
        let (scheme, rest) = input.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.is_empty() || authority.contains('@') || authority.contains(' ') {
            return None;
        }
        let mut path_query = rest[end..].to_owned();
        if let Some(hash) = path_query.find('#') {
            path_query.truncate(hash);
        }
        if !path_query.starts_with('/') {
            path_query.insert(0, '/');
        }
        Some(Self {
            scheme,
            authority: authority.to_owned(),
            path_query,
        })
    }

    /// Resolve a reference (absolute, scheme-relative, absolute-path or
    /// relative-path) against this URL, keeping ports.
    pub(crate) fn join(&self, reference: &str) -> Option<Self> {
        let reference = reference.trim();
        if reference.contains("://") {
            return Self::parse(reference);
        }
        if let Some(rest) = reference.strip_prefix("//") {
            return Self::parse(&format!("{}://{rest}", self.scheme));
        }
        let reference = reference.split('#').next().unwrap_or_default();
        if reference.starts_with('/') {
            return Some(Self::new(&self.scheme, &self.authority, reference));
        }
        if let Some(query) = reference.strip_prefix('?') {
            return Some(Self::new(
                &self.scheme,
                &self.authority,
                &format!("{}?{query}", self.path()),
            ));
        }
        let path = self.path();
        let dir = match path.rfind('/') {
            Some(pos) => &path[..=pos],
            None => "/",
        };
        Some(Self::new(
            &self.scheme,
            &self.authority,
            &format!("{dir}{reference}"),
        ))
    }

    pub(crate) fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    pub(crate) fn authority(&self) -> &str {
        &self.authority
    }

    /// The host without port (IPv6 without brackets).
    pub(crate) fn host(&self) -> &str {
        host_of(&self.authority)
    }

    pub(crate) fn path(&self) -> &str {
        self.path_query
            .split_once('?')
            .map_or(self.path_query.as_str(), |(p, _)| p)
    }

    /// Scheme, lowercase host and effective port: two URLs with the same origin
    /// may share credentials.
    pub(crate) fn origin(&self) -> (String, String, u16) {
        let default = if self.is_https() { 443 } else { 80 };
        let port = port_of(&self.authority).unwrap_or(default);
        (self.scheme.clone(), self.host().to_ascii_lowercase(), port)
    }

    pub(crate) fn same_origin(&self, other: &Url) -> bool {
        self.origin() == other.origin()
    }

    /// Append a query parameter (value percent-encoded).
    pub(crate) fn with_query(mut self, key: &str, value: &str) -> Self {
        let sep = if self.path_query.contains('?') {
            '&'
        } else {
            '?'
        };
        self.path_query.push(sep);
        self.path_query.push_str(&encode_component(key));
        self.path_query.push('=');
        self.path_query.push_str(&encode_component(value));
        self
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority, self.path_query)
    }
}

pub(crate) fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => authority,
    }
}

fn port_of(authority: &str) -> Option<u16> {
    let tail = match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.1.strip_prefix(':')?,
        None => authority.rsplit_once(':')?.1,
    };
    tail.parse().ok()
}

/// True for `localhost`, `127.0.0.0/8` and `::1`.
pub(crate) fn is_loopback(authority: &str) -> bool {
    let host = host_of(authority).to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

/// Percent-encode everything but RFC 3986 unreserved characters (upper-case
/// hex): a path segment, a form value, a SigV4 query component.
pub(crate) fn encode_unreserved(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encode everything except RFC 3986 unreserved characters and `:`/`/`
/// (which registries expect literally in `scope`).
pub(crate) fn encode_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        let u = Url::parse("http://127.0.0.1:5000/v2/foo/tags/list?n=10").unwrap();
        assert_eq!(u.authority(), "127.0.0.1:5000");
        assert_eq!(u.host(), "127.0.0.1");
        assert_eq!(u.path(), "/v2/foo/tags/list");
        assert_eq!(u.to_string(), "http://127.0.0.1:5000/v2/foo/tags/list?n=10");
        assert!(Url::parse("ftp://x/y").is_none());
        assert!(Url::parse("https://user:pw@host/x").is_none());
        assert_eq!(Url::parse("https://h").unwrap().to_string(), "https://h/");
    }

    #[test]
    fn join_keeps_ports() {
        let base = Url::parse("http://127.0.0.1:5000/v2/foo/tags/list?n=2").unwrap();
        assert_eq!(
            base.join("/v2/foo/tags/list?n=2&last=b")
                .unwrap()
                .to_string(),
            "http://127.0.0.1:5000/v2/foo/tags/list?n=2&last=b"
        );
        assert_eq!(
            base.join("list?last=c").unwrap().to_string(),
            "http://127.0.0.1:5000/v2/foo/tags/list?last=c"
        );
        assert_eq!(
            base.join("?last=d").unwrap().to_string(),
            "http://127.0.0.1:5000/v2/foo/tags/list?last=d"
        );
        assert_eq!(
            base.join("http://127.0.0.1:6000/x").unwrap().to_string(),
            "http://127.0.0.1:6000/x"
        );
        assert_eq!(
            base.join("//other:7/y").unwrap().to_string(),
            "http://other:7/y"
        );
    }

    #[test]
    fn origins() {
        let a = Url::parse("https://reg.io/v2/").unwrap();
        assert!(a.same_origin(&Url::parse("https://REG.io:443/other").unwrap()));
        assert!(!a.same_origin(&Url::parse("http://reg.io/v2/").unwrap()));
        assert!(!a.same_origin(&Url::parse("https://reg.io:8443/v2/").unwrap()));
        assert!(!a.same_origin(&Url::parse("https://cdn.reg.io/v2/").unwrap()));
    }

    #[test]
    fn loopback() {
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("127.0.0.1"));
        assert!(is_loopback("127.1.2.3:80"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("10.0.0.1"));
        assert!(!is_loopback("ghcr.io"));
        assert_eq!(host_of("[::1]:5000"), "::1");
    }

    #[test]
    fn encoding() {
        assert_eq!(
            encode_component("repository:a/b:pull,push"),
            "repository:a/b:pull%2Cpush"
        );
        assert_eq!(encode_component("a b&c"), "a%20b%26c");
    }
}
