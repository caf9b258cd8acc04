//! Label selectors over policies: kubectl `-l` syntax and Kubernetes
//! `LabelSelector` objects (`matchLabels` / `matchExpressions`), as used by
//! ImageUpdateAutomation `.spec.policySelector`.
//!
//! Both forms are validated as the Kubernetes API server validates them, so
//! a selector that Flux would refuse (its controller stalls with
//! `InvalidPolicySelector`) is an error here too, naming the requirement at
//! fault, instead of a selector that silently selects nothing:
//! * a key is an optional prefix and `/` and a name: the prefix a DNS
//!   subdomain (lowercase, at most 253 characters), the name at most 63
//!   characters of `[A-Za-z0-9._-]`, alphanumeric at both ends;
//! * a value is at most 63 characters of the same set, alphanumeric at both
//!   ends, or empty;
//! * `in`/`notin` (`In`/`NotIn`) need at least one value, `Exists` and
//!   `DoesNotExist` take none.
//!
//! Written by hand: the crates that parse Kubernetes selectors come with
//! the whole Kubernetes API type tree, and none validates keys and values.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

/// All requirements must hold (an empty selector selects everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

/// A `LabelSelector` as found in Kubernetes objects.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Each entry is an `Equals` requirement.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values (`In`/`NotIn` only).
    #[serde(default)]
    pub values: Vec<String>,
}

/// An invalid selector: which selector, which requirement, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {selector}: {requirement}: {problem}")]
pub struct SelectorError {
    /// The selector: `selector "EXPRESSION"` for kubectl syntax, or
    /// `LabelSelector` for an object.
    pub selector: String,
    /// The requirement at fault: its text (quoted) in an expression,
    /// `matchLabels "KEY"` or `matchExpressions[N]` in an object.
    pub requirement: String,
    /// What is wrong with it.
    pub problem: SelectorProblem,
}

/// What is wrong with one requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorProblem {
    /// Nothing between two commas, or after the last one.
    #[error("empty requirement")]
    Empty,
    /// The expression cannot be read at this token.
    #[error("found {found}, expected {expected}")]
    Syntax {
        /// What was found (a quoted token, or `the end`).
        found: String,
        /// What could stand there.
        expected: &'static str,
    },
    /// The key is not a valid label key.
    #[error("key {key:?}: {reason}")]
    Key {
        /// The key as written.
        key: String,
        /// Which rule it breaks.
        reason: KeyRule,
    },
    /// A value is not a valid label value.
    #[error("value {value:?}: {reason}")]
    Value {
        /// The value as written.
        value: String,
        /// Which rule it breaks.
        reason: ValueRule,
    },
    /// An operator that label selectors do not have.
    #[error("unknown operator {0:?}: use In, NotIn, Exists or DoesNotExist")]
    Operator(String),
    /// `In`/`NotIn` without values.
    #[error("{0} needs at least one value")]
    ValuesNeeded(String),
    /// `Exists`/`DoesNotExist` with values.
    #[error("{0} takes no values")]
    NoValuesAllowed(String),
}

/// The label key rules (Kubernetes "qualified names").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyRule {
    /// An empty key, or an empty name after the `/`.
    #[error("the name part must not be empty")]
    EmptyName,
    /// More than 63 characters after the prefix.
    #[error("the name part must be at most 63 characters")]
    NameTooLong,
    /// Characters or ends the name part may not have.
    #[error(
        "the name part must consist of alphanumeric characters, '-', '_' or '.', and begin and end with an alphanumeric character"
    )]
    NameCharacters,
    /// `/name` with nothing before the `/`.
    #[error("the prefix before '/' must not be empty")]
    EmptyPrefix,
    /// A prefix longer than a DNS subdomain may be.
    #[error("the prefix must be at most 253 characters")]
    PrefixTooLong,
    /// A prefix that is not a lowercase DNS subdomain.
    #[error(
        "the prefix must be a DNS subdomain: lowercase alphanumeric characters, '-' or '.', each dot-separated part beginning and ending with an alphanumeric character"
    )]
    PrefixCharacters,
    /// More than one `/`.
    #[error("a key has at most one '/'")]
    TooManySlashes,
}

