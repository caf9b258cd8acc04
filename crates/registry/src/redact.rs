//! The secrets a client knows, and their removal from text that came from a
//! registry.
//!
//! A registry or token service is not trusted to keep secrets out of what it
//! sends back: some echo the `Authorization` header, the password or the
//! refresh token in an error body, a header or a redirect URL. Every string
//! derived from a response that the client turns into an error or a log
//! line passes through [`Redactor::scrub`] (errors at the client's public
//! boundary, [`crate::Error::redact`]; log lines through the crate's
//! `scrubbed!` macro), which replaces every known secret with `<redacted>`.
//!
//! The set grows during a run: credentials are added when they are looked up
//! (before anything is sent), tokens when a token service hands them out.
//! Each secret is registered in the forms a server is likely to echo it in:
//! as is, JSON-escaped, URL-encoded (`%XX` in either case, `+` or `%20` for a
//! space) and base64 (standard and URL-safe alphabets, with and without
//! padding); a username/password pair also as `user:password` and its base64
//! (the Basic `Authorization` value).

use std::sync::RwLock;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;

use crate::credentials::Credential;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "<redacted>";

/// Longest quotation of a response body (or other response-derived free
/// text) in an error, in bytes, before the truncation marker.
pub(crate) const MAX_QUOTE: usize = 512;

/// Derived forms shorter than this are not registered: the unpadded base64
/// of a one-byte secret is two letters, which would blank out unrelated text.
/// The secret itself is always registered.
const MIN_DERIVED: usize = 4;

/// The secrets known to one client, shared by its transport.
#[derive(Default)]
pub(crate) struct Redactor {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Every registered form, sorted and deduplicated.
    needles: Vec<String>,
    /// Leftmost-longest matcher over `needles`; `None` when there are none.
    matcher: Option<AhoCorasick>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.read().needles.len();
        write!(f, "Redactor({n} forms, <redacted>)")
    }
}

impl Redactor {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Register `secret` in all its forms.
    pub(crate) fn add(&self, secret: &str) {
        self.add_all(&[secret]);
    }

    /// Register the secrets of a credential: the password and the
    /// `user:password` pair of a Basic credential, identity and registry
    /// tokens.
    pub(crate) fn add_credential(&self, credential: &Credential) {
        match credential {
            Credential::Anonymous => {}
            Credential::Basic { username, password } => {
                let pair = format!("{username}:{}", password.expose());
                self.add_all(&[password.expose(), &pair]);
            }
            Credential::IdentityToken { token, .. } => self.add(token.expose()),
            Credential::RegistryToken(token) => self.add(token.expose()),
        }
    }

    fn add_all(&self, secrets: &[&str]) {
        let mut forms: Vec<String> = Vec::new();
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            forms.push((*secret).to_owned());
            forms.extend(derived_forms(secret).filter(|f| f.len() >= MIN_DERIVED));
        }
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = inner.needles.len();
        inner.needles.extend(forms);
        inner.needles.sort();
        inner.needles.dedup();
        if inner.needles.len() == before {
            return;
        }
        // Building fails only for patterns beyond the automaton's size
        // limits; then every form is replaced one by one instead (`scrub`).
        inner.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&inner.needles)
            .ok();
    }

    /// `text` with every known secret replaced by `<redacted>`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let inner = self.read();
        if inner.needles.is_empty() {
            return text.to_owned();
        }
        match &inner.matcher {
            Some(m) => m.replace_all(text, &vec![REDACTED; inner.needles.len()]),
            None => {
                let mut out = text.to_owned();
                let mut by_length: Vec<&String> = inner.needles.iter().collect();
                by_length.sort_by_key(|n| std::cmp::Reverse(n.len()));
                for needle in by_length {
                    out = out.replace(needle.as_str(), REDACTED);
                }
                out
            }
        }
    }

    /// [`scrub`](Self::scrub), then make the text fit on one line of an
    /// error message: control characters become spaces, runs of white
    /// space collapse, and text longer than [`MAX_QUOTE`] bytes is cut on a
    /// character boundary with a marker giving the full length. Scrubbing
    /// comes first so that a cut never leaves part of a secret behind.
    pub(crate) fn quote(&self, text: &str) -> String {
        quote_scrubbed(&self.scrub(text))
    }
}

/// One-line, bounded form of already scrubbed text.
fn quote_scrubbed(text: &str) -> String {
    let mut line = String::with_capacity(text.len().min(MAX_QUOTE + 64));
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !line.is_empty();
            continue;
        }
        if space {
            line.push(' ');
            space = false;
        }
        line.push(c);
    }
    if line.len() <= MAX_QUOTE {
        return line;
    }
    let total = line.len();
    let mut cut = MAX_QUOTE;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    line.truncate(cut);
    line.push_str(&format!("… [truncated, {total} bytes in all]"));
    line
}

