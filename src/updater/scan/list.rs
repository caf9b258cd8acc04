//! One pass over a ResourceList: where its root entries lie (the layout,
//! [`LayoutWalk`]) and the markers of its items ([`Walker`]), both from the
//! same walk over the parser's events, so the list is parsed once.
//!
//! Parsing is most of the function's run time, so a large list is parsed
//! in parts side by side: the text is cut at the start of items (lines
//! `- ...` at the column of the first item), each part is parsed on its own
//! thread, and the parts' findings are joined as one pass would have found
//! them. A part parsed on its own reads as it does in place only under
//! conditions a cheap look at the text cannot prove, so each part checks
//! them on the parser's own events, and whenever one does not hold (or the
//! text is not valid YAML), the list is read again in one sequential pass,
//! which also gives the exact error. What each part checks:
//!
//! * the head (the text up to the first cut) ends inside `items`, between
//!   two items, with the root `items` key where the look at the text found
//!   it: the cut is then the start of an item, at the items' column, outside
//!   any quoted scalar or flow collection (the parser would have failed at
//!   the end of the head), and everything inside the open item is indented
//!   more than the cut's line, so it ends there in place too;
//! * a part of items (from one cut to the next) parses as one block sequence
//!   and nothing else: no root node after it, no alias to an anchor outside
//!   it (the parser fails on one), no directive, no document marker;
//! * the tail (from the first line after the items that is indented no
//!   deeper than they are) is one block mapping at the root's indentation,
//!   with no `items` key, one document;
//! * no comment block and no own-line marker is open at a cut (the lines
//!   before each cut and before the tail hold content), and nothing nests
//!   near the parser's limits (a part lacks the root's two levels).

use std::ops::Range;

use granit_parser::{Event, Parser, ScanError, Span, StructureStyle};

use super::{Frame, KeySet, Layout, Scan, Seg, Walker, parse_error};
use crate::text::Position;
use crate::updater::source::resource_list::{LayoutWalk, ListLayout, ShapeError};

/// A ResourceList's layout and markers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListScan {
    pub layout: ListLayout,
    pub scan: Scan,
}

/// The most parts a list is cut into.
const MAX_PARTS: usize = 8;
/// The least bytes worth a part (and a thread) of their own.
const MIN_PART: usize = 1 << 20;
/// Nesting deeper than this in a part is read in one pass: a part lacks the
/// root mapping's level, so near the parser's limit (255) it could accept
/// what the whole list exceeds.
const MAX_PART_DEPTH: usize = 240;
/// More consecutive comments than this in a part are read in one pass: the
/// parser buffers comments up to a limit (96) while it resolves an entry.
const MAX_COMMENT_RUN: usize = 64;

/// Read the ResourceList `text` once: its layout and its markers.
///
/// # Errors
/// When `text` is not YAML, holds no or several documents, or its document
/// is not a mapping.
pub(crate) fn read_list(text: &str) -> Result<ListScan, ShapeError> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    read_in_parts(text, threads.min(MAX_PARTS), MIN_PART)
}

/// [`read_list`] in at most `parts` parts of at least `min_part` bytes.
pub(crate) fn read_in_parts(
    text: &str,
    parts: usize,
    min_part: usize,
) -> Result<ListScan, ShapeError> {
    let parts = parts.min(text.len() / min_part.max(1));
    if parts > 1
        && let Some(plan) = Plan::find(text, parts)
        && let Some(found) = plan.read(text)
    {
        return Ok(found);
    }
    one_pass(text)
}

/// Whether reading `text` in up to `parts` parts, however small, finds
/// exactly what one pass finds (layout, markers, findings, or the error):
/// the fuzz target's check of the parts.
pub(crate) fn same_in_parts(text: &str, parts: usize) -> bool {
    format!("{:?}", read_in_parts(text, parts, 1)) == format!("{:?}", one_pass(text))
}