/// The label value rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValueRule {
    /// More than 63 characters.
    #[error("a label value must be at most 63 characters")]
    TooLong,
    /// Characters or ends a value may not have.
    #[error(
        "a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', and begin and end with an alphanumeric character"
    )]
    Characters,
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, the shape of label names and
/// non-empty values.
fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A lowercase RFC 1123 subdomain of at most 253 characters.
fn check_prefix(prefix: &str) -> Result<(), KeyRule> {
    if prefix.is_empty() {
        return Err(KeyRule::EmptyPrefix);
    }
    if prefix.len() > 253 {
        return Err(KeyRule::PrefixTooLong);
    }
    let label_ok = |label: &str| {
        let b = label.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    if prefix.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(KeyRule::PrefixCharacters)
    }
}

/// Validates a label key as Kubernetes does.
///
/// # Errors
/// The [`KeyRule`] the key breaks.
pub(crate) fn validate_key(key: &str) -> Result<(), KeyRule> {
    let name = match key.split_once('/') {
        None => key,
        Some((_, name)) if name.contains('/') => return Err(KeyRule::TooManySlashes),
        Some((prefix, name)) => {
            check_prefix(prefix)?;
            name
        }
    };
    if name.is_empty() {
        Err(KeyRule::EmptyName)
    } else if name.len() > 63 {
        Err(KeyRule::NameTooLong)
    } else if !is_label_token(name) {
        Err(KeyRule::NameCharacters)
    } else {
        Ok(())
    }
}

/// Validates a label value as Kubernetes does (empty is valid).
///
/// # Errors
/// The [`ValueRule`] the value breaks.
pub(crate) fn validate_value(value: &str) -> Result<(), ValueRule> {
    if value.len() > 63 {
        Err(ValueRule::TooLong)
    } else if !value.is_empty() && !is_label_token(value) {
        Err(ValueRule::Characters)
    } else {
        Ok(())
    }
}

fn key_problem(key: &str) -> Result<(), SelectorProblem> {
    validate_key(key).map_err(|reason| SelectorProblem::Key {
        key: key.to_owned(),
        reason,
    })
}

fn value_problem(value: &str) -> Result<(), SelectorProblem> {
    validate_value(value).map_err(|reason| SelectorProblem::Value {
        value: value.to_owned(),
        reason,
    })
}

/// A token of the kubectl selector syntax, with its byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    Not,
    NotEquals,
    Equals,
    DoubleEquals,
    Greater,
    Less,
    Open,
    Close,
    Comma,
    End,
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "'{s}'"),
            Token::Not => f.write_str("'!'"),
            Token::NotEquals => f.write_str("'!='"),
            Token::Equals => f.write_str("'='"),
            Token::DoubleEquals => f.write_str("'=='"),
            Token::Greater => f.write_str("'>'"),
            Token::Less => f.write_str("'<'"),
            Token::Open => f.write_str("'('"),
            Token::Close => f.write_str("')'"),
            Token::Comma => f.write_str("','"),
            Token::End => f.write_str("the end"),
        }
    }
}

/// Splits a kubectl selector into tokens the way the Kubernetes lexer does:
/// space, tab, CR and LF separate, `! != = == > < ( ) ,` are symbols, and
/// any other run of characters is an identifier.
fn tokenize(expr: &str) -> Vec<(Token<'_>, usize)> {
    let is_symbol = |c: char| matches!(c, '!' | '=' | '>' | '<' | '(' | ')' | ',');
    let is_space = |c: char| matches!(c, ' ' | '\t' | '\r' | '\n');
    let mut out = Vec::new();
    let mut chars = expr.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if is_space(c) {
            continue;
        }
        let next_is_eq = chars.peek().is_some_and(|&(_, n)| n == '=');
        let token = match c {
            '!' if next_is_eq => {
                chars.next();
                Token::NotEquals
            }
            '!' => Token::Not,
            '=' if next_is_eq => {
                chars.next();
                Token::DoubleEquals
            }
            '=' => Token::Equals,
            '>' => Token::Greater,
            '<' => Token::Less,
            '(' => Token::Open,
            ')' => Token::Close,
            ',' => Token::Comma,
            _ => {
                let mut end = at + c.len_utf8();
                while let Some(&(i, n)) = chars.peek() {
                    if is_space(n) || is_symbol(n) {
                        break;
                    }
                    end = i + n.len_utf8();
                    chars.next();
                }
                Token::Ident(&expr[at..end])
            }
        };
        out.push((token, at));
    }
    out.push((Token::End, expr.len()));
    out
}

