//! The KRM function: one ResourceList in, the same text out with only the
//! marked scalars replaced and `results` set.
//!
//! A front end over [`crate::operation`]:
//!
//! ```text
//! stdin ─> operation::run_list (the list read once: layout, markers,
//!          kind, functionConfig ─> config::read ─> UpdateConfig ─> run)
//!       ─> results (kpt) ─> one splice of the input text ─> stdout
//! ```
//!
//! Pure unless the functionConfig says `fetch: true` (then the operation
//! asks the registries of the definitions among the items): [`process`]
//! takes the input text and returns the edits to splice into it (or, when
//! the input is not a ResourceList at all, a new one). `cli::krm` does the
//! stdin/stdout IO.

pub(crate) mod config;
mod deploy;

use crate::operation::{self, ListError, ListRun, NotAList, Reading};
use crate::render::kpt::{self as results, KptResult, Severity};
use crate::updater::source::resource_list::{ListLayout, ShapeError};
use crate::yaml::edit::list::RootMap;
use crate::yaml::edit::{self, Edit, EditError};

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
                let mut pieces = edit::pieces(text, edits)?;
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
    let read = |value: &serde_json::Value| {
        if deploy::asks(value) {
            Ok(Reading::Other)
        } else {
            config::read(value).map(Reading::Update)
        }
    };
    let (mut layout, result) = match operation::run_list(text, read) {
        ListRun::NotAList(not) => return fresh(&not_a_list(not)),
        ListRun::Read { layout, result } => (layout, result),
        // `deploy` as a generator (its own functionConfig kind).
        ListRun::Other {
            layout,
            function_config,
        } => return deploy::answer(text, &layout, &function_config),
    };
    // Where the items lie is no longer needed (a large list has many).
    layout.items = None;
    match result {
        Ok(mut outcome) => {
            let results = results::results(&outcome);
            let failed = results.iter().any(|r| r.severity == Severity::Error);
            let mut edits = std::mem::take(&mut outcome.list_edits);
            // The results hold what the output needs: free the rest before
            // rendering them (a large list has many changes).
            drop(outcome);
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
        Err(e) => failed(text, &layout, error_messages(e)),
    }
}

/// How the function's input is named in messages.
const STDIN: &str = "stdin";

/// The message of the one error result answering an input that is not a
/// list.
fn not_a_list(not: NotAList) -> String {
    match not {
        NotAList::Shape(ShapeError::NotYaml(e)) => {
            // The scanner always knows where it stopped.
            let at = e
                .position
                .map(|p| format!(":{}:{}", p.line, p.column))
                .unwrap_or_default();
            format!("{STDIN}{at}: input is not valid YAML: {}", e.message)
        }
        NotAList::Shape(e) => e.to_string(),
        NotAList::Kind { api_version, kind } => {
            let what = if kind.is_empty() {
                "an object without kind".to_owned()
            } else {
                format!("{api_version}/{kind}")
            };
            format!(
                "input is {what}: expected a ResourceList (config.kubernetes.io/v1, v1beta1 or v1alpha1) or a v1 List"
            )
        }
    }
}

/// The messages of the error results of a run over a list.
fn error_messages(e: ListError) -> Vec<String> {
    match e {
        ListError::ItemsNotASequence => vec!["items is not a sequence".to_owned()],
        ListError::FunctionConfig(e) => vec![format!("functionConfig is not valid YAML: {e}")],
        ListError::Config(errors) => results::messages(&errors),
        ListError::Run(e) => results::error_messages(&e),
    }
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
/// existing one in place, or goes after the last root entry ([`RootMap::set`]).
fn results_edit(text: &str, layout: &ListLayout, results: &[KptResult]) -> Edit {
    let entry = if layout.flow {
        results::render_flow(results)
    } else {
        let indent = " ".repeat(layout.indent);
        results::render_block(results, &indent, layout.line_ending)
    };
    RootMap {
        text,
        flow: layout.flow,
        entries_end: layout.entries_end,
    }
    .set(layout.results.as_ref(), &entry)
}

#[cfg(test)]
mod tests;
