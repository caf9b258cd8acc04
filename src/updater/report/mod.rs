//! The change report: one model, rendered as JSON or YAML here, and as
//! stderr lines, kpt results or GitHub outputs by the front ends.
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
//! * `warnings`: sorted by file, line and column. `line`/`column` are 1-based;
//!   `column` counts characters.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::policies::{ImageRef, PolicyTable};
use crate::text::Position;
use crate::updater::plan::{FieldChange, Planned};
use crate::object::ObjectId;

/// One changed field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Change {
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
    pub changes: Vec<Change>,
}

/// A warning with its place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReportWarning {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
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

impl Report {
    /// A report that observes every policy with a latest image in `table`.
    #[must_use]
    pub fn new(table: &PolicyTable) -> Self {
        Self {
            observed_policies: table
                .observed()
                .map(|(k, l)| (k.to_string(), l.clone()))
                .collect(),
            ..Self::default()
        }
    }

    /// Add the changes of one file's plan (not its warnings: those are
    /// diagnostics, added with [`Report::warn`]).
    pub fn add_changes(&mut self, file: &str, plan: &Planned) {
        for change in &plan.changes {
            if let Some(object) = plan.objects.get(change.object) {
                self.add_change(file, &object.id, change);
            }
        }
    }

    /// Add one change of `object` in `file`: objects are listed in order of
    /// first appearance, an object seen twice in one file is merged.
    pub fn add_change(&mut self, file: &str, object: &ObjectId, change: &FieldChange) {
        let objects = self.file_changes.entry(file.to_owned()).or_default();
        let index = match objects.iter().position(|o| &o.object == object) {
            Some(i) => i,
            None => {
                objects.push(ObjectChanges {
                    object: object.clone(),
                    changes: Vec::new(),
                });
                objects.len() - 1
            }
        };
        objects[index].changes.push(Change {
            old_value: change.old_value.clone(),
            new_value: change.new_value.clone(),
            setter: change.setter.clone(),
            line: change.position.line,
            column: change.position.column,
            field_path: change.field_path.clone(),
        });
    }

    /// Add one warning.
    pub fn warn(&mut self, file: &str, position: Position, message: &str) {
        self.warnings.push(ReportWarning {
            file: file.to_owned(),
            line: position.line,
            column: position.column,
            message: message.to_owned(),
        });
    }

    /// Put warnings in file, line, column order.
    pub fn sort(&mut self) {
        self.warnings.sort();
    }

    /// Number of changed fields.
    #[must_use]
    pub fn change_count(&self) -> usize {
        self.file_changes
            .values()
            .flatten()
            .map(|o| o.changes.len())
            .sum()
    }

    /// Number of distinct objects changed (counted per file).
    #[must_use]
    pub fn object_count(&self) -> usize {
        self.file_changes.values().map(Vec::len).sum()
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
