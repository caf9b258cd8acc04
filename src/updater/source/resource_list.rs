//! The shape of a kpt `ResourceList` read from stdin, as byte ranges.
//!
//! The KRM function edits its input text in place, so instead of a tree it
//! needs to know *where* things are: the root mapping's `apiVersion` and
//! `kind`, each element of `items`, the `functionConfig` value, an existing
//! `results` entry (to replace) and the end of the last root entry (to put
//! `results` after). One pass over the parser's events finds them; nodes
//! deeper than the root's children are only counted, never stored.
//!
//! A sub-tree (an item, the functionConfig) is turned into a value by
//! [`parse_slice`], which parses just its bytes; the whole list is never
//! deserialised, so a 50 MB list costs little more memory than its text.

use std::ops::Range;

use granit_parser::{Event, Parser, StructureStyle};
use serde_json::Value;

use crate::yaml::parse_values;

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
    /// The range of each element of `items`; `None` when there is no
    /// `items` key, empty for `items: []` or `items:` with no value.
    pub items: Option<Vec<Range<usize>>>,
    /// Whether `items` holds something other than a sequence or null.
    pub items_not_a_sequence: bool,
    /// The range of the `functionConfig` value.
    pub function_config: Option<Range<usize>>,
    /// From the `results` key to the end of its value.
    pub results: Option<Range<usize>>,
    /// The end of the last root entry's value (or, in flow style with no
    /// entries, the offset of the closing `}`).
    pub entries_end: usize,
    /// `"\r\n"` when the text's first line ends so, else `"\n"`.
    pub line_ending: &'static str,
}

/// The input cannot be read as one YAML mapping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("input is not valid YAML: {message}")]
    NotYaml { offset: usize, message: String },
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

/// The walk over the events of one document.
#[derive(Debug, Default)]
struct Walk {
    layout: ListLayout,
    documents: usize,
    /// Open collections; the root mapping is depth 1.
    depth: usize,
    root_seen: bool,
    first_key: Option<usize>,
    /// Inside the root mapping: the entry whose value comes next, or is open.
    entry: Option<(RootKey, usize)>,
    value_start: Option<usize>,
    /// End of the last scalar, alias or flow collection seen.
    content_end: usize,
}

/// Find the parts of the ResourceList in `text`.
///
/// # Errors
/// When `text` is not YAML, holds no or several documents, or its document
/// is not a mapping.
pub fn read_layout(text: &str) -> Result<ListLayout, ShapeError> {
    let mut walk = Walk::default();
    walk.layout.line_ending = if text.split('\n').next().is_some_and(|l| l.ends_with('\r')) {
        "\r\n"
    } else {
        "\n"
    };
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let m = e.marker();
            ShapeError::NotYaml {
                offset: m.byte_offset().unwrap_or(0),
                message: e.info(),
            }
        })?;
        let range = span.byte_range().unwrap_or(0..0);
        match event {
            Event::StreamEnd => break,
            Event::DocumentStart(..) => walk.documents += 1,
            Event::MappingStart(style, ..) | Event::SequenceStart(style, ..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                walk.open(is_map, style == StructureStyle::Flow, range)?;
            }
            Event::MappingEnd | Event::SequenceEnd => walk.close(range),
            Event::Scalar(value, ..) => walk.leaf(Some(&value), range)?,
            Event::Alias(..) | Event::UnresolvedAlias(..) => walk.leaf(None, range)?,
            _ => {}
        }
    }
    match walk.documents {
        0 => return Err(ShapeError::Empty),
        1 => {}
        n => return Err(ShapeError::Documents(n)),
    }
    if !walk.root_seen {
        return Err(ShapeError::NotAMapping);
    }
    if !walk.layout.flow {
        walk.layout.indent = walk.first_key.map_or(0, |k| column_of(text, k));
    }
    Ok(walk.layout)
}

impl Walk {
    fn open(&mut self, is_map: bool, flow: bool, range: Range<usize>) -> Result<(), ShapeError> {
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
                    self.value_start = Some(range.start);
                    if key == RootKey::Items {
                        if is_map {
                            self.layout.items_not_a_sequence = true;
                        } else {
                            self.layout.items = Some(Vec::new());
                        }
                    }
                }
            },
            2 if self.in_items() => self.begin_item(range.start),
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
            2 if self.in_items() => self.end_item(),
            _ => {}
        }
    }

    fn leaf(&mut self, scalar: Option<&str>, range: Range<usize>) -> Result<(), ShapeError> {
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
                    self.value_start = Some(range.start);
                    match (key, scalar) {
                        (RootKey::ApiVersion, Some(v)) => {
                            self.layout.api_version = Some(v.to_owned())
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
            2 if self.in_items() => {
                self.begin_item(range.start);
                self.end_item();
            }
            _ => {}
        }
        Ok(())
    }

    fn in_items(&self) -> bool {
        matches!(self.entry, Some((RootKey::Items, _))) && self.layout.items.is_some()
    }

    fn begin_item(&mut self, start: usize) {
        if let Some(items) = &mut self.layout.items {
            items.push(start..start);
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
            last.end = end.max(last.start);
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
                self.layout.function_config = Some(self.value_start.unwrap_or(end).min(end)..end);
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

/// Byte column of `offset` on its line.
fn column_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .rev()
        .take_while(|&&b| b != b'\n')
        .count()
}

/// Parse the bytes `range` of `text` (a node inside a larger document) into
/// a value. The node's column is restored with spaces, so a block mapping
/// that starts mid-line (`- apiVersion: ...`) reads as it does in place.
///
/// # Errors
/// The parser's message.
pub fn parse_slice(text: &str, range: Range<usize>) -> Result<Value, String> {
    let slice = text
        .get(range.clone())
        .ok_or_else(|| "internal error: node range outside the text".to_owned())?;
    let mut owned = " ".repeat(column_of(text, range.start));
    owned.push_str(slice);
    let mut docs = parse_values(&owned).map_err(|e| e.to_string())?;
    Ok(if docs.is_empty() {
        Value::Null
    } else {
        docs.swap_remove(0)
    })
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
            .map(|r| &LIST[r.clone()])
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
        assert_eq!(
            &LIST[layout.function_config.clone().unwrap()],
            "kind: ConfigMap\n  data:\n    k: v"
        );
        assert_eq!(layout.entries_end, LIST.len() - 1);
        let item = parse_slice(LIST, layout.items.unwrap()[0].clone()).unwrap();
        assert_eq!(item["data"]["x"], 1);
        let config = parse_slice(LIST, layout.function_config.unwrap()).unwrap();
        assert_eq!(config["data"]["k"], "v");
    }

    #[test]
    fn flow_lists_crlf_and_odd_items() {
        let flow = "{\"kind\": \"List\", \"items\": [{\"a\": 1}], \"functionConfig\": null}";
        let layout = read_layout(flow).unwrap();
        assert!(layout.flow);
        assert_eq!(&flow[layout.items.unwrap()[0].clone()], "{\"a\": 1}");
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
    fn refuses_what_is_not_one_mapping() {
        assert_eq!(read_layout(""), Err(ShapeError::Empty));
        assert_eq!(read_layout("# only a comment\n"), Err(ShapeError::Empty));
        assert_eq!(
            read_layout("a: 1\n---\nb: 2\n"),
            Err(ShapeError::Documents(2))
        );
        assert_eq!(read_layout("- a\n"), Err(ShapeError::NotAMapping));
        assert_eq!(read_layout("just text\n"), Err(ShapeError::NotAMapping));
        assert!(matches!(
            read_layout("a: [\n"),
            Err(ShapeError::NotYaml { .. })
        ));
    }
}
