//! The image a policy chose: `{name, tag, digest}`, as Flux records it in an
//! ImagePolicy's `status.latestRef` (and `observedPreviousRef`).
//!
//! One type serves every place that holds such a reference: supplied policy
//! results, the reflector's previous and new choices, the report's observed
//! policies and emitted ImagePolicies. Its grammar is the registry client's
//! ([`image_update_registry::reference`]), which is go-containerregistry's
//! weak validation, the check Flux applies before it writes anything.

use std::fmt;

use image_update_registry::reference::{self, ReferenceError};

/// An image reference: name, tag and an optional digest.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ImageRef {
    /// The image name as written (Flux keeps `spec.image` verbatim; it is not
    /// canonicalised).
    pub name: String,
    pub tag: String,
    /// `sha256:…`, or empty when no digest is recorded.
    #[serde(default)]
    pub digest: String,
}

/// Why a reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image reference {reference:?}")]
pub struct RefError {
    pub reference: String,
    #[source]
    pub reason: RefReason,
}

/// What is wrong with a refused reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefReason {
    #[error("a tag is required (NAME:TAG[@DIGEST])")]
    NoTag,
    #[error("the image name is empty")]
    NoName,
    #[error(transparent)]
    Grammar(#[from] ReferenceError),
}

impl ImageRef {
    /// A reference without a digest.
    pub fn new(name: impl Into<String>, tag: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tag: tag.into(),
            digest: String::new(),
        }
    }

    /// The same reference with `digest` (empty for none).
    #[must_use]
    pub fn with_digest(mut self, digest: impl Into<String>) -> Self {
        self.digest = digest.into();
        self
    }

    /// Parse `NAME:TAG[@DIGEST]`; the tag is required.
    ///
    /// # Errors
    /// When there is no tag, or the reference breaks the grammar.
    pub fn parse(text: &str) -> Result<Self, RefError> {
        let (rest, digest) = text.split_once('@').unwrap_or((text, ""));
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let Some(colon) = rest[slash..].rfind(':').map(|i| slash + i) else {
            return Err(RefError {
                reference: text.to_owned(),
                reason: RefReason::NoTag,
            });
        };
        let parsed = Self {
            name: rest[..colon].to_owned(),
            tag: rest[colon + 1..].to_owned(),
            digest: digest.to_owned(),
        };
        // `text` is the reference as `Display` writes it, unless it ends in a bare `@`.
        let whole = if digest.is_empty() { rest } else { text };
        parsed.validate_as(whole)?;
        Ok(parsed)
    }

    /// Check name, tag and digest against the reference grammar.
    ///
    /// # Errors
    /// Says which part is invalid.
    pub fn validate(&self) -> Result<(), RefError> {
        self.validate_as(&self.to_string())
    }

    /// [`ImageRef::validate`], with `whole` the reference as `Display` writes it.
    fn validate_as(&self, whole: &str) -> Result<(), RefError> {
        let fail = |reason: RefReason| RefError {
            reference: whole.to_owned(),
            reason,
        };
        if self.name.is_empty() {
            return Err(fail(RefReason::NoName));
        }
        if self.tag.is_empty() {
            return Err(fail(RefReason::NoTag));
        }
        reference::validate_reference(whole).map_err(|e| fail(RefReason::Grammar(e)))
    }

    /// `name:tag`, plus `@digest` when there is one.
    #[must_use]
    pub fn image(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.tag)?;
        if !self.digest.is_empty() {
            write!(f, "@{}", self.digest)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be";

    #[test]
    fn parses_name_tag_digest() {
        let r = ImageRef::parse("ghcr.io/org/app:1.2.0").unwrap();
        assert_eq!(r, ImageRef::new("ghcr.io/org/app", "1.2.0"));
        let r = ImageRef::parse(&format!("localhost:5000/a/b:v1@{D}")).unwrap();
        assert_eq!(r, ImageRef::new("localhost:5000/a/b", "v1").with_digest(D));
        assert_eq!(r.image(), format!("localhost:5000/a/b:v1@{D}"));
        assert_eq!(ImageRef::parse("nginx:1.25").unwrap().name, "nginx");
    }

    #[test]
    fn refuses_invalid_refs() {
        for bad in [
            "nginx",
            "localhost:5000/app",
            "Upper/app:1",
            "app:-bad",
            "app:",
            ":1",
            "app:1@sha256:xyz",
            "https://ghcr.io/app:1",
            "a//b:1",
            "app:é",
            "bad_host.example/app:1",
            &format!("app:1@sha512:{}", "a".repeat(128)),
            &format!("app:{}", "a".repeat(129)),
        ] {
            assert!(ImageRef::parse(bad).is_err(), "{bad}");
        }
        assert!(ImageRef::parse(&format!("app:{}", "a".repeat(128))).is_ok());
    }

    #[test]
    fn errors_keep_the_grammar_as_their_cause() {
        let err = ImageRef::parse("GHCR.io/Acme/App:1.0").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid image reference \"GHCR.io/Acme/App:1.0\""
        );
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert!(cause.contains("invalid repository"), "{cause}");
    }
}
