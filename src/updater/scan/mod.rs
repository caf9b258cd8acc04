//! Find `$imagepolicy` markers and the exact bytes of the value each governs.
//!
//! The scanner walks the parser's event stream once. It never builds a tree
//! and never re-serialises anything: its output is a list of [`Marker`]s, each
//! holding the byte range of the scalar to replace, plus the identity of the
//! Kubernetes object around it and the field path, and a list of [`Finding`]s
//! (markers that cannot be applied, comments that look like markers but are
//! not). Where a comment attaches follows Flux (kyaml on yaml.v3):
//!
//! * a comment at the end of a line belongs to the scalar value that ends on
//!   that line: `key: value # marker`, `- value # marker`;
//! * a single comment line directly above a scalar sequence item is that
//!   item's head comment, and a marker there applies to the item, unless
//!   the item has a comment at the end of its line (which is read instead,
//!   marker or not);
//! * anything else (a marker above a `key: value` pair, after a key whose value
//!   is a nested collection, after a flow collection, an alias or a block
//!   scalar header) applies to nothing, and is reported.
//!
//! Two layouts are understood: a stream of documents, each one object (files
//! in a directory), and a kpt `ResourceList`, whose objects are the elements
//! of `items` (markers elsewhere, e.g. in `functionConfig`, are not edited).

pub(crate) mod marker;

use std::borrow::Cow;
use std::ops::Range;

use granit_parser::{Event, Parser, ScalarStyle, Span, StructureStyle};

use self::marker::Comment;
use crate::object::ObjectId;

/// How the objects of a YAML stream are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Every document is one object (a file on disk).
    Documents,
    /// One `ResourceList` document; its objects are the elements of `items`.
    ResourceList,
}

/// Annotations a kpt orchestrator puts on items; empty outside ResourceLists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemAnnotations {
    /// `internal.config.kubernetes.io/path`, else `config.kubernetes.io/path`.
    pub path: Option<String>,
    /// `internal.config.kubernetes.io/index`, else `config.kubernetes.io/index`.
    pub index: Option<String>,
}

/// One object (a document, or a ResourceList item) that holds markers.
#[derive(Debug, Clone, Default)]
pub struct ObjectInfo {
    pub id: ObjectId,
    /// 0-based document index in the stream.
    pub document: usize,
    /// 0-based index in `items` (ResourceList layout only).
    pub item: Option<usize>,
    pub annotations: ItemAnnotations,
    /// Byte offset where the object starts.
    pub offset: usize,
}

/// How the value governed by a marker is written in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
}

/// What to do with the bytes of a marked value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// Replace `range` (the scalar including its quotes).
    Replace { range: Range<usize>, style: Style },
    /// The value is empty (`key: # marker`): insert ` VALUE` at this offset,
    /// just after the `:`.
    Insert { at: usize },
}

/// A scalar governed by a marker.
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    /// The marker's `$imagepolicy` value, verbatim.
    pub setter: String,
    /// Index into [`Scan::objects`].
    pub object: usize,
    /// Path of the field inside its object, e.g. `spec.containers[0].image`.
    pub field_path: String,
    /// The current (decoded) value; `""` for an empty value.
    pub value: String,
    pub target: Target,
    /// Whether the scalar sits inside a flow collection (`[...]`, `{...}`),
    /// where more characters need quoting.
    pub in_flow: bool,
    /// Byte offset of the value (for its line and column).
    pub offset: usize,
}

/// Something the user should know about a marker or a marker-like comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub offset: usize,
    /// Index into [`Scan::objects`] of the object the finding lies in.
    pub object: Option<usize>,
    pub message: String,
}

/// Everything found in one YAML stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
    pub objects: Vec<ObjectInfo>,
    pub markers: Vec<Marker>,
    pub findings: Vec<Finding>,
}

/// The stream is not valid YAML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ParseError {
    /// Byte offset of the error, when the parser knows it.
    pub offset: usize,
    pub message: String,
}

/// Scan one YAML stream.
///
/// # Errors
/// Returns the parser's error, with its position, when the stream is not
/// valid YAML; nothing found before the error is returned then, so a broken
/// file is never half-edited.
pub(crate) fn scan(text: &str, layout: Layout) -> Result<Scan, ParseError> {
    let mut walker = Walker::new(text, layout);
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let m = e.marker();
            ParseError {
                offset: m
                    .byte_offset()
                    .unwrap_or_else(|| char_to_byte(text, m.index())),
                message: e.info(),
            }
        })?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        walker.event(event, &span);
    }
    walker.flush_pending();
    Ok(walker.out)
}

