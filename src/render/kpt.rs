//! kpt: the run as KRM function results (the kyaml/kpt `Result` schema),
//! and their rendering into a ResourceList's `results` entry.
//!
//! [`results`] makes them from an [`Outcome`]: a summary first (kpt prints
//! the first four results), then, for each fetched policy the supply-chain
//! gate checked, what it found (`fetched ns:name: …, signed by …`, info,
//! tagged `policy`), one result per change, one per warning;
//! [`error_messages`] the messages of the error results of a run that
//! stopped.
//!
//! # Schema
//!
//! ```yaml
//! results:
//! - message: updated 1 field in 1 resource; 0 warnings   # always first
//!   severity: info
//! - message: ghcr.io/org/app:1.0.0 -> ghcr.io/org/app:1.1.0 (flux-system:app)
//!   severity: info
//!   resourceRef: {apiVersion: apps/v1, kind: Deployment, name: app, namespace: default}
//!   field: {path: spec.template.spec.containers[0].image, currentValue: ..., proposedValue: ...}
//!   file: {path: apps/app.yaml, index: 0}
//!   tags: {setter: flux-system:app}
//! ```
//!
//! `namespace`, `field`, `file`, `file.index` and `tags` are left out when
//! unknown. Results are written in block style (kpt writes the style a
//! function emits back to disk), or as JSON inside a flow-style (JSON) list,
//! which keeps that list valid JSON.
//!
//! kpt prints each `message` for a person: the values in it are escaped
//! ([`super::escape()`]; a commit message keeps its line breaks), while
//! `field`, `resourceRef`, `file` and `tags` keep them exact.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::{Summary, Unit, change_text};
use crate::diagnostic::Diagnostic;
use crate::error::{Error, Part};
use crate::escape::{Shown, escape};
use crate::object::ItemAnnotations;
use crate::object::ObjectId;
use crate::outcome::{Mode, Outcome};
use crate::yaml::edit::{Style, quote};

/// How serious a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// The field a result is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRef {
    pub path: String,
    pub current_value: Option<String>,
    pub proposed_value: Option<String>,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KptResult {
    pub message: String,
    pub severity: Severity,
    pub resource: Option<ObjectId>,
    pub field: Option<FieldRef>,
    pub file: Option<ItemAnnotations>,
    /// `(key, value)` pairs, in order.
    pub tags: Vec<(String, String)>,
}

impl KptResult {
    /// A result with only a message.
    #[must_use]
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            severity,
            resource: None,
            field: None,
            file: None,
            tags: Vec::new(),
        }
    }

    /// The result as a JSON value, keys in schema order.
    #[must_use]
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("message".into(), json!(self.message));
        out.insert("severity".into(), json!(self.severity.as_str()));
        if let Some(id) = &self.resource {
            let mut r = Map::new();
            r.insert("apiVersion".into(), json!(id.api_version));
            r.insert("kind".into(), json!(id.kind));
            r.insert("name".into(), json!(id.name));
            if !id.namespace.is_empty() {
                r.insert("namespace".into(), json!(id.namespace));
            }
            out.insert("resourceRef".into(), Value::Object(r));
        }
        if let Some(field) = &self.field {
            let mut f = Map::new();
            f.insert("path".into(), json!(field.path));
            if let Some(v) = &field.current_value {
                f.insert("currentValue".into(), json!(v));
            }
            if let Some(v) = &field.proposed_value {
                f.insert("proposedValue".into(), json!(v));
            }
            out.insert("field".into(), Value::Object(f));
        }
        if let Some(path) = self.file.as_ref().and_then(|f| f.path.as_ref()) {
            let mut f = Map::new();
            f.insert("path".into(), json!(path));
            if let Some(index) = self.file.as_ref().and_then(|f| f.index.as_ref()) {
                // kpt's File.Index is an integer.
                let index = index
                    .parse::<u64>()
                    .map_or_else(|_| json!(index), |n| json!(n));
                f.insert("index".into(), index);
            }
            out.insert("file".into(), Value::Object(f));
        }
        if !self.tags.is_empty() {
            let tags: Map<String, Value> = self
                .tags
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            out.insert("tags".into(), Value::Object(tags));
        }
        Value::Object(out)
    }
}

