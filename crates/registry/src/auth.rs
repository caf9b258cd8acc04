//! `WWW-Authenticate` challenges and token-service answers.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// How a registry wants to be authenticated, learnt from `GET /v2/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// `/v2/` answered 200: no authentication.
    Anonymous,
    /// `Basic realm=...`: send the credential on every request.
    Basic,
    /// `Bearer realm=...,service=...`: exchange the credential for a token.
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// Parse one or more `WWW-Authenticate` header values into
/// `(scheme in lowercase, parameters)` pairs. Quoted values may contain commas
/// and escaped quotes.
pub(crate) fn parse_www_authenticate(values: &[&str]) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for value in values {
        let mut chars = value.chars().peekable();
        loop {
            // skip separators
            while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
                chars.next();
            }
            // read a token
            let mut token = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == ',' || c == '=' {
                    break;
                }
                token.push(c);
                chars.next();
            }
            if token.is_empty() {
                break;
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            if chars.peek() == Some(&'=') {
                // a parameter of the current challenge
                chars.next();
                while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                    chars.next();
                }
                let mut val = String::new();
                if chars.peek() == Some(&'"') {
                    chars.next();
                    while let Some(c) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some(n) = chars.next() {
                                    val.push(n);
                                }
                            }
                            '"' => break,
                            _ => val.push(c),
                        }
                    }
                } else {
                    while let Some(&c) = chars.peek() {
                        if c == ',' || c.is_whitespace() {
                            break;
                        }
                        val.push(c);
                        chars.next();
                    }
                }
                if let Some((_, params)) = out.last_mut() {
                    params.insert(token.to_ascii_lowercase(), val);
                }
            } else {
                out.push((token.to_ascii_lowercase(), BTreeMap::new()));
            }
        }
    }
    out
}

/// Pick the challenge to answer: Bearer if offered (with a realm), else Basic.
pub(crate) fn choose_challenge(values: &[&str]) -> Option<Challenge> {
    let parsed = parse_www_authenticate(values);
    if let Some((_, params)) = parsed
        .iter()
        .find(|(s, p)| s == "bearer" && p.get("realm").is_some_and(|r| !r.is_empty()))
    {
        return Some(Challenge::Bearer {
            realm: params.get("realm").cloned().unwrap_or_default(),
            service: params.get("service").cloned().filter(|s| !s.is_empty()),
        });
    }
    parsed
        .iter()
        .any(|(s, _)| s == "basic")
        .then_some(Challenge::Basic)
}

/// A token service answer. Docker Hub and distribution send `token`, OAuth2
/// services send `access_token`; some send both.
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl TokenResponse {
    /// The token and its lifetime (at least 60 s, as the distribution spec says).
    pub(crate) fn into_parts(self) -> Option<(String, Duration)> {
        let token = self
            .token
            .filter(|t| !t.is_empty())
            .or(self.access_token.filter(|t| !t.is_empty()))?;
        let secs = self.expires_in.unwrap_or(60).max(60);
        Some((token, Duration::from_secs(secs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_style() {
        let h = r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull""#;
        let parsed = parse_www_authenticate(&[h]);
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].0, "bearer");
        assert_eq!(parsed[0].1["scope"], "repository:library/nginx:pull");
        assert_eq!(
            choose_challenge(&[h]),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".to_owned(),
                service: Some("registry.docker.io".to_owned())
            })
        );
    }

    #[test]
    fn quoted_commas_and_escapes() {
        let h = r#"Bearer realm="https://ghcr.io/token", service="ghcr.io", scope="repository:a/b:pull,push", note="say \"hi\"""#;
        let parsed = parse_www_authenticate(&[h]);
        assert_eq!(parsed[0].1["scope"], "repository:a/b:pull,push");
        assert_eq!(parsed[0].1["note"], r#"say "hi""#);
        assert_eq!(parsed[0].1["service"], "ghcr.io");
    }

    #[test]
    fn multiple_challenges() {
        let parsed = parse_www_authenticate(&[
            r#"Basic realm="x", Bearer realm="https://t/token",service=reg"#,
        ]);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[1].1["service"], "reg");
        assert!(matches!(
            choose_challenge(&[r#"Basic realm="x""#, r#"Bearer realm="https://t/""#]),
            Some(Challenge::Bearer { .. })
        ));
        assert_eq!(
            choose_challenge(&[r#"Basic realm="Registry Realm""#]),
            Some(Challenge::Basic)
        );
        assert_eq!(choose_challenge(&["Negotiate"]), None);
        assert_eq!(choose_challenge(&[]), None);
        // Bearer without realm cannot be answered
        assert_eq!(choose_challenge(&["Bearer service=x"]), None);
    }

    #[test]
    fn token_fields() {
        let t: TokenResponse = serde_json::from_str(r#"{"token":"a","expires_in":300}"#).unwrap();
        assert_eq!(
            t.into_parts(),
            Some(("a".to_owned(), Duration::from_secs(300)))
        );
        let t: TokenResponse = serde_json::from_str(r#"{"access_token":"b"}"#).unwrap();
        assert_eq!(
            t.into_parts(),
            Some(("b".to_owned(), Duration::from_secs(60)))
        );
        let t: TokenResponse =
            serde_json::from_str(r#"{"token":"","access_token":"c","expires_in":5}"#).unwrap();
        assert_eq!(
            t.into_parts(),
            Some(("c".to_owned(), Duration::from_secs(60)))
        );
        let t: TokenResponse = serde_json::from_str(r#"{}"#).unwrap();
        assert_eq!(t.into_parts(), None);
    }

    proptest::proptest! {
        #[test]
        fn challenge_parser_never_panics(s in "\\PC{0,120}") {
            let _ = choose_challenge(&[s.as_str()]);
        }
    }
}
