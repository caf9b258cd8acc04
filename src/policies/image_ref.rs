//! Validation of a policy's latest image, `name:tag[@digest]`.
//!
//! Flux refuses to run when any policy's latest image is not a valid
//! reference (go-containerregistry's weak validation); so do we, before any
//! file is written. Host, tag and digest syntax come from
//! [`image_update_registry::reference`]; the path components are checked here
//! against the distribution grammar, so the message names the component.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use image_update_registry::reference;

/// The latest image of a policy: `status.latestRef` of a Flux ImagePolicy.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct LatestRef {
    pub name: String,
    pub tag: String,
    #[serde(default)]
    pub digest: String,
}

/// Why a reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image reference {reference:?}: {reason}")]
pub struct RefError {
    pub reference: String,
    pub reason: String,
}

/// A path component of the distribution grammar; stricter than the
/// registry's character check, so the message can name the component.
static COMPONENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$").ok());

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

impl LatestRef {
    /// Parse `IMAGE:TAG[@DIGEST]`.
    ///
    /// # Errors
    /// When there is no tag, or any part is invalid.
    pub fn parse(text: &str) -> Result<Self, RefError> {
        let err = |reason: &str| RefError {
            reference: text.to_owned(),
            reason: reason.to_owned(),
        };
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => (rest, digest),
            None => (text, ""),
        };
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let Some(colon) = rest[slash..].rfind(':').map(|i| slash + i) else {
            return Err(err("a tag is required (NAME:TAG[@DIGEST])"));
        };
        let latest = Self {
            name: rest[..colon].to_owned(),
            tag: rest[colon + 1..].to_owned(),
            digest: digest.to_owned(),
        };
        latest.validate().map_err(|e| err(&e.reason))?;
        Ok(latest)
    }

    /// Check name, tag and digest.
    ///
    /// # Errors
    /// Names the first invalid part.
    pub fn validate(&self) -> Result<(), RefError> {
        let err = |reason: String| RefError {
            reference: self.to_string(),
            reason,
        };
        validate_name(&self.name).map_err(err)?;
        if !reference::valid_tag(&self.tag) {
            return Err(err(format!(
                "tag {:?} must be 1 to 128 characters of letters, digits, `_`, `.` and `-`, not starting with `.` or `-`",
                self.tag
            )));
        }
        // go-containerregistry's rule, as `registry::validate_reference`.
        let digest_ok = self.digest.is_empty()
            || (self.digest.starts_with("sha256:") && reference::valid_digest(&self.digest));
        if !digest_ok {
            return Err(err(format!(
                "digest {:?} must be `sha256:` followed by 64 lowercase hex digits",
                self.digest
            )));
        }
        Ok(())
    }

    /// `name:tag`, plus `@digest` when there is one.
    #[must_use]
    pub fn image(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for LatestRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.tag)?;
        if !self.digest.is_empty() {
            write!(f, "@{}", self.digest)?;
        }
        Ok(())
    }
}

/// Validate an image name (no tag, no digest): `[host[:port]/]path`.
///
/// # Errors
/// A sentence saying what is wrong.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the image name is empty".to_owned());
    }
    if name.contains("://") {
        return Err(format!("image name {name:?} must not include a URL scheme"));
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    let first = parts[0];
    if parts.len() > 1 && (first.contains(['.', ':']) || first == "localhost") {
        if !reference::valid_registry(first) {
            return Err(format!(
                "registry host {first:?} is not a valid host[:port]"
            ));
        }
        parts.remove(0);
    }
    let path_len: usize = parts
        .iter()
        .map(|p| p.len() + 1)
        .sum::<usize>()
        .saturating_sub(1);
    if path_len > 255 {
        return Err("the repository path is longer than 255 characters".to_owned());
    }
    for part in parts {
        if !matches(&COMPONENT, part) {
            return Err(format!(
                "repository component {part:?} must be lowercase letters and digits, separated by `.`, `_`, `__` or `-`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be";

    #[test]
    fn parses_name_tag_digest() {
        let r = LatestRef::parse("ghcr.io/org/app:1.2.0").unwrap();
        assert_eq!(
            (r.name.as_str(), r.tag.as_str(), r.digest.as_str()),
            ("ghcr.io/org/app", "1.2.0", "")
        );
        let r = LatestRef::parse(&format!("localhost:5000/a/b:v1@{D}")).unwrap();
        assert_eq!(
            (r.name.as_str(), r.tag.as_str(), r.digest.as_str()),
            ("localhost:5000/a/b", "v1", D)
        );
        assert_eq!(r.image(), format!("localhost:5000/a/b:v1@{D}"));
        assert_eq!(LatestRef::parse("nginx:1.25").unwrap().name, "nginx");
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
            assert!(LatestRef::parse(bad).is_err(), "{bad}");
        }
        assert!(LatestRef::parse(&format!("app:{}", "a".repeat(128))).is_ok());
    }
}
