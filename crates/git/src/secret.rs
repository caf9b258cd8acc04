//! A string that must never be shown: passwords, tokens, header values, key material.
//!
//! Every credential the crate holds lives in a [`Secret`]. Its `Debug` and `Display` print a fixed
//! placeholder, and its memory is wiped when it is dropped, so a secret cannot reach a log line, an
//! error message or a `{:?}` by accident. The only way to read it is [`Secret::expose`], which the
//! crate calls at the last moment (handing it to libgit2 or a signer).

use std::fmt;

use zeroize::Zeroizing;

/// A secret string (password, token, HTTP header value, private key text).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a secret value.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    /// The secret value itself. Call it only to hand the value to the code that uses it.
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
        assert_eq!(secret.expose(), "hunter2-token");
    }
}
