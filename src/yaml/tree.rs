//! YAML text as a tree of nodes that know their bytes.
//!
//! The write-back targets (override files, kustomizations, Helm values files, Application manifests)
//! are edited by splicing: a value is replaced by the bytes of its scalar, an entry is inserted after
//! the line of its last sibling. That needs what neither `serde_json::Value` nor the marker scanner
//! keep: every node's byte range, its scalar style, its anchor and the aliases pointing at it. This
//! module builds that tree from granit-parser's event stream (the parser the scanner uses), in one
//! pass, borrowing plain scalars from the text.
//!
//! Ranges: a scalar's range is its token (quotes included; a block scalar's range is its content
//! lines, without the `|`/`>` header); an empty value (`key:`) has an empty range at the `:`; a flow
//! collection's range runs from its opening to its closing bracket; a block collection's from its
//! first child to the end of its last child. Comments are not kept (they never move: edits replace
//! scalars and insert whole lines).

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use granit_parser::{Event, Parser, ScalarStyle, StructureStyle};

use crate::text::{LineIndex, Position};
use crate::yaml::SyntaxError;
use crate::yaml::edit::lines;

/// Index of a node in its [`Tree`].
pub(crate) type NodeId = usize;

/// A scalar's explicit tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// `!!str`.
    Str,
    /// Any other tag, as written (`!!int`, `!custom`).
    Other(String),
}

/// What a node is.
#[derive(Debug, Clone)]
pub enum Kind<'a> {
    Scalar {
        value: Cow<'a, str>,
        style: ScalarStyle,
        /// Boxed: tags are rare, and a node is 64 bytes with it boxed, 80 without.
        tag: Option<Box<Tag>>,
    },
    /// Its entries are [`Tree::entries`].
    Map { entries: Children, flow: bool },
    /// Its items are [`Tree::items`].
    Seq { items: Children, flow: bool },
    /// `*name`: the anchored node it refers to.
    Alias(NodeId),
}

/// Where a collection's children are among its tree's (one array per tree for the entries of
/// every mapping, one for the items of every sequence: a tree of a thousand collections is three
/// allocations, not a thousand).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Children {
    start: usize,
    len: usize,
}

impl Children {
    /// The collection has no children.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    fn range(self) -> Range<usize> {
        self.start..self.start + self.len
    }
}

/// One node and where its bytes are.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    pub kind: Kind<'a>,
    pub range: Range<usize>,
    /// The node is (or sits inside) a flow collection.
    pub in_flow: bool,
    /// The node carries an anchor (`&name`).
    pub anchored: bool,
}

/// One document of the stream.
#[derive(Debug, Clone)]
pub struct Doc {
    pub root: Option<NodeId>,
    /// Where the document starts (its `---` when explicit).
    pub start: usize,
    /// The document starts with `---`.
    pub explicit_start: bool,
}

/// `v`'s items moved into a vector with no spare capacity (`shrink_to_fit` may keep the block).
fn exact<T>(v: &mut Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    out.append(v);
    out
}

/// A field meant to hold a string holds something else ([`Tree::string_field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAString;

/// A parsed YAML stream with byte ranges.
#[derive(Debug)]
pub struct Tree<'a> {
    text: &'a str,
    nodes: Vec<Node<'a>>,
    /// Every mapping's entries, each mapping's together.
    pairs: Vec<(NodeId, NodeId)>,
    /// Every sequence's items, each sequence's together.
    elements: Vec<NodeId>,
    docs: Vec<Doc>,
    lines: LineIndex,
}

struct Frame {
    node: NodeId,
    /// Maps: the key waiting for its value.
    key: Option<NodeId>,
    /// Where this collection's children start on the pending stacks.
    mark: usize,
}

/// The children of the collections still open while parsing: a collection's children are on top
/// of its stack, moved to the tree when it closes.
#[derive(Default)]
struct Pending {
    pairs: Vec<(NodeId, NodeId)>,
    elements: Vec<NodeId>,
}