fn char_to_byte(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// A path segment from a container to one of its children.
#[derive(Debug, Clone)]
enum Seg<'a> {
    Key(Cow<'a, str>),
    Index(usize),
    /// A non-scalar or alias key.
    Complex,
    /// Nothing yet.
    None,
}

#[derive(Debug)]
struct Frame<'a> {
    is_map: bool,
    flow: bool,
    /// Maps only: the next scalar is a key.
    expecting_key: bool,
    /// Sequences only: number of children begun so far.
    count: usize,
    /// Segment to the current (or last) child.
    child: Seg<'a>,
    /// Maps only: the scalar keys seen so far, to report duplicates.
    keys: KeySet<'a>,
}

/// The scalar keys of one mapping and where each first appeared. Most
/// mappings are small: a list is searched until it grows, then a hash map
/// takes over.
#[derive(Debug, Default)]
struct KeySet<'a> {
    list: Vec<(Cow<'a, str>, usize)>,
    map: Option<std::collections::HashMap<Cow<'a, str>, usize>>,
}

impl<'a> KeySet<'a> {
    const LIST_MAX: usize = 16;

    /// Record `key` at `offset`; the offset of its first appearance when it
    /// was seen before.
    fn insert(&mut self, key: Cow<'a, str>, offset: usize) -> Option<usize> {
        if let Some(map) = &mut self.map {
            return match map.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(offset);
                    None
                }
            };
        }
        if let Some((_, first)) = self.list.iter().find(|(k, _)| *k == key) {
            return Some(*first);
        }
        self.list.push((key, offset));
        if self.list.len() > Self::LIST_MAX {
            self.map = Some(std::mem::take(&mut self.list).into_iter().collect());
        }
        None
    }
}

/// The node event just before a comment.
#[derive(Debug)]
enum Last<'a> {
    Nothing,
    Value(Candidate<'a>),
    Key,
    Alias,
    FlowEnd,
    Other,
}

#[derive(Debug)]
struct Candidate<'a> {
    range: Range<usize>,
    style: ScalarStyle,
    value: Cow<'a, str>,
    tagged_non_str: bool,
    end_line: usize,
    in_seq: bool,
    in_flow: bool,
    root: bool,
}

/// A block of own-line comments waiting for the node below it.
#[derive(Debug)]
struct Pending {
    last_line: usize,
    lines: usize,
    /// Setter and comment offset of the marker in the block, if any.
    marker: Option<(String, usize)>,
}

struct Walker<'a> {
    text: &'a str,
    layout: Layout,
    frames: Vec<Frame<'a>>,
    out: Scan,
    document: usize,
    /// Index into `out.objects` of the object being walked.
    object: Option<usize>,
    /// Frame depth at which the current object's root node sits.
    object_depth: usize,
    last: Last<'a>,
    pending: Option<Pending>,
    /// The head marker (setter, comment offset) taken by the scalar in
    /// `last`, applied once it is known that no line comment follows it:
    /// Flux reads a node's line comment, and its head comment only when
    /// the line comment is empty.
    head: Option<(String, usize)>,
}

impl<'a> Walker<'a> {
    fn new(text: &'a str, layout: Layout) -> Self {
        Self {
            text,
            layout,
            frames: Vec::new(),
            out: Scan::default(),
            document: 0,
            object: None,
            object_depth: 0,
            last: Last::Nothing,
            pending: None,
            head: None,
            // Documents are counted from 0; the first DocumentStart sets 0.
        }
    }