/// Recursive-descent reader over the tokens of one expression.
struct Reader<'a> {
    expr: &'a str,
    tokens: Vec<(Token<'a>, usize)>,
    next: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> &Token<'a> {
        self.tokens.get(self.next).map_or(&Token::End, |(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.tokens
            .get(self.next)
            .map_or(self.expr.len(), |(_, at)| *at)
    }

    fn take(&mut self) -> Token<'a> {
        let token = self.peek().clone();
        if self.next < self.tokens.len() {
            self.next += 1;
        }
        token
    }

    fn syntax(found: &Token<'_>, expected: &'static str) -> SelectorProblem {
        SelectorProblem::Syntax {
            found: found.to_string(),
            expected,
        }
    }

    /// One requirement, from its first token.
    fn requirement(&mut self) -> Result<Requirement, SelectorProblem> {
        let negated = matches!(self.peek(), Token::Not);
        if negated {
            self.take();
        }
        let key = match self.take() {
            Token::Ident(key) => key.to_owned(),
            other => return Err(Self::syntax(&other, "a label key")),
        };
        key_problem(&key)?;
        if negated {
            return Ok(Requirement {
                key,
                op: Op::DoesNotExist,
            });
        }
        let op = match self.peek() {
            Token::End | Token::Comma => {
                return Ok(Requirement {
                    key,
                    op: Op::Exists,
                });
            }
            Token::Equals | Token::DoubleEquals => {
                self.take();
                Op::Equals(self.exact_value()?)
            }
            Token::NotEquals => {
                self.take();
                Op::NotEquals(self.exact_value()?)
            }
            Token::Ident("in") => {
                self.take();
                Op::In(self.values()?)
            }
            Token::Ident("notin") => {
                self.take();
                Op::NotIn(self.values()?)
            }
            other @ (Token::Greater | Token::Less) => {
                return Err(SelectorProblem::Syntax {
                    found: other.to_string(),
                    expected: "one of =, ==, !=, in, notin (numeric comparisons are not supported)",
                });
            }
            other => {
                return Err(Self::syntax(
                    other,
                    "one of =, ==, !=, in, notin, ',' or the end",
                ));
            }
        };
        Ok(Requirement { key, op })
    }

    /// The value after `=`, `==` or `!=`; empty when none follows.
    fn exact_value(&mut self) -> Result<String, SelectorProblem> {
        let value = match self.peek() {
            Token::End | Token::Comma => String::new(),
            Token::Ident(v) => {
                let v = (*v).to_owned();
                self.take();
                v
            }
            other => return Err(Self::syntax(other, "a label value")),
        };
        value_problem(&value)?;
        Ok(value)
    }

    /// `( v1, v2, ... )`; an empty element is the empty value, as in
    /// Kubernetes (`()` is the set holding only `""`).
    fn values(&mut self) -> Result<Vec<String>, SelectorProblem> {
        match self.take() {
            Token::Open => {}
            other => return Err(Self::syntax(&other, "'('")),
        }
        let mut values = Vec::new();
        let mut pending = true;
        loop {
            match self.take() {
                Token::Ident(v) if pending => {
                    value_problem(v)?;
                    values.push(v.to_owned());
                    pending = false;
                }
                Token::Comma => {
                    if pending {
                        values.push(String::new());
                    }
                    pending = true;
                }
                Token::Close => {
                    if pending {
                        values.push(String::new());
                    }
                    break;
                }
                other if pending => {
                    return Err(Self::syntax(&other, "a label value, ',' or ')'"));
                }
                other => return Err(Self::syntax(&other, "',' or ')'")),
            }
        }
        Ok(values)
    }
}

