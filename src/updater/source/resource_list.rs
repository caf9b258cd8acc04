//! The shape of a kpt `ResourceList` read from stdin, as byte ranges.
//!
//! The KRM function edits its input text in place, so instead of a tree it
//! needs to know *where* things are: the root mapping's `apiVersion` and
//! `kind`, each element of `items`, the `functionConfig` value, an existing
//! `results` entry (to replace) and the end of the last root entry (to put
//! `results` after). [`LayoutWalk`] finds them from the parser's events in
//! the scanner's one pass over the list (`updater::scan::list`); nodes
//! deeper than the root's children are only counted, never stored.
//!
//! A sub-tree (an item, the functionConfig) is turned into a value by
//! [`parse_node`], which parses just its bytes; the whole list is never
//! deserialised, so a 50 MB list costs little more memory than its text.

use std::ops::Range;

use granit_parser::{Event, StructureStyle};
use serde_json::Value;

use crate::text::Position;
use crate::yaml::{SyntaxError, parse_values};

/// ResourceList apiVersions accepted (and answered with).
pub(crate) const RESOURCE_LIST_VERSIONS: [&str; 3] = [
    "config.kubernetes.io/v1",
    "config.kubernetes.io/v1beta1",
    "config.kubernetes.io/v1alpha1",
];

/// Where the parts of a ResourceList lie in its text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListLayout {
    /// The root mapping's `apiVersion` and `kind`, when they are scalars.
    pub api_version: Option<String>,
    pub kind: Option<String>,
    /// Whether the root mapping is written in flow style (`{...}`, JSON).
    pub flow: bool,
    /// Leading spaces of the root mapping's keys (block style).
    pub indent: usize,
    /// Each element of `items`; `None` when there is no `items` key, empty
    /// for `items: []` or `items:` with no value.
    pub items: Option<Vec<Node>>,
    /// Whether `items` holds something other than a sequence or null.
    pub items_not_a_sequence: bool,
    /// The `functionConfig` value.
    pub function_config: Option<Node>,
    /// From the `results` key to the end of its value.
    pub results: Option<Range<usize>>,
    /// The end of the last root entry's value (or, in flow style with no
    /// entries, the offset of the closing `}`).
    pub entries_end: usize,
    /// `"\r\n"` when the text's first line ends so, else `"\n"`.
    pub line_ending: &'static str,
}

/// Where one node of the list lies: its bytes, and the position of its
/// first one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub range: Range<usize>,
    pub start: Position,
}

impl ListLayout {
    /// Whether the list is one the function answers: a ResourceList of an
    /// accepted apiVersion, or a `v1` `List`.
    #[must_use]
    pub fn is_accepted(&self) -> bool {
        let api_version = self.api_version.as_deref().unwrap_or("");
        match self.kind.as_deref().unwrap_or("") {
            "ResourceList" => RESOURCE_LIST_VERSIONS.contains(&api_version),
            "List" => api_version == "v1",
            _ => false,
        }
    }
}

/// The input cannot be read as one YAML mapping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("input is not valid YAML: {}", .0.message)]
    NotYaml(SyntaxError),
    #[error("input is empty: expected a ResourceList")]
    Empty,
    #[error("input holds {0} YAML documents: expected one ResourceList")]
    Documents(usize),
    #[error("input is not a YAML mapping: expected a ResourceList")]
    NotAMapping,
}

/// Which root entry the walk is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootKey {
    ApiVersion,
    Kind,
    Items,
    FunctionConfig,
    Results,
    Other,
}

/// The layout found so far in a walk over the events of a list, fed one
/// event at a time by the scanner's pass.
#[derive(Debug, Default)]
pub(crate) struct LayoutWalk {
    layout: ListLayout,
    documents: usize,
    /// Open collections; the root mapping is depth 1.
    depth: usize,
    root_seen: bool,
    first_key: Option<usize>,
    /// Inside the root mapping: the entry whose value comes next, or is open.
    entry: Option<(RootKey, usize)>,
    value_start: Option<(usize, Position)>,
    /// End of the last scalar, alias or flow collection seen.
    content_end: usize,
}

