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

pub(crate) mod list;
pub(crate) mod marker;

use std::borrow::Cow;
use std::ops::Range;

use granit_parser::{Event, Parser, ScalarStyle, Span, StructureStyle};

use self::marker::Comment;
use crate::object::{ItemAnnotations, ObjectId};
use crate::text::Position;
use crate::yaml::SyntaxError;
use crate::yaml::edit::{Slot, Style};

/// How the objects of a YAML stream are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Every document is one object (a file on disk).
    Documents,
    /// One `ResourceList` document; its objects are the elements of `items`.
    ResourceList,
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
    pub target: Slot,
    /// Whether the scalar sits inside a flow collection (`[...]`, `{...}`),
    /// where more characters need quoting.
    pub in_flow: bool,
    /// Where the value is (the parser's line and column).
    pub position: Position,
}

/// Something the user should know about a marker or a marker-like comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub offset: usize,
    pub position: Position,
    /// Index into [`Scan::objects`] of the object the finding lies in.
    pub object: Option<usize>,
    pub message: String,
}

/// Everything found in one YAML stream.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
    /// Every document (a file's layout), or the items of a ResourceList
    /// that hold a marker or a finding, or whose path annotation is
    /// absolute or climbs with `..` (a path limit refuses those): the
    /// others are never named, and a large list has many.
    pub objects: Vec<ObjectInfo>,
    pub markers: Vec<Marker>,
    pub findings: Vec<Finding>,
}

/// Scan one YAML stream.
///
/// # Errors
/// Returns the parser's error, with its position, when the stream is not
/// valid YAML; nothing found before the error is returned then, so a broken
/// file is never half-edited.
pub(crate) fn scan(text: &str, layout: Layout) -> Result<Scan, SyntaxError> {
    let mut walker = Walker::new(text, layout);
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| parse_error(&e, 0, 0))?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        walker.event(event, &span);
    }
    walker.flush_pending();
    Ok(walker.out)
}

/// The parser's error, for a text that starts `base` bytes and `lines`
/// lines into the input.
fn parse_error(e: &granit_parser::ScanError, base: usize, lines: usize) -> SyntaxError {
    let m = e.marker();
    SyntaxError {
        // A text parsed from a `&str` always has byte offsets.
        offset: Some(base + m.byte_offset().unwrap_or(0)),
        position: Some(Position {
            line: m.line() + lines,
            column: m.col() + 1,
        }),
        message: e.info(),
    }
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
    list: Vec<(Cow<'a, str>, Position)>,
    map: Option<std::collections::HashMap<Cow<'a, str>, Position>>,
}

impl<'a> KeySet<'a> {
    const LIST_MAX: usize = 16;

    /// Forget every key, keeping the list's room for the next mapping.
    fn clear(&mut self) {
        self.list.clear();
        self.map = None;
    }

    /// Record `key` at `position`; the position of its first appearance
    /// when it was seen before.
    fn insert(&mut self, key: Cow<'a, str>, position: Position) -> Option<Position> {
        if let Some(map) = &mut self.map {
            return match map.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(position);
                    None
                }
            };
        }
        if let Some((_, first)) = self.list.iter().find(|(k, _)| *k == key) {
            return Some(*first);
        }
        self.list.push((key, position));
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
    /// Where the scalar starts.
    start: Position,
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
    /// Setter and place of the marker in the block, if any.
    marker: Option<(String, At)>,
}

/// The identity and kpt annotations of the object being walked, as the
/// parser gave them (borrowed from the text when it could), written into
/// its [`ObjectInfo`] when the object ends and is kept.
#[derive(Debug, Default)]
struct Meta<'a> {
    api_version: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    namespace: Option<Cow<'a, str>>,
    /// `internal.config.kubernetes.io/path` (the last), else
    /// `config.kubernetes.io/path` (the first); the same for the index.
    path: Option<Cow<'a, str>>,
    legacy_path: Option<Cow<'a, str>>,
    index: Option<Cow<'a, str>>,
    legacy_index: Option<Cow<'a, str>>,
}

