//! The KRM function: one ResourceList in, the same text out with only the
//! marked scalars replaced and `results` set.
//!
//! ```text
//! stdin ─> source::resource_list (where items, functionConfig, results lie)
//!       ─> config (functionConfig kind) + ImagePolicies among the items
//!       ─> PolicyTable ─> plan::plan_edits (only items under the path)
//!       ─> report::kpt results ─> one splice of the input text ─> stdout
//! ```
//!
//! Pure unless the functionConfig says `fetch: true` (then
//! [`crate::reflector`] asks the registries of the definitions among the
//! items): [`process`] takes the input text and returns the edits to splice
//! into it (or, when the input is not a ResourceList at all, a new one).
//! `commands::function` does the stdin/stdout IO.

pub mod config;
pub mod results;

use std::collections::BTreeSet;

use serde_json::Value;

use self::config::{FnConfig, Mode};
use self::results::{FieldRef, KptResult, Severity};
use crate::policies::PolicyTable;
use crate::policies::image_policy::{FLUX_IMAGE_GROUP, image_policy};
use crate::reflector::definitions::is_policy_definition;
use crate::reflector::{self, Document, may_define};
use crate::updater::plan::{self, Planned};
use crate::updater::rewrite::{self, Edit, EditError};
use crate::updater::scan::{self, Layout, ObjectInfo};
use crate::updater::source::resource_list::{ListLayout, ShapeError, parse_slice, read_layout};

/// ResourceList apiVersions accepted (and answered with).
pub const RESOURCE_LIST_VERSIONS: [&str; 3] = [
    "config.kubernetes.io/v1",
    "config.kubernetes.io/v1beta1",
    "config.kubernetes.io/v1alpha1",
];

/// What to write on stdout.
#[derive(Debug, Clone)]
pub enum Output<'a> {
    /// The input text with these edits spliced in.
    Spliced { text: &'a str, edits: Vec<Edit> },
    /// A new ResourceList (the input could not be read as one).
    Fresh(String),
}

impl Output<'_> {
    /// The output text in pieces, to write one after the other.
    ///
    /// # Errors
    /// Only if edits overlap, which would be a bug.
    pub fn pieces(&mut self) -> Result<Vec<&str>, EditError> {
        match self {
            Output::Spliced { text, edits } => rewrite::pieces(text, edits),
            Output::Fresh(s) => Ok(vec![s.as_str()]),
        }
    }
}

/// The outcome of one run.
#[derive(Debug, Clone)]
pub struct Outcome<'a> {
    pub output: Output<'a>,
    pub results: Vec<KptResult>,
    /// Whether the run failed (some result is an error): exit 1.
    pub failed: bool,
}

/// Run the function on the ResourceList `text`.
#[must_use]
pub fn process(text: &str) -> Outcome<'_> {
    // The two passes over the text (the list's layout, the markers) are
    // independent: run them side by side; parsing is most of the run time.
    let (layout, found) = std::thread::scope(|scope| {
        let scanning = std::thread::Builder::new()
            .name("scan".to_owned())
            .spawn_scoped(scope, || scan::scan(text, Layout::ResourceList));
        let layout = read_layout(text);
        let found = match scanning {
            Ok(handle) => handle.join().unwrap_or_else(|_| Err(internal_scan_error())),
            // No thread to be had: scan here, after the layout.
            Err(_) => scan::scan(text, Layout::ResourceList),
        };
        (layout, found)
    });
    let layout = match layout {
        Ok(layout) => layout,
        Err(ShapeError::NotYaml { offset, message }) => {
            let at = crate::text::position_of(text, offset);
            return fresh(&format!(
                "input is not valid YAML: line {}, column {}: {message}",
                at.line, at.column
            ));
        }
        Err(e) => return fresh(&e.to_string()),
    };
    let api_version = layout.api_version.as_deref().unwrap_or("");
    let kind = layout.kind.as_deref().unwrap_or("");
    let accepted = match kind {
        "ResourceList" => RESOURCE_LIST_VERSIONS.contains(&api_version),
        "List" => api_version == "v1",
        _ => false,
    };
    if !accepted {
        let what = if kind.is_empty() {
            "an object without kind".to_owned()
        } else {
            format!("{api_version}/{kind}")
        };
        return fresh(&format!(
            "input is {what}: expected a ResourceList (config.kubernetes.io/v1, v1beta1 or v1alpha1) or a v1 List"
        ));
    }
    if layout.items_not_a_sequence {
        return failed(text, &layout, vec!["items is not a sequence".to_owned()]);
    }
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            return failed(
                text,
                &layout,
                vec![format!("input is not valid YAML: {}", e.message)],
            );
        }
    };
    match run(text, &layout, found) {
        Ok((results, edits)) => {
            let failed = results.iter().any(|r| r.severity == Severity::Error);
            let mut edits = edits;
            edits.push(results_edit(text, &layout, &results));
            Outcome {
                output: Output::Spliced { text, edits },
                results,
                failed,
            }
        }
        Err(errors) => failed(text, &layout, errors),
    }
}