impl<'a> Tree<'a> {
    /// Parse every document of `text`.
    ///
    /// # Errors
    /// The parser's message, byte offset and position.
    pub fn parse(text: &'a str) -> Result<Self, SyntaxError> {
        let mut options = granit_parser::Options::default();
        options.set_emit_comments(false);
        let mut parser = Parser::new_from_str_with_options(text, options);
        let lines = LineIndex::new(text);
        // A manifest's line holds one or two nodes (`key: value`, `- item`, `key:` and its
        // collection): sized for that, the node array is seldom grown, and growing it (a copy of
        // every node into a new block twice the size) made half of the parse's memory.
        let line_count = lines.lines();
        let mut tree = Tree {
            text,
            nodes: Vec::with_capacity(2 * line_count),
            pairs: Vec::with_capacity(line_count),
            elements: Vec::new(),
            docs: Vec::new(),
            lines,
        };
        let mut stack: Vec<Frame> = Vec::new();
        let mut pending = Pending::default();
        let mut anchors: HashMap<usize, NodeId> = HashMap::new();
        while let Some(next) = parser.next_event() {
            let (event, span) = next.map_err(|e| {
                let m = e.marker();
                let offset = m
                    .byte_offset()
                    .unwrap_or_else(|| char_to_byte(text, m.index()));
                SyntaxError::at(text, offset, e.info())
            })?;
            let range = span.byte_range().unwrap_or(0..0);
            let in_flow = stack.last().is_some_and(|f| tree.nodes[f.node].in_flow);
            match event {
                Event::StreamEnd => break,
                Event::DocumentStart(explicit, _) => {
                    stack.clear();
                    pending.pairs.clear();
                    pending.elements.clear();
                    anchors.clear();
                    tree.docs.push(Doc {
                        root: None,
                        start: range.start,
                        explicit_start: explicit,
                    });
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let tag = tag.map(|t| {
                        Box::new(if t.is_yaml_core_schema_tag("str") {
                            Tag::Str
                        } else {
                            Tag::Other(format!("{}{}", t.original_handle(), t.suffix()))
                        })
                    });
                    let id = tree.push(Node {
                        kind: Kind::Scalar { value, style, tag },
                        range,
                        in_flow,
                        anchored: anchor != 0,
                    });
                    if anchor != 0 {
                        anchors.insert(anchor, id);
                    }
                    tree.attach(&mut stack, &mut pending, id);
                }
                Event::Alias(anchor) => {
                    let Some(&target) = anchors.get(&anchor) else {
                        return Err(SyntaxError::at(
                            text,
                            range.start,
                            "alias to an unknown anchor".to_owned(),
                        ));
                    };
                    let id = tree.push(Node {
                        kind: Kind::Alias(target),
                        range,
                        in_flow,
                        anchored: false,
                    });
                    tree.attach(&mut stack, &mut pending, id);
                }
                Event::MappingStart(style, anchor, _) | Event::SequenceStart(style, anchor, _) => {
                    let flow = style == StructureStyle::Flow;
                    let map = matches!(event, Event::MappingStart(..));
                    let kind = if map {
                        Kind::Map {
                            entries: Children::default(),
                            flow,
                        }
                    } else {
                        Kind::Seq {
                            items: Children::default(),
                            flow,
                        }
                    };
                    let id = tree.push(Node {
                        kind,
                        range,
                        in_flow: in_flow || flow,
                        anchored: anchor != 0,
                    });
                    if anchor != 0 {
                        anchors.insert(anchor, id);
                    }
                    stack.push(Frame {
                        node: id,
                        key: None,
                        mark: if map {
                            pending.pairs.len()
                        } else {
                            pending.elements.len()
                        },
                    });
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    let Some(frame) = stack.pop() else { continue };
                    let id = frame.node;
                    tree.close(&frame, &mut pending);
                    let flow = matches!(
                        tree.nodes[id].kind,
                        Kind::Map { flow: true, .. } | Kind::Seq { flow: true, .. }
                    );
                    if flow {
                        tree.nodes[id].range.end = range.end;
                    } else {
                        let (first, last) = match &tree.nodes[id].kind {
                            Kind::Map { .. } => {
                                let e = tree.entries(id);
                                (e.first().map(|e| e.0), e.last().map(|e| e.1))
                            }
                            Kind::Seq { .. } => {
                                let i = tree.items(id);
                                (i.first().copied(), i.last().copied())
                            }
                            _ => (None, None),
                        };
                        let first_start = first.map(|f| tree.nodes[f].range.start);
                        if let Some(start) = first_start {
                            tree.nodes[id].range.start = start;
                        }
                        if let Some(last) = last {
                            tree.nodes[id].range.end = tree.nodes[last].range.end;
                        }
                    }
                    tree.attach(&mut stack, &mut pending, id);
                }
                _ => {}
            }
        }
        // Kept until the run ends (a catalog holds a thousand trees): moved into blocks of their
        // exact size, the tree holds 40% less (a manifest has 1.2 nodes a line, not 2), and the
        // parse's blocks are freed for the next parse on this thread. Fresh memory is what a run
        // pays most for (its pages are zeroed as they are first touched).
        tree.nodes = exact(&mut tree.nodes);
        tree.pairs = exact(&mut tree.pairs);
        Ok(tree)
    }

