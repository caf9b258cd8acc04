//! `filterTags`: pick tags with a regex and, optionally, rank them by a value
//! extracted from the tag rather than by the whole tag (Flux ImagePolicy
//! `spec.filterTags{pattern, extract}`).
//!
//! The extraction matches Flux exactly: an **unanchored** search, the
//! **first** (leftmost) match only, and a result that is the expansion of the
//! `extract` template alone (not the tag with a substitution applied). The
//! template syntax is Go's `Regexp.ExpandString`: `$1`, `${1}`, `$name`,
//! `${name}`, `$$` for a literal dollar, the longest-name rule (`$1x` is the
//! group named `1x`), unknown groups expand to nothing. The `regex` crate's
//! `Captures::expand` implements that same syntax, so we use it directly.

use regex::Regex;

/// A compiled `filterTags`.
#[derive(Debug, Clone)]
pub struct TagFilter {
    pattern: Regex,
    extract: String,
}

impl TagFilter {
    /// Compiles `pattern`. An empty pattern matches every tag.
    ///
    /// # Errors
    /// The regex error, for the caller to wrap with the field name.
    pub fn new(pattern: &str, extract: &str) -> Result<Self, regex::Error> {
        Ok(Self {
            pattern: Regex::new(pattern)?,
            extract: extract.to_owned(),
        })
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        self.pattern.as_str()
    }

    /// The extract template as written (empty: the key is the whole tag).
    pub fn extract(&self) -> &str {
        &self.extract
    }

    /// The ranking key of `tag`, or `None` when the pattern does not match.
    pub fn key(&self, tag: &str) -> Option<String> {
        if self.extract.is_empty() {
            return self.pattern.is_match(tag).then(|| tag.to_owned());
        }
        let caps = self.pattern.captures(tag)?;
        let mut out = String::new();
        caps.expand(&self.extract, &mut out);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pattern: &str, extract: &str, tags: &[&str]) -> Vec<String> {
        let filter = TagFilter::new(pattern, extract).unwrap();
        let mut out: Vec<String> = tags.iter().filter_map(|t| filter.key(t)).collect();
        out.sort();
        out.dedup();
        out
    }

    /// Flux `TestRegexFilter`: the result is the sorted, de-duplicated key set.
    #[test]
    fn flux_regex_filter() {
        let ver = ["ver1", "ver2", "ver3", "rel1"];
        let debug = [
            "123-123.123.abcd123-debug",
            "123-123.123.abcd123",
            "123-123.123.abcd456-debug",
            "123-123.123.abcd456",
        ];
        let table: &[(&str, &str, &[&str], &[&str])] = &[
            ("", "", &["a"], &["a"]),
            ("^ver", "", &ver, &["ver1", "ver2", "ver3"]),
            (r"ver(\d+)", "$1", &ver, &["1", "2", "3"]),
            (
                r"^(123-[0-9]+\.[0-9]+\.[a-z0-9]+-debug)",
                "",
                &debug,
                &["123-123.123.abcd123-debug", "123-123.123.abcd456-debug"],
            ),
            (
                r"^(?P<tag>123-[0-9]+\.[0-9]+\.[a-z0-9]+[^-debug])",
                "$tag",
                &debug,
                &["123-123.123.abcd123", "123-123.123.abcd456"],
            ),
            (
                r"^(?P<tag>123-[0-9]+\.[0-9]+\.[a-z0-9]+$)",
                "$tag",
                &debug,
                &["123-123.123.abcd123", "123-123.123.abcd456"],
            ),
        ];
        for (pattern, extract, tags, want) in table {
            assert_eq!(keys(pattern, extract, tags), *want, "{pattern} / {extract}");
        }
    }

    #[test]
    fn go_expand_syntax() {
        let f = |extract: &str| {
            TagFilter::new(r"^(?P<ts>\d+)-(?P<sha>[a-f0-9]+)$", extract)
                .unwrap()
                .key("1700000000-abc123")
        };
        assert_eq!(f("$ts").as_deref(), Some("1700000000"));
        assert_eq!(f("${ts}x").as_deref(), Some("1700000000x"));
        assert_eq!(f("$tsx").as_deref(), Some(""), "longest-name rule");
        assert_eq!(f("$1.$2").as_deref(), Some("1700000000.abc123"));
        assert_eq!(f("${2}_$1").as_deref(), Some("abc123_1700000000"));
        assert_eq!(f("$$$1").as_deref(), Some("$1700000000"));
        assert_eq!(f("$9").as_deref(), Some(""), "unknown group is empty");
        assert_eq!(f("static").as_deref(), Some("static"));
    }

    #[test]
    fn first_match_only_and_unanchored() {
        let filter = TagFilter::new(r"(\d+)", "$1").unwrap();
        assert_eq!(filter.key("build-12-rev-34").as_deref(), Some("12"));
        let filter = TagFilter::new("rc", "").unwrap();
        assert_eq!(filter.key("1.0.0-rc.1").as_deref(), Some("1.0.0-rc.1"));
        assert_eq!(filter.key("1.0.0"), None);
    }

    #[test]
    fn invalid_pattern_is_an_error() {
        assert!(TagFilter::new("[=", "").is_err());
        assert!(TagFilter::new("(?P<x", "$x").is_err());
    }
}
