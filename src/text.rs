//! 1-based `line:column` positions in YAML text.
//!
//! Every diagnostic and change names a position in the original file. The
//! scanner takes them from the YAML parser, which knows the line and column
//! of every event it reports, so finding a position never rescans the text;
//! [`position_of`] is for the few places that hold only an offset into a
//! short text (a file's prefix, a test). Lines end as YAML says (`\n`,
//! `\r\n`, or a `\r` alone) and columns count Unicode scalar values (what an
//! editor shows), not bytes; a byte-order mark at the start of the text is
//! not a column.

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position reached from `self` by reading `text`.
    #[must_use]
    pub(crate) fn after(self, text: &str) -> Position {
        advance(self, text, text.len())
    }
}

/// The position of `text[end]` when `text` starts at `start`: a `\r` just
/// before `end` ends its line only when no `\n` follows it in `text`.
fn advance(start: Position, text: &str, end: usize) -> Position {
    let bytes = text.as_bytes();
    let mut line = start.line;
    let mut line_start = None;
    for i in memchr::memchr2_iter(b'\n', b'\r', &bytes[..end]) {
        // `\r\n` ends one line, at its `\n`.
        if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            continue;
        }
        line += 1;
        line_start = Some(i + 1);
    }
    match line_start {
        None => Position {
            line,
            column: start.column + text[..end].chars().count(),
        },
        Some(from) => Position {
            line,
            column: text[from..end].chars().count() + 1,
        },
    }
}

/// The position of `offset` (clamped to the text, and to a character
/// boundary) in `text`, found by reading the text up to it.
#[must_use]
pub fn position_of(text: &str, offset: usize) -> Position {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text.strip_prefix('\u{feff}') {
        Some(rest) if end >= 3 => advance(Position { line: 1, column: 1 }, rest, end - 3),
        _ => advance(Position { line: 1, column: 1 }, text, end),
    }
}

/// The start of every line of one text, for many lookups into a text that
/// no parser positioned (the Argo CD write-back's planned new texts and span
/// trees). Lines end as [`position_of`] says.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    #[must_use]
    pub(crate) fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(
            memchr::memchr2_iter(b'\n', b'\r', bytes)
                .filter(|&i| !(bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n')))
                .map(|i| i + 1),
        );
        Self { starts }
    }

    /// The number of lines.
    #[must_use]
    pub(crate) fn lines(&self) -> usize {
        self.starts.len()
    }

    /// The position of `offset` (clamped to the text, and to a character
    /// boundary) in `text`, which must be the text this index was built
    /// from: the same as [`position_of`], without reading the text up to it.
    #[must_use]
    pub(crate) fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_index_agrees_with_position_of() {
        for text in [
            "a: 1\né: x\n\r\nlast",
            "\u{feff}a\rb\r\nc\n",
            "",
            "x\r",
            "é\n\n",
        ] {
            let index = LineIndex::new(text);
            for offset in 0..=text.len() + 2 {
                assert_eq!(
                    index.position(text, offset),
                    position_of(text, offset),
                    "{text:?} at {offset}"
                );
            }
        }
    }

    #[test]
    fn positions_are_one_based_and_count_chars() {
        let text = "a: 1\né: x\n\r\nlast";
        let at = |offset| position_of(text, offset);
        assert_eq!(at(0), Position { line: 1, column: 1 });
        assert_eq!(at(3), Position { line: 1, column: 4 });
        // "é" is two bytes: the "x" is the 4th character of line 2.
        assert_eq!(at(text.find('x').unwrap()), Position { line: 2, column: 4 });
        assert_eq!(
            at(text.find("last").unwrap()),
            Position { line: 4, column: 1 }
        );
        assert_eq!(at(10_000).line, 4);
    }

    #[test]
    fn a_carriage_return_alone_ends_a_line_as_in_yaml() {
        let text = "a: 1\rb: 2\r\nc: 3";
        assert_eq!(
            position_of(text, text.find('b').unwrap()),
            Position { line: 2, column: 1 }
        );
        assert_eq!(
            position_of(text, text.find('c').unwrap()),
            Position { line: 3, column: 1 }
        );
        // Between the `\r` and the `\n` of a line end: still the first line.
        assert_eq!(
            position_of(text, text.find("\r\n").unwrap() + 1),
            Position { line: 2, column: 6 }
        );
    }

    #[test]
    fn bom_does_not_count_as_a_column() {
        let text = "\u{feff}a: b";
        assert_eq!(
            position_of(text, text.find('b').unwrap()),
            Position { line: 1, column: 4 }
        );
    }

    #[test]
    fn after_reads_from_a_position() {
        let start = Position { line: 7, column: 3 };
        assert_eq!(start.after("ab"), Position { line: 7, column: 5 });
        assert_eq!(start.after("a\nbé"), Position { line: 8, column: 3 });
        assert_eq!(start.after(""), start);
    }
}