/// The byte range of the top-level comma-separated part of `expr` that
/// contains `offset` (commas inside parentheses do not split).
fn part_around(expr: &str, offset: usize) -> &str {
    let mut start = 0;
    let mut depth = 0usize;
    for (i, c) in expr.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                if i >= offset && i > start {
                    return expr[start..i].trim();
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    expr[start.min(expr.len())..].trim()
}

impl Selector {
    /// Parse kubectl syntax: `a=b,c!=d,e in (x,y),f notin (z),g,!h`. An
    /// empty expression selects everything.
    ///
    /// # Errors
    /// [`SelectorError`] naming the expression and the requirement that
    /// cannot be read or breaks a Kubernetes rule.
    pub fn parse(expr: &str) -> Result<Self, SelectorError> {
        let mut reader = Reader {
            expr,
            tokens: tokenize(expr),
            next: 0,
        };
        let fail = |offset: usize, problem: SelectorProblem| SelectorError {
            selector: format!("selector {expr:?}"),
            requirement: format!("requirement {:?}", part_around(expr, offset)),
            problem,
        };
        let mut requirements = Vec::new();
        if matches!(reader.peek(), Token::End) {
            return Ok(Self { requirements });
        }
        loop {
            let start = reader.offset();
            if matches!(reader.peek(), Token::Comma | Token::End) {
                return Err(SelectorError {
                    selector: format!("selector {expr:?}"),
                    requirement: format!("requirement {}", requirements.len() + 1),
                    problem: SelectorProblem::Empty,
                });
            }
            let requirement = reader.requirement().map_err(|p| fail(start, p))?;
            requirements.push(requirement);
            match reader.take() {
                Token::End => break,
                Token::Comma => {}
                other => {
                    return Err(fail(
                        start,
                        Reader::syntax(&other, "',' or the end of the selector"),
                    ));
                }
            }
        }
        Ok(Self { requirements })
    }

    /// A Kubernetes `LabelSelector` object (`matchLabels`,
    /// `matchExpressions`) given as a parsed YAML or JSON value, as a
    /// functionConfig or an automation's `spec.policySelector` holds it.
    ///
    /// # Errors
    /// A sentence saying what is wrong: not a LabelSelector, or as
    /// [`Selector::from_label_selector`].
    pub fn from_value(value: &serde_json::Value) -> Result<Self, String> {
        let selector: LabelSelector = serde_json::from_value(value.clone())
            .map_err(|e| format!("not a LabelSelector: {e}"))?;
        Self::from_label_selector(&selector).map_err(|e| e.to_string())
    }

    /// Build from a Kubernetes `LabelSelector`, validating it as the API
    /// server does.
    ///
    /// # Errors
    /// [`SelectorError`] naming the `matchLabels` key or `matchExpressions`
    /// entry at fault: an invalid key or value, an unknown operator, `In`
    /// or `NotIn` without values, `Exists` or `DoesNotExist` with values.
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, SelectorError> {
        let fail = |requirement: String, problem: SelectorProblem| SelectorError {
            selector: "LabelSelector".to_owned(),
            requirement,
            problem,
        };
        let mut requirements = Vec::new();
        for (key, value) in &selector.match_labels {
            let which = || format!("matchLabels {key:?}");
            key_problem(key).map_err(|p| fail(which(), p))?;
            value_problem(value).map_err(|p| fail(which(), p))?;
            requirements.push(Requirement {
                key: key.clone(),
                op: Op::Equals(value.clone()),
            });
        }
        for (i, e) in selector.match_expressions.iter().enumerate() {
            let which = || format!("matchExpressions[{i}] (key {:?})", e.key);
            let op = match e.operator.as_str() {
                "In" | "NotIn" if e.values.is_empty() => {
                    return Err(fail(
                        which(),
                        SelectorProblem::ValuesNeeded(e.operator.clone()),
                    ));
                }
                "Exists" | "DoesNotExist" if !e.values.is_empty() => {
                    return Err(fail(
                        which(),
                        SelectorProblem::NoValuesAllowed(e.operator.clone()),
                    ));
                }
                "In" => Op::In(e.values.clone()),
                "NotIn" => Op::NotIn(e.values.clone()),
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => {
                    return Err(fail(which(), SelectorProblem::Operator(other.to_owned())));
                }
            };
            key_problem(&e.key).map_err(|p| fail(which(), p))?;
            for value in &e.values {
                value_problem(value).map_err(|p| fail(which(), p))?;
            }
            requirements.push(Requirement {
                key: e.key.clone(),
                op,
            });
        }
        Ok(Self { requirements })
    }

    /// A label the selector requires, with the values one of which it must hold (its first
    /// `key=value` or `key in (...)` requirement); `None` when every requirement can be met
    /// without a given value. What selectors can be indexed by.
    #[must_use]
    pub fn required_label(&self) -> Option<(&str, Vec<&str>)> {
        self.requirements.iter().find_map(|r| match &r.op {
            Op::Equals(v) => Some((r.key.as_str(), vec![v.as_str()])),
            Op::In(vs) => Some((r.key.as_str(), vs.iter().map(String::as_str).collect())),
            _ => None,
        })
    }

    /// Whether `labels` satisfy every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key);
            match &r.op {
                Op::Equals(v) => value == Some(v),
                Op::NotEquals(v) => value != Some(v),
                Op::In(vs) => value.is_some_and(|x| vs.contains(x)),
                Op::NotIn(vs) => value.is_none_or(|x| !vs.contains(x)),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn kubectl_syntax() {
        let s = Selector::parse("env=prod,tier!=db,app in (web, api),!legacy,team,zone notin (a)")
            .unwrap();
        assert!(s.matches(&labels(&[("env", "prod"), ("app", "web"), ("team", "x")])));
        assert!(!s.matches(&labels(&[
            ("env", "prod"),
            ("app", "web"),
            ("team", "x"),
            ("legacy", "1")
        ])));
        assert!(!s.matches(&labels(&[("env", "prod"), ("app", "db"), ("team", "x")])));
        assert!(!s.matches(&labels(&[
            ("env", "prod"),
            ("app", "web"),
            ("team", "x"),
            ("tier", "db")
        ])));
        assert!(!s.matches(&labels(&[("env", "prod"), ("app", "web")])));
        assert!(!s.matches(&labels(&[
            ("env", "prod"),
            ("app", "web"),
            ("team", "x"),
            ("zone", "a")
        ])));
        assert!(
            Selector::parse("env==prod")
                .unwrap()
                .matches(&labels(&[("env", "prod")]))
        );
        assert!(Selector::parse("").unwrap().matches(&labels(&[])));
        assert!(Selector::parse("  ").unwrap().matches(&labels(&[])));
        assert!(Selector::parse("app.kubernetes.io/name=x").is_ok());
    }

    #[test]
    fn kubectl_spacing_and_empty_values() {
        // Whitespace around operators and inside the parentheses is free.
        let s = Selector::parse(" env = prod , app in(web,api) , ! legacy ").unwrap();
        assert!(s.matches(&labels(&[("env", "prod"), ("app", "api")])));
        // `a=` and `a in (x,)` admit the empty value.
        let s = Selector::parse("a=,b in (x,)").unwrap();
        assert!(s.matches(&labels(&[("a", ""), ("b", "")])));
        assert!(!s.matches(&labels(&[("a", "1"), ("b", "")])));
        // `in` and `notin` are operators only after a key.
        let s = Selector::parse("in=notin").unwrap();
        assert!(s.matches(&labels(&[("in", "notin")])));
    }

    #[test]
    fn bad_selectors_are_errors() {
        for bad in [
            "a=b,",
            "=b",
            "a in x",
            "a in (x",
            "a b",
            "a=b=c",
            ",a",
            "a,,b",
            "!a=b",
            "a in (x y)",
            "a>1",
            "a<1",
            "a!",
            "a=(b)",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }

    /// The label key and value rules of the Kubernetes API, both ways.
    #[test]
    fn keys_and_values_follow_kubernetes() {
        let name63 = "a".repeat(63);
        let prefix253 = format!("{}.{}", "a".repeat(126), "b".repeat(126));
        assert_eq!(prefix253.len(), 253);
        let valid_keys = [
            "a".to_owned(),
            "A_b.c-D9".to_owned(),
            "9".to_owned(),
            name63.clone(),
            "example.com/name".to_owned(),
            "app.kubernetes.io/part-of".to_owned(),
            format!("{prefix253}/{name63}"),
            "1-2.x/y".to_owned(),
        ];
        for key in &valid_keys {
            assert_eq!(validate_key(key), Ok(()), "{key}");
            assert!(Selector::parse(&format!("{key}=v")).is_ok(), "{key}");
        }
        let invalid_keys = [
            (String::new(), KeyRule::EmptyName),
            ("a".repeat(64), KeyRule::NameTooLong),
            ("a".repeat(78), KeyRule::NameTooLong),
            ("-a".to_owned(), KeyRule::NameCharacters),
            ("a-".to_owned(), KeyRule::NameCharacters),
            ("a_".to_owned(), KeyRule::NameCharacters),
            (".a".to_owned(), KeyRule::NameCharacters),
            ("a@b".to_owned(), KeyRule::NameCharacters),
            ("ä".to_owned(), KeyRule::NameCharacters),
            ("/a".to_owned(), KeyRule::EmptyPrefix),
            ("a/".to_owned(), KeyRule::EmptyName),
            ("a/b/c".to_owned(), KeyRule::TooManySlashes),
            ("Example.com/a".to_owned(), KeyRule::PrefixCharacters),
            ("exa_mple.com/a".to_owned(), KeyRule::PrefixCharacters),
            ("-example.com/a".to_owned(), KeyRule::PrefixCharacters),
            ("example..com/a".to_owned(), KeyRule::PrefixCharacters),
            ("example.com./a".to_owned(), KeyRule::PrefixCharacters),
            (format!("{prefix253}x/a"), KeyRule::PrefixTooLong),
        ];
        for (key, rule) in &invalid_keys {
            assert_eq!(validate_key(key), Err(*rule), "{key:?}");
        }
        for value in ["", "a", "A-b_c.9", name63.as_str()] {
            assert_eq!(validate_value(value), Ok(()), "{value:?}");
        }
        for (value, rule) in [
            ("a".repeat(64), ValueRule::TooLong),
            ("-a".to_owned(), ValueRule::Characters),
            ("a.".to_owned(), ValueRule::Characters),
            ("a/b".to_owned(), ValueRule::Characters),
            ("a b".to_owned(), ValueRule::Characters),
        ] {
            assert_eq!(validate_value(&value), Err(rule), "{value:?}");
        }
    }

    #[test]
    fn errors_name_the_selector_and_the_requirement() {
        let long = "a".repeat(78);
        let expr = format!("env=prod,{long}=x");
        let err = Selector::parse(&expr).unwrap_err();
        assert_eq!(err.selector, format!("selector {expr:?}"));
        assert_eq!(err.requirement, format!("requirement \"{long}=x\""));
        assert_eq!(
            err.problem,
            SelectorProblem::Key {
                key: long.clone(),
                reason: KeyRule::NameTooLong
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "invalid selector {expr:?}: requirement \"{long}=x\": key \"{long}\": the name part \
                 must be at most 63 characters"
            )
        );
        let err = Selector::parse("env=prod,tier in (web, -api)").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selector \"env=prod,tier in (web, -api)\": requirement \"tier in (web, -api)\": \
             value \"-api\": a label value must be empty or consist of alphanumeric characters, \
             '-', '_' or '.', and begin and end with an alphanumeric character"
        );
        let err = Selector::parse("a=b,,c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selector \"a=b,,c\": requirement 2: empty requirement"
        );
        let err = Selector::parse("a=b c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selector \"a=b c\": requirement \"a=b c\": found 'c', expected ',' or the end \
             of the selector"
        );
        let err = Selector::parse("a>1").unwrap_err();
        assert!(
            err.to_string()
                .contains("found '>', expected one of =, ==, !=, in, notin"),
            "{err}"
        );
    }

    #[test]
    fn label_selector_objects() {
        let ls = LabelSelector {
            match_labels: labels(&[("a", "1")]),
            match_expressions: vec![LabelSelectorRequirement {
                key: "b".into(),
                operator: "NotIn".into(),
                values: vec!["x".into()],
            }],
        };
        let s = Selector::from_label_selector(&ls).unwrap();
        assert!(s.matches(&labels(&[("a", "1")])));
        assert!(!s.matches(&labels(&[("a", "1"), ("b", "x")])));
        assert!(
            Selector::from_label_selector(&LabelSelector::default())
                .unwrap()
                .matches(&labels(&[]))
        );
    }

    #[test]
    fn label_selector_objects_are_validated() {
        let expression = |key: &str, operator: &str, values: &[&str]| LabelSelector {
            match_expressions: vec![
                LabelSelectorRequirement {
                    key: "ok".into(),
                    operator: "Exists".into(),
                    values: vec![],
                },
                LabelSelectorRequirement {
                    key: key.into(),
                    operator: operator.into(),
                    values: values.iter().map(|v| (*v).to_owned()).collect(),
                },
            ],
            ..LabelSelector::default()
        };
        let message =
            |ls: &LabelSelector| Selector::from_label_selector(ls).unwrap_err().to_string();
        assert_eq!(
            message(&expression("b", "Like", &[])),
            "invalid LabelSelector: matchExpressions[1] (key \"b\"): unknown operator \
             \"Like\": use In, NotIn, Exists or DoesNotExist"
        );
        // Operators are case-sensitive, as in Kubernetes.
        assert!(Selector::from_label_selector(&expression("b", "in", &["x"])).is_err());
        assert_eq!(
            message(&expression("b", "In", &[])),
            "invalid LabelSelector: matchExpressions[1] (key \"b\"): In needs at least \
             one value"
        );
        assert_eq!(
            message(&expression("b", "NotIn", &[])),
            "invalid LabelSelector: matchExpressions[1] (key \"b\"): NotIn needs at \
             least one value"
        );
        assert_eq!(
            message(&expression("b", "Exists", &["x"])),
            "invalid LabelSelector: matchExpressions[1] (key \"b\"): Exists takes no \
             values"
        );
        assert!(Selector::from_label_selector(&expression("b", "DoesNotExist", &["x"])).is_err());
        assert_eq!(
            message(&expression("b", "In", &["ok", "not ok"])),
            "invalid LabelSelector: matchExpressions[1] (key \"b\"): value \"not ok\": a \
             label value must be empty or consist of alphanumeric characters, '-', '_' or '.', \
             and begin and end with an alphanumeric character"
        );
        let long = "k".repeat(64);
        assert!(
            message(&expression(&long, "Exists", &[]))
                .contains("the name part must be at most 63 characters")
        );
        let ls = LabelSelector {
            match_labels: labels(&[("team", "a"), ("Bad.Prefix/x", "1")]),
            ..LabelSelector::default()
        };
        assert_eq!(
            message(&ls),
            "invalid LabelSelector: matchLabels \"Bad.Prefix/x\": key \"Bad.Prefix/x\": \
             the prefix must be a DNS subdomain: lowercase alphanumeric characters, '-' or '.', \
             each dot-separated part beginning and ending with an alphanumeric character"
        );
        let ls = LabelSelector {
            match_labels: labels(&[("team", &"v".repeat(64))]),
            ..LabelSelector::default()
        };
        assert!(message(&ls).contains("a label value must be at most 63 characters"));
    }
}