/// The results of a run: the summary (and, when an automation asks for
/// one, the commit message), one result per change (errors under `check`
/// when there are changes), one per warning.
#[must_use]
pub(crate) fn results(outcome: &Outcome) -> Vec<KptResult> {
    if let Some(what) = &outcome.suspended {
        return vec![KptResult::new(
            Severity::Info,
            format!("{} is suspended: nothing updated", Shown(what)),
        )];
    }
    let counts = Summary::of(outcome);
    let mut summary = format!("{}; {}", counts.changed(Unit::Resources), counts.warned());
    if let Some(message) = &outcome.commit_message {
        summary.push_str("\n\ncommit message:");
        for line in message.split('\n') {
            summary.push('\n');
            summary.push_str(&escape(line));
        }
    }
    let pending_is_error = outcome.mode == Mode::Check && outcome.has_changes();
    let change_severity = if pending_is_error {
        Severity::Error
    } else {
        Severity::Info
    };
    let mut out = vec![KptResult::new(change_severity, summary)];
    // What the supply-chain gate found about each gated policy's image (who
    // signed it, when it was released, what was skipped).
    for r in outcome.fetched.iter().filter(|r| r.gate.is_some()) {
        let mut result = KptResult::new(Severity::Info, super::fetched_line(r));
        result.tags = vec![("policy".to_owned(), r.key.to_string())];
        out.push(result);
    }
    let file = |path: &str, index: Option<&String>| {
        (!path.is_empty() || index.is_some()).then(|| ItemAnnotations {
            path: Some(path.to_owned()).filter(|p| !p.is_empty()),
            index: index.cloned(),
        })
    };
    for change in &outcome.changes {
        out.push(KptResult {
            message: change_text(change, &escape(&change.new_value)),
            severity: change_severity,
            resource: Some(change.object.clone()),
            field: Some(FieldRef {
                path: change.field_path.clone(),
                current_value: Some(change.old_value.clone()),
                proposed_value: Some(change.new_value.clone()),
            }),
            file: file(&change.file, change.index.as_ref()),
            tags: vec![("setter".to_owned(), change.setter.clone())],
        });
    }
    for warning in outcome.warnings() {
        out.push(KptResult {
            message: escape(&warning.full_message()).into_owned(),
            severity: Severity::Warning,
            resource: warning.object.clone(),
            field: warning.field.as_ref().map(|path| FieldRef {
                path: path.clone(),
                current_value: None,
                proposed_value: None,
            }),
            file: warning
                .location
                .as_ref()
                .and_then(|at| file(&at.path, at.index.as_ref())),
            tags: Vec::new(),
        });
    }
    out
}

/// One error result's message per diagnostic: `location: message: causes`.
#[must_use]
pub(crate) fn messages(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics.iter().map(located).collect()
}

fn located(d: &Diagnostic) -> String {
    let message = match &d.location {
        Some(at) if !at.path.is_empty() => format!("{at}: {}", d.full_message()),
        _ => d.full_message(),
    };
    escape(&message).into_owned()
}

/// The messages of the error results of a run that stopped.
#[must_use]
pub(crate) fn error_messages(error: &Error) -> Vec<String> {
    error
        .parts()
        .into_iter()
        .map(|part| match part {
            Part::Summary(summary) => escape(summary).into_owned(),
            Part::Located(d) => located(d),
            Part::Failure(e) => escape(&crate::diagnostic::one_line(e)).into_owned(),
        })
        .collect()
}

