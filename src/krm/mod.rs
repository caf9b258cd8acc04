//! The KRM function: one ResourceList in, the same text out with only the
//! marked scalars replaced and `results` set.
//!
//! A front end over [`crate::operation`]:
//!
//! ```text
//! stdin ─> updater::source::resource_list (where items, functionConfig and
//!          results lie) and updater::scan (markers), side by side
//!       ─> config: functionConfig ─> UpdateConfig
//!       ─> operation::run (ImagePolicies and definitions among the items)
//!       ─> results (kpt) ─> one splice of the input text ─> stdout
//! ```
//!
//! Pure unless the functionConfig says `fetch: true` (then the operation
//! asks the registries of the definitions among the items): [`process`]
//! takes the input text and returns the edits to splice into it (or, when
//! the input is not a ResourceList at all, a new one). `cli::krm` does the
//! stdin/stdout IO.

pub(crate) mod config;

use serde_json::Value;

use crate::operation::{self, Input};
use crate::render::kpt::{self as results, KptResult, Severity};
use crate::updater::rewrite::{self, Edit, EditError};
use crate::updater::scan::{self, Layout};
use crate::updater::source::resource_list::{ListLayout, ShapeError, parse_slice, read_layout};

/// ResourceList apiVersions accepted (and answered with).
pub(crate) const RESOURCE_LIST_VERSIONS: [&str; 3] = [
    "config.kubernetes.io/v1",
    "config.kubernetes.io/v1beta1",
    "config.kubernetes.io/v1alpha1",
];

/// What to write on stdout.
#[derive(Debug, Clone)]
pub enum Output<'a> {
    /// `prefix` (the input's byte-order mark, or nothing), then the rest of
    /// the input text with these edits spliced in.
    Spliced {
        prefix: &'a str,
        text: &'a str,
        edits: Vec<Edit>,
    },
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
            Output::Spliced {
                prefix,
                text,
                edits,
            } => {
                let mut pieces = rewrite::pieces(text, edits)?;
                if !prefix.is_empty() {
                    pieces.insert(0, prefix);
                }
                Ok(pieces)
            }
            Output::Fresh(s) => Ok(vec![s.as_str()]),
        }
    }
}

/// What the function answers: its output, its results, and whether it
/// failed.
#[derive(Debug, Clone)]
pub struct Response<'a> {
    pub output: Output<'a>,
    pub results: Vec<KptResult>,
    /// Whether the run failed (some result is an error): exit 1.
    pub failed: bool,
}

/// Run the function on the ResourceList `text`. A UTF-8 byte-order mark
/// at its start is kept at the start of the output; the rest is processed
/// as if it were not there (offsets, indentation, the `results` entry).
#[must_use]
pub fn process(text: &str) -> Response<'_> {
    const BOM: &str = "\u{FEFF}";
    match text.strip_prefix(BOM) {
        Some(rest) => {
            let mut response = process_text(rest);
            if let Output::Spliced { prefix, .. } = &mut response.output {
                *prefix = &text[..BOM.len()];
            }
            response
        }
        None => process_text(text),
    }
}

fn process_text(text: &str) -> Response<'_> {
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
                "{STDIN}:{}:{}: input is not valid YAML: {message}",
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
            let at = crate::text::position_of(text, e.offset);
            return failed(
                text,
                &layout,
                vec![format!(
                    "{STDIN}:{}:{}: input is not valid YAML: {}",
                    at.line, at.column, e.message
                )],
            );
        }
    };
    match run(text, &layout, found) {
        Ok((results, edits)) => {
            let failed = results.iter().any(|r| r.severity == Severity::Error);
            let mut edits = edits;
            edits.push(results_edit(text, &layout, &results));
            Response {
                output: Output::Spliced {
                    prefix: "",
                    text,
                    edits,
                },
                results,
                failed,
            }
        }
        Err(errors) => failed(text, &layout, errors),
    }
}

/// How the function's input is named in messages.
const STDIN: &str = "stdin";

fn internal_scan_error() -> scan::ParseError {
    scan::ParseError {
        offset: 0,
        message: "internal error: the scanner stopped".to_owned(),
    }
}

/// The results and the field edits of a run, or the messages of the errors
/// that stop it.
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
    let config = config::read(&function_config).map_err(|errors| results::messages(&errors))?;
    let outcome = operation::run(
        &config,
        Input::ResourceList {
            text,
            layout,
            scan: found,
        },
    )
    .map_err(|e| results::error_messages(&e))?;
    Ok((results::results(&outcome), outcome.list_edits))
}

/// The input with its `results` replaced by `errors`, unchanged otherwise.
fn failed<'a>(text: &'a str, layout: &ListLayout, errors: Vec<String>) -> Response<'a> {
    let results: Vec<KptResult> = errors
        .into_iter()
        .map(|e| KptResult::new(Severity::Error, e))
        .collect();
    let edits = vec![results_edit(text, layout, &results)];
    Response {
        output: Output::Spliced {
            prefix: "",
            text,
            edits,
        },
        results,
        failed: true,
    }
}

/// The response to an input that is not UTF-8 text.
#[must_use]
pub fn not_utf8(message: &str) -> Response<'static> {
    fresh(message)
}

/// The response to an input that could not be read at all (too large, a
/// bad setting): a new ResourceList that carries the error.
#[must_use]
pub(crate) fn unreadable(message: &str) -> Response<'static> {
    fresh(message)
}

/// A new, empty ResourceList that carries one error.
fn fresh(error: &str) -> Response<'static> {
    let results = vec![KptResult::new(Severity::Error, error)];
    let mut text =
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n".to_owned();
    text.push_str(&results::render_block(&results, "", "\n"));
    Response {
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
            return Edit::new(range.clone(), entry);
        }
        let at = layout.entries_end;
        let empty = text[..at].trim_end().ends_with('{');
        return Edit::new(at..at, if empty { entry } else { format!(", {entry}") });
    }
    let indent = " ".repeat(layout.indent);
    let block = results::render_block(results, &indent, layout.line_ending);
    if let Some(range) = &layout.results {
        let start = line_start_if_blank_before(text, range.start);
        return Edit::new(start..after_line(text, range.end), block);
    }
    let at = after_line(text, layout.entries_end);
    let replacement = if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        format!("{}{block}", layout.line_ending)
    } else {
        block
    };
    Edit::new(at..at, replacement)
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
