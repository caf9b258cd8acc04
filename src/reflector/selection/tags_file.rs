//! The `--tags-file` format: a tag list written by hand or exported from a
//! registry, so policies can be tried and tested without network access.
//!
//! ```text
//! # comments and blank lines are ignored
//! 1.4.2
//! 1.5.0-rc.1      2024-05-01T10:00:00Z
//! latest<TAB>2024-05-02T08:30:00.5+02:00
//! ```
//!
//! One tag per line, optionally followed by whitespace (tabs or spaces) and
//! the image's creation time in RFC 3339. The time is what newest-build
//! ranks by; other strategies ignore it. A line starting with `#` (after
//! leading whitespace) is a comment. Tags must be valid OCI tags
//! (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`), so a typo such as a pasted
//! `image:tag` is reported with its line number instead of silently never
//! matching.

use super::select::TagInfo;
use image_update_registry::time::Timestamp;

/// A line of a tags file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct TagsFileError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Whether `tag` is a valid OCI distribution tag (the registry client's one grammar).
pub fn is_valid_tag(tag: &str) -> bool {
    image_update_registry::reference::valid_tag(tag)
}

/// Parses a tags file (see the module docs for the format).
///
/// # Errors
/// [`TagsFileError`] with the line number for an invalid tag, an invalid
/// time, or more than two fields on a line.
pub fn parse_tags_file(text: &str) -> Result<Vec<TagInfo>, TagsFileError> {
    let mut out = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |reason: String| TagsFileError {
            line: index + 1,
            reason,
        };
        let mut fields = line.split_whitespace();
        let tag = fields.next().unwrap_or_default();
        if !is_valid_tag(tag) {
            return Err(err(format!("'{tag}' is not a valid tag")));
        }
        let created = fields
            .next()
            .map(|t| Timestamp::parse_rfc3339(t).map_err(|e| err(e.to_string())))
            .transpose()?;
        if let Some(extra) = fields.next() {
            return Err(err(format!(
                "unexpected '{extra}': expected a tag and an optional RFC 3339 time"
            )));
        }
        out.push(TagInfo {
            tag: tag.to_owned(),
            created,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_times_comments() {
        let text = "# exported 2024-05-03\n\n1.4.2\r\n  1.5.0-rc.1   2024-05-01T10:00:00Z\nlatest\t2024-05-02T08:30:00.5+02:00\n   # indented comment\n";
        let tags = parse_tags_file(text).unwrap();
        assert_eq!(tags.len(), 3);
        assert_eq!(tags[0], TagInfo::new("1.4.2"));
        assert_eq!(tags[1].tag, "1.5.0-rc.1");
        assert_eq!(
            tags[1].created.map(|t| t.to_string()).as_deref(),
            Some("2024-05-01T10:00:00Z")
        );
        assert_eq!(
            tags[2].created.map(|t| t.to_string()).as_deref(),
            Some("2024-05-02T06:30:00.5Z")
        );
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse_tags_file("ok\nimage:tag\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.to_string(), "line 2: 'image:tag' is not a valid tag");
        let err = parse_tags_file("a 2024-01-01\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(
            err.to_string()
                .contains("invalid RFC 3339 time '2024-01-01'"),
            "{err}"
        );
        let err = parse_tags_file("\n\na 2024-01-01T00:00:00Z extra\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(parse_tags_file("-leading-dash").is_err());
        assert!(parse_tags_file(&"a".repeat(129)).is_err());
        assert!(parse_tags_file(&"a".repeat(128)).is_ok());
    }

    #[test]
    fn empty_file_is_empty_list() {
        assert_eq!(parse_tags_file("").unwrap(), vec![]);
        assert_eq!(parse_tags_file("# only a comment\n\n").unwrap(), vec![]);
    }
}
