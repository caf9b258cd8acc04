//! How a new value is written so that it reads back as the same string.
//!
//! The replaced scalar keeps its quote style. A plain scalar stays plain
//! unless the new value would read back differently under YAML 1.1 or YAML
//! 1.2 (a number, a boolean, null, a timestamp) or could not be written plain
//! at all (indicators, `: `, ` #`, flow punctuation inside `[...]`); then it
//! becomes double-quoted. No explicit tags are ever written.

use std::sync::LazyLock;

use granit_parser::ScalarStyle;
use regex::Regex;

/// How a scalar is written in the source, as far as writing a new value in its place goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
}

impl Style {
    /// The quoting a new value keeps for a scalar of the parser's `style` (a block scalar is
    /// never rewritten in place: plain).
    #[must_use]
    pub(crate) fn of(style: ScalarStyle) -> Self {
        match style {
            ScalarStyle::SingleQuoted => Style::SingleQuoted,
            ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
            _ => Style::Plain,
        }
    }
}

/// Render `value` as a scalar in `style` (plain may be upgraded to double
/// quotes, see the module docs).
#[must_use]
pub(crate) fn render(value: &str, style: Style, in_flow: bool) -> String {
    match style {
        Style::Plain if plain_is_safe(value, in_flow) => value.to_owned(),
        Style::SingleQuoted if !value.chars().any(char::is_control) => {
            format!("'{}'", value.replace('\'', "''"))
        }
        _ => double_quoted(value),
    }
}

/// `"..."` with JSON-compatible escapes, which YAML double quotes accept.
#[must_use]
pub(crate) fn double_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || c == '\u{feff}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `value` written plain reads back as the same string in both YAML
/// 1.1 and 1.2 parsers, in block or (if `in_flow`) flow context.
#[must_use]
pub(crate) fn plain_is_safe(value: &str, in_flow: bool) -> bool {
    let Some(first) = value.chars().next() else {
        return false;
    };
    if value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']) {
        return false;
    }
    if value.chars().any(|c| c.is_control() || c == '\u{feff}') {
        return false;
    }
    if matches!(
        first,
        '[' | ']'
            | '{'
            | '}'
            | ','
            | '#'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
    ) {
        return false;
    }
    if matches!(first, '-' | '?' | ':') {
        let second = value[1..].chars().next();
        if second.is_none_or(|c| c == ' ' || (in_flow && matches!(c, ',' | '[' | ']' | '{' | '}')))
        {
            return false;
        }
    }
    if value.starts_with("---") || value.starts_with("...") {
        return false;
    }
    if value.contains(": ") || value.contains(" #") || value.ends_with(':') {
        return false;
    }
    if in_flow && value.contains([',', '[', ']', '{', '}']) {
        return false;
    }
    !resolves_to_non_string(value)
}

/// YAML 1.1 and 1.2 (core schema) implicit types that are not strings.
static NON_STRING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        "^(?:",
        // null
        "~|null|Null|NULL",
        // booleans, 1.2 and 1.1
        "|true|True|TRUE|false|False|FALSE",
        "|y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF",
        // integers: 1.2 decimal/octal/hex, 1.1 binary/octal/decimal/hex/sexagesimal
        "|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+",
        "|[-+]?0b[01_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+",
        "|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        // floats, 1.2
        r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?",
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        // floats, 1.1 (as real 1.1 parsers resolve them)
        r"|[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?",
        r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
        // 1.1 timestamps (a date, optionally with a time)
        r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?",
        // 1.1 merge and value keys
        "|<<|=",
        ")$"
    ))
    .ok()
});

fn resolves_to_non_string(value: &str) -> bool {
    // The pattern is a constant; if it ever failed to compile, quoting
    // everything is the safe answer.
    NON_STRING.as_ref().is_none_or(|re| re.is_match(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_need_quotes_in_plain_style() {
        for v in [
            "1.10",
            "10",
            "1.0",
            "true",
            "yes",
            "on",
            "No",
            "null",
            "~",
            "0x1F",
            "1e3",
            "0o17",
            "012",
            "1_000",
            "1:20",
            ".inf",
            ".NaN",
            "-1.5",
            "+1",
            "2024-01-02",
            "2024-1-2T10:00:00Z",
            "<<",
            "=",
            "",
            " a",
            "a ",
            "a: b",
            "a #b",
            "a:",
            "*x",
            "&x",
            "!x",
            "|x",
            ">x",
            "%x",
            "@x",
            "'x",
            "\"x",
            "`x",
            "#x",
            "[x",
            "{x",
            "- x",
            "-",
            "?",
            ": x",
            "---x",
            "...x",
            "a\nb",
        ] {
            assert!(!plain_is_safe(v, false), "{v:?} should need quotes");
        }
    }

    #[test]
    fn values_that_stay_plain() {
        for v in [
            "1.1.0",
            "v1.2.3",
            "ghcr.io/org/app:1.2.0",
            "nginx",
            "app:10",
            "sha256:abc",
            "1.2.3-rc.1",
            "a#b",
            "a:b",
            "-x",
            "?x",
            ":x",
            "registry:5000/a/b:v1@sha256:0123",
            "20240102",
            "1-2",
            "é",
            "yes-please",
            "0x1G",
        ] {
            if v == "20240102" {
                // A plain integer: needs quotes.
                assert!(!plain_is_safe(v, false));
                continue;
            }
            assert!(plain_is_safe(v, false), "{v:?} should stay plain");
        }
    }

    #[test]
    fn flow_context_quotes_flow_punctuation() {
        assert!(plain_is_safe("a,b", false));
        assert!(!plain_is_safe("a,b", true));
        assert!(!plain_is_safe("a]", true));
        assert!(plain_is_safe("a:1", true));
    }

    #[test]
    fn styles() {
        assert_eq!(render("v1", Style::Plain, false), "v1");
        assert_eq!(render("1.10", Style::Plain, false), "\"1.10\"");
        assert_eq!(render("1.10", Style::SingleQuoted, false), "'1.10'");
        assert_eq!(render("it's", Style::SingleQuoted, false), "'it''s'");
        assert_eq!(
            render("a\"b\\c", Style::DoubleQuoted, false),
            "\"a\\\"b\\\\c\""
        );
        assert_eq!(render("v2", Style::DoubleQuoted, false), "\"v2\"");
        assert_eq!(double_quoted("a\u{1}\nb"), "\"a\\u0001\\nb\"");
    }
}
