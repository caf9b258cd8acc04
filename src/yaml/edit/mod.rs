//! Every change to YAML text: byte-range [`Edit`]s spliced into the original, whose other bytes
//! are kept.
//!
//! The YAML is never re-serialised: an [`Edit`] replaces one byte range, and [`apply`] copies the
//! source between ranges unchanged. The edits are made here and nowhere else:
//!
//! * one scalar's new value ([`write_scalar`], in the quoting of [`quote`]): the marker path's
//!   whole edit, and the [`Editor`]'s for every value it replaces;
//! * a file's changes as an overlay of the parsed [`crate::yaml::tree::Tree`] ([`Editor`]): scalars
//!   replaced, entries and items added or removed, rendered in the file's own style;
//! * a large list, read without a tree (a kpt ResourceList): items appended or removed
//!   ([`list::Items::edits`]) and a root entry set ([`list::RootMap::set`]);
//! * the line arithmetic all of them share ([`lines`]).

mod editor;
pub(crate) mod lines;
pub(crate) mod list;
pub(crate) mod quote;

use std::ops::Range;

pub(crate) use self::editor::{EditProblem, Editor, Handle, Shape};
pub(crate) use self::quote::Style;

/// Replace a byte range of the source with new text. It travels with the
/// change that produced it ([`crate::updater::plan::PlannedChange`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    range: Range<usize>,
    replacement: String,
}

impl Edit {
    /// Replace `range` with `replacement` (an empty range inserts).
    pub fn new(range: Range<usize>, replacement: impl Into<String>) -> Self {
        Self {
            range,
            replacement: replacement.into(),
        }
    }

    /// The byte range replaced.
    #[must_use]
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// The new text.
    #[must_use]
    pub fn replacement(&self) -> &str {
        &self.replacement
    }

    /// The same edit in a text that holds this one's text `base` bytes in (an item of a
    /// ResourceList edited as a file of its own).
    #[must_use]
    pub(crate) fn shifted(&self, base: usize) -> Self {
        Self::new(
            self.range.start + base..self.range.end + base,
            self.replacement.clone(),
        )
    }
}

/// Edits that overlap, or lie outside the text, cannot be applied together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("edits overlap or lie outside the text at byte {at}")]
pub struct EditError {
    pub at: usize,
}

/// Where a scalar value is in the text, for writing a new one there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The scalar's bytes (its quotes included), written in `style`.
    Scalar { range: Range<usize>, style: Style },
    /// An empty value (`key:`, `key: # comment`): the new value goes at this offset, just
    /// after the `:`, with a space before it.
    Empty { at: usize },
}

/// The edit that writes `value` into `slot`: in the scalar's own quote style, plain only when it
/// reads back as the same string ([`quote::render`]); `in_flow` when the scalar sits inside a flow
/// collection. The value starts [`Slot::value_offset`] bytes into the replacement.
#[must_use]
pub(crate) fn write_scalar(slot: &Slot, value: &str, in_flow: bool) -> Edit {
    match slot {
        Slot::Scalar { range, style } => {
            Edit::new(range.clone(), quote::render(value, *style, in_flow))
        }
        Slot::Empty { at } => Edit::new(
            *at..*at,
            format!(" {}", quote::render(value, Style::Plain, in_flow)),
        ),
    }
}

impl Slot {
    /// How far into [`write_scalar`]'s replacement the value starts.
    #[must_use]
    pub(crate) fn value_offset(&self) -> usize {
        match self {
            Slot::Scalar { .. } => 0,
            Slot::Empty { .. } => 1,
        }
    }
}

/// Apply `edits` to `text` in one pass.
///
/// # Errors
/// Fails when two edits overlap, when one ends before it starts or past the
/// end of the text, or when a range does not fall on character boundaries.
pub(crate) fn apply(text: &str, edits: &mut [Edit]) -> Result<String, EditError> {
    let pieces = pieces(text, edits)?;
    let mut out = String::with_capacity(pieces.iter().map(|p| p.len()).sum());
    for piece in pieces {
        out.push_str(piece);
    }
    Ok(out)
}

/// The pieces of the edited text, in order: kept source slices and
/// replacements, for writing out without building the whole new text.
/// Sorts `edits` by position.
///
/// # Errors
/// As [`apply`].
pub(crate) fn pieces<'a>(text: &'a str, edits: &'a mut [Edit]) -> Result<Vec<&'a str>, EditError> {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = Vec::with_capacity(edits.len() * 2 + 1);
    let mut cursor = 0;
    for edit in edits.iter() {
        let Range { start, end } = edit.range;
        if start < cursor
            || end < start
            || !text.is_char_boundary(start)
            || !text.is_char_boundary(end)
        {
            return Err(EditError { at: start });
        }
        let Some(kept) = text.get(cursor..start) else {
            return Err(EditError { at: start });
        };
        out.push(kept);
        out.push(edit.replacement.as_str());
        cursor = end;
    }
    out.push(text.get(cursor..).ok_or(EditError { at: cursor })?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn edit(range: Range<usize>, s: &str) -> Edit {
        Edit {
            range,
            replacement: s.to_owned(),
        }
    }

    #[test]
    fn splices_in_order() {
        let mut edits = vec![edit(7..8, "Z"), edit(0..1, "AA"), edit(4..4, "+")];
        assert_eq!(apply("abc def ghi", &mut edits).unwrap(), "AAbc +defZghi");
    }

    #[test]
    fn rejects_overlaps_and_bad_ranges() {
        assert!(apply("abcdef", &mut [edit(0..3, "x"), edit(2..4, "y")]).is_err());
        assert!(apply("abc", &mut [edit(2..9, "x")]).is_err());
        assert!(apply("é", &mut [edit(1..2, "x")]).is_err());
    }

    proptest! {
        #[test]
        fn bytes_outside_edits_are_kept(text in "[a-z\n\r ]{0,200}", cuts in proptest::collection::vec((0usize..200, 0usize..5), 0..8)) {
            // Non-overlapping edits built from sorted, disjoint cut points.
            let mut points: Vec<(usize, usize)> = cuts.into_iter().map(|(s, l)| (s.min(text.len()), l)).collect();
            points.sort_unstable();
            let mut edits = Vec::new();
            let mut last_end = 0;
            for (start, len) in points {
                if start < last_end { continue; }
                let end = (start + len).min(text.len());
                edits.push(edit(start..end, "<>"));
                last_end = end;
            }
            let out = apply(&text, &mut edits.clone()).unwrap();
            // Rebuild the expected output from the kept pieces.
            let mut expected = String::new();
            let mut cursor = 0;
            for e in &edits {
                expected.push_str(&text[cursor..e.range.start]);
                expected.push_str("<>");
                cursor = e.range.end;
            }
            expected.push_str(&text[cursor..]);
            prop_assert_eq!(out, expected);
            prop_assert_eq!(apply(&text, &mut []).unwrap(), text);
        }
    }
}
