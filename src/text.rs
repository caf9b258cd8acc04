//! Byte offsets to 1-based `line:column` positions.
//!
//! Every diagnostic and change names a position in the original file, so this
//! index is shared by the scanner, the report and the error types. Columns
//! count Unicode scalar values (what an editor shows), not bytes.

/// Start offsets of every line of one text.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl LineIndex {
    #[must_use]
    pub(crate) fn new(text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        Self { starts }
    }

    /// The position of `offset` (clamped to the text) in `text`, which must be
    /// the text this index was built from.
    #[must_use]
    pub(crate) fn position(&self, text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts[line];
        let mut prefix = text.get(start..offset).unwrap_or("");
        if line == 0 {
            prefix = prefix.strip_prefix('\u{feff}').unwrap_or(prefix);
        }
        Position {
            line: line + 1,
            column: prefix.chars().count() + 1,
        }
    }
}

/// Position of `offset` without keeping an index (for one-off lookups).
#[must_use]
pub fn position_of(text: &str, offset: usize) -> Position {
    LineIndex::new(text).position(text, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_chars() {
        let text = "a: 1\né: x\n\r\nlast";
        let idx = LineIndex::new(text);
        assert_eq!(idx.position(text, 0), Position { line: 1, column: 1 });
        assert_eq!(idx.position(text, 3), Position { line: 1, column: 4 });
        // "é" is two bytes: the "x" is the 4th character of line 2.
        let x = text.find('x').unwrap();
        assert_eq!(idx.position(text, x), Position { line: 2, column: 4 });
        let last = text.find("last").unwrap();
        assert_eq!(idx.position(text, last), Position { line: 4, column: 1 });
        assert_eq!(idx.position(text, 10_000).line, 4);
    }

    #[test]
    fn bom_does_not_count_as_a_column() {
        let text = "\u{feff}a: b";
        assert_eq!(
            position_of(text, text.find('b').unwrap()),
            Position { line: 1, column: 4 }
        );
    }
}
