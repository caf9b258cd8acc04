//! Plan the edits of one YAML text: scan its markers, look each up in the
//! [`PolicyTable`], and make one [`Edit`] per value that changes.
//!
//! Pure: no IO, so the directory mode and the KRM function (and through
//! them every other front end) share it unchanged.

use crate::policies::{PolicyTable, Resolution};
use crate::text::Position;
use crate::updater::scan::{self, Layout, ObjectInfo};
use crate::yaml::SyntaxError;
use crate::yaml::edit::{self, Edit};

/// One field whose value changes, and the edit that changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
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
    /// What may have been meant (the nearest policy of a marker naming none).
    pub hint: Option<String>,
}

/// The planned edits of one text, not yet applied.
#[derive(Debug, Clone, Default)]
pub struct Planned {
    pub objects: Vec<ObjectInfo>,
    /// In document order.
    pub changes: Vec<PlannedChange>,
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

/// How markers are applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// Refuse a change that moves a tag backwards (a lower semver); it is
    /// left alone with a warning. Without it the change is made, with a
    /// warning.
    pub no_downgrade: bool,
}

/// The text cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{}", .0.message)]
    Parse(SyntaxError),
    #[error("internal error")]
    Edit(#[from] edit::EditError),
}

/// Plan the updates of one YAML text against `table`, and splice them.
///
/// # Errors
/// When the text is not valid YAML ([`PlanError::Parse`], with the parser's
/// position); nothing is planned for such a text.
pub fn plan(
    text: &str,
    layout: Layout,
    table: &PolicyTable,
    options: PlanOptions,
) -> Result<Plan, PlanError> {
    let found = scan::scan(text, layout).map_err(PlanError::Parse)?;
    let planned = plan_edits(found, table, options, |_| true);
    let new_text = if planned.changes.is_empty() {
        None
    } else {
        Some(edit::apply(text, &mut planned.edits())?)
    };
    Ok(Plan { planned, new_text })
}

/// Plan the edits for the markers `found`, keeping only the objects for
/// which `keep` holds: markers and findings in other objects are ignored, as
/// if those objects were not there. Findings outside any object are kept.
pub(crate) fn plan_edits(
    found: scan::Scan,
    table: &PolicyTable,
    options: PlanOptions,
    keep: impl Fn(&ObjectInfo) -> bool,
) -> Planned {
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
            position: finding.position,
            object: finding.object,
            field_path: None,
            message: finding.message,
            hint: None,
        });
    }
    // Each marker's strings move into what is planned: a large list has
    // thousands.
    for marker in found.markers {
        if !in_scope(Some(marker.object)) {
            continue;
        }
        let position = marker.position;
        let warn = |message: String| Warning {
            position,
            object: Some(marker.object),
            field_path: Some(marker.field_path.clone()),
            message,
            hint: None,
        };
        if marker.value.contains("{{") {
            planned.warnings.push(warn(
                "the marked value holds template syntax ({{ ... }}), so it is not rewritten: \
                 mark the value the template reads (a Helm values file) instead"
                    .to_owned(),
            ));
            continue;
        }
        match table.lookup(&marker.setter) {
            Resolution::Value(new_value) => {
                if new_value == marker.value {
                    continue;
                }
                if let Some((old, new)) = downgrade(&marker.setter, &marker.value, &new_value) {
                    if options.no_downgrade {
                        planned.warnings.push(warn(format!(
                            "{} would move the tag backwards, from {old} to {new}, so it is left alone (--no-downgrade)",
                            marker.setter
                        )));
                        continue;
                    }
                    planned.warnings.push(warn(format!(
                        "{} moves the tag backwards, from {old} to {new}",
                        marker.setter
                    )));
                }
                planned.changes.push(PlannedChange {
                    object: marker.object,
                    edit: edit::write_scalar(&marker.target, &new_value, marker.in_flow),
                    old_value: marker.value,
                    new_value,
                    setter: marker.setter,
                    position,
                    field_path: marker.field_path,
                });
            }
            Resolution::Skip(message) => planned.warnings.push(Warning {
                position,
                object: Some(marker.object),
                field_path: Some(marker.field_path),
                message,
                hint: None,
            }),
            Resolution::Unknown { message, hint } => planned.warnings.push(Warning {
                position,
                object: Some(marker.object),
                field_path: Some(marker.field_path),
                message,
                hint,
            }),
        }
    }
    planned.warnings.sort_by_key(|w| w.position);
    planned
}