impl LayoutWalk {
    /// A walk from the start of a list.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A walk that starts inside the block sequence of `items`, between two
    /// items (a part of the list parsed on its own, whose one root node is
    /// a block sequence standing for the rest of `items`).
    pub(crate) fn inside_items(items_key: usize) -> Self {
        Self {
            documents: 1,
            depth: 1,
            root_seen: true,
            entry: Some((RootKey::Items, items_key)),
            ..Self::default()
        }
    }

    /// The YAML documents begun so far.
    pub(crate) fn documents(&self) -> usize {
        self.documents
    }

    /// Open collections; the root mapping is depth 1.
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// The offset of the `items` key when its value is the open entry.
    pub(crate) fn in_items(&self) -> Option<usize> {
        match self.entry {
            Some((RootKey::Items, key)) if self.layout.items.is_some() => Some(key),
            _ => None,
        }
    }

    /// The items found so far.
    pub(crate) fn take_items(&mut self) -> Vec<Node> {
        self.layout.items.take().unwrap_or_default()
    }

    /// End of the last scalar, alias or flow collection seen.
    pub(crate) fn content_end(&self) -> usize {
        self.content_end
    }

    /// Record one event of the parser, at `range` of the text, starting at
    /// `start`.
    ///
    /// # Errors
    /// [`ShapeError::NotAMapping`] as soon as the document's root is seen
    /// not to be a mapping.
    pub(crate) fn event(
        &mut self,
        event: &Event<'_>,
        range: Range<usize>,
        start: Position,
    ) -> Result<(), ShapeError> {
        match event {
            Event::DocumentStart(..) => self.documents += 1,
            Event::MappingStart(style, ..) | Event::SequenceStart(style, ..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                self.open(is_map, *style == StructureStyle::Flow, range, start)?;
            }
            Event::MappingEnd | Event::SequenceEnd => self.close(range),
            Event::Scalar(value, ..) => self.leaf(Some(value), range, start)?,
            Event::Alias(..) | Event::UnresolvedAlias(..) => self.leaf(None, range, start)?,
            _ => {}
        }
        Ok(())
    }

    /// The layout of the whole text.
    ///
    /// # Errors
    /// When the text holds no or several documents, or its document is not
    /// a mapping.
    pub(crate) fn finish(mut self, text: &str) -> Result<ListLayout, ShapeError> {
        match self.documents {
            0 => return Err(ShapeError::Empty),
            1 => {}
            n => return Err(ShapeError::Documents(n)),
        }
        if !self.root_seen {
            return Err(ShapeError::NotAMapping);
        }
        self.layout.line_ending = line_ending(text);
        if !self.layout.flow {
            self.layout.indent = self.first_key.map_or(0, |k| key_column(text, k));
        }
        Ok(self.layout)
    }

    /// Make room for `more` items exactly.
    pub(crate) fn reserve_items(&mut self, more: usize) {
        if let Some(items) = &mut self.layout.items {
            items.reserve_exact(more);
        }
    }

    /// Add the items found by a walk over a later part of `items`.
    pub(crate) fn add_items(&mut self, more: Vec<Node>) {
        if let Some(items) = &mut self.layout.items {
            items.extend(more);
        }
    }

    /// End `items`, whose last part's content ended at `content_end`, as
    /// the end of its block sequence would.
    pub(crate) fn close_items(&mut self, content_end: usize) {
        self.content_end = self.content_end.max(content_end);
        let at = self.content_end;
        self.close(at..at);
    }

    /// Continue with what a walk over the rest of the list (after `items`,
    /// read on its own) found: its entries come after this walk's.
    pub(crate) fn append(&mut self, rest: LayoutWalk) {
        let rest = rest.layout;
        if rest.api_version.is_some() {
            self.layout.api_version = rest.api_version;
        }
        if rest.kind.is_some() {
            self.layout.kind = rest.kind;
        }
        if rest.function_config.is_some() {
            self.layout.function_config = rest.function_config;
        }
        if rest.results.is_some() {
            self.layout.results = rest.results;
        }
        self.layout.entries_end = self.layout.entries_end.max(rest.entries_end);
    }

