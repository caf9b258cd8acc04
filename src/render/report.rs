//! The ResultV2 change report: a view of the run's
//! [`crate::outcome::Outcome`], built by [`Report::of`] from its
//! changes, its warnings and the policies it observed, and rendered as JSON
//! or YAML ([`Report::render`]). The same report is the Action's `changes`
//! output, the Job status's `changes` and the commit message's data.
//!
//! # Schema (ResultV2)
//!
//! `schema/report.schema.json` is the JSON Schema (2020-12) of this
//! report, in both renderings; `tests/report_schema.rs` validates every
//! report the test suite produces against it.
//!
//! ```json
//! {
//!   "version": "image-update.dev/v1",
//!   "fileChanges": {
//!     "apps/podinfo.yaml": [
//!       {"object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "podinfo", "namespace": "default"},
//!        "changes": [{"oldValue": "…:6.5.0", "newValue": "…:6.7.0", "setter": "flux-system:podinfo",
//!                     "line": 21, "column": 16, "fieldPath": "spec.template.spec.containers[0].image"}]}
//!     ]
//!   },
//!   "observedPolicies": {"flux-system:podinfo": {"name": "…", "tag": "6.7.0", "digest": ""}},
//!   "warnings": [{"file": "apps/other.yaml", "line": 3, "column": 12, "message": "…"}]
//! }
//! ```
//!
//! * `version`: [`REPORT_VERSION`], the format of this report; it changes
//!   only when a field changes meaning or goes away (new fields may appear
//!   without a new version). Flux's ResultV2 has no such field.
//! * `fileChanges`: files in path order (relative to the update path, `/`
//!   separators); in each file, objects in order of first appearance (one
//!   entry per distinct object), changes in document order. Object fields
//!   absent in the source are `""`.
//! * `observedPolicies`: every policy in scope that has a latest image.
//! * `warnings`: every warning of the run (what stderr, kpt results and
//!   annotations show), sorted by file, line and column. `file` is relative
//!   to the update path for a file of the tree; other inputs (policy files,
//!   an automation) are named as given. `line`/`column` are 1-based
//!   (`column` counts characters) and left out when the warning has no
//!   position (a whole file, a ResourceList item), `file` when it concerns
//!   no file; `hint` says what to do, where there is something.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::object::ObjectId;
use crate::outcome::Outcome;
use crate::policies::ImageRef;

/// One changed field, as the report writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReportChange {
    pub old_value: String,
    pub new_value: String,
    pub setter: String,
    pub line: usize,
    pub column: usize,
    pub field_path: String,
}

/// The changes of one object in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectChanges {
    pub object: ObjectId,
    pub changes: Vec<ReportChange>,
}

/// A warning with its place, when it has one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReportWarning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl ReportWarning {
    /// The report's entry for a warning: the file as the report names it
    /// (its path in the tree, else as given), its position, its message with
    /// causes, its hint.
    #[must_use]
    pub fn of(d: &Diagnostic) -> Self {
        let at = d.location.as_ref();
        Self {
            file: at
                .map(|at| at.tree_path.clone().unwrap_or_else(|| at.path.clone()))
                .filter(|f| !f.is_empty()),
            line: at.and_then(|at| at.position).map(|p| p.line),
            column: at.and_then(|at| at.position).map(|p| p.column),
            message: d.full_message(),
            hint: d.hint.clone(),
        }
    }
}

/// The report format written in [`Report::version`].
pub const REPORT_VERSION: &str = "image-update.dev/v1";

/// The whole report of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Report {
    /// The report format, [`REPORT_VERSION`] (a saved report without one
    /// reads as this version).
    pub version: String,
    pub file_changes: BTreeMap<String, Vec<ObjectChanges>>,
    pub observed_policies: BTreeMap<String, ImageRef>,
    pub warnings: Vec<ReportWarning>,
}

impl Default for Report {
    fn default() -> Self {
        Self {
            version: REPORT_VERSION.to_owned(),
            file_changes: BTreeMap::new(),
            observed_policies: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

/// Output formats of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Yaml,
}

impl Outcome {
    /// The ResultV2 report of the run, a view of this outcome.
    #[must_use]
    pub(crate) fn report(&self) -> Report {
        Report::of(self)
    }
}

impl Report {
    /// The report of a run: its changes by file (in path order) and object
    /// (in order of first appearance; an object seen twice in one file is
    /// merged, as Flux does), the policies it observed, and its warnings,
    /// sorted.
    #[must_use]
    pub fn of(outcome: &Outcome) -> Self {
        let mut report = Self {
            observed_policies: outcome.observed_policies.clone(),
            ..Self::default()
        };
        for c in &outcome.changes {
            let objects = report.file_changes.entry(c.file.clone()).or_default();
            let index = match objects.iter().position(|o| o.object == c.object) {
                Some(i) => i,
                None => {
                    objects.push(ObjectChanges {
                        object: c.object.clone(),
                        changes: Vec::new(),
                    });
                    objects.len() - 1
                }
            };
            objects[index].changes.push(ReportChange {
                old_value: c.old_value.clone(),
                new_value: c.new_value.clone(),
                setter: c.setter.clone(),
                line: c.position.line,
                column: c.position.column,
                field_path: c.field_path.clone(),
            });
        }
        report.warnings = outcome.warnings().map(ReportWarning::of).collect();
        report.warnings.sort();
        report
    }

    /// Render as JSON (pretty, newline-terminated) or YAML.
    ///
    /// # Errors
    /// Only if serialisation fails, which plain data does not.
    pub fn render(&self, format: Format) -> Result<String, String> {
        match format {
            Format::Json => serde_json::to_string_pretty(self)
                .map(|mut s| {
                    s.push('\n');
                    s
                })
                .map_err(|e| e.to_string()),
            Format::Yaml => serde_saphyr::to_string(self).map_err(|e| e.to_string()),
        }
    }
}
