//! Line arithmetic on YAML text: where a line starts and ends, a column, the dash of a sequence
//! item. Every edit that inserts or removes whole lines places them with these.

/// The offset where the line holding `offset` starts.
#[must_use]
pub(crate) fn line_start(text: &str, offset: usize) -> usize {
    memchr::memrchr(b'\n', &text.as_bytes()[..offset.min(text.len())]).map_or(0, |i| i + 1)
}

/// Just past the end of the line `offset` is on (after its `\n`; the text's end when the line has
/// none), or `offset` itself when it already starts a line.
#[must_use]
pub(crate) fn after_line(text: &str, offset: usize) -> usize {
    if offset == 0 || text.as_bytes().get(offset - 1) == Some(&b'\n') {
        return offset;
    }
    memchr::memchr(b'\n', &text.as_bytes()[offset..]).map_or(text.len(), |i| offset + i + 1)
}

/// The end of the line a node ending at `end` ends on, before its line break (`\r\n` or `\n`):
/// a node whose range already ends after a line break (a block scalar) ends on the line before.
#[must_use]
pub(crate) fn line_end(text: &str, end: usize) -> usize {
    let bytes = text.as_bytes();
    let mut at = if end > 0 && bytes[end - 1] == b'\n' {
        end - 1
    } else {
        memchr::memchr(b'\n', &bytes[end..]).map_or(text.len(), |i| end + i)
    };
    if at > 0 && bytes.get(at) == Some(&b'\n') && bytes[at - 1] == b'\r' {
        at -= 1;
    }
    at
}

/// The 0-based column (in bytes) of `offset` within its line.
#[must_use]
pub(crate) fn column(text: &str, offset: usize) -> usize {
    offset - line_start(text, offset)
}

/// The line ending of the text: `"\r\n"` when its first line ends so, else `"\n"`.
#[must_use]
pub(crate) fn newline(text: &str) -> &'static str {
    match memchr::memchr(b'\n', text.as_bytes()) {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// The offset of the `-` that opens the block sequence item whose node starts at `offset`: on the
/// node's line (`- apiVersion: ...`, `- - x`), or on a line above it past blank and comment lines
/// (`- # a comment` and the node below).
#[must_use]
pub(crate) fn dash_before(text: &str, offset: usize) -> Option<usize> {
    let start = line_start(text, offset);
    let on_line = text[start..offset].trim_end();
    if let Some(rest) = on_line.strip_suffix('-') {
        return rest
            .chars()
            .all(|c| c == ' ' || c == '-')
            .then_some(start + rest.len());
    }
    if !on_line.trim_start().is_empty() {
        return None;
    }
    let mut end = start;
    while end > 0 {
        let line_begin = line_start(text, end - 1);
        let line = text[line_begin..end].trim_end_matches(['\n', '\r']);
        // The line without a comment (`#` at its start or after a space).
        let content = line
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with([' ', '\t'])))
            .map_or(line, |(i, _)| &line[..i])
            .trim_end();
        if content.trim_start() == "-" {
            return Some(line_begin + content.len() - 1);
        }
        if !content.trim_start().is_empty() {
            return None;
        }
        end = line_begin;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_dashes() {
        let text = "a: 1\r\nl:\r\n- x\r\n-   y: |\r\n      z\r\n- # c\r\n\r\n  w: 2\r\n- - v";
        assert_eq!(line_start(text, 3), 0);
        assert_eq!(
            line_start(text, text.find("x").unwrap()),
            text.find("- x").unwrap()
        );
        assert_eq!(after_line(text, 2), text.find("l:").unwrap());
        assert_eq!(
            after_line(text, text.find("l:").unwrap()),
            text.find("l:").unwrap()
        );
        assert_eq!(after_line(text, text.len() - 1), text.len());
        assert_eq!(line_end(text, 3), 4);
        let z_end = text.find("z\r\n").unwrap() + 3;
        assert_eq!(line_end(text, z_end), z_end - 2);
        assert_eq!(column(text, text.find("y:").unwrap()), 4);
        assert_eq!(newline(text), "\r\n");
        assert_eq!(newline("a\nb\r\n"), "\n");
        assert_eq!(dash_before(text, text.find("x").unwrap()), text.find("- x"));
        assert_eq!(
            dash_before(text, text.find("y:").unwrap()),
            text.find("-   y")
        );
        assert_eq!(
            dash_before(text, text.find("w:").unwrap()),
            text.find("- # c")
        );
        assert_eq!(
            dash_before(text, text.find("v").unwrap()),
            Some(text.len() - 3)
        );
        assert_eq!(dash_before(text, 3), None);
        let text =
            "items:\n- # a comment\n  # another\n  apiVersion: v1\n-\n  kind: x\n  - nested: 1\n";
        let first = text.find("apiVersion").unwrap();
        assert_eq!(dash_before(text, first), Some(7));
        let second = text.find("kind").unwrap();
        assert_eq!(dash_before(text, second), text.find("-\n"));
        let nested = text.find("nested").unwrap();
        assert_eq!(dash_before(text, nested), Some(nested - 2));
        assert_eq!(dash_before(text, text.find("v1").unwrap()), None);
    }
}
