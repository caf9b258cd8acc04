//! Planned changes to one YAML file, rendered as splices of the original bytes.
//!
//! An [`Editor`] lays an overlay over a [`Tree`]: scalars to replace, entries to add to a
//! mapping, items to add to (or insert into) a sequence, entries to remove. Readers see the
//! overlay (a key added by one write is found by the next), so several writes, even from several
//! Applications, compose on one file. [`Editor::finish`] turns the overlay into [`Edit`]s against the
//! original text, never re-serialising anything that exists:
//!
//! * a replaced scalar keeps its quote style (plain becomes double-quoted only when the value would
//!   not read back as the same string); a block scalar (`|`, `>`) or a scalar with a non-string tag
//!   is refused;
//! * entries added to a block mapping are inserted as whole lines after the line where the mapping's
//!   last entry ends, at the column of its first key; items added to a block sequence after its last
//!   item, at its dash's column; an item inserted before another at that item's line;
//! * new collections are block collections, indented by the file's own step (the smallest nesting
//!   step found, else 2) and with its sequence style (`- ` under the key, or indented);
//! * entries added to a non-empty flow collection go before its closing bracket, in flow style; an
//!   empty flow collection (`[]`, `{}`) or a null value in block context is replaced by the block
//!   rendering of its new content;
//! * a removed entry of a block mapping loses its lines (when it shares a line with a sequence
//!   dash, the next entry moves up onto that line); a flow mapping that loses an entry is rendered
//!   again in flow style;
//! * the line ending is the file's (`\r\n` when its first line has one).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use granit_parser::ScalarStyle;

use super::lines::line_start;
use super::{Edit, Slot, Style, quote, write_scalar};
use crate::yaml::tree::{Kind, NodeId, Tag, Tree};

/// A node of the file as edited: one that exists, or one the overlay adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Handle {
    Real(NodeId),
    New(usize),
}

/// What a node is, as the overlay sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A scalar with a value (including an explicit empty string).
    Scalar,
    /// A null (`~`, `null`, or nothing after the `:`).
    Null,
    Map,
    Seq,
}

impl Shape {
    /// `a scalar`, `a mapping`, `a sequence`, `nothing` (for messages).
    #[must_use]
    pub(crate) fn described(self) -> &'static str {
        match self {
            Shape::Scalar => "a scalar",
            Shape::Null => "nothing",
            Shape::Map => "a mapping",
            Shape::Seq => "a sequence",
        }
    }
}

#[derive(Debug, Clone)]
enum NewNode {
    Scalar(String),
    /// A scalar written as is (`true`, a number).
    Raw(String),
    Map(Vec<(String, Handle)>),
    Seq(Vec<Handle>),
}

/// An edit the overlay cannot express for this file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct EditProblem {
    /// Where in the original text the problem is.
    pub offset: usize,
    pub message: String,
}

/// The overlay of one file.
#[derive(Debug)]
pub(crate) struct Editor<'t, 'a> {
    tree: &'t Tree<'a>,
    news: Vec<NewNode>,
    replaced: BTreeMap<NodeId, String>,
    /// Replaced scalars written as is (`true`), not quoted as strings.
    raw: BTreeSet<NodeId>,
    /// Real collections: children added at their end.
    appended: BTreeMap<NodeId, Vec<(Option<String>, Handle)>>,
    /// Real sequences: items inserted before the item at an index.
    before: BTreeMap<(NodeId, usize), Vec<Handle>>,
    /// Real mappings: indexes of removed entries.
    removed: BTreeSet<(NodeId, usize)>,
    /// Real nulls and empty flow collections replaced by a new collection.
    filled: BTreeMap<NodeId, Handle>,
    step: usize,
    compact: bool,
    newline: &'static str,
    /// Scalars whose position in the new text is wanted.
    tracked: Vec<Handle>,
    /// The first of `tracked` by resolved handle, built when the file is finished (a scan of
    /// `tracked` for every scalar rendered made finishing N changes take N² steps); dropped by
    /// any change that may move what a handle resolves to.
    tracked_by: std::cell::OnceCell<HashMap<Handle, usize>>,
    /// The document's mapping when the text has none yet (empty, blank, comments only).
    virtual_root: Option<Handle>,
    /// Written first when a blank text gets content.
    header: String,
}

/// The edits of a file and where the tracked scalars end up in the new text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Finished {
    pub edits: Vec<Edit>,
    /// Byte offset in the new text of each tracked scalar, in tracking order.
    pub offsets: Vec<Option<usize>>,
}

impl<'t, 'a> Editor<'t, 'a> {
    #[must_use]
    pub(crate) fn new(tree: &'t Tree<'a>) -> Self {
        let (step, compact) = style_of(tree);
        Self {
            tree,
            news: Vec::new(),
            replaced: BTreeMap::new(),
            raw: BTreeSet::new(),
            appended: BTreeMap::new(),
            before: BTreeMap::new(),
            removed: BTreeSet::new(),
            filled: BTreeMap::new(),
            step,
            compact,
            newline: if tree.crlf() { "\r\n" } else { "\n" },
            tracked: Vec::new(),
            tracked_by: std::cell::OnceCell::new(),
            virtual_root: None,
            header: String::new(),
        }
    }

    /// Text written before the content when a blank file gets some (a comment line).
    pub(crate) fn set_header(&mut self, header: &str) {
        header.clone_into(&mut self.header);
    }

    /// The mapping at the top of the file's one document; a file with no content yet (empty,
    /// blank, comments only, a lone `---`) gets a new one.
    ///
    /// # Errors
    /// Several documents, or a top level that is not a mapping.
    pub(crate) fn root(&mut self) -> Result<Handle, EditProblem> {
        if let Some(v) = self.virtual_root {
            return Ok(v);
        }
        let docs = self.tree.docs();
        let with_content: Vec<_> = docs.iter().filter(|d| d.root.is_some()).collect();
        if docs.len() > 1 && with_content.len() > 1 {
            return Err(EditProblem {
                offset: docs[1].start,
                message: format!("the file holds {} YAML documents; expected one", docs.len()),
            });
        }
        match with_content.first().and_then(|d| d.root) {
            Some(root) if self.shape(Handle::Real(root)) != Shape::Null => {
                if self.shape(Handle::Real(root)) == Shape::Map {
                    Ok(Handle::Real(root))
                } else {
                    Err(EditProblem {
                        offset: self.tree.node(root).range.start,
                        message: format!(
                            "the top level is {}, not a mapping",
                            self.shape(Handle::Real(root)).described()
                        ),
                    })
                }
            }
            _ => {
                let m = self.new_map();
                self.virtual_root = Some(m);
                Ok(m)
            }
        }
    }

