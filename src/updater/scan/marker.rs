//! The `$imagepolicy` comment grammar, exactly as Flux reads it.
//!
//! A marker is a YAML comment whose text, after every leading `#` is removed,
//! is one complete JSON object whose values are all strings and which has the
//! key `$imagepolicy` (spelled exactly so) with a non-empty value. Whitespace
//! allowed by JSON may surround the object and its tokens. The value is used
//! verbatim, without trimming.
//!
//! Comments that mention `$imagepolicy` in any spelling but are not markers
//! are classified as look-alikes with the reason, so the scanner can warn
//! where Flux stays silent.

use std::fmt;

/// The key that names the policy.
pub const MARKER_KEY: &str = "$imagepolicy";

/// What a comment is, for the purposes of image automation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comment {
    /// A marker; the payload is the setter (e.g. `flux-system:podinfo:tag`).
    Marker(String),
    /// Mentions `$imagepolicy` but is not a marker, for this reason.
    LookAlike(&'static str),
    /// Anything else.
    Other,
}

/// Classify the text of one comment: `payload` is the text after the first `#`.
#[must_use]
pub fn classify(payload: &str) -> Comment {
    let body = payload.trim_start_matches('#');
    if !mentions_marker_key(body) {
        return Comment::Other;
    }
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(body) {
        Ok(object) => {
            if !object.values().all(serde_json::Value::is_string) {
                return Comment::LookAlike("every value of a marker object must be a JSON string");
            }
            match object.get(MARKER_KEY).and_then(serde_json::Value::as_str) {
                Some("") => Comment::LookAlike("the policy name is empty"),
                Some(setter) => Comment::Marker(setter.to_owned()),
                None => Comment::LookAlike("the key must be spelled exactly \"$imagepolicy\""),
            }
        }
        Err(_) => Comment::LookAlike(diagnose_invalid(body)),
    }
}

/// Whether `text` contains `$imagepolicy` in any letter case.
#[must_use]
pub fn mentions_marker_key(text: &str) -> bool {
    contains_marker_key(text.as_bytes())
}

/// Byte-level form of [`mentions_marker_key`], used to screen whole files.
#[must_use]
pub fn contains_marker_key(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'$', bytes).any(|i| {
        bytes
            .get(i + 1..i + MARKER_KEY.len())
            .is_some_and(|rest| rest.eq_ignore_ascii_case(&MARKER_KEY.as_bytes()[1..]))
    })
}

fn diagnose_invalid(body: &str) -> &'static str {
    let trimmed = body.trim();
    if trimmed.contains("'$") || trimmed.starts_with("{'") {
        return "single quotes are not JSON: write {\"$imagepolicy\": \"NAMESPACE:NAME\"}";
    }
    if !trimmed.starts_with('{') {
        return "a marker comment must hold only a JSON object, nothing before it";
    }
    let mut values = serde_json::Deserializer::from_str(trimmed).into_iter::<serde_json::Value>();
    if let Some(Ok(_)) = values.next() {
        return "text after the JSON object: a marker comment must hold only the object";
    }
    "not a valid JSON object"
}

/// Which part of the latest image a setter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `NS:NAME`: `name:tag`, plus `@digest` when the policy has one.
    Image,
    /// `NS:NAME:tag`
    Tag,
    /// `NS:NAME:name`
    Name,
    /// `NS:NAME:digest`
    Digest,
}

impl Field {
    #[must_use]
    pub fn suffix(self) -> &'static str {
        match self {
            Field::Image => "",
            Field::Tag => ":tag",
            Field::Name => ":name",
            Field::Digest => ":digest",
        }
    }
}

/// A parsed setter: the policy it names and the field it writes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Setter<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub field: Field,
}

