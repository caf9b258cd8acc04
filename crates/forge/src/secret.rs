//! A value that must never be shown: a token, a GitHub App's private key, an installation token.
//!
//! `Debug` and `Display` print a fixed placeholder and the memory is wiped on drop, so a secret
//! cannot reach a log line, an error or a `{:?}` by accident. [`Secret::expose`] is the only way
//! to read it; the crate calls it where the value goes into a request header or a signer.

use std::fmt;

use zeroize::Zeroizing;

/// A secret string.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a secret value.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    /// The value itself; call it only to hand the value to the code that uses it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn never_printed() {
        let secret = Secret::new("ghp_do-not-print");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{secret}"), "<redacted>");
        assert!(!format!("{:?}", Some(secret.clone())).contains("do-not-print"));
        assert_eq!(secret.expose(), "ghp_do-not-print");
    }
}