/// The list in one sequential pass.
fn one_pass(text: &str) -> Result<ListScan, ShapeError> {
    let mut walker = Walker::new(text, Layout::ResourceList);
    let mut layout = LayoutWalk::new();
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| not_yaml(&e))?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        layout.event(&event, range_of(&span, 0), walker.position(&span.start))?;
        // A second document makes the input an error: its markers are not
        // needed.
        if layout.documents() <= 1 {
            walker.event(event, &span);
        }
    }
    walker.flush_pending();
    Ok(ListScan {
        layout: layout.finish(text)?,
        scan: walker.out,
    })
}

fn not_yaml(e: &ScanError) -> ShapeError {
    ShapeError::NotYaml(parse_error(e, 0, 0))
}

/// The bytes of an event in the whole text, for a part that starts at
/// `base`.
fn range_of(span: &Span, base: usize) -> Range<usize> {
    span.byte_range()
        .map_or(base..base, |r| r.start + base..r.end + base)
}

/// Where to cut a list, found by looking at its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    /// Offset of the root `items` key.
    items_key: usize,
    /// The column of the root mapping's keys.
    root_indent: usize,
    /// The column of each item's `-`.
    column: usize,
    /// The start of each cut's line, ascending.
    cuts: Vec<usize>,
}

impl Plan {
    /// Cut `text` into about `parts` parts of equal size, when it looks
    /// like a block-style list with its items in a block sequence.
    fn find(text: &str, parts: usize) -> Option<Plan> {
        let bytes = text.as_bytes();
        // The root's first key sets its indentation; `items` is the first
        // line there that is the key `items:` with nothing after it.
        let mut at = 0;
        let mut root_indent = None;
        let items_line = loop {
            let line = line_at(bytes, at);
            if line.first() == Some(&b'%') {
                // A directive (`%TAG`) would change what the parts read.
                return None;
            }
            if is_content(line) && !line.starts_with(b"---") {
                let indent = spaces(line);
                let root = *root_indent.get_or_insert(indent);
                if indent == root
                    && let Some(rest) = line[indent..].strip_prefix(b"items:")
                    && is_blank_or_comment(rest)
                {
                    break at;
                }
            }
            at = next_line(bytes, at)?;
        };
        let root_indent = root_indent?;
        // The first item follows, comments and blank lines aside.
        let mut first = next_line(bytes, items_line)?;
        while !is_content(line_at(bytes, first)) {
            first = next_line(bytes, first)?;
        }
        let column = spaces(line_at(bytes, first));
        if column < root_indent || !is_item(line_at(bytes, first), column) {
            return None;
        }
        let size = (bytes.len() - first) / parts;
        let mut cuts: Vec<usize> = Vec::new();
        for part in 1..parts {
            let from = (first + part * size).max(cuts.last().map_or(first, |c| c + 1));
            if let Some(cut) = find_cut(bytes, from, from.saturating_add(size / 2), column) {
                cuts.push(cut);
            }
        }
        if cuts.is_empty() {
            return None;
        }
        Some(Plan {
            items_key: items_line + root_indent,
            root_indent,
            column,
            cuts,
        })
    }

