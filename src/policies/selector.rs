//! Label selectors over policies: kubectl `-l` syntax and Kubernetes
//! `LabelSelector` objects (`matchLabels` / `matchExpressions`), as used by
//! ImageUpdateAutomation `.spec.policySelector`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

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

static REQUIREMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:(?P<not>!)\s*(?P<nkey>[A-Za-z0-9][-A-Za-z0-9_./]*)|(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)\s*(?:(?P<op>==|!=|=)\s*(?P<value>[A-Za-z0-9._-]*)|\s+(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*$",
    )
    .ok()
});

/// A `LabelSelector` as found in Kubernetes objects.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

impl Selector {
    /// Parse kubectl syntax: `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    ///
    /// # Errors
    /// Names the requirement that could not be read.
    pub fn parse(expr: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(expr) {
            if part.trim().is_empty() {
                if expr.trim().is_empty() {
                    continue;
                }
                return Err(format!("empty requirement in selector {expr:?}"));
            }
            let caps = REQUIREMENT
                .as_ref()
                .and_then(|re| re.captures(part))
                .ok_or_else(|| {
                    format!(
                        "cannot read selector requirement {:?} in {expr:?}",
                        part.trim()
                    )
                })?;
            let requirement = if let Some(key) = caps.name("nkey") {
                Requirement {
                    key: key.as_str().to_owned(),
                    op: Op::DoesNotExist,
                }
            } else {
                let key = caps.name("key").map_or("", |m| m.as_str()).to_owned();
                let value = caps.name("value").map_or("", |m| m.as_str()).to_owned();
                let values = || -> Vec<String> {
                    caps.name("values")
                        .map_or("", |m| m.as_str())
                        .split(',')
                        .map(|v| v.trim().to_owned())
                        .collect()
                };
                let op = match (
                    caps.name("op").map(|m| m.as_str()),
                    caps.name("set").map(|m| m.as_str()),
                ) {
                    (Some("!="), _) => Op::NotEquals(value),
                    (Some(_), _) => Op::Equals(value),
                    (None, Some("in")) => Op::In(values()),
                    (None, Some(_)) => Op::NotIn(values()),
                    (None, None) => Op::Exists,
                };
                Requirement { key, op }
            };
            requirements.push(requirement);
        }
        Ok(Self { requirements })
    }

    /// Build from a Kubernetes `LabelSelector`.
    ///
    /// # Errors
    /// On an unknown operator, or values where none are allowed.
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, String> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                op: Op::Equals(v.clone()),
            })
            .collect();
        for e in &selector.match_expressions {
            let op = match e.operator.as_str() {
                "In" if !e.values.is_empty() => Op::In(e.values.clone()),
                "NotIn" if !e.values.is_empty() => Op::NotIn(e.values.clone()),
                "Exists" if e.values.is_empty() => Op::Exists,
                "DoesNotExist" if e.values.is_empty() => Op::DoesNotExist,
                "In" | "NotIn" => {
                    return Err(format!(
                        "matchExpressions key {:?}: {} needs values",
                        e.key, e.operator
                    ));
                }
                "Exists" | "DoesNotExist" => {
                    return Err(format!(
                        "matchExpressions key {:?}: {} takes no values",
                        e.key, e.operator
                    ));
                }
                other => {
                    return Err(format!(
                        "matchExpressions key {:?}: unknown operator {other:?}",
                        e.key
                    ));
                }
            };
            requirements.push(Requirement {
                key: e.key.clone(),
                op,
            });
        }
        Ok(Self { requirements })
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

/// Split on commas that are not inside parentheses.
fn split_top_level(expr: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in expr.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&expr[start..]);
    parts
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
        assert!(Selector::parse("app.kubernetes.io/name=x").is_ok());
    }

    #[test]
    fn bad_selectors_are_errors() {
        for bad in ["a=b,", "=b", "a in x", "a in (x", "a b", "a=b=c"] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
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
        let bad = LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "b".into(),
                operator: "Like".into(),
                values: vec![],
            }],
            ..LabelSelector::default()
        };
        assert!(Selector::from_label_selector(&bad).is_err());
    }
}
