//! Text from the input as a terminal, a log or a web page shows it: the one
//! escaping of every value a run did not write itself (object names, paths,
//! policy keys, image references, tags from a registry, annotation values,
//! template output, error messages quoting any of these).
//!
//! A value is shown as it is, except for the characters that would act on
//! whatever displays it instead of being shown:
//!
//! | characters | shown as |
//! |---|---|
//! | tab, line feed, carriage return, NUL | `\t`, `\n`, `\r`, `\0` |
//! | the other C0 controls and DEL (U+0000-U+001F, U+007F) | `\x1b`, `\x7f`, ... |
//! | the C1 controls (U+0080-U+009F) | `\u{85}`, `\u{9b}`, ... |
//! | bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) | `\u{202e}`, ... |
//! | the line and paragraph separators (U+2028, U+2029) | `\u{2028}`, `\u{2029}` |
//!
//! Every other character, in every script, is shown as it is; a backslash
//! too, so the escaping is for reading, not to be undone. With line breaks
//! escaped, a value cannot start a line of its own: a forged `::error`
//! workflow command, a fake `error:` line. A value that opens a line (a path
//! before `:line:col`) could still start with `::` itself: [`line_start`]
//! shows it as `./::...`, the same file.
//!
//! JSON keeps the exact values: [`json`] writes the same characters as
//! JSON's own `\uXXXX` escapes, which every reader turns back into them.
//!
//! This module uses nothing else of the crate, so that every layer's
//! renderers can (its layer in `tests/architecture.rs` is 0).

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// Whether `c` is shown escaped: a control character (C0, DEL, C1), a
/// bidirectional embedding, override or isolate, or a line or paragraph
/// separator.
#[must_use]
pub(crate) fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'
        )
}

/// `text` with every character [`escaped`] says to escape written as an
/// escape (`\n`, `\x1b`, `\u{202e}`); borrowed when there is none.
#[must_use]
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let _ = write!(out, "{}", Shown(text));
    Cow::Owned(out)
}

/// A value displayed escaped, as [`escape`] writes it, for `format!`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown<'a>(pub &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(escaped) {
            f.write_str(&rest[..at])?;
            let Some(c) = rest[at..].chars().next() else {
                break;
            };
            match c {
                '\t' => f.write_str("\\t")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\0' => f.write_str("\\0")?,
                '\u{1}'..='\u{1f}' | '\u{7f}' => write!(f, "\\x{:02x}", u32::from(c))?,
                _ => write!(f, "\\u{{{:x}}}", u32::from(c))?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// [`escape`] for a value that opens a line (a path before `:line:col`):
/// one that would start with `::` (after blanks, which the GitHub runner
/// skips before a workflow command) is shown as `./` and itself, the same
/// relative path, so that no line of output is read as a command.
#[must_use]
pub(crate) fn line_start(text: &str) -> Cow<'_, str> {
    let shown = escape(text);
    if shown.trim_start().starts_with("::") {
        Cow::Owned(format!("./{shown}"))
    } else {
        shown
    }
}

/// JSON text (as serde_json writes it) with the characters [`escaped`]
/// says to escape that JSON leaves raw (DEL, the C1 controls, the
/// bidirectional controls, the line and paragraph separators), and U+FFFE
/// and U+FFFF, which YAML refuses raw, written as `\uXXXX`: the same
/// values for every reader, shown safely when the text reaches a terminal
/// or a log, and readable by the YAML reader that reads saved reports.
/// They can only stand inside strings (JSON's syntax is ASCII), so
/// replacing them anywhere is an escape inside a string.
#[must_use]
pub(crate) fn json(text: String) -> String {
    let raw = |c: char| (escaped(c) && c >= '\u{7f}') || matches!(c, '\u{fffe}' | '\u{ffff}');
    if !text.contains(raw) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if raw(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    // (Named from the crate: this module's layer is below its parent's.)
    use crate::escape::{Cow, Shown, escape, escaped, json, line_start};

    #[test]
    fn controls_and_bidi_characters_are_shown_escaped() {
        assert_eq!(
            escape("web\n::error file=x::forged"),
            "web\\n::error file=x::forged"
        );
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\x1b[2Jb");
        assert_eq!(escape("nul\0"), "nul\\0");
        assert_eq!(escape("tab\tcr\r"), "tab\\tcr\\r");
        assert_eq!(escape("\u{7}\u{8}\u{c}\u{7f}"), "\\x07\\x08\\x0c\\x7f");
        assert_eq!(
            escape("\u{80}\u{85}\u{9b}\u{9f}"),
            "\\u{80}\\u{85}\\u{9b}\\u{9f}"
        );
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2066}', '\u{2069}',
        ] {
            assert_eq!(escape(&c.to_string()), format!("\\u{{{:x}}}", u32::from(c)));
        }
        assert_eq!(escape("a\u{2028}b\u{2029}"), "a\\u{2028}b\\u{2029}");
    }

    #[test]
    fn ordinary_text_is_borrowed_as_it_is() {
        for text in [
            "",
            "ghcr.io/acme/web:1.2.3@sha256:abc",
            "héllo wörld ñ 日本語 עברית العربية 🚀",
            "a\\nb \\x1b back\\slash",
            "\u{a0}\u{200b}\u{200e}\u{200f}\u{feff}\u{a0}",
        ] {
            assert!(
                matches!(escape(text), Cow::Borrowed(t) if t == text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn shown_writes_what_escape_returns() {
        let text = "x\u{1b}é\n\u{202e}\u{2067}end\u{0}";
        assert_eq!(Shown(text).to_string(), escape(text));
        assert_eq!(format!("[{}]", Shown("plain")), "[plain]");
    }

    #[test]
    fn escaped_text_has_no_character_left_to_escape() {
        let every: String = (0..=0x30ff_u32).filter_map(char::from_u32).collect();
        let shown = escape(&every);
        assert!(!shown.contains(escaped));
        assert!(!shown.contains(['\n', '\r', '\u{1b}', '\0', '\u{202e}']));
        // Escaping twice escapes nothing more.
        assert_eq!(escape(&shown), shown);
    }

    #[test]
    fn a_value_opening_a_line_never_starts_a_workflow_command() {
        assert_eq!(line_start("apps/web.yaml"), "apps/web.yaml");
        assert_eq!(line_start("/abs/::x.yaml"), "/abs/::x.yaml");
        assert_eq!(line_start(":one.yaml"), ":one.yaml");
        assert_eq!(
            line_start("::error file=x::forged.yaml"),
            "./::error file=x::forged.yaml"
        );
        assert_eq!(line_start("  ::warning::x"), "./  ::warning::x");
        assert_eq!(line_start("\u{2003}::x"), "./\u{2003}::x");
        assert_eq!(line_start("\n::error::x"), "\\n::error::x");
    }

    #[test]
    fn json_keeps_the_values_and_escapes_what_it_leaves_raw() {
        let value = "a\u{ffff}b\u{7f}c\u{85}d\u{9f}e\u{fffe}é\u{202e}f\u{2066}\u{2028}\n\u{1b}";
        let text = json(serde_json::to_string(value).unwrap());
        assert_eq!(
            text,
            r#""a\uffffb\u007fc\u0085d\u009fe\ufffeé\u202ef\u2066\u2028\n\u001b""#
        );
        assert!(!text.contains(escaped));
        assert_eq!(serde_json::from_str::<String>(&text).unwrap(), value);
        let plain = serde_json::to_string("plain é").unwrap();
        assert_eq!(json(plain.clone()), plain);
    }
}
