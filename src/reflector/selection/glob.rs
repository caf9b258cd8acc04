//! Glob patterns for Argo CD's `ignore-tags`.
//!
//! Argo CD matches ignore-tags with Go's `filepath.Match`: a whole-string
//! match where `*` is any run of characters, `?` is one character, `[...]`
//! is a class (`[^...]` negated, `a-z` ranges) and `\` escapes the next
//! character. We implement that directly instead of translating to a regex,
//! because the translation would need its own escaping rules and an extra
//! compiled automaton per pattern for no gain on strings this short.
//!
//! `filepath.Match` never lets `*`, `?` or a class match `/`; tags cannot
//! contain `/`, so that rule has no effect and is not implemented.
//!
//! Difference from Argo CD: a malformed pattern (unclosed `[`, trailing `\`)
//! is rejected when the policy is built, where Argo silently treats it as
//! matching nothing.

/// A validated glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    source: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyOne,
    AnyRun,
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

/// Why a glob pattern is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed glob: {0}")]
pub(crate) struct GlobError(&'static str);

impl Glob {
    /// Parses and validates `pattern`.
    ///
    /// # Errors
    /// [`GlobError`] for an unclosed or empty class, a bad range or a trailing
    /// backslash.
    pub(crate) fn new(pattern: &str) -> Result<Self, GlobError> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => {
                    if tokens.last() != Some(&Token::AnyRun) {
                        tokens.push(Token::AnyRun);
                    }
                }
                '?' => tokens.push(Token::AnyOne),
                '\\' => tokens.push(Token::Literal(
                    chars.next().ok_or(GlobError("trailing backslash"))?,
                )),
                '[' => {
                    let negated = chars.next_if_eq(&'^').is_some();
                    let mut items = Vec::new();
                    let mut closed = false;
                    while let Some(c) = chars.next() {
                        if c == ']' && !items.is_empty() {
                            closed = true;
                            break;
                        }
                        // Go requires `-` and `]` inside a class to be escaped.
                        if c == ']' || c == '-' {
                            return Err(GlobError("unescaped ']' or '-' in class"));
                        }
                        let lo = if c == '\\' {
                            chars.next().ok_or(GlobError("trailing backslash"))?
                        } else {
                            c
                        };
                        let hi = if chars.next_if_eq(&'-').is_some() {
                            match chars.next() {
                                Some('\\') => {
                                    chars.next().ok_or(GlobError("trailing backslash"))?
                                }
                                Some(']' | '-') | None => {
                                    return Err(GlobError("unfinished range in class"));
                                }
                                Some(h) => h,
                            }
                        } else {
                            lo
                        };
                        if hi < lo {
                            return Err(GlobError("reversed range in class"));
                        }
                        items.push((lo, hi));
                    }
                    if !closed {
                        return Err(GlobError("unclosed or empty character class"));
                    }
                    tokens.push(Token::Class { negated, items });
                }
                c => tokens.push(Token::Literal(c)),
            }
        }
        Ok(Self {
            source: pattern.to_owned(),
            tokens,
        })
    }

    /// Whether the whole of `text` matches.
    pub(crate) fn matches(&self, text: &str) -> bool {
        // Classic two-pointer wildcard matching with one backtrack point:
        // linear in practice, no recursion. `t` and the backtrack point are
        // byte offsets of characters of `text`, read in place (a pattern is
        // matched against many texts: Argo CD Image Updater's `namePattern`s
        // against every Application, ignore-tags against every tag).
        let (mut t, mut p) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while let Some(c) = text[t..].chars().next() {
            match self.tokens.get(p) {
                Some(Token::AnyRun) => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(tok) if single_matches(tok, c) => {
                    p += 1;
                    t += c.len_utf8();
                }
                _ => match star {
                    Some((sp, st)) => {
                        let next = st + text[st..].chars().next().map_or(1, char::len_utf8);
                        p = sp + 1;
                        t = next;
                        star = Some((sp, next));
                    }
                    None => return false,
                },
            }
        }
        self.tokens[p..].iter().all(|tok| *tok == Token::AnyRun)
    }

    /// The text the pattern matches when it has no wildcard and no class (it then matches that
    /// text alone).
    #[must_use]
    pub(crate) fn literal(&self) -> Option<String> {
        self.tokens.iter().map(Token::literal).collect()
    }

    /// The literal characters every matching text starts with (`""` when the pattern starts with
    /// a wildcard or a class).
    #[must_use]
    pub(crate) fn literal_prefix(&self) -> String {
        self.tokens.iter().map_while(Token::literal).collect()
    }

    /// The literal characters every matching text ends with (`""` when the pattern ends with a
    /// wildcard or a class).
    #[must_use]
    pub(crate) fn literal_suffix(&self) -> String {
        let mut suffix: Vec<char> = self.tokens.iter().rev().map_while(Token::literal).collect();
        suffix.reverse();
        suffix.into_iter().collect()
    }
}