    /// Read the parts side by side and join them; `None` when a part does
    /// not read as it does in place (or does not parse).
    fn read(&self, text: &str) -> Option<ListScan> {
        let last = self.cuts.len() - 1;
        let (head, parts) = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .cuts
                .iter()
                .enumerate()
                .map(|(i, &cut)| {
                    let next = self.cuts.get(i + 1).copied();
                    let job = move || self.read_part(text, cut, next);
                    std::thread::Builder::new()
                        .name(format!("list part {}", i + 1))
                        .spawn_scoped(scope, job)
                        .map_err(|_| (cut, next))
                })
                .collect();
            let head = read_head(text, self.cuts[0], self.items_key);
            let parts: Vec<Option<(Part, Option<LayoutWalk>)>> = handles
                .into_iter()
                .map(|handle| match handle {
                    Ok(handle) => handle.join().ok().flatten(),
                    // No thread to be had: read the part here.
                    Err((cut, next)) => self.read_part(text, cut, next),
                })
                .collect();
            (head, parts)
        });
        let mut head = head?;
        let mut scan = std::mem::take(&mut head.scan);
        let mut items_before = head.items;
        let mut layout = head.layout;
        let mut tail = None;
        let parts: Vec<(Part, Option<LayoutWalk>)> = parts.into_iter().collect::<Option<_>>()?;
        layout.reserve_items(parts.iter().map(|(part, _)| part.nodes.len()).sum());
        for (i, (part, part_tail)) in parts.into_iter().enumerate() {
            let objects_before = scan.objects.len();
            scan.objects
                .extend(part.scan.objects.into_iter().map(|mut o| {
                    o.item = o.item.map(|item| item + items_before);
                    o
                }));
            scan.markers
                .extend(part.scan.markers.into_iter().map(|mut m| {
                    m.object += objects_before;
                    m
                }));
            scan.findings
                .extend(part.scan.findings.into_iter().map(|mut f| {
                    f.object = f.object.map(|o| o + objects_before);
                    f
                }));
            items_before += part.items;
            layout.add_items(part.nodes);
            if i == last {
                layout.close_items(part.content_end);
                tail = part_tail;
            }
        }
        if let Some(tail) = tail {
            layout.append(tail);
        }
        Some(ListScan {
            layout: layout.finish(text).ok()?,
            scan,
        })
    }

    /// Read the part of items from `cut` to `next` (the next cut), or for
    /// the last part to the end of the items, then the tail after them.
    fn read_part(
        &self,
        text: &str,
        cut: usize,
        next: Option<usize>,
    ) -> Option<(Part, Option<LayoutWalk>)> {
        let bytes = text.as_bytes();
        let end = match next {
            Some(next) => next,
            None => items_end(bytes, cut, self.column, self.root_indent)?,
        };
        let part = read_items(text, cut..end, self.items_key)?;
        if next.is_some() || end == bytes.len() {
            return Some((part, None));
        }
        let tail = read_tail(text, end, self.root_indent)?;
        Some((part, Some(tail)))
    }
}

/// What a part of items found.
#[derive(Debug)]
struct Part {
    scan: Scan,
    /// The items begun in the part.
    items: usize,
    nodes: Vec<crate::updater::source::resource_list::Node>,
    /// End of the part's last scalar, alias or flow collection.
    content_end: usize,
}

/// What the head found, up to the end of its last item.
#[derive(Debug)]
struct Head {
    scan: Scan,
    items: usize,
    layout: LayoutWalk,
}

/// Read the text up to `end` (the first cut), which must end inside the
/// block sequence of the root `items` key at `items_key`, between items.
fn read_head(text: &str, end: usize, items_key: usize) -> Option<Head> {
    let mut walker = Walker::new(text, Layout::ResourceList);
    let mut layout = LayoutWalk::new();
    let mut parser = Parser::new_from_str(text.get(..end)?);
    let mut comments = CommentRun::default();
    loop {
        let (event, span) = parser.next_event()?.ok()?;
        comments.see(&event)?;
        let stop = matches!(event, Event::SequenceEnd)
            && walker.frames.len() == 2
            && layout.depth() == 2
            && layout.documents() == 1
            && layout.in_items() == Some(items_key);
        if stop {
            // The end of the text closed `items`: in place, the next item
            // follows.
            let items = walker.frames.get(1)?.count;
            settle(&mut walker)?;
            only(
                &mut parser,
                &[Event::MappingEnd, Event::DocumentEnd, Event::StreamEnd],
            )?;
            return Some(Head {
                scan: walker.out,
                items,
                layout,
            });
        }
        if matches!(event, Event::StreamEnd) {
            return None;
        }
        layout
            .event(&event, range_of(&span, 0), walker.position(&span.start))
            .ok()?;
        walker.event(event, &span);
    }
}