/// The results and the field edits of a run, or the errors that stop it.
fn internal_scan_error() -> scan::ParseError {
    scan::ParseError {
        offset: 0,
        message: "internal error: the scanner stopped".to_owned(),
    }
}

fn run(
    text: &str,
    layout: &ListLayout,
    found: scan::Scan,
) -> Result<(Vec<KptResult>, Vec<Edit>), Vec<String>> {
    let function_config = match &layout.function_config {
        Some(range) => parse_slice(text, range.clone())
            .map_err(|e| vec![format!("functionConfig is not valid YAML: {e}")])?,
        None => Value::Null,
    };
    let config = config::read(&function_config)?;
    let mut table = policy_table(text, layout, &config, &found.objects)?;
    if config.fetch && !config.suspended {
        fetch_into(text, layout, &config, &mut table)?;
    }
    if config.suspended {
        let message = format!("{} is suspended: nothing updated", config.name);
        return Ok((vec![KptResult::new(Severity::Info, message)], Vec::new()));
    }
    let planned = plan::plan_edits(text, found, &table, |object: &ObjectInfo| {
        config.path.as_deref().is_none_or(|base| {
            object
                .annotations
                .path
                .as_deref()
                .is_some_and(|p| config::is_under(base, p))
        })
    });
    let results = kpt_results(&planned, config.mode);
    let edits = if config.mode == Mode::Apply {
        planned.edits
    } else {
        Vec::new()
    };
    Ok((results, edits))
}

