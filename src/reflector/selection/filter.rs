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
//! `Captures::expand` implements that same syntax; we parse the template
//! once per policy with the same rules instead of calling it per tag, which
//! lets capture storage be reused across 100,000 tags (a property test pins
//! the two to identical output).

use regex::{CaptureLocations, Regex};

/// A compiled `filterTags`.
#[derive(Debug, Clone)]
pub(crate) struct TagFilter {
    pattern: Regex,
    extract: String,
    template: Vec<Piece>,
}

/// One piece of a parsed `extract` template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    /// A capture group by index; references to groups that do not exist
    /// are dropped at parse time, since they expand to nothing.
    Group(usize),
}

impl TagFilter {
    /// Compiles `pattern`. An empty pattern matches every tag.
    ///
    /// # Errors
    /// The regex error, for the caller to wrap with the field name.
    pub(crate) fn new(pattern: &str, extract: &str) -> Result<Self, regex::Error> {
        let pattern = Regex::new(pattern)?;
        let template = parse_template(extract, &pattern);
        Ok(Self {
            pattern,
            extract: extract.to_owned(),
            template,
        })
    }

    /// The extract template as written (empty: the key is the whole tag).
    pub(crate) fn extract(&self) -> &str {
        &self.extract
    }

    /// Whether the pattern finds a match in `tag` (no key is built).
    pub(crate) fn is_match(&self, tag: &str) -> bool {
        self.pattern.is_match(tag)
    }

    /// Reusable capture storage for [`TagFilter::key_with`].
    pub(crate) fn locations(&self) -> CaptureLocations {
        self.pattern.capture_locations()
    }

    /// The ranking key of `tag`, or `None` when the pattern does not match.
    #[cfg(test)]
    pub(crate) fn key(&self, tag: &str) -> Option<String> {
        self.key_with(&mut self.locations(), tag)
    }

    /// As `TagFilter::key` (a test helper), reusing `locs` (from [`TagFilter::locations`])
    /// so that ranking many tags does not allocate capture storage per tag.
    pub(crate) fn key_with(&self, locs: &mut CaptureLocations, tag: &str) -> Option<String> {
        if self.extract.is_empty() {
            return self.pattern.is_match(tag).then(|| tag.to_owned());
        }
        self.pattern.captures_read(locs, tag)?;
        let mut out = String::new();
        for piece in &self.template {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Group(index) => {
                    if let Some((start, end)) = locs.get(*index) {
                        out.push_str(&tag[start..end]);
                    }
                }
            }
        }
        Some(out)
    }
}

/// Parses an extract template once, resolving group names against
/// `pattern`. The syntax and its corner cases are those of the `regex`
/// crate's `Captures::expand` (itself Go's `Regexp.ExpandString` rules):
/// `$$` is a literal `$`; `$name` takes the longest run of `[0-9A-Za-z_]`;
/// `${name}` takes anything up to `}`; a name that parses as a number is a
/// group index; a `$` that starts no reference is literal. A property test
/// checks this against `Captures::expand` on random templates.
fn parse_template(template: &str, pattern: &Regex) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = template;
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    while let Some(dollar) = rest.find('$') {
        literal.push_str(&rest[..dollar]);
        rest = &rest[dollar..];
        let bytes = rest.as_bytes();
        if bytes.get(1) == Some(&b'$') {
            literal.push('$');
            rest = &rest[2..];
            continue;
        }
        let reference = if bytes.get(1) == Some(&b'{') {
            rest[2..]
                .find('}')
                .map(|close| (&rest[2..2 + close], 2 + close + 1))
        } else {
            let len = bytes[1..].iter().take_while(|&&b| valid(b)).count();
            (len > 0).then(|| (&rest[1..1 + len], 1 + len))
        };
        match reference {
            None => {
                literal.push('$');
                rest = &rest[1..];
            }
            Some((name, consumed)) => {
                rest = &rest[consumed..];
                let index = match name.parse::<usize>() {
                    Ok(i) => Some(i),
                    Err(_) => pattern.capture_names().position(|n| n == Some(name)),
                };
                if let Some(index) = index.filter(|i| *i < pattern.captures_len()) {
                    if !literal.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Group(index));
                }
            }
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    pieces
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

    proptest::proptest! {
        /// Our pre-parsed template expands exactly like `Captures::expand`.
        #[test]
        fn template_matches_regex_expand(template in r"([a-z.\-]|\$|\{|\}|1|0|9|ts|sha|_){0,12}", tag in "[0-9]{1,4}-[a-f]{1,4}(-x)?") {
            let re = Regex::new(r"^(?P<ts>\d+)-(?P<sha>[a-f]+)(-x)?").unwrap();
            let filter = TagFilter::new(re.as_str(), &template).unwrap();
            let want = re.captures(&tag).map(|caps| {
                let mut out = String::new();
                caps.expand(&template, &mut out);
                out
            });
            let got = filter.key(&tag);
            if template.is_empty() {
                proptest::prop_assert_eq!(got.as_deref(), Some(tag.as_str()));
            } else {
                proptest::prop_assert_eq!(got, want);
            }
        }
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