    /// The tree under the overlay.
    #[must_use]
    pub(crate) fn tree(&self) -> &'t Tree<'a> {
        self.tree
    }

    /// Whether nothing has been changed.
    #[must_use]
    pub(crate) fn is_empty(&self) -> bool {
        self.replaced.is_empty()
            && self.appended.is_empty()
            && self.before.is_empty()
            && self.removed.is_empty()
            && self.filled.is_empty()
            && self.virtual_root.is_none_or(|v| self.entries(v).is_empty())
    }

    /// An alias's target; the new content of a filled null; the node itself otherwise.
    #[must_use]
    pub(crate) fn resolve(&self, h: Handle) -> Handle {
        match h {
            Handle::Real(id) => {
                let id = self.tree.resolve(id);
                self.filled.get(&id).copied().unwrap_or(Handle::Real(id))
            }
            new => new,
        }
    }

    /// What the node is now.
    #[must_use]
    pub(crate) fn shape(&self, h: Handle) -> Shape {
        match self.resolve(h) {
            Handle::Real(id) => {
                if let Some(v) = self.replaced.get(&id) {
                    return if v.is_empty() {
                        Shape::Null
                    } else {
                        Shape::Scalar
                    };
                }
                match &self.tree.node(id).kind {
                    Kind::Map { .. } => Shape::Map,
                    Kind::Seq { .. } => Shape::Seq,
                    _ if self.tree.text_value(id).is_none() => Shape::Null,
                    _ => Shape::Scalar,
                }
            }
            Handle::New(i) => match &self.news[i] {
                NewNode::Scalar(_) | NewNode::Raw(_) => Shape::Scalar,
                NewNode::Map(_) => Shape::Map,
                NewNode::Seq(_) => Shape::Seq,
            },
        }
    }

    /// A scalar's value now (`None` for a null or a collection).
    #[must_use]
    pub(crate) fn scalar(&self, h: Handle) -> Option<String> {
        match self.resolve(h) {
            Handle::Real(id) => match self.replaced.get(&id) {
                Some(v) => Some(v.clone()),
                None => self.tree.text_value(id).map(str::to_owned),
            },
            Handle::New(i) => match &self.news[i] {
                NewNode::Scalar(v) | NewNode::Raw(v) => Some(v.clone()),
                _ => None,
            },
        }
    }

    /// The entries of a mapping now: key text and value, in order (removed ones left out).
    #[must_use]
    pub(crate) fn entries(&self, map: Handle) -> Vec<(String, Handle)> {
        self.entry_refs(map)
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    /// The value of the first entry with key `key`.
    #[must_use]
    pub(crate) fn get(&self, map: Handle, key: &str) -> Option<Handle> {
        self.entry_refs(map)
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// The entries of a mapping now, in order, borrowed ([`Editor::entries`] without copying
    /// the keys).
    fn entry_refs(&self, map: Handle) -> impl Iterator<Item = (&str, Handle)> + '_ {
        let (real, new) = match self.resolve(map) {
            Handle::Real(id) => (Some(id), None),
            Handle::New(i) => match &self.news[i] {
                NewNode::Map(e) => (None, Some(e)),
                _ => (None, None),
            },
        };
        let in_tree = real.into_iter().flat_map(move |id| {
            self.tree
                .entries(id)
                .iter()
                .enumerate()
                .filter(move |(i, _)| !self.removed.contains(&(id, *i)))
                .filter_map(|(_, (k, v))| self.tree.scalar(*k).map(|k| (k, Handle::Real(*v))))
                .chain(
                    self.appended
                        .get(&id)
                        .into_iter()
                        .flatten()
                        .filter_map(|(k, v)| k.as_deref().map(|k| (k, *v))),
                )
        });
        in_tree.chain(new.into_iter().flatten().map(|(k, v)| (k.as_str(), *v)))
    }

    /// The items of a sequence now, in order.
    #[must_use]
    pub(crate) fn items(&self, seq: Handle) -> Vec<Handle> {
        match self.resolve(seq) {
            Handle::Real(id) => {
                let mut out = Vec::new();
                for (i, item) in self.tree.items(id).iter().enumerate() {
                    out.extend(self.before.get(&(id, i)).into_iter().flatten().copied());
                    out.push(Handle::Real(*item));
                }
                out.extend(
                    self.appended
                        .get(&id)
                        .into_iter()
                        .flatten()
                        .map(|(_, v)| *v),
                );
                out
            }
            Handle::New(i) => match &self.news[i] {
                NewNode::Seq(items) => items.clone(),
                _ => Vec::new(),
            },
        }
    }

    /// A new scalar.
    pub(crate) fn new_scalar(&mut self, value: &str) -> Handle {
        self.news.push(NewNode::Scalar(value.to_owned()));
        Handle::New(self.news.len() - 1)
    }

    /// A new scalar written as is, unquoted (`true`, `3`): for values that are not strings.
    pub(crate) fn new_raw(&mut self, text: &str) -> Handle {
        self.news.push(NewNode::Raw(text.to_owned()));
        Handle::New(self.news.len() - 1)
    }

    /// Give a scalar a value that is written as is (`true`), not as a string.
    ///
    /// # Errors
    /// As [`Self::set_scalar`].
    pub(crate) fn set_raw(&mut self, h: Handle, text: &str) -> Result<Handle, EditProblem> {
        let h = self.set_scalar(h, text)?;
        match h {
            Handle::Real(id) => {
                self.raw.insert(id);
            }
            Handle::New(i) => self.news[i] = NewNode::Raw(text.to_owned()),
        }
        Ok(h)
    }

    /// A new, empty mapping.
    pub(crate) fn new_map(&mut self) -> Handle {
        self.news.push(NewNode::Map(Vec::new()));
        Handle::New(self.news.len() - 1)
    }

    /// A new, empty sequence.
    pub(crate) fn new_seq(&mut self) -> Handle {
        self.news.push(NewNode::Seq(Vec::new()));
        Handle::New(self.news.len() - 1)
    }

    /// Remember where a scalar ends up, for [`Finished::offsets`].
    pub(crate) fn track(&mut self, h: Handle) -> usize {
        self.tracked_by.take();
        self.tracked.push(h);
        self.tracked.len() - 1
    }

    /// Give a scalar a new value (through an alias: the anchored scalar).
    ///
    /// # Errors
    /// A block scalar, a scalar with a non-string tag, or a collection.
    pub(crate) fn set_scalar(&mut self, h: Handle, value: &str) -> Result<Handle, EditProblem> {
        match self.resolve(h) {
            Handle::Real(id) => {
                let node = self.tree.node(id);
                let Kind::Scalar { style, tag, .. } = &node.kind else {
                    return Err(self.problem(id, "is a collection, not a scalar value"));
                };
                if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
                    return Err(self.problem(
                        id,
                        "is a block scalar (| or >); write the value as a plain or quoted scalar",
                    ));
                }
                if let Some(Tag::Other(t)) = tag.as_deref() {
                    return Err(self.problem(
                        id,
                        &format!("carries the tag {t}; a string value cannot be written there"),
                    ));
                }
                self.replaced.insert(id, value.to_owned());
                Ok(Handle::Real(id))
            }
            Handle::New(i) => match &mut self.news[i] {
                NewNode::Scalar(v) | NewNode::Raw(v) => {
                    value.clone_into(v);
                    Ok(Handle::New(i))
                }
                _ => Err(EditProblem {
                    offset: 0,
                    message: "is a collection, not a scalar value".to_owned(),
                }),
            },
        }
    }

