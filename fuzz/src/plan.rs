//! Target `plan`: scan + splice over arbitrary YAML text.
//!
//! Input: a YAML text, planned against the fixed [`table`] in both layouts
//! (a stream of documents, and a ResourceList); an odd length turns on
//! `--no-downgrade`. Checks that [`plan`] never panics and never fails
//! with an edit error (edits that overlap), and, when it produces a new
//! text:
//! 1. every byte outside the reported changes' edits is unchanged, and each
//!    replacement is one line; each change's position is its edit's;
//! 2. the new text parses (with [`parse_documents`]) whenever the old one
//!    did, to the same values except at the changed fields, which hold
//!    their new values;
//! 3. a second plan over the new text succeeds and changes nothing.

use std::sync::OnceLock;

use image_update::api::markers::Layout;
use image_update::api::plan::position_of;
use image_update::api::plan::{ImageRef, PolicyKey, PolicyTable};
use image_update::api::plan::{Plan, PlanError, PlanOptions, plan};
use image_update::api::yaml::parse_documents;
use serde_json::Value;

use crate::tree::{differences, field_pointer};

/// The policies every input is planned against: the setters of the seed
/// files, with values that stress quoting (tags that read as numbers,
/// booleans, dates), ports, digests, and policies without a latest image
/// or out of scope.
pub const POLICIES: [(&str, Option<&str>); 22] = [
    (
        "ns:p",
        Some(
            "ghcr.io/org/app:1.10@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ),
    ),
    ("ns:app", Some("app:2")),
    ("ns:v", Some("app:v2.0.0")),
    ("ns:yes", Some("app:yes")),
    ("ns:num", Some("app:10")),
    ("ns:exp", Some("app:1e3")),
    ("ns:sv", Some("app:1.0.0-rc.1")),
    ("ns:ten", Some("app:1.10")),
    ("ns:old", Some("app:0.0.1")),
    ("ns:none", None),
    (
        "flux-system:podinfo",
        Some("ghcr.io/stefanprodan/podinfo:6.7.0"),
    ),
    (
        "flux-system:web",
        Some("registry.example.com:5000/team/web:2024-01-02"),
    ),
    ("flux-system:redis", Some("redis:7.2.4-alpine")),
    ("flux-system:app", Some("localhost:5000/app:true")),
    ("flux-system:num", Some("numbers:0x1F")),
    ("apps:web", Some("web:1_000")),
    ("apps:api", Some("api:NULL")),
    ("apps:worker", Some("worker:on")),
    (
        "ops:pinned",
        Some(
            "ops/pinned:1.0.0@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
        ),
    ),
    ("ops:frontend", Some("docker.io/library/nginx:1.27.1")),
    ("team-a:app", Some("team-a/app:v1.2.3")),
    ("prod:web", Some("web:012")),
];

/// The fixed policy table of the target (see [`POLICIES`]); `prod:old` is
/// given but out of scope.
pub fn table() -> &'static PolicyTable {
    static TABLE: OnceLock<PolicyTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = PolicyTable::new();
        for (key, image) in POLICIES {
            let (Some(key), Ok(image)) = (
                PolicyKey::parse(key),
                image.map(ImageRef::parse).transpose(),
            ) else {
                continue;
            };
            let _ = table.insert(key, image, "fuzz");
        }
        if let Some(key) = PolicyKey::parse("prod:old") {
            table.exclude(key, "out of scope for the fuzz target");
        }
        table
    })
}

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = PlanOptions {
        no_downgrade: text.len() % 2 == 1,
    };
    for layout in [Layout::Documents, Layout::ResourceList] {
        check(text, layout, options);
    }
}

/// Plan `text` in `layout` and check every invariant of the module docs.
pub fn check(text: &str, layout: Layout, options: PlanOptions) {
    let result = plan(text, layout, table(), options);
    assert!(
        !matches!(result, Err(PlanError::Edit(_))),
        "{layout:?}: the planned edits cannot be applied: {result:?}"
    );
    let Ok(planned) = result else {
        return;
    };
    let Some(new) = &planned.new_text else {
        assert!(
            planned.planned.changes.is_empty(),
            "changes but no new text"
        );
        return;
    };
    assert!(
        !planned.planned.changes.is_empty(),
        "a new text without changes"
    );
    for change in &planned.planned.changes {
        assert_eq!(
            change.position,
            position_of(text, change.edit.range().start),
            "a change is reported away from its edit: {change:?}"
        );
    }
    check_splice(text, new, &planned);
    check_values(text, new, layout, &planned);
    let again = plan(new, layout, table(), options);
    match again {
        Ok(again) => assert!(
            again.planned.changes.is_empty() && again.new_text.is_none(),
            "{layout:?}: a second plan changes more: {:?}\nnew text: {new:?}",
            again.planned.changes
        ),
        Err(e) => {
            panic!("{layout:?}: the new text cannot be planned again: {e:?}\nnew text: {new:?}")
        }
    }
}