/// Where something is in the input: its byte offset and its position.
#[derive(Debug, Clone, Copy)]
struct At {
    offset: usize,
    position: Position,
}

struct Walker<'a> {
    text: &'a str,
    layout: Layout,
    /// Where the parsed text starts in `text`: the parser's offsets are
    /// `base` bytes and its lines `lines` lines short (a chunk of a
    /// ResourceList parsed on its own, see [`list`]).
    base: usize,
    lines: usize,
    frames: Vec<Frame<'a>>,
    out: Scan,
    document: usize,
    /// Index into `out.objects` of the object being walked.
    object: Option<usize>,
    /// Frame depth at which the current object's root node sits.
    object_depth: usize,
    last: Last<'a>,
    pending: Option<Pending>,
    /// The head marker (setter, comment) taken by the scalar in `last`,
    /// applied once it is known that no line comment follows it: Flux
    /// reads a node's line comment, and its head comment only when the
    /// line comment is empty.
    head: Option<(String, At)>,
    /// The deepest nesting of collections seen.
    max_depth: usize,
    /// Whether a marker or a finding names the current object.
    object_used: bool,
    /// What the current object says of itself.
    meta: Meta<'a>,
    /// Key sets of closed mappings, kept for their room.
    spare_keys: Vec<KeySet<'a>>,
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
            base: 0,
            lines: 0,
            max_depth: 0,
            object_used: false,
            meta: Meta::default(),
            spare_keys: Vec::new(),
            // Documents are counted from 0; the first DocumentStart sets 0.
        }
    }

    /// The position of a parser marker in the input.
    fn position(&self, m: &granit_parser::Marker) -> Position {
        Position {
            line: m.line() + self.lines,
            column: m.col() + 1,
        }
    }

    fn event(&mut self, event: Event<'a>, span: &Span) {
        let range = span.byte_range().map_or(self.base..self.base, |r| {
            r.start + self.base..r.end + self.base
        });
        let start = self.position(&span.start);
        if self.head.is_some() && !matches!(event, Event::Comment(..)) {
            self.apply_head();
        }
        match event {
            Event::Comment(text, _) => self.comment(
                &text,
                At {
                    offset: range.start,
                    position: start,
                },
            ),
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
                self.close_object(false);
                self.last = Last::Other;
            }
            Event::MappingStart(style, ..) | Event::SequenceStart(style, ..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                let flow = style == StructureStyle::Flow;
                self.before_node(start.line, !flow, false);
                self.begin_child(range.start);
                let parent_flow = self.frames.last().is_some_and(|f| f.flow);
                self.max_depth = self.max_depth.max(self.frames.len() + 1);
                let keys = self.spare_keys.pop().unwrap_or_default();
                self.frames.push(Frame {
                    is_map,
                    flow: flow || parent_flow,
                    expecting_key: true,
                    count: 0,
                    child: Seg::None,
                    keys,
                });
                self.last = Last::Other;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let mut flow = false;
                if let Some(mut frame) = self.frames.pop() {
                    flow = frame.flow;
                    frame.keys.clear();
                    self.spare_keys.push(frame.keys);
                }
                self.end_child();
                self.last = if flow { Last::FlowEnd } else { Last::Other };
            }
            Event::Alias(_) | Event::UnresolvedAlias(_) => {
                self.before_node(start.line, false, false);
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
                self.before_node(start.line, false, !is_key);
                self.begin_child(range.start);
                if is_key {
                    let mut duplicate = None;
                    if let Some(top) = self.frames.last_mut() {
                        duplicate = top.keys.insert(value.clone(), start);
                        top.child = Seg::Key(value);
                    }
                    if let Some(first) = duplicate {
                        self.duplicate_key(
                            first,
                            At {
                                offset: range.start,
                                position: start,
                            },
                        );
                    }
                    self.end_child();
                    self.last = Last::Key;
                    return;
                }
                let tagged_non_str = tag
                    .as_ref()
                    .is_some_and(|t| !t.is_yaml_core_schema_tag("str"));
                if let Some(slot) = self.metadata_slot() {
                    *slot = Some(value.clone());
                }
                let candidate = Candidate {
                    range,
                    start,
                    style,
                    value,
                    tagged_non_str,
                    end_line: span.end.line() + self.lines,
                    in_seq: self.frames.last().is_some_and(|f| !f.is_map),
                    in_flow: self.frames.last().is_some_and(|f| f.flow),
                    root: self.frames.is_empty(),
                };
                self.head = self.take_head_marker(start.line, &candidate);
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
            self.object_used = false;
            self.object_depth = 2;
        }
        false
    }

    /// A child node of the top frame is complete.
    fn end_child(&mut self) {
        if self.layout == Layout::ResourceList && self.frames.len() == 2 && self.object_depth == 2 {
            // The item that just ended: forgotten unless something names it.
            self.close_object(true);
            self.object_depth = 0;
        }
        if let Some(top) = self.frames.last_mut().filter(|f| f.is_map) {
            top.expecting_key = !top.expecting_key;
        }
    }

    /// The current object ends: its identity is written into it, or, when
    /// `forget_unused` and nothing names it, it is forgotten (unless a path
    /// limit could refuse its path annotation: absolute, or with `..`).
    fn close_object(&mut self, forget_unused: bool) {
        let meta = std::mem::take(&mut self.meta);
        let Some(object) = self.object.take() else {
            return;
        };
        let path = meta.path.or(meta.legacy_path);
        let refusable = |p: &str| p.starts_with(['/', '\\']) || p.contains("..");
        if forget_unused
            && !self.object_used
            && object + 1 == self.out.objects.len()
            && !path.as_deref().is_some_and(refusable)
        {
            self.out.objects.pop();
            return;
        }
        let Some(info) = self.out.objects.get_mut(object) else {
            return;
        };
        let owned = |v: Option<Cow<'_, str>>| v.map(Cow::into_owned).unwrap_or_default();
        info.id.api_version = owned(meta.api_version);
        info.id.kind = owned(meta.kind);
        info.id.name = owned(meta.name);
        info.id.namespace = owned(meta.namespace);
        info.annotations.path = path.map(Cow::into_owned);
        info.annotations.index = meta.index.or(meta.legacy_index).map(Cow::into_owned);
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
            && let Some((_, at)) = pending.marker
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
            self.finding(at, message);
        }
    }

    fn take_head_marker(&mut self, line: usize, candidate: &Candidate<'_>) -> Option<(String, At)> {
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
            && let Some((_, at)) = pending.marker
        {
            self.finding(
                at,
                "marker on its own line applies only to a scalar sequence item directly below it",
            );
        }
    }

    fn comment(&mut self, payload: &str, at: At) {
        let line = at.position.line;
        let own_line = self.text[..at.offset]
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
            if let Some((_, head_at)) = self.head.take() {
                self.finding(
                    head_at,
                    "marker above a sequence item is not used: the item has a comment at the end of its line, which is read instead",
                );
            }
        } else {
            self.apply_head();
        }
        if let Comment::LookAlike(reason) = &kind {
            self.finding(
                at,
                &format!("comment looks like an image policy marker but is not one: {reason}"),
            );
        }
        if own_line {
            let setter = match kind {
                Comment::Marker(s) => Some((s, at)),
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
                at,
                "marker on a block scalar (`|` or `>`) cannot be applied: markers apply to single-line scalar values",
            ),
            Last::Value(c) if c.end_line == line => self.apply((setter, at), c),
            Last::Key => self.finding(
                at,
                "marker after a key whose value is not on this line applies to nothing: \
                 markers apply to scalar values, not to mappings or sequences",
            ),
            Last::Alias => self.finding(
                at,
                "marker on an alias (`*name`) cannot be applied: put the marker on the anchored value",
            ),
            Last::FlowEnd => self.finding(
                at,
                "marker on a flow collection (`[...]` or `{...}`) cannot be applied: markers apply to scalar values",
            ),
            _ => self.finding(at, "marker is not on the line of a scalar value, so it applies to nothing"),
        }
        self.last = last;
    }

    fn apply(&mut self, (setter, comment): (String, At), c: &Candidate<'_>) {
        if matches!(c.style, ScalarStyle::Literal | ScalarStyle::Folded) {
            self.finding(
                comment,
                "marker on a block scalar (`|` or `>`) cannot be applied: markers apply to single-line scalar values",
            );
            return;
        }
        if c.root {
            self.finding(
                comment,
                "marker on a document that is a single scalar: markers apply to values in mappings and sequences",
            );
            return;
        }
        if c.tagged_non_str {
            self.finding(
                comment,
                "marker on a scalar with an explicit non-string tag (e.g. `!!int`) cannot be applied: remove the tag",
            );
            return;
        }
        let Some(object) = self.object else {
            // Outside the objects being edited (e.g. a ResourceList's functionConfig).
            return;
        };
        let field_path = self.field_path();
        let (target, position, value) = if c.range.is_empty() {
            if c.in_seq {
                self.finding(
                    comment,
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
                    comment,
                    "marker on an empty value whose `:` could not be found",
                );
                return;
            };
            let position = c.start.after(&self.text[c.range.start..colon]);
            (Slot::Empty { at: colon }, position, String::new())
        } else {
            (
                Slot::Scalar {
                    range: c.range.clone(),
                    style: Style::of(c.style),
                },
                c.start,
                c.value.clone().into_owned(),
            )
        };
        self.object_used = true;
        self.out.markers.push(Marker {
            setter,
            object,
            field_path,
            value,
            target,
            in_flow: c.in_flow,
            position,
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
    fn metadata_slot(&mut self) -> Option<&mut Option<Cow<'a, str>>> {
        self.object?;
        let rel = &self.frames[self.object_depth.min(self.frames.len())..];
        let key = |i: usize| match rel.get(i).map(|f| &f.child) {
            Some(Seg::Key(k)) if rel[i].is_map => Some(k.as_ref()),
            _ => None,
        };
        let meta = &mut self.meta;
        let slot = match (rel.len(), key(0)) {
            (1, Some("apiVersion")) => &mut meta.api_version,
            (1, Some("kind")) => &mut meta.kind,
            (2, Some("metadata")) => match key(1) {
                Some("name") => &mut meta.name,
                Some("namespace") => &mut meta.namespace,
                _ => return None,
            },
            (3, Some("metadata")) if key(1) == Some("annotations") => match key(2) {
                Some("internal.config.kubernetes.io/path") => &mut meta.path,
                Some("internal.config.kubernetes.io/index") => &mut meta.index,
                // The legacy annotations count only without the internal
                // ones, and the first of each wins.
                Some("config.kubernetes.io/path") if meta.legacy_path.is_none() => {
                    &mut meta.legacy_path
                }
                Some("config.kubernetes.io/index") if meta.legacy_index.is_none() => {
                    &mut meta.legacy_index
                }
                _ => return None,
            },
            _ => return None,
        };
        Some(slot)
    }

    /// A key that appeared before in the same mapping: YAML forbids it, and
    /// which of the two values a reader keeps differs between readers, so a
    /// marker in either may not govern what is deployed.
    fn duplicate_key(&mut self, first: Position, at: At) {
        let Some(Seg::Key(key)) = self.frames.last().map(|f| &f.child) else {
            return;
        };
        let message = format!(
            "duplicate key {:?} in this mapping (first at line {}, column {}): YAML forbids duplicate keys, and readers differ in which value they keep",
            key.as_ref(),
            first.line,
            first.column
        );
        self.finding(at, &message);
    }

    fn finding(&mut self, at: At, message: &str) {
        if self.layout == Layout::ResourceList && self.object.is_none() {
            // Only items are edited; comments elsewhere (functionConfig,
            // results) are none of our business.
            return;
        }
        self.object_used |= self.object.is_some();
        self.out.findings.push(Finding {
            offset: at.offset,
            position: at.position,
            object: self.object,
            message: message.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod resource_list_tests;