    /// Whether no `items` key was seen.
    pub(crate) fn has_no_items(&self) -> bool {
        self.layout.items.is_none() && !self.layout.items_not_a_sequence
    }

    fn open(
        &mut self,
        is_map: bool,
        flow: bool,
        range: Range<usize>,
        start: Position,
    ) -> Result<(), ShapeError> {
        if self.documents > 1 {
            return Ok(());
        }
        match self.depth {
            0 => {
                if !is_map {
                    return Err(ShapeError::NotAMapping);
                }
                self.root_seen = true;
                self.layout.flow = flow;
                self.layout.entries_end = range.start;
            }
            1 => match self.entry {
                None => self.entry = Some((RootKey::Other, range.start)),
                Some((key, _)) => {
                    self.value_start = Some((range.start, start));
                    if key == RootKey::Items {
                        if is_map {
                            self.layout.items_not_a_sequence = true;
                        } else {
                            self.layout.items = Some(Vec::new());
                        }
                    }
                }
            },
            2 if self.in_items().is_some() => self.begin_item(range.start, start),
            _ => {}
        }
        self.depth += 1;
        Ok(())
    }

    fn close(&mut self, range: Range<usize>) {
        if self.documents > 1 {
            return;
        }
        if !range.is_empty() {
            // A flow collection ends at its closing bracket.
            self.content_end = self.content_end.max(range.end);
        }
        self.depth = self.depth.saturating_sub(1);
        match self.depth {
            0 if self.layout.flow && self.first_key.is_none() => {
                // `{}`: the results go just inside the closing brace.
                self.layout.entries_end = range.start;
            }
            1 => self.end_value(),
            2 if self.in_items().is_some() => self.end_item(),
            _ => {}
        }
    }

    fn leaf(
        &mut self,
        scalar: Option<&str>,
        range: Range<usize>,
        start: Position,
    ) -> Result<(), ShapeError> {
        if self.documents > 1 {
            return Ok(());
        }
        if self.depth == 0 {
            return Err(ShapeError::NotAMapping);
        }
        // An empty scalar (`-` or `key:` with no value) sits right after its
        // indicator: it ends content there too.
        self.content_end = self.content_end.max(range.end);
        match self.depth {
            1 => match self.entry {
                None => {
                    let key = match scalar {
                        Some("apiVersion") => RootKey::ApiVersion,
                        Some("kind") => RootKey::Kind,
                        Some("items") => RootKey::Items,
                        Some("functionConfig") => RootKey::FunctionConfig,
                        Some("results") => RootKey::Results,
                        _ => RootKey::Other,
                    };
                    self.first_key.get_or_insert(range.start);
                    self.entry = Some((key, range.start));
                    self.value_start = None;
                }
                Some((key, _)) => {
                    self.value_start = Some((range.start, start));
                    match (key, scalar) {
                        (RootKey::ApiVersion, Some(v)) => {
                            self.layout.api_version = Some(v.to_owned());
                        }
                        (RootKey::Kind, Some(v)) => self.layout.kind = Some(v.to_owned()),
                        (RootKey::Items, Some(v)) if range.is_empty() || is_null(v) => {
                            self.layout.items = Some(Vec::new());
                        }
                        (RootKey::Items, _) => self.layout.items_not_a_sequence = true,
                        _ => {}
                    }
                    self.end_value();
                }
            },
            2 if self.in_items().is_some() => {
                self.begin_item(range.start, start);
                self.end_item();
            }
            _ => {}
        }
        Ok(())
    }

    fn begin_item(&mut self, offset: usize, start: Position) {
        if let Some(items) = &mut self.layout.items {
            items.push(Node {
                range: offset..offset,
                start,
            });
        }
    }

    fn end_item(&mut self) {
        let end = self.content_end;
        if let Some(last) = self
            .layout
            .items
            .as_mut()
            .and_then(|items| items.last_mut())
        {
            last.range.end = end.max(last.range.start);
        }
    }