impl Token {
    /// The character a literal stands for.
    fn literal(&self) -> Option<char> {
        match self {
            Token::Literal(c) => Some(*c),
            _ => None,
        }
    }
}

fn single_matches(tok: &Token, c: char) -> bool {
    match tok {
        Token::Literal(l) => *l == c,
        Token::AnyOne => true,
        Token::AnyRun => false,
        Token::Class { negated, items } => {
            items.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        Glob::new(pattern).unwrap().matches(text)
    }

    #[test]
    fn argo_ignore_list_examples() {
        // Argo §5.2: {tag1,tag2} ignores tag1 and tag2 but not tag3;
        // {tag?, foo} ignores tag1 and foo, not tag10.
        assert!(m("tag1", "tag1") && m("tag2", "tag2") && !m("tag1", "tag3"));
        assert!(m("tag?", "tag1") && m("foo", "foo") && !m("tag?", "tag10"));
    }

    #[test]
    fn glob_table() {
        let table: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "anything-1.2", true),
            ("*-dev", "1.2.3-dev", true),
            ("*-dev", "1.2.3-dev2", false),
            ("*-dev*", "1.2.3-dev2", true),
            ("v1.*", "v1.2", true),
            ("v1.*", "v10.2", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("a*a*a", "aaa", true),
            ("a*a*a", "aa", false),
            ("[0-9]*", "1abc", true),
            ("[0-9]*", "abc", false),
            ("[^0-9]*", "abc", true),
            ("[^0-9]*", "1abc", false),
            ("[a-cx]", "x", true),
            ("[a-cx]", "d", false),
            ("\\*", "*", true),
            ("\\*", "a", false),
            ("[\\]]", "]", true),
            ("?", "é", true),
            ("rc?", "rc", false),
            ("", "", true),
            ("", "a", false),
        ];
        for &(pattern, text, want) in table {
            assert_eq!(m(pattern, text), want, "{pattern:?} vs {text:?}");
        }
    }

    proptest::proptest! {
        /// The matcher agrees with the obvious anchored-regex translation.
        #[test]
        fn agrees_with_regex_translation(pattern in "[ab*?]{0,6}", text in "[ab]{0,8}") {
            let translated: String = pattern
                .chars()
                .map(|c| match c {
                    '*' => ".*".to_owned(),
                    '?' => ".".to_owned(),
                    c => c.to_string(),
                })
                .collect();
            let re = regex::Regex::new(&format!("^{translated}$")).unwrap();
            proptest::prop_assert_eq!(m(&pattern, &text), re.is_match(&text));
        }
    }

    #[test]
    fn literal_parts() {
        let g = |p: &str| Glob::new(p).unwrap();
        assert_eq!(g("shop").literal().as_deref(), Some("shop"));
        assert_eq!(g("sh\\*p").literal().as_deref(), Some("sh*p"));
        assert_eq!(g("shop-*").literal(), None);
        assert_eq!(g("shop-*-eu").literal_prefix(), "shop-");
        assert_eq!(g("shop-*-eu").literal_suffix(), "-eu");
        assert_eq!(g("[a-z]op?").literal_prefix(), "");
        assert_eq!(g("[a-z]op?").literal_suffix(), "");
        assert_eq!(g("é*ü").literal_prefix(), "é");
        assert_eq!(g("é*ü").literal_suffix(), "ü");
    }

    #[test]
    fn multibyte_texts_backtrack_by_characters() {
        assert!(m("*ü", "éüü"));
        assert!(m("?*?", "éü"));
        assert!(!m("?*?", "é"));
        assert!(m("a*é*z", "aééz"));
    }

    #[test]
    fn malformed_patterns_are_rejected() {
        for bad in [
            "[", "[]", "[a-", "[z-a]", "abc\\", "[^", "[]a]", "[-a]", "[a-]",
        ] {
            assert!(Glob::new(bad).is_err(), "{bad:?}");
        }
    }
}