/// `results:` and its items in block style, each line starting with
/// `indent` and ending with `eol`.
#[must_use]
pub(crate) fn render_block(results: &[KptResult], indent: &str, eol: &str) -> String {
    // Room for a typical result up front: a large list has thousands, and
    // growing by doubling would copy the text several times.
    let mut out = String::with_capacity(results.len().saturating_mul(576));
    if results.is_empty() {
        let _ = write!(out, "{indent}results: []{eol}");
        return out;
    }
    let _ = write!(out, "{indent}results:{eol}");
    for result in results {
        if let Value::Object(map) = result.to_value() {
            write_block_map(&mut out, &map, indent, true, eol);
        }
    }
    out
}

/// A block mapping; the first key follows `- ` when `item` is set.
fn write_block_map(
    out: &mut String,
    map: &Map<String, Value>,
    indent: &str,
    item: bool,
    eol: &str,
) {
    for (i, (key, value)) in map.iter().enumerate() {
        let lead = match (item, i) {
            (true, 0) => format!("{indent}- "),
            (true, _) => format!("{indent}  "),
            (false, _) => indent.to_owned(),
        };
        match value {
            Value::Object(inner) => {
                let _ = write!(out, "{lead}{key}:{eol}");
                let deeper = if item {
                    format!("{indent}    ")
                } else {
                    format!("{indent}  ")
                };
                write_block_map(out, inner, &deeper, false, eol);
            }
            scalar => {
                let _ = write!(out, "{lead}{key}: {}{eol}", block_scalar(scalar));
            }
        }
    }
}

fn block_scalar(value: &Value) -> String {
    match value {
        Value::String(s) => quote::render(s, Style::Plain, false),
        other => other.to_string(),
    }
}

/// `"results": [...]` as one line of JSON, for flow-style lists.
#[must_use]
pub(crate) fn render_flow(results: &[KptResult]) -> String {
    let values: Vec<Value> = results.iter().map(KptResult::to_value).collect();
    format!("\"results\": {}", Value::Array(values))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change() -> KptResult {
        KptResult {
            message: "a:1 -> a:2 (ns:p)".into(),
            severity: Severity::Info,
            resource: Some(ObjectId {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "app".into(),
                namespace: String::new(),
            }),
            field: Some(FieldRef {
                path: "spec.containers[0].image".into(),
                current_value: Some("a:1".into()),
                proposed_value: Some("a:2".into()),
            }),
            file: Some(ItemAnnotations {
                path: Some("app.yaml".into()),
                index: Some("0".into()),
            }),
            tags: vec![("setter".into(), "ns:p".into())],
        }
    }

    #[test]
    fn block_rendering_reads_back_as_the_values() {
        let results = vec![
            KptResult::new(Severity::Info, "updated 1 field in 1 resource; 0 warnings"),
            change(),
            KptResult::new(Severity::Warning, "quote \"this\": yes\nnext"),
        ];
        let text = format!("x: 1\n{}", render_block(&results, "", "\n"));
        let back = crate::yaml::parse_values(&text).unwrap();
        let expected: Vec<Value> = results.iter().map(KptResult::to_value).collect();
        assert_eq!(back[0]["results"], Value::Array(expected));
        assert!(
            text.contains("\n  resourceRef:\n    apiVersion: apps/v1\n"),
            "{text}"
        );
        assert!(text.contains("    index: 0\n"), "{text}");
    }

    #[test]
    fn indented_crlf_and_flow_rendering() {
        let block = render_block(&[change()], "  ", "\r\n");
        assert!(block.starts_with("  results:\r\n  - message: "), "{block}");
        assert!(block.split_inclusive('\n').all(|l| l.ends_with("\r\n")));
        let flow = render_flow(&[change()]);
        let text = format!("{{\"a\": 1, {flow}}}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["results"][0]["tags"]["setter"], "ns:p");
        assert_eq!(render_block(&[], "", "\n"), "results: []\n");
    }
}