    fn event(&mut self, event: Event<'a>, span: &Span) {
        let range = span.byte_range().unwrap_or(0..0);
        if !matches!(event, Event::Comment(..)) {
            self.apply_head();
        }
        match event {
            Event::Comment(text, _) => self.comment(&text, range.start, span.start.line()),
            Event::DocumentStart(..) => {
                // A comment block before the document's first node is still
                // pending: it may sit above a top-level sequence item.
                self.frames.clear();
                if self.layout == Layout::Documents {
                    self.out.objects.push(ObjectInfo {
                        document: self.document,
                        offset: range.start,
                        ..ObjectInfo::default()
                    });
                    self.object = Some(self.out.objects.len() - 1);
                    self.object_depth = 0;
                }
                self.last = Last::Other;
            }
            Event::DocumentEnd => {
                self.flush_pending();
                self.document += 1;
                self.object = None;
                self.last = Last::Other;
            }
            Event::MappingStart(style, ..) | Event::SequenceStart(style, ..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                let flow = style == StructureStyle::Flow;
                self.before_node(span.start.line(), !flow, false);
                self.begin_child(range.start);
                let parent_flow = self.frames.last().is_some_and(|f| f.flow);
                self.frames.push(Frame {
                    is_map,
                    flow: flow || parent_flow,
                    expecting_key: true,
                    count: 0,
                    child: Seg::None,
                    keys: KeySet::default(),
                });
                self.last = Last::Other;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let flow = self.frames.pop().is_some_and(|f| f.flow);
                self.end_child();
                self.last = if flow { Last::FlowEnd } else { Last::Other };
            }
            Event::Alias(_) | Event::UnresolvedAlias(_) => {
                self.before_node(span.start.line(), false, false);
                let is_key = self.begin_child(range.start);
                if let Some(top) = self.frames.last_mut().filter(|_| is_key) {
                    top.child = Seg::Complex;
                }
                self.end_child();
                self.last = if is_key { Last::Key } else { Last::Alias };
            }
            Event::Scalar(value, style, _anchor, tag) => {
                let is_key = self
                    .frames
                    .last()
                    .is_some_and(|f| f.is_map && f.expecting_key);
                self.before_node(span.start.line(), false, !is_key);
                self.begin_child(range.start);
                if is_key {
                    let mut duplicate = None;
                    if let Some(top) = self.frames.last_mut() {
                        duplicate = top.keys.insert(value.clone(), range.start);
                        top.child = Seg::Key(value);
                    }
                    if let Some(first) = duplicate {
                        self.duplicate_key(first, range.start);
                    }
                    self.end_child();
                    self.last = Last::Key;
                    return;
                }
                let tagged_non_str = tag
                    .as_ref()
                    .is_some_and(|t| !t.is_yaml_core_schema_tag("str"));
                self.capture_metadata(&value);
                let candidate = Candidate {
                    range,
                    style,
                    value,
                    tagged_non_str,
                    end_line: span.end.line(),
                    in_seq: self.frames.last().is_some_and(|f| !f.is_map),
                    in_flow: self.frames.last().is_some_and(|f| f.flow),
                    root: self.frames.is_empty(),
                };
                self.head = self.take_head_marker(span.start.line(), &candidate);
                self.end_child();
                self.last = Last::Value(candidate);
            }
            _ => {}
        }
    }

    /// Records the segment of a child that begins, starts a ResourceList
    /// object when the child is an item, and says whether it is a map key.
    fn begin_child(&mut self, offset: usize) -> bool {
        let depth = self.frames.len();
        let Some(top) = self.frames.last_mut() else {
            return false;
        };
        if top.is_map {
            return top.expecting_key;
        }
        top.child = Seg::Index(top.count);
        top.count += 1;
        let item = top.count - 1;
        if self.layout == Layout::ResourceList
            && depth == 2
            && matches!(&self.frames[0].child, Seg::Key(k) if k == "items")
        {
            self.out.objects.push(ObjectInfo {
                document: self.document,
                item: Some(item),
                offset,
                ..ObjectInfo::default()
            });
            self.object = Some(self.out.objects.len() - 1);
            self.object_depth = 2;
        }
        false
    }

    /// A child node of the top frame is complete.
    fn end_child(&mut self) {
        if self.layout == Layout::ResourceList && self.frames.len() == 2 && self.object_depth == 2 {
            // The item that just ended.
            self.object = None;
            self.object_depth = 0;
        }
        if let Some(top) = self.frames.last_mut().filter(|f| f.is_map) {
            top.expecting_key = !top.expecting_key;
        }
    }

    /// Resolve a pending own-line comment block against the node that
    /// follows it, unless that node is a block collection opening on the next
    /// line (the block may still reach a sequence item).
    fn before_node(&mut self, line: usize, block_collection: bool, value_scalar: bool) {
        let Some(pending) = &self.pending else {
            return;
        };
        if block_collection && line == pending.last_line + 1 {
            return;
        }
        let in_seq = self.frames.last().is_some_and(|f| !f.is_map);
        if value_scalar && in_seq && line == pending.last_line + 1 && pending.lines == 1 {
            // The scalar branch takes it with `take_head_marker`.
            return;
        }
        let is_key = self
            .frames
            .last()
            .is_some_and(|f| f.is_map && f.expecting_key);
        if let Some(pending) = self.pending.take()
            && let Some((_, offset)) = pending.marker
        {
            let message = if pending.lines > 1 {
                "marker is part of a multi-line comment block, so it is not a marker; \
                 put it alone on the line above a sequence item or at the end of the value's line"
            } else if is_key {
                "marker above a key applies to nothing; put it at the end of the value's line, \
                 e.g. `image: app:1.0 # {\"$imagepolicy\": \"NS:NAME\"}`"
            } else {
                "marker on its own line applies only to a scalar sequence item directly below it"
            };
            self.finding(offset, message);
        }
    }

