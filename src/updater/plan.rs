//! Plan the edits of one YAML text: scan its markers, look each up in the
//! [`PolicyTable`], and make one [`Edit`] per value that changes.
//!
//! Pure: no IO, so the directory mode and the KRM function (and through
//! them every other front end) share it unchanged.

use crate::policies::{PolicyTable, Resolution};
use crate::text::{LineIndex, Position};
use crate::updater::rewrite::{self, Edit};
use crate::updater::scan::{self, Layout, ObjectInfo};

/// One field whose value changes, and the edit that changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// Index into [`Planned::objects`].
    pub object: usize,
    pub old_value: String,
    pub new_value: String,
    pub setter: String,
    pub position: Position,
    pub field_path: String,
    pub edit: Edit,
}

/// Something worth telling the user, at a position of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub position: Position,
    /// Index into [`Planned::objects`] when the warning concerns one object.
    pub object: Option<usize>,
    /// Path of the marked field, when the warning concerns one marker.
    pub field_path: Option<String>,
    pub message: String,
}

/// The planned edits of one text, not yet applied.
#[derive(Debug, Clone, Default)]
pub struct Planned {
    pub objects: Vec<ObjectInfo>,
    /// In document order.
    pub changes: Vec<FieldChange>,
    /// In document order.
    pub warnings: Vec<Warning>,
}

impl Planned {
    /// The edits of every change, in document order.
    #[must_use]
    pub fn edits(&self) -> Vec<Edit> {
        self.changes.iter().map(|c| c.edit.clone()).collect()
    }
}

/// A planned text and, when at least one value changes, its new text.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub planned: Planned,
    pub new_text: Option<String>,
}

/// The text cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{message}")]
    Parse { position: Position, message: String },
    #[error("internal error")]
    Edit(#[from] rewrite::EditError),
}

/// Plan the updates of one YAML text against `table`, and splice them.
///
/// # Errors
/// When the text is not valid YAML ([`PlanError::Parse`], with the parser's
/// position); nothing is planned for such a text.
pub fn plan(text: &str, layout: Layout, table: &PolicyTable) -> Result<Plan, PlanError> {
    let found = scan::scan(text, layout).map_err(|e| PlanError::Parse {
        position: crate::text::position_of(text, e.offset),
        message: e.message,
    })?;
    let planned = plan_edits(text, found, table, |_| true);
    let new_text = if planned.changes.is_empty() {
        None
    } else {
        Some(rewrite::apply(text, &mut planned.edits())?)
    };
    Ok(Plan { planned, new_text })
}

/// Plan the edits for the markers `found` in `text`, keeping only the
/// objects for which `keep` holds: markers and findings in other objects are
/// ignored, as if those objects were not there. Findings outside any object
/// are kept.
pub fn plan_edits(
    text: &str,
    found: scan::Scan,
    table: &PolicyTable,
    keep: impl Fn(&ObjectInfo) -> bool,
) -> Planned {
    let lines = LineIndex::new(text);
    let kept: Vec<bool> = found.objects.iter().map(&keep).collect();
    let in_scope =
        |object: Option<usize>| object.is_none_or(|i| kept.get(i).copied().unwrap_or(true));
    let mut planned = Planned {
        objects: found.objects,
        ..Planned::default()
    };
    for finding in found.findings {
        if !in_scope(finding.object) {
            continue;
        }
        planned.warnings.push(Warning {
            position: lines.position(text, finding.offset),
            object: finding.object,
            field_path: None,
            message: finding.message,
        });
    }
    for marker in &found.markers {
        if !in_scope(Some(marker.object)) {
            continue;
        }
        let position = lines.position(text, marker.offset);
        match table.lookup(&marker.setter) {
            Resolution::Value(new_value) => {
                if new_value == marker.value {
                    continue;
                }
                planned.changes.push(FieldChange {
                    object: marker.object,
                    edit: rewrite::edit_for(marker, &new_value),
                    old_value: marker.value.clone(),
                    new_value,
                    setter: marker.setter.clone(),
                    position,
                    field_path: marker.field_path.clone(),
                });
            }
            Resolution::Skip(message) => planned.warnings.push(Warning {
                position,
                object: Some(marker.object),
                field_path: Some(marker.field_path.clone()),
                message,
            }),
        }
    }
    planned.warnings.sort_by_key(|w| w.position);
    planned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::{ImageRef, PolicyKey};

    #[test]
    fn objects_left_out_give_neither_changes_nor_warnings() {
        let text = "kind: ResourceList\nitems:\n- kind: A\n  image: app:1 # {\"$imagepolicy\": \"ns:app\"}\n  bad: x # {'$imagepolicy': 'ns:app'}\n- kind: B\n  image: app:1 # {\"$imagepolicy\": \"ns:app\"}\n  other: x # {\"$imagepolicy\": \"ns:unknown\"}\n";
        let mut table = PolicyTable::new();
        table
            .insert(
                PolicyKey::parse("ns:app").unwrap(),
                Some(ImageRef::parse("app:2").unwrap()),
                "test",
            )
            .unwrap();
        let found = scan::scan(text, Layout::ResourceList).unwrap();
        let all = plan_edits(text, found.clone(), &table, |_| true);
        assert_eq!(all.changes.len(), 2);
        assert_eq!(all.warnings.len(), 2);
        let only_b = plan_edits(text, found, &table, |o| o.id.kind == "B");
        assert_eq!(only_b.changes.len(), 1);
        assert_eq!(only_b.changes[0].object, 1);
        let warnings: Vec<(Option<usize>, Option<&str>)> = only_b
            .warnings
            .iter()
            .map(|w| (w.object, w.field_path.as_deref()))
            .collect();
        assert_eq!(warnings, [(Some(1), Some("other"))]);
        let new = rewrite::apply(text, &mut only_b.edits()).unwrap();
        assert_eq!(
            new,
            text.replacen("- kind: B\n  image: app:1", "- kind: B\n  image: app:2", 1)
        );
    }
}
