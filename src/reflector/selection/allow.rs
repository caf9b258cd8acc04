//! Argo CD's `allow-tags`: a single match function written as
//! `regexp:<RE2>` or `any`.
//!
//! Semantics kept from Argo CD: the function name is case-insensitive
//! (`RegExp:`, `ANY`), the regex is an **unanchored search** (so
//! `regexp:[a-z]+` accepts `abc123`; anchor with `^…$`), and an empty
//! regex after `regexp:` accepts everything.
//!
//! Difference: Argo CD turns an invalid regex, an unknown function name or a
//! value without a colon into a function that matches nothing, so the image
//! silently never updates. We reject those values when the policy is built,
//! naming the field, because a typo should be an error rather than a quiet
//! "no update".

use regex::Regex;

/// A parsed `allow-tags` value.
#[derive(Debug, Clone)]
pub(crate) enum AllowTags {
    /// `any`: every tag is allowed.
    Any,
    /// `regexp:<re>`: tags in which `re` finds a match are allowed.
    Regexp(Regex),
}

/// Why an `allow-tags` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AllowTagsError {
    /// Neither `any` nor `regexp:…`.
    #[error("expected `regexp:<regex>` or `any`")]
    UnknownFunction,
    /// The regex after `regexp:` does not compile.
    #[error("{0}")]
    Regex(String),
}

impl AllowTags {
    /// Parses an `allow-tags` value.
    ///
    /// # Errors
    /// [`AllowTagsError`] for an unknown function or an invalid regex.
    pub(crate) fn parse(value: &str) -> Result<Self, AllowTagsError> {
        if value.eq_ignore_ascii_case("any") {
            return Ok(Self::Any);
        }
        let (function, argument) = value
            .split_once(':')
            .ok_or(AllowTagsError::UnknownFunction)?;
        if !function.eq_ignore_ascii_case("regexp") {
            return Err(AllowTagsError::UnknownFunction);
        }
        Regex::new(argument)
            .map(Self::Regexp)
            .map_err(|e| AllowTagsError::Regex(e.to_string()))
    }

    /// Whether `tag` is allowed.
    pub(crate) fn allows(&self, tag: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Regexp(re) => re.is_match(tag),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argo_parse_match() {
        assert!(matches!(AllowTags::parse("any"), Ok(AllowTags::Any)));
        assert!(matches!(AllowTags::parse("ANY"), Ok(AllowTags::Any)));
        assert!(matches!(
            AllowTags::parse("regexp:[aA-zZ]"),
            Ok(AllowTags::Regexp(_))
        ));
        assert!(matches!(
            AllowTags::parse("RegExp:[aA-zZ]"),
            Ok(AllowTags::Regexp(_))
        ));
        assert_eq!(
            AllowTags::parse("other").err(),
            Some(AllowTagsError::UnknownFunction)
        );
        assert_eq!(
            AllowTags::parse("not-regexp:a-z").err(),
            Some(AllowTagsError::UnknownFunction)
        );
        assert!(matches!(
            AllowTags::parse("regexp:[aA-zZ"),
            Err(AllowTagsError::Regex(_))
        ));
    }

    #[test]
    fn regexp_is_unanchored_search() {
        let allow = AllowTags::parse("regexp:[a-z]+").unwrap();
        assert!(allow.allows("lemon"));
        assert!(!allow.allows("31337"));
        assert!(allow.allows("abc123"), "unanchored");
        let anchored = AllowTags::parse("regexp:^[a-z]+$").unwrap();
        assert!(!anchored.allows("abc123"));
        let empty = AllowTags::parse("regexp:").unwrap();
        assert!(empty.allows("") && empty.allows("x"));
        let suffix = AllowTags::parse("regexp:-alpine$").unwrap();
        assert!(suffix.allows("6.2.1-alpine") && !suffix.allows("6.2.1-alpine3.18"));
    }
}