    fn problem(&self, id: NodeId, what: &str) -> EditProblem {
        EditProblem {
            offset: self.tree.node(id).range.start,
            message: format!("the value {what}"),
        }
    }

    /// Add an entry at the end of a mapping. A null (`key:`) or an empty `{}` that is asked to hold
    /// an entry becomes a block mapping.
    ///
    /// # Errors
    /// `map` is not a mapping or a null.
    pub(crate) fn insert(
        &mut self,
        map: Handle,
        key: &str,
        value: Handle,
    ) -> Result<(), EditProblem> {
        let map = self.fill_if_empty(map, true)?;
        match map {
            Handle::Real(id) => {
                self.appended
                    .entry(id)
                    .or_default()
                    .push((Some(key.to_owned()), value));
                Ok(())
            }
            Handle::New(i) => match &mut self.news[i] {
                NewNode::Map(e) => {
                    e.push((key.to_owned(), value));
                    Ok(())
                }
                _ => Err(not_a("mapping")),
            },
        }
    }

    /// Add an item at the end of a sequence (a null or an empty `[]` becomes a block sequence).
    ///
    /// # Errors
    /// `seq` is not a sequence or a null.
    pub(crate) fn push(&mut self, seq: Handle, item: Handle) -> Result<(), EditProblem> {
        let seq = self.fill_if_empty(seq, false)?;
        match seq {
            Handle::Real(id) => {
                self.appended.entry(id).or_default().push((None, item));
                Ok(())
            }
            Handle::New(i) => match &mut self.news[i] {
                NewNode::Seq(items) => {
                    items.push(item);
                    Ok(())
                }
                _ => Err(not_a("sequence")),
            },
        }
    }

    /// Insert an item before the existing item at `index` of a sequence in the file.
    ///
    /// # Errors
    /// `seq` is not a sequence of the file.
    pub(crate) fn insert_before(
        &mut self,
        seq: Handle,
        index: usize,
        item: Handle,
    ) -> Result<(), EditProblem> {
        match self.resolve(seq) {
            Handle::Real(id) if self.tree.is_seq(id) && index < self.tree.items(id).len() => {
                self.before.entry((id, index)).or_default().push(item);
                Ok(())
            }
            _ => self.push(seq, item),
        }
    }

    /// Remove the first entry with key `key` from a mapping of the file.
    pub(crate) fn remove(&mut self, map: Handle, key: &str) {
        if let Handle::Real(id) = self.resolve(map) {
            let found = self
                .tree
                .entries(id)
                .iter()
                .position(|(k, _)| self.tree.scalar(*k) == Some(key));
            if let Some(i) = found {
                self.removed.insert((id, i));
            }
        }
    }

    /// A null or an empty flow collection that must hold content becomes a new collection.
    fn fill_if_empty(&mut self, h: Handle, map: bool) -> Result<Handle, EditProblem> {
        let h = self.resolve(h);
        let Handle::Real(id) = h else {
            return Ok(h);
        };
        let node = self.tree.node(id);
        let empty_flow = match &node.kind {
            Kind::Map {
                entries,
                flow: true,
            } => map && entries.is_empty(),
            Kind::Seq { items, flow: true } => !map && items.is_empty(),
            _ => false,
        };
        let null = matches!(node.kind, Kind::Scalar { .. }) && self.shape(h) == Shape::Null;
        if (empty_flow && !nested_in_flow(self.tree, node)) || (null && !node.in_flow) {
            let new = if map { self.new_map() } else { self.new_seq() };
            self.filled.insert(id, new);
            self.tracked_by.take();
            return Ok(new);
        }
        match (&node.kind, map) {
            (Kind::Map { .. }, true) | (Kind::Seq { .. }, false) => Ok(h),
            _ => Err(EditProblem {
                offset: node.range.start,
                message: format!(
                    "the value is {}, not a {}",
                    self.shape(h).described(),
                    if map { "mapping" } else { "sequence" }
                ),
            }),
        }
    }