    fn push(&mut self, node: Node<'a>) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Hang a finished node on its parent (or make it the document's root).
    fn attach(&mut self, stack: &mut [Frame], pending: &mut Pending, id: NodeId) {
        let Some(frame) = stack.last_mut() else {
            if let Some(doc) = self.docs.last_mut() {
                doc.root = Some(id);
            }
            return;
        };
        match &self.nodes[frame.node].kind {
            Kind::Map { .. } => match frame.key.take() {
                None => frame.key = Some(id),
                Some(key) => pending.pairs.push((key, id)),
            },
            Kind::Seq { .. } => pending.elements.push(id),
            _ => {}
        }
    }

    /// Move a closing collection's children from the pending stacks to the tree.
    fn close(&mut self, frame: &Frame, pending: &mut Pending) {
        match &mut self.nodes[frame.node].kind {
            Kind::Map { entries, .. } => {
                let mark = frame.mark.min(pending.pairs.len());
                *entries = Children {
                    start: self.pairs.len(),
                    len: pending.pairs.len() - mark,
                };
                self.pairs.extend(pending.pairs.drain(mark..));
            }
            Kind::Seq { items, .. } => {
                let mark = frame.mark.min(pending.elements.len());
                *items = Children {
                    start: self.elements.len(),
                    len: pending.elements.len() - mark,
                };
                self.elements.extend(pending.elements.drain(mark..));
            }
            _ => {}
        }
    }

    /// The text the tree was built from.
    #[must_use]
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The documents, in order.
    #[must_use]
    pub fn docs(&self) -> &[Doc] {
        &self.docs
    }