    fn take_head_marker(
        &mut self,
        line: usize,
        candidate: &Candidate<'_>,
    ) -> Option<(String, usize)> {
        let pending = self.pending.as_ref()?;
        if !(candidate.in_seq && line == pending.last_line + 1 && pending.lines == 1) {
            return None;
        }
        self.pending.take().and_then(|p| p.marker)
    }

    /// Apply the head marker of the last scalar: no line comment follows it.
    fn apply_head(&mut self) {
        let Some(head) = self.head.take() else {
            return;
        };
        let last = std::mem::replace(&mut self.last, Last::Other);
        if let Last::Value(c) = &last {
            self.apply(head, c);
        }
        self.last = last;
    }

    fn flush_pending(&mut self) {
        self.apply_head();
        if let Some(pending) = self.pending.take()
            && let Some((_, offset)) = pending.marker
        {
            self.finding(
                offset,
                "marker on its own line applies only to a scalar sequence item directly below it",
            );
        }
    }

    fn comment(&mut self, payload: &str, offset: usize, line: usize) {
        let own_line = self.text[..offset]
            .bytes()
            .rev()
            .take_while(|&b| b != b'\n')
            .all(|b| b == b' ' || b == b'\t' || b == b'\r');
        let kind = marker::classify(payload);
        let line_comment_of_last =
            !own_line && matches!(&self.last, Last::Value(c) if c.end_line == line);
        if line_comment_of_last {
            // The scalar's line comment: Flux reads it instead of the head
            // comment, marker or not.
            if let Some((_, head_offset)) = self.head.take() {
                self.finding(
                    head_offset,
                    "marker above a sequence item is not used: the item has a comment at the end of its line, which is read instead",
                );
            }
        } else {
            self.apply_head();
        }
        if let Comment::LookAlike(reason) = &kind {
            self.finding(
                offset,
                &format!("comment looks like an image policy marker but is not one: {reason}"),
            );
        }
        if own_line {
            let setter = match kind {
                Comment::Marker(s) => Some((s, offset)),
                _ => None,
            };
            match &mut self.pending {
                Some(p) if p.last_line + 1 == line => {
                    p.last_line = line;
                    p.lines += 1;
                    if p.marker.is_none() {
                        p.marker = setter;
                    }
                }
                _ => {
                    self.flush_pending();
                    self.pending = Some(Pending {
                        last_line: line,
                        lines: 1,
                        marker: setter,
                    });
                }
            }
            return;
        }
        let Comment::Marker(setter) = kind else {
            return;
        };
        let last = std::mem::replace(&mut self.last, Last::Other);
        match &last {
            Last::Value(c) if matches!(c.style, ScalarStyle::Literal | ScalarStyle::Folded) => self.finding(
                offset,
                "marker on a block scalar (`|` or `>`) cannot be applied: markers apply to single-line scalar values",
            ),
            Last::Value(c) if c.end_line == line => self.apply((setter, offset), c),
            Last::Key => self.finding(
                offset,
                "marker after a key whose value is not on this line applies to nothing: \
                 markers apply to scalar values, not to mappings or sequences",
            ),
            Last::Alias => self.finding(
                offset,
                "marker on an alias (`*name`) cannot be applied: put the marker on the anchored value",
            ),
            Last::FlowEnd => self.finding(
                offset,
                "marker on a flow collection (`[...]` or `{...}`) cannot be applied: markers apply to scalar values",
            ),
            _ => self.finding(offset, "marker is not on the line of a scalar value, so it applies to nothing"),
        }
        self.last = last;
    }