    /// The edits, sorted and non-overlapping, and the new offsets of the tracked scalars.
    ///
    /// # Errors
    /// Content that cannot be placed (an insertion into a collection whose position is unknown).
    pub(crate) fn finish(&self) -> Result<Finished, EditProblem> {
        let mut edits = Pending::default();
        self.replaced_edits(&mut edits);
        self.filled_edits(&mut edits);
        self.appended_edits(&mut edits)?;
        self.before_edits(&mut edits);
        self.removed_edits(&mut edits);
        self.root_edits(&mut edits);
        let joined = edits.join()?;
        Ok(self.placed(joined))
    }

    /// Replaced scalars: in their own quoting, through the one scalar writer.
    fn replaced_edits(&self, edits: &mut Pending) {
        let text = self.tree.text();
        for (id, value) in &self.replaced {
            if self.tree.text_value(*id) == Some(value.as_str()) {
                continue;
            }
            let node = self.tree.node(*id);
            let slot = if node.range.is_empty() {
                // `key:` with nothing after the colon.
                let at = node.range.start + usize::from(text[node.range.start..].starts_with(':'));
                Slot::Empty { at }
            } else {
                let style = match &node.kind {
                    Kind::Scalar { style, .. } => Style::of(*style),
                    _ => Style::Plain,
                };
                Slot::Scalar {
                    range: node.range.clone(),
                    style,
                }
            };
            let edit = match &slot {
                Slot::Scalar {
                    range,
                    style: Style::Plain,
                } if self.raw.contains(id) => Edit::new(range.clone(), value.as_str()),
                _ => write_scalar(&slot, value, node.in_flow),
            };
            let mut r = Rendered::default();
            r.marks.extend(
                self.tracked_index(Handle::Real(*id))
                    .map(|t| (t, slot.value_offset())),
            );
            r.push(edit.replacement());
            edits.push(edit.range(), (0, 0), r);
        }
    }

    /// Nulls and empty flow collections that hold new content: its block rendering.
    fn filled_edits(&self, edits: &mut Pending) {
        let text = self.tree.text();
        for (id, new) in &self.filled {
            let node = self.tree.node(*id);
            if self.tree.docs().iter().any(|d| d.root == Some(*id)) {
                // A document that is `{}` (or `[]`): its content, from the first column.
                let mut r = Rendered::default();
                self.render_block_body(*new, 0, &mut r);
                r.trim_last_newline(self.newline);
                edits.push(node.range.clone(), (0, 0), r);
                continue;
            }
            let indent = self.indent_of_parent_key(*id);
            let mut r = Rendered::default();
            let child_indent = match self.shape(*new) {
                Shape::Seq if self.compact => indent,
                _ => indent + self.step,
            };
            r.push(self.newline);
            self.render_block_body(*new, child_indent, &mut r);
            r.trim_last_newline(self.newline);
            let start = if node.range.is_empty() {
                node.range.start + usize::from(text[node.range.start..].starts_with(':'))
            } else {
                // `key: ~` or `key: []`: from just after the colon.
                let mut s = node.range.start;
                while s > 0 && matches!(text.as_bytes()[s - 1], b' ' | b'\t') {
                    s -= 1;
                }
                s
            };
            edits.push(start..node.range.end.max(start), (0, 0), r);
        }
    }

    /// Children added at the end of collections of the file.
    fn appended_edits(&self, edits: &mut Pending) -> Result<(), EditProblem> {
        for (id, children) in &self.appended {
            if self.filled.contains_key(id) {
                continue;
            }
            let node = self.tree.node(*id);
            let order = (usize::MAX - node.range.start, usize::MAX - id);
            let flow_nonempty = match &node.kind {
                Kind::Map {
                    flow: true,
                    entries,
                } => Some(!entries.is_empty()),
                Kind::Seq { flow: true, items } => Some(!items.is_empty()),
                _ => None,
            };
            if let Some(nonempty) = flow_nonempty {
                let (at, r) = self.flow_children(node, nonempty, children);
                edits.push(at..at, order, r);
                continue;
            }
            let (first, map) = match &node.kind {
                Kind::Map { .. } => (self.tree.entries(*id).first().map(|e| e.0), true),
                Kind::Seq { .. } => (self.tree.items(*id).first().copied(), false),
                _ => return Err(not_a("collection")),
            };
            let Some(first) = first else {
                return Err(not_a(if map {
                    "mapping with entries"
                } else {
                    "sequence with items"
                }));
            };
            let start = self.tree.node(first).range.start;
            // A mapping's entries at its first key's column; a sequence's items at its first
            // dash's.
            let indent = if map {
                self.tree.column(start)
            } else {
                self.tree
                    .column(self.tree.dash_before(start).unwrap_or(start))
            };
            let text = self.tree.text();
            let at = self.tree.end_of_line_after(self.last_line_node(*id));
            let mut r = Rendered::default();
            if at == text.len() && !text.ends_with('\n') {
                r.push(self.newline);
            }
            for (key, value) in children {
                match key {
                    Some(k) if map => self.render_block_entry(k, *value, indent, &mut r),
                    None if !map => self.render_block_item(*value, indent, &mut r),
                    _ => {}
                }
            }
            edits.push(at..at, order, r);
        }
        Ok(())
    }

    /// Children added to a flow collection: before its closing bracket (and any space in front
    /// of it), in flow style.
    fn flow_children(
        &self,
        node: &crate::yaml::tree::Node<'_>,
        nonempty: bool,
        children: &[(Option<String>, Handle)],
    ) -> (usize, Rendered) {
        let text = self.tree.text();
        let mut r = Rendered::default();
        for (i, (key, value)) in children.iter().enumerate() {
            if nonempty || i > 0 {
                r.push(", ");
            }
            if let Some(k) = key {
                r.push(&render_key(k, true));
                r.push(": ");
            }
            self.render_flow(*value, &mut r);
        }
        let mut at = node.range.end.saturating_sub(1);
        while at > node.range.start + 1 && matches!(text.as_bytes()[at - 1], b' ' | b'\t') {
            at -= 1;
        }
        (at, r)
    }

