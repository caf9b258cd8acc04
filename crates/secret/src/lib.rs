//! A string that must never be shown: passwords, tokens, HTTP header values,
//! private key text, Docker `config.json` payloads.
//!
//! Every credential image-update holds, in every crate, lives in a
//! [`Secret`]. Its `Debug` and `Display` print a fixed placeholder, and its
//! memory is wiped when it is dropped, so a secret cannot reach a log line,
//! an error message or a `{:?}` by accident. The only way to read it is
//! [`Secret::expose`], called at the last moment (handing it to a
//! transport, a signer or a parser); keep those call sites few.

use std::fmt;

use zeroize::Zeroizing;

/// A secret string.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a secret value.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    /// The secret value itself. Call it only to hand the value to the code
    /// that uses it.
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
    fn debug_and_display_never_show_the_value() {
        let secret = Secret::new("hunter2-token");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{secret}"), "<redacted>");
        assert!(!format!("{:?}", Some(secret.clone())).contains("hunter2"));
        assert_eq!(secret.expose(), "hunter2-token");
        assert!(Secret::default().is_empty());
    }
}