/// Read the items in `range` (from a cut to the next, or to their end) as
/// the rest of the root `items` key at `items_key`.
fn read_items(text: &str, range: Range<usize>, items_key: usize) -> Option<Part> {
    let base = range.start;
    let mut walker = Walker::new(text, Layout::ResourceList);
    walker.base = base;
    walker.lines = line_breaks(text.as_bytes().get(..base)?);
    // In place, the root mapping is open with `items` as its key.
    walker.frames.push(Frame {
        is_map: true,
        flow: false,
        expecting_key: false,
        count: 0,
        child: Seg::Key("items".into()),
        keys: KeySet::default(),
    });
    let mut layout = LayoutWalk::inside_items(items_key);
    let mut parser = Parser::new_from_str(text.get(range)?);
    let mut comments = CommentRun::default();
    let mut opened = false;
    loop {
        let (event, span) = parser.next_event()?.ok()?;
        comments.see(&event)?;
        match &event {
            Event::StreamStart | Event::DocumentStart(false, _) => continue,
            Event::Comment(..) => {}
            Event::SequenceStart(StructureStyle::Block, ..) if !opened => opened = true,
            Event::SequenceEnd if opened && walker.frames.len() == 2 => {
                let items = walker.frames.get(1)?.count;
                settle(&mut walker)?;
                only(&mut parser, &[Event::DocumentEnd, Event::StreamEnd])?;
                return Some(Part {
                    scan: walker.out,
                    items,
                    nodes: layout.take_items(),
                    content_end: layout.content_end(),
                });
            }
            _ if !opened => return None,
            _ => {}
        }
        layout
            .event(&event, range_of(&span, base), walker.position(&span.start))
            .ok()?;
        walker.event(event, &span);
        if opened && (walker.frames.len() < 2 || walker.max_depth > MAX_PART_DEPTH) {
            return None;
        }
    }
}

/// Read the tail of the list, from `start` (the first line after the items)
/// to the end: the rest of the root mapping, at `root_indent`.
fn read_tail(text: &str, start: usize, root_indent: usize) -> Option<LayoutWalk> {
    let lines = line_breaks(text.as_bytes().get(..start)?);
    let mut layout = LayoutWalk::new();
    let mut parser = Parser::new_from_str(text.get(start..)?);
    let mut opened = false;
    while let Some(next) = parser.next_event() {
        let (event, span) = next.ok()?;
        match &event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::Comment(..) | Event::DocumentStart(false, _) => {}
            Event::MappingStart(StructureStyle::Block, ..) if !opened => {
                opened = true;
                if span.byte_range()?.start != root_indent {
                    return None;
                }
            }
            _ if !opened => return None,
            _ => {}
        }
        let at = Position {
            line: span.start.line() + lines,
            column: span.start.col() + 1,
        };
        layout.event(&event, range_of(&span, start), at).ok()?;
    }
    let found = layout.documents() == 1 && layout.has_no_items();
    found.then_some(layout)
}

/// At the end of a part: no comment block may wait for a node below it (in
/// place, that node is in the next part), and a head marker is settled as
/// the next event would settle it.
fn settle(walker: &mut Walker<'_>) -> Option<()> {
    if walker.pending.is_some() || walker.max_depth > MAX_PART_DEPTH {
        return None;
    }
    walker.apply_head();
    Some(())
}

/// Whether the parser's remaining events are exactly `expected`.
fn only<'a>(
    parser: &mut Parser<'a, granit_parser::StrInput<'a>>,
    expected: &[Event<'_>],
) -> Option<()> {
    for want in expected {
        let (event, _) = parser.next_event()?.ok()?;
        if event != *want {
            return None;
        }
    }
    Some(())
}

/// Consecutive comment events.
#[derive(Debug, Default)]
struct CommentRun(usize);

impl CommentRun {
    fn see(&mut self, event: &Event<'_>) -> Option<()> {
        if matches!(event, Event::Comment(..)) {
            self.0 += 1;
        } else {
            self.0 = 0;
        }
        (self.0 <= MAX_COMMENT_RUN).then_some(())
    }
}