    /// Items inserted before an item of a sequence of the file: at that item's line.
    fn before_edits(&self, edits: &mut Pending) {
        for ((id, index), items) in &self.before {
            let node = self.tree.node(*id);
            let Some(&item) = self.tree.items(*id).get(*index) else {
                continue;
            };
            let mut r = Rendered::default();
            let item_start = self.tree.node(item).range.start;
            if matches!(node.kind, Kind::Seq { flow: true, .. }) {
                for h in items {
                    self.render_flow(*h, &mut r);
                    r.push(", ");
                }
                edits.push(item_start..item_start, (usize::MAX, 0), r);
                continue;
            }
            let dash = self.tree.dash_before(item_start).unwrap_or(item_start);
            let indent = self.tree.column(dash);
            let at = line_start(self.tree.text(), dash);
            for h in items {
                self.render_block_item(*h, indent, &mut r);
            }
            edits.push(at..at, (usize::MAX, 0), r);
        }
    }

    /// Removed entries: their lines (a block mapping), or the flow mapping rendered again.
    fn removed_edits(&self, edits: &mut Pending) {
        let text = self.tree.text();
        let mut rerender: BTreeSet<NodeId> = BTreeSet::new();
        for (id, index) in &self.removed {
            let node = self.tree.node(*id);
            if matches!(node.kind, Kind::Map { flow: true, .. }) {
                rerender.insert(*id);
                continue;
            }
            let entries = self.tree.entries(*id);
            let (key, value) = entries[*index];
            let key_start = self.tree.node(key).range.start;
            let ls = line_start(text, key_start);
            let shares_dash = text[ls..key_start].contains('-');
            let range = if shares_dash {
                match entries.get(index + 1) {
                    Some((next, _)) => key_start..self.tree.node(*next).range.start,
                    None => key_start..self.tree.end_of_line_after(value),
                }
            } else {
                ls..self.tree.end_of_line_after(self.last_line_node_of(value))
            };
            edits.push(range, (0, 0), Rendered::default());
        }
        for id in rerender {
            let node = self.tree.node(id);
            let mut r = Rendered::default();
            self.render_flow(Handle::Real(id), &mut r);
            edits.0.retain(|(range, _, _)| {
                !(range.start >= node.range.start && range.end <= node.range.end)
            });
            edits.push(node.range.clone(), (0, 0), r);
        }
    }

    /// The content of a file that had none.
    fn root_edits(&self, edits: &mut Pending) {
        let Some(v) = self.virtual_root else { return };
        if self.entries(v).is_empty() {
            return;
        }
        let text = self.tree.text();
        let mut r = Rendered::default();
        if text.trim().is_empty() {
            r.push(&self.header);
            self.render_block_body(v, 0, &mut r);
            edits.push(0..text.len(), (0, 0), r);
        } else {
            if !text.ends_with('\n') {
                r.push(self.newline);
            }
            self.render_block_body(v, 0, &mut r);
            edits.push(text.len()..text.len(), (usize::MAX, 0), r);
        }
    }

    /// The joined edits as [`Edit`]s, and where each tracked scalar is in the new text.
    fn placed(&self, joined: Vec<(std::ops::Range<usize>, Rendered)>) -> Finished {
        let mut offsets = vec![None; self.tracked.len()];
        let mut delta: isize = 0;
        let mut out = Vec::with_capacity(joined.len());
        for (range, r) in joined {
            let new_start = range.start.cast_signed() + delta;
            for (mark, at) in &r.marks {
                if let Some(slot) = offsets.get_mut(*mark) {
                    *slot = Some((new_start + at.cast_signed()).cast_unsigned());
                }
            }
            delta += r.text.len().cast_signed() - range.len().cast_signed();
            out.push(Edit::new(range, r.text));
        }
        // Tracked scalars that were not rewritten keep their place, shifted by the edits that
        // end before it (the edits are sorted and do not overlap: their ends are in order too).
        let mut shifts = Vec::with_capacity(out.len() + 1);
        shifts.push(0isize);
        for e in &out {
            let last = shifts.last().copied().unwrap_or(0);
            shifts.push(last + e.replacement().len().cast_signed() - e.range().len().cast_signed());
        }
        for (i, h) in self.tracked.iter().enumerate() {
            if offsets[i].is_none()
                && let Handle::Real(id) = self.resolve(*h)
            {
                let start = self.tree.node(id).range.start;
                let before = out.partition_point(|e| e.range().end <= start);
                offsets[i] = Some((start.cast_signed() + shifts[before]).cast_unsigned());
            }
        }
        Finished {
            edits: out,
            offsets,
        }
    }

    fn tracked_index(&self, h: Handle) -> Option<usize> {
        let by = self.tracked_by.get_or_init(|| {
            let mut by = HashMap::with_capacity(self.tracked.len());
            for (i, t) in self.tracked.iter().enumerate() {
                by.entry(self.resolve(*t)).or_insert(i);
            }
            by
        });
        by.get(&self.resolve(h)).copied()
    }

    /// The node whose end is the last line of collection `id` (its last child, recursively).
    fn last_line_node(&self, id: NodeId) -> NodeId {
        let last = match &self.tree.node(id).kind {
            Kind::Map { .. } => self.tree.entries(id).last().map(|e| e.1),
            Kind::Seq { .. } => self.tree.items(id).last().copied(),
            _ => None,
        };
        last.map_or(id, |l| self.last_line_node_of(l))
    }

    fn last_line_node_of(&self, id: NodeId) -> NodeId {
        match &self.tree.node(id).kind {
            Kind::Map { flow: false, .. } | Kind::Seq { flow: false, .. } => {
                self.last_line_node(id)
            }
            _ => id,
        }
    }

    /// The column of the key whose value is node `id` (0 at the top level).
    fn indent_of_parent_key(&self, id: NodeId) -> usize {
        let start = self.tree.node(id).range.start;
        let ls = line_start(self.tree.text(), start);
        let line = &self.tree.text()[ls..start];
        // `- key:` counts the key's column.
        line.len() - line.trim_start_matches([' ', '-']).len()
    }

    fn render_block_entry(&self, key: &str, value: Handle, indent: usize, r: &mut Rendered) {
        r.push(&" ".repeat(indent));
        r.push(&render_key(key, false));
        r.push(":");
        self.render_block_value(value, indent, r);
    }