    /// The value of the current root entry is complete.
    fn end_value(&mut self) {
        let Some((key, key_start)) = self.entry.take() else {
            return;
        };
        let end = self.content_end.max(key_start);
        match key {
            RootKey::FunctionConfig => {
                let (start, at) = self.value_start.unwrap_or((end, Position::default()));
                self.layout.function_config = Some(Node {
                    range: start.min(end)..end,
                    start: at,
                });
            }
            RootKey::Results => self.layout.results = Some(key_start..end),
            _ => {}
        }
        self.layout.entries_end = self.layout.entries_end.max(end);
    }
}

fn is_null(v: &str) -> bool {
    matches!(v, "~" | "null" | "Null" | "NULL")
}

/// `"\r\n"` when the text's first line ends so, else `"\n"`.
fn line_ending(text: &str) -> &'static str {
    let first = memchr::memchr(b'\n', text.as_bytes()).map_or(text, |i| &text[..i]);
    if first.ends_with('\r') { "\r\n" } else { "\n" }
}

/// Byte column of `offset` on its line.
/// The column of the root key at `key`, its properties (`!tag`, `&anchor`) before it on its line
/// included: `!!str apiVersion: v1` is a mapping at column 0, where the results entry goes too.
fn key_column(text: &str, key: usize) -> usize {
    let key = key.min(text.len());
    let Some(head) = text.get(..key) else {
        return column_of(text, key);
    };
    let line_start = head.rfind('\n').map_or(0, |i| i + 1);
    let mut start = key;
    loop {
        let before = head[line_start..start].trim_end_matches([' ', '\t']);
        let token_start = before.rfind([' ', '\t']).map_or(0, |i| i + 1);
        let token = &before[token_start..];
        if token.starts_with('!') || token.starts_with('&') {
            start = line_start + token_start;
        } else {
            break;
        }
    }
    column_of(text, start)
}

fn column_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .rev()
        .take_while(|&&b| b != b'\n')
        .count()
}

/// Find the parts of the ResourceList in `text`, in the scanner's one pass
/// (whose markers this leaves out).
///
/// # Errors
/// When `text` is not YAML, holds no or several documents, or its document
/// is not a mapping.
pub fn read_layout(text: &str) -> Result<ListLayout, ShapeError> {
    crate::updater::scan::list::read_list(text).map(|list| list.layout)
}

/// Parse the node `node` of `text` (inside a larger document) into a value.
/// The node's column is restored with spaces, so a block mapping that
/// starts mid-line (`- apiVersion: ...`) reads as it does in place; an
/// error's position is the list's, not the node's.
///
/// # Errors
/// The parser's message and position.
pub fn parse_node(text: &str, node: &Node) -> Result<Value, SyntaxError> {
    let slice = text.get(node.range.clone()).ok_or_else(|| SyntaxError {
        offset: None,
        position: None,
        message: "internal error: node range outside the text".to_owned(),
    })?;
    let column = column_of(text, node.range.start);
    let mut owned = " ".repeat(column);
    owned.push_str(slice);
    let mut docs = parse_values(&owned).map_err(|mut e| {
        e.position = e.position.map(|p| in_list(p, column, node.start));
        e
    })?;
    Ok(if docs.is_empty() {
        Value::Null
    } else {
        docs.swap_remove(0)
    })
}