    fn apply(&mut self, (setter, comment_offset): (String, usize), c: &Candidate<'_>) {
        if matches!(c.style, ScalarStyle::Literal | ScalarStyle::Folded) {
            self.finding(
                comment_offset,
                "marker on a block scalar (`|` or `>`) cannot be applied: markers apply to single-line scalar values",
            );
            return;
        }
        if c.root {
            self.finding(
                comment_offset,
                "marker on a document that is a single scalar: markers apply to values in mappings and sequences",
            );
            return;
        }
        if c.tagged_non_str {
            self.finding(
                comment_offset,
                "marker on a scalar with an explicit non-string tag (e.g. `!!int`) cannot be applied: remove the tag",
            );
            return;
        }
        let Some(object) = self.object else {
            // Outside the objects being edited (e.g. a ResourceList's functionConfig).
            return;
        };
        let field_path = self.field_path();
        let (target, offset, value) = if c.range.is_empty() {
            if c.in_seq {
                self.finding(
                    comment_offset,
                    "marker on an empty sequence item cannot be applied: write a value first",
                );
                return;
            }
            // `key: # marker`: the empty span sits at the key's end, before the `:`.
            let Some(colon) = self.text[c.range.start..]
                .find(':')
                .map(|i| c.range.start + i + 1)
            else {
                self.finding(
                    comment_offset,
                    "marker on an empty value whose `:` could not be found",
                );
                return;
            };
            (Target::Insert { at: colon }, colon, String::new())
        } else {
            let style = match c.style {
                ScalarStyle::SingleQuoted => Style::SingleQuoted,
                ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                _ => Style::Plain,
            };
            (
                Target::Replace {
                    range: c.range.clone(),
                    style,
                },
                c.range.start,
                c.value.clone().into_owned(),
            )
        };
        self.out.markers.push(Marker {
            setter,
            object,
            field_path,
            value,
            target,
            in_flow: c.in_flow,
            offset,
        });
    }

    /// Path of the most recent child of the top frame, relative to the
    /// current object's root.
    fn field_path(&self) -> String {
        let mut path = String::new();
        for frame in self.frames.iter().skip(self.object_depth) {
            match &frame.child {
                Seg::Key(k) => {
                    if k.contains(['.', '[', ']', '"', ' ']) || k.is_empty() {
                        path.push('[');
                        path.push_str(&serde_json::Value::from(k.as_ref()).to_string());
                        path.push(']');
                    } else {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(k);
                    }
                }
                Seg::Index(i) => {
                    path.push('[');
                    path.push_str(&i.to_string());
                    path.push(']');
                }
                Seg::Complex => path.push_str("[?]"),
                Seg::None => {}
            }
        }
        path
    }

    /// Record `apiVersion`, `kind`, `metadata.name`, `metadata.namespace` and
    /// the kpt path/index annotations of the current object.
    fn capture_metadata(&mut self, value: &str) {
        let Some(object) = self.object else {
            return;
        };
        let rel = &self.frames[self.object_depth.min(self.frames.len())..];
        let key = |i: usize| match rel.get(i).map(|f| &f.child) {
            Some(Seg::Key(k)) if rel[i].is_map => Some(k.as_ref()),
            _ => None,
        };
        let info = &mut self.out.objects[object];
        match (rel.len(), key(0)) {
            (1, Some("apiVersion")) => info.id.api_version = value.to_owned(),
            (1, Some("kind")) => info.id.kind = value.to_owned(),
            (2, Some("metadata")) => match key(1) {
                Some("name") => info.id.name = value.to_owned(),
                Some("namespace") => info.id.namespace = value.to_owned(),
                _ => {}
            },
            (3, Some("metadata")) if key(1) == Some("annotations") => match key(2) {
                Some("internal.config.kubernetes.io/path") => {
                    info.annotations.path = Some(value.to_owned())
                }
                Some("config.kubernetes.io/path") => {
                    info.annotations
                        .path
                        .get_or_insert_with(|| value.to_owned());
                }
                Some("internal.config.kubernetes.io/index") => {
                    info.annotations.index = Some(value.to_owned())
                }
                Some("config.kubernetes.io/index") => {
                    info.annotations
                        .index
                        .get_or_insert_with(|| value.to_owned());
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// A key that appeared before in the same mapping: YAML forbids it, and
    /// which of the two values a reader keeps differs between readers, so a
    /// marker in either may not govern what is deployed.
    fn duplicate_key(&mut self, first: usize, offset: usize) {
        let Some(Seg::Key(key)) = self.frames.last().map(|f| &f.child) else {
            return;
        };
        let at = crate::text::position_of(self.text, first);
        let message = format!(
            "duplicate key {:?} in this mapping (first at line {}, column {}): YAML forbids duplicate keys, and readers differ in which value they keep",
            key.as_ref(),
            at.line,
            at.column
        );
        self.finding(offset, &message);
    }

    fn finding(&mut self, offset: usize, message: &str) {
        if self.layout == Layout::ResourceList && self.object.is_none() {
            // Only items are edited; comments elsewhere (functionConfig,
            // results) are none of our business.
            return;
        }
        self.out.findings.push(Finding {
            offset,
            object: self.object,
            message: message.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod resource_list_tests;