/// Invariant 1: the new text is the old one with the edits' ranges
/// replaced, nothing else; replacements stay on their line.
fn check_splice(old: &str, new: &str, planned: &Plan) {
    let mut edits: Vec<_> = planned
        .planned
        .changes
        .iter()
        .map(|c| c.edit.clone())
        .collect();
    edits.sort_by_key(|e| (e.range().start, e.range().end));
    let (old, new) = (old.as_bytes(), new.as_bytes());
    let (mut at_old, mut at_new) = (0, 0);
    for edit in &edits {
        let range = edit.range();
        assert!(
            at_old <= range.start && range.start <= range.end && range.end <= old.len(),
            "edits overlap or leave the text: {edits:?}"
        );
        let replacement = edit.replacement().as_bytes();
        assert!(
            !replacement.contains(&b'\n') && !replacement.contains(&b'\r'),
            "a replacement spans lines: {:?}",
            edit.replacement()
        );
        let kept = &old[at_old..range.start];
        assert_eq!(
            new.get(at_new..at_new + kept.len()),
            Some(kept),
            "bytes before {range:?} changed"
        );
        at_new += kept.len();
        assert_eq!(
            new.get(at_new..at_new + replacement.len()),
            Some(replacement),
            "the replacement is not where its edit says"
        );
        at_new += replacement.len();
        at_old = range.end;
    }
    assert_eq!(
        new.get(at_new..),
        Some(&old[at_old..]),
        "bytes after the last edit changed"
    );
}

/// Invariant 2: same values except at the changed fields.
fn check_values(old: &str, new: &str, layout: Layout, planned: &Plan) {
    let Ok(old_docs) = parse_documents(old) else {
        // Not readable as values (the scanner's parser accepts some texts
        // serde-saphyr refuses): nothing to compare against.
        return;
    };
    let new_docs = parse_documents(new);
    assert!(
        new_docs.is_ok(),
        "{layout:?}: the old text parses, the new one does not: {:?}\nold: {old:?}\nnew: {new:?}",
        new_docs.err()
    );
    let new_docs = new_docs.unwrap_or_default();
    assert_eq!(
        old_docs.len(),
        new_docs.len(),
        "{layout:?}: the number of documents changed\nold: {old:?}\nnew: {new:?}"
    );
    // Where each change should show: (document, pointer, new value). A path
    // through a complex key, or a document the value reader counts
    // differently, names no pointer: then any difference must at least be
    // one of the new values ("loose").
    let mut loose = old.contains('*') || old.contains("<<");
    let mut expected = Vec::new();
    for change in &planned.planned.changes {
        let object = &planned.planned.objects[change.object];
        let prefix = match (layout, object.item) {
            (Layout::Documents, _) => String::new(),
            (Layout::ResourceList, Some(item)) => format!("/items/{item}"),
            (Layout::ResourceList, None) => {
                loose = true;
                continue;
            }
        };
        match field_pointer(&change.field_path) {
            Some(pointer) if object.document < old_docs.len() => expected.push((
                object.document,
                format!("{prefix}{pointer}"),
                Value::String(change.new_value.clone()),
            )),
            _ => loose = true,
        }
    }
    if layout == Layout::Documents && planned.planned.objects.len() != old_docs.len() {
        loose = true;
    }
    for (index, (a, b)) in old_docs.iter().zip(&new_docs).enumerate() {
        for difference in differences(&a.value, &b.value) {
            let explained = expected.iter().any(|(doc, pointer, value)| {
                (loose || (*doc == index && *pointer == difference.pointer))
                    && difference.new.as_ref() == Some(value)
            }) || (loose
                && planned
                    .planned
                    .changes
                    .iter()
                    .any(|c| difference.new == Some(Value::String(c.new_value.clone()))));
            assert!(
                explained,
                "{layout:?}: document {index} changed where nothing was reported: {difference:?}\nchanges: {:?}\nold: {old:?}\nnew: {new:?}",
                planned.planned.changes
            );
        }
    }
    if loose {
        return;
    }
    for (doc, pointer, value) in &expected {
        // A key the value reader spells differently (`0x10`, `on`) leaves
        // the pointer unresolved in both trees: nothing to check there.
        if old_docs[*doc].value.pointer(pointer).is_none() {
            continue;
        }
        assert_eq!(
            new_docs[*doc].value.pointer(pointer),
            Some(value),
            "{layout:?}: document {doc} does not hold the new value at {pointer}\nold: {old:?}\nnew: {new:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_of_the_table_is_valid() {
        for (key, image) in POLICIES {
            assert!(PolicyKey::parse(key).is_some(), "{key}");
            if let Some(image) = image {
                assert!(ImageRef::parse(image).is_ok(), "{image}");
            }
        }
        assert_eq!(table().observed().count(), POLICIES.len() - 1);
    }

    #[test]
    fn a_marked_value_is_rewritten_and_checked() {
        let text = "a:\n  image: app:1 # {\"$imagepolicy\": \"ns:app\"}\n  tag: '1' # {\"$imagepolicy\": \"ns:ten:tag\"}\n";
        let planned = plan(text, Layout::Documents, table(), PlanOptions::default()).unwrap();
        assert_eq!(
            planned.new_text.as_deref(),
            Some(
                "a:\n  image: app:2 # {\"$imagepolicy\": \"ns:app\"}\n  tag: '1.10' # {\"$imagepolicy\": \"ns:ten:tag\"}\n"
            )
        );
        run(text.as_bytes());
    }
}