/// The position in the list of `p`, a position in a node's text that
/// starts with `column` spaces standing for what precedes the node on its
/// line, `start`.
fn in_list(p: Position, column: usize, start: Position) -> Position {
    if p.line > 1 {
        return Position {
            line: start.line + p.line - 1,
            column: p.column,
        };
    }
    Position {
        line: start.line,
        column: (start.column + p.column).saturating_sub(column + 1).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: A\n  data: {x: 1} # c\n- plain\n- [a, b]\nresults:\n- message: old\n# tail\nfunctionConfig:\n  kind: ConfigMap\n  data:\n    k: v\n";

    #[test]
    fn finds_every_part() {
        let layout = read_layout(LIST).unwrap();
        assert_eq!(
            layout.api_version.as_deref(),
            Some("config.kubernetes.io/v1")
        );
        assert_eq!(layout.kind.as_deref(), Some("ResourceList"));
        assert!(!layout.flow);
        assert_eq!(layout.line_ending, "\n");
        let items: Vec<&str> = layout
            .items
            .as_ref()
            .unwrap()
            .iter()
            .map(|n| &LIST[n.range.clone()])
            .collect();
        assert_eq!(
            items,
            [
                "apiVersion: v1\n  kind: A\n  data: {x: 1}",
                "plain",
                "[a, b]"
            ]
        );
        assert_eq!(
            &LIST[layout.results.clone().unwrap()],
            "results:\n- message: old"
        );
        let config = layout.function_config.clone().unwrap();
        assert_eq!(
            &LIST[config.range.clone()],
            "kind: ConfigMap\n  data:\n    k: v"
        );
        assert_eq!(
            config.start,
            Position {
                line: 13,
                column: 3
            }
        );
        assert_eq!(layout.entries_end, LIST.len() - 1);
        let items = layout.items.unwrap();
        assert_eq!(items[1].start, Position { line: 7, column: 3 });
        let item = parse_node(LIST, &items[0]).unwrap();
        assert_eq!(item["data"]["x"], 1);
        let config = parse_node(LIST, &config).unwrap();
        assert_eq!(config["data"]["k"], "v");
    }

    #[test]
    fn flow_lists_crlf_and_odd_items() {
        let flow = "{\"kind\": \"List\", \"items\": [{\"a\": 1}], \"functionConfig\": null}";
        let layout = read_layout(flow).unwrap();
        assert!(layout.flow);
        assert_eq!(&flow[layout.items.unwrap()[0].range.clone()], "{\"a\": 1}");
        assert_eq!(layout.entries_end, flow.len() - 1);
        assert_eq!(read_layout("{}").unwrap().entries_end, 1);
        let crlf = read_layout("kind: List\r\nitems:\r\n").unwrap();
        assert_eq!(crlf.line_ending, "\r\n");
        assert_eq!(crlf.items, Some(Vec::new()));
        assert!(read_layout("items: {a: 1}\n").unwrap().items_not_a_sequence);
        assert!(read_layout("items: 3\n").unwrap().items_not_a_sequence);
        assert_eq!(
            read_layout("  kind: List\n  items: []\n").unwrap().indent,
            2
        );
    }

    #[test]
    fn node_errors_are_placed_in_the_list() {
        let text = "kind: List\nitems:\n- a: 1\n  a: 2\n- b: !!int x\n";
        let items = read_layout(text).unwrap().items.unwrap();
        let first = parse_node(text, &items[0]).unwrap_err();
        assert_eq!(
            first.position,
            Some(Position { line: 4, column: 3 }),
            "{first}"
        );
        let second = parse_node(text, &items[1]).unwrap_err();
        assert_eq!(
            second.position,
            Some(Position {
                line: 5,
                column: 12
            }),
            "{second}"
        );
    }

    /// A fuzzing find: a tag or anchor before the first root key is part of the mapping's
    /// column (the results entry went under the last item, and every run added another).
    #[test]
    fn properties_before_the_first_key_are_its_column() {
        for (text, indent) in [
            ("!!str apiVersion: v1\nkind: ResourceList\nitems: []\n", 0),
            ("&a !!str kind: ResourceList\nitems: []\n", 0),
            ("  !!str kind: ResourceList\n  items: []\n", 2),
            ("kind: ResourceList\nitems: []\n", 0),
        ] {
            assert_eq!(read_layout(text).unwrap().indent, indent, "{text:?}");
        }
    }

    #[test]
    fn refuses_what_is_not_one_mapping() {
        assert_eq!(read_layout(""), Err(ShapeError::Empty));
        assert_eq!(read_layout("# only a comment\n"), Err(ShapeError::Empty));
        assert_eq!(
            read_layout("a: 1\n---\nb: 2\n"),
            Err(ShapeError::Documents(2))
        );
        assert_eq!(read_layout("- a\n"), Err(ShapeError::NotAMapping));
        assert_eq!(read_layout("just text\n"), Err(ShapeError::NotAMapping));
        assert!(matches!(read_layout("a: [\n"), Err(ShapeError::NotYaml(_))));
    }
}