    /// After `key:` (or `- `): the value and its line end.
    fn render_block_value(&self, value: Handle, indent: usize, r: &mut Rendered) {
        match self.resolve_new(value) {
            Content::Scalar(v) => {
                r.push(" ");
                r.mark(self.tracked_index(value));
                r.push(&quote::render(&v, Style::Plain, false));
                r.push(self.newline);
            }
            Content::Raw(v) => {
                r.push(" ");
                r.mark(self.tracked_index(value));
                r.push(&v);
                r.push(self.newline);
            }
            Content::Map(e) if e.is_empty() => {
                r.push(" {}");
                r.push(self.newline);
            }
            Content::Seq(i) if i.is_empty() => {
                r.push(" []");
                r.push(self.newline);
            }
            Content::Map(_) => {
                r.push(self.newline);
                self.render_block_body(value, indent + self.step, r);
            }
            Content::Seq(_) => {
                r.push(self.newline);
                let dash = if self.compact {
                    indent
                } else {
                    indent + self.step
                };
                self.render_block_body(value, dash, r);
            }
        }
    }

    /// The lines of a new collection: entries at `indent`, or items with their dash at `indent`.
    fn render_block_body(&self, h: Handle, indent: usize, r: &mut Rendered) {
        match self.resolve_new(h) {
            Content::Map(entries) => {
                for (k, v) in entries {
                    self.render_block_entry(&k, v, indent, r);
                }
            }
            Content::Seq(items) => {
                for item in items {
                    self.render_block_item(item, indent, r);
                }
            }
            Content::Scalar(v) => {
                r.push(&" ".repeat(indent));
                r.push(&quote::render(&v, Style::Plain, false));
                r.push(self.newline);
            }
            Content::Raw(v) => {
                r.push(&" ".repeat(indent));
                r.push(&v);
                r.push(self.newline);
            }
        }
    }

    fn render_block_item(&self, item: Handle, dash: usize, r: &mut Rendered) {
        r.push(&" ".repeat(dash));
        r.push("-");
        match self.resolve_new(item) {
            Content::Map(entries) if !entries.is_empty() => {
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i == 0 {
                        r.push(" ");
                        r.push(&render_key(&k, false));
                        r.push(":");
                        self.render_block_value(v, dash + 2, r);
                    } else {
                        self.render_block_entry(&k, v, dash + 2, r);
                    }
                }
            }
            Content::Seq(items) if !items.is_empty() => {
                r.push(" ");
                self.render_flow(item, r);
                r.push(self.newline);
            }
            _ => self.render_block_value(item, dash + 2, r),
        }
    }

    fn render_flow(&self, h: Handle, r: &mut Rendered) {
        match self.resolve_new(h) {
            Content::Raw(v) => {
                r.mark(self.tracked_index(h));
                r.push(&v);
            }
            Content::Scalar(v) => {
                r.mark(self.tracked_index(h));
                match self.resolve(h) {
                    Handle::Real(id) if !self.replaced.contains_key(&id) => {
                        let n = self.tree.node(id);
                        r.push(&self.tree.text()[n.range.clone()]);
                    }
                    _ => r.push(&quote::render(&v, Style::Plain, true)),
                }
            }
            Content::Map(entries) => {
                r.push("{");
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        r.push(", ");
                    }
                    r.push(&render_key(&k, true));
                    r.push(": ");
                    self.render_flow(v, r);
                }
                r.push("}");
            }
            Content::Seq(items) => {
                r.push("[");
                for (i, v) in items.into_iter().enumerate() {
                    if i > 0 {
                        r.push(", ");
                    }
                    self.render_flow(v, r);
                }
                r.push("]");
            }
        }
    }

    /// The overlay's content of a node, for rendering.
    fn resolve_new(&self, h: Handle) -> Content {
        if let Handle::New(i) = self.resolve(h)
            && let NewNode::Raw(v) = &self.news[i]
        {
            return Content::Raw(v.clone());
        }
        match self.shape(h) {
            Shape::Map => Content::Map(self.entries(h)),
            Shape::Seq => Content::Seq(self.items(h)),
            Shape::Scalar | Shape::Null => Content::Scalar(self.scalar(h).unwrap_or_default()),
        }
    }
}

enum Content {
    Scalar(String),
    Raw(String),
    Map(Vec<(String, Handle)>),
    Seq(Vec<Handle>),
}

/// Replacement text being built, with the offsets of tracked scalars in it.
#[derive(Debug, Default)]
struct Rendered {
    text: String,
    marks: Vec<(usize, usize)>,
}

impl Rendered {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    fn mark(&mut self, tracked: Option<usize>) {
        if let Some(t) = tracked {
            self.marks.push((t, self.text.len()));
        }
    }

    fn append(&mut self, other: Rendered) {
        let base = self.text.len();
        self.text.push_str(&other.text);
        self.marks
            .extend(other.marks.into_iter().map(|(t, at)| (t, base + at)));
    }

    fn trim_last_newline(&mut self, newline: &str) {
        if self.text.ends_with(newline) {
            self.text.truncate(self.text.len() - newline.len());
        }
    }
}

/// The edits of a file being finished: (range, order among insertions at one offset, text). An
/// inner collection's new lines come before its parent's when both end on the same line.
#[derive(Default)]
struct Pending(Vec<(std::ops::Range<usize>, (usize, usize), Rendered)>);

impl Pending {
    fn push(&mut self, range: std::ops::Range<usize>, order: (usize, usize), r: Rendered) {
        self.0.push((range, order, r));
    }

    /// Sorted, insertions at one offset joined in the order they were planned.
    ///
    /// # Errors
    /// Two edits overlap.
    fn join(mut self) -> Result<Vec<(std::ops::Range<usize>, Rendered)>, EditProblem> {
        self.0.sort_by_key(|(r, order, _)| (r.start, r.end, *order));
        let mut joined: Vec<(std::ops::Range<usize>, Rendered)> = Vec::new();
        for (range, _, r) in self.0 {
            if let Some((last, lr)) = joined.last_mut()
                && last.start == range.start
                && last.start == last.end
                && range.start == range.end
            {
                lr.append(r);
                continue;
            }
            if let Some((last, _)) = joined.last()
                && range.start < last.end
            {
                return Err(EditProblem {
                    offset: range.start,
                    message: "two changes to this file overlap".to_owned(),
                });
            }
            joined.push((range, r));
        }
        Ok(joined)
    }
}