/// The policies of the config, and the ImagePolicies among the items that
/// the config lets in.
fn policy_table(
    text: &str,
    layout: &ListLayout,
    config: &FnConfig,
    objects: &[ObjectInfo],
) -> Result<PolicyTable, Vec<String>> {
    let mut table = PolicyTable::new();
    let mut errors = Vec::new();
    for (key, latest, source) in &config.policies {
        if let Err(e) = table.insert(key.clone(), Some(latest.clone()), source) {
            errors.push(e.to_string());
        }
    }
    let items = layout.items.as_deref().unwrap_or(&[]);
    for object in objects {
        let is_policy = object.id.kind == "ImagePolicy"
            && object.id.api_version.split('/').next() == Some(FLUX_IMAGE_GROUP);
        let Some(range) = object.item.and_then(|i| items.get(i)).filter(|_| is_policy) else {
            continue;
        };
        let place = object.annotations.path.as_deref().unwrap_or("the items");
        let policy = parse_slice(text, range.clone())
            .map_err(|e| format!("{place}: {e}"))
            .and_then(|value| {
                let spec_present = is_policy_definition(&value);
                image_policy(&value)
                    .map(|policy| ItemPolicy {
                        policy,
                        spec_present,
                    })
                    .map_err(|e| format!("{place}: {}", e.message))
            });
        let policy = match policy {
            Ok(p) if config.fetch && p.spec_present => continue,
            Ok(p) => p.policy,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if config
            .namespace
            .as_ref()
            .is_some_and(|ns| *ns != policy.key.namespace)
            || config
                .selector
                .as_ref()
                .is_some_and(|s| !s.matches(&policy.labels))
        {
            continue;
        }
        let source = format!(
            "ImagePolicy {}/{} in {place}",
            policy.key.namespace, policy.key.name
        );
        if let Err(e) = table.insert(policy.key, policy.latest, &source) {
            errors.push(e.to_string());
        }
    }
    if errors.is_empty() {
        Ok(table)
    } else {
        Err(errors)
    }
}

struct ItemPolicy {
    policy: crate::policies::image_policy::SuppliedPolicy,
    /// It has a spec: with `fetch`, a definition rather than a result.
    spec_present: bool,
}

/// `fetch: true`: resolve the definitions among the items (screened by
/// substring, then parsed) against their registries and add the results.
/// Any failure stops the run with error results and no edits.
fn fetch_into(
    text: &str,
    layout: &ListLayout,
    config: &FnConfig,
    table: &mut PolicyTable,
) -> Result<(), Vec<String>> {
    let items = layout.items.as_deref().unwrap_or(&[]);
    let mut documents = Vec::new();
    let mut errors = Vec::new();
    for (i, range) in items.iter().enumerate() {
        if !text.get(range.clone()).is_some_and(may_define) {
            continue;
        }
        match parse_slice(text, range.clone()) {
            Ok(value) => {
                let origin = [
                    "internal.config.kubernetes.io/path",
                    "config.kubernetes.io/path",
                ]
                .iter()
                .find_map(|a| {
                    value
                        .get("metadata")
                        .and_then(|m| m.get("annotations"))
                        .and_then(|m| m.get(*a))
                        .and_then(Value::as_str)
                })
                .map_or_else(|| format!("items[{i}]"), str::to_owned);
                documents.push(Document {
                    value,
                    origin,
                    dir: None,
                });
            }
            Err(e) => errors.push(format!("items[{i}]: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let definitions: Vec<_> = reflector::collect(&documents)?
        .into_iter()
        .filter(|d| {
            config
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == d.key.namespace)
                && config
                    .selector
                    .as_ref()
                    .is_none_or(|s| s.matches(&d.labels))
        })
        .collect();
    let settings = reflector::client_settings(None, None, None).map_err(|e| vec![e.to_string()])?;
    let resolved = reflector::resolve(&definitions, &settings)?;
    reflector::insert_all(table, &resolved).map_err(|e| vec![e.to_string()])
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The summary, one result per change, one per warning.
fn kpt_results(planned: &Planned, mode: Mode) -> Vec<KptResult> {
    let resources: BTreeSet<usize> = planned.changes.iter().map(|c| c.object).collect();
    let verb = if mode == Mode::Apply {
        "updated"
    } else {
        "would update"
    };
    let summary = format!(
        "{verb} {} in {}; {}",
        plural(planned.changes.len(), "field", "fields"),
        plural(resources.len(), "resource", "resources"),
        plural(planned.warnings.len(), "warning", "warnings"),
    );
    let pending_is_error = mode == Mode::Check && !planned.changes.is_empty();
    let change_severity = if pending_is_error {
        Severity::Error
    } else {
        Severity::Info
    };
    let mut out = vec![KptResult::new(change_severity, summary)];
    for change in &planned.changes {
        let object = planned.objects.get(change.object);
        let old = if change.old_value.is_empty() {
            "\"\""
        } else {
            change.old_value.as_str()
        };
        out.push(KptResult {
            message: format!("{old} -> {} ({})", change.new_value, change.setter),
            severity: change_severity,
            resource: object.map(|o| o.id.clone()),
            field: Some(FieldRef {
                path: change.field_path.clone(),
                current_value: Some(change.old_value.clone()),
                proposed_value: Some(change.new_value.clone()),
            }),
            file: object.map(|o| o.annotations.clone()),
            tags: vec![("setter".to_owned(), change.setter.clone())],
        });
    }
    for warning in &planned.warnings {
        let object = warning.object.and_then(|i| planned.objects.get(i));
        out.push(KptResult {
            message: warning.message.clone(),
            severity: Severity::Warning,
            resource: object.map(|o| o.id.clone()),
            field: warning.field_path.as_ref().map(|path| FieldRef {
                path: path.clone(),
                current_value: None,
                proposed_value: None,
            }),
            file: object.map(|o| o.annotations.clone()),
            tags: Vec::new(),
        });
    }
    out
}

/// The input with its `results` replaced by `errors`, unchanged otherwise.
fn failed<'a>(text: &'a str, layout: &ListLayout, errors: Vec<String>) -> Outcome<'a> {
    let results: Vec<KptResult> = errors
        .into_iter()
        .map(|e| KptResult::new(Severity::Error, e))
        .collect();
    let edits = vec![results_edit(text, layout, &results)];
    Outcome {
        output: Output::Spliced { text, edits },
        results,
        failed: true,
    }
}

/// The outcome for an input that is not UTF-8 text.
#[must_use]
pub fn not_utf8(message: &str) -> Outcome<'static> {
    fresh(message)
}

/// A new, empty ResourceList that carries one error.
fn fresh(error: &str) -> Outcome<'static> {
    let results = vec![KptResult::new(Severity::Error, error)];
    let mut text =
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n".to_owned();
    text.push_str(&results::render_block(&results, "", "\n"));
    Outcome {
        output: Output::Fresh(text),
        results,
        failed: true,
    }
}

/// The edit that sets the root mapping's `results` entry: it replaces an
/// existing one in place, or goes after the last root entry.
fn results_edit(text: &str, layout: &ListLayout, results: &[KptResult]) -> Edit {
    if layout.flow {
        let entry = results::render_flow(results);
        if let Some(range) = &layout.results {
            return Edit {
                range: range.clone(),
                replacement: entry,
            };
        }
        let at = layout.entries_end;
        let empty = text[..at].trim_end().ends_with('{');
        return Edit {
            range: at..at,
            replacement: if empty { entry } else { format!(", {entry}") },
        };
    }
    let indent = " ".repeat(layout.indent);
    let block = results::render_block(results, &indent, layout.line_ending);
    if let Some(range) = &layout.results {
        let start = line_start_if_blank_before(text, range.start);
        return Edit {
            range: start..after_line(text, range.end),
            replacement: block,
        };
    }
    let at = after_line(text, layout.entries_end);
    let replacement = if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        format!("{}{block}", layout.line_ending)
    } else {
        block
    };
    Edit {
        range: at..at,
        replacement,
    }
}

/// The start of `offset`'s line when only spaces precede it there.
fn line_start_if_blank_before(text: &str, offset: usize) -> usize {
    let before = &text.as_bytes()[..offset];
    let blank = before.iter().rev().take_while(|&&b| b != b'\n').count();
    if before[offset - blank..].iter().all(|&b| b == b' ') {
        offset - blank
    } else {
        offset
    }
}

/// Just past the end of the line `offset` is on (after its `\n`), or
/// `offset` itself when it already starts a line.
fn after_line(text: &str, offset: usize) -> usize {
    if offset == 0 || text.as_bytes().get(offset - 1) == Some(&b'\n') {
        return offset;
    }
    memchr::memchr(b'\n', &text.as_bytes()[offset..]).map_or(text.len(), |i| offset + i + 1)
}

#[cfg(test)]
mod tests;