/// The encodings a server may echo `secret` in (the secret itself excluded).
fn derived_forms(secret: &str) -> impl Iterator<Item = String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let bytes = secret.as_bytes();
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json
        .strip_prefix('"')
        .and_then(|j| j.strip_suffix('"'))
        .unwrap_or_default()
        .to_owned();
    [
        json,
        // As the client itself puts it in a form or a query (`:` and `/` kept).
        crate::url::encode_component(secret),
        percent_encode(bytes, false, true),
        percent_encode(bytes, false, false),
        percent_encode(bytes, true, true),
        percent_encode(bytes, true, false),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
    ]
    .into_iter()
    .filter(move |f| f != secret && !f.is_empty())
}

/// Percent-encode everything but RFC 3986 unreserved characters, with
/// upper- or lower-case hex digits, and a space as `+` (form encoding) or
/// `%20`.
fn percent_encode(bytes: &[u8], plus_for_space: bool, upper: bool) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b));
            }
            b' ' if plus_for_space => out.push('+'),
            _ if upper => out.push_str(&format!("%{b:02X}")),
            _ => out.push_str(&format!("%{b:02x}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Secret;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn every_form_is_replaced() {
        let s = Redactor::default();
        s.add_credential(&Credential::Basic {
            username: "alice".to_owned(),
            password: Secret::new("p@ss w/rd+\"x\""),
        });
        let pw = "p@ss w/rd+\"x\"";
        for form in [
            pw.to_owned(),
            b64(pw),
            b64("alice:p@ss w/rd+\"x\""),
            format!("Basic {}", b64("alice:p@ss w/rd+\"x\"")),
            "p%40ss+w%2Frd%2B%22x%22".to_owned(),
            "p%40ss%20w%2frd%2b%22x%22".to_owned(),
            r#"p@ss w/rd+\"x\""#.to_owned(),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pw),
            "alice:p@ss w/rd+\"x\"".to_owned(),
        ] {
            let text = format!("before {form} after");
            let out = s.scrub(&text);
            assert!(!out.contains(&form), "{form} -> {out}");
            assert!(out.contains(REDACTED), "{form} -> {out}");
            assert!(
                out.starts_with("before ") && out.ends_with(" after"),
                "{out}"
            );
        }
        // The username alone is not a secret.
        assert_eq!(s.scrub("user alice"), "user alice");
    }

    #[test]
    fn tokens_and_nothing_known() {
        let s = Redactor::default();
        assert_eq!(s.scrub("token abc"), "token abc");
        s.add("eyJhbGciOi.payload.sig");
        s.add_credential(&Credential::IdentityToken {
            username: None,
            token: Secret::new("refresh-me"),
        });
        s.add_credential(&Credential::RegistryToken(Secret::new("reg-token")));
        let out = s.scrub("Bearer eyJhbGciOi.payload.sig / refresh_token=refresh-me / reg-token");
        assert_eq!(
            out,
            "Bearer <redacted> / refresh_token=<redacted> / <redacted>"
        );
        // Registering twice changes nothing.
        s.add("refresh-me");
        assert_eq!(s.scrub("refresh-me"), REDACTED);
    }

    #[test]
    fn longest_form_wins() {
        let s = Redactor::default();
        s.add("abcd");
        s.add("abcdefgh");
        assert_eq!(s.scrub("xabcdefghx abcd"), "x<redacted>x <redacted>");
    }

    #[test]
    fn quotes_are_one_bounded_line_cut_after_scrubbing() {
        let s = Redactor::default();
        s.add("hunter2hunter2");
        assert_eq!(s.quote("a\r\n\tb\u{1b}[2Kc  d"), "a b [2Kc d");
        // A secret straddling the cut is redacted, not cut in half.
        let text = format!(
            "{}hunter2hunter2{}",
            "x".repeat(MAX_QUOTE - 5),
            "y".repeat(50)
        );
        let q = s.quote(&text);
        assert!(!q.contains("hunt"), "{q}");
        assert!(q.contains("[truncated, "), "{q}");
        // Multi-byte characters are never split.
        let text = "é".repeat(MAX_QUOTE);
        let q = s.quote(&text);
        assert!(q.starts_with(&"é".repeat(MAX_QUOTE / 2)), "{q}");
        assert!(q.ends_with(&format!("[truncated, {} bytes in all]", 2 * MAX_QUOTE)));
        assert_eq!(s.quote("short"), "short");
    }

    #[test]
    fn short_secrets_keep_their_derived_forms_out() {
        let s = Redactor::default();
        s.add("a");
        // "YQ" (unpadded base64 of "a") is too short to be registered.
        assert_eq!(s.scrub("YQ b"), "YQ b");
        assert_eq!(s.scrub("cat"), "c<redacted>t");
    }
}