    /// A node.
    #[must_use]
    pub fn node(&self, id: NodeId) -> &Node<'a> {
        &self.nodes[id]
    }

    /// The node an alias refers to; any other node itself.
    #[must_use]
    pub fn resolve(&self, id: NodeId) -> NodeId {
        match self.nodes[id].kind {
            Kind::Alias(target) => target,
            _ => id,
        }
    }

    /// The value of a scalar node (through an alias).
    #[must_use]
    pub fn scalar(&self, id: NodeId) -> Option<&str> {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }

    /// A scalar's value as text, `None` for a null (`~`, `null`, an empty value) or a collection.
    #[must_use]
    pub fn text_value(&self, id: NodeId) -> Option<&str> {
        let id = self.resolve(id);
        match &self.nodes[id].kind {
            Kind::Scalar { value, style, tag } => {
                if *style == ScalarStyle::Plain
                    && tag.is_none()
                    && matches!(value.as_ref(), "~" | "null" | "Null" | "NULL" | "")
                {
                    None
                } else {
                    Some(value)
                }
            }
            _ => None,
        }
    }

    /// A field meant to hold a string, by the one rule for plain scalars
    /// ([`crate::yaml::plain_is_string`]): `Ok(None)` for a null, the text of a quoted, tagged
    /// or block scalar, or of a plain one the value reader reads as a string; an error for a
    /// collection or a plain scalar that reads as a boolean or a number (`branch: 1`).
    ///
    /// # Errors
    /// The node is not a string; the caller names the field at the node's position.
    pub fn string_field(&self, id: NodeId) -> Result<Option<&str>, NotAString> {
        let id = self.resolve(id);
        match &self.nodes[id].kind {
            Kind::Scalar { value, style, tag } => {
                let plain = *style == ScalarStyle::Plain && tag.is_none();
                match self.text_value(id) {
                    None => Ok(None),
                    Some(_) if plain && !crate::yaml::plain_is_string(value) => Err(NotAString),
                    Some(text) => Ok(Some(text)),
                }
            }
            _ => Err(NotAString),
        }
    }

    /// The entries of a mapping (through an alias); empty for anything else.
    #[must_use]
    pub fn entries(&self, id: NodeId) -> &[(NodeId, NodeId)] {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Map { entries, .. } => self.pairs.get(entries.range()).unwrap_or_default(),
            _ => &[],
        }
    }

    /// The items of a sequence (through an alias); empty for anything else.
    #[must_use]
    pub fn items(&self, id: NodeId) -> &[NodeId] {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Seq { items, .. } => self.elements.get(items.range()).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Whether the node (through an alias) is a mapping.
    #[must_use]
    pub fn is_map(&self, id: NodeId) -> bool {
        matches!(self.nodes[self.resolve(id)].kind, Kind::Map { .. })
    }

    /// Whether the node (through an alias) is a sequence.
    #[must_use]
    pub fn is_seq(&self, id: NodeId) -> bool {
        matches!(self.nodes[self.resolve(id)].kind, Kind::Seq { .. })
    }

    /// The value of the first entry of mapping `map` whose key is the scalar `key` (no merge keys:
    /// write-back never edits through `<<`).
    #[must_use]
    pub fn get(&self, map: NodeId, key: &str) -> Option<NodeId> {
        self.entry(map, key).map(|(_, v)| v)
    }

    /// The first entry (key node, value node) of `map` whose key is `key`.
    #[must_use]
    pub fn entry(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        self.entries(map)
            .iter()
            .find(|(k, _)| self.scalar(*k) == Some(key))
            .copied()
    }

    /// Like [`Self::get`], and through `<<` merge keys, as Kubernetes readers see the object.
    #[must_use]
    pub fn lookup(&self, map: NodeId, key: &str) -> Option<NodeId> {
        if let Some(v) = self.get(map, key) {
            return Some(v);
        }
        let merge = self.get(map, "<<")?;
        let merge = self.resolve(merge);
        match &self.nodes[merge].kind {
            Kind::Map { .. } => self.lookup(merge, key),
            Kind::Seq { .. } => self.items(merge).iter().find_map(|m| self.lookup(*m, key)),
            _ => None,
        }
    }

    /// The node at a path of keys from `from`, through aliases and merge keys.
    #[must_use]
    pub fn at(&self, from: NodeId, path: &[&str]) -> Option<NodeId> {
        path.iter().try_fold(from, |node, key| {
            self.lookup(node, key).map(|v| self.resolve(v))
        })
    }

    /// The 1-based line and column of a byte offset.
    #[must_use]
    pub fn position(&self, offset: usize) -> Position {
        self.lines.position(self.text, offset)
    }

    /// The position where a node's value starts (after the `:` for an empty value).
    #[must_use]
    pub fn node_position(&self, id: NodeId) -> Position {
        self.position(self.nodes[id].range.start)
    }

    /// Whether the text's lines end with `\r\n`.
    #[must_use]
    pub fn crlf(&self) -> bool {
        lines::newline(self.text) == "\r\n"
    }

    /// The 0-based column (in bytes) of an offset within its line.
    #[must_use]
    pub fn column(&self, offset: usize) -> usize {
        lines::column(self.text, offset)
    }

    /// The offset just after the line holding the end of node `id` (after its `\n`; the text's
    /// end when the line has none).
    #[must_use]
    pub fn end_of_line_after(&self, id: NodeId) -> usize {
        lines::after_line(self.text, self.nodes[id].range.end)
    }

    /// The offset of the `-` that opens the sequence item starting at `offset`.
    #[must_use]
    pub fn dash_before(&self, offset: usize) -> Option<usize> {
        lines::dash_before(self.text, offset)
    }
}