/// The old and new tags when a setter's change moves a tag backwards: both
/// parse as semver (Flux's strict parse, an optional `v`) and the new one is
/// lower. Only the full-image and `:tag` setters write tags.
fn downgrade<'a>(setter: &str, old: &'a str, new: &'a str) -> Option<(&'a str, &'a str)> {
    use crate::reflector::selection::semver::parse_tag;
    use crate::setter::{Field, Setter};
    let tag = |value: &'a str| -> &'a str {
        match Setter::parse(setter).map(|s| s.field) {
            Some(Field::Tag) => value,
            _ => {
                let without_digest = value.split('@').next().unwrap_or(value);
                let slash = without_digest.rfind('/').map_or(0, |i| i + 1);
                without_digest[slash..]
                    .rfind(':')
                    .map_or("", |i| &without_digest[slash + i + 1..])
            }
        }
    };
    if !matches!(
        Setter::parse(setter).map(|s| s.field),
        Some(Field::Image | Field::Tag)
    ) {
        return None;
    }
    let (old_tag, new_tag) = (tag(old), tag(new));
    let (a, b) = (parse_tag(old_tag)?, parse_tag(new_tag)?);
    (b.cmp_precedence(&a) == std::cmp::Ordering::Less).then_some((old_tag, new_tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downgrades_are_found_for_tags_only() {
        assert_eq!(
            downgrade("ns:p", "app:1.4.0", "app:1.3.9"),
            Some(("1.4.0", "1.3.9"))
        );
        assert_eq!(
            downgrade("ns:p:tag", "v2.0.0", "v1.9.9"),
            Some(("v2.0.0", "v1.9.9"))
        );
        assert_eq!(
            downgrade(
                "ns:p",
                "localhost:5000/app:2.0.0@sha256:aa",
                "localhost:5000/app:1.0.0"
            ),
            Some(("2.0.0", "1.0.0"))
        );
        assert_eq!(downgrade("ns:p", "app:1.3.0", "app:1.4.0"), None);
        assert_eq!(
            downgrade("ns:p", "app:latest", "app:1.0.0"),
            None,
            "old does not parse"
        );
        assert_eq!(downgrade("ns:p", "app:1.0.0-rc.1", "app:1.0.0"), None);
        assert_eq!(
            downgrade("ns:p", "app:1.0.0", "app:1.0.0-rc.1"),
            Some(("1.0.0", "1.0.0-rc.1"))
        );
        assert_eq!(downgrade("ns:p:name", "app:2.0.0", "app:1.0.0"), None);
        assert_eq!(downgrade("ns:p:digest", "2.0.0", "1.0.0"), None);
    }
    use crate::policies::{ImageRef, PolicyKey};

    /// Found by the `plan` fuzz target: two markers on one sequence item
    /// (above it and at the end of its line) made overlapping edits, and
    /// the file could not be planned at all.
    #[test]
    fn an_item_with_two_markers_is_planned_once() {
        let text = "a:\n# {\"$imagepolicy\": \"ns:p\"}\n- app:1 # {\"$imagepolicy\": \"ns:q\"}\n";
        let mut table = PolicyTable::new();
        for (key, image) in [("ns:p", "app:2"), ("ns:q", "app:3")] {
            table
                .insert(
                    PolicyKey::parse(key).unwrap(),
                    Some(ImageRef::parse(image).unwrap()),
                    "test",
                )
                .unwrap();
        }
        let plan = plan(text, Layout::Documents, &table, PlanOptions::default()).unwrap();
        assert_eq!(
            plan.new_text.as_deref(),
            Some(text.replace("- app:1", "- app:3").as_str())
        );
        assert_eq!(plan.planned.warnings.len(), 1);
    }

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
        let all = plan_edits(found.clone(), &table, PlanOptions::default(), |_| true);
        assert_eq!(all.changes.len(), 2);
        assert_eq!(all.warnings.len(), 2);
        let only_b = plan_edits(found, &table, PlanOptions::default(), |o| o.id.kind == "B");
        assert_eq!(only_b.changes.len(), 1);
        assert_eq!(only_b.changes[0].object, 1);
        let warnings: Vec<(Option<usize>, Option<&str>)> = only_b
            .warnings
            .iter()
            .map(|w| (w.object, w.field_path.as_deref()))
            .collect();
        assert_eq!(warnings, [(Some(1), Some("other"))]);
        let new = edit::apply(text, &mut only_b.edits()).unwrap();
        assert_eq!(
            new,
            text.replacen("- kind: B\n  image: app:1", "- kind: B\n  image: app:2", 1)
        );
    }
}