impl<'a> Setter<'a> {
    /// Parse `NS:NAME`, `NS:NAME:tag`, `NS:NAME:name` or `NS:NAME:digest`.
    /// Anything else names no setter (Flux leaves such fields alone).
    #[must_use]
    pub fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.split(':');
        let namespace = parts.next()?;
        let name = parts.next()?;
        let field = match parts.next() {
            None => Field::Image,
            Some("tag") => Field::Tag,
            Some("name") => Field::Name,
            Some("digest") => Field::Digest,
            Some(_) => return None,
        };
        if parts.next().is_some() || namespace.is_empty() || name.is_empty() {
            return None;
        }
        Some(Self {
            namespace,
            name,
            field,
        })
    }
}

impl fmt::Display for Setter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}{}", self.namespace, self.name, self.field.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(s: &str) -> Comment {
        Comment::Marker(s.to_owned())
    }

    #[test]
    fn accepted_variants() {
        for text in [
            r#" {"$imagepolicy": "ns:p"}"#,
            r#"{"$imagepolicy":"ns:p"}"#,
            r#"#   {  "$imagepolicy" :  "ns:p"  }"#,
            r#" {"$imagepolicy": "ns:p", "note": "x"}"#,
            "\t{\"$imagepolicy\": \"ns:p\"}\t",
            r#" {"note": "x", "$imagepolicy": "ns:p"}"#,
        ] {
            assert_eq!(classify(text), marker("ns:p"), "{text}");
        }
    }

    #[test]
    fn the_value_is_verbatim() {
        assert_eq!(classify(r#" {"$imagepolicy": " ns:p"}"#), marker(" ns:p"));
        assert_eq!(classify(r#" {"$imagepolicy": "ns: p"}"#), marker("ns: p"));
        assert_eq!(
            classify(r#" {"$imagepolicy": "ns:p:tag"}"#),
            marker("ns:p:tag")
        );
    }

    #[test]
    fn look_alikes_say_why() {
        let cases = [
            (r#" {"$imagepolicy": "ns:p"} # keep"#, "text after"),
            (r" {'$imagepolicy': 'ns:p'}", "single quotes"),
            (r#" {"$imagepolicy": "ns:p", "n": 1}"#, "JSON string"),
            (r#" {"$ImagePolicy": "ns:p"}"#, "spelled exactly"),
            (r#" {"$imagepolicy": ""}"#, "empty"),
            (r#" see {"$imagepolicy": "ns:p"}"#, "nothing before"),
            (r#" {"$imagepolicy": "ns:p""#, "not a valid JSON object"),
            (r#" {"$imagepolicy": ["ns:p"]}"#, "JSON string"),
        ];
        for (text, why) in cases {
            match classify(text) {
                Comment::LookAlike(reason) => assert!(reason.contains(why), "{text}: {reason}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn unrelated_comments() {
        assert_eq!(classify(" just a comment"), Comment::Other);
        assert_eq!(classify(r#" {"$ref": "x"}"#), Comment::Other);
        assert_eq!(classify(""), Comment::Other);
    }

    #[test]
    fn screening_is_case_insensitive() {
        assert!(contains_marker_key(b"a # {\"$ImagePolicy\": 1}"));
        assert!(contains_marker_key(b"$imagepolicy"));
        assert!(!contains_marker_key(b"$imagepolic"));
        assert!(!contains_marker_key(b"imagepolicy $"));
    }

    #[test]
    fn setters() {
        let s = Setter::parse("flux-system:podinfo").unwrap();
        assert_eq!(
            (s.namespace, s.name, s.field),
            ("flux-system", "podinfo", Field::Image)
        );
        assert_eq!(Setter::parse("a:b:tag").unwrap().field, Field::Tag);
        assert_eq!(Setter::parse("a:b:name").unwrap().field, Field::Name);
        assert_eq!(Setter::parse("a:b:digest").unwrap().field, Field::Digest);
        for bad in ["a", "a:b:registry", "a:b:tag:digest", ":b", "a:", "a:b:Tag"] {
            assert_eq!(Setter::parse(bad), None, "{bad}");
        }
        assert_eq!(Setter::parse("a:b:tag").unwrap().to_string(), "a:b:tag");
    }
}
