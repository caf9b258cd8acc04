//! Target `marker`: the `$imagepolicy` comment grammar.
//!
//! Input: the text of one comment after its first `#`. Checks that
//! [`classify`] and [`Setter::parse`] never panic, and that they agree with
//! the rest of the scanner's view of a comment:
//! * leading `#`s do not matter (`##  {...}` is the same comment);
//! * a marker's setter is non-empty and the comment mentions the key;
//! * a parsed setter prints back as the text it was parsed from;
//! * a file holding a comment worth a diagnosis (a marker or a look-alike)
//!   passes the [`screen`] that decides which files are parsed at all.

use image_update::api::markers::{
    Comment, Setter, classify, contains_marker_key, mentions_marker_key, screen,
};

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(payload) = std::str::from_utf8(data) else {
        return;
    };
    let comment = classify(payload);
    assert_eq!(
        classify(&format!("#{payload}")),
        comment,
        "a leading `#` changes the meaning of {payload:?}"
    );
    assert_eq!(
        mentions_marker_key(payload),
        contains_marker_key(payload.as_bytes())
    );
    match &comment {
        Comment::Marker(setter) => {
            assert!(!setter.is_empty(), "empty setter from {payload:?}");
            assert!(
                mentions_marker_key(payload),
                "a marker that does not mention the key: {payload:?}"
            );
        }
        Comment::LookAlike(reason) => assert!(!reason.is_empty()),
        Comment::Other => {}
    }
    // Comments never span lines: only a one-line payload is a comment the
    // scanner could hand over.
    if comment != Comment::Other && !payload.contains(['\n', '\r']) {
        for line in [
            format!("image: app:1 #{payload}\n"),
            format!("#{payload}\n- app:1\n"),
        ] {
            assert!(
                screen(line.as_bytes()),
                "{comment:?}, but a file with it does not pass the screen: {line:?}"
            );
        }
    }
    for text in [payload, setter_of(&comment).unwrap_or("")] {
        if let Some(setter) = Setter::parse(text) {
            assert_eq!(setter.to_string(), text, "setter does not print back");
            assert!(!setter.namespace.is_empty() && !setter.name.is_empty());
            assert!(!setter.namespace.contains(':') && !setter.name.contains(':'));
        }
    }
}

fn setter_of(comment: &Comment) -> Option<&str> {
    match comment {
        Comment::Marker(setter) => Some(setter),
        _ => None,
    }
}