/// The end of the items whose last part starts at `cut`: the start of the
/// first line after it that is indented no deeper than an item's `-` and is
/// neither an item, a comment nor blank (or the end of the text). `None`
/// when what follows could not be read on its own as the rest of the root
/// mapping, at `root_indent`.
fn items_end(bytes: &[u8], cut: usize, column: usize, root_indent: usize) -> Option<usize> {
    let mut at = cut;
    loop {
        let Some(next) = next_line(bytes, at) else {
            return Some(bytes.len());
        };
        at = next;
        let line = line_at(bytes, at);
        let indent = spaces(line);
        if indent > column || !is_content(line) || is_item(line, column) {
            continue;
        }
        // The line ends the items: the line before must hold content (no
        // comment block open across the end), and the tail must start
        // with a plain key at the root's indentation.
        let before = previous_line(bytes, at)?;
        if !is_content(line_at(bytes, before)) || indent != root_indent {
            return None;
        }
        let first = *line.get(indent)?;
        let plain = first.is_ascii_alphanumeric() || matches!(first, b'"' | b'\'' | b'_');
        return plain.then_some(at);
    }
}

/// The start of the first line at or after `from` and before `until` that
/// is an item at `column` whose previous line holds content.
fn find_cut(bytes: &[u8], from: usize, until: usize, column: usize) -> Option<usize> {
    let mut at = if from == 0 || bytes.get(from - 1) == Some(&b'\n') {
        from
    } else {
        next_line(bytes, from)?
    };
    while at < until.min(bytes.len()) {
        if is_item(line_at(bytes, at), column)
            && previous_line(bytes, at).is_some_and(|p| is_content(line_at(bytes, p)))
        {
            return Some(at);
        }
        at = next_line(bytes, at)?;
    }
    None
}

/// The line starting at `at`, without its `\n`.
fn line_at(bytes: &[u8], at: usize) -> &[u8] {
    let rest = bytes.get(at..).unwrap_or_default();
    memchr::memchr(b'\n', rest).map_or(rest, |i| &rest[..i])
}

/// The start of the line after the one at `at`, if there is one.
fn next_line(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = bytes.get(at..)?;
    let next = at + memchr::memchr(b'\n', rest)? + 1;
    (next < bytes.len()).then_some(next)
}

/// The start of the line before the one at `at` (a line start).
fn previous_line(bytes: &[u8], at: usize) -> Option<usize> {
    let end = at.checked_sub(1)?;
    Some(memchr::memrchr(b'\n', bytes.get(..end)?).map_or(0, |i| i + 1))
}

fn spaces(line: &[u8]) -> usize {
    line.iter().take_while(|&&b| b == b' ').count()
}

fn is_blank_or_comment(rest: &[u8]) -> bool {
    let trimmed = rest.trim_ascii_start();
    trimmed.is_empty() || (trimmed.len() < rest.len() && trimmed.starts_with(b"#"))
}

/// Whether a line holds YAML content: not blank, not only a comment, not
/// indented with a tab, and with no `\r` ending a line inside it (the lines
/// looked at here are split at `\n` only).
fn is_content(line: &[u8]) -> bool {
    let body = line.strip_suffix(b"\r").unwrap_or(line);
    let first = body.iter().find(|&&b| b != b' ');
    !matches!(first, None | Some(b'#' | b'\t' | b'\r')) && memchr::memchr(b'\r', body).is_none()
}

/// Whether a line is an item of a block sequence whose `-` is at `column`.
fn is_item(line: &[u8], column: usize) -> bool {
    spaces(line) == column
        && line.get(column) == Some(&b'-')
        && matches!(line.get(column + 1), None | Some(b' ' | b'\r'))
}

/// The line breaks in `bytes`, counted as the parser counts them: `\n`,
/// `\r\n`, and `\r` alone.
fn line_breaks(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    let lone = memchr::memchr_iter(b'\r', bytes)
        .filter(|&i| bytes.get(i + 1) != Some(&b'\n'))
        .count();
    newlines + lone
}

#[cfg(test)]
mod tests;