/// Whether a flow collection sits inside another flow collection (its own `in_flow` is set for
/// itself): the text before it on its line opens a bracket that is still open.
fn nested_in_flow(tree: &Tree<'_>, node: &crate::yaml::tree::Node<'_>) -> bool {
    let text = tree.text();
    let before = &text[line_start(text, node.range.start)..node.range.start];
    before.matches(['[', '{']).count() > before.matches([']', '}']).count()
}

fn not_a(what: &str) -> EditProblem {
    EditProblem {
        offset: 0,
        message: format!("the value is not a {what}"),
    }
}

/// A mapping key, quoted when it must be.
fn render_key(key: &str, in_flow: bool) -> String {
    if quote::plain_is_safe(key, in_flow) || key_reads_back(key) {
        key.to_owned()
    } else {
        quote::double_quoted(key)
    }
}

/// Keys are compared as text, so a key that reads as a number (`1`) or a boolean still finds
/// itself; only keys that would not parse need quotes.
fn key_reads_back(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/'))
        && !key.starts_with(['-', '.'])
}

/// The file's indentation step and sequence style (compact: `- ` at the key's column).
fn style_of(tree: &Tree<'_>) -> (usize, bool) {
    let mut step = None;
    let mut compact = None;
    for doc in tree.docs() {
        let Some(root) = doc.root else { continue };
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            let node = tree.node(id);
            if let Kind::Map { flow: false, .. } = &node.kind {
                let entries = tree.entries(id);
                let col = entries
                    .first()
                    .map(|(k, _)| tree.column(tree.node(*k).range.start));
                for (_, v) in entries {
                    let v = *v;
                    match &tree.node(v).kind {
                        Kind::Map { flow: false, .. } => {
                            if let (Some(c), Some((k, _))) = (col, tree.entries(v).first()) {
                                let ic = tree.column(tree.node(*k).range.start);
                                if ic > c && step.is_none() {
                                    step = Some(ic - c);
                                }
                            }
                        }
                        Kind::Seq { flow: false, .. } => {
                            if let (Some(c), Some(first)) = (col, tree.items(v).first())
                                && let Some(dash) = tree.dash_before(tree.node(*first).range.start)
                                && compact.is_none()
                            {
                                compact = Some(tree.column(dash) <= c);
                            }
                        }
                        _ => {}
                    }
                    stack.push(v);
                }
            } else if let Kind::Seq { .. } = &node.kind {
                stack.extend(tree.items(id).iter().copied());
            }
            if step.is_some() && compact.is_some() {
                break;
            }
        }
    }
    (step.unwrap_or(2), compact.unwrap_or(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::edit::apply;

    fn edit(text: &str, f: impl FnOnce(&mut Editor<'_, '_>)) -> String {
        let tree = Tree::parse(text).unwrap();
        let mut e = Editor::new(&tree);
        f(&mut e);
        let mut edits = e.finish().unwrap().edits;
        apply(text, &mut edits).unwrap()
    }

    fn root(e: &Editor<'_, '_>) -> Handle {
        Handle::Real(e.tree().docs()[0].root.unwrap())
    }

    #[test]
    fn scalars_keep_their_style() {
        let text = "a: one # keep\nb: 'two'\nc: \"three\"\nd:\ne: &x five\nf: *x\n";
        let out = edit(text, |e| {
            let r = root(e);
            for (k, v) in [
                ("a", "1.0"),
                ("b", "it's"),
                ("c", "x\"y"),
                ("d", "new"),
                ("f", "six"),
            ] {
                let h = e.get(r, k).unwrap();
                e.set_scalar(h, v).unwrap();
            }
        });
        assert_eq!(
            out,
            "a: \"1.0\" # keep\nb: 'it''s'\nc: \"x\\\"y\"\nd: new\ne: &x six\nf: *x\n"
        );
    }

    #[test]
    fn entries_are_added_as_lines_in_the_files_style() {
        let text = "top:\n    inner: 1\n    list:\n    - a\n\n# tail\nz: 2";
        let out = edit(text, |e| {
            let r = root(e);
            let top = e.get(r, "top").unwrap();
            let v = e.new_scalar("2");
            e.insert(top, "added", v).unwrap();
            let m = e.new_map();
            let s = e.new_scalar("v1.2");
            e.insert(m, "tag", s).unwrap();
            e.insert(r, "image", m).unwrap();
            let list = e.get(top, "list").unwrap();
            let b = e.new_scalar("b");
            e.push(list, b).unwrap();
        });
        assert_eq!(
            out,
            "top:\n    inner: 1\n    list:\n    - a\n    - b\n    added: \"2\"\n\n# tail\nz: 2\nimage:\n    tag: v1.2\n"
        );
    }

    #[test]
    fn nulls_and_empty_flows_become_blocks_and_flows_grow_in_flow() {
        let text = "images:\nextra: []\nf: {a: 1}\nl: [x]\n";
        let out = edit(text, |e| {
            let r = root(e);
            let images = e.get(r, "images").unwrap();
            let item = e.new_map();
            let n = e.new_scalar("web");
            e.insert(item, "name", n).unwrap();
            let t = e.new_scalar("123");
            e.insert(item, "newTag", t).unwrap();
            e.push(images, item).unwrap();
            let extra = e.get(r, "extra").unwrap();
            let s = e.new_scalar("z");
            e.push(extra, s).unwrap();
            let f = e.get(r, "f").unwrap();
            let b = e.new_scalar("two words");
            e.insert(f, "b", b).unwrap();
            let l = e.get(r, "l").unwrap();
            let y = e.new_scalar("a,b");
            e.push(l, y).unwrap();
        });
        assert_eq!(
            out,
            "images:\n- name: web\n  newTag: \"123\"\nextra:\n- z\nf: {a: 1, b: two words}\nl: [x, \"a,b\"]\n"
        );
    }

    #[test]
    fn removal_and_insertion_before() {
        let text = "images:\n  - newName: old\n    name: web\n    newTag: 1\n  - name: api\n    digest: sha\n    newTag: 2\n";
        let out = edit(text, |e| {
            let r = root(e);
            let images = e.get(r, "images").unwrap();
            let items = e.items(images);
            e.remove(items[0], "newName");
            e.remove(items[1], "digest");
            let m = e.new_map();
            let n = e.new_scalar("db");
            e.insert(m, "name", n).unwrap();
            e.insert_before(images, 1, m).unwrap();
        });
        assert_eq!(
            out,
            "images:\n  - name: web\n    newTag: 1\n  - name: db\n  - name: api\n    newTag: 2\n"
        );
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        let out = edit("a: 1\r\nb:\r\n  c: 2", |e| {
            let r = root(e);
            let b = e.get(r, "b").unwrap();
            let v = e.new_scalar("x");
            e.insert(b, "d", v).unwrap();
        });
        assert_eq!(out, "a: 1\r\nb:\r\n  c: 2\r\n  d: x\r\n");
    }

    #[test]
    fn refusals_and_tracking() {
        let text = "a: |\n  block\nb: !!int 3\nc: v1\n";
        let tree = Tree::parse(text).unwrap();
        let mut e = Editor::new(&tree);
        let r = root(&e);
        let a = e.get(r, "a").unwrap();
        assert!(
            e.set_scalar(a, "x")
                .unwrap_err()
                .message
                .contains("block scalar")
        );
        let b = e.get(r, "b").unwrap();
        assert!(e.set_scalar(b, "x").unwrap_err().message.contains("!!int"));
        let m = e.new_map();
        let t = e.new_scalar("v2");
        e.insert(m, "t", t).unwrap();
        e.insert(r, "n", m).unwrap();
        let c = e.get(r, "c").unwrap();
        e.set_scalar(c, "v10").unwrap();
        let ti = e.track(t);
        let ci = e.track(c);
        let f = e.finish().unwrap();
        let out = apply(text, &mut f.edits.clone()).unwrap();
        assert_eq!(&out[f.offsets[ti].unwrap()..][..2], "v2");
        assert_eq!(&out[f.offsets[ci].unwrap()..][..3], "v10");
    }

    use proptest::prelude::*;

    /// A generated document: top-level keys each holding a scalar, a mapping of scalars or a
    /// sequence of scalars, written with a given indentation and sequence style.
    fn render_doc(doc: &[(String, u8, Vec<String>)], step: usize, compact: bool) -> String {
        let pad = " ".repeat(step);
        let mut out = String::new();
        for (key, kind, values) in doc {
            match kind % 3 {
                0 => out.push_str(&format!("{key}: {}\n", values[0])),
                1 => {
                    out.push_str(&format!("{key}:\n"));
                    for (i, v) in values.iter().enumerate() {
                        out.push_str(&format!("{pad}k{i}: {v}  # c{i}\n"));
                    }
                }
                _ => {
                    out.push_str(&format!("{key}:\n"));
                    for v in values {
                        let dash = if compact { String::new() } else { pad.clone() };
                        out.push_str(&format!("{dash}- {v}\n\n"));
                    }
                }
            }
        }
        out
    }

    proptest! {
        /// Replacing scalars, adding entries and items: the result parses to the original with
        /// exactly those changes, and every original line that was not edited is still there.
        #[test]
        fn edits_read_back_as_planned(
            doc in proptest::collection::vec(
                ("[a-z]{1,6}", 0u8..3, proptest::collection::vec("[a-z][a-z0-9.-]{0,8}", 1..4)),
                1..6,
            ),
            step in 2usize..5,
            compact in any::<bool>(),
            new_value in "[a-z0-9][a-z0-9.:-]{0,10}",
            ops in proptest::collection::vec((0usize..8, 0u8..3), 1..6),
        ) {
            let mut seen = std::collections::BTreeSet::new();
            let doc: Vec<_> = doc.into_iter().filter(|(k, _, _)| seen.insert(k.clone())).collect();
            let text = render_doc(&doc, step, compact);
            let tree = Tree::parse(&text).unwrap();
            let mut e = Editor::new(&tree);
            let root = e.root().unwrap();
            let mut expected = crate::yaml::parse_values(&text).unwrap().remove(0);
            for (n, (target, op)) in ops.iter().enumerate() {
                let (key, kind, _) = &doc[target % doc.len()];
                let h = e.get(root, key).unwrap();
                let slot = &mut expected[key.as_str()];
                match (kind % 3, op) {
                    (0, _) => {
                        e.set_scalar(h, &new_value).unwrap();
                        *slot = serde_json::Value::from(new_value.clone());
                    }
                    (1, 0) => {
                        let first = e.entries(h)[0].1;
                        e.set_scalar(first, &new_value).unwrap();
                        slot["k0"] = serde_json::Value::from(new_value.clone());
                    }
                    (1, _) => {
                        let v = e.new_scalar(&new_value);
                        let k = format!("new{n}");
                        e.insert(h, &k, v).unwrap();
                        slot[k.as_str()] = serde_json::Value::from(new_value.clone());
                    }
                    (_, _) => {
                        let v = e.new_scalar(&new_value);
                        e.push(h, v).unwrap();
                        slot.as_array_mut().unwrap().push(serde_json::Value::from(new_value.clone()));
                    }
                }
            }
            let mut edits = e.finish().unwrap().edits;
            let out = crate::yaml::edit::apply(&text, &mut edits).unwrap();
            let got = crate::yaml::parse_values(&out).unwrap().remove(0);
            prop_assert_eq!(&got, &expected, "{}\n---\n{}", text, out);
            // Unedited lines survive in order.
            let changed: Vec<&str> = edits.iter().map(|e| &text[e.range()]).collect();
            let mut rest = out.as_str();
            for line in text.split_inclusive('\n') {
                if changed.iter().any(|c| !c.is_empty() && line.contains(*c)) {
                    continue;
                }
                let at = rest.find(line);
                prop_assert!(at.is_some(), "line {:?} lost\n{}", line, out);
                rest = &rest[at.unwrap_or(0) + line.len()..];
            }
        }
    }
}