fn char_to_byte(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(text: &str) -> Vec<(String, String)> {
        let t = Tree::parse(text).unwrap();
        t.nodes
            .iter()
            .map(|n| {
                let kind = match &n.kind {
                    Kind::Scalar { value, .. } => format!("s:{value}"),
                    Kind::Map { .. } => "map".into(),
                    Kind::Seq { .. } => "seq".into(),
                    Kind::Alias(t) => format!("alias:{t}"),
                };
                (kind, text[n.range.clone()].to_owned())
            })
            .collect()
    }

    #[test]
    fn nodes_know_their_bytes() {
        let text = "a: 1\nb:\n  c: \"x\" # note\n  d: &v tag\n  e: *v\nl:\n- x\n- k: 1\n  j: |\n    lit\nf: {p: [1, 2]}\ng:\n";
        let r = ranges(text);
        let find = |k: &str| r.iter().find(|(kind, _)| kind == k).unwrap().1.clone();
        assert_eq!(find("s:x"), "\"x\"");
        assert_eq!(find("s:lit\n"), "lit\n");
        assert!(r.iter().any(|(k, s)| k == "map" && s == "{p: [1, 2]}"));
        assert!(r.iter().any(|(k, s)| k == "seq" && s == "[1, 2]"));
        assert!(
            r.iter()
                .any(|(k, s)| k == "map" && s == "c: \"x\" # note\n  d: &v tag\n  e: *v")
        );
        assert!(r.iter().any(|(k, s)| k.starts_with("alias:") && s == "*v"));
        let t = Tree::parse(text).unwrap();
        let root = t.docs()[0].root.unwrap();
        let e = t.at(root, &["b", "e"]).unwrap();
        assert_eq!(t.scalar(e), Some("tag"));
        let g = t.get(root, "g").unwrap();
        assert_eq!(t.text_value(g), None);
        assert_eq!(&text[t.node(g).range.start..=t.node(g).range.start], ":");
        let l = t.get(root, "l").unwrap();
        let first = t.items(l)[0];
        assert_eq!(
            t.dash_before(t.node(first).range.start),
            Some(text.find("- x").unwrap())
        );
        assert_eq!(
            &text[t.end_of_line_after(t.items(l)[1])..],
            "f: {p: [1, 2]}\ng:\n"
        );
    }

    #[test]
    fn merge_keys_are_followed_when_reading() {
        let text = "base: &b {x: 1}\nobj:\n  <<: *b\n  y: 2\n";
        let t = Tree::parse(text).unwrap();
        let root = t.docs()[0].root.unwrap();
        assert_eq!(
            t.at(root, &["obj", "x"]).and_then(|n| t.scalar(n)),
            Some("1")
        );
        assert!(t.get(t.get(root, "obj").unwrap(), "x").is_none());
    }

    #[test]
    fn documents_and_errors() {
        let t = Tree::parse("%YAML 1.2\n---\na: 1\n---\n- b\n").unwrap();
        assert_eq!(t.docs().len(), 2);
        assert!(t.docs()[0].explicit_start);
        let e = Tree::parse("a: [1\nb: 2\n").unwrap_err();
        assert!(e.offset.is_some_and(|o| o > 0), "{e:?}");
        assert!(Tree::parse("a: *nope\n").is_err());
    }

    #[test]
    fn string_fields_follow_the_value_readers_rule() {
        let text =
            "a: 1\nb: '1'\nc: !!str 1\nd: v1\ne: true\nf: ~\ng: [x]\nh: 0x1f\ni: 1.5\nj: 1.2.3\n";
        let t = Tree::parse(text).unwrap();
        let root = t.docs()[0].root.unwrap();
        let field = |k: &str| t.string_field(t.get(root, k).unwrap());
        assert_eq!(field("a"), Err(NotAString));
        assert_eq!(field("b"), Ok(Some("1")));
        assert_eq!(field("c"), Ok(Some("1")));
        assert_eq!(field("d"), Ok(Some("v1")));
        assert_eq!(field("e"), Err(NotAString));
        assert_eq!(field("f"), Ok(None));
        assert_eq!(field("g"), Err(NotAString));
        assert_eq!(field("h"), Err(NotAString));
        assert_eq!(field("i"), Err(NotAString));
        assert_eq!(field("j"), Ok(Some("1.2.3")));
        // The value reader agrees, field by field.
        let doc = crate::yaml::parse_one(text).unwrap();
        for k in ["a", "b", "c", "d", "e", "h", "i", "j"] {
            assert_eq!(
                doc.value[k].is_string(),
                field(k).is_ok(),
                "{k}: {:?}",
                doc.value[k]
            );
        }
    }
}
