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
//! where Flux stays silent; so are JSON-object comments whose key is a
//! near miss of `$imagepolicy` (`$imagePolicy`, `imagepolicy`,
//! `$image-policy`, `$imagepoliy`...).

/// The key that names the policy.
pub(crate) const MARKER_KEY: &str = "$imagepolicy";

/// What a comment is, for the purposes of image automation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comment {
    /// A marker; the payload is the setter (e.g. `flux-system:podinfo:tag`).
    Marker(String),
    /// Mentions `$imagepolicy` (or a near miss of it) but is not a marker,
    /// for this reason.
    LookAlike(String),
    /// Anything else.
    Other,
}

/// Classify the text of one comment: `payload` is the text after the first `#`.
#[must_use]
pub fn classify(payload: &str) -> Comment {
    let body = payload.trim_start_matches('#');
    if !mentions_marker_key(body) {
        return near_miss(body).map_or(Comment::Other, |key| {
            Comment::LookAlike(format!(
                "the key {key:?} must be spelled exactly \"{MARKER_KEY}\""
            ))
        });
    }
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(body) {
        Ok(object) => {
            if !object.values().all(serde_json::Value::is_string) {
                return Comment::LookAlike(
                    "every value of a marker object must be a JSON string".to_owned(),
                );
            }
            match object.get(MARKER_KEY).and_then(serde_json::Value::as_str) {
                Some("") => Comment::LookAlike("the policy name is empty".to_owned()),
                Some(setter) => Comment::Marker(setter.to_owned()),
                None => Comment::LookAlike(match object.keys().find(|k| is_near_miss(k)) {
                    Some(key) => {
                        format!("the key {key:?} must be spelled exactly \"{MARKER_KEY}\"")
                    }
                    None => format!("the key must be spelled exactly \"{MARKER_KEY}\""),
                }),
            }
        }
        Err(_) => Comment::LookAlike(diagnose_invalid(body).to_owned()),
    }
}

/// The key of a JSON-object comment that is a near miss of `$imagepolicy`:
/// the same letters in another case or with `-`, `_` or without `$`, or
/// within two typing slips (Damerau-Levenshtein) of it.
fn near_miss(body: &str) -> Option<String> {
    // Only comments of the shape [`screen`] lets in are diagnosed: files
    // without such a comment are never parsed, so a wider shape here would
    // warn about a comment in one file and stay silent about it in another.
    let inner = body.trim_start_matches(BLANKS).strip_prefix('{')?;
    let first = *inner.trim_start_matches(BLANKS).as_bytes().first()?;
    if !opens_object_key(first) {
        return None;
    }
    // Keys only: the comment need not be valid JSON to be a near miss
    // (`{imagepolicy: ns:p}`), so read `"key"` / `'key'` / `key` before `:`.
    let key = inner.split(':').next()?.trim().trim_matches(['"', '\'']);
    is_near_miss(key).then(|| key.to_owned())
}

/// The blanks [`screen`] skips between `#`, `{` and a key.
const BLANKS: [char; 2] = [' ', '\t'];

/// Whether a key may start with this byte in an object comment: a quote, a
/// letter or `$`.
fn opens_object_key(b: u8) -> bool {
    b == b'"' || b == b'\'' || b.is_ascii_alphabetic() || b == b'$'
}

/// Whether `key` is not `$imagepolicy` but close to it.
fn is_near_miss(key: &str) -> bool {
    let normal: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    key != MARKER_KEY && strsim::osa_distance(&normal, &MARKER_KEY[1..]) <= 2
}

/// Whether `text` contains `$imagepolicy` in any letter case.
#[must_use]
pub fn mentions_marker_key(text: &str) -> bool {
    contains_marker_key(text.as_bytes())
}

/// Byte-level form of [`mentions_marker_key`].
#[must_use]
pub fn contains_marker_key(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'$', bytes).any(|i| {
        bytes
            .get(i + 1..i + MARKER_KEY.len())
            .is_some_and(|rest| rest.eq_ignore_ascii_case(&MARKER_KEY.as_bytes()[1..]))
    })
}

/// Whether a file may hold a marker, or a comment worth a diagnosis: it
/// mentions `$imagepolicy` in any case, or has a comment that opens a
/// JSON-like object (`# {"`, `#{'`, `# {k`), where a misspelt key may hide.
/// Files that fail this are not parsed at all.
#[must_use]
pub fn screen(bytes: &[u8]) -> bool {
    contains_marker_key(bytes) || has_object_comment(bytes)
}

/// A `{` that follows `#` (and blanks) and is followed by a quote or a
/// letter: the shape of `# {"$imagepolicy": ...}` with any key.
fn has_object_comment(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'{', bytes).any(|i| {
        let before = bytes[..i].iter().rev().find(|&&b| b != b' ' && b != b'\t');
        let after = bytes[i + 1..].iter().find(|&&b| b != b' ' && b != b'\t');
        before == Some(&b'#') && after.is_some_and(|&b| opens_object_key(b))
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
            (r#" {"$imagePolicy": "ns:p"}"#, "spelled exactly"),
        ];
        for (text, why) in cases {
            match classify(text) {
                Comment::LookAlike(reason) => assert!(reason.contains(why), "{text}: {reason}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn near_misses_name_the_expected_key() {
        for key in [
            "imagepolicy",
            "$imagepoliy",
            "$image-policy",
            "$image_policy",
            "$imagePolicy",
            "$ImagePolicy",
            "$imagepolcy",
            "$imaegpolicy",
        ] {
            let text = format!(r#" {{"{key}": "ns:p"}}"#);
            match classify(&text) {
                Comment::LookAlike(reason) => assert!(
                    reason.contains(&format!("{key:?}")) && reason.contains("\"$imagepolicy\""),
                    "{text}: {reason}"
                ),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(matches!(
            classify(" {imagepolicy: ns:p}"),
            Comment::LookAlike(_)
        ));
        for other in [
            r#" {"imagePullPolicy": "Always"}"#,
            r#" {"policy": "x"}"#,
            r#" {"image": "x"}"#,
            " {not json at all",
        ] {
            assert_eq!(classify(other), Comment::Other, "{other}");
        }
    }

    /// Found by the `marker` fuzz target: a near miss whose key starts with
    /// `#` was diagnosed, but a file holding it failed the screen, so the
    /// diagnosis depended on the rest of the file.
    #[test]
    fn near_misses_are_diagnosed_only_in_comments_the_screen_lets_in() {
        for payload in [
            r#" {#$imagepolcy": "ns:p:tag"}"#,
            " {{imagepolicy: ns:p}",
            " \u{a0}{\"imagepolicy\": \"ns:p\"}",
            " { 1imagepolicy: ns:p}",
            " {_imagepolicy: ns:p}",
        ] {
            assert_eq!(classify(payload), Comment::Other, "{payload:?}");
            assert!(!screen(format!("a: 1 #{payload}\n").as_bytes()));
        }
        for payload in [" {\t\"imagepolicy\": 1}", "\t{imagepolicy: ns:p}"] {
            assert!(
                matches!(classify(payload), Comment::LookAlike(_)),
                "{payload:?}"
            );
            assert!(screen(format!("a: 1 #{payload}\n").as_bytes()));
        }
    }

    #[test]
    fn screening_lets_object_comments_in() {
        assert!(screen(b"a: 1 # {\"$imagePoliy\": \"ns:p\"}\n"));
        assert!(screen(b"a: 1 #{'imagepolicy': 'ns:p'}\n"));
        assert!(!screen(
            b"a: \"{{ .Values.x }}\"\nb: {c: 1}\n# plain comment\n"
        ));
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
}
